//! The `runs` table: one row per run (or outside agent session), with the lease of whoever
//! drives it now.

use rusqlite::{params, Connection, OptionalExtension};

use super::{audit, query, word};
use crate::clock::Millis;
use crate::store::*;

const COLUMNS: &str = "SELECT id, prompt, model, mode, status, workspace, source, session, \
                       holder, lease_until, created_at, updated_at FROM runs";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    let holder: Option<String> = r.get(8)?;
    let until: Option<Millis> = r.get(9)?;
    Ok(RunRow {
        id: r.get(0)?,
        prompt: r.get(1)?,
        model: r.get(2)?,
        mode: r.get(3)?,
        status: word(RunStatus::parse, r.get(4)?, 4)?,
        workspace: r.get(5)?,
        source: Source {
            kind: word(SourceKind::parse, r.get(6)?, 6)?,
            session: r.get(7)?,
        },
        holder: holder.zip(until),
        created_at: r.get(10)?,
        updated_at: r.get(11)?,
    })
}

pub(super) fn insert(tx: &Connection, run: &NewRun<'_>, at: Millis) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO runs (id, prompt, model, mode, status, workspace, source, session, created_at, updated_at)
         VALUES (?1, ?2, ?3, '', ?4, ?5, ?6, ?7, ?8, ?8)",
        params![
            run.id,
            run.prompt,
            run.model,
            RunStatus::Running.as_str(),
            run.workspace,
            run.source.kind.as_str(),
            run.source.session,
            at
        ],
    )
    .map_err(query("insert run"))?;
    Ok(())
}

/// The run of an outside session, created (suspended, waiting on its first plan) if new.
pub(super) fn session(tx: &Connection, run: &NewRun<'_>, at: Millis) -> Result<String, StoreError> {
    let existing: Option<String> = tx
        .query_row(
            "SELECT id FROM runs WHERE source = ?1 AND session = ?2",
            params![run.source.kind.as_str(), run.source.session],
            |r| r.get(0),
        )
        .optional()
        .map_err(query("find session"))?;
    if let Some(id) = existing {
        return Ok(id);
    }
    insert(tx, run, at)?;
    Ok(run.id.to_owned())
}

/// An outside session's run is suspended while an item is open, else running (its agent works).
pub(super) fn settle_session(tx: &Connection, run_id: &str, at: Millis) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE runs SET updated_at = ?2, status = CASE WHEN EXISTS
             (SELECT 1 FROM pending WHERE run_id = ?1) THEN 'suspended' ELSE 'running' END
         WHERE id = ?1 AND source != 'engine'",
        params![run_id, at],
    )
    .map_err(query("settle session"))?;
    Ok(())
}

/// Records a run's new status and mode (part of a commit).
pub(super) fn update(
    tx: &Connection,
    run_id: &str,
    status: RunStatus,
    mode: &str,
    at: Millis,
) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE runs SET status = ?2, mode = ?3, updated_at = ?4 WHERE id = ?1",
        params![run_id, status.as_str(), mode, at],
    )
    .map_err(query("update run"))?;
    Ok(())
}

/// The run's mode as stored.
pub(super) fn mode(tx: &Connection, run_id: &str) -> Result<String, StoreError> {
    tx.query_row("SELECT mode FROM runs WHERE id = ?1", [run_id], |r| {
        r.get(0)
    })
    .map_err(query("read run mode"))
}

/// Logs a switch of the run's mode from `before` to `to` in the audit trail, if it is one (a
/// run's first mode is set, not switched).
pub(super) fn log_mode_switch(
    tx: &Connection,
    run_id: &str,
    before: &str,
    to: &str,
    at: Millis,
    by: &Actor,
) -> Result<(), StoreError> {
    match audit::Entry::mode_switch(run_id, before, to, at, by) {
        Some(entry) => audit::append(tx, entry),
        None => Ok(()),
    }
}

/// Switches the run's mode to `to` with the decision that switches it, and logs it.
pub(super) fn switch_mode(
    tx: &Connection,
    run_id: &str,
    to: &str,
    at: Millis,
    by: &Actor,
) -> Result<(), StoreError> {
    log_mode_switch(tx, run_id, &mode(tx, run_id)?, to, at, by)?;
    tx.execute(
        "UPDATE runs SET mode = ?2 WHERE id = ?1",
        params![run_id, to],
    )
    .map_err(query("switch run mode"))?;
    Ok(())
}

pub(super) fn one(conn: &Connection, run_id: &str) -> Result<RunRow, StoreError> {
    conn.query_row(&format!("{COLUMNS} WHERE id = ?1"), [run_id], row)
        .optional()
        .map_err(query("load run"))?
        .ok_or_else(|| StoreError::UnknownRun(run_id.to_owned()))
}

/// The order runs are listed in: most recently active first.
const LATEST_FIRST: &str = "ORDER BY updated_at DESC, id";

pub(super) fn latest(conn: &Connection) -> Result<Option<RunRow>, StoreError> {
    conn.query_row(&format!("{COLUMNS} {LATEST_FIRST} LIMIT 1"), [], row)
        .optional()
        .map_err(query("load the latest run"))
}

pub(super) fn all(conn: &Connection) -> Result<Vec<RunRow>, StoreError> {
    let mut stmt = conn
        .prepare_cached(&format!("{COLUMNS} {LATEST_FIRST}"))
        .map_err(query("list runs"))?;
    let rows = stmt.query_map([], row).map_err(query("list runs"))?;
    rows.collect::<Result<_, _>>().map_err(query("list runs"))
}

pub(super) fn resolve(conn: &Connection, prefix: &str) -> Result<String, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id FROM runs WHERE id = ?1 OR (length(?1) >= 4 AND substr(id, 1, length(?1)) = ?1)
             ORDER BY id = ?1 DESC LIMIT 6",
        )
        .map_err(query("resolve run"))?;
    let ids: Vec<String> = stmt
        .query_map([prefix], |r| r.get(0))
        .map_err(query("resolve run"))?
        .collect::<Result<_, _>>()
        .map_err(query("resolve run"))?;
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
pub(super) fn claim(
    tx: &Connection,
    run_id: &str,
    lease: &Lease<'_>,
) -> Result<ClaimOutcome, StoreError> {
    let claimed = tx
        .execute(
            "UPDATE runs SET holder = ?2, lease_until = ?3
             WHERE id = ?1 AND (holder IS NULL OR lease_until IS NULL OR lease_until < ?4)",
            params![run_id, lease.holder, lease.until, lease.now],
        )
        .map_err(query("claim run"))?;
    if claimed == 1 {
        return Ok(ClaimOutcome::Claimed);
    }
    let run = one(tx, run_id)?;
    Ok(match run.holder {
        Some((holder, until)) => ClaimOutcome::Held { holder, until },
        // Released between the two statements (impossible inside one write transaction).
        None => ClaimOutcome::Held {
            holder: String::new(),
            until: lease.now,
        },
    })
}

pub(super) fn take_over(
    tx: &Connection,
    run_id: &str,
    holder: &str,
    lease: &Lease<'_>,
) -> Result<bool, StoreError> {
    let changed = tx
        .execute(
            "UPDATE runs SET holder = ?3, lease_until = ?4 WHERE id = ?1 AND holder = ?2",
            params![run_id, holder, lease.holder, lease.until],
        )
        .map_err(query("take over run"))?;
    Ok(changed == 1)
}

pub(super) fn renew(tx: &Connection, run_id: &str, lease: &Lease<'_>) -> Result<bool, StoreError> {
    let changed = tx
        .execute(
            "UPDATE runs SET lease_until = ?3 WHERE id = ?1 AND holder = ?2",
            params![run_id, lease.holder, lease.until],
        )
        .map_err(query("renew lease"))?;
    Ok(changed == 1)
}

pub(super) fn release(tx: &Connection, run_id: &str, holder: &str) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE runs SET holder = NULL, lease_until = NULL WHERE id = ?1 AND holder = ?2",
        params![run_id, holder],
    )
    .map_err(query("release run"))?;
    Ok(())
}
