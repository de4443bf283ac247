//! Persistence of a run's moves: each is one commit of a new snapshot version (refused if
//! another driver wrote one since), the messages appended since, the items that wait for a
//! person after it (decided in one place, `open_items`), and an event for the log.

use serde_json::{json, Value};

use super::{Engine, EngineError, Report};
use crate::review::plan_sha256;
use crate::run::*;
use crate::store::{Commit, NewRun, OpenItem, PlanText, Source};
use crate::tool::submit_plan::TOOL_ID as SUBMIT_PLAN;
use crate::vocabulary::{EventKind, ItemKind};

impl Engine {
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
        &'a self,
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
            by: &self.inner.actor,
            derived: state.stored.derived,
        }
    }

    fn saved(&self, state: &mut RunState) {
        state.stored = Stored {
            version: state.stored.version + 1,
            messages: state.messages.len(),
            derived: false,
        };
    }

    /// Keeps the state a stream stopped on, saved as it is (`report`: how the stream went; a
    /// stream that failed keeps nothing), for the run's next move in this process: most often
    /// a decision on the plan it just submitted, which then need not read and parse it again
    /// (for a 200 KB plan, ~600 KB of JSON: a fifth of the way from a click to the first
    /// chunk). One run's, the latest: what a person acts on next.
    pub(super) fn park<T>(&self, state: RunState, report: &Result<T, EngineError>) {
        if report.is_ok() {
            *self.parked() = Some(state);
        }
    }

    /// Parks the state a look at the run read (its detail, as the window reads it when a
    /// stream ends or the run is opened), taken from the parking or the store: the run a person
    /// looks at is the one they act on next. Unless a newer state of the same run was parked
    /// meanwhile (its next move went on while the look was read).
    pub(super) fn park_looked_at(&self, state: RunState) {
        let mut parked = self.parked();
        let newer = parked
            .as_ref()
            .is_some_and(|p| p.run_id == state.run_id && p.stored.version > state.stored.version);
        if !newer {
            *parked = Some(state);
        }
    }

    /// The run whose state is parked, if any (for tests: a look must not take it away).
    #[doc(hidden)]
    pub fn parked_run(&self) -> Option<String> {
        self.parked().as_ref().map(|state| state.run_id.clone())
    }

    /// The parked state of `run_id`, taken, if the store holds no newer version of the run.
    pub(super) async fn unpark(&self, run_id: &str) -> Result<Option<RunState>, EngineError> {
        let parked = {
            let mut parked = self.parked();
            match parked.as_ref() {
                Some(state) if state.run_id == run_id => parked.take(),
                _ => None,
            }
        };
        let Some(state) = parked else {
            return Ok(None);
        };
        if self.inner.store.snapshot_version(run_id).await? != state.stored.version {
            return Ok(None);
        }
        Ok(Some(state))
    }

    fn parked(&self) -> std::sync::MutexGuard<'_, Option<RunState>> {
        self.inner
            .parked
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
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

pub(super) fn plan_text(payload: &Value) -> PlanText {
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
