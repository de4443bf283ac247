//! `run_snapshots` (versioned, never overwritten) and `messages` (the conversation, append-only):
//! a commit writes both, with the run's open items and an event, in one transaction.

use rusqlite::{params, Connection, OptionalExtension};

use super::{events, items, query, runs};
use crate::store::*;

/// Writes one move of a run; refused if another writer committed since `expect_version`.
pub(super) fn commit(tx: &Connection, c: &Commit<'_>) -> Result<(), StoreError> {
    let newest: i64 = tx
        .query_row(
            "SELECT COALESCE(MAX(version), 0) FROM run_snapshots WHERE run_id = ?1",
            [c.run_id],
            |r| r.get(0),
        )
        .map_err(query("find newest snapshot"))?;
    if newest != c.expect_version {
        return Err(StoreError::Conflict {
            run_id: c.run_id.to_owned(),
            expected: c.expect_version,
            found: newest,
        });
    }
    let stored: i64 = tx
        .query_row(
            "SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE run_id = ?1",
            [c.run_id],
            |r| r.get(0),
        )
        .map_err(query("count messages"))?;
    let first = c.message_count - c.new_messages.len() as i64;
    if first != stored {
        return Err(StoreError::Invalid {
            run_id: c.run_id.to_owned(),
            message: format!("{stored} messages are stored but the commit appends from {first}"),
        });
    }
    {
        let mut insert = tx
            .prepare_cached("INSERT INTO messages (run_id, seq, message) VALUES (?1, ?2, ?3)")
            .map_err(query("append message"))?;
        for (offset, message) in c.new_messages.iter().enumerate() {
            insert
                .execute(params![c.run_id, first + offset as i64, message])
                .map_err(query("append message"))?;
        }
    }
    tx.execute(
        "INSERT INTO run_snapshots (run_id, version, schema_version, message_count, state, saved_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            c.run_id,
            c.expect_version + 1,
            c.schema_version,
            c.message_count,
            c.state,
            c.at
        ],
    )
    .map_err(query("insert snapshot"))?;
    let before = runs::mode(tx, c.run_id)?;
    runs::log_mode_switch(tx, c.run_id, &before, c.mode, c.at, c.by)?;
    runs::update(tx, c.run_id, c.status, c.mode, c.at)?;
    items::sync(tx, c.run_id, c.open, c.at, c.by)?;
    if let Some((kind, data)) = &c.event {
        events::insert(tx, c.run_id, c.at, *kind, data)?;
    }
    Ok(())
}

pub(super) fn load(conn: &Connection, run_id: &str) -> Result<StoredRun, StoreError> {
    let row: Option<(i64, String, i64, u32)> = conn
        .query_row(
            "SELECT version, state, message_count, schema_version FROM run_snapshots
             WHERE run_id = ?1 ORDER BY version DESC LIMIT 1",
            [run_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()
        .map_err(query("load snapshot"))?;
    let (version, state, count, schema_version) =
        row.ok_or_else(|| StoreError::UnknownRun(run_id.to_owned()))?;
    let mut stmt = conn
        .prepare_cached("SELECT message FROM messages WHERE run_id = ?1 AND seq < ?2 ORDER BY seq")
        .map_err(query("load messages"))?;
    let messages: Vec<String> = stmt
        .query_map(params![run_id, count], |r| r.get(0))
        .map_err(query("load messages"))?
        .collect::<Result<_, _>>()
        .map_err(query("load messages"))?;
    if messages.len() as i64 != count {
        return Err(StoreError::Corrupt {
            run_id: run_id.to_owned(),
            message: format!("{count} messages expected, {} stored", messages.len()),
        });
    }
    Ok(StoredRun {
        version,
        schema_version,
        state,
        messages,
    })
}

pub(super) fn version(conn: &Connection, run_id: &str) -> Result<i64, StoreError> {
    conn.query_row(
        "SELECT MAX(version) FROM run_snapshots WHERE run_id = ?1",
        [run_id],
        |r| r.get::<_, Option<i64>>(0),
    )
    .map_err(query("snapshot version"))?
    .ok_or_else(|| StoreError::UnknownRun(run_id.to_owned()))
}

pub(super) fn count(conn: &Connection, run_id: &str) -> Result<i64, StoreError> {
    conn.query_row(
        "SELECT COUNT(*) FROM run_snapshots WHERE run_id = ?1",
        [run_id],
        |r| r.get(0),
    )
    .map_err(query("count snapshots"))
}
