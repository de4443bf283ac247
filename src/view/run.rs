//! A run as a window shows it: its transcript (long values as previews), what waits in it, a
//! tool call read whole when its line is opened, and how its stream ended (with the review of
//! the plan it stopped on, handed over so the window draws it without asking again).

use serde::Serialize;

use super::{preview, InboxItem, PagedRevision, ViewError, FIRST_SCREEN_BYTES};
use crate::chunk::ChunkError;
use crate::engine::{Engine, EngineError, Report, RunView};
use crate::message::{Json, Message};
use crate::run::{RunStatus, WaitReason};

/// One line of a run's transcript as stored (the live view builds the same from chunks).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TranscriptItem {
    User {
        text: String,
    },
    Assistant {
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCall {
        tool_call_id: String,
        tool_name: String,
        /// The stored JSON as it is, or its [`preview`] when it is long.
        args: Json,
        /// The whole arguments' length in bytes, when `args` is a preview ([`tool_call`] has
        /// them).
        full_bytes: Option<usize>,
    },
    #[serde(rename_all = "camelCase")]
    ToolResult {
        tool_call_id: String,
        tool_name: String,
        /// As `args` above.
        result: Json,
        full_bytes: Option<usize>,
    },
}

/// A run's conversation as its transcript shows it: no system prompt, no empty assistant
/// text, and long tool arguments and results as previews.
pub fn transcript(messages: &[Message]) -> Vec<TranscriptItem> {
    let mut items = Vec::new();
    for message in messages {
        match message {
            Message::System { .. } => {}
            Message::User { content } => items.push(TranscriptItem::User {
                text: content.clone(),
            }),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if !content.is_empty() {
                    items.push(TranscriptItem::Assistant {
                        text: content.clone(),
                    });
                }
                items.extend(tool_calls.iter().map(|c| {
                    let (args, full_bytes) = preview(&c.args);
                    TranscriptItem::ToolCall {
                        tool_call_id: c.tool_call_id.clone(),
                        tool_name: c.tool_name.clone(),
                        args,
                        full_bytes,
                    }
                }));
            }
            Message::Tool {
                tool_call_id,
                tool_name,
                result,
            } => {
                let (result, full_bytes) = preview(result);
                items.push(TranscriptItem::ToolResult {
                    tool_call_id: tool_call_id.clone(),
                    tool_name: tool_name.clone(),
                    result,
                    full_bytes,
                });
            }
        }
    }
    items
}

/// A tool call's arguments and result in full, for a transcript line whose preview was
/// opened. `result` is none while the call waits.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCallFull {
    pub args: Json,
    pub result: Option<Json>,
}

impl ToolCallFull {
    /// The call `tool_call_id` in `messages`, if the model made it.
    pub fn find(messages: &[Message], tool_call_id: &str) -> Option<Self> {
        let mut args = None;
        let mut result = None;
        for message in messages {
            match message {
                Message::Assistant { tool_calls, .. } => {
                    if let Some(call) = tool_calls.iter().find(|c| c.tool_call_id == tool_call_id) {
                        args = Some(call.args.clone());
                    }
                }
                Message::Tool {
                    tool_call_id: id,
                    result: output,
                    ..
                } if *id == tool_call_id => result = Some(output.clone()),
                _ => {}
            }
        }
        Some(Self {
            args: args?,
            result,
        })
    }
}

/// A tool call of `run_id`'s transcript in full: its arguments and its result ([`run_detail`]
/// sends long ones as previews).
pub async fn tool_call(
    engine: &Engine,
    run_id: &str,
    tool_call_id: &str,
) -> Result<ToolCallFull, ViewError> {
    let detail = engine.run_detail(run_id).await?;
    ToolCallFull::find(&detail.messages, tool_call_id).ok_or_else(|| ViewError::UnknownToolCall {
        run_id: run_id.to_owned(),
        tool_call_id: tool_call_id.to_owned(),
    })
}

/// A run as its view shows it: the transcript, and what waits in it with arguments whole (a
/// review is drawn from them).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunDetailView {
    pub run: RunView,
    pub transcript: Vec<TranscriptItem>,
    pub pending: Vec<InboxItem>,
    /// The error that stopped the run, when it failed.
    pub error: Option<ChunkError>,
    /// Why it waits, when it waits (`finished`, `feedback`, `max-steps`).
    pub waiting: Option<WaitReason>,
    /// Nobody drives it, yet it can go on (interrupted, or decided but not applied): the UI
    /// offers Continue.
    pub interrupted: bool,
}

impl From<crate::engine::RunDetail> for RunDetailView {
    fn from(detail: crate::engine::RunDetail) -> Self {
        Self {
            transcript: transcript(&detail.messages),
            pending: detail.open.iter().map(InboxItem::from).collect(),
            run: detail.run,
            error: detail.error,
            waiting: detail.waiting,
            interrupted: detail.interrupted,
        }
    }
}

/// The run `run_id` as its view shows it.
pub async fn run_detail(engine: &Engine, run_id: &str) -> Result<RunDetailView, EngineError> {
    Ok(engine.run_detail(run_id).await?.into())
}

/// Where a run stands when its stream ends.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEnd {
    pub run_id: String,
    pub status: RunStatus,
    pub mode: String,
    pub error: Option<ChunkError>,
    /// The plan revision the run stopped on, if it did.
    pub revision_id: Option<i64>,
    /// The run as its view shows it next, when it stopped on a plan (and the window did not
    /// show another run): the window draws the review from this, without asking for the run
    /// and the revision after the stream ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<Box<ReviewHandOff>>,
}

/// What the review of a run that just stopped on a plan is drawn from: the run, and the plan's
/// revision with the pages its first screen fills ([`FIRST_SCREEN_BYTES`]).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewHandOff {
    pub detail: RunDetailView,
    pub revision: PagedRevision,
}

impl From<Report> for RunEnd {
    fn from(report: Report) -> Self {
        Self {
            run_id: report.run_id,
            status: report.status,
            mode: report.mode,
            error: report.error,
            revision_id: report
                .pending
                .and_then(|item| item.revision.map(|revision| revision.id)),
            review: None,
        }
    }
}

/// Whether the end of `run_id`'s stream hands its review over, with `viewing` on screen: unless
/// the window shows another run (the person moved on; it would not draw this one's review). A
/// window that has just switched to the run may not have said so yet: it gets the hand-off.
pub fn hands_review_over(viewing: Option<&str>, run_id: &str) -> bool {
    viewing.is_none_or(|on_screen| on_screen == run_id)
}

/// How a run's stream ended, as its channel says it. A run that stopped on a plan hands its
/// review over with it (its run and the plan's first screen) when `hand_over`: the window,
/// which draws it at once, would otherwise ask for both, one more round trip between the
/// suspension and the plan on screen. If they cannot be read, the window asks itself, and
/// shows why. (Not when the window shows another run: it would read them for nothing.)
pub async fn run_end(engine: &Engine, report: Report, hand_over: bool) -> RunEnd {
    let mut end = RunEnd::from(report);
    if let Some(id) = end.revision_id.filter(|_| hand_over) {
        if let (Ok(detail), Ok(revision)) = tokio::join!(
            run_detail(engine, &end.run_id),
            super::revision(engine.review(), id, FIRST_SCREEN_BYTES),
        ) {
            end.review = Some(Box::new(ReviewHandOff { detail, revision }));
        }
    }
    end
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;
    use crate::message::CalledTool;

    fn call(id: &str, args: serde_json::Value) -> CalledTool {
        CalledTool {
            tool_call_id: id.into(),
            tool_name: "write_file".into(),
            args: Json::new(&args),
        }
    }

    /// A conversation: the system prompt, a request, a long write and a short read (the read
    /// answered, the write still waiting), then a tool call with no text.
    fn conversation(content: &str) -> Vec<Message> {
        vec![
            Message::System {
                content: "You plan.".into(),
            },
            Message::user("Add a cache"),
            Message::Assistant {
                content: "Writing the plan.".into(),
                tool_calls: vec![
                    call(
                        "call-1",
                        json!({"path": "plans/big.md", "content": content}),
                    ),
                    call("call-2", json!({"path": "src/lib.rs"})),
                ],
            },
            Message::tool("call-2", "read_file", &json!({"content": content})),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![call("call-3", json!({"path": "a.md"}))],
            },
        ]
    }

    #[test]
    fn a_transcript_shows_what_a_person_reads_with_long_values_as_previews() {
        let content = "x".repeat(50_000);
        let items = transcript(&conversation(&content));
        let kinds: Vec<String> = items
            .iter()
            .map(|item| serde_json::to_value(item).unwrap()["kind"].to_string())
            .collect();
        assert_eq!(
            kinds,
            [
                "\"user\"",
                "\"assistant\"",
                "\"tool-call\"",
                "\"tool-call\"",
                "\"tool-result\"",
                "\"tool-call\""
            ],
            "no system prompt and no empty assistant text: the window shows neither"
        );
        let long = json!({"path": "plans/big.md", "content": content});
        let TranscriptItem::ToolCall {
            args, full_bytes, ..
        } = &items[2]
        else {
            panic!("the write: {:?}", items[2]);
        };
        assert_eq!(
            (args, *full_bytes),
            (
                &preview(&Json::new(&long)).0,
                Some(Json::new(&long).text().len())
            ),
            "a long argument goes as its preview, with its whole length"
        );
        assert_eq!(
            serde_json::to_value(&items[3]).unwrap(),
            json!({"kind": "tool-call", "toolCallId": "call-2", "toolName": "write_file",
                   "args": {"path": "src/lib.rs"}, "fullBytes": null}),
            "a short one goes whole, in the window's camelCase"
        );
        let TranscriptItem::ToolResult { full_bytes, .. } = &items[4] else {
            panic!("the read's result: {:?}", items[4]);
        };
        assert!(full_bytes.is_some(), "a long result is a preview too");
    }

    #[test]
    fn a_tool_call_is_found_whole_with_its_result_if_it_has_one() {
        let content = "x".repeat(50_000);
        let messages = conversation(&content);
        let read = ToolCallFull::find(&messages, "call-2").unwrap();
        assert_eq!(
            read.result.unwrap().value(),
            json!({"content": content}),
            "the result whole, not its preview"
        );
        let write = ToolCallFull::find(&messages, "call-1").unwrap();
        assert_eq!(write.args.value()["content"], content);
        assert!(write.result.is_none(), "a call still waiting has no result");
        assert!(
            ToolCallFull::find(&messages, "call-9").is_none(),
            "a call the model never made is not found"
        );
    }

    #[test]
    fn a_review_is_handed_over_unless_another_run_is_on_screen() {
        assert!(hands_review_over(None, "run-1"), "nothing said yet");
        assert!(hands_review_over(Some("run-1"), "run-1"), "this run");
        assert!(
            !hands_review_over(Some("run-2"), "run-1"),
            "the person moved on: the window would not draw it"
        );
    }
}
