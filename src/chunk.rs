//! The stream wire format: every chunk a run emits, serialised exactly as Mastra's agent stream
//! (`type`, `runId`, `from`, camelCase `payload`), so a host written for Mastra reads ours unchanged.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who emitted a chunk. Plandesk only runs agents, so this is always `AGENT` on the wire.
pub const FROM_AGENT: &str = "AGENT";

/// One event of a run's stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Chunk {
    #[serde(flatten)]
    pub kind: ChunkKind,
    pub run_id: String,
    pub from: String,
}

impl Chunk {
    pub fn new(run_id: &str, kind: ChunkKind) -> Self {
        Self {
            kind,
            run_id: run_id.to_owned(),
            from: FROM_AGENT.to_owned(),
        }
    }

    /// The wire `type` of this chunk, e.g. `tool-call-suspended`.
    pub fn type_name(&self) -> &'static str {
        self.kind.type_name()
    }
}

/// Why a step or a run finished, as the model (or the loop) reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepResult {
    pub reason: String,
    pub is_continued: bool,
}

/// Token counts, when the model reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// A tool call as it appears inside chunks and step outputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub tool_call_id: String,
    pub tool_name: String,
    pub args: Value,
}

/// What a step (or the whole stream) produced.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepOutput {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// An error surfaced to the host: a stable code and a message naming what failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkError {
    pub code: String,
    pub message: String,
}

/// The chunk types and their payloads, in the order docs/contract.md lists them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "payload", rename_all = "kebab-case")]
pub enum ChunkKind {
    Start(StartPayload),
    StepStart(StepStartPayload),
    StepFinish(StepFinishPayload),
    TextStart(TextIdPayload),
    TextDelta(TextDeltaPayload),
    TextEnd(TextIdPayload),
    ToolCall(ToolCall),
    ToolResult(ToolResultPayload),
    ToolError(ToolErrorPayload),
    ToolCallSuspended(SuspendedPayload),
    ToolCallApproval(ApprovalPayload),
    ToolOutputDenied(DeniedPayload),
    Finish(FinishPayload),
    Error(ErrorPayload),
}

impl ChunkKind {
    pub fn type_name(&self) -> &'static str {
        match self {
            ChunkKind::Start(_) => "start",
            ChunkKind::StepStart(_) => "step-start",
            ChunkKind::StepFinish(_) => "step-finish",
            ChunkKind::TextStart(_) => "text-start",
            ChunkKind::TextDelta(_) => "text-delta",
            ChunkKind::TextEnd(_) => "text-end",
            ChunkKind::ToolCall(_) => "tool-call",
            ChunkKind::ToolResult(_) => "tool-result",
            ChunkKind::ToolError(_) => "tool-error",
            ChunkKind::ToolCallSuspended(_) => "tool-call-suspended",
            ChunkKind::ToolCallApproval(_) => "tool-call-approval",
            ChunkKind::ToolOutputDenied(_) => "tool-output-denied",
            ChunkKind::Finish(_) => "finish",
            ChunkKind::Error(_) => "error",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartPayload {
    pub id: String,
    pub message_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepStartPayload {
    pub message_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepFinishPayload {
    pub message_id: String,
    pub step_result: StepResult,
    pub output: StepOutput,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextIdPayload {
    pub id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextDeltaPayload {
    pub id: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultPayload {
    pub tool_call_id: String,
    pub tool_name: String,
    pub args: Value,
    pub result: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolErrorPayload {
    pub tool_call_id: String,
    pub tool_name: String,
    pub args: Value,
    pub error: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SuspendedPayload {
    pub tool_call_id: String,
    pub tool_name: String,
    pub args: Value,
    pub suspend_payload: Value,
    /// A JSON-Schema document, serialised to a string as Mastra does.
    pub resume_schema: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalPayload {
    pub tool_call_id: String,
    pub tool_name: String,
    pub args: Value,
    pub resume_schema: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeniedPayload {
    pub tool_call_id: String,
    pub tool_name: String,
    pub args: Value,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FinishPayload {
    pub step_result: StepResult,
    pub output: StepOutput,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorPayload {
    pub error: ChunkError,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chunk_serialises_with_mastra_field_names() {
        let chunk = Chunk::new(
            "run-1",
            ChunkKind::ToolCallSuspended(SuspendedPayload {
                tool_call_id: "call-1".into(),
                tool_name: "submit_plan".into(),
                args: json!({"path": "p.md"}),
                suspend_payload: json!({"toolId": "submit_plan"}),
                resume_schema: "{}".into(),
            }),
        );
        let value = serde_json::to_value(&chunk).unwrap();
        assert_eq!(
            value,
            json!({
                "type": "tool-call-suspended",
                "runId": "run-1",
                "from": "AGENT",
                "payload": {
                    "toolCallId": "call-1",
                    "toolName": "submit_plan",
                    "args": {"path": "p.md"},
                    "suspendPayload": {"toolId": "submit_plan"},
                    "resumeSchema": "{}"
                }
            })
        );
        let back: Chunk = serde_json::from_value(value).unwrap();
        assert_eq!(back, chunk, "a chunk must round-trip through its wire form");
    }

    #[test]
    fn step_finish_uses_camel_case_step_result() {
        let chunk = Chunk::new(
            "r",
            ChunkKind::StepFinish(StepFinishPayload {
                message_id: "m".into(),
                step_result: StepResult {
                    reason: "tool-calls".into(),
                    is_continued: true,
                },
                output: StepOutput::default(),
            }),
        );
        let value = serde_json::to_value(&chunk).unwrap();
        assert_eq!(
            value["payload"]["stepResult"],
            json!({"reason": "tool-calls", "isContinued": true})
        );
        assert_eq!(value["payload"]["messageId"], "m");
        assert_eq!(
            value["payload"]["output"],
            json!({"text": "", "toolCalls": []})
        );
    }
}
