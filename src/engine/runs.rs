//! What hosts read about runs: listings, one run's conversation and where it stands, settings,
//! and a signal when anything changed. Hosts never touch the store.

use futures::stream::BoxStream;
use serde::Serialize;

use super::{Engine, EngineError};
use crate::chunk::ChunkError;
use crate::clock::Millis;
use crate::message::Message;
use crate::review::ReviewItem;
use crate::run::{Phase, RunStatus, WaitReason};
use crate::store::{EventRow, RunRow, Source};
use crate::vocabulary::SourceKind;

/// A run as listings show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    pub id: String,
    pub prompt: String,
    pub model: String,
    pub mode: String,
    pub status: RunStatus,
    pub workspace: String,
    pub source: Source,
    pub created_at: Millis,
    pub updated_at: Millis,
    /// A process drives it now (holds its lease).
    pub driven: bool,
    /// One of Plandesk's own runs that nobody drives, though it would go on: it stopped
    /// mid-step (`running`), or after a decision that left nothing to decide (`suspended` with
    /// no item open). `continue_run` carries it on. Its view ([`RunDetail::interrupted`]) also
    /// finds one stopped after some of its step's decisions, which needs its state.
    pub interrupted: bool,
}

impl RunView {
    fn of(row: RunRow, now: Millis) -> Self {
        let driven = crate::lease::is_held(row.holder.as_ref(), now);
        let stopped = match row.status {
            RunStatus::Running => true,
            RunStatus::Suspended => !row.waits_on_person,
            RunStatus::Waiting | RunStatus::Finished | RunStatus::Failed => false,
        };
        Self {
            interrupted: row.source.kind == SourceKind::Engine && !driven && stopped,
            driven,
            id: row.id,
            prompt: row.prompt,
            model: row.model,
            mode: row.mode,
            status: row.status,
            workspace: row.workspace,
            source: row.source,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// One run: its conversation and where it stands.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunDetail {
    pub run: RunView,
    pub messages: Vec<Message>,
    pub open: Vec<ReviewItem>,
    /// The error that stopped the run, when it failed.
    pub error: Option<ChunkError>,
    /// Why it waits, when it waits.
    pub waiting: Option<WaitReason>,
    /// Nobody drives it, yet it can go on: it was interrupted mid-step, or a decision was
    /// recorded but not applied (the deciding process stopped). `continue_run` carries it on.
    /// As [`RunView::interrupted`], and also when only some of its step's calls were decided.
    pub interrupted: bool,
}

impl Engine {
    /// Every run, most recently active first.
    pub async fn runs(&self) -> Result<Vec<RunView>, EngineError> {
        let rows = self.inner.store.runs().await?;
        let now = self.now();
        Ok(rows.into_iter().map(|row| RunView::of(row, now)).collect())
    }

    /// The most recently active run, if there is one.
    pub async fn latest_run(&self) -> Result<Option<RunView>, EngineError> {
        let now = self.now();
        Ok(self
            .inner
            .store
            .latest_run()
            .await?
            .map(|row| RunView::of(row, now)))
    }

    pub async fn run(&self, run_id: &str) -> Result<RunView, EngineError> {
        Ok(RunView::of(self.inner.store.run(run_id).await?, self.now()))
    }

    /// The full id of the run `prefix` names (an exact id or a unique prefix of 4+ characters).
    pub async fn resolve_run(&self, prefix: &str) -> Result<String, EngineError> {
        Ok(self.inner.store.resolve_run(prefix).await?)
    }

    pub async fn run_detail(&self, run_id: &str) -> Result<RunDetail, EngineError> {
        let run = RunView::of(self.inner.store.run(run_id).await?, self.now());
        let open = self.inner.review.open_items(run_id).await?;
        if run.source.kind != SourceKind::Engine {
            // An outside agent's session: its plans are here, its conversation is the agent's.
            return Ok(RunDetail {
                run,
                messages: Vec::new(),
                open,
                error: None,
                waiting: None,
                interrupted: false,
            });
        }
        let state = self.load(run_id).await?;
        let decided_in_part =
            matches!(state.phase, Phase::Suspended { .. }) && open.len() < state.open_calls().len();
        let interrupted = run.interrupted || (!run.driven && decided_in_part);
        let detail = RunDetail {
            run,
            error: match &state.phase {
                Phase::Failed { error } => Some(error.clone()),
                _ => None,
            },
            waiting: match &state.phase {
                Phase::Waiting { reason } => Some(*reason),
                _ => None,
            },
            messages: state.messages.clone(),
            open,
            interrupted,
        };
        self.park_looked_at(state);
        Ok(detail)
    }

    /// A run's event log, oldest first.
    pub async fn events(&self, run_id: &str) -> Result<Vec<EventRow>, EngineError> {
        Ok(self.inner.store.events(run_id).await?)
    }

    /// A saved setting (never a secret).
    pub async fn setting(&self, key: &str) -> Result<Option<String>, EngineError> {
        Ok(self.inner.store.setting(key).await?)
    }

    /// Saves a setting; `None` removes it.
    pub async fn set_setting(&self, key: &str, value: Option<&str>) -> Result<(), EngineError> {
        Ok(self.inner.store.set_setting(key, value, self.now()).await?)
    }

    /// Yields whenever the store may have changed, from this process or any other.
    pub fn changes(&self) -> BoxStream<'static, ()> {
        self.inner.store.changes()
    }

    /// Where the store is, for messages.
    pub fn store_location(&self) -> String {
        self.inner.store.location()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: RunStatus, kind: SourceKind) -> RunRow {
        RunRow {
            id: "r".into(),
            prompt: "Add a cache".into(),
            model: "demo".into(),
            mode: "plan".into(),
            status,
            workspace: "/ws".into(),
            source: Source {
                kind,
                session: None,
            },
            created_at: 1,
            updated_at: 1,
            holder: None,
            waits_on_person: false,
        }
    }

    /// A run nobody drives, running or decided with nothing left open, was interrupted; any
    /// other is not.
    #[test]
    fn a_listing_says_which_of_plandesks_runs_were_interrupted() {
        let interrupted = |row: RunRow| RunView::of(row, 100).interrupted;
        assert!(interrupted(row(RunStatus::Running, SourceKind::Engine)));
        assert!(interrupted(row(RunStatus::Suspended, SourceKind::Engine)));
        let waits = RunRow {
            waits_on_person: true,
            ..row(RunStatus::Suspended, SourceKind::Engine)
        };
        assert!(!interrupted(waits), "a plan of it waits for a person");
        let driven = RunRow {
            holder: Some(("another-host/1/x".into(), 200)),
            ..row(RunStatus::Running, SourceKind::Engine)
        };
        assert!(!interrupted(driven), "a process drives it");
        for status in [RunStatus::Waiting, RunStatus::Finished, RunStatus::Failed] {
            assert!(!interrupted(row(status, SourceKind::Engine)), "{status}");
        }
        assert!(
            !interrupted(row(RunStatus::Running, SourceKind::ClaudeCode)),
            "an outside agent works on its own"
        );
    }
}
