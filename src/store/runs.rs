//! `runs` (one row per run or outside agent session, with the lease of whoever drives it),
//! `run_snapshots` (a run's newest state, with the version every commit checks and counts up)
//! and `messages` (append-only, see `conversation`): a commit writes them with the run's open
//! items and an event, in one transaction.

use super::conversation::{self, Tail, Tails};
use super::sql::{Conn, Row, ToArg, Tx};
use super::{items, log, ClaimOutcome, Commit, Lease, NewRun, RunRow, Source};
use super::{Actor, StoreError, StoredRun};
use crate::clock::Millis;
use crate::vocabulary::{RunStatus, SourceKind};

const COLUMNS: &str = "SELECT id, prompt, model, mode, status, workspace, source, session, \
                       holder, lease_until, created_at, updated_at, \
                       EXISTS (SELECT 1 FROM pending WHERE pending.run_id = runs.id) FROM runs";

fn run(r: &dyn Row) -> Result<RunRow, StoreError> {
    let holder: Option<String> = r.get(8)?;
    let until: Option<Millis> = r.get(9)?;
    Ok(RunRow {
        id: r.get(0)?,
        prompt: r.get(1)?,
        model: r.get(2)?,
        mode: r.get(3)?,
        status: r.word(RunStatus::parse, 4)?,
        workspace: r.get(5)?,
        source: Source {
            kind: r.word(SourceKind::parse, 6)?,
            session: r.get(7)?,
        },
        holder: holder.zip(until),
        created_at: r.get(10)?,
        updated_at: r.get(11)?,
        waits_on_person: r.get(12)?,
    })
}

fn unknown(run_id: &str) -> impl FnOnce() -> StoreError + '_ {
    move || StoreError::UnknownRun(run_id.to_owned())
}

pub(super) async fn insert(
    tx: &mut Tx<impl Conn>,
    new: &NewRun<'_>,
    at: Millis,
) -> Result<(), StoreError> {
    tx.later(
        "insert run",
        "INSERT INTO runs (id, prompt, model, mode, status, workspace, source, session, created_at, updated_at)
         VALUES ($1, $2, $3, '', $4, $5, $6, $7, $8, $8)",
        &[
            &new.id,
            &new.prompt,
            &new.model,
            &RunStatus::Running.as_str(),
            &new.workspace,
            &new.source.kind.as_str(),
            &new.source.session,
            &at,
        ],
    )
    .await?;
    Ok(())
}

/// The run of an outside agent's session, if it has one.
pub(super) async fn of_session(
    tx: &mut Tx<impl Conn>,
    kind: SourceKind,
    session: Option<&str>,
) -> Result<Option<String>, StoreError> {
    tx.row(
        "find session",
        "SELECT id FROM runs WHERE source = $1 AND session = $2",
        &[&kind.as_str(), &session],
        |r| r.get(0),
    )
    .await
}

/// The run of an outside session, created (suspended, waiting on its first plan) if new.
pub(super) async fn session(
    tx: &mut Tx<impl Conn>,
    new: &NewRun<'_>,
    at: Millis,
) -> Result<String, StoreError> {
    let existing = of_session(tx, new.source.kind, new.source.session.as_deref()).await?;
    if let Some(existing) = existing {
        return Ok(existing);
    }
    insert(tx, new, at).await?;
    Ok(new.id.to_owned())
}

/// An outside session's run is suspended while an item is open, else running (its agent goes
/// on after a decision).
pub(super) async fn settle_session(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    at: Millis,
) -> Result<(), StoreError> {
    tx.later(
        "settle session",
        "UPDATE runs SET updated_at = $2, status = CASE WHEN EXISTS
             (SELECT 1 FROM pending WHERE run_id = $1) THEN 'suspended' ELSE 'running' END
         WHERE id = $1 AND source != 'engine'",
        &[&run_id, &at],
    )
    .await?;
    Ok(())
}

/// An outside session with nothing open stands as its agent last reported (`status`, see
/// `work::record`). Written only when that changes: a report of each file edited does not
/// rewrite the run's row.
pub(super) async fn session_reported(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    at: Millis,
    status: RunStatus,
) -> Result<(), StoreError> {
    tx.later(
        "session reported",
        "UPDATE runs SET updated_at = $2, status = $3
         WHERE id = $1 AND source != 'engine' AND status != $3
           AND NOT EXISTS (SELECT 1 FROM pending WHERE run_id = $1)",
        &[&run_id, &at, &status.as_str()],
    )
    .await?;
    Ok(())
}

pub(super) async fn one(tx: &mut Tx<impl Conn>, run_id: &str) -> Result<RunRow, StoreError> {
    let sql = format!("{COLUMNS} WHERE id = $1");
    tx.one("load run", &sql, &[&run_id], unknown(run_id), run)
        .await
}

/// The order runs are listed in: most recently active first.
const LATEST_FIRST: &str = "ORDER BY updated_at DESC, id";

pub(super) async fn latest(tx: &mut Tx<impl Conn>) -> Result<Option<RunRow>, StoreError> {
    let sql = format!("{COLUMNS} {LATEST_FIRST} LIMIT 1");
    tx.row("load the latest run", &sql, &[], run).await
}

pub(super) async fn all(tx: &mut Tx<impl Conn>) -> Result<Vec<RunRow>, StoreError> {
    let sql = format!("{COLUMNS} {LATEST_FIRST}");
    tx.all("list runs", &sql, &[], run).await
}

pub(super) async fn resolve(tx: &mut Tx<impl Conn>, prefix: &str) -> Result<String, StoreError> {
    let ids: Vec<String> = tx
        .all(
            "resolve run",
            "SELECT id FROM runs WHERE id = CAST($1 AS TEXT)
                OR (length(CAST($1 AS TEXT)) >= 4 AND substr(id, 1, length(CAST($1 AS TEXT))) = $1)
             ORDER BY id = $1 DESC, id LIMIT 6",
            &[&prefix],
            |r| r.get(0),
        )
        .await?;
    match ids.as_slice() {
        [] => Err(StoreError::UnknownRun(prefix.to_owned())),
        [first, ..] if first == prefix => Ok(first.clone()),
        [only] => Ok(only.clone()),
        many => Err(StoreError::AmbiguousRun {
            prefix: prefix.to_owned(),
            candidates: many.join(", "),
        }),
    }
}

/// One statement decides the claim: it succeeds only where nobody holds the run or the
/// holder's lease has run out.
pub(super) async fn claim(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    lease: &Lease<'_>,
) -> Result<ClaimOutcome, StoreError> {
    let claimed = tx
        .execute(
            "claim run",
            "UPDATE runs SET holder = $2, lease_until = $3
             WHERE id = $1 AND (holder IS NULL OR lease_until IS NULL OR lease_until < $4)",
            &[&run_id, &lease.holder, &lease.until, &lease.now],
        )
        .await?;
    if claimed == 1 {
        return Ok(ClaimOutcome::Claimed);
    }
    Ok(match one(tx, run_id).await?.holder {
        Some((holder, until)) => ClaimOutcome::Held { holder, until },
        // Released between the two statements (impossible under the write lock).
        None => ClaimOutcome::Held {
            holder: String::new(),
            until: lease.now,
        },
    })
}

pub(super) async fn take_over(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    holder: &str,
    lease: &Lease<'_>,
) -> Result<bool, StoreError> {
    let changed = tx
        .execute(
            "take over run",
            "UPDATE runs SET holder = $3, lease_until = $4 WHERE id = $1 AND holder = $2",
            &[&run_id, &holder, &lease.holder, &lease.until],
        )
        .await?;
    Ok(changed == 1)
}

pub(super) async fn renew(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    lease: &Lease<'_>,
) -> Result<bool, StoreError> {
    let changed = tx
        .execute(
            "renew lease",
            "UPDATE runs SET lease_until = $3 WHERE id = $1 AND holder = $2",
            &[&run_id, &lease.holder, &lease.until],
        )
        .await?;
    Ok(changed == 1)
}

pub(super) async fn release(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    holder: &str,
) -> Result<(), StoreError> {
    tx.later(
        "release run",
        "UPDATE runs SET holder = NULL, lease_until = NULL WHERE id = $1 AND holder = $2",
        &[&run_id, &holder],
    )
    .await?;
    Ok(())
}

/// Logs a switch of the run's mode from `before` to `to` in the audit trail, if it is one (a
/// run's first mode is set, not switched).
async fn log_mode_switch(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    before: &str,
    to: &str,
    at: Millis,
    by: &Actor,
) -> Result<(), StoreError> {
    match log::Entry::mode_switch(run_id, before, to, at, by) {
        Some(entry) => log::append(tx, entry).await,
        None => Ok(()),
    }
}

/// Switches the run's mode to `to` with the decision that switches it, and logs it.
pub(super) async fn switch_mode(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    to: &str,
    at: Millis,
    by: &Actor,
) -> Result<(), StoreError> {
    let before: String = tx
        .one(
            "read run mode",
            "SELECT mode FROM runs WHERE id = $1",
            &[&run_id],
            unknown(run_id),
            |r| r.get(0),
        )
        .await?;
    log_mode_switch(tx, run_id, &before, to, at, by).await?;
    tx.later(
        "switch run mode",
        "UPDATE runs SET mode = $2 WHERE id = $1",
        &[&run_id, &to],
    )
    .await?;
    Ok(())
}

/// Writes one move of a run; refused if another writer committed since `expect_version`. The
/// conversation's tail after it, for `tails` once it is durable.
pub(super) async fn commit(
    tx: &mut Tx<impl Conn>,
    tails: &Tails,
    c: &Commit<'_>,
) -> Result<Tail, StoreError> {
    let (newest, stored, before): (i64, i64, Option<String>) = tx
        .one(
            "find newest snapshot",
            "SELECT (SELECT COALESCE(MAX(version), 0) FROM run_snapshots WHERE run_id = $1),
                    (SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE run_id = $1),
                    (SELECT mode FROM runs WHERE id = $1)",
            &[&c.run_id],
            unknown(c.run_id),
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .await?;
    if newest != c.expect_version {
        return Err(StoreError::Conflict {
            run_id: c.run_id.to_owned(),
            expected: c.expect_version,
            found: newest,
        });
    }

    let before = before.ok_or_else(unknown(c.run_id))?;
    let first = c.message_count - c.new_messages.len() as i64;
    if first != stored {
        return Err(StoreError::Invalid {
            run_id: c.run_id.to_owned(),
            message: format!("{stored} messages are stored but the commit appends from {first}"),
        });
    }
    let tail = conversation::append(tx, tails, c.run_id, stored, c.new_messages).await?;
    // The newest snapshot is the run's state; those it supersedes are read by nothing (the
    // conversation, the plans and the decisions are kept apart), so it takes their place.
    let (version, schema_version) = (c.expect_version + 1, i64::from(c.schema_version));
    let state: [&dyn ToArg; 6] = [
        &c.run_id,
        &version,
        &schema_version,
        &c.message_count,
        &c.state,
        &c.at,
    ];
    if c.expect_version == 0 {
        tx.later(
            "insert snapshot",
            "INSERT INTO run_snapshots (run_id, version, schema_version, message_count, state, saved_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &state,
        )
        .await?;
    } else {
        tx.later(
            "replace snapshot",
            "UPDATE run_snapshots SET version = $2, schema_version = $3, message_count = $4,
                 state = $5, saved_at = $6
             WHERE run_id = $1 AND version = $7",
            &[state.as_slice(), &[&c.expect_version]].concat(),
        )
        .await?;
    }
    log_mode_switch(tx, c.run_id, &before, c.mode, c.at, c.by).await?;
    tx.later(
        "update run",
        "UPDATE runs SET status = $2, mode = $3, updated_at = $4 WHERE id = $1",
        &[&c.run_id, &c.status.as_str(), &c.mode, &c.at],
    )
    .await?;
    items::sync(tx, c.run_id, c.open, c.at, c.by).await?;
    if let Some((kind, data)) = &c.event {
        log::event(tx, c.run_id, c.at, *kind, data).await?;
    }
    Ok(tail)
}

pub(super) async fn snapshot_version(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
) -> Result<i64, StoreError> {
    let newest: Option<Option<i64>> = tx
        .row(
            "snapshot version",
            "SELECT MAX(version) FROM run_snapshots WHERE run_id = $1",
            &[&run_id],
            |r| r.get(0),
        )
        .await?;
    newest.flatten().ok_or_else(unknown(run_id))
}

/// A run's newest snapshot and its conversation, and the conversation's tail.
pub(super) async fn load(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
) -> Result<(StoredRun, Tail), StoreError> {
    let (version, state, count, schema_version): (i64, String, i64, i64) = tx
        .one(
            "load snapshot",
            "SELECT version, state, message_count, schema_version FROM run_snapshots
             WHERE run_id = $1 ORDER BY version DESC LIMIT 1",
            &[&run_id],
            unknown(run_id),
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .await?;
    let schema_version = u32::try_from(schema_version).map_err(|_| StoreError::Corrupt {
        run_id: run_id.to_owned(),
        message: format!("snapshot schema version {schema_version} is out of range"),
    })?;
    let (messages, tail) = conversation::read(tx, run_id, count).await?;
    let run = StoredRun {
        version,
        schema_version,
        state,
        messages,
    };
    Ok((run, tail))
}

pub(super) async fn snapshot_count(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
) -> Result<i64, StoreError> {
    let count = tx
        .row(
            "count snapshots",
            "SELECT COUNT(*) FROM run_snapshots WHERE run_id = $1",
            &[&run_id],
            |r| r.get(0),
        )
        .await?;
    Ok(count.unwrap_or(0))
}
