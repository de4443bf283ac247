//! From a person's verdict to a recorded decision: which open call it answers, the resume data
//! it means, and the record through the review core (durable, bound to the revision seen). An
//! outside agent's plan is decided the same way and picked up by its waiting hook.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::{Engine, EngineError, Report, Verdict};
use crate::review::ReviewItem;
use crate::run::*;
use crate::store::{NewDecision, StoreError};
use crate::tool::submit_plan;
use crate::tool::{approval_schema, schema, ToolOutcome, DEFAULT_DECLINE_REASON};
use crate::vocabulary::{Action, SourceKind};

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
        let Some(parked) = self.unpark(run_id).await? else {
            return self.load_stored(run_id).await;
        };
        // Every test checks that a parked state is the state as stored (release builds trust
        // it: what is parked was saved as it is, and no version was saved since).
        if cfg!(debug_assertions) {
            if let Ok(stored) = self.load_stored(run_id).await {
                if stored.stored.version == parked.stored.version {
                    assert_eq!(
                        parked, stored,
                        "the parked state of {run_id} is not as stored"
                    );
                }
            }
        }
        Ok(parked)
    }

    /// The run's newest snapshot and conversation, read and parsed.
    async fn load_stored(&self, run_id: &str) -> Result<RunState, EngineError> {
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
            derived: false,
        };
        Ok(state)
    }

    /// A verdict on an outside agent's plan: recorded through the review core, where the
    /// agent's waiting hook picks it up. `None` for an engine run.
    pub(super) async fn decide_outside(
        &self,
        run_id: &str,
        verdict: &Verdict,
    ) -> Result<Option<Report>, EngineError> {
        let run = self.inner.store.run(run_id).await?;
        if verdict.accept_edits && !(verdict.approve && run.source.kind == SourceKind::ClaudeCode) {
            let what = match run.source.kind {
                _ if !verdict.approve => "is not being approved".to_owned(),
                SourceKind::Engine => "is Plandesk's own".to_owned(),
                kind => format!("is a {kind} session"),
            };
            return Err(EngineError::AcceptEditsNotHere {
                run_id: run_id.to_owned(),
                what,
            });
        }
        if run.source.kind == SourceKind::Engine {
            return Ok(None);
        }
        let review = &self.inner.review;
        let open = review.open_items(run_id).await?;
        // Without a call named, the one open item, or the one whose plan is the revision the
        // person names; with several and nothing to tell them apart, none: which plan a person
        // approves is never guessed.
        let given = verdict.revision.as_deref().map(str::to_ascii_lowercase);
        let named = |i: &&ReviewItem| {
            let sha = i.revision.as_ref().map(|r| r.sha256.as_str());
            given
                .as_deref()
                .is_some_and(|given| !given.is_empty() && sha.is_some_and(|s| s.starts_with(given)))
        };
        let item = match &verdict.tool_call_id {
            Some(id) => open.iter().find(|i| &i.tool_call_id == id),
            None if open.len() > 1 => match open.iter().filter(named).collect::<Vec<_>>()[..] {
                [item] => Some(item),
                _ => {
                    let calls: Vec<&str> = open.iter().map(|i| i.tool_call_id.as_str()).collect();
                    return Err(RunError::SeveralOpen {
                        run_id: run_id.to_owned(),
                        calls: calls.join(", "),
                    }
                    .into());
                }
            },
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
                if verdict.approve {
                    verdict.note.as_deref()
                } else {
                    verdict.feedback.as_deref()
                },
                verdict.revision.as_deref(),
                verdict.accept_edits,
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

    /// The ids of open calls that already have a decision recorded.
    pub(super) async fn decided_open_calls(
        &self,
        state: &RunState,
    ) -> Result<HashSet<String>, EngineError> {
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
    pub(super) async fn target<'s>(
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
                        decided_by: d.decided_by,
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
    pub(super) async fn verdict_data(
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
                let review = &self.inner.review;
                let revision = review
                    .open_revision(&state.run_id, &call.call.tool_call_id)
                    .await?;
                let mut data =
                    json!({"action": if verdict.approve { "approved" } else { "rejected" }});
                for key in ["path", "title", "plan"] {
                    if let Some(value) = suspend_payload.get(key) {
                        data[key] = value.clone();
                    }
                }
                if verdict.approve {
                    let note = verdict
                        .note
                        .as_deref()
                        .map(str::trim)
                        .filter(|n| !n.is_empty());
                    if let Some(note) = note {
                        data["notes"] = json!(note);
                    }
                    // A reviewer's edit is what is approved: the agent gets it, and the diff.
                    if let Some(revision) = &revision {
                        if let Some(edit) = review.edit_summary(revision).await? {
                            data["title"] = json!(revision.title);
                            data["plan"] = json!(revision.body);
                            data["edit"] = json!({"by": edit.by, "diff": edit.diff});
                        }
                    }
                } else {
                    // Open line comments go with the feedback, quoting their lines.
                    let compiled = match &revision {
                        Some(revision) => review.compiled_feedback(revision, feedback).await?,
                        None => feedback.map(str::to_owned),
                    };
                    if let Some(feedback) = compiled {
                        data["feedback"] = json!(feedback);
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
    pub(super) async fn record(
        &self,
        state: &RunState,
        call_id: &str,
        data: &Value,
        expect_sha: Option<&str>,
    ) -> Result<(), EngineError> {
        let call = self.target(state, Some(call_id)).await?;
        // Data that does not fit is answered with the validation error `apply_decisions` gives.
        let invalid = match &state.phase {
            Phase::Suspended { step } => self.invalid_answer(&step.mode, call, data)?,
            _ => None,
        };
        let (action, feedback) = match &call.status {
            _ if invalid.is_some() => (Action::Invalid, None),
            CallStatus::AwaitingApproval => match data.get("approved").and_then(Value::as_bool) {
                Some(true) => (Action::Approved, None),
                Some(false) => (Action::Declined, data.get("reason").and_then(Value::as_str)),
                None => (Action::Invalid, None),
            },
            _ => match data.get("action").and_then(Value::as_str) {
                Some("approved") => (Action::Approved, data.get("notes").and_then(Value::as_str)),
                Some("rejected") => (
                    Action::Rejected,
                    data.get("feedback").and_then(Value::as_str),
                ),
                _ => (Action::Invalid, None),
            },
        };
        let answer = match &invalid {
            Some(error) => error.to_string(),
            None => answer_text(&call.status, action, data),
        };
        let plan_answer = matches!(call.status, CallStatus::Suspended { .. })
            && matches!(action, Action::Approved | Action::Rejected);
        // The store keeps this one instead when the plan is the decided revision's body.
        let answer_without_plan = submit_plan::without_plan(data)
            .filter(|_| plan_answer)
            .map(|without| answer_text(&call.status, action, &without));
        let mode_after = self.mode_after(state, call, action)?;
        let by = self.inner.review.actor().await;
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
                by: &by,
                answer: Some(&answer),
                answer_without_plan: answer_without_plan.as_deref(),
                mode_after: mode_after.as_deref(),
            })
            .await?;
        Ok(())
    }

    /// The mode the run switches to when this decision is applied, if it switches: a plan
    /// approved (with valid resume data: else `action` is invalid), as `apply_decisions` finds
    /// it (`submit_plan` answers `action: "approved"` with an approval).
    fn mode_after(
        &self,
        state: &RunState,
        call: &CallState,
        action: Action,
    ) -> Result<Option<String>, EngineError> {
        let approved_plan = action == Action::Approved
            && call.call.tool_name == submit_plan::TOOL_ID
            && matches!(call.status, CallStatus::Suspended { .. });
        if !approved_plan {
            return Ok(None);
        }
        let after = self.inner.controller.after_approval(&state.mode)?;
        Ok((after != state.mode).then(|| after.to_owned()))
    }

    /// What a call is answered when `data` does not fit what it takes (an approval's schema,
    /// or its tool's resume schema; `mode` is its step's): the validation error. `None` when it
    /// fits.
    pub(super) fn invalid_answer(
        &self,
        mode: &str,
        call: &CallState,
        data: &Value,
    ) -> Result<Option<Value>, EngineError> {
        let resume_schema = if call.status == CallStatus::AwaitingApproval {
            approval_schema()
        } else {
            self.tool(mode, &call.call.tool_name)?
                .and_then(|tool| tool.resume_schema())
                .unwrap_or(Value::Null)
        };
        let violations = schema::validate(&resume_schema, data);
        Ok((!violations.is_empty())
            .then(|| schema::validation_error(&call.call.tool_name, "resume", data, &violations)))
    }
}

/// The exact text the model will be answered with, for the audit trail: the plan result object,
/// or what an approval lets happen.
fn answer_text(status: &CallStatus, action: Action, data: &Value) -> String {
    match (status, action) {
        (CallStatus::AwaitingApproval, Action::Approved) => "approved: the tool call runs".into(),
        (CallStatus::AwaitingApproval, _) => {
            let reason = data
                .get("reason")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .unwrap_or(DEFAULT_DECLINE_REASON);
            serde_json::json!({"error": reason, "denied": true}).to_string()
        }
        (_, Action::Invalid) => {
            "the resume data did not fit the tool's schema: a validation error".into()
        }
        _ => match submit_plan::result_for(data) {
            ToolOutcome::Value(result) => result.to_string(),
            ToolOutcome::Failed(error) => error,
            ToolOutcome::Suspend { .. } => String::new(),
        },
    }
}
