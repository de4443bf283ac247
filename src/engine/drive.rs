//! The loop: asks the run's state machine what comes next and does it — a model call, a tool
//! call, a suspension, the end of a step — persisting each move before the chunk that
//! announces it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::{crash_point, emit, turn, ChunkSink, Engine, EngineError, Report};
use crate::chunk::{ChunkError, ToolCall};
use crate::model::{LanguageModel, ModelRequest, ToolSpec};
use crate::review::plan_sha256;
use crate::run::*;
use crate::store::{Commit, EventKind, ItemKind, NewRun, OpenItem, PlanText, Source};
use crate::tool::submit_plan::{self, TOOL_ID as SUBMIT_PLAN};
use crate::tool::{schema, Tool, ToolContext, ToolOutcome, DEFAULT_DECLINE_REASON};
use crate::workspace::Workspace;

const AGENT_INSTRUCTIONS: &str = "You are Plandesk's agent. You work inside one workspace folder; \
     every path you use is relative to its root. Before changing anything, write an implementation \
     plan and have the user approve it.";

/// The longest a tool call may take; past it the model is told it timed out.
const TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// What a tool is asked to do.
pub(super) enum ToolAction {
    Execute,
    Resume(Value),
}

impl Engine {
    /// Drives the run until it suspends, waits, or fails.
    pub(super) async fn drive(
        &self,
        state: &mut RunState,
        model: &dyn LanguageModel,
        mut message_id: Option<String>,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        loop {
            match state.next_step() {
                NextStep::CallModel => {
                    let id = message_id
                        .take()
                        .unwrap_or_else(|| self.inner.ids.next_id("msg"));
                    self.call_model(state, model, id, sink).await?;
                }
                NextStep::RunTool(index) => {
                    let status = self.run_call(state, index).await?;
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
        sink: &mut dyn ChunkSink,
    ) -> Result<(), EngineError> {
        let run_id = state.run_id.clone();
        sink.emit(emit::step_start(&run_id, &message_id));
        let tools = self.inner.controller.tools(&state.mode)?;
        let specs: Vec<ToolSpec> = tools
            .iter()
            .map(|t| ToolSpec {
                name: t.name().into(),
                description: t.description(),
                input_schema: t.input_schema(),
            })
            .collect();
        let system = self.system_prompt(state)?;
        let request = ModelRequest {
            run_id: &run_id,
            system: &system,
            plans_dir: &state.plans_dir,
            messages: &state.messages,
            tools: &specs,
        };
        let folded = turn::fold(
            &run_id,
            model.stream(request),
            state.used_call_ids(),
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
        self.save(state, None).await?;
        crash_point("after-model-call");
        Ok(())
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

    /// Runs the step's call at `index`: checked against its tool's schema, held for approval
    /// where the tool asks for it, else executed off the async runtime.
    async fn run_call(&self, state: &RunState, index: usize) -> Result<CallStatus, EngineError> {
        let Phase::RunTools { step } = &state.phase else {
            return Ok(CallStatus::NotRun);
        };
        let Some(entry) = step.calls.get(index) else {
            return Ok(CallStatus::NotRun);
        };
        let call = &entry.call;
        let tools = self.inner.controller.tools(&step.mode)?;
        let Some(tool) = tools.get(&call.tool_name) else {
            return Ok(done(Outcome::Error(format!(
                "Tool `{}` does not exist in {} mode. Available tools: {}.",
                call.tool_name,
                step.mode,
                tools.names().join(", ")
            ))));
        };
        let violations = schema::validate(&tool.input_schema(), &call.args);
        if !violations.is_empty() {
            let result = schema::validation_error(tool.name(), "input", &call.args, &violations);
            return Ok(done(Outcome::Result(result)));
        }
        let workspace = self.workspace(state)?;
        let ctx = ToolContext {
            workspace: &workspace,
            run_id: &state.run_id,
            tool_call_id: &call.tool_call_id,
            can_suspend: true,
            auto_approve: state.auto_approve,
        };
        if tool.requires_approval(&ctx) {
            return Ok(CallStatus::AwaitingApproval);
        }
        let outcome = self
            .run_tool(tool.clone(), workspace, state, call, ToolAction::Execute)
            .await;
        Ok(status_of(outcome))
    }

    /// Runs a tool on a blocking thread with a deadline, so a slow file system cannot stall the
    /// runtime and a cancelled run stops waiting for it.
    pub(super) async fn run_tool(
        &self,
        tool: Arc<dyn Tool>,
        workspace: Workspace,
        state: &RunState,
        call: &ToolCall,
        action: ToolAction,
    ) -> ToolOutcome {
        let (run_id, call) = (state.run_id.clone(), call.clone());
        let auto_approve = state.auto_approve;
        let name = tool.name();
        let task = tokio::task::spawn_blocking(move || {
            let ctx = ToolContext {
                workspace: &workspace,
                run_id: &run_id,
                tool_call_id: &call.tool_call_id,
                can_suspend: true,
                auto_approve,
            };
            match action {
                ToolAction::Execute => tool.execute(&ctx, &call.args),
                ToolAction::Resume(data) => tool.resume(&ctx, &call.args, &data),
            }
        });
        match tokio::time::timeout(TOOL_TIMEOUT, task).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(join)) => ToolOutcome::Failed(format!("{name} failed: {join}")),
            Err(_) => ToolOutcome::Failed(format!(
                "{name} did not finish within {} s and was abandoned",
                TOOL_TIMEOUT.as_secs()
            )),
        }
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
        self.save(
            state,
            Some((
                EventKind::Suspended,
                json!({"toolCallId": call.tool_call_id}),
            )),
        )
        .await?;
        crash_point("after-suspend");
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

    /// What a declined approval tells the model, and the chunk that reports it.
    pub(super) fn decline(
        &self,
        state: &RunState,
        call: &ToolCall,
        data: &Value,
        sink: &mut dyn ChunkSink,
    ) -> CallStatus {
        let reason = data
            .get("reason")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .unwrap_or(DEFAULT_DECLINE_REASON)
            .to_owned();
        sink.emit(emit::denied(&state.run_id, call, &reason));
        done(Outcome::Denied(reason))
    }

    pub(super) fn workspace(&self, state: &RunState) -> Result<Workspace, EngineError> {
        Ok(Workspace::open(&state.workspace, Some(&state.plans_dir))?)
    }

    /// The tool `name` as mode `mode` offers it.
    pub(super) fn tool(
        &self,
        mode: &str,
        name: &str,
    ) -> Result<Option<Arc<dyn Tool>>, EngineError> {
        Ok(self.inner.controller.tools(mode)?.get(name).cloned())
    }

    /// Records a new run with its first snapshot.
    pub(super) async fn create(
        &self,
        state: &mut RunState,
        run: &NewRun<'_>,
    ) -> Result<(), EngineError> {
        let event = (EventKind::RunStarted, json!({"prompt": run.prompt}));
        let (json, messages, open) = self.commit_parts(state)?;
        let commit = self.commit_of(state, &json, &messages, &open, Some(event));
        self.inner.store.create_run(run, &commit).await?;
        self.saved(state);
        Ok(())
    }

    /// Persists `state` as a new snapshot version (refused if another driver wrote one since),
    /// with its new messages, its open items and `event`, in one transaction.
    pub(super) async fn save(
        &self,
        state: &mut RunState,
        event: Option<(EventKind, Value)>,
    ) -> Result<(), EngineError> {
        let (json, messages, open) = self.commit_parts(state)?;
        let commit = self.commit_of(state, &json, &messages, &open, event);
        self.inner.store.commit(&commit).await?;
        self.saved(state);
        Ok(())
    }

    fn commit_parts(
        &self,
        state: &RunState,
    ) -> Result<(String, Vec<String>, Vec<OpenItem>), EngineError> {
        let invalid = |e: serde_json::Error| crate::store::StoreError::Invalid {
            run_id: state.run_id.clone(),
            message: e.to_string(),
        };
        let json = serde_json::to_string(state).map_err(invalid)?;
        let messages = state.messages[state.stored.messages.min(state.messages.len())..]
            .iter()
            .map(serde_json::to_string)
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;
        Ok((json, messages, open_items(state)))
    }

    fn commit_of<'a>(
        &self,
        state: &'a RunState,
        json: &'a str,
        messages: &'a [String],
        open: &'a [OpenItem],
        event: Option<(EventKind, Value)>,
    ) -> Commit<'a> {
        Commit {
            run_id: &state.run_id,
            expect_version: state.stored.version,
            schema_version: state.schema_version,
            state: json,
            status: state.phase.status(),
            mode: &state.mode,
            message_count: state.messages.len() as i64,
            new_messages: messages,
            open,
            event,
            at: self.now(),
        }
    }

    fn saved(&self, state: &mut RunState) {
        state.stored = Stored {
            version: state.stored.version + 1,
            messages: state.messages.len(),
        };
    }

    pub(super) async fn report(&self, state: &RunState) -> Result<Report, EngineError> {
        let pending = match &state.phase {
            Phase::Suspended { .. } => self
                .inner
                .review
                .open_items(&state.run_id)
                .await?
                .into_iter()
                .next(),
            _ => None,
        };
        let error = match &state.phase {
            Phase::Failed { error } => Some(error.clone()),
            _ => None,
        };
        Ok(Report {
            run_id: state.run_id.clone(),
            status: state.phase.status(),
            mode: state.mode.clone(),
            pending,
            error,
            source: Source::engine(),
        })
    }
}

/// What waits for a person after this state: one place decides it. A suspended `submit_plan`
/// is a plan (with the revision a person will see); another suspension is a plain suspension;
/// a call held for approval is an approval.
fn open_items(state: &RunState) -> Vec<OpenItem> {
    state
        .open_calls()
        .into_iter()
        .map(|c| {
            let (kind, plan) = match &c.status {
                CallStatus::Suspended { suspend_payload } if c.call.tool_name == SUBMIT_PLAN => {
                    (ItemKind::Plan, Some(plan_text(suspend_payload)))
                }
                CallStatus::Suspended { .. } => (ItemKind::Suspended, None),
                _ => (ItemKind::Approval, None),
            };
            OpenItem {
                tool_call_id: c.call.tool_call_id.clone(),
                kind,
                tool_name: c.call.tool_name.clone(),
                args: c.call.args.clone(),
                plan,
            }
        })
        .collect()
}

fn plan_text(payload: &Value) -> PlanText {
    let field = |key: &str| {
        payload
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (path, title, body) = (field("path"), field("title"), field("plan"));
    PlanText {
        sha256: plan_sha256(&title, &body),
        path,
        title,
        body,
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
