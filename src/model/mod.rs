//! Language models behind one trait. A model turns a request (messages and tool schemas) into a
//! stream of normalised events; the run loop assembles those into chunks.

pub mod demo;
pub mod scripted;

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use futures::stream::BoxStream;
use serde_json::Value;

use crate::chunk::Usage;
use crate::message::Message;

/// A tool as the model is told about it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// Everything one model call is sent.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    pub run_id: &'a str,
    /// The agent's and the current mode's instructions.
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
}

/// One normalised event of a model's streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    TextDelta(String),
    ToolCallStart {
        id: String,
        name: String,
    },
    ToolCallArgsDelta {
        id: String,
        delta: String,
    },
    ToolCallEnd {
        id: String,
    },
    Usage(Usage),
    /// The model's stop reason, normalised: `stop`, `tool-calls`, `length`, ...
    Finish {
        reason: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("unknown model `{0}`: use `demo` or `scripted:FILE`")]
    UnknownSpec(String),
    #[error("scripted model file {path}: {message}")]
    ScriptFile { path: String, message: String },
    #[error("scripted model {path} has no turn left: all {turns} turns were used")]
    ScriptExhausted { path: String, turns: usize },
    #[error("{model}: {message}")]
    Protocol { model: String, message: String },
}

impl ModelError {
    /// A stable code for hosts to branch on.
    pub fn code(&self) -> &'static str {
        match self {
            ModelError::UnknownSpec(_) => "model-unknown",
            ModelError::ScriptFile { .. } => "model-script-file",
            ModelError::ScriptExhausted { .. } => "model-script-exhausted",
            ModelError::Protocol { .. } => "model-protocol",
        }
    }
}

pub type EventStream<'a> = BoxStream<'a, Result<ModelEvent, ModelError>>;

pub trait LanguageModel: Send + Sync + fmt::Debug {
    /// The spec that selects this model again after a restart, e.g. `scripted:/abs/file.json`.
    fn spec(&self) -> String;
    fn stream<'a>(&'a self, request: ModelRequest<'a>) -> EventStream<'a>;
}

/// Builds a model from its spec: `demo` or `scripted:FILE` (relative files resolve from `cwd`).
pub fn from_spec(spec: &str, cwd: &Path) -> Result<Arc<dyn LanguageModel>, ModelError> {
    match spec.split_once(':') {
        None if spec == "demo" => Ok(Arc::new(demo::DemoModel)),
        Some(("scripted", file)) if !file.is_empty() => {
            Ok(Arc::new(scripted::ScriptedModel::load(&cwd.join(file))?))
        }
        _ => Err(ModelError::UnknownSpec(spec.to_owned())),
    }
}

/// The events of one canned turn, as a streaming model would send them: the text word by word,
/// then each tool call with its arguments in two fragments, then usage and the stop reason.
/// Shared by the models that do not talk to a server (`demo`, `scripted`).
pub(crate) fn canned_events(
    text: &str,
    calls: Vec<(String, String, Value)>,
    usage: Option<Usage>,
) -> Vec<Result<ModelEvent, ModelError>> {
    let mut events: Vec<Result<ModelEvent, ModelError>> = text
        .split_inclusive(' ')
        .map(|word| Ok(ModelEvent::TextDelta(word.to_owned())))
        .collect();
    let reason = if calls.is_empty() {
        "stop"
    } else {
        "tool-calls"
    };
    for (id, name, args) in calls {
        let args = args.to_string();
        let half = args
            .char_indices()
            .nth(args.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        events.push(Ok(ModelEvent::ToolCallStart {
            id: id.clone(),
            name,
        }));
        for piece in [&args[..half], &args[half..]] {
            events.push(Ok(ModelEvent::ToolCallArgsDelta {
                id: id.clone(),
                delta: piece.to_owned(),
            }));
        }
        events.push(Ok(ModelEvent::ToolCallEnd { id }));
    }
    events.extend(usage.map(|u| Ok(ModelEvent::Usage(u))));
    events.push(Ok(ModelEvent::Finish {
        reason: reason.into(),
    }));
    events
}

/// How many model calls this conversation has had: one assistant message each.
pub(crate) fn calls_so_far(messages: &[Message]) -> usize {
    messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .count()
}
