//! `audit` (the append-only trail, each entry chained to the one before by its hash, written in
//! the transaction of what it records), `events` (each run's log) and `settings`.

use deadpool_postgres::GenericClient;
use serde_json::Value;

use super::{col, execute, json, row, rows, Tx};
use crate::clock::Millis;
use crate::store::{AuditRow, EventKind, EventRow, StoreError};

pub(super) use crate::store::AuditEntry as Entry;

/// Appends an entry; the write lock every transaction holds makes "the last entry" well defined.
pub(super) async fn append(tx: &Tx<'_>, entry: Entry<'_>) -> Result<(), StoreError> {
    let last = row(
        tx,
        "read the audit trail",
        "SELECT id, hash FROM audit ORDER BY id DESC LIMIT 1",
        &[],
    )
    .await?;
    let (id, prev) = match last {
        Some(r) => (col::<i64>(&r, 0)? + 1, col::<String>(&r, 1)?),
        None => (1, String::new()),
    };
    let hash = entry.hash(&prev, id);
    execute(
        tx,
        "append to the audit trail",
        "INSERT INTO audit (id, at, actor, process, run_id, kind, revision_sha, data, prev_hash, hash)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        &[
            &id,
            &entry.at,
            &entry.actor,
            &entry.process,
            &entry.run_id,
            &entry.kind.as_str(),
            &entry.revision_sha,
            &entry.data.to_string(),
            &prev,
            &hash,
        ],
    )
    .await?;
    crate::store::anchor::appended();
    Ok(())
}

/// The ids and hashes of the entries from `first` on, oldest first: read in the transaction
/// that appended, for this machine's record of the trail's head (`AuditAnchor::advance`).
pub(super) async fn since(tx: &Tx<'_>, first: i64) -> Result<Vec<(i64, String)>, StoreError> {
    rows(
        tx,
        "read the audit trail",
        "SELECT id, hash FROM audit WHERE id >= $1 ORDER BY id",
        &[&first],
    )
    .await?
    .iter()
    .map(|r| Ok((col(r, 0)?, col(r, 1)?)))
    .collect()
}

/// The trail (of one run, or all), oldest first.
pub(super) async fn audit(
    c: &impl GenericClient,
    run_id: Option<&str>,
) -> Result<Vec<AuditRow>, StoreError> {
    rows(
        c,
        "read the audit trail",
        "SELECT id, at, actor, process, run_id, kind, revision_sha, data, prev_hash, hash
         FROM audit WHERE $1::text IS NULL OR run_id = $1 ORDER BY id",
        &[&run_id],
    )
    .await?
    .iter()
    .map(|r| {
        Ok(AuditRow {
            id: col(r, 0)?,
            at: col(r, 1)?,
            actor: col(r, 2)?,
            process: col(r, 3)?,
            run_id: col(r, 4)?,
            kind: col(r, 5)?,
            revision_sha: col(r, 6)?,
            data: json(r, 7)?,
            prev_hash: col(r, 8)?,
            hash: col(r, 9)?,
        })
    })
    .collect()
}

pub(super) async fn event(
    tx: &Tx<'_>,
    run_id: &str,
    at: Millis,
    kind: EventKind,
    data: &Value,
) -> Result<(), StoreError> {
    execute(
        tx,
        "append event",
        "INSERT INTO events (run_id, at, kind, data) VALUES ($1, $2, $3, $4)",
        &[&run_id, &at, &kind.as_str(), &data.to_string()],
    )
    .await?;
    Ok(())
}

pub(super) async fn events(
    c: &impl GenericClient,
    run_id: &str,
) -> Result<Vec<EventRow>, StoreError> {
    rows(
        c,
        "list events",
        "SELECT id, run_id, at, kind, data FROM events WHERE run_id = $1 ORDER BY id",
        &[&run_id],
    )
    .await?
    .iter()
    .map(|r| {
        Ok(EventRow {
            id: col(r, 0)?,
            run_id: col(r, 1)?,
            at: col(r, 2)?,
            kind: col(r, 3)?,
            data: json(r, 4)?,
        })
    })
    .collect()
}

pub(super) async fn setting(
    c: &impl GenericClient,
    key: &str,
) -> Result<Option<String>, StoreError> {
    row(
        c,
        "read a setting",
        "SELECT value FROM settings WHERE key = $1",
        &[&key],
    )
    .await?
    .map(|r| col(&r, 0))
    .transpose()
}

pub(super) async fn set_setting(
    tx: &Tx<'_>,
    key: &str,
    value: Option<&str>,
    at: Millis,
) -> Result<(), StoreError> {
    match value {
        Some(value) => {
            execute(
                tx,
                "save a setting",
                "INSERT INTO settings (key, value, updated_at) VALUES ($1, $2, $3)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                &[&key, &value, &at],
            )
            .await?
        }
        None => {
            execute(
                tx,
                "save a setting",
                "DELETE FROM settings WHERE key = $1",
                &[&key],
            )
            .await?
        }
    };
    Ok(())
}
