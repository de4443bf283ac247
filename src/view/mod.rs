//! What a window shows, built once for every host: long values cut to previews, a run's
//! transcript, a plan in pages of whole blocks, revisions in lists, the inbox, the history a
//! page at a time, the audit trail, the app's settings as stored. Serialised (camelCase) as
//! they cross the desktop app's IPC; a host only converts its arguments, calls these and maps
//! their errors. Above the engine and the review core, below every host.

mod audit;
mod command;
mod inbox;
mod preview;
mod progress;
mod revision;
mod run;
mod settings;

pub use audit::{audit, AuditView};
pub use command::{CommandError, DecideRequest, HistoryFilter};
pub use inbox::{
    change_or_reread, follow_inbox, inbox, InboxFeed, InboxItem, InboxReceiver, InboxSnapshot,
    REREAD,
};
pub use preview::{preview, preview_value, LiveChunk, FULL_UP_TO};
pub use progress::{
    file_diff, finished_after, mark_step, newest_finished, revision_progress, run_progress,
    Finished,
};
pub use revision::{
    compare, history, plan_pages, plan_preview, plan_thread, revision, revision_pages,
    revision_source, ComparisonView, HistoryPage, PagedRevision, PlanPreview, RevisionSource,
    RevisionSummary, FIRST_BYTES, FIRST_SCREEN_BYTES, MAX_HISTORY_PAGE,
};
pub use run::{
    hands_review_over, run_detail, run_end, tool_call, transcript, ReviewHandOff, RunDetailView,
    RunEnd, ToolCallFull, TranscriptItem,
};
pub use settings::{
    Settings, MAX_REVIEWER_NAME, NOTIFICATIONS, NOTIFICATION_TITLES, START_AT_LOGIN,
};

use crate::engine::EngineError;
use crate::review::ReviewError;
use crate::workspace::MAX_FILE_BYTES;

/// What a view refuses, or the engine's error reading it; each with a stable code.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("run {run_id} has no tool call {tool_call_id:?}")]
    UnknownToolCall {
        run_id: String,
        tool_call_id: String,
    },
    // The texts below are shown to a person as they are (the window's forms say them).
    #[error("A page of the history holds 1 to {MAX_HISTORY_PAGE} revisions, not {0}.")]
    PageSize(usize),
    #[error("The plan is {0} bytes; a plan may be at most {MAX_FILE_BYTES}.")]
    PlanTooLong(usize),
    #[error(
        "Your name may have at most {MAX_REVIEWER_NAME} characters, and no control characters."
    )]
    ReviewerName,
}

impl From<ReviewError> for ViewError {
    fn from(err: ReviewError) -> Self {
        Self::Engine(err.into())
    }
}

impl ViewError {
    /// A stable code for hosts to branch on.
    pub fn code(&self) -> &'static str {
        match self {
            ViewError::Engine(e) => e.code(),
            ViewError::UnknownToolCall { .. } => "unknown-tool-call",
            ViewError::PageSize(_) | ViewError::PlanTooLong(_) | ViewError::ReviewerName => {
                "invalid-input"
            }
        }
    }
}
