//! The one place chunk payloads are built, so every path emits the same shapes (the wire
//! contract in docs/contract.md).

use serde_json::Value;

use crate::chunk::*;
use crate::run::Step;
use crate::tool::approval_schema;

pub(super) fn start(run_id: &str, agent_id: &str, message_id: &str) -> Chunk {
    Chunk::new(
        run_id,
        ChunkKind::Start(StartPayload {
            id: agent_id.into(),
            message_id: message_id.into(),
        }),
    )
}

pub(super) fn step_start(run_id: &str, message_id: &str) -> Chunk {
    Chunk::new(
        run_id,
        ChunkKind::StepStart(StepStartPayload {
            message_id: message_id.into(),
        }),
    )
}

pub(super) fn text_start(run_id: &str, id: &str) -> Chunk {
    Chunk::new(
        run_id,
        ChunkKind::TextStart(TextIdPayload { id: id.into() }),
    )
}

pub(super) fn text_delta(run_id: &str, id: &str, text: String) -> Chunk {
    Chunk::new(
        run_id,
        ChunkKind::TextDelta(TextDeltaPayload {
            id: id.into(),
            text,
        }),
    )
}

pub(super) fn text_end(run_id: &str, id: String) -> Chunk {
    Chunk::new(run_id, ChunkKind::TextEnd(TextIdPayload { id }))
}

pub(super) fn tool_call(run_id: &str, call: ToolCall) -> Chunk {
    Chunk::new(run_id, ChunkKind::ToolCall(call))
}

pub(super) fn tool_result(run_id: &str, call: &ToolCall, result: &Value) -> Chunk {
    Chunk::new(
        run_id,
        ChunkKind::ToolResult(ToolResultPayload {
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            args: call.args.clone(),
            result: result.clone(),
        }),
    )
}

pub(super) fn tool_error(run_id: &str, call: &ToolCall, error: &str) -> Chunk {
    Chunk::new(
        run_id,
        ChunkKind::ToolError(ToolErrorPayload {
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            args: call.args.clone(),
            error: error.into(),
        }),
    )
}

pub(super) fn denied(run_id: &str, call: &ToolCall, reason: &str) -> Chunk {
    Chunk::new(
        run_id,
        ChunkKind::ToolOutputDenied(DeniedPayload {
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            args: call.args.clone(),
            reason: reason.into(),
        }),
    )
}

pub(super) fn suspended(
    run_id: &str,
    call: &ToolCall,
    suspend_payload: &Value,
    resume_schema: &Value,
) -> Chunk {
    Chunk::new(
        run_id,
        ChunkKind::ToolCallSuspended(SuspendedPayload {
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            args: call.args.clone(),
            suspend_payload: suspend_payload.clone(),
            resume_schema: resume_schema.to_string(),
        }),
    )
}

pub(super) fn approval(run_id: &str, call: &ToolCall) -> Chunk {
    Chunk::new(
        run_id,
        ChunkKind::ToolCallApproval(ApprovalPayload {
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            args: call.args.clone(),
            resume_schema: approval_schema().to_string(),
        }),
    )
}

/// What a step produced, for `step-finish` and `finish`.
pub(super) fn output(text: String, step: &Step, usage: Option<Usage>) -> StepOutput {
    StepOutput {
        text,
        tool_calls: step.calls.iter().map(|c| c.call.clone()).collect(),
        usage,
    }
}

pub(super) fn step_finish(
    run_id: &str,
    message_id: &str,
    reason: &str,
    is_continued: bool,
    output: StepOutput,
) -> Chunk {
    Chunk::new(
        run_id,
        ChunkKind::StepFinish(StepFinishPayload {
            message_id: message_id.into(),
            step_result: StepResult {
                reason: reason.into(),
                is_continued,
            },
            output,
        }),
    )
}

pub(super) fn finish(run_id: &str, reason: &str, output: StepOutput, usage: Usage) -> Chunk {
    Chunk::new(
        run_id,
        ChunkKind::Finish(FinishPayload {
            step_result: StepResult {
                reason: reason.into(),
                is_continued: false,
            },
            output,
            usage: Some(usage),
        }),
    )
}

pub(super) fn error(run_id: &str, error: ChunkError) -> Chunk {
    Chunk::new(run_id, ChunkKind::Error(ErrorPayload { error }))
}
