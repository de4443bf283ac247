//! Bearer tokens for `plandesk serve`: agents on other machines present one on every request.
//! A token is a name (which machine or agent it is for) and a secret of 32 random bytes, shown
//! once when it is created; the store keeps only the secret's SHA-256, and a request is let in
//! when the hash of what it carries is the hash of an active token.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::clock::Clock;
use crate::store::{Actor, NewToken, Store, StoreError};

/// A token as listed: its name, who made it and when, and whether it is revoked (never a secret).
pub use crate::store::TokenRow;

/// What every secret starts with, so that a leaked one is recognisable (secret scanners, logs).
pub const PREFIX: &str = "pdt_";
/// The longest token name.
pub const MAX_NAME: usize = 64;
/// The longest `Authorization` value looked at; anything longer is not one of ours.
const MAX_HEADER: usize = 256;

/// Who a request to `plandesk serve` was let in as: the token it carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The token's name, what its plans are submitted as.
    pub name: String,
    /// The token itself (a revoked token's name may be given to a new one).
    pub token_id: i64,
}

impl Caller {
    /// The request was let in with `row`.
    pub fn of(row: &TokenRow) -> Self {
        Self {
            name: row.name.clone(),
            token_id: row.id,
        }
    }

    /// The one token this caller came with, among every token there ever was.
    pub fn token_key(&self) -> String {
        token_key(self.token_id)
    }
}

/// A token's key (see [`Caller::token_key`]).
pub fn token_key(id: i64) -> String {
    format!("token-{id}")
}

pub struct TokenSecret(String);

impl TokenSecret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for TokenSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenSecret([redacted])")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error(
        "`{name}` is not a token name: {reason} (use 1 to {MAX_NAME} letters, digits, `.`, `_` \
         or `-`, starting with a letter or digit)"
    )]
    BadName { name: String, reason: &'static str },
    #[error("cannot draw random bytes for a token secret: {0}")]
    Random(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The SHA-256 (lowercase hex) of a secret, as stored.
pub fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Checks a token name: it is shown in the audit trail and on the command line.
pub fn check_name(name: &str) -> Result<(), TokenError> {
    let bad = |reason| {
        Err(TokenError::BadName {
            name: crate::text::short(name, MAX_NAME + 8),
            reason,
        })
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > MAX_NAME {
        return bad("it is too long");
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return bad("it does not start with a letter or digit");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return bad("it has a character other than letters, digits, `.`, `_` and `-`");
    }
    Ok(())
}

/// The secret a `Authorization` header carries (`Bearer <secret>`, scheme case-insensitive),
/// if it is well formed; `None` for anything else.
pub fn bearer(header: &str) -> Option<&str> {
    if header.len() > MAX_HEADER {
        return None;
    }
    let (scheme, secret) = header.split_once(' ')?;
    let secret = secret.trim();
    let well_formed = scheme.eq_ignore_ascii_case("bearer")
        && secret.starts_with(PREFIX)
        && secret.len() > PREFIX.len()
        && secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    well_formed.then_some(secret)
}

/// Token management and checks over the store.
#[derive(Debug, Clone)]
pub struct Tokens {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    actor: Actor,
}

impl Tokens {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, actor: Actor) -> Self {
        Self {
            store,
            clock,
            actor,
        }
    }

    /// Creates a token named `name`: the secret is returned here and never again.
    pub async fn create(&self, name: &str) -> Result<(TokenRow, TokenSecret), TokenError> {
        check_name(name)?;
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        let secret = TokenSecret(format!("{PREFIX}{}", hex::encode(bytes)));
        let row = self
            .store
            .create_token(&NewToken {
                name,
                sha256: &hash(secret.expose()),
                by: &self.actor,
                at: self.clock.now(),
            })
            .await?;
        Ok((row, secret))
    }

    /// Every token, active and revoked, oldest first (never a secret or hash).
    pub async fn list(&self) -> Result<Vec<TokenRow>, TokenError> {
        Ok(self.store.tokens().await?)
    }

    /// Revokes the active token named `name`.
    pub async fn revoke(&self, name: &str) -> Result<TokenRow, TokenError> {
        check_name(name)?;
        Ok(self
            .store
            .revoke_token(name, &self.actor, self.clock.now())
            .await?)
    }

    /// The active token an `Authorization` header value names; `None` when the header is
    /// malformed, or the token unknown or revoked.
    /// Whether the token `caller` came with is still active (not revoked since).
    pub async fn is_active(&self, caller: &Caller) -> Result<bool, TokenError> {
        Ok(self
            .store
            .tokens()
            .await?
            .iter()
            .any(|row| row.id == caller.token_id && row.revoked_at.is_none()))
    }

    pub async fn authenticate(&self, header: &str) -> Result<Option<TokenRow>, TokenError> {
        let Some(secret) = bearer(header) else {
            return Ok(None);
        };
        Ok(self.store.active_token(&hash(secret)).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_and_plain() {
        for good in ["laptop", "ci-runner.2", "A_b"] {
            check_name(good).unwrap();
        }
        for bad in ["", "-x", "a b", "é", "a/b", &"x".repeat(MAX_NAME + 1)] {
            let err = check_name(bad).unwrap_err();
            assert!(err.to_string().contains("not a token name"), "{err}");
        }
    }

    #[test]
    fn only_a_well_formed_bearer_header_is_looked_up() {
        assert_eq!(bearer("Bearer pdt_abc123"), Some("pdt_abc123"));
        assert_eq!(bearer("bearer pdt_abc123"), Some("pdt_abc123"));
        for bad in [
            "",
            "Bearer",
            "Bearer ",
            "Basic pdt_abc",
            "Bearer abc",
            "Bearer pdt_",
            "Bearer pdt_a b",
            "Bearer pdt_a\u{0}",
        ] {
            assert_eq!(bearer(bad), None, "{bad:?}");
        }
        let long = format!("Bearer {PREFIX}{}", "a".repeat(MAX_HEADER));
        assert_eq!(bearer(&long), None);
    }

    #[test]
    fn a_secret_is_never_printed_by_debug() {
        let secret = TokenSecret(format!("{PREFIX}deadbeef"));
        assert_eq!(format!("{secret:?}"), "TokenSecret([redacted])");
        assert_eq!(hash("a").len(), 64);
    }
}
