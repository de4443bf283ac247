//! Revisions as a window shows them: summaries for lists (no text), a plan in pages of whole
//! blocks (the first ones sent with it, the rest when asked), its exact source, its thread,
//! two of them compared, the history a page at a time, and a reviewer's draft rendered.

use serde::Serialize;

use super::ViewError;
use crate::plan::render::{Fallback, HiddenContent};
use crate::plan::SideBySide;
use crate::review::{
    Comment, Comparison, FeedbackStep, HistoryFilter, Page, RenderedPlan, Review, ReviewError,
    Revision, RevisionStatus, PAGE_BYTES,
};
use crate::workspace::MAX_FILE_BYTES;

/// HTML sent with a revision: its first pages, more than a screen of any plan. The rest comes
/// with [`revision_pages`], after the plan is on screen.
pub const FIRST_BYTES: usize = 16 * 1024;

/// HTML a review fills when it appears (the window's `FIRST_BYTES`, plan.js): what a review
/// handed over with the end of a stream carries. With a short transcript, that message stays
/// under the 8 KB Tauri sends with its notice; a larger one (a long run) is fetched, slower.
pub const FIRST_SCREEN_BYTES: usize = 4 * 1024;

/// The most revisions one page of the history may hold.
pub const MAX_HISTORY_PAGE: usize = 1000;

/// A revision without its text, for lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionSummary {
    pub id: i64,
    pub run_id: String,
    pub tool_call_id: String,
    pub path: String,
    pub title: String,
    pub revision_no: i64,
    pub sha256: String,
    pub submitted_at: i64,
    /// The review core's status: `pending`, `approved`, `rejected`, `superseded`.
    pub status: RevisionStatus,
    pub feedback: Option<String>,
    pub decided_at: Option<i64>,
    /// Who decided, when known (a team's reviewers share one history).
    pub decided_by: Option<String>,
    pub prompt: String,
    /// The reviewer who wrote it by editing the agent's plan; `None`: the agent.
    pub author: Option<String>,
}

impl From<&Revision> for RevisionSummary {
    fn from(revision: &Revision) -> Self {
        let decision = revision.decision.as_ref();
        Self {
            id: revision.id,
            run_id: revision.run_id.clone(),
            tool_call_id: revision.tool_call_id.clone(),
            path: revision.path.clone(),
            title: revision.title.clone(),
            revision_no: revision.revision_no,
            sha256: revision.sha256.clone(),
            submitted_at: revision.submitted_at,
            status: revision.status,
            feedback: decision.and_then(|d| d.feedback.clone()),
            decided_at: decision.map(|d| d.decided_at),
            decided_by: decision.and_then(|d| d.decided_by.clone()),
            prompt: revision.prompt.clone(),
            author: revision.author.clone(),
        }
    }
}

/// A revision to review: the summary and its plan's sanitised HTML in pages of whole blocks
/// (joined, the whole plan, title heading and body), the first of them (at least the byte
/// budget it is built with, [`FIRST_BYTES`] or [`FIRST_SCREEN_BYTES`], when the plan has that
/// much). Its text is [`RevisionSource`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PagedRevision {
    #[serde(flatten)]
    pub summary: RevisionSummary,
    pub pages: Vec<String>,
    /// The length of every page's HTML, the pages not sent included (the window sizes their
    /// places from it).
    pub page_bytes: Vec<usize>,
    pub fallback: Option<Fallback>,
    /// What the agent gets that the rendered view hides (the UI flags the plan).
    pub hidden: Vec<HiddenContent>,
    pub hidden_omitted: usize,
    /// How many revisions this plan thread has so far.
    pub revisions_in_thread: i64,
}

impl PagedRevision {
    /// `revision` to review, from its kept rendering (nothing of the whole plan is copied but
    /// the first pages, enough for `first_bytes`), in a plan thread of `revisions_in_thread`.
    pub fn of(
        revision: &Revision,
        rendering: &RenderedPlan,
        revisions_in_thread: i64,
        first_bytes: usize,
    ) -> Self {
        let all = rendering.pages();
        let rendered = &rendering.rendered;
        Self {
            summary: revision.into(),
            pages: first_pages(&all, first_bytes)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            page_bytes: all.iter().map(|page| page.len()).collect(),
            fallback: rendered.fallback.clone(),
            hidden: rendered.hidden.clone(),
            hidden_omitted: rendered.hidden_omitted,
            revisions_in_thread,
        }
    }
}

/// The pages sent with a revision: while fewer than `first_bytes` are in, one more.
fn first_pages<'a>(pages: &[&'a str], first_bytes: usize) -> Vec<&'a str> {
    let mut bytes = 0;
    pages
        .iter()
        .take_while(|page| {
            let more = bytes < first_bytes;
            bytes += page.len();
            more
        })
        .copied()
        .collect()
}

/// The revision `id` to review, with its first pages (enough for `first_bytes`).
pub async fn revision(
    review: &Review,
    id: i64,
    first_bytes: usize,
) -> Result<PagedRevision, ReviewError> {
    let (revision, _, rendered) = review.rendering(id).await?;
    let in_thread = review.thread(&revision).await?.len();
    Ok(PagedRevision::of(
        &revision,
        &rendered,
        in_thread as i64,
        first_bytes,
    ))
}

/// A revision's plan pages from `from` on ([`revision`] sends the first ones).
pub async fn revision_pages(
    review: &Review,
    id: i64,
    from: usize,
) -> Result<Vec<String>, ReviewError> {
    let (_, _, rendered) = review.rendering(id).await?;
    Ok(rendered
        .pages()
        .into_iter()
        .skip(from)
        .map(str::to_owned)
        .collect())
}

/// A revision's exact text: what the agent acts on, and the same as HTML for a source view
/// (escaped, every invisible character marked).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionSource {
    pub markdown: String,
    pub source_html: String,
}

/// A revision's exact text, for the source view and the editor (not sent with [`revision`]: a
/// long plan's second and third copies would slow every plan's way to the screen).
pub async fn revision_source(review: &Review, id: i64) -> Result<RevisionSource, ReviewError> {
    let (_, markdown, rendered) = review.rendering(id).await?;
    Ok(RevisionSource {
        markdown,
        source_html: rendered.source_html.clone(),
    })
}

/// Every revision of the plan `id` belongs to, oldest first.
pub async fn plan_thread(review: &Review, id: i64) -> Result<Vec<RevisionSummary>, ReviewError> {
    let revision = review.revision_by_id(id).await?;
    Ok(review
        .thread(&revision)
        .await?
        .iter()
        .map(RevisionSummary::from)
        .collect())
}

/// Two revisions of one plan side by side, older on the left, with the newer one's comments.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComparisonView {
    pub left: RevisionSummary,
    pub right: RevisionSummary,
    pub diff: SideBySide,
    /// The decisions between the two revisions, oldest first.
    pub between: Vec<FeedbackStep>,
    /// The comments to show beside the newer revision (where their lines are in it).
    pub comments: Vec<Comment>,
}

impl ComparisonView {
    /// `compared`, with `comments` beside its newer revision.
    pub fn of(compared: Comparison, comments: Vec<Comment>) -> Self {
        Self {
            left: (&compared.left).into(),
            right: (&compared.right).into(),
            diff: compared.diff,
            between: compared.between,
            comments,
        }
    }
}

/// The revisions `left` and `right` of one plan compared, with the newer one's comments.
pub async fn compare(
    review: &Review,
    left: i64,
    right: i64,
) -> Result<ComparisonView, ReviewError> {
    let compared = review.compare(left, right).await?;
    let comments = review.comments(&compared.right).await?;
    Ok(ComparisonView::of(compared, comments))
}

/// A page of the history, newest first, and whether older revisions follow it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryPage {
    pub revisions: Vec<RevisionSummary>,
    pub more: bool,
}

/// A page of the history: at most `limit` revisions (1 to [`MAX_HISTORY_PAGE`]) older than
/// `before` (from the newest if not given), newest first. One query: a window asks for the
/// next page as its list scrolls to the end.
pub async fn history(
    review: &Review,
    filter: &HistoryFilter,
    before: Option<i64>,
    limit: usize,
) -> Result<HistoryPage, ViewError> {
    if !(1..=MAX_HISTORY_PAGE).contains(&limit) {
        return Err(ViewError::PageSize(limit));
    }
    // One more than the page: whether there are more.
    let page = Page {
        before,
        limit: limit + 1,
    };
    let mut revisions = review.listing(filter, Some(page)).await?;
    let more = revisions.len() > limit;
    revisions.truncate(limit);
    Ok(HistoryPage {
        revisions: revisions.iter().map(RevisionSummary::from).collect(),
        more,
    })
}

/// A plan's HTML in pages, as a review shows it ([`PAGE_BYTES`]).
pub fn plan_pages(html: &str) -> Vec<&str> {
    crate::plan::render::pages(html, PAGE_BYTES)
}

/// A reviewer's draft rendered exactly as a plan is (sanitised, bounded), in the pages a
/// review shows it in (the window keeps only those near the screen in its document).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanPreview {
    pub pages: Vec<String>,
}

/// The editor's live preview of `markdown`, refused past a plan's size. Blocking (rendering a
/// long plan takes milliseconds): a host calls it off its async runtime.
pub fn plan_preview(markdown: &str) -> Result<PlanPreview, ViewError> {
    if markdown.len() as u64 > MAX_FILE_BYTES {
        return Err(ViewError::PlanTooLong(markdown.len()));
    }
    let rendered = crate::plan::render(markdown);
    Ok(PlanPreview {
        pages: plan_pages(&rendered.html)
            .into_iter()
            .map(str::to_owned)
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_first_pages_fill_the_budget_with_whole_pages() {
        let pages = ["a".repeat(1000), "b".repeat(1000), "c".repeat(1000)];
        let pages: Vec<&str> = pages.iter().map(String::as_str).collect();
        assert_eq!(
            first_pages(&pages, 1500),
            pages[..2],
            "while under, one more"
        );
        assert_eq!(
            first_pages(&pages, 1000),
            pages[..1],
            "exactly full: no more"
        );
        assert_eq!(
            first_pages(&pages, 0),
            Vec::<&str>::new(),
            "no budget: none"
        );
        assert_eq!(first_pages(&pages, 1 << 20), pages, "a short plan: all");
    }

    #[test]
    fn a_preview_is_the_plan_in_the_pages_a_review_shows() {
        let markdown: String = (0..300)
            .map(|i| format!("## Step {i}\n\nMove `t{i}`, then check it.\n\n"))
            .collect();
        let preview = plan_preview(&markdown).unwrap();
        let rendered = crate::plan::render(&markdown);
        assert!(preview.pages.len() > 1, "a long plan comes in pages");
        assert_eq!(
            preview.pages.concat(),
            rendered.html,
            "joined, the pages are the plan as rendered"
        );
        let too_long = "x".repeat(MAX_FILE_BYTES as usize + 1);
        let refused = plan_preview(&too_long).unwrap_err();
        assert_eq!(refused.code(), "invalid-input");
        assert_eq!(
            refused.to_string(),
            format!(
                "The plan is {} bytes; a plan may be at most {MAX_FILE_BYTES}.",
                too_long.len()
            )
        );
    }
}
