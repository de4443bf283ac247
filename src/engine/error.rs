//! What the engine refuses or fails on, each with a stable code hosts branch on. Messages are
//! host-neutral: a host adds its own hint (the CLI names the command that helps).

use crate::mode::ModeError;
use crate::model::ModelError;
use crate::review::ReviewError;
use crate::run::RunError;
use crate::store::StoreError;
use crate::workspace::WorkspaceError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Review(#[from] ReviewError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    Mode(#[from] ModeError),
    #[error("the prompt is empty: say what the agent should do")]
    EmptyPrompt,
    #[error("the message is empty")]
    EmptyMessage,
    #[error("max steps must be at least 1")]
    MaxSteps,
    #[error("run {run_id} is being run by {who}; wait for it to stop")]
    Busy { run_id: String, who: String },
    #[error("a revision applies to plans; tool call {tool_call_id} of run {run_id} is a {tool_name} approval")]
    RevisionOnApproval {
        run_id: String,
        tool_call_id: String,
        tool_name: String,
    },
    #[error("tool `{tool}` of run {run_id} is no longer available in mode `{mode}`")]
    MissingTool {
        run_id: String,
        tool: String,
        mode: String,
    },
    #[error(
        "run {run_id} is a {agent} session: answer its plans in Plandesk, continue it in {agent}"
    )]
    NotAnEngineRun { run_id: String, agent: String },
    #[error(
        "only an approval of a Claude Code plan can let it edit files without asking; \
         run {run_id} {what}"
    )]
    AcceptEditsNotHere { run_id: String, what: String },
    #[error("run {run_id}: {message}")]
    Task { run_id: String, message: String },
}

impl EngineError {
    /// A stable code for hosts (CLI exit paths, IPC) to branch on.
    pub fn code(&self) -> &'static str {
        match self {
            EngineError::Store(e) => e.code(),
            EngineError::Review(e) => e.code(),
            EngineError::Run(e) => match e {
                RunError::NotSuspended { .. } | RunError::NothingToContinue { .. } => {
                    "not-suspended"
                }
                RunError::DecisionPending { .. } => "decision-pending",
                RunError::NoOpenCall { .. } => "not-pending",
                RunError::SeveralOpen { .. } => "several-open",
                RunError::Interrupted { .. } => "interrupted",
            },
            EngineError::Model(e) => e.code(),
            EngineError::Workspace(_) => "workspace",
            EngineError::Mode(_) => "mode",
            EngineError::EmptyPrompt
            | EngineError::EmptyMessage
            | EngineError::MaxSteps
            | EngineError::RevisionOnApproval { .. }
            | EngineError::AcceptEditsNotHere { .. } => "invalid-input",
            EngineError::Busy { .. } => "busy",
            EngineError::MissingTool { .. } => "missing-tool",
            EngineError::NotAnEngineRun { .. } => "not-an-engine-run",
            EngineError::Task { .. } => "internal",
        }
    }
}
