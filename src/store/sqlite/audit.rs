//! `audit`: the append-only trail of submissions, comments, edits, decisions and mode switches,
//! each entry chained to the one before by its hash. Written inside the transaction of what it
//! records, so the trail and the store never disagree.

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;

use super::query;
use crate::store::{AuditRow, StoreError};

pub(super) use crate::store::AuditEntry as Entry;

pub(super) fn append(tx: &Connection, entry: Entry<'_>) -> Result<(), StoreError> {
    let last: Option<(i64, String)> = tx
        .query_row(
            "SELECT id, hash FROM audit ORDER BY id DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(query("read the audit trail"))?;
    let (id, prev) = match last {
        Some((id, hash)) => (id + 1, hash),
        None => (1, String::new()),
    };
    let hash = entry.hash(&prev, id);
    tx.prepare_cached(
        "INSERT INTO audit (id, at, actor, process, run_id, kind, revision_sha, data, prev_hash, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![
            id,
            entry.at,
            entry.actor,
            entry.process,
            entry.run_id,
            entry.kind.as_str(),
            entry.revision_sha,
            entry.data.to_string(),
            prev,
            hash
        ])
    })
    .map_err(query("append to the audit trail"))?;
    crate::store::anchor::appended();
    Ok(())
}

/// The ids and hashes of the entries from `first` on, oldest first: read in the transaction
/// that appended, for the record of the trail's head (`AuditAnchor::advance`).
pub(super) fn since(conn: &Connection, first: i64) -> Result<Vec<(i64, String)>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT id, hash FROM audit WHERE id >= ?1 ORDER BY id")
        .map_err(query("read the audit trail"))?;
    let rows = stmt
        .query_map([first], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(query("read the audit trail"))?;
    rows.collect::<Result<_, _>>()
        .map_err(query("read the audit trail"))
}

/// The trail (of one run, or all), oldest first.
pub(super) fn list(conn: &Connection, run_id: Option<&str>) -> Result<Vec<AuditRow>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, at, actor, process, run_id, kind, revision_sha, data, prev_hash, hash
             FROM audit WHERE ?1 IS NULL OR run_id = ?1 ORDER BY id",
        )
        .map_err(query("read the audit trail"))?;
    let rows = stmt
        .query_map([run_id], |r| {
            let data: String = r.get(7)?;
            Ok(AuditRow {
                id: r.get(0)?,
                at: r.get(1)?,
                actor: r.get(2)?,
                process: r.get(3)?,
                run_id: r.get(4)?,
                kind: r.get(5)?,
                revision_sha: r.get(6)?,
                // A row altered into invalid JSON still hashes as its text.
                data: serde_json::from_str(&data).unwrap_or(Value::String(data)),
                prev_hash: r.get(8)?,
                hash: r.get(9)?,
            })
        })
        .map_err(query("read the audit trail"))?;
    rows.collect::<Result<_, _>>()
        .map_err(query("read the audit trail"))
}
