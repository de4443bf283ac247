//! Decisions and continuations: a person's verdict becomes the tool's resume data and is
//! recorded through the review core (durable, bound to the revision seen) before the run goes
//! on; a run that stopped (interrupted, failed, waiting for a message) carries on from its
//! last committed state.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::drive::{done, status_of, ToolAction};
use super::{crash_point, ChunkSink, Engine, EngineError, Report, Verdict};
use crate::model::{self, LanguageModel};
use crate::run::*;
use crate::store::{Action, EventKind, NewDecision, SourceKind, StoreError};
use crate::tool::submit_plan::{self, TOOL_ID as SUBMIT_PLAN};
use crate::tool::{approval_schema, schema, ToolOutcome};

impl Engine {
    /// Loads an engine run's state (an outside agent's session has none).
    pub(super) async fn load(&self, run_id: &str) -> Result<RunState, EngineError> {
        let run = self.inner.store.run(run_id).await?;
        if run.source.kind != SourceKind::Engine {
            return Err(EngineError::NotAnEngineRun {
                run_id: run_id.to_owned(),
                agent: run.source.kind.to_string(),
            });
        }
        let stored = self.inner.store.load(run_id).await?;
        let corrupt = |message: String| StoreError::Corrupt {
            run_id: run_id.to_owned(),
            message,
        };
        if stored.schema_version != SCHEMA_VERSION {
            return Err(corrupt(format!(
                "schema version {}, this build reads {SCHEMA_VERSION}",
                stored.schema_version
            ))
            .into());
        }
        let mut state: RunState =
            serde_json::from_str(&stored.state).map_err(|e| corrupt(e.to_string()))?;
        state.messages = stored
            .messages
            .iter()
            .map(|m| serde_json::from_str(m))
            .collect::<Result<_, _>>()
            .map_err(|e| corrupt(e.to_string()))?;
        state.stored = Stored {
            version: stored.version,
            messages: state.messages.len(),
        };
        Ok(state)
    }

    /// A person's decision, filled in as a host: for a plan, the resume data echoes the stored
    /// path, title and plan; for an approval, `{approved, reason?}`. Recorded, then applied.
    pub async fn decide(
        &self,
        run_id: &str,
        verdict: &Verdict,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        if let Some(report) = self.decide_outside(run_id, verdict).await? {
            return Ok(report);
        }
        let state = self.load(run_id).await?;
        let (call_id, data) = self.verdict_data(&state, verdict).await?;
        self.resume_with(
            state,
            Some(&call_id),
            data,
            verdict.revision.as_deref(),
            sink,
        )
        .await
    }

    /// Records a person's decision durably and returns without applying it, for hosts that
    /// acknowledge the decision at once and stream the run's continuation separately
    /// (`continue_run` applies it, from this process or any other).
    pub async fn record_verdict(&self, run_id: &str, verdict: &Verdict) -> Result<(), EngineError> {
        if self.decide_outside(run_id, verdict).await?.is_some() {
            return Ok(());
        }
        let state = self.load(run_id).await?;
        let (call_id, data) = self.verdict_data(&state, verdict).await?;
        let claim = self.claim(run_id).await?;
        let recorded = self
            .record(&state, &call_id, &data, verdict.revision.as_deref())
            .await;
        claim.release().await;
        recorded
    }

    /// A verdict on an outside agent's plan: recorded through the review core, where the
    /// agent's waiting hook picks it up. `None` for an engine run.
    async fn decide_outside(
        &self,
        run_id: &str,
        verdict: &Verdict,
    ) -> Result<Option<Report>, EngineError> {
        let run = self.inner.store.run(run_id).await?;
        if run.source.kind == SourceKind::Engine {
            return Ok(None);
        }
        let review = &self.inner.review;
        let open = review.open_items(run_id).await?;
        let item = match &verdict.tool_call_id {
            Some(id) => open.iter().find(|i| &i.tool_call_id == id),
            None => open.first(),
        };
        let Some(item) = item else {
            let id = verdict.tool_call_id.clone();
            return Err(match id {
                Some(tool_call_id) => StoreError::NotPending {
                    run_id: run_id.to_owned(),
                    tool_call_id,
                }
                .into(),
                None => RunError::NotSuspended {
                    run_id: run_id.to_owned(),
                    status: run.status.to_string(),
                }
                .into(),
            });
        };
        review
            .decide_external(
                run_id,
                &item.tool_call_id,
                verdict.approve,
                verdict.feedback.as_deref(),
                verdict.revision.as_deref(),
            )
            .await?;
        let run = self.inner.store.run(run_id).await?;
        Ok(Some(Report {
            run_id: run_id.to_owned(),
            status: run.status,
            mode: run.mode,
            pending: review.open_items(run_id).await?.into_iter().next(),
            error: None,
            source: run.source,
        }))
    }

    /// Resumes a suspended run with raw resume data, for the named call or the earliest open.
    pub async fn resume(
        &self,
        run_id: &str,
        tool_call_id: Option<&str>,
        data: Value,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        let state = self.load(run_id).await?;
        self.resume_with(state, tool_call_id, data, None, sink)
            .await
    }

    async fn resume_with(
        &self,
        mut state: RunState,
        tool_call_id: Option<&str>,
        data: Value,
        expect_sha: Option<&str>,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        let call_id = self
            .target(&state, tool_call_id)
            .await?
            .call
            .tool_call_id
            .clone();
        let claim = self.claim(&state.run_id).await?;
        let went = async {
            self.record(&state, &call_id, &data, expect_sha).await?;
            crash_point("after-decision");
            let model = model::from_spec(&state.model, &self.inner.cwd)?;
            state.begin_stream();
            self.apply_decisions(&mut state, &*model, sink).await
        }
        .await;
        claim.release().await;
        went
    }

    /// Continues a run that was interrupted (its process died while it ran, or after a decision
    /// was recorded but before it was applied), or retries a failed model call.
    pub async fn continue_run(
        &self,
        run_id: &str,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        let mut state = self.load(run_id).await?;
        let claim = self.claim(run_id).await?;
        let went = async {
            let model = model::from_spec(&state.model, &self.inner.cwd)?;
            let retry = matches!(state.phase, Phase::Failed { .. });
            state.prepare_continue()?;
            if let Phase::Suspended { .. } = state.phase {
                if self.decided_open_calls(&state).await?.is_empty() {
                    state.require_no_open_step()?;
                }
                return self.apply_decisions(&mut state, &*model, sink).await;
            }
            if retry {
                self.save(&mut state, Some((EventKind::Retry, json!({}))))
                    .await?;
            }
            self.drive(&mut state, &*model, None, sink).await
        }
        .await;
        claim.release().await;
        went
    }

    /// The user's next message: the run continues with its whole history.
    pub async fn send(
        &self,
        run_id: &str,
        text: &str,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        if text.trim().is_empty() {
            return Err(EngineError::EmptyMessage);
        }
        let mut state = self.load(run_id).await?;
        let claim = match state.accept_message(text) {
            // Mid-step: either another process drives it (the claim says who) or it was
            // interrupted; the message waits until the run is continued.
            Err(err @ RunError::Interrupted { .. }) => {
                self.claim(run_id).await?.release().await;
                return Err(err.into());
            }
            Err(err) => return Err(err.into()),
            Ok(()) => self.claim(run_id).await?,
        };
        let went = async {
            let model = model::from_spec(&state.model, &self.inner.cwd)?;
            self.save(
                &mut state,
                Some((EventKind::Message, json!({"text": text}))),
            )
            .await?;
            self.drive(&mut state, &*model, None, sink).await
        }
        .await;
        claim.release().await;
        went
    }

    /// The ids of open calls that already have a decision recorded.
    async fn decided_open_calls(&self, state: &RunState) -> Result<HashSet<String>, EngineError> {
        let mut decided = HashSet::new();
        for call in state.open_calls() {
            let id = &call.call.tool_call_id;
            if self
                .inner
                .review
                .decision(&state.run_id, id)
                .await?
                .is_some()
            {
                decided.insert(id.clone());
            }
        }
        Ok(decided)
    }

    /// The open call a decision is for; a call that is not open is explained (decided when,
    /// or never there).
    async fn target<'s>(
        &self,
        state: &'s RunState,
        tool_call_id: Option<&str>,
    ) -> Result<&'s CallState, EngineError> {
        let decided = self.decided_open_calls(state).await?;
        match state.target_call(tool_call_id, &|id| decided.contains(id)) {
            Ok(call) => Ok(call),
            Err(RunError::NoOpenCall {
                run_id,
                tool_call_id,
            }) => Err(
                match self.inner.review.decision(&run_id, &tool_call_id).await? {
                    Some(d) => StoreError::AlreadyDecided {
                        run_id,
                        tool_call_id,
                        action: d.action,
                        decided_at: d.decided_at,
                    }
                    .into(),
                    None => StoreError::NotPending {
                        run_id,
                        tool_call_id,
                    }
                    .into(),
                },
            ),
            Err(err) => Err(err.into()),
        }
    }

    /// The call a verdict answers and the resume data it means.
    async fn verdict_data(
        &self,
        state: &RunState,
        verdict: &Verdict,
    ) -> Result<(String, Value), EngineError> {
        let call = self.target(state, verdict.tool_call_id.as_deref()).await?;
        let feedback = verdict
            .feedback
            .as_deref()
            .map(str::trim)
            .filter(|f| !f.is_empty());
        let data = match &call.status {
            CallStatus::Suspended { suspend_payload } => {
                let mut data =
                    json!({"action": if verdict.approve { "approved" } else { "rejected" }});
                if let Some(feedback) = feedback {
                    data["feedback"] = json!(feedback);
                }
                for key in ["path", "title", "plan"] {
                    if let Some(value) = suspend_payload.get(key) {
                        data[key] = value.clone();
                    }
                }
                data
            }
            _ => {
                if verdict.revision.is_some() {
                    return Err(EngineError::RevisionOnApproval {
                        run_id: state.run_id.clone(),
                        tool_call_id: call.call.tool_call_id.clone(),
                        tool_name: call.call.tool_name.clone(),
                    });
                }
                let mut data = json!({"approved": verdict.approve});
                if let Some(reason) = feedback.filter(|_| !verdict.approve) {
                    data["reason"] = json!(reason);
                }
                data
            }
        };
        Ok((call.call.tool_call_id.clone(), data))
    }

    /// Records a decision for an open call through the review core (refused if it is not open,
    /// already decided, or with `expect_sha`, if the open plan is not that revision).
    async fn record(
        &self,
        state: &RunState,
        call_id: &str,
        data: &Value,
        expect_sha: Option<&str>,
    ) -> Result<(), EngineError> {
        let call = self.target(state, Some(call_id)).await?;
        let (action, feedback) = match &call.status {
            CallStatus::AwaitingApproval => match data.get("approved").and_then(Value::as_bool) {
                Some(true) => (Action::Approved, None),
                Some(false) => (Action::Declined, data.get("reason").and_then(Value::as_str)),
                None => (Action::Invalid, None),
            },
            _ => match data.get("action").and_then(Value::as_str) {
                Some("approved") => (Action::Approved, None),
                Some("rejected") => (
                    Action::Rejected,
                    data.get("feedback").and_then(Value::as_str),
                ),
                _ => (Action::Invalid, None),
            },
        };
        self.inner
            .review
            .record(&NewDecision {
                run_id: &state.run_id,
                tool_call_id: call_id,
                action,
                feedback,
                resume_data: data,
                expect_sha,
                at: self.now(),
            })
            .await?;
        Ok(())
    }

    /// Applies every recorded decision on the suspended step's open calls, then carries on.
    async fn apply_decisions(
        &self,
        state: &mut RunState,
        model: &dyn LanguageModel,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        let Phase::Suspended { step } = &state.phase else {
            return self.report(state).await;
        };
        let step = step.clone();
        let workspace = self.workspace(state)?;
        for entry in step.calls.iter().filter(|c| c.status.is_pending()) {
            let call = &entry.call;
            let Some(decision) = self
                .inner
                .review
                .decision(&state.run_id, &call.tool_call_id)
                .await?
            else {
                continue;
            };
            let tool = self.tool(&step.mode, &call.tool_name)?.ok_or_else(|| {
                EngineError::MissingTool {
                    run_id: state.run_id.clone(),
                    tool: call.tool_name.clone(),
                    mode: step.mode.clone(),
                }
            })?;
            let data = decision.resume_data;
            let approval = entry.status == CallStatus::AwaitingApproval;
            let resume_schema = if approval {
                approval_schema()
            } else {
                tool.resume_schema().unwrap_or(Value::Null)
            };
            let violations = schema::validate(&resume_schema, &data);
            let status = if !violations.is_empty() {
                let result = schema::validation_error(tool.name(), "resume", &data, &violations);
                done(Outcome::Result(result))
            } else if approval && data.get("approved").and_then(Value::as_bool) != Some(true) {
                self.decline(state, call, &data, sink)
            } else {
                let action = if approval {
                    ToolAction::Execute
                } else {
                    ToolAction::Resume(data)
                };
                let outcome = self
                    .run_tool(tool.clone(), workspace.clone(), state, call, action)
                    .await;
                if let ToolOutcome::Value(result) = &outcome {
                    if call.tool_name == SUBMIT_PLAN && submit_plan::is_approval(result) {
                        state.mode = self
                            .inner
                            .controller
                            .after_approval(&state.mode)?
                            .to_owned();
                    }
                }
                status_of(outcome)
            };
            state.resolve_call(&call.tool_call_id, status);
        }
        state.resume_step();
        if let Phase::Suspended { .. } = state.phase {
            // Other calls of the step still wait: announce the next.
            self.announce_suspension(state, sink).await?;
        }
        self.drive(state, model, None, sink).await
    }
}
