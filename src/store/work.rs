//! `work`: what an agent did after a plan was approved, each record bound to the revision that
//! was approved (files it wrote, commands it ran, its own "finished", a step a person marked by
//! hand). Only recorded while a run has an approved revision: before any approval there is
//! nothing to hold the work against.

use serde::Serialize;
use serde_json::Value;

use super::log::{self, Entry};
use super::sql::{Conn, Row, Tx};
use super::{Actor, StoreError};
use crate::clock::Millis;
use crate::vocabulary::{Action, AuditKind, RunStatus, SourceKind};

vocabulary! {
    /// What one record of the work after an approval is.
    WorkKind {
        /// A file written, edited or created (`path`).
        File = "file",
        /// A command run (`command`, and its `exit_code` when known).
        Command = "command",
        /// The agent said it was done (Claude Code's `Stop`, the end of an engine run).
        Finished = "finished",
        /// A person marked a step done or not applicable by hand (`data.step`, `data.mark`).
        Marked = "marked",
        /// The workspace's git state when the plan was submitted (`data`: commit and dirty
        /// files), what its changes since are read against.
        Baseline = "baseline",
    }
}

/// Whose work a record is: a run, or an outside agent's session (its run found by the store),
/// held against its approved revision; or one revision itself (a baseline, before approval).
#[derive(Debug, Clone, Copy)]
pub enum WorkOf<'a> {
    Run(&'a str),
    Session { kind: SourceKind, session: &'a str },
    Revision(i64),
}

/// One thing done after an approval, as it is recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Work {
    pub kind: WorkKind,
    /// A file's path: relative to the workspace, or absolute (read against the run's
    /// workspace; outside it, or said to be in `data.outside`).
    pub path: Option<String>,
    pub command: Option<String>,
    pub exit_code: Option<i64>,
    /// What else is known (the tool's name, the file's hashes, a mark's step), as JSON.
    pub data: Value,
}

impl Work {
    /// A file written, edited or created.
    pub fn file(path: impl Into<String>, data: Value) -> Self {
        Self {
            path: Some(path.into()),
            ..Self::of_kind(WorkKind::File, data)
        }
    }

    /// A command run, with its exit code when known.
    pub fn command(command: impl Into<String>, exit_code: Option<i64>, data: Value) -> Self {
        Self {
            command: Some(command.into()),
            exit_code,
            ..Self::of_kind(WorkKind::Command, data)
        }
    }

    /// A record that names no file and no command (finished, marked, baseline).
    pub fn of_kind(kind: WorkKind, data: Value) -> Self {
        Self {
            kind,
            path: None,
            command: None,
            exit_code: None,
            data,
        }
    }
}

/// A record to add: `work`, done by `of` at `at`.
#[derive(Debug, Clone)]
pub struct NewWork<'a> {
    pub of: WorkOf<'a>,
    pub at: Millis,
    pub work: Work,
}

/// A stored record.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkRow {
    pub id: i64,
    pub run_id: String,
    /// The approved revision the work is held against.
    pub revision_id: i64,
    pub at: Millis,
    pub kind: WorkKind,
    pub path: Option<String>,
    pub command: Option<String>,
    pub exit_code: Option<i64>,
    pub data: Value,
}

const COLUMNS: &str = "id, run_id, revision_id, at, kind, path, command, exit_code, data";

fn row(r: &dyn Row) -> Result<WorkRow, StoreError> {
    let kind: String = r.get(4)?;
    let data: String = r.get(8)?;
    Ok(WorkRow {
        id: r.get(0)?,
        run_id: r.get(1)?,
        revision_id: r.get(2)?,
        at: r.get(3)?,
        kind: WorkKind::parse(&kind).ok_or_else(|| StoreError::Query {
            context: "read work",
            message: format!("unknown kind of work `{kind}`"),
        })?,
        path: r.get(5)?,
        command: r.get(6)?,
        exit_code: r.get(7)?,
        data: serde_json::from_str(&data).map_err(|e| StoreError::Query {
            context: "read work",
            message: e.to_string(),
        })?,
    })
}

/// Adds a record to the run's newest revision if it is approved; `None` (nothing written) when the run
/// is unknown or has no approved revision, or (with `expect`) when that is another revision.
pub(super) async fn record(
    tx: &mut Tx<impl Conn>,
    new: &NewWork<'_>,
    expect: Option<i64>,
) -> Result<Option<WorkRow>, StoreError> {
    let run_id = match new.of {
        WorkOf::Revision(id) => {
            let run_id = tx
                .row(
                    "find the revision's run",
                    "SELECT run_id FROM plan_revisions WHERE id = $1",
                    &[&id],
                    |r| r.get::<String>(0),
                )
                .await?;
            return match run_id {
                Some(run_id) => insert(tx, new, &run_id, id).await.map(Some),
                None => Ok(None),
            };
        }
        WorkOf::Run(id) => Some(id.to_owned()),
        WorkOf::Session { kind, session } => {
            super::runs::of_session(tx, kind, Some(session)).await?
        }
    };
    let Some(run_id) = run_id else {
        return Ok(None);
    };
    let Some(revision_id) = approved_revision(tx, &run_id).await? else {
        return Ok(None);
    };
    if expect.is_some_and(|expected| expected != revision_id) {
        return Ok(None);
    }
    let row = insert(tx, new, &run_id, revision_id).await?;
    if let Some(status) = reported(new.work.kind) {
        super::runs::session_reported(tx, &run_id, new.at, status).await?;
    }
    Ok(Some(row))
}

/// How an outside session stands once its agent reports work of `kind`: working again after a
/// file or a command, finished when it said so (Claude Code's `Stop`: until it works again or
/// presents another plan). `None`: a person's mark or a baseline, which say nothing of the agent.
fn reported(kind: WorkKind) -> Option<RunStatus> {
    match kind {
        WorkKind::File | WorkKind::Command => Some(RunStatus::Running),
        WorkKind::Finished => Some(RunStatus::Finished),
        WorkKind::Marked | WorkKind::Baseline => None,
    }
}

/// The most records one revision keeps: an agent (or a client) that reports more is refused,
/// so that no report can grow the store without end.
pub const MAX_WORK_PER_REVISION: i64 = 20_000;

async fn insert(
    tx: &mut Tx<impl Conn>,
    new: &NewWork<'_>,
    run_id: &str,
    revision_id: i64,
) -> Result<WorkRow, StoreError> {
    let kept = tx
        .one(
            "count work",
            "SELECT COUNT(*) FROM work WHERE revision_id = $1",
            &[&revision_id],
            || StoreError::Query {
                context: "count work",
                message: "no count".into(),
            },
            |r| r.get::<i64>(0),
        )
        .await?;
    if kept >= MAX_WORK_PER_REVISION {
        return Err(StoreError::Invalid {
            run_id: run_id.to_owned(),
            message: format!(
                "its approved plan already holds {MAX_WORK_PER_REVISION} records of work; no more are kept"
            ),
        });
    }
    let sql = format!(
        "INSERT INTO work (run_id, revision_id, at, kind, path, command, exit_code, data)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING {COLUMNS}"
    );
    let data = new.work.data.to_string();
    tx.one(
        "record work",
        &sql,
        &[
            &run_id,
            &revision_id,
            &new.at,
            &new.work.kind.as_str(),
            &new.work.path,
            &new.work.command,
            &new.work.exit_code,
            &data,
        ],
        || StoreError::Query {
            context: "record work",
            message: "the insert returned no row".into(),
        },
        row,
    )
    .await
}

/// The run's newest revision, if it is approved: the plan its agent now works on. A newer
/// plan not approved (pending, refused, answered in the agent) means the work is no longer the
/// approved one's.
pub(super) async fn approved_revision(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
) -> Result<Option<i64>, StoreError> {
    tx.row(
        "find the approved revision",
        "SELECT d.revision_id FROM decisions d
         WHERE d.run_id = $1 AND d.action = $2
           AND d.revision_id = (SELECT MAX(id) FROM plan_revisions WHERE run_id = $1)",
        &[&run_id, &Action::Approved.as_str()],
        |r| r.get::<i64>(0),
    )
    .await
}

/// The work held against one revision, oldest first.
pub(super) async fn of_revision(
    tx: &mut Tx<impl Conn>,
    revision_id: i64,
) -> Result<Vec<WorkRow>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM work WHERE revision_id = $1 ORDER BY id");
    tx.all("list work", &sql, &[&revision_id], row).await
}

/// A person's mark on a step of `revision` (its sha256 for the trail): recorded only if it is
/// its run's approved revision, with its audit entry.
pub(super) async fn mark(
    tx: &mut Tx<impl Conn>,
    new: &NewWork<'_>,
    revision: (i64, &str),
    by: &Actor,
) -> Result<Option<WorkRow>, StoreError> {
    let Some(row) = record(tx, new, Some(revision.0)).await? else {
        return Ok(None);
    };
    let entry = Entry {
        at: new.at,
        actor: &by.name,
        process: &by.process,
        run_id: &row.run_id,
        kind: AuditKind::StepMarked,
        revision_sha: Some(revision.1),
        data: new.work.data.clone(),
    };
    log::append(tx, entry).await?;
    Ok(Some(row))
}

/// The records of `kind` after record `after` (ids follow the order of commits), oldest first,
/// at most `limit`.
pub(super) async fn after(
    tx: &mut Tx<impl Conn>,
    kind: WorkKind,
    after: i64,
    limit: i64,
) -> Result<Vec<WorkRow>, StoreError> {
    let sql =
        format!("SELECT {COLUMNS} FROM work WHERE kind = $1 AND id > $2 ORDER BY id LIMIT $3");
    tx.all(
        "list recent work",
        &sql,
        &[&kind.as_str(), &after, &limit],
        row,
    )
    .await
}
