//! The commands of a careful review: line comments, a reviewer's own version of a plan (with a
//! live preview while it is written), and the audit trail (shown, verified, exported).

use std::io::Write;

use plandesk::review::{Comment, Edited, FileDiff, Lines, Progress, StepMark};
use plandesk::view::{self, AuditView, PlanPreview};
use tauri::{AppHandle, Runtime, State};
use tauri_plugin_dialog::DialogExt;

use crate::ipc::IpcError;
use crate::AppState;

type Result<T> = std::result::Result<T, IpcError>;

/// The comments to show with a revision: its own and its plan's earlier ones.
#[tauri::command]
pub async fn comments(state: State<'_, AppState>, revision_id: i64) -> Result<Vec<Comment>> {
    let review = state.engine.review();
    let revision = review.revision_by_id(revision_id).await?;
    Ok(review.comments(&revision).await?)
}

#[tauri::command]
pub async fn add_comment(
    state: State<'_, AppState>,
    revision_id: i64,
    lines: Lines,
    text: String,
) -> Result<Comment> {
    Ok(state
        .engine
        .review()
        .add_comment(revision_id, lines, &text)
        .await?)
}

#[tauri::command]
pub async fn resolve_comment(
    state: State<'_, AppState>,
    id: i64,
    resolved: bool,
) -> Result<Comment> {
    Ok(state.engine.review().resolve_comment(id, resolved).await?)
}

/// The run's approved plan with what its agent did since (`null` before any approval).
#[tauri::command]
pub async fn progress(state: State<'_, AppState>, run_id: String) -> Result<Option<Progress>> {
    Ok(view::run_progress(&state.engine, &run_id).await?)
}

/// An approved revision with what its agent did since (`null` for one not approved).
#[tauri::command]
pub async fn revision_progress(
    state: State<'_, AppState>,
    revision_id: i64,
) -> Result<Option<Progress>> {
    Ok(view::revision_progress(&state.engine, revision_id).await?)
}

/// One changed file's diff since the approval (`null` when it is not known).
#[tauri::command]
pub async fn file_diff(
    state: State<'_, AppState>,
    revision_id: i64,
    path: String,
) -> Result<Option<FileDiff>> {
    Ok(view::file_diff(&state.engine, revision_id, &path).await?)
}

/// Marks a step of an approved plan done or not applicable by hand (or clears the mark).
#[tauri::command]
pub async fn mark_step(
    state: State<'_, AppState>,
    revision_id: i64,
    step: usize,
    mark: StepMark,
) -> Result<Progress> {
    Ok(view::mark_step(&state.engine, revision_id, step, mark).await?)
}

/// Saves the reviewer's version of an open plan as a revision of their own.
#[tauri::command]
pub async fn edit_plan(
    state: State<'_, AppState>,
    revision_id: i64,
    text: String,
) -> Result<Edited> {
    Ok(state.engine.review().edit(revision_id, &text).await?)
}

/// The editor's live preview: the draft rendered as a plan is, in a review's pages.
#[tauri::command]
pub async fn preview(markdown: String) -> Result<PlanPreview> {
    // Rendering a long plan takes milliseconds: off the async runtime.
    let preview = tauri::async_runtime::spawn_blocking(move || view::plan_preview(&markdown))
        .await
        .map_err(|e| IpcError::new("internal", format!("the preview failed: {e}")))?;
    Ok(preview?)
}

/// The audit trail (of one run, or all) and whether its chain holds.
#[tauri::command]
pub async fn audit(state: State<'_, AppState>, run_id: Option<String>) -> Result<AuditView> {
    Ok(view::audit(state.engine.review(), run_id.as_deref()).await?)
}

/// Saves the whole audit trail as JSON lines, its head first (as `plandesk audit --export`:
/// `plandesk audit --verify --file` checks it), where the person chooses; `None` if they
/// cancelled. Always the whole trail: a part of it could not be checked for what was cut.
#[tauri::command]
pub async fn export_audit<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
) -> Result<Option<String>> {
    let entries = state.engine.review().audit(None).await?;
    let name = "plandesk-audit.jsonl";
    let Some(path) = app
        .dialog()
        .file()
        .set_title("Export the audit trail")
        .set_file_name(name)
        .add_filter("JSON lines", &["jsonl"])
        .blocking_save_file()
        .and_then(|p| p.into_path().ok())
    else {
        return Ok(None);
    };
    let failed = |e: std::io::Error| {
        IpcError::new("export", format!("Could not write {}: {e}", path.display()))
    };
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).map_err(failed)?);
    plandesk::review::write_export(&entries, &mut out)
        .and_then(|()| out.flush())
        .map_err(failed)?;
    Ok(Some(path.display().to_string()))
}
