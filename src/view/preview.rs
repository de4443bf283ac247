//! Previews: a long tool argument or result cut to what a window shows of it, folded in a
//! line, with its whole length (a host reads the whole value when the line is opened). A
//! preview is the same JSON shape cut short, so a `path` argument still names its file.

use serde::Serialize;
use serde_json::Value;

use crate::chunk::{Chunk, ChunkKind, StepOutput};
use crate::message::Json;

/// A chunk as the window gets it: the engine's chunk, its long values cut to previews the way
/// `run_detail` sends a transcript (the window never shows more of them, folded in a line, and
/// a 200 KB plan in a `tool-result` would otherwise cross the IPC whole, at the moment a person
/// waits for the run to go on). `tool_call` reads a value whole when its line is opened: a
/// tool's result is stored before its chunk is sent, a model's tool call once the model's turn
/// is over (the window waits for that). Hosts other than the window (the CLI, MCP) get the
/// engine's chunks as they are. A chunk stays under the 8 KB Tauri sends with its message
/// unless a step's output lists many long calls (the window then fetches it, as before).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveChunk {
    #[serde(flatten)]
    pub chunk: Chunk,
    /// The whole `args`' length in bytes, when the payload's `args` is a preview.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args_full_bytes: Option<usize>,
    /// The whole `result` (a `tool-result`) or `error` (a `tool-error`)'s length in bytes,
    /// when it is a preview.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_full_bytes: Option<usize>,
}

impl From<Chunk> for LiveChunk {
    fn from(mut chunk: Chunk) -> Self {
        use ChunkKind as K;
        let (mut args_full_bytes, mut result_full_bytes) = (None, None);
        match &mut chunk.kind {
            K::ToolCall(call) => args_full_bytes = shorten(&mut call.args),
            K::ToolResult(p) => {
                args_full_bytes = shorten(&mut p.args);
                result_full_bytes = shorten(&mut p.result);
            }
            K::ToolError(p) => {
                args_full_bytes = shorten(&mut p.args);
                result_full_bytes = shorten_text(&mut p.error);
            }
            K::ToolCallSuspended(p) => {
                args_full_bytes = shorten(&mut p.args);
                // The plan itself: the window reads its revision.
                shorten(&mut p.suspend_payload);
            }
            K::ToolCallApproval(p) => args_full_bytes = shorten(&mut p.args),
            K::ToolOutputDenied(p) => args_full_bytes = shorten(&mut p.args),
            // A step's output repeats what streamed in it; the window does not show it.
            K::StepFinish(p) => shorten_output(&mut p.output),
            K::Finish(p) => shorten_output(&mut p.output),
            K::Start(_)
            | K::StepStart(_)
            | K::TextStart(_)
            | K::TextDelta(_)
            | K::TextEnd(_)
            | K::Error(_) => {}
        }
        Self {
            chunk,
            args_full_bytes,
            result_full_bytes,
        }
    }
}

/// A step's output, when long, as a bounded preview: the window never shows it (it repeats
/// what streamed in the step), and a step may make many calls that, each short enough to go
/// whole, add up. Its text and its calls' arguments share one budget; at most
/// `PREVIEW_ITEMS` calls are listed.
fn shorten_output(output: &mut StepOutput) {
    let calls: usize = output.tool_calls.iter().map(|c| json_len(&c.args)).sum();
    if output.text.len() + calls <= FULL_UP_TO {
        return;
    }
    let mut budget = PREVIEW_BUDGET;
    budget -= cut_text(&mut output.text, budget);
    output.tool_calls.truncate(PREVIEW_ITEMS);
    for call in &mut output.tool_calls {
        cut(&mut call.args, &mut budget);
    }
}

/// Tool arguments or results longer than this reach the window as a [`preview`]: a 200 KB
/// `write_file` would otherwise ride along, folded away, with every read of its run.
pub const FULL_UP_TO: usize = 8 * 1024;
/// How much of a long value its preview keeps: characters in all, per string, and items per
/// list or object.
const PREVIEW_BUDGET: usize = 4 * 1024;
const PREVIEW_STRING: usize = 600;
const PREVIEW_ITEMS: usize = 20;

/// `json` as it is when it is short (and `None`); else a preview of it and its length in bytes.
/// The preview is the same value with long strings, lists and objects cut short (still JSON of
/// the same shape, so a `path` argument still names the file); never longer than the value.
pub fn preview(json: &Json) -> (Json, Option<usize>) {
    let full = json.text().len();
    match shortened(full, || json.value()) {
        Some(value) => (Json::new(&value), Some(full)),
        None => (json.clone(), None),
    }
}

/// [`preview`] of a value already parsed (its length is that of its compact JSON text).
pub fn preview_value(value: &Value) -> (Value, Option<usize>) {
    let mut value = value.clone();
    let full = shorten(&mut value);
    (value, full)
}

/// Cuts `value` to its [`preview`] in place, if it is too long to go as it is; its whole
/// length in bytes then.
fn shorten(value: &mut Value) -> Option<usize> {
    let full = json_len(value);
    let cut_to = shortened(full, || std::mem::take(value))?;
    *value = cut_to;
    Some(full)
}

/// The length of `value`'s compact JSON text, counted as it is written out, not kept.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // A Value always serializes (its map keys are strings).
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Cuts a text longer than [`FULL_UP_TO`] bytes to its first [`PREVIEW_BUDGET`] bytes (on a
/// character), in place; its whole length in bytes then.
fn shorten_text(text: &mut String) -> Option<usize> {
    let full = text.len();
    if full <= FULL_UP_TO {
        return None;
    }
    cut_text(text, PREVIEW_BUDGET);
    Some(full)
}

/// Cuts `text` to at most `max` bytes, on a character; the bytes it keeps.
fn cut_text(text: &mut String, max: usize) -> usize {
    let at = crate::text::head(text, max).len();
    text.truncate(at);
    at
}

/// The preview of a value `full` bytes long, if it is too long to go as it is.
fn shortened(full: usize, value: impl FnOnce() -> Value) -> Option<Value> {
    (full > FULL_UP_TO).then(|| {
        let mut value = value();
        let mut budget = PREVIEW_BUDGET;
        cut(&mut value, &mut budget);
        value
    })
}

/// Cuts `value` to what `budget` (characters) allows, spending it in document order: every
/// value costs at least 2, so a preview holds a bounded number of values whatever the shape.
fn cut(value: &mut Value, budget: &mut usize) {
    *budget = budget.saturating_sub(2);
    match value {
        Value::String(text) => {
            let keep = PREVIEW_STRING.min(*budget);
            match text.char_indices().nth(keep) {
                Some((at, _)) => {
                    text.truncate(at);
                    *budget -= keep;
                }
                None => *budget = budget.saturating_sub(text.chars().count()),
            }
        }
        Value::Array(items) => {
            let mut kept = 0;
            for item in items.iter_mut() {
                if *budget == 0 || kept == PREVIEW_ITEMS {
                    break;
                }
                cut(item, budget);
                kept += 1;
            }
            items.truncate(kept);
        }
        Value::Object(map) => {
            let mut kept = 0;
            for (key, item) in map.iter_mut() {
                if *budget == 0 || kept == PREVIEW_ITEMS {
                    break;
                }
                *budget = budget.saturating_sub(key.chars().count() + 1);
                cut(item, budget);
                kept += 1;
            }
            let mut seen = 0;
            map.retain(|_, _| {
                seen += 1;
                seen <= kept
            });
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => *budget = budget.saturating_sub(4),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[test]
    fn a_short_value_goes_as_it_is() {
        let args = Json::new(&json!({"path": "a.md", "content": "x".repeat(FULL_UP_TO - 40)}));
        let (sent, full) = preview(&args);
        assert_eq!((sent.text(), full), (args.text(), None));
    }

    #[test]
    fn a_long_value_goes_as_a_preview_of_the_same_shape() {
        let content = "é".repeat(100_000); // two bytes a character: cut on a character
        let args = Json::new(&json!({"content": content, "path": "plans/big.md"}));
        let (sent, full) = preview(&args);
        assert_eq!(full, Some(args.text().len()));
        let value = sent.value();
        assert_eq!(value["path"], "plans/big.md", "a path still names the file");
        assert_eq!(value["content"], "é".repeat(PREVIEW_STRING));
    }

    #[test]
    fn a_parsed_value_previews_as_its_text_does() {
        for value in [
            json!({"path": "a.md", "content": "x".repeat(FULL_UP_TO - 40)}),
            json!({"content": "é".repeat(100_000), "path": "plans/big.md"}),
        ] {
            let (text, text_full) = preview(&Json::new(&value));
            let (parsed, parsed_full) = preview_value(&value);
            assert_eq!((parsed, parsed_full), (text.value(), text_full));
        }
    }

    #[test]
    fn a_preview_is_bounded_whatever_the_shape() {
        let wide: Vec<_> = (0..50_000).collect();
        let many_keys: serde_json::Map<_, _> =
            (0..5_000).map(|i| (format!("key{i}"), json!(i))).collect();
        let mut deep = json!("x".repeat(20_000));
        for _ in 0..100 {
            deep = json!([deep, "y".repeat(1_000)]);
        }
        let strings: Vec<_> = (0..1_000).map(|i| "z".repeat(100 + i)).collect();
        let mut bushy = json!([]);
        for _ in 0..4 {
            bushy = json!(vec![bushy; 30]);
        }
        for value in [
            json!(wide),
            Value::Object(many_keys),
            deep,
            json!(strings),
            json!({"a": {"b": {"c": strings}}}),
            bushy,
        ] {
            let json = Json::new(&value);
            let (sent, full) = preview(&json);
            assert_eq!(full, Some(json.text().len()));
            assert!(
                sent.text().len() <= 2 * PREVIEW_BUDGET,
                "{} bytes from {}",
                sent.text().len(),
                &json.text()[..80]
            );
        }
    }

    /// The Tauri channel sends a message under this size with the chunk itself; a larger one
    /// makes the window fetch it in a second round trip.
    const CHANNEL_DIRECT: usize = 8192;

    /// The chunk as the window gets it, and the length of the whole message the channel sends
    /// (the app's channel wraps each chunk as `{"event": "chunk", "data": …}`).
    fn sent(chunk: Chunk) -> (Value, usize) {
        let event = json!({"event": "chunk", "data": LiveChunk::from(chunk)});
        let text = serde_json::to_string(&event).unwrap();
        let mut event: Value = serde_json::from_str(&text).unwrap();
        (event["data"].take(), text.len())
    }

    #[test]
    fn a_live_chunk_keeps_its_wire_form_and_cuts_long_values_to_previews() {
        use crate::chunk::*;
        let plan = "Move a table, then check the counts.\n".repeat(6_000);
        let submitted = json!({"toolId": "submit_plan", "content": "Plan approved.", "isError": false,
            "submittedPlan": {"title": "Migrate", "path": "plans/big.md", "plan": plan}});
        let result = Chunk::new(
            "run-1",
            ChunkKind::ToolResult(ToolResultPayload {
                tool_call_id: "call-1".into(),
                tool_name: "submit_plan".into(),
                args: json!({"path": "plans/big.md"}),
                result: submitted.clone(),
            }),
        );
        let (wire, bytes) = sent(result);
        assert!(bytes < CHANNEL_DIRECT, "{bytes} bytes");
        assert_eq!(wire["type"], "tool-result");
        assert_eq!(
            (&wire["runId"], &wire["from"]),
            (&json!("run-1"), &json!("AGENT"))
        );
        assert_eq!(wire["payload"]["toolCallId"], "call-1");
        assert_eq!(wire["payload"]["args"], json!({"path": "plans/big.md"}));
        assert_eq!(wire["payload"]["result"]["content"], "Plan approved.");
        assert_eq!(
            wire["payload"]["result"]["submittedPlan"]["path"],
            "plans/big.md"
        );
        assert_eq!(wire["resultFullBytes"], json_len(&submitted));
        assert!(
            wire.get("argsFullBytes").is_none(),
            "short arguments go whole"
        );

        let content = "é".repeat(100_000);
        let write = Chunk::new(
            "run-1",
            ChunkKind::ToolCall(ToolCall {
                tool_call_id: "call-0".into(),
                tool_name: "write_file".into(),
                args: json!({"path": "plans/big.md", "content": content}),
            }),
        );
        let (wire, bytes) = sent(write.clone());
        assert!(bytes < CHANNEL_DIRECT, "{bytes} bytes");
        assert_eq!(
            wire["payload"]["args"]["path"], "plans/big.md",
            "the line still names the file"
        );
        assert_eq!(
            wire["argsFullBytes"],
            serde_json::to_string(&json!({"path": "plans/big.md", "content": content}))
                .unwrap()
                .len()
        );

        // Every other kind that carries a model's or a tool's values.
        // A step of many calls, each long enough to go whole on its own.
        let output = StepOutput {
            text: "t".repeat(50_000),
            tool_calls: (0..40)
                .map(|i| ToolCall {
                    tool_call_id: format!("call-{i}"),
                    tool_name: "write_file".into(),
                    args: json!({"path": format!("src/{i}.rs"), "content": "x".repeat(FULL_UP_TO - 100)}),
                })
                .collect(),
            usage: None,
        };
        let done = StepResult {
            reason: "stop".into(),
            is_continued: false,
        };
        let big = json!({"content": content});
        for chunk in [
            ChunkKind::ToolError(ToolErrorPayload {
                tool_call_id: "c".into(),
                tool_name: "t".into(),
                args: big.clone(),
                error: "e".repeat(50_000),
            }),
            ChunkKind::ToolCallSuspended(SuspendedPayload {
                tool_call_id: "c".into(),
                tool_name: "t".into(),
                args: big.clone(),
                suspend_payload: submitted.clone(),
                resume_schema: "{}".into(),
            }),
            ChunkKind::ToolCallApproval(ApprovalPayload {
                tool_call_id: "c".into(),
                tool_name: "t".into(),
                args: big.clone(),
                resume_schema: "{}".into(),
            }),
            ChunkKind::ToolOutputDenied(DeniedPayload {
                tool_call_id: "c".into(),
                tool_name: "t".into(),
                args: big.clone(),
                reason: "no".into(),
            }),
            ChunkKind::StepFinish(StepFinishPayload {
                message_id: "m".into(),
                step_result: done.clone(),
                output: output.clone(),
            }),
            ChunkKind::Finish(FinishPayload {
                step_result: done.clone(),
                output: output.clone(),
                usage: None,
            }),
        ] {
            let name = chunk.type_name();
            let (wire, bytes) = sent(Chunk::new("run-1", chunk));
            assert_eq!(wire["type"], name);
            assert!(bytes < CHANNEL_DIRECT, "{name}: {bytes} bytes");
        }
    }

    #[test]
    fn a_live_chunk_with_short_values_is_the_engines_chunk_as_it_is() {
        use crate::chunk::*;
        for kind in [
            ChunkKind::ToolCall(ToolCall {
                tool_call_id: "c".into(),
                tool_name: "read_file".into(),
                args: json!({"path": "a.md"}),
            }),
            ChunkKind::TextDelta(TextDeltaPayload {
                id: "t".into(),
                text: "x".repeat(FULL_UP_TO * 2),
            }),
            ChunkKind::ToolError(ToolErrorPayload {
                tool_call_id: "c".into(),
                tool_name: "t".into(),
                args: json!({}),
                error: "e".repeat(FULL_UP_TO),
            }),
        ] {
            let chunk = Chunk::new("run-1", kind);
            assert_eq!(sent(chunk.clone()).0, serde_json::to_value(&chunk).unwrap());
        }
    }

    #[test]
    fn a_long_text_is_cut_on_a_character_to_its_preview_and_a_short_one_is_left() {
        let mut short = "x".repeat(FULL_UP_TO);
        assert_eq!(shorten_text(&mut short), None);
        assert_eq!(short.len(), FULL_UP_TO);
        for unit in ["e", "é", "漢", "🦀"] {
            let mut text = unit.repeat(FULL_UP_TO + 1); // over 8 KB, up to 32 KB
            let full = text.len();
            assert_eq!(shorten_text(&mut text), Some(full), "{unit}");
            assert!(
                text.len() <= PREVIEW_BUDGET && text.len() > PREVIEW_BUDGET - 4,
                "{unit}: {}",
                text.len()
            );
            assert!(
                text.chars().all(|c| c.to_string() == unit),
                "{unit}: cut on a character"
            );
        }
    }
}
