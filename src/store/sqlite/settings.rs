//! `settings`: small named values (the default model, the app's preferences). Never secrets.

use rusqlite::{params, Connection, OptionalExtension};

use super::query;
use crate::clock::Millis;
use crate::store::StoreError;

pub(super) fn get(conn: &Connection, key: &str) -> Result<Option<String>, StoreError> {
    conn.query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
        r.get(0)
    })
    .optional()
    .map_err(query("read a setting"))
}

pub(super) fn set(
    tx: &Connection,
    key: &str,
    value: Option<&str>,
    at: Millis,
) -> Result<(), StoreError> {
    match value {
        Some(value) => tx.execute(
            "INSERT INTO settings (key, value, updated_at) VALUES (?1, ?2, ?3)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            params![key, value, at],
        ),
        None => tx.execute("DELETE FROM settings WHERE key = ?1", [key]),
    }
    .map(drop)
    .map_err(query("save a setting"))
}
