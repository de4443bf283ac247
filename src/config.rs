//! Where a process keeps its data and which store it uses: configuration that hosts (the CLI,
//! the app, a hook) settle before anything is opened. The data folder comes from
//! `--data-dir`, else `PLANDESK_DATA_DIR`, else the user's data folder; the store from
//! `--store`, else `PLANDESK_STORE`, else the team store saved for that folder, else the
//! SQLite file in it.
//!
//! Hosts read and change this here, not in [`crate::store`]: which database a person chose is
//! their configuration, and the store's own types (rows, the `Store` trait) stay out of every
//! host.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::store::{postgres, PostgresStore, SqliteStore, Store, StoreError, DB_FILE};

pub const DATA_DIR_ENV: &str = "PLANDESK_DATA_DIR";
/// A shared store for a team: a `postgres://` URL (else the SQLite file in the data folder).
pub const STORE_ENV: &str = "PLANDESK_STORE";
/// The file in a data folder that names the team store its processes use (the app's Settings
/// writes it), so the app, the CLI and every hook on that folder agree.
pub const STORE_FILE: &str = "team-store";

/// Which store a process uses.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// The embedded SQLite file in this data folder (one person, one machine).
    Sqlite(PathBuf),
    /// A PostgreSQL database shared by a team (the URL may hold a password: never shown).
    /// Settings there are a person's own: `personal` names whose (their user, machine and data
    /// folder), so one reviewer's name or preferences never become another's. `data_dir` keeps
    /// this machine's record of the audit trail's head ([`AuditAnchor`]); `None` keeps none.
    Postgres {
        url: String,
        personal: String,
        data_dir: Option<PathBuf>,
    },
}

impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sqlite(dir) => f.debug_tuple("Sqlite").field(dir).finish(),
            Self::Postgres { personal, .. } => f
                .debug_struct("Postgres")
                .field("personal", personal)
                .finish_non_exhaustive(),
        }
    }
}

/// Whose settings these are on a shared store: this OS account on this machine (not
/// `PLANDESK_REVIEWER`, which names the person in the audit trail and may change by shell).
fn personal_scope() -> String {
    format!(
        "{}@{}",
        crate::actor::os_account(),
        crate::lease::host_name()
    )
}

impl StoreLocation {
    /// A team's PostgreSQL store, with this person's settings (on this machine), keeping no
    /// record of its audit trail's head ([`StoreLocation::choose`] keeps one in the data folder).
    pub fn postgres(url: impl Into<String>) -> Self {
        Self::Postgres {
            url: url.into(),
            personal: personal_scope(),
            data_dir: None,
        }
    }

    /// The store `--store` (else `PLANDESK_STORE`, else the team store saved for `data_dir`)
    /// names; without any, the SQLite file in `data_dir`. Anything but a `postgres://` URL is
    /// refused (without repeating it).
    pub fn choose(store: Option<&str>, data_dir: &Path) -> Result<Self, StoreError> {
        match named_store(store)
            .or_else(|| saved_team_store(data_dir))
            .as_deref()
        {
            None => Ok(Self::Sqlite(data_dir.to_owned())),
            Some(url) if postgres::is_postgres_url(url) => Ok(Self::Postgres {
                url: url.to_owned(),
                personal: format!("{}:{}", personal_scope(), data_dir.display()),
                data_dir: Some(data_dir.to_owned()),
            }),
            // Not repeated: whatever it is, it may hold a password.
            Some(_) => Err(StoreError::Open {
                path: PathBuf::from("named by --store or PLANDESK_STORE"),
                message: "a shared store is a PostgreSQL URL (postgres://user@host/database); \
                          leave it out to use the SQLite file in the data folder"
                    .into(),
            }),
        }
    }

    /// Where the store is, for people: the SQLite file, or the URL without its password.
    pub fn describe(&self) -> String {
        match self {
            Self::Sqlite(dir) => dir.join(DB_FILE).display().to_string(),
            Self::Postgres { url, .. } => postgres::redacted_url(url),
        }
    }

    /// Opens the store, creating or upgrading it.
    pub async fn open(&self) -> Result<Arc<dyn Store>, StoreError> {
        Ok(match self {
            Self::Sqlite(dir) => Arc::new(SqliteStore::open(dir)?),
            Self::Postgres {
                url,
                personal,
                data_dir,
            } => {
                let store = PostgresStore::open(url, personal).await?;
                match data_dir {
                    Some(dir) => Arc::new(store.with_audit_anchor(dir)),
                    None => Arc::new(store),
                }
            }
        })
    }
}

/// Where the store lives: `--data-dir`, else `PLANDESK_DATA_DIR`, else the user's data folder.
pub fn default_data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(DATA_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    dirs::data_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("plandesk")
}

/// The store named for this process: `--store` (`flag`), else `PLANDESK_STORE`; blank is none.
/// Named so, it wins over the one saved for the data folder.
pub fn named_store(flag: Option<&str>) -> Option<String> {
    let env = std::env::var(STORE_ENV).ok();
    flag.or(env.as_deref())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Checks a team store before it is saved, as a person gave it: a PostgreSQL URL without a
/// password ([`check_team_store`]) that can be reached now (its tables are made if new).
pub async fn reach_team_store(url: &str) -> Result<(), StoreError> {
    check_team_store(url)?;
    StoreLocation::postgres(url.trim()).open().await?;
    Ok(())
}

/// The team store saved for a data folder, if any.
pub fn saved_team_store(data_dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(data_dir.join(STORE_FILE)).ok()?;
    let url = text.trim();
    (!url.is_empty()).then(|| url.to_owned())
}

/// Checks a team store URL before it is saved: a PostgreSQL URL that parses, with no password.
pub fn check_team_store(url: &str) -> Result<(), StoreError> {
    postgres::check_saved_url(url)
}

/// Saves (or, with `None`, forgets) the team store of a data folder. Only a PostgreSQL URL
/// without a password is kept: passwords belong in PostgreSQL's own password file
/// (`~/.pgpass`) or `PGPASSWORD`, never in a file of ours.
pub fn save_team_store(data_dir: &Path, url: Option<&str>) -> Result<(), StoreError> {
    let path = data_dir.join(STORE_FILE);
    let failed = |e: std::io::Error| StoreError::Open {
        path: path.clone(),
        message: e.to_string(),
    };
    let Some(url) = url.map(str::trim).filter(|u| !u.is_empty()) else {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(failed(e)),
            _ => Ok(()),
        };
    };
    check_team_store(url)?;
    std::fs::create_dir_all(data_dir).map_err(failed)?;
    std::fs::write(&path, format!("{url}\n")).map_err(failed)
}
