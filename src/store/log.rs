//! `audit` (the append-only trail, each entry chained to the one before by its hash, written in
//! the transaction of what it records), `events` (each run's log), `settings`, and `tokens`
//! (the bearer tokens of `plandesk serve`, by name, each kept as the SHA-256 of its secret;
//! creating and revoking one is audited in the same transaction).

use serde_json::{json, Value};

use super::sql::{Conn, Row, Tx};
use super::{Actor, AuditKind, AuditRow, EventKind, EventRow, NewToken, StoreError, TokenRow};
use crate::clock::Millis;

pub(super) use super::AuditEntry as Entry;

/// Appends an entry; the write lock every transaction holds makes "the last entry" well defined.
pub(super) async fn append(tx: &mut Tx<impl Conn>, entry: Entry<'_>) -> Result<(), StoreError> {
    let last = tx
        .row(
            "read the audit trail",
            "SELECT id, hash FROM audit ORDER BY id DESC LIMIT 1",
            &[],
            |r| Ok((r.get::<i64>(0)? + 1, r.get::<String>(1)?)),
        )
        .await?;
    let (id, prev) = last.unwrap_or((1, String::new()));
    let hash = entry.hash(&prev, id);
    tx.execute(
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
    tx.appended = true;
    Ok(())
}

/// The ids and hashes of the entries from `first` on, oldest first: read in the transaction
/// that appended, for this machine's record of the trail's head (`AuditAnchor::advance`).
pub(super) async fn since(
    tx: &mut Tx<impl Conn>,
    first: i64,
) -> Result<Vec<(i64, String)>, StoreError> {
    tx.all(
        "read the audit trail",
        "SELECT id, hash FROM audit WHERE id >= $1 ORDER BY id",
        &[&first],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .await
}

/// The trail (of one run, or all), oldest first.
pub(super) async fn audit(
    tx: &mut Tx<impl Conn>,
    run_id: Option<&str>,
) -> Result<Vec<AuditRow>, StoreError> {
    tx.all(
        "read the audit trail",
        "SELECT id, at, actor, process, run_id, kind, revision_sha, data, prev_hash, hash
         FROM audit WHERE CAST($1 AS TEXT) IS NULL OR run_id = $1 ORDER BY id",
        &[&run_id],
        |r| {
            Ok(AuditRow {
                id: r.get(0)?,
                at: r.get(1)?,
                actor: r.get(2)?,
                process: r.get(3)?,
                run_id: r.get(4)?,
                kind: r.get(5)?,
                revision_sha: r.get(6)?,
                // A row altered into invalid JSON still hashes as its text.
                data: r.json(7)?,
                prev_hash: r.get(8)?,
                hash: r.get(9)?,
            })
        },
    )
    .await
}

pub(super) async fn event(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    at: Millis,
    kind: EventKind,
    data: &Value,
) -> Result<(), StoreError> {
    tx.execute(
        "append event",
        "INSERT INTO events (run_id, at, kind, data) VALUES ($1, $2, $3, $4)",
        &[&run_id, &at, &kind.as_str(), &data.to_string()],
    )
    .await?;
    Ok(())
}

pub(super) async fn events(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
) -> Result<Vec<EventRow>, StoreError> {
    tx.all(
        "list events",
        "SELECT id, run_id, at, kind, data FROM events WHERE run_id = $1 ORDER BY id",
        &[&run_id],
        |r| {
            Ok(EventRow {
                id: r.get(0)?,
                run_id: r.get(1)?,
                at: r.get(2)?,
                kind: r.get(3)?,
                data: r.json(4)?,
            })
        },
    )
    .await
}

pub(super) async fn setting(
    tx: &mut Tx<impl Conn>,
    key: &str,
) -> Result<Option<String>, StoreError> {
    tx.row(
        "read a setting",
        "SELECT value FROM settings WHERE key = $1",
        &[&key],
        |r| r.get(0),
    )
    .await
}

pub(super) async fn set_setting(
    tx: &mut Tx<impl Conn>,
    key: &str,
    value: Option<&str>,
    at: Millis,
) -> Result<(), StoreError> {
    match value {
        Some(value) => {
            tx.execute(
                "save a setting",
                "INSERT INTO settings (key, value, updated_at) VALUES ($1, $2, $3)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                &[&key, &value, &at],
            )
            .await?
        }
        None => {
            tx.execute(
                "save a setting",
                "DELETE FROM settings WHERE key = $1",
                &[&key],
            )
            .await?
        }
    };
    Ok(())
}

const TOKEN_COLUMNS: &str = "id, name, created_at, created_by, revoked_at";

fn token(r: &dyn Row) -> Result<TokenRow, StoreError> {
    Ok(TokenRow {
        id: r.get(0)?,
        name: r.get(1)?,
        created_at: r.get(2)?,
        created_by: r.get(3)?,
        revoked_at: r.get(4)?,
    })
}

/// The audit entry of a token change: not about a run, so its run id is empty.
async fn token_changed(
    tx: &mut Tx<impl Conn>,
    kind: AuditKind,
    name: &str,
    by: &Actor,
    at: Millis,
) -> Result<(), StoreError> {
    let entry = Entry {
        at,
        actor: &by.name,
        process: &by.process,
        run_id: "",
        kind,
        revision_sha: None,
        data: json!({"token": name}),
    };
    append(tx, entry).await
}

pub(super) async fn create_token(
    tx: &mut Tx<impl Conn>,
    new: &NewToken<'_>,
) -> Result<TokenRow, StoreError> {
    let active = tx
        .row(
            "look up a token by name",
            "SELECT id FROM tokens WHERE name = $1 AND revoked_at IS NULL",
            &[&new.name],
            |r| r.get::<i64>(0),
        )
        .await?;
    if active.is_some() {
        return Err(StoreError::TokenExists(new.name.to_owned()));
    }
    let id = tx
        .one(
            "create a token",
            "INSERT INTO tokens (name, sha256, created_at, created_by) VALUES ($1, $2, $3, $4)
             RETURNING id",
            &[&new.name, &new.sha256, &new.at, &new.by.name],
            || StoreError::Query {
                context: "create a token",
                message: "the insert returned no id".into(),
            },
            |r| r.get::<i64>(0),
        )
        .await?;
    token_changed(tx, AuditKind::TokenCreated, new.name, new.by, new.at).await?;
    Ok(TokenRow {
        id,
        name: new.name.to_owned(),
        created_at: new.at,
        created_by: new.by.name.clone(),
        revoked_at: None,
    })
}

pub(super) async fn tokens(tx: &mut Tx<impl Conn>) -> Result<Vec<TokenRow>, StoreError> {
    let sql = format!("SELECT {TOKEN_COLUMNS} FROM tokens ORDER BY id");
    tx.all("list tokens", &sql, &[], token).await
}

pub(super) async fn revoke_token(
    tx: &mut Tx<impl Conn>,
    name: &str,
    by: &Actor,
    at: Millis,
) -> Result<TokenRow, StoreError> {
    let sql = format!(
        "UPDATE tokens SET revoked_at = $2, revoked_by = $3
         WHERE name = $1 AND revoked_at IS NULL RETURNING {TOKEN_COLUMNS}"
    );
    let missing = || StoreError::UnknownToken(name.to_owned());
    let revoked = tx
        .one(
            "revoke a token",
            &sql,
            &[&name, &at, &by.name],
            missing,
            token,
        )
        .await?;
    token_changed(tx, AuditKind::TokenRevoked, name, by, at).await?;
    Ok(revoked)
}

pub(super) async fn active_token(
    tx: &mut Tx<impl Conn>,
    sha256: &str,
) -> Result<Option<TokenRow>, StoreError> {
    let sql =
        format!("SELECT {TOKEN_COLUMNS} FROM tokens WHERE sha256 = $1 AND revoked_at IS NULL");
    tx.row("look up a token", &sql, &[&sha256], token).await
}
