//! The PostgreSQL schema, versioned like SQLite's: `plandesk_schema` holds how many migrations
//! were applied, each runs in its own transaction under the store's lock (so two processes
//! opening a new database at once apply it once), and a database with more migrations than this
//! build knows is refused rather than misread.
//!
//! The tables are SQLite's (same names, same meaning); ids are identities, times are
//! milliseconds, JSON is kept as the text it was written as (the audit chain hashes that text).

use super::{describe, WRITE_LOCK};
use crate::store::migration::{self, Migration};
use crate::store::StoreError;

macro_rules! sql {
    ($file:literal) => {
        migration_sql!("postgres", $file)
    };
}

/// Every migration, oldest first (`migrations/postgres/`).
const MIGRATIONS: &[Migration] = &[
    Migration::new(
        1,
        "runs, snapshots, messages, revisions, decisions, open items, comments, audit, \
         events, settings, tokens",
        sql!("0001_initial.sql"),
    ),
    Migration::new(
        2,
        "a decided plan is stored once",
        sql!("0002_plan-stored-once.sql"),
    ),
    Migration::new(
        3,
        "what an agent did after an approval",
        sql!("0003_work.sql"),
    ),
    Migration::new(
        4,
        "sign-in links and reviewers' sessions beside agents' tokens",
        sql!("0004_sessions-and-pairing.sql"),
    ),
    Migration::new(
        5,
        "a run keeps its newest snapshot only",
        sql!("0005_newest-snapshot-only.sql"),
    ),
    Migration::new(
        6,
        "a message is stored as what changed since the conversation before it",
        sql!("0006_packed-messages.sql"),
    ),
    Migration::new(
        7,
        "a store that keeps no dead snapshots and a bounded index backlog",
        sql!("0007_snapshot-in-place.sql"),
    ),
    Migration::new(
        8,
        "a plan revision is stored as what changed since its plan's first",
        sql!("0008_packed-revisions.sql"),
    ),
    Migration::new(
        9,
        "plans, decisions and the work after them are append-only",
        sql!("0009_append-only.sql"),
    ),
    Migration::new(
        10,
        "an outside session stands as its agent last reported",
        sql!("0010_sessions-as-reported.sql"),
    ),
];

/// The schema version this build writes.
pub(super) fn latest() -> i64 {
    migration::latest(MIGRATIONS)
}

/// Brings the database up to [`latest`], or refuses it if it is newer (checked under the lock
/// at every step, so also when there is nothing to apply).
pub(super) async fn migrate(
    client: &mut deadpool_postgres::Client,
    location: &str,
) -> Result<(), StoreError> {
    let failed = |version: i64, name: &'static str| {
        move |err: tokio_postgres::Error| StoreError::Migration {
            version,
            name,
            message: describe(&err),
        }
    };
    for migration in MIGRATIONS {
        let tx = client
            .transaction()
            .await
            .map_err(failed(migration.version, migration.name))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])
            .await
            .map_err(failed(migration.version, migration.name))?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS plandesk_schema (version BIGINT NOT NULL)")
            .await
            .map_err(failed(migration.version, migration.name))?;
        let found: i64 = tx
            .query_one("SELECT COALESCE(MAX(version), 0) FROM plandesk_schema", &[])
            .await
            .and_then(|r| r.try_get(0))
            .map_err(failed(migration.version, migration.name))?;
        if found > latest() {
            return Err(StoreError::Newer {
                path: location.into(),
                found,
                known: latest(),
            });
        }
        // Another process may have applied it while this one waited for the lock.
        if found >= migration.version {
            continue;
        }
        tx.batch_execute(migration.sql)
            .await
            .map_err(failed(migration.version, migration.name))?;
        tx.execute("DELETE FROM plandesk_schema", &[])
            .await
            .map_err(failed(migration.version, migration.name))?;
        tx.execute(
            "INSERT INTO plandesk_schema (version) VALUES ($1)",
            &[&migration.version],
        )
        .await
        .map_err(failed(migration.version, migration.name))?;
        tx.commit()
            .await
            .map_err(failed(migration.version, migration.name))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_migration_is_its_file_in_order() {
        migration::assert_listed_in_order(MIGRATIONS, "postgres");
    }
}
