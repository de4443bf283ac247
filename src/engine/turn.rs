//! Folds a model's streamed events into one turn (its text and tool calls), emitting the
//! streaming chunks as they come. Tool call ids are made unique in the run here, before any
//! chunk names them, so a decision always belongs to exactly one call.

use std::collections::HashSet;

use futures::StreamExt;
use serde_json::{json, Value};

use super::emit;
use crate::chunk::{ToolCall, Usage};
use crate::clock::IdSource;
use crate::engine::ChunkSink;
use crate::model::{ModelError, ModelEvent};
use crate::run::{unique_call_id, Turn};

/// A turn as far as it got, and the error that cut it short, if any.
pub(super) struct Folded {
    pub turn: Turn,
    pub failure: Option<ModelError>,
}

/// A tool call whose arguments are still streaming.
struct Streaming {
    id: String,
    name: String,
    args: String,
}

pub(super) async fn fold(
    run_id: &str,
    mut events: futures::stream::BoxStream<'_, Result<ModelEvent, ModelError>>,
    used_before: &(dyn Fn(&str) -> bool + Sync),
    ids: &dyn IdSource,
    sink: &mut dyn ChunkSink,
) -> Folded {
    let mut turn = Turn {
        reason: "stop".into(),
        ..Turn::default()
    };
    let mut text_id: Option<String> = None;
    let mut streaming: Vec<Streaming> = Vec::new();
    let mut usage: Option<Usage> = None;
    let mut failure = None;
    // Ids taken by this turn's calls; `used_before` answers for the rest of the run.
    let mut used = HashSet::new();
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(err) => {
                failure = Some(err);
                break;
            }
        };
        if !matches!(event, ModelEvent::TextDelta(_)) {
            if let Some(id) = text_id.take() {
                sink.emit(emit::text_end(run_id, id));
            }
        }
        match event {
            ModelEvent::TextDelta(delta) => {
                let id = text_id.get_or_insert_with(|| {
                    let id = ids.next_id("text");
                    sink.emit(emit::text_start(run_id, &id));
                    id
                });
                turn.text.push_str(&delta);
                sink.emit(emit::text_delta(run_id, id, delta));
            }
            ModelEvent::ToolCallStart { id, name } => streaming.push(Streaming {
                id,
                name,
                args: String::new(),
            }),
            ModelEvent::ToolCallArgsDelta { id, delta } => {
                if let Some(call) = streaming.iter_mut().rev().find(|c| c.id == id) {
                    call.args.push_str(&delta);
                }
            }
            ModelEvent::ToolCallEnd { id } => {
                if let Some(index) = streaming.iter().position(|c| c.id == id) {
                    let done = streaming.remove(index);
                    let tool_call_id = unique_call_id(&model_token(&done.id), |id| {
                        used.contains(id) || used_before(id)
                    });
                    used.insert(tool_call_id.clone());
                    let call = ToolCall {
                        tool_call_id,
                        tool_name: model_token(&done.name),
                        args: parse_args(&done.args),
                    };
                    sink.emit(emit::tool_call(run_id, call.clone()));
                    turn.tool_calls.push(call);
                }
            }
            ModelEvent::Usage(u) => usage = Some(u),
            ModelEvent::Finish { reason } => turn.reason = model_token(&reason),
        }
    }
    drop(events);
    if let Some(id) = text_id.take() {
        sink.emit(emit::text_end(run_id, id));
    }
    turn.usage = usage;
    Folded { turn, failure }
}

/// How long a tool call's id, a tool name or a finish reason may be, in characters.
const MAX_TOKEN: usize = 64;

/// A tool call's id, a tool name or a finish reason as the model gave it, made safe to store,
/// show and send back: at most [`MAX_TOKEN`] characters of ASCII letters, digits, `_` and `-`
/// (what the providers accept in a tool call sent back to them), any other character (a space,
/// an escape, an invisible one) shown as `_`. The names of real tools are such tokens already, so a name
/// that had to change names no tool, and the model is told so; an id that is empty here is
/// given one ([`unique_call_id`]).
fn model_token(raw: &str) -> String {
    raw.chars()
        .take(MAX_TOKEN)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// How deeply tool arguments may nest. The arguments are stored and sent inside the run's
/// snapshot, its messages and its chunks, several levels deeper than they are: nested to the JSON
/// reader's own limit (128), a run could be written and never read back, nor its chunks read by
/// a host. Real tools take a few levels.
const MAX_ARGS_DEPTH: usize = 64;

/// Tool arguments as the model streamed them: `""` means no arguments; text that is not JSON,
/// or nests deeper than [`MAX_ARGS_DEPTH`], is kept as a string so schema validation can say
/// what is wrong with it.
fn parse_args(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(value) if depth(&value) <= MAX_ARGS_DEPTH => value,
        _ => Value::String(raw.to_owned()),
    }
}

/// How many arrays and objects deep `value` nests (a scalar is 0). Bounded by the reader's own
/// limit, so the recursion is too.
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        format!(
            "{{\"a\":{}1{}}}",
            "[".repeat(levels - 1),
            "]".repeat(levels - 1)
        )
    }

    #[test]
    fn arguments_nest_up_to_the_limit_and_no_deeper() {
        let kept = parse_args(&nested(MAX_ARGS_DEPTH));
        assert!(kept.is_object(), "{MAX_ARGS_DEPTH} levels are arguments");
        assert_eq!(depth(&kept), MAX_ARGS_DEPTH);
        let raw = nested(MAX_ARGS_DEPTH + 1);
        assert_eq!(parse_args(&raw), Value::String(raw.clone()));
        assert_eq!(parse_args("  "), json!({}));
        assert_eq!(parse_args("{not json"), json!("{not json"));
    }

    #[test]
    fn an_id_or_a_name_is_a_short_token_whatever_the_model_sent() {
        assert_eq!(model_token("call_AbC-09"), "call_AbC-09");
        assert_eq!(model_token("write_file"), "write_file");
        assert_eq!(
            model_token("functions.write_file:0"),
            "functions_write_file_0"
        );
        assert_eq!(
            model_token("write_file\u{200b}"),
            "write_file_",
            "an invisible character shows"
        );
        assert_eq!(model_token("\u{1b}[2Jx"), "__2Jx");
        assert_eq!(model_token(""), "");
        let long = model_token(&"漢".repeat(100_000));
        assert_eq!(long, "_".repeat(MAX_TOKEN));
    }
}
