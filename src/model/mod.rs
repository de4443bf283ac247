//! Language models behind one trait. A model turns a request (messages and tool schemas) into a
//! stream of normalised events; the run loop assembles those into chunks.

pub mod anthropic;
pub mod demo;
pub(crate) mod http;
pub mod openai;
pub mod scripted;
pub mod select;

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
    /// The workspace's plans folder (relative), for built-in models that write plans.
    pub plans_dir: &'a str,
    pub messages: &'a [Message],
    /// How many turns the model has had in `messages` (its messages), counted by the engine as
    /// the conversation grew: a scripted model's n-th call gets its n-th turn.
    pub turns: usize,
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
    #[error(
        "unknown model `{0}`: use `demo`, `scripted:FILE`, `openai:MODEL`, `anthropic:MODEL` \
         or `ollama:MODEL` (each of the last three may end in `@BASE_URL`)"
    )]
    UnknownSpec(String),
    #[error("scripted model file {path}: {message}")]
    ScriptFile { path: String, message: String },
    #[error("scripted model {path} has no turn left: all {turns} turns were used")]
    ScriptExhausted { path: String, turns: usize },
    #[error("{model}: {message}")]
    Protocol { model: String, message: String },
    #[error("{provider}: {message}")]
    Config {
        provider: &'static str,
        message: String,
    },
    #[error("{provider}: no API key: {hint}")]
    NoKey {
        provider: &'static str,
        hint: String,
    },
    #[error("{provider}: cannot reach {url}: {message}")]
    Connect {
        provider: &'static str,
        url: String,
        message: String,
    },
    #[error("{provider} refused the API key (HTTP {status}: {message}); {hint}")]
    Auth {
        provider: &'static str,
        status: u16,
        hint: &'static str,
        message: String,
    },
    #[error("{provider} answered HTTP {status}: {message}")]
    Status {
        provider: &'static str,
        status: u16,
        message: String,
    },
    #[error("{provider}: {message}")]
    Timeout {
        provider: &'static str,
        message: String,
    },
    #[error("{provider}: {message}")]
    Stream {
        provider: &'static str,
        message: String,
    },
    #[error("{provider} reported an error mid-answer ({kind}): {message}")]
    Provider {
        provider: &'static str,
        kind: String,
        message: String,
    },
}

impl ModelError {
    /// A stable code for hosts to branch on.
    pub fn code(&self) -> &'static str {
        match self {
            ModelError::UnknownSpec(_) => "model-unknown",
            ModelError::ScriptFile { .. } => "model-script-file",
            ModelError::ScriptExhausted { .. } => "model-script-exhausted",
            ModelError::Protocol { .. } => "model-protocol",
            ModelError::Config { .. } => "model-config",
            ModelError::NoKey { .. } => "model-no-key",
            ModelError::Connect { .. } => "model-connect",
            ModelError::Auth { .. } => "model-auth",
            ModelError::Status { status: 429, .. } => "model-rate-limited",
            ModelError::Status { .. } => "model-http-status",
            ModelError::Timeout { .. } => "model-timeout",
            ModelError::Stream { .. } => "model-stream",
            ModelError::Provider { .. } => "model-provider-error",
        }
    }
}

pub type EventStream<'a> = BoxStream<'a, Result<ModelEvent, ModelError>>;

pub trait LanguageModel: Send + Sync + fmt::Debug {
    /// The spec that selects this model again after a restart, e.g. `scripted:/abs/file.json`.
    fn spec(&self) -> String;
    fn stream<'a>(&'a self, request: ModelRequest<'a>) -> EventStream<'a>;
}

/// Builds a model from its spec (see [`select`]); relative `scripted:` files resolve from `cwd`.
/// Keys come from the environment, else the OS keyring; a provider at its public base URL needs
/// one, a server at a base URL you chose may do without.
pub fn from_spec(spec: &str, cwd: &Path) -> Result<Arc<dyn LanguageModel>, ModelError> {
    use select::{ModelSpec, Provider};
    let (provider, model, base_url) = match ModelSpec::parse(spec)? {
        ModelSpec::Demo => return Ok(Arc::new(demo::DemoModel)),
        ModelSpec::Scripted(file) => {
            return Ok(Arc::new(scripted::ScriptedModel::load(&cwd.join(file))?))
        }
        ModelSpec::Remote {
            provider,
            model,
            base_url,
        } => (
            provider,
            model,
            base_url.unwrap_or_else(|| provider.base_url_from_env()),
        ),
    };
    let key = match provider.key_provider() {
        None => None,
        Some(keys) => {
            let (found, keyring_problem) = crate::secret::find_key(keys);
            let key = found.map(|(key, _)| key);
            if key.is_none() && base_url == provider.default_base_url() {
                let mut hint = format!(
                    "set {} or save one with `plandesk key set {}`",
                    keys.env_var(),
                    keys.name()
                );
                if let Some(problem) = keyring_problem {
                    hint.push_str(&format!(" (the OS keyring could not be read: {problem})"));
                }
                return Err(ModelError::NoKey {
                    provider: provider.name(),
                    hint,
                });
            }
            key
        }
    };
    let settings = http::HttpSettings::from_env();
    Ok(match provider {
        Provider::Anthropic => Arc::new(anthropic::AnthropicModel::new(
            &model, &base_url, key, settings,
        )?),
        Provider::OpenAi | Provider::Ollama => Arc::new(openai::OpenAiModel::new(
            provider.name(),
            &model,
            &base_url,
            provider.default_base_url(),
            key,
            settings,
        )?),
    })
}

/// The events of one canned turn, as a streaming model would send them: the text word by word,
/// then each tool call with its arguments (JSON text) in two fragments, then usage and the stop
/// reason.
/// Shared by the models that do not talk to a server (`demo`, `scripted`).
pub(crate) fn canned_events(
    text: &str,
    calls: Vec<(String, String, String)>,
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
