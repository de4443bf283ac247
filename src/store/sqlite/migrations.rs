//! Versioned schema changes. `PRAGMA user_version` counts the migrations applied; each runs in
//! its own IMMEDIATE transaction (so two processes opening a new store at once apply it once),
//! and a store with more migrations than this build knows is refused rather than misread.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use super::file_error;
use crate::store::migration::{self, Migration};
use crate::store::StoreError;

macro_rules! sql {
    ($file:literal) => {
        migration_sql!("sqlite", $file)
    };
}

/// Every migration, oldest first (`migrations/sqlite/`).
const MIGRATIONS: &[Migration] = &[
    Migration::new(
        1,
        "runs, snapshots, messages, revisions, decisions, pending, events, settings",
        sql!("0001_initial.sql"),
    ),
    Migration::new(
        2,
        "plan sources and run leases",
        sql!("0002_sources-and-leases.sql"),
    ),
    Migration::new(
        3,
        "waiters on outside agents' items",
        sql!("0003_waiters.sql"),
    ),
    Migration::new(4, "the audit trail", sql!("0004_audit-trail.sql")),
    Migration::new(
        5,
        "line comments and reviewers' edits",
        sql!("0005_comments-and-edits.sql"),
    )
    .rebuilding(),
    Migration::new(6, "full-text search of plans", sql!("0006_plan-search.sql")),
    Migration::new(
        7,
        "bearer tokens for `plandesk serve`",
        sql!("0007_tokens.sql"),
    ),
    Migration::new(8, "who made each decision", sql!("0008_decided-by.sql")),
    Migration::new(
        9,
        "the history listing reads no plan",
        sql!("0009_revision-listing-index.sql"),
    ),
    Migration::new(
        10,
        "the history listing reads no decision's resume data",
        sql!("0010_decision-listing-index.sql"),
    ),
    Migration::new(
        11,
        "a decided plan is stored once",
        sql!("0011_plan-stored-once.sql"),
    ),
    Migration::new(
        12,
        "what an agent did after an approval",
        sql!("0012_work.sql"),
    ),
    Migration::new(
        13,
        "sign-in links and reviewers' sessions beside agents' tokens",
        sql!("0013_sessions-and-pairing.sql"),
    ),
    Migration::new(
        14,
        "a run keeps its newest snapshot only",
        sql!("0014_newest-snapshot-only.sql"),
    ),
    Migration::new(
        15,
        "a message is stored as what changed since the conversation before it",
        sql!("0015_packed-messages.sql"),
    ),
    Migration::new(
        16,
        "a plan revision is stored as what changed since its plan's first",
        sql!("0016_packed-revisions.sql"),
    ),
    Migration::new(
        17,
        "a run's snapshot is found by its run alone; messages are kept in their order",
        sql!("0017_snapshot-by-run.sql"),
    ),
    Migration::new(
        18,
        "plans, decisions and the work after them are append-only",
        sql!("0018_append-only.sql"),
    ),
    Migration::new(
        19,
        "an outside session stands as its agent last reported",
        sql!("0019_sessions-as-reported.sql"),
    ),
];

/// The schema version this build writes.
pub(super) fn latest() -> i64 {
    migration::latest(MIGRATIONS)
}

fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

/// Brings the store at `path` up to [`latest`], or refuses it if it is newer.
pub(super) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let found = user_version(conn).map_err(|e| open_error(path, e))?;
    if found > latest() {
        return Err(StoreError::Newer {
            path: path.to_owned(),
            found,
            known: latest(),
        });
    }
    for migration in MIGRATIONS.iter().filter(|m| m.version > found) {
        let failed = |err: rusqlite::Error| match file_error(path, err) {
            Ok(file) => file,
            Err(err) => StoreError::Migration {
                version: migration.version,
                name: migration.name,
                message: err.to_string(),
            },
        };
        // Only outside a transaction does this pragma take effect.
        if migration.rebuilds {
            conn.pragma_update(None, "foreign_keys", false)
                .map_err(failed)?;
        }
        let applied = apply(conn, migration).map_err(failed);
        if migration.rebuilds {
            conn.pragma_update(None, "foreign_keys", true)
                .map_err(failed)?;
        }
        applied?;
    }
    Ok(())
}

/// Applies one migration in its own IMMEDIATE transaction, unless another process did first.
fn apply(conn: &mut Connection, migration: &Migration) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Another process may have applied it while this one waited for the lock.
    if user_version(&tx)? >= migration.version {
        return Ok(());
    }
    tx.execute_batch(migration.sql)?;
    tx.pragma_update(None, "user_version", migration.version)?;
    tx.commit()
}

fn open_error(path: &Path, err: rusqlite::Error) -> StoreError {
    file_error(path, err).unwrap_or_else(|err| StoreError::Open {
        path: path.to_owned(),
        message: err.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_migration_is_its_file_in_order() {
        migration::assert_listed_in_order(MIGRATIONS, "sqlite");
    }

    #[test]
    fn a_new_store_gets_every_migration_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let mut conn = Connection::open(&path).unwrap();
        migrate(&mut conn, &path).unwrap();
        assert_eq!(user_version(&conn).unwrap(), latest());
        // Opening again changes nothing and does not fail on the ALTERs.
        migrate(&mut conn, &path).unwrap();
        assert_eq!(user_version(&conn).unwrap(), latest());
    }

    #[test]
    fn a_newer_store_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let mut conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", latest() + 1)
            .unwrap();
        let err = migrate(&mut conn, &path).unwrap_err();
        assert!(
            matches!(err, StoreError::Newer { found, .. } if found == latest() + 1),
            "{err}"
        );
        assert!(err.to_string().contains("newer Plandesk"), "{err}");
    }
}
