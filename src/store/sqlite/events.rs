//! `events`: each run's append-only log of what happened to it.

use rusqlite::{params, Connection};
use serde_json::Value;

use super::query;
use crate::clock::Millis;
use crate::store::{EventKind, EventRow, StoreError};

pub(super) fn insert(
    tx: &Connection,
    run_id: &str,
    at: Millis,
    kind: EventKind,
    data: &Value,
) -> Result<(), StoreError> {
    tx.prepare_cached("INSERT INTO events (run_id, at, kind, data) VALUES (?1, ?2, ?3, ?4)")
        .and_then(|mut stmt| stmt.execute(params![run_id, at, kind.as_str(), data.to_string()]))
        .map_err(query("append event"))?;
    Ok(())
}

pub(super) fn of_run(conn: &Connection, run_id: &str) -> Result<Vec<EventRow>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, run_id, at, kind, data FROM events WHERE run_id = ?1 ORDER BY id",
        )
        .map_err(query("list events"))?;
    let rows = stmt
        .query_map([run_id], |r| {
            let data: String = r.get(4)?;
            Ok(EventRow {
                id: r.get(0)?,
                run_id: r.get(1)?,
                at: r.get(2)?,
                kind: r.get(3)?,
                data: serde_json::from_str(&data).unwrap_or(Value::String(data)),
            })
        })
        .map_err(query("list events"))?;
    rows.collect::<Result<_, _>>().map_err(query("list events"))
}
