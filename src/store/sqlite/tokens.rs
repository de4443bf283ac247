//! `tokens`: the bearer tokens of `plandesk serve`, by name, each kept as the SHA-256 of its
//! secret. Creating and revoking one is audited in the same transaction.

use rusqlite::{params, Connection, OptionalExtension, Row};
use serde_json::json;

use super::{audit, query};
use crate::clock::Millis;
use crate::store::{Actor, AuditKind, NewToken, StoreError, TokenRow};

const COLUMNS: &str = "name, created_at, created_by, revoked_at";

fn row(r: &Row<'_>) -> rusqlite::Result<TokenRow> {
    Ok(TokenRow {
        name: r.get(0)?,
        created_at: r.get(1)?,
        created_by: r.get(2)?,
        revoked_at: r.get(3)?,
    })
}

/// The audit entry of a token change: not about a run, so its run id is empty.
fn audited(
    tx: &Connection,
    kind: AuditKind,
    name: &str,
    by: &Actor,
    at: Millis,
) -> Result<(), StoreError> {
    audit::append(
        tx,
        audit::Entry {
            at,
            actor: &by.name,
            process: &by.process,
            run_id: "",
            kind,
            revision_sha: None,
            data: json!({"token": name}),
        },
    )
}

pub(super) fn create(tx: &Connection, token: &NewToken<'_>) -> Result<TokenRow, StoreError> {
    let active: Option<i64> = tx
        .query_row(
            "SELECT id FROM tokens WHERE name = ?1 AND revoked_at IS NULL",
            [token.name],
            |r| r.get(0),
        )
        .optional()
        .map_err(query("look up a token by name"))?;
    if active.is_some() {
        return Err(StoreError::TokenExists(token.name.to_owned()));
    }
    tx.execute(
        "INSERT INTO tokens (name, sha256, created_at, created_by) VALUES (?1, ?2, ?3, ?4)",
        params![token.name, token.sha256, token.at, token.by.name],
    )
    .map_err(query("create a token"))?;
    audited(tx, AuditKind::TokenCreated, token.name, token.by, token.at)?;
    Ok(TokenRow {
        name: token.name.to_owned(),
        created_at: token.at,
        created_by: token.by.name.clone(),
        revoked_at: None,
    })
}

pub(super) fn all(conn: &Connection) -> Result<Vec<TokenRow>, StoreError> {
    let mut stmt = conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM tokens ORDER BY id"))
        .map_err(query("list tokens"))?;
    let rows = stmt.query_map([], row).map_err(query("list tokens"))?;
    rows.collect::<Result<_, _>>().map_err(query("list tokens"))
}

pub(super) fn revoke(
    tx: &Connection,
    name: &str,
    by: &Actor,
    at: Millis,
) -> Result<TokenRow, StoreError> {
    let changed = tx
        .execute(
            "UPDATE tokens SET revoked_at = ?2, revoked_by = ?3 WHERE name = ?1 AND revoked_at IS NULL",
            params![name, at, by.name],
        )
        .map_err(query("revoke a token"))?;
    if changed == 0 {
        return Err(StoreError::UnknownToken(name.to_owned()));
    }
    audited(tx, AuditKind::TokenRevoked, name, by, at)?;
    tx.query_row(
        &format!("SELECT {COLUMNS} FROM tokens WHERE name = ?1 AND revoked_at = ?2 ORDER BY id DESC LIMIT 1"),
        params![name, at],
        row,
    )
    .map_err(query("read a revoked token"))
}

pub(super) fn active(conn: &Connection, sha256: &str) -> Result<Option<TokenRow>, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM tokens WHERE sha256 = ?1 AND revoked_at IS NULL"
    ))
    .and_then(|mut stmt| stmt.query_row([sha256], row).optional())
    .map_err(query("look up a token"))
}
