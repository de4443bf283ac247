//! API keys: read from the environment or the OS keyring, held in a type that never prints them.
//! Keys are never written to the store, to config files, to logs or into error messages.

use std::fmt;

/// The keyring service name every Plandesk key is filed under (the account is the provider).
pub const KEYRING_SERVICE: &str = "plandesk";

/// A provider's API key. `Debug` prints `[redacted]`; there is no `Display`, so a key cannot
/// end up in a formatted message by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// A key from text a person typed or an environment variable: surrounding whitespace is
    /// removed; an empty key is no key.
    pub fn new(raw: &str) -> Option<Self> {
        let key = raw.trim();
        (!key.is_empty()).then(|| Self(key.to_owned()))
    }

    /// The key itself, for the one place that needs it: the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `[redacted]` (servers echo keys back
    /// in error bodies).
    pub fn scrub(&self, text: &str) -> String {
        text.replace(&self.0, "[redacted]")
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// A provider whose key Plandesk can keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyProvider {
    OpenAi,
    Anthropic,
}

impl KeyProvider {
    pub const ALL: [KeyProvider; 2] = [KeyProvider::OpenAi, KeyProvider::Anthropic];

    pub fn name(self) -> &'static str {
        match self {
            KeyProvider::OpenAi => "openai",
            KeyProvider::Anthropic => "anthropic",
        }
    }

    pub fn env_var(self) -> &'static str {
        match self {
            KeyProvider::OpenAi => "OPENAI_API_KEY",
            KeyProvider::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    pub fn parse(name: &str) -> Result<Self, KeyError> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| KeyError::UnknownProvider(name.to_owned()))
    }
}

/// Where a key was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    Environment,
    Keyring,
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("unknown provider `{0}`: keys are kept for `openai` and `anthropic`")]
    UnknownProvider(String),
    #[error("no key given on standard input")]
    Empty,
    #[error(
        "no OS keyring service is available ({reason}); the key was not saved. \
         Set {env} in the environment instead"
    )]
    NoKeyring { reason: String, env: &'static str },
    #[error("no {provider} key is in the OS keyring")]
    NotFound { provider: &'static str },
    #[error("the OS keyring failed on the {provider} key: {reason}")]
    Keyring {
        provider: &'static str,
        reason: String,
    },
}

impl KeyError {
    pub fn code(&self) -> &'static str {
        match self {
            KeyError::UnknownProvider(_) | KeyError::Empty => "invalid-input",
            KeyError::NoKeyring { .. } => "no-keyring",
            KeyError::NotFound { .. } => "not-found",
            KeyError::Keyring { .. } => "keyring",
        }
    }
}

/// The provider's key: the environment first (it is what a person set for this shell), then the
/// OS keyring. `Ok(None)` when neither has one; a keyring that cannot be reached counts as empty,
/// its reason returned beside so an error can say why no key was found.
pub fn find_key(provider: KeyProvider) -> (Option<(ApiKey, KeySource)>, Option<String>) {
    if let Some(key) = env_key(provider) {
        return (Some((key, KeySource::Environment)), None);
    }
    match keyring_get(provider) {
        Ok(key) => (Some((key, KeySource::Keyring)), None),
        Err(KeyError::NotFound { .. }) => (None, None),
        Err(err) => (None, Some(err.to_string())),
    }
}

/// The provider's key from its environment variable, if set and not blank.
pub fn env_key(provider: KeyProvider) -> Option<ApiKey> {
    std::env::var(provider.env_var())
        .ok()
        .and_then(|v| ApiKey::new(&v))
}

/// Stores `key` in the OS keyring.
pub fn keyring_set(provider: KeyProvider, key: &ApiKey) -> Result<(), KeyError> {
    let key = key.clone();
    with_entry(provider, move |entry| entry.set_password(key.expose()))
}

/// Removes the provider's key from the OS keyring.
pub fn keyring_remove(provider: KeyProvider) -> Result<(), KeyError> {
    with_entry(provider, |entry| entry.delete_credential())
}

fn keyring_get(provider: KeyProvider) -> Result<ApiKey, KeyError> {
    let raw = with_entry(provider, |entry| entry.get_password())?;
    ApiKey::new(&raw).ok_or(KeyError::NotFound {
        provider: provider.name(),
    })
}

/// Runs one keyring operation on its own thread: the Secret Service client blocks on D-Bus and
/// must not run on (or nest inside) the caller's async runtime.
fn with_entry<T: Send + 'static>(
    provider: KeyProvider,
    op: impl FnOnce(&keyring::Entry) -> keyring::Result<T> + Send + 'static,
) -> Result<T, KeyError> {
    let result = std::thread::spawn(move || {
        keyring::Entry::new(KEYRING_SERVICE, provider.name()).and_then(|entry| op(&entry))
    })
    .join()
    .map_err(|_| KeyError::Keyring {
        provider: provider.name(),
        reason: "the keyring client panicked".into(),
    })?;
    result.map_err(|err| keyring_error(provider, err))
}

fn keyring_error(provider: KeyProvider, err: keyring::Error) -> KeyError {
    match err {
        keyring::Error::NoEntry => KeyError::NotFound {
            provider: provider.name(),
        },
        keyring::Error::PlatformFailure(inner) | keyring::Error::NoStorageAccess(inner) => {
            KeyError::NoKeyring {
                reason: unavailable_reason(&inner.to_string()),
                env: provider.env_var(),
            }
        }
        other => KeyError::Keyring {
            provider: provider.name(),
            reason: other.to_string(),
        },
    }
}

/// The Secret Service client's errors are D-Bus internals; a person needs to know which of the
/// two usual cases it is.
fn unavailable_reason(raw: &str) -> String {
    if raw.contains("ServiceUnknown") || raw.contains("org.freedesktop.secrets") {
        "no Secret Service (such as GNOME Keyring or KWallet) runs on the session bus".into()
    } else if raw.contains("Unavailable") || raw.contains("DBUS_SESSION_BUS_ADDRESS") {
        "no D-Bus session bus to reach a Secret Service on".into()
    } else {
        format!("the Secret Service said: {raw}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_key() {
        let key = ApiKey::new("  sk-live-1234567890\n").unwrap();
        let shown = format!("{key:?} {:?}", Some(&key));
        assert!(!shown.contains("sk-live"), "Debug leaked the key: {shown}");
        assert_eq!(key.expose(), "sk-live-1234567890", "whitespace is trimmed");
    }

    #[test]
    fn scrub_removes_echoed_keys() {
        let key = ApiKey::new("sk-abc").unwrap();
        assert_eq!(
            key.scrub("Incorrect API key provided: sk-abc."),
            "Incorrect API key provided: [redacted]."
        );
    }

    #[test]
    fn empty_keys_are_no_keys() {
        assert!(ApiKey::new(" \n").is_none());
    }
}
