//! After Approve in a window: a run's approved plan with each step's state, what changed
//! outside it, steps marked by hand, and the runs that just finished (for the "Done"
//! notification).

use crate::engine::{Engine, EngineError};
use crate::review::{FileDiff, Progress, RevisionStatus, StepMark};
use crate::store::WorkKind;

/// How many finished runs one notice reads at most.
const MAX_FINISHED: i64 = 20;

/// The run's newest approved plan with the work held against it; `None` before any approval.
pub async fn run_progress(engine: &Engine, run_id: &str) -> Result<Option<Progress>, EngineError> {
    let review = engine.review();
    let Some(revision) = review.approved(run_id).await? else {
        return Ok(None);
    };
    Ok(Some(review.progress(&revision).await?))
}

/// An approved revision with the work held against it, as its history keeps it; `None` for a
/// revision that was not approved.
pub async fn revision_progress(
    engine: &Engine,
    revision_id: i64,
) -> Result<Option<Progress>, EngineError> {
    let review = engine.review();
    let revision = review.revision_by_id(revision_id).await?;
    if revision.status != RevisionStatus::Approved {
        return Ok(None);
    }
    Ok(Some(review.progress(&revision).await?))
}

/// One changed file's diff since revision `revision_id` was approved (see
/// `Review::file_diff`).
pub async fn file_diff(
    engine: &Engine,
    revision_id: i64,
    path: &str,
) -> Result<Option<FileDiff>, EngineError> {
    let review = engine.review();
    let revision = review.revision_by_id(revision_id).await?;
    Ok(review.file_diff(&revision, path).await?)
}

/// Marks step `step` of the approved revision `revision_id` by hand.
pub async fn mark_step(
    engine: &Engine,
    revision_id: i64,
    step: usize,
    mark: StepMark,
) -> Result<Progress, EngineError> {
    let review = engine.review();
    let revision = review.revision_by_id(revision_id).await?;
    Ok(review.mark_step(&revision, step, mark).await?)
}

/// A run whose agent said it finished, with its progress.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Its record's id: later ones are newer.
    pub id: i64,
    pub progress: Progress,
}

impl Finished {
    /// What its notification says: "Done: 5 of 6 steps, 2 files outside the plan".
    pub fn summary(&self) -> String {
        format!(
            "Done: {}",
            self.progress.summary.replacen(" steps done", " steps", 1)
        )
    }
}

/// The id of the newest "finished" record: what a watcher starting now has seen.
pub async fn newest_finished(engine: &Engine) -> Result<i64, EngineError> {
    let review = engine.review();
    let mut after = 0;
    loop {
        let page = review.work_after(WorkKind::Finished, after, 1000).await?;
        match page.last() {
            Some(last) => after = last.id,
            None => return Ok(after),
        }
    }
}

/// The runs whose agents said they finished after record `after`, oldest first, each run once
/// (its newest), with its progress.
pub async fn finished_after(engine: &Engine, after: i64) -> Result<Vec<Finished>, EngineError> {
    let review = engine.review();
    let records = review
        .work_after(WorkKind::Finished, after, MAX_FINISHED)
        .await?;
    let mut finished: Vec<Finished> = Vec::new();
    for work in records.iter().rev() {
        if finished.iter().any(|f| f.progress.run_id == work.run_id) {
            continue;
        }
        let revision = review.revision_by_id(work.revision_id).await?;
        finished.push(Finished {
            id: work.id,
            progress: review.progress(&revision).await?,
        });
    }
    finished.reverse();
    Ok(finished)
}
