//! Decisions and continuations: a person's verdict becomes the tool's resume data and is
//! recorded through the review core (durable, bound to the revision seen) before the run goes
//! on; a run that stopped (interrupted, failed, waiting for a message) carries on from its
//! last committed state.

use serde_json::{json, Value};

use super::drive::{done, status_of};
use super::tools::ToolAction;
use super::{crash_point, ChunkSink, Engine, EngineError, Report, Verdict};
use crate::model::{self, LanguageModel};
use crate::run::*;
use crate::store::StoreError;
use crate::tool::submit_plan::{self, TOOL_ID as SUBMIT_PLAN};
use crate::tool::ToolOutcome;
use crate::vocabulary::EventKind;

/// How long a decision waits for another driver to let go of the run before it is refused as
/// busy, and how often it looks.
const BUSY_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);
const BUSY_RETRY: std::time::Duration = std::time::Duration::from_millis(20);

/// Whether a decision was refused because nothing is open to decide: the run is not waiting, or
/// the call it names is not open (in a race, another decision got there first).
fn nothing_to_decide(err: &EngineError) -> bool {
    matches!(
        err,
        EngineError::Run(RunError::NotSuspended { .. } | RunError::NoOpenCall { .. })
            | EngineError::Store(StoreError::NotPending { .. })
    )
}

impl Engine {
    /// A person's decision, filled in as a host: for a plan, the resume data echoes the stored
    /// path, title and plan; for an approval, `{approved, reason?}`. Recorded, then applied.
    pub async fn decide(
        &self,
        run_id: &str,
        verdict: &Verdict,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        self.decide_and_tell(run_id, verdict, &mut || {}, sink)
            .await
    }

    /// [`decide`](Self::decide), calling `recorded` as soon as the decision is durable, for
    /// hosts that acknowledge it then while the run goes on into `sink`. An error before that
    /// means nothing was recorded. A run still held by the driver that made its plan pending
    /// (it lets go right after) is waited for, up to 2 s: a reviewer that quick,
    /// here or on a team store, is not told the run is busy.
    pub async fn decide_and_tell(
        &self,
        run_id: &str,
        verdict: &Verdict,
        recorded: &mut (dyn FnMut() + Send),
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        let patience = std::time::Instant::now() + BUSY_PATIENCE;
        loop {
            let mut told = false;
            let outcome = self
                .decide_once(
                    run_id,
                    verdict,
                    &mut || {
                        told = true;
                        recorded();
                    },
                    sink,
                )
                .await;
            match outcome {
                Err(EngineError::Busy { .. }) if !told && std::time::Instant::now() < patience => {
                    tokio::time::sleep(BUSY_RETRY).await;
                }
                // Refused before anything was recorded: if the plan the person saw was decided
                // meanwhile (a race with another reviewer), that is what they need to hear.
                Err(err) if !told && (verdict.revision.is_some() || nothing_to_decide(&err)) => {
                    return Err(self.decided_instead(run_id, verdict).await.unwrap_or(err));
                }
                outcome => return outcome,
            }
        }
    }

    /// When a decision finds nothing open to decide, the decision that was made instead (by
    /// another reviewer or process, maybe a moment ago): on the revision the person saw if the
    /// verdict names it, else on the call it names, else the run's latest. `None` if there is
    /// none, or it cannot be read (the caller's own refusal stands).
    async fn decided_instead(&self, run_id: &str, verdict: &Verdict) -> Option<EngineError> {
        let revisions = self.inner.review.revisions(Some(run_id)).await.ok()?;
        let decided = revisions
            .iter()
            .filter(|r| {
                verdict
                    .revision
                    .as_deref()
                    .is_none_or(|prefix| r.sha256.starts_with(&prefix.to_ascii_lowercase()))
            })
            .filter(|r| {
                verdict
                    .tool_call_id
                    .as_deref()
                    .is_none_or(|id| r.tool_call_id == id)
            })
            .filter_map(|r| r.decision.as_ref())
            .max_by_key(|d| (d.decided_at, d.id))?;
        Some(EngineError::Store(StoreError::AlreadyDecided {
            run_id: run_id.to_owned(),
            tool_call_id: decided.tool_call_id.clone(),
            action: decided.action,
            decided_at: decided.decided_at,
            decided_by: decided.decided_by.clone(),
        }))
    }

    async fn decide_once(
        &self,
        run_id: &str,
        verdict: &Verdict,
        recorded: &mut (dyn FnMut() + Send),
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        if let Some(report) = self.decide_outside(run_id, verdict).await? {
            recorded();
            return Ok(report);
        }
        let state = self.load(run_id).await?;
        let (call_id, data) = self.verdict_data(&state, verdict).await?;
        self.resume_with(
            state,
            Some(&call_id),
            data,
            verdict.revision.as_deref(),
            recorded,
            sink,
        )
        .await
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
        self.resume_with(state, tool_call_id, data, None, &mut || {}, sink)
            .await
    }

    async fn resume_with(
        &self,
        mut state: RunState,
        tool_call_id: Option<&str>,
        data: Value,
        expect_sha: Option<&str>,
        recorded: &mut (dyn FnMut() + Send),
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
            recorded();
            let model = model::from_spec(&state.model, &self.inner.cwd)?;
            state.begin_stream();
            let just = Some((call_id.clone(), data));
            self.apply_decisions(&mut state, &*model, just, sink).await
        }
        .await;
        claim.release().await;
        self.park(state, &went);
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
                return self.apply_decisions(&mut state, &*model, None, sink).await;
            }
            if retry {
                self.save(&mut state, Some((EventKind::Retry, json!({}))))
                    .await?;
            }
            self.drive(&mut state, &*model, None, sink).await
        }
        .await;
        claim.release().await;
        self.park(state, &went);
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
        self.park(state, &went);
        went
    }

    /// Applies every recorded decision on the suspended step's open calls, then carries on.
    /// `just_recorded`: the call this move decided and the resume data it recorded for it, not
    /// read back from the store (the others are).
    async fn apply_decisions(
        &self,
        state: &mut RunState,
        model: &dyn LanguageModel,
        mut just_recorded: Option<(String, Value)>,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        let Phase::Suspended { step } = &state.phase else {
            return self.report(state).await;
        };
        let step = step.clone();
        let workspace = self.workspace(state)?;
        // Whether every decision is applied by answering its call, none by running a tool.
        let mut answered_only = true;
        for entry in step.calls.iter().filter(|c| c.status.is_pending()) {
            let call = &entry.call;
            let data = match just_recorded.take_if(|(id, _)| *id == call.tool_call_id) {
                // Recorded by this move a moment ago: not read back.
                Some((_, data)) => data,
                None => match self
                    .inner
                    .review
                    .decision(&state.run_id, &call.tool_call_id)
                    .await?
                {
                    Some(decision) => decision.resume_data,
                    None => continue,
                },
            };
            let tool = self.tool(&step.mode, &call.tool_name)?.ok_or_else(|| {
                EngineError::MissingTool {
                    run_id: state.run_id.clone(),
                    tool: call.tool_name.clone(),
                    mode: step.mode.clone(),
                }
            })?;
            let approval = entry.status == CallStatus::AwaitingApproval;
            let status = if let Some(error) = self.invalid_answer(&step.mode, entry, &data)? {
                done(Outcome::Result(error))
            } else if approval && data.get("approved").and_then(Value::as_bool) != Some(true) {
                self.decline(state, call, &data, sink)
            } else {
                let action = if approval {
                    answered_only = false;
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
        // Until the run does something new (a model call, a tool run), what it records follows
        // from the decisions, durable already: no need to wait for the disk.
        state.stored.derived = answered_only;
        if let Phase::Suspended { .. } = state.phase {
            // Other calls of the step still wait: announce the next.
            self.announce_suspension(state, sink).await?;
        }
        self.drive(state, model, None, sink).await
    }
}
