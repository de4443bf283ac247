//! `tokens`: the bearer tokens of `plandesk serve`, by name, each kept as the SHA-256 of its
//! secret. Creating and revoking one is audited in the same transaction.

use deadpool_postgres::GenericClient;
use serde_json::json;
use tokio_postgres::Row;

use super::{col, execute, log, row, rows, Tx};
use crate::clock::Millis;
use crate::store::{Actor, AuditKind, NewToken, StoreError, TokenRow};

const COLUMNS: &str = "name, created_at, created_by, revoked_at";

fn token(r: &Row) -> Result<TokenRow, StoreError> {
    Ok(TokenRow {
        name: col(r, 0)?,
        created_at: col(r, 1)?,
        created_by: col(r, 2)?,
        revoked_at: col(r, 3)?,
    })
}

/// The audit entry of a token change: not about a run, so its run id is empty.
async fn audited(
    tx: &Tx<'_>,
    kind: AuditKind,
    name: &str,
    by: &Actor,
    at: Millis,
) -> Result<(), StoreError> {
    log::append(
        tx,
        log::Entry {
            at,
            actor: &by.name,
            process: &by.process,
            run_id: "",
            kind,
            revision_sha: None,
            data: json!({"token": name}),
        },
    )
    .await
}

pub(super) async fn create(tx: &Tx<'_>, new: &NewToken<'_>) -> Result<TokenRow, StoreError> {
    let active = row(
        tx,
        "look up a token by name",
        "SELECT id FROM tokens WHERE name = $1 AND revoked_at IS NULL",
        &[&new.name],
    )
    .await?;
    if active.is_some() {
        return Err(StoreError::TokenExists(new.name.to_owned()));
    }
    execute(
        tx,
        "create a token",
        "INSERT INTO tokens (name, sha256, created_at, created_by) VALUES ($1, $2, $3, $4)",
        &[&new.name, &new.sha256, &new.at, &new.by.name],
    )
    .await?;
    audited(tx, AuditKind::TokenCreated, new.name, new.by, new.at).await?;
    Ok(TokenRow {
        name: new.name.to_owned(),
        created_at: new.at,
        created_by: new.by.name.clone(),
        revoked_at: None,
    })
}

pub(super) async fn all(c: &impl GenericClient) -> Result<Vec<TokenRow>, StoreError> {
    rows(
        c,
        "list tokens",
        &format!("SELECT {COLUMNS} FROM tokens ORDER BY id"),
        &[],
    )
    .await?
    .iter()
    .map(token)
    .collect()
}

pub(super) async fn revoke(
    tx: &Tx<'_>,
    name: &str,
    by: &Actor,
    at: Millis,
) -> Result<TokenRow, StoreError> {
    let revoked = row(
        tx,
        "revoke a token",
        &format!(
            "UPDATE tokens SET revoked_at = $2, revoked_by = $3
             WHERE name = $1 AND revoked_at IS NULL RETURNING {COLUMNS}"
        ),
        &[&name, &at, &by.name],
    )
    .await?
    .ok_or_else(|| StoreError::UnknownToken(name.to_owned()))?;
    audited(tx, AuditKind::TokenRevoked, name, by, at).await?;
    token(&revoked)
}

pub(super) async fn active(
    c: &impl GenericClient,
    sha256: &str,
) -> Result<Option<TokenRow>, StoreError> {
    row(
        c,
        "look up a token",
        &format!("SELECT {COLUMNS} FROM tokens WHERE sha256 = $1 AND revoked_at IS NULL"),
        &[&sha256],
    )
    .await?
    .map(|r| token(&r))
    .transpose()
}
