//! `audit` (the append-only trail, each entry chained to the one before by its hash, written in
//! the transaction of what it records), `events` (each run's log), `settings`, and `tokens`
//! (the bearer tokens of `plandesk serve`, by name, each kept as the SHA-256 of its secret;
//! creating and revoking one is audited in the same transaction).

use serde_json::{json, Value};

use super::sql::{self, Conn, Row, Tx};
use super::{Actor, EventRow, NewToken, StoreError, TokenKey, TokenRow};
use crate::audit::AuditRow;
use crate::clock::Millis;
use crate::vocabulary::{AuditKind, EventKind, TokenKind};

pub(super) use crate::audit::AuditEntry as Entry;

/// Appends an entry; the write lock every transaction holds makes "the last entry" well defined.
/// (A second entry in one transaction follows the first without reading the trail again.)
pub(super) async fn append(tx: &mut Tx<impl Conn>, entry: Entry<'_>) -> Result<(), StoreError> {
    if tx.trail.is_empty() {
        let last = tx
            .row(
                "read the audit trail",
                "SELECT id, hash FROM audit ORDER BY id DESC LIMIT 1",
                &[],
                |r| Ok((r.get::<i64>(0)?, r.get::<String>(1)?)),
            )
            .await?;
        tx.trail.extend(last);
    }
    let (id, prev) = match tx.trail.last() {
        Some((last, hash)) => (last + 1, hash.clone()),
        None => (1, String::new()),
    };
    let hash = entry.hash(&prev, id);
    tx.later(
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
    tx.trail.push((id, hash));
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
    let sql = format!(
        "SELECT id, at, actor, process, run_id, kind, revision_sha, data, prev_hash, hash
         FROM audit WHERE {} ORDER BY id",
        sql::of_run("run_id", 1, run_id)
    );
    tx.all("read the audit trail", &sql, &[&run_id], |r| {
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
    })
    .await
}

pub(super) async fn event(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    at: Millis,
    kind: EventKind,
    data: &Value,
) -> Result<(), StoreError> {
    tx.later(
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
            tx.later(
                "save a setting",
                "INSERT INTO settings (key, value, updated_at) VALUES ($1, $2, $3)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                &[&key, &value, &at],
            )
            .await?
        }
        None => {
            tx.later(
                "save a setting",
                "DELETE FROM settings WHERE key = $1",
                &[&key],
            )
            .await?
        }
    };
    Ok(())
}

const TOKEN_COLUMNS: &str = "id, kind, name, created_at, created_by, revoked_at, expires_at";

fn token(r: &dyn Row) -> Result<TokenRow, StoreError> {
    let kind: String = r.get(1)?;
    Ok(TokenRow {
        id: r.get(0)?,
        kind: TokenKind::parse(&kind).ok_or_else(|| StoreError::Query {
            context: "read a token",
            message: format!("unknown kind of token `{kind}`"),
        })?,
        name: r.get(2)?,
        created_at: r.get(3)?,
        created_by: r.get(4)?,
        revoked_at: r.get(5)?,
        expires_at: r.get(6)?,
    })
}

/// The audit entry of a token change: not about a run, so its run id is empty. An agent's
/// token is named as it always was; another kind says which.
async fn token_changed(
    tx: &mut Tx<impl Conn>,
    kind: AuditKind,
    token: (TokenKind, &str),
    by: &Actor,
    at: Millis,
) -> Result<(), StoreError> {
    let data = match token {
        (TokenKind::Agent, name) => json!({"token": name}),
        (kind, name) => json!({"token": name, "kind": kind.as_str()}),
    };
    let entry = Entry {
        at,
        actor: &by.name,
        process: &by.process,
        run_id: "",
        kind,
        revision_sha: None,
        data,
    };
    append(tx, entry).await
}

pub(super) async fn create_token(
    tx: &mut Tx<impl Conn>,
    new: &NewToken<'_>,
) -> Result<TokenRow, StoreError> {
    end_expired(tx, new.kind, new.name, new.at).await?;
    let active = tx
        .row(
            "look up a token by name",
            "SELECT id FROM tokens WHERE kind = $1 AND name = $2 AND revoked_at IS NULL",
            &[&new.kind.as_str(), &new.name],
            |r| r.get::<i64>(0),
        )
        .await?;
    if active.is_some() {
        return Err(StoreError::TokenExists(new.kind, new.name.to_owned()));
    }
    let id = tx
        .one(
            "create a token",
            "INSERT INTO tokens (kind, name, sha256, created_at, created_by, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            &[
                &new.kind.as_str(),
                &new.name,
                &new.sha256,
                &new.at,
                &new.by.name,
                &new.expires_at,
            ],
            || StoreError::Query {
                context: "create a token",
                message: "the insert returned no id".into(),
            },
            |r| r.get::<i64>(0),
        )
        .await?;
    let token = (new.kind, new.name);
    token_changed(tx, AuditKind::TokenCreated, token, new.by, new.at).await?;
    Ok(TokenRow {
        id,
        kind: new.kind,
        name: new.name.to_owned(),
        created_at: new.at,
        created_by: new.by.name.clone(),
        revoked_at: None,
        expires_at: new.expires_at,
    })
}

pub(super) async fn tokens(tx: &mut Tx<impl Conn>) -> Result<Vec<TokenRow>, StoreError> {
    let sql = format!("SELECT {TOKEN_COLUMNS} FROM tokens ORDER BY id");
    tx.all("list tokens", &sql, &[], token).await
}

pub(super) async fn revoke_token(
    tx: &mut Tx<impl Conn>,
    kind: TokenKind,
    which: TokenKey<'_>,
    by: &Actor,
    at: Millis,
) -> Result<Option<TokenRow>, StoreError> {
    let (column, value) = match which {
        TokenKey::Name(name) => ("name", name),
        TokenKey::Sha256(sha256) => ("sha256", sha256),
    };
    let sql = format!(
        "UPDATE tokens SET revoked_at = $3, revoked_by = $4
         WHERE kind = $1 AND {column} = $2 AND revoked_at IS NULL RETURNING {TOKEN_COLUMNS}"
    );
    let revoked = tx
        .row(
            "revoke a token",
            &sql,
            &[&kind.as_str(), &value, &at, &by.name],
            token,
        )
        .await?;
    if let Some(row) = &revoked {
        token_changed(tx, AuditKind::TokenRevoked, (kind, &row.name), by, at).await?;
    }
    Ok(revoked)
}

/// Ends what has expired of `kind` under `name` (its name is free again), as of `now`.
async fn end_expired(
    tx: &mut Tx<impl Conn>,
    kind: TokenKind,
    name: &str,
    now: Millis,
) -> Result<(), StoreError> {
    tx.later(
        "end expired tokens",
        "UPDATE tokens SET revoked_at = expires_at, revoked_by = 'expired'
         WHERE kind = $1 AND name = $2 AND revoked_at IS NULL AND expires_at <= $3",
        &[&kind.as_str(), &name, &now],
    )
    .await?;
    Ok(())
}

pub(super) async fn active_token(
    tx: &mut Tx<impl Conn>,
    kind: TokenKind,
    sha256: &str,
    now: Millis,
) -> Result<Option<TokenRow>, StoreError> {
    let sql = format!(
        "SELECT {TOKEN_COLUMNS} FROM tokens WHERE sha256 = $1 AND kind = $2
         AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $3)"
    );
    tx.row(
        "look up a token",
        &sql,
        &[&sha256, &kind.as_str(), &now],
        token,
    )
    .await
}

pub(super) async fn redeem_pairing(
    tx: &mut Tx<impl Conn>,
    pairing_sha256: &str,
    session: &NewToken<'_>,
) -> Result<Option<TokenRow>, StoreError> {
    // Used up by the update that finds it (of two redemptions at once, one finds nothing), by
    // the reviewer it names.
    let sql = format!(
        "UPDATE tokens SET revoked_at = $3, revoked_by = name
         WHERE sha256 = $1 AND kind = $2 AND revoked_at IS NULL AND expires_at > $3
         RETURNING {TOKEN_COLUMNS}"
    );
    let pairing = tx
        .row(
            "use a sign-in link",
            &sql,
            &[&pairing_sha256, &TokenKind::Pairing.as_str(), &session.at],
            token,
        )
        .await?;
    let Some(pairing) = pairing else {
        return Ok(None);
    };
    let reviewer = Actor {
        name: pairing.name.clone(),
        process: session.by.process.clone(),
    };
    let used = (TokenKind::Pairing, pairing.name.as_str());
    token_changed(tx, AuditKind::TokenRevoked, used, &reviewer, session.at).await?;
    let session = NewToken {
        name: &pairing.name,
        by: &reviewer,
        ..session.clone()
    };
    create_token(tx, &session).await.map(Some)
}
