//! The tokens of `plandesk serve`. Agents on other machines present one on every request; a
//! reviewer's browser carries a session in a cookie, got once from a sign-in link of `plandesk
//! pair`. Each is a name (which machine, agent or person it is for) and a secret of 32 random
//! bytes, shown once when it is created; the store keeps only the secret's SHA-256, and a
//! request is let in when the hash of what it carries is the hash of an active, unexpired
//! token of the kind it must be.

use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::clock::{Clock, Millis};
use crate::store::{Actor, NewToken, Store, StoreError, TokenKey};

/// A token as listed: its kind and name, who made it and when, and whether it is revoked or
/// expired (never a secret).
pub use crate::store::TokenRow;
pub use crate::vocabulary::TokenKind;

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

    /// What this caller's sessions are kept under: its name and its token, so that a new
    /// token given a revoked one's name neither continues its plans nor reports work against
    /// the plan approved for it.
    pub fn session_owner(&self) -> String {
        format!("{}#{}", self.name, self.token_id)
    }
}

/// A token's key (see [`Caller::token_key`]).
pub fn token_key(id: i64) -> String {
    format!("token-{id}")
}

pub struct TokenSecret(String);

impl TokenSecret {
    /// A new secret: `prefix` and 32 random bytes in hex.
    fn new(prefix: &str) -> Result<Self, TokenError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        Ok(Self(format!("{prefix}{}", hex::encode(bytes))))
    }

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

    /// Creates an agent's token named `name`: the secret is returned here and never again.
    pub async fn create(&self, name: &str) -> Result<(TokenRow, TokenSecret), TokenError> {
        self.new_token(TokenKind::Agent, name, None).await
    }

    async fn new_token(
        &self,
        kind: TokenKind,
        name: &str,
        lifetime: Option<Duration>,
    ) -> Result<(TokenRow, TokenSecret), TokenError> {
        check_name(name)?;
        let secret = TokenSecret::new(prefix(kind))?;
        let at = self.clock.now();
        let row = self
            .store
            .create_token(&NewToken {
                kind,
                name,
                sha256: &hash(secret.expose()),
                by: &self.actor,
                at,
                expires_at: lifetime.map(|l| at + millis(l)),
            })
            .await?;
        Ok((row, secret))
    }

    /// Every token of every kind, active and revoked, oldest first (never a secret or hash).
    pub async fn list(&self) -> Result<Vec<TokenRow>, TokenError> {
        Ok(self.store.tokens().await?)
    }

    /// Revokes the active token of `kind` named `name` (for a session: signs it out).
    pub async fn revoke(&self, kind: TokenKind, name: &str) -> Result<TokenRow, TokenError> {
        check_name(name)?;
        self.store
            .revoke_token(kind, TokenKey::Name(name), &self.actor, self.clock.now())
            .await?
            .ok_or_else(|| StoreError::UnknownToken(kind, name.to_owned()).into())
    }

    /// Signs out the session whose secret is `secret` (that one, whatever its name names
    /// since); `false` if it had ended already.
    pub async fn sign_out(&self, secret: &str) -> Result<bool, TokenError> {
        let sha256 = hash(secret);
        let now = self.clock.now();
        let which = TokenKey::Sha256(&sha256);
        let revoked = self
            .store
            .revoke_token(TokenKind::Session, which, &self.actor, now);
        Ok(revoked.await?.is_some())
    }

    /// Whether the token `caller` came with is still active (not revoked since).
    pub async fn is_active(&self, caller: &Caller) -> Result<bool, TokenError> {
        Ok(self
            .store
            .tokens()
            .await?
            .iter()
            .any(|row| row.id == caller.token_id && row.revoked_at.is_none()))
    }

    /// The active agent's token an `Authorization` header value names; `None` when the header
    /// is malformed, or the token unknown or revoked.
    pub async fn authenticate(&self, header: &str) -> Result<Option<TokenRow>, TokenError> {
        let Some(secret) = bearer(header) else {
            return Ok(None);
        };
        self.active(TokenKind::Agent, secret).await
    }

    async fn active(&self, kind: TokenKind, secret: &str) -> Result<Option<TokenRow>, TokenError> {
        if !well_formed(secret, prefix(kind)) {
            return Ok(None);
        }
        let now = self.clock.now();
        Ok(self.store.active_token(kind, &hash(secret), now).await?)
    }

    /// A one-time sign-in link's secret for a reviewer to be called `name` (unique among
    /// active sessions and links), valid for [`PAIRING_LIFETIME`].
    pub async fn pair(&self, name: &str) -> Result<(TokenRow, TokenSecret), TokenError> {
        check_name(name)?;
        let now = self.clock.now();
        let signed_in =
            self.list().await?.into_iter().any(|row| {
                row.kind == TokenKind::Session && row.name == name && row.is_active(now)
            });
        if signed_in {
            return Err(StoreError::TokenExists(TokenKind::Session, name.to_owned()).into());
        }
        self.new_token(TokenKind::Pairing, name, Some(PAIRING_LIFETIME))
            .await
    }

    /// The sign-in link `secret` is, while it can still be used (neither used nor expired).
    pub async fn pairing(&self, secret: &str) -> Result<Option<TokenRow>, TokenError> {
        self.active(TokenKind::Pairing, secret).await
    }

    /// Uses the sign-in link `secret`: a new session (its secret returned here and never
    /// again), or `None` if the link was used, revoked, expired or never made.
    pub async fn redeem(
        &self,
        secret: &str,
    ) -> Result<Option<(TokenRow, TokenSecret)>, TokenError> {
        if !well_formed(secret, prefix(TokenKind::Pairing)) {
            return Ok(None);
        }
        let session = TokenSecret::new(prefix(TokenKind::Session))?;
        let at = self.clock.now();
        let row = self
            .store
            .redeem_pairing(
                &hash(secret),
                &NewToken {
                    kind: TokenKind::Session,
                    name: "",
                    sha256: &hash(session.expose()),
                    by: &Actor {
                        name: String::new(),
                        process: "web".into(),
                    },
                    at,
                    expires_at: Some(at + millis(SESSION_LIFETIME)),
                },
            )
            .await?;
        Ok(row.map(|row| (row, session)))
    }

    /// The active, unexpired session a cookie's value names.
    pub async fn session(&self, secret: &str) -> Result<Option<TokenRow>, TokenError> {
        self.active(TokenKind::Session, secret).await
    }
}

/// How long a sign-in link of `plandesk pair` can be used.
pub const PAIRING_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// How long a browser stays signed in.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(30 * 24 * 60 * 60);

fn millis(duration: Duration) -> Millis {
    Millis::try_from(duration.as_millis()).unwrap_or(Millis::MAX)
}

/// What a secret of each kind starts with: a secret is only ever looked up as its own kind's,
/// so an agent's token never opens a session, nor a session cookie submits a plan.
fn prefix(kind: TokenKind) -> &'static str {
    match kind {
        TokenKind::Agent => PREFIX,
        TokenKind::Pairing => "pdp_",
        TokenKind::Session => "pds_",
    }
}

/// Whether `secret` could be one of ours of the kind `prefix` names: the prefix, then 64 hex
/// digits.
fn well_formed(secret: &str, prefix: &str) -> bool {
    secret
        .strip_prefix(prefix)
        .is_some_and(|rest| rest.len() == 64 && rest.bytes().all(|b| b.is_ascii_hexdigit()))
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
