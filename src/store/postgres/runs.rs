//! `runs` (one row per run or outside agent session, with the lease of whoever drives it),
//! `run_snapshots` (versioned, never overwritten) and `messages` (append-only): a commit writes
//! them with the run's open items and an event, in one transaction.

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::{col, execute, items, log, row, rows, word, Tx};
use crate::clock::Millis;
use crate::store::*;

const COLUMNS: &str = "SELECT id, prompt, model, mode, status, workspace, source, session, \
                       holder, lease_until, created_at, updated_at FROM runs";

fn run(r: &Row) -> Result<RunRow, StoreError> {
    let holder: Option<String> = col(r, 8)?;
    let until: Option<Millis> = col(r, 9)?;
    Ok(RunRow {
        id: col(r, 0)?,
        prompt: col(r, 1)?,
        model: col(r, 2)?,
        mode: col(r, 3)?,
        status: word(RunStatus::parse, r, 4)?,
        workspace: col(r, 5)?,
        source: Source {
            kind: word(SourceKind::parse, r, 6)?,
            session: col(r, 7)?,
        },
        holder: holder.zip(until),
        created_at: col(r, 10)?,
        updated_at: col(r, 11)?,
    })
}

pub(super) async fn insert(tx: &Tx<'_>, new: &NewRun<'_>, at: Millis) -> Result<(), StoreError> {
    execute(
        tx,
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

/// The run of an outside session, created (suspended, waiting on its first plan) if new.
pub(super) async fn session(
    tx: &Tx<'_>,
    new: &NewRun<'_>,
    at: Millis,
) -> Result<String, StoreError> {
    let existing = row(
        tx,
        "find session",
        "SELECT id FROM runs WHERE source = $1 AND session = $2",
        &[&new.source.kind.as_str(), &new.source.session],
    )
    .await?;
    if let Some(existing) = existing {
        return col(&existing, 0);
    }
    insert(tx, new, at).await?;
    Ok(new.id.to_owned())
}

/// An outside session's run is suspended while an item is open, else running (its agent works).
pub(super) async fn settle_session(
    tx: &Tx<'_>,
    run_id: &str,
    at: Millis,
) -> Result<(), StoreError> {
    execute(
        tx,
        "settle session",
        "UPDATE runs SET updated_at = $2, status = CASE WHEN EXISTS
             (SELECT 1 FROM pending WHERE run_id = $1) THEN 'suspended' ELSE 'running' END
         WHERE id = $1 AND source != 'engine'",
        &[&run_id, &at],
    )
    .await?;
    Ok(())
}

pub(super) async fn one(c: &impl GenericClient, run_id: &str) -> Result<RunRow, StoreError> {
    match row(
        c,
        "load run",
        &format!("{COLUMNS} WHERE id = $1"),
        &[&run_id],
    )
    .await?
    {
        Some(r) => run(&r),
        None => Err(StoreError::UnknownRun(run_id.to_owned())),
    }
}

/// The order runs are listed in: most recently active first.
const LATEST_FIRST: &str = "ORDER BY updated_at DESC, id";

pub(super) async fn latest(c: &impl GenericClient) -> Result<Option<RunRow>, StoreError> {
    row(
        c,
        "load the latest run",
        &format!("{COLUMNS} {LATEST_FIRST} LIMIT 1"),
        &[],
    )
    .await?
    .as_ref()
    .map(run)
    .transpose()
}

pub(super) async fn all(c: &impl GenericClient) -> Result<Vec<RunRow>, StoreError> {
    rows(c, "list runs", &format!("{COLUMNS} {LATEST_FIRST}"), &[])
        .await?
        .iter()
        .map(run)
        .collect()
}

pub(super) async fn resolve(c: &impl GenericClient, prefix: &str) -> Result<String, StoreError> {
    let ids: Vec<String> = rows(
        c,
        "resolve run",
        "SELECT id FROM runs WHERE id = $1::text OR (length($1::text) >= 4 AND starts_with(id, $1::text))
         ORDER BY id = $1::text DESC, id LIMIT 6",
        &[&prefix],
    )
    .await?
    .iter()
    .map(|r| col(r, 0))
    .collect::<Result<_, _>>()?;
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
    tx: &Tx<'_>,
    run_id: &str,
    lease: &Lease<'_>,
) -> Result<ClaimOutcome, StoreError> {
    let claimed = execute(
        tx,
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
    tx: &Tx<'_>,
    run_id: &str,
    holder: &str,
    lease: &Lease<'_>,
) -> Result<bool, StoreError> {
    let changed = execute(
        tx,
        "take over run",
        "UPDATE runs SET holder = $3, lease_until = $4 WHERE id = $1 AND holder = $2",
        &[&run_id, &holder, &lease.holder, &lease.until],
    )
    .await?;
    Ok(changed == 1)
}

pub(super) async fn renew(
    tx: &Tx<'_>,
    run_id: &str,
    lease: &Lease<'_>,
) -> Result<bool, StoreError> {
    let changed = execute(
        tx,
        "renew lease",
        "UPDATE runs SET lease_until = $3 WHERE id = $1 AND holder = $2",
        &[&run_id, &lease.holder, &lease.until],
    )
    .await?;
    Ok(changed == 1)
}

pub(super) async fn release(tx: &Tx<'_>, run_id: &str, holder: &str) -> Result<(), StoreError> {
    execute(
        tx,
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
    tx: &Tx<'_>,
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
    tx: &Tx<'_>,
    run_id: &str,
    to: &str,
    at: Millis,
    by: &Actor,
) -> Result<(), StoreError> {
    let before = row(
        tx,
        "read run mode",
        "SELECT mode FROM runs WHERE id = $1",
        &[&run_id],
    )
    .await?
    .ok_or_else(|| StoreError::UnknownRun(run_id.to_owned()))?;
    log_mode_switch(tx, run_id, &col::<String>(&before, 0)?, to, at, by).await?;
    execute(
        tx,
        "switch run mode",
        "UPDATE runs SET mode = $2 WHERE id = $1",
        &[&run_id, &to],
    )
    .await?;
    Ok(())
}

/// Writes one move of a run; refused if another writer committed since `expect_version`.
pub(super) async fn commit(tx: &Tx<'_>, c: &Commit<'_>) -> Result<(), StoreError> {
    let counts = row(
        tx,
        "find newest snapshot",
        "SELECT (SELECT COALESCE(MAX(version), 0) FROM run_snapshots WHERE run_id = $1),
                (SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE run_id = $1),
                (SELECT mode FROM runs WHERE id = $1)",
        &[&c.run_id],
    )
    .await?
    .ok_or_else(|| StoreError::UnknownRun(c.run_id.to_owned()))?;
    let newest: i64 = col(&counts, 0)?;
    if newest != c.expect_version {
        return Err(StoreError::Conflict {
            run_id: c.run_id.to_owned(),
            expected: c.expect_version,
            found: newest,
        });
    }
    let stored: i64 = col(&counts, 1)?;
    let before: Option<String> = col(&counts, 2)?;
    let before = before.ok_or_else(|| StoreError::UnknownRun(c.run_id.to_owned()))?;
    let first = c.message_count - c.new_messages.len() as i64;
    if first != stored {
        return Err(StoreError::Invalid {
            run_id: c.run_id.to_owned(),
            message: format!("{stored} messages are stored but the commit appends from {first}"),
        });
    }
    if !c.new_messages.is_empty() {
        execute(
            tx,
            "append message",
            "INSERT INTO messages (run_id, seq, message)
             SELECT $1, $2 + n - 1, m FROM unnest($3::text[]) WITH ORDINALITY AS t(m, n)",
            &[&c.run_id, &first, &c.new_messages],
        )
        .await?;
    }
    execute(
        tx,
        "insert snapshot",
        "INSERT INTO run_snapshots (run_id, version, schema_version, message_count, state, saved_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
        &[
            &c.run_id,
            &(c.expect_version + 1),
            &i64::from(c.schema_version),
            &c.message_count,
            &c.state,
            &c.at,
        ],
    )
    .await?;
    log_mode_switch(tx, c.run_id, &before, c.mode, c.at, c.by).await?;
    execute(
        tx,
        "update run",
        "UPDATE runs SET status = $2, mode = $3, updated_at = $4 WHERE id = $1",
        &[&c.run_id, &c.status.as_str(), &c.mode, &c.at],
    )
    .await?;
    items::sync(tx, c.run_id, c.open, c.at, c.by).await?;
    if let Some((kind, data)) = &c.event {
        log::event(tx, c.run_id, c.at, *kind, data).await?;
    }
    Ok(())
}

pub(super) async fn snapshot_version(
    c: &impl GenericClient,
    run_id: &str,
) -> Result<i64, StoreError> {
    let newest: Option<i64> = match row(
        c,
        "snapshot version",
        "SELECT MAX(version) FROM run_snapshots WHERE run_id = $1",
        &[&run_id],
    )
    .await?
    {
        Some(r) => col(&r, 0)?,
        None => None,
    };
    newest.ok_or_else(|| StoreError::UnknownRun(run_id.to_owned()))
}

pub(super) async fn load(c: &impl GenericClient, run_id: &str) -> Result<StoredRun, StoreError> {
    let snapshot = row(
        c,
        "load snapshot",
        "SELECT version, state, message_count, schema_version FROM run_snapshots
         WHERE run_id = $1 ORDER BY version DESC LIMIT 1",
        &[&run_id],
    )
    .await?
    .ok_or_else(|| StoreError::UnknownRun(run_id.to_owned()))?;
    let count: i64 = col(&snapshot, 2)?;
    let schema_version: i64 = col(&snapshot, 3)?;
    let messages: Vec<String> = rows(
        c,
        "load messages",
        "SELECT message FROM messages WHERE run_id = $1 AND seq < $2 ORDER BY seq",
        &[&run_id, &count],
    )
    .await?
    .iter()
    .map(|r| col(r, 0))
    .collect::<Result<_, _>>()?;
    if messages.len() as i64 != count {
        return Err(StoreError::Corrupt {
            run_id: run_id.to_owned(),
            message: format!("{count} messages expected, {} stored", messages.len()),
        });
    }
    Ok(StoredRun {
        version: col(&snapshot, 0)?,
        schema_version: u32::try_from(schema_version).map_err(|_| StoreError::Corrupt {
            run_id: run_id.to_owned(),
            message: format!("snapshot schema version {schema_version} is out of range"),
        })?,
        state: col(&snapshot, 1)?,
        messages,
    })
}

pub(super) async fn snapshot_count(
    c: &impl GenericClient,
    run_id: &str,
) -> Result<i64, StoreError> {
    let r = row(
        c,
        "count snapshots",
        "SELECT COUNT(*) FROM run_snapshots WHERE run_id = $1",
        &[&run_id],
    )
    .await?;
    r.map_or(Ok(0), |r| col(&r, 0))
}
