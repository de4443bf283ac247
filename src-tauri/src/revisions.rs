//! Plans as a review reads them: a revision with its first pages, the rest of its pages, its
//! exact source, its thread, two revisions compared, and the history a page at a time.

use plandesk::view::{
    self, ComparisonView, HistoryPage, PagedRevision, RevisionSource, RevisionSummary,
};
use tauri::State;

use crate::ipc::{HistoryFilter, IpcError};
use crate::AppState;

type Result<T> = std::result::Result<T, IpcError>;

/// The revision `id` to review, with the pages a first screen and more fill.
#[tauri::command]
pub async fn revision(state: State<'_, AppState>, id: i64) -> Result<PagedRevision> {
    Ok(view::revision(state.engine.review(), id, view::FIRST_BYTES).await?)
}

/// A revision's plan pages from `from` on (`revision` sends the first ones).
#[tauri::command]
pub async fn revision_pages(
    state: State<'_, AppState>,
    id: i64,
    from: usize,
) -> Result<Vec<String>> {
    Ok(view::revision_pages(state.engine.review(), id, from).await?)
}

/// A revision's exact text, for the source view and the editor.
#[tauri::command]
pub async fn revision_source(state: State<'_, AppState>, id: i64) -> Result<RevisionSource> {
    Ok(view::revision_source(state.engine.review(), id).await?)
}

/// Every revision of the plan `id` belongs to, oldest first.
#[tauri::command]
pub async fn plan_thread(state: State<'_, AppState>, id: i64) -> Result<Vec<RevisionSummary>> {
    Ok(view::plan_thread(state.engine.review(), id).await?)
}

/// Two revisions of one plan compared, with the newer one's comments.
#[tauri::command]
pub async fn compare(state: State<'_, AppState>, left: i64, right: i64) -> Result<ComparisonView> {
    Ok(view::compare(state.engine.review(), left, right).await?)
}

/// A page of the history: at most `limit` revisions (100 if not given) older than `before`
/// (from the newest if not given), newest first.
#[tauri::command]
pub async fn history(
    state: State<'_, AppState>,
    filter: Option<HistoryFilter>,
    before: Option<i64>,
    limit: Option<usize>,
) -> Result<HistoryPage> {
    let filter = filter.unwrap_or_default().try_into()?;
    let limit = limit.unwrap_or(100);
    Ok(view::history(state.engine.review(), &filter, before, limit).await?)
}
