//! What a host's commands receive and answer in shapes of their own, the same over the desktop
//! app's IPC and the web review's HTTP: errors as `{code, message}`, a decision as the window
//! sends it, and the history's filter.

use serde::{Deserialize, Serialize};

use super::ViewError;
use crate::engine::EngineError;
use crate::review::{HistoryFilter as ReviewFilter, ReviewError, RevisionStatus};
use crate::Verdict;

/// An error the UI can branch on (`code`) and show (`message`).
#[derive(Debug, Clone, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct CommandError {
    pub code: String,
    pub message: String,
}

impl CommandError {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new("invalid-input", message)
    }
}

impl From<EngineError> for CommandError {
    fn from(err: EngineError) -> Self {
        Self::new(err.code(), err.to_string())
    }
}

impl From<crate::desktop::OpenError> for CommandError {
    fn from(err: crate::desktop::OpenError) -> Self {
        Self::new(err.code(), err.to_string())
    }
}

impl From<ReviewError> for CommandError {
    fn from(err: ReviewError) -> Self {
        Self::new(err.code(), err.to_string())
    }
}

impl From<ViewError> for CommandError {
    fn from(err: ViewError) -> Self {
        Self::new(err.code(), err.to_string())
    }
}

impl From<crate::token::TokenError> for CommandError {
    fn from(err: crate::token::TokenError) -> Self {
        use crate::token::TokenError;
        let code = match &err {
            TokenError::BadName { .. } => "invalid-input",
            TokenError::Random(_) => "internal",
            TokenError::Store(store) => store.code(),
        };
        Self::new(code, err.to_string())
    }
}

impl From<crate::model::ModelError> for CommandError {
    fn from(err: crate::model::ModelError) -> Self {
        Self::new(err.code(), err.to_string())
    }
}

/// A decision as the window sends it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecideRequest {
    pub run_id: String,
    pub tool_call_id: String,
    pub approve: bool,
    pub feedback: Option<String>,
    /// Notes that go with an approval (the agent reads them after the approval text).
    #[serde(default)]
    pub note: Option<String>,
    /// The sha256 of the plan revision on screen; the decision is refused if it changed.
    pub revision: Option<String>,
    /// Approving Claude Code's plan: it then edits files without asking.
    #[serde(default)]
    pub accept_edits: bool,
}

impl DecideRequest {
    /// The engine's verdict: bound to the call and the revision the person saw.
    pub fn verdict(&self) -> Verdict {
        Verdict {
            approve: self.approve,
            feedback: self.feedback.clone(),
            note: self.note.clone(),
            tool_call_id: Some(self.tool_call_id.clone()),
            revision: self.revision.clone(),
            accept_edits: self.accept_edits,
        }
    }
}

/// The history's filter as the window sends it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryFilter {
    /// A revision status (`pending`, `approved`, …), or `all` (the same as none).
    pub status: Option<String>,
    pub query: Option<String>,
}

impl TryFrom<HistoryFilter> for ReviewFilter {
    type Error = CommandError;

    fn try_from(filter: HistoryFilter) -> Result<Self, CommandError> {
        let status = match filter.status.as_deref() {
            None | Some("all") => None,
            Some(name) => Some(RevisionStatus::parse(name).ok_or_else(|| {
                let known: Vec<&str> = RevisionStatus::ALL.iter().map(|s| s.as_str()).collect();
                CommandError::invalid(format!(
                    "There is no revision status {:?}: the history lists all revisions, or \
                     those {}.",
                    name.chars().take(40).collect::<String>(),
                    known.join(", ")
                ))
            })?),
        };
        Ok(Self {
            run_id: None,
            status,
            query: filter.query,
        })
    }
}
