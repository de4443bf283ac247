//! A run's state between steps: plain data with a schema version, which is exactly what
//! suspending, persisting and resuming need. Its transitions (`machine`) do no I/O; the engine
//! performs what they ask for (model calls, tools, persistence, chunks). A run moves
//! CallModel -> RunTools -> Suspended | Waiting | Failed.

mod machine;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::chunk::{ChunkError, ToolCall, Usage};
use crate::message::{Json, Message};

pub use crate::vocabulary::RunStatus;
pub use machine::{unique_call_id, CallIds, NextStep, RunError, StepEnd, Turn};

/// Bumped whenever the persisted shape of [`RunState`] changes.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunState {
    pub schema_version: u32,
    pub run_id: String,
    pub agent_id: String,
    /// The model spec, so a resume in another process uses the same model.
    pub model: String,
    pub workspace: PathBuf,
    pub plans_dir: String,
    pub mode: String,
    pub auto_approve: bool,
    pub max_steps: u32,
    /// Model calls made by the current stream (a new run, a resume, or a user message).
    pub steps_this_stream: u32,
    pub usage: Usage,
    pub phase: Phase,
    /// The conversation; persisted append-only beside the snapshot, not inside it.
    #[serde(skip)]
    pub messages: Vec<Message>,
    /// Where the store stands for this run: the snapshot version loaded or last written, and
    /// how many messages it holds. Bookkeeping for the driver; never part of the snapshot.
    #[serde(skip)]
    pub stored: Stored,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stored {
    pub version: i64,
    pub messages: usize,
    /// What changed since follows from durable decisions alone (their calls answered, none
    /// run): see [`crate::store::Commit::derived`].
    pub derived: bool,
}

/// Where a run is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "kebab-case")]
pub enum Phase {
    /// The next thing to do is to call the model.
    CallModel,
    /// The model asked for tool calls that have not all run yet.
    RunTools { step: Step },
    /// At least one tool call of the step waits for a person.
    Suspended { step: Step },
    /// The run is idle until the user's next message.
    Waiting { reason: WaitReason },
    /// The model failed; the next user message (or a retry) calls it again.
    Failed { error: ChunkError },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitReason {
    /// The model answered without calling tools.
    Finished,
    /// A plan was rejected without feedback: the user will say what to change.
    Feedback,
    /// `max_steps` model calls were made in one stream.
    MaxSteps,
}

/// One model step's tool calls and what became of each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub message_id: String,
    /// The mode the calls were made in: their tools are looked up there, even after a switch.
    pub mode: String,
    pub calls: Vec<CallState>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallState {
    pub call: ToolCall,
    pub status: CallStatus,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum CallStatus {
    NotRun,
    AwaitingApproval,
    #[serde(rename_all = "camelCase")]
    Suspended {
        suspend_payload: Value,
    },
    Done {
        outcome: Outcome,
    },
}

impl CallStatus {
    pub fn is_pending(&self) -> bool {
        matches!(
            self,
            CallStatus::AwaitingApproval | CallStatus::Suspended { .. }
        )
    }
}

/// What a finished tool call gave the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
pub enum Outcome {
    Result(Value),
    Error(String),
    Denied(String),
}

impl Outcome {
    /// The tool message content the model sees.
    pub fn for_model(&self) -> Json {
        match self {
            Outcome::Result(value) => Json::new(value),
            Outcome::Error(error) => Json::new(&serde_json::json!({"error": error})),
            Outcome::Denied(reason) => {
                Json::new(&serde_json::json!({"error": reason, "denied": true}))
            }
        }
    }
}

impl Step {
    /// The earliest call still waiting for a person.
    pub fn first_pending(&self) -> Option<&CallState> {
        self.calls.iter().find(|c| c.status.is_pending())
    }
}

impl Phase {
    pub fn status(&self) -> RunStatus {
        match self {
            Phase::CallModel | Phase::RunTools { .. } => RunStatus::Running,
            Phase::Suspended { .. } => RunStatus::Suspended,
            Phase::Waiting {
                reason: WaitReason::Feedback,
            } => RunStatus::Waiting,
            Phase::Waiting { .. } => RunStatus::Finished,
            Phase::Failed { .. } => RunStatus::Failed,
        }
    }
}
