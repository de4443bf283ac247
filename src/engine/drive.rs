//! The loop: asks the run's state machine what comes next and does it — a model call, a tool
//! call, a suspension, the end of a step — persisting each move before the chunk that
//! announces it.

use serde_json::{json, Value};

use super::{crash_point, emit, turn, ChunkSink, Engine, EngineError, Report};
use crate::chunk::ChunkError;
use crate::model::{LanguageModel, ModelRequest};
use crate::review::plan_markdown;
use crate::run::*;
use crate::tool::submit_plan::{self, TOOL_ID as SUBMIT_PLAN};
use crate::tool::ToolOutcome;
use crate::vocabulary::EventKind;

const AGENT_INSTRUCTIONS: &str = "You are Plandesk's agent. You work inside one workspace folder; \
     every path you use is relative to its root. Before changing anything, write an implementation \
     plan and have the user approve it.";

impl Engine {
    /// Drives the run until it suspends, waits, or fails.
    pub(super) async fn drive(
        &self,
        state: &mut RunState,
        model: &dyn LanguageModel,
        mut message_id: Option<String>,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        let mut used = CallIds::default();
        // Opened (its root made canonical) at the first call that needs it, once per stream.
        let mut workspace = None;
        loop {
            match state.next_step() {
                NextStep::CallModel => {
                    state.stored.derived = false;
                    let id = message_id
                        .take()
                        .unwrap_or_else(|| self.inner.ids.next_id("msg"));
                    used.catch_up(&state.messages);
                    self.call_model(state, model, id, &used, sink).await?;
                }
                NextStep::RunTool(index) => {
                    state.stored.derived = false;
                    let status = self.run_call(state, index, &mut workspace).await?;
                    state.settle_call(index, status);
                }
                NextStep::Suspend => {
                    state.suspend();
                    self.announce_suspension(state, sink).await?;
                }
                NextStep::FinishStep => self.finish_step(state, sink).await?,
                NextStep::Stop => return self.report(state).await,
            }
        }
    }

    async fn call_model(
        &self,
        state: &mut RunState,
        model: &dyn LanguageModel,
        message_id: String,
        used: &CallIds,
        sink: &mut dyn ChunkSink,
    ) -> Result<(), EngineError> {
        let run_id = state.run_id.clone();
        sink.emit(emit::step_start(&run_id, &message_id));
        let specs = self.inner.controller.specs(&state.mode)?;
        let system = self.system_prompt(state)?;
        let request = ModelRequest {
            run_id: &run_id,
            system: &system,
            plans_dir: &state.plans_dir,
            messages: &state.messages,
            turns: used.turns(),
            tools: specs,
        };
        let folded = turn::fold(
            &run_id,
            model.stream(request),
            &|id| used.contains(id),
            &*self.inner.ids,
            sink,
        )
        .await;
        if let Some(err) = folded.failure {
            let error = ChunkError {
                code: err.code().into(),
                message: err.to_string(),
            };
            // What streamed before the failure is kept in the log, not lost; the run itself
            // resumes from its last good state (the model is called again).
            let mut event = json!({"code": error.code, "error": error.message});
            if !folded.turn.text.is_empty() {
                event["partialText"] = json!(folded.turn.text);
            }
            if !folded.turn.tool_calls.is_empty() {
                event["partialToolCalls"] = json!(folded.turn.tool_calls);
            }
            state.fail(error.clone());
            self.save(state, Some((EventKind::Failed, event))).await?;
            sink.emit(emit::error(&run_id, error));
            return Ok(());
        }
        let reason = folded.turn.reason.clone();
        let usage = folded.turn.usage;
        let text = folded.turn.text.clone();
        state.record_turn(message_id.clone(), folded.turn);
        if let Phase::Waiting { .. } = state.phase {
            self.save(
                state,
                Some((EventKind::Finished, json!({"reason": reason}))),
            )
            .await?;
            self.record_finished(&run_id).await;
            let output = crate::chunk::StepOutput {
                text,
                tool_calls: Vec::new(),
                usage,
            };
            sink.emit(emit::step_finish(
                &run_id,
                &message_id,
                &reason,
                false,
                output.clone(),
            ));
            sink.emit(emit::finish(&run_id, &reason, output, state.usage));
            return Ok(());
        }
        // A step whose calls only read is saved once, at its end. Lost to a crash while its
        // reads run, the model's turn is lost as it would be to a crash a moment earlier, while
        // it streamed: the run goes on from its last snapshot and asks the model again. The
        // disk is then waited for once a step, not twice.
        if self.only_reads(state)? {
            return Ok(());
        }
        self.save(state, None).await?;
        crash_point("after-model-call");
        Ok(())
    }

    /// Whether every call the model's turn asked for is to a tool that only reads.
    fn only_reads(&self, state: &RunState) -> Result<bool, EngineError> {
        let Phase::RunTools { step } = &state.phase else {
            return Ok(false);
        };
        let tools = self.inner.controller.tools(&step.mode)?;
        Ok(step.calls.iter().all(|c| {
            tools
                .get(&c.call.tool_name)
                .is_some_and(|tool| tool.reads_only())
        }))
    }

    fn system_prompt(&self, state: &RunState) -> Result<String, EngineError> {
        let mode = self.inner.controller.mode(&state.mode)?;
        let mut prompt = format!(
            "{AGENT_INSTRUCTIONS}\nPlans go in the `{}/` folder of the workspace.",
            state.plans_dir
        );
        if let Some(instructions) = &mode.instructions {
            prompt.push_str("\n\n");
            prompt.push_str(instructions);
        }
        Ok(prompt)
    }

    /// Persists the suspension (its plan revisions and open items included), then announces
    /// the earliest open call.
    pub(super) async fn announce_suspension(
        &self,
        state: &mut RunState,
        sink: &mut dyn ChunkSink,
    ) -> Result<(), EngineError> {
        let Some(first) = state.open_calls().first().map(|c| (*c).clone()) else {
            return Ok(());
        };
        let call = &first.call;
        // In a process that will show the plan, it is rendered before it becomes pending: once
        // it is, a reviewer (here or elsewhere) may decide it, and this driver should let go of
        // the run at once, not after a rendering.
        if let CallStatus::Suspended { suspend_payload } = &first.status {
            if call.tool_name == SUBMIT_PLAN
                && self
                    .inner
                    .prerender
                    .load(std::sync::atomic::Ordering::Relaxed)
            {
                let plan = super::persist::plan_text(suspend_payload);
                self.inner
                    .review
                    .prerender(plan.sha256, plan_markdown(&plan.title, &plan.body))
                    .await;
            }
        }
        self.save(
            state,
            Some((
                EventKind::Suspended,
                json!({"toolCallId": call.tool_call_id}),
            )),
        )
        .await?;
        crash_point("after-suspend");
        if call.tool_name == SUBMIT_PLAN {
            self.record_baseline(state, &call.tool_call_id).await;
        }
        let chunk = match &first.status {
            CallStatus::Suspended { suspend_payload } => {
                let mode = match &state.phase {
                    Phase::Suspended { step } => step.mode.as_str(),
                    _ => state.mode.as_str(),
                };
                let resume_schema = self
                    .tool(mode, &call.tool_name)?
                    .and_then(|t| t.resume_schema())
                    .unwrap_or(Value::Null);
                emit::suspended(&state.run_id, call, suspend_payload, &resume_schema)
            }
            _ => emit::approval(&state.run_id, call),
        };
        sink.emit(chunk);
        Ok(())
    }

    /// Every call of the step is done: report the results, give them to the model, and decide
    /// whether the loop goes on.
    async fn finish_step(
        &self,
        state: &mut RunState,
        sink: &mut dyn ChunkSink,
    ) -> Result<(), EngineError> {
        let wait_for_user = match &state.phase {
            Phase::RunTools { step } => step.calls.iter().any(|c| {
                c.call.tool_name == SUBMIT_PLAN
                    && matches!(&c.status, CallStatus::Done { outcome: Outcome::Result(r) } if submit_plan::waits_for_user(r))
            }),
            _ => false,
        };
        let Some(end) = state.finish_step(wait_for_user) else {
            return Ok(());
        };
        let event = match end.wait {
            None => None,
            Some(WaitReason::Feedback) => Some((EventKind::Waiting, json!({}))),
            Some(_) => Some((EventKind::MaxSteps, json!({}))),
        };
        self.save(state, event).await?;
        let run_id = state.run_id.clone();
        for entry in &end.step.calls {
            let CallStatus::Done { outcome } = &entry.status else {
                continue;
            };
            match outcome {
                Outcome::Result(result) => {
                    sink.emit(emit::tool_result(&run_id, &entry.call, result))
                }
                Outcome::Error(error) => sink.emit(emit::tool_error(&run_id, &entry.call, error)),
                Outcome::Denied(_) => {}
            }
        }
        let output = emit::output(end.text, &end.step, None);
        sink.emit(emit::step_finish(
            &run_id,
            &end.step.message_id,
            "tool-calls",
            end.wait.is_none(),
            output.clone(),
        ));
        if end.wait.is_some() {
            sink.emit(emit::finish(&run_id, "tool-calls", output, state.usage));
        }
        Ok(())
    }
}

pub(super) fn done(outcome: Outcome) -> CallStatus {
    CallStatus::Done { outcome }
}

pub(super) fn status_of(outcome: ToolOutcome) -> CallStatus {
    match outcome {
        ToolOutcome::Value(result) => done(Outcome::Result(result)),
        ToolOutcome::Failed(error) => done(Outcome::Error(error)),
        ToolOutcome::Suspend { payload } => CallStatus::Suspended {
            suspend_payload: payload,
        },
    }
}
