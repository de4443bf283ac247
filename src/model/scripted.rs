//! `scripted:<file>`: replays model turns from a JSON file, for tests and benchmarks.
//! `{"turns": [{"text"?: "...", "toolCalls"?: [{"toolCallId", "toolName", "args"}]}]}`; the n-th
//! model call of a run gets the n-th turn, so a run resumed by another process carries on where
//! it was. When `PLANDESK_SCRIPTED_LOG` names a file, each call appends `{"messages": [...]}`.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use futures::stream;
use serde::Deserialize;
use serde_json::json;

use crate::message::Json;

use super::{canned_events, EventStream, LanguageModel, ModelError, ModelEvent, ModelRequest};

pub const LOG_ENV: &str = "PLANDESK_SCRIPTED_LOG";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    turns: Vec<Turn>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Turn {
    #[serde(default)]
    text: Option<String>,
    #[serde(default, rename = "toolCalls")]
    tool_calls: Vec<ScriptedCall>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ScriptedCall {
    #[serde(default)]
    tool_call_id: Option<String>,
    tool_name: String,
    /// Kept as text: a long script's parsed arguments would cost several times their size.
    #[serde(default)]
    args: Option<Json>,
}

#[derive(Debug, Clone)]
pub struct ScriptedModel {
    path: PathBuf,
    turns: Vec<Turn>,
}

impl ScriptedModel {
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let shown = path.display().to_string();
        let err = |message: String| ModelError::ScriptFile {
            path: shown.clone(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let script: Script = serde_json::from_str(&text).map_err(|e| err(e.to_string()))?;
        let path = std::fs::canonicalize(path).map_err(|e| err(e.to_string()))?;
        Ok(Self {
            path,
            turns: script.turns,
        })
    }

    fn log(&self, request: &ModelRequest<'_>) -> Result<(), ModelError> {
        let Some(log) = std::env::var_os(LOG_ENV) else {
            return Ok(());
        };
        let tools: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        let line = json!({"system": request.system, "messages": request.messages, "tools": tools});
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| writeln!(f, "{line}"))
            .map_err(|e| ModelError::ScriptFile {
                path: PathBuf::from(log).display().to_string(),
                message: format!("cannot append to the scripted log: {e}"),
            })
    }

    fn events(&self, turn_no: usize, turn: &Turn) -> Vec<Result<ModelEvent, ModelError>> {
        let calls = turn
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                let id = call
                    .tool_call_id
                    .clone()
                    .unwrap_or_else(|| format!("call-{}-{}", turn_no + 1, i + 1));
                let args = call.args.as_ref().map_or("null", Json::text);
                (id, call.tool_name.clone(), args.to_owned())
            })
            .collect();
        canned_events(turn.text.as_deref().unwrap_or(""), calls, None)
    }
}

impl LanguageModel for ScriptedModel {
    fn spec(&self) -> String {
        format!("scripted:{}", self.path.display())
    }

    fn stream<'a>(&'a self, request: ModelRequest<'a>) -> EventStream<'a> {
        let turn_no = request.turns;
        let events = match (self.log(&request), self.turns.get(turn_no)) {
            (Err(err), _) => vec![Err(err)],
            (Ok(()), None) => vec![Err(ModelError::ScriptExhausted {
                path: self.path.display().to_string(),
                turns: self.turns.len(),
            })],
            (Ok(()), Some(turn)) => self.events(turn_no, turn),
        };
        Box::pin(stream::iter(events))
    }
}
