//! The PostgreSQL schema, versioned like SQLite's: `plandesk_schema` holds how many migrations
//! were applied, each runs in its own transaction under the store's lock (so two processes
//! opening a new database at once apply it once), and a database with more migrations than this
//! build knows is refused rather than misread.
//!
//! The tables are SQLite's (same names, same meaning); ids are identities, times are
//! milliseconds, JSON is kept as the text it was written as (the audit chain hashes that text).

use super::{describe, WRITE_LOCK};
use crate::store::StoreError;

struct Migration {
    version: i64,
    name: &'static str,
    sql: &'static str,
}

/// Every migration, oldest first; `version` is its position, starting at 1. Never edit one that
/// has shipped: add another.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name:
            "runs, snapshots, messages, revisions, decisions, open items, comments, audit, events, \
           settings, tokens",
        sql: r#"
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    prompt TEXT NOT NULL,
    model TEXT NOT NULL,
    mode TEXT NOT NULL,
    status TEXT NOT NULL,
    workspace TEXT NOT NULL,
    source TEXT NOT NULL,
    session TEXT,
    holder TEXT,
    lease_until BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX runs_by_source_session ON runs(source, session);
CREATE INDEX runs_by_update ON runs(updated_at);
CREATE TABLE run_snapshots (
    run_id TEXT NOT NULL REFERENCES runs(id),
    version BIGINT NOT NULL,
    schema_version BIGINT NOT NULL,
    message_count BIGINT NOT NULL,
    state TEXT NOT NULL,
    saved_at BIGINT NOT NULL,
    PRIMARY KEY (run_id, version)
);
CREATE TABLE messages (
    run_id TEXT NOT NULL REFERENCES runs(id),
    seq BIGINT NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
-- `words`: the plan's distinct words for search (see store::words); `words_complete` is false
-- when a plan had too many to index, and such a plan is always checked word by word.
CREATE TABLE plan_revisions (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    tool_call_id TEXT NOT NULL,
    path TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    sha256 TEXT COLLATE "C" NOT NULL,
    revision_no BIGINT NOT NULL,
    submitted_at BIGINT NOT NULL,
    author TEXT,
    words TSVECTOR NOT NULL,
    words_complete BOOLEAN NOT NULL
);
CREATE INDEX revisions_by_run ON plan_revisions(run_id, path);
CREATE INDEX revisions_by_sha ON plan_revisions(sha256);
CREATE INDEX revisions_by_call ON plan_revisions(run_id, tool_call_id);
CREATE INDEX revisions_by_word ON plan_revisions USING GIN (words);
CREATE INDEX revisions_not_indexed ON plan_revisions(id) WHERE NOT words_complete;
CREATE TABLE decisions (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    tool_call_id TEXT NOT NULL,
    revision_id BIGINT REFERENCES plan_revisions(id),
    action TEXT NOT NULL,
    feedback TEXT,
    resume_data TEXT NOT NULL,
    decided_at BIGINT NOT NULL,
    decided_by TEXT,
    UNIQUE (run_id, tool_call_id)
);
-- `seq` orders a run's items as they were opened (SQLite's rowid).
CREATE TABLE pending (
    run_id TEXT NOT NULL REFERENCES runs(id),
    tool_call_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    args TEXT NOT NULL,
    revision_id BIGINT REFERENCES plan_revisions(id),
    since BIGINT NOT NULL,
    waiter TEXT,
    waiter_until BIGINT,
    seq BIGINT GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (run_id, tool_call_id)
);
CREATE INDEX pending_by_since ON pending(since);
CREATE TABLE comments (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    revision_id BIGINT NOT NULL REFERENCES plan_revisions(id),
    line_start BIGINT NOT NULL,
    line_end BIGINT NOT NULL,
    quote TEXT NOT NULL,
    body TEXT NOT NULL,
    author TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    resolved_by TEXT,
    resolved_at BIGINT
);
CREATE INDEX comments_by_run ON comments(run_id, id);
CREATE TABLE events (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id TEXT NOT NULL,
    at BIGINT NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX events_by_run ON events(run_id, id);
CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
-- Append-only: each entry carries the hash of the one before, and nothing may change or
-- remove an entry once written.
CREATE TABLE audit (
    id BIGINT PRIMARY KEY,
    at BIGINT NOT NULL,
    actor TEXT NOT NULL,
    process TEXT NOT NULL,
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    revision_sha TEXT,
    data TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX audit_by_run ON audit(run_id, id);
CREATE FUNCTION plandesk_audit_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'the audit trail is append-only'; END $$;
CREATE TRIGGER audit_is_append_only BEFORE UPDATE OR DELETE ON audit
    FOR EACH ROW EXECUTE FUNCTION plandesk_audit_is_append_only();
CREATE TRIGGER audit_is_never_emptied BEFORE TRUNCATE ON audit
    FOR EACH STATEMENT EXECUTE FUNCTION plandesk_audit_is_append_only();
-- Bearer tokens of `plandesk serve`: only the SHA-256 of a secret is kept; a name is unique
-- among active tokens, revoked ones stay, listed as revoked.
CREATE TABLE tokens (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name TEXT NOT NULL,
    sha256 TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    created_by TEXT NOT NULL,
    revoked_at BIGINT,
    revoked_by TEXT
);
CREATE UNIQUE INDEX tokens_active_by_name ON tokens(name) WHERE revoked_at IS NULL;
"#,
    },
    Migration {
        version: 2,
        name: "a decided plan is stored once",
        // As SQLite's migration 11: a decision whose resume data echoes the decided revision's
        // body keeps `plan` null there and reads it from the revision. Earlier ones keep theirs.
        sql: "ALTER TABLE decisions ADD COLUMN plan_from_revision BOOLEAN NOT NULL DEFAULT FALSE;",
    },
    Migration {
        version: 3,
        name: "what an agent did after an approval",
        // As SQLite's migration 12.
        sql: "
CREATE TABLE work (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    revision_id BIGINT NOT NULL REFERENCES plan_revisions(id),
    at BIGINT NOT NULL,
    kind TEXT NOT NULL,
    path TEXT,
    command TEXT,
    exit_code BIGINT,
    data TEXT NOT NULL
);
CREATE INDEX work_by_revision ON work(revision_id, id);",
    },
    Migration {
        version: 4,
        name: "sign-in links and reviewers' sessions beside agents' tokens",
        // As SQLite's migration 13.
        sql: "
ALTER TABLE tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'agent';
ALTER TABLE tokens ADD COLUMN expires_at BIGINT;
DROP INDEX tokens_active_by_name;
CREATE UNIQUE INDEX tokens_active_by_kind_name ON tokens(kind, name) WHERE revoked_at IS NULL;",
    },
    Migration {
        version: 5,
        name: "a run keeps its newest snapshot only",
        // As SQLite's migration 14.
        sql: crate::store::runs::SUPERSEDED_SNAPSHOTS,
    },
    Migration {
        version: 6,
        name: "a message is stored as what changed since the conversation before it",
        // As SQLite's migration 15.
        sql: "ALTER TABLE messages ADD COLUMN packed BYTEA;",
    },
    Migration {
        version: 7,
        name: "a store that keeps no dead snapshots and a bounded index backlog",
        // PostgreSQL only (SQLite rewrites a row in place). A run's snapshot is rewritten at
        // every step: keyed by its version it could not be rewritten on its own page (the key
        // changed), and a suspended run's state (its step's calls, a plan among them) went out
        // of line, so each step left a dead copy until autovacuum came by: 10 MB for 200 runs
        // revised ten times, with 0.2 MB alive. Keyed by its run, its state kept in the row
        // (compressed) and half of each page left free, a rewrite stays on its page and the
        // next one there clears the dead copies. The word index's list of entries not yet
        // merged grew to 4 MB (PostgreSQL's default) before any merge: 64 kB now.
        sql: "
ALTER TABLE run_snapshots DROP CONSTRAINT run_snapshots_pkey;
ALTER TABLE run_snapshots ADD PRIMARY KEY (run_id);
ALTER TABLE run_snapshots ALTER COLUMN state SET STORAGE MAIN;
ALTER TABLE run_snapshots SET (fillfactor = 50);
ALTER INDEX revisions_by_word SET (gin_pending_list_limit = 64);",
    },
    Migration {
        version: 8,
        name: "a plan revision is stored as what changed since its plan's first",
        // As SQLite's migration 16 (the words are indexed from Rust already).
        sql: "
ALTER TABLE plan_revisions ADD COLUMN packed BYTEA;
ALTER TABLE plan_revisions ADD COLUMN packed_against BIGINT REFERENCES plan_revisions(id);",
    },
    Migration {
        version: 9,
        name: "plans, decisions and the work after them are append-only",
        // As SQLite's migration 18, and emptying them is refused as it is for the audit trail.
        sql: "
CREATE FUNCTION plandesk_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION '% is append-only', TG_TABLE_NAME; END $$;
CREATE TRIGGER plan_revisions_are_append_only BEFORE UPDATE OR DELETE ON plan_revisions
    FOR EACH ROW EXECUTE FUNCTION plandesk_is_append_only();
CREATE TRIGGER plan_revisions_are_never_emptied BEFORE TRUNCATE ON plan_revisions
    FOR EACH STATEMENT EXECUTE FUNCTION plandesk_is_append_only();
CREATE TRIGGER decisions_are_append_only BEFORE UPDATE OR DELETE ON decisions
    FOR EACH ROW EXECUTE FUNCTION plandesk_is_append_only();
CREATE TRIGGER decisions_are_never_emptied BEFORE TRUNCATE ON decisions
    FOR EACH STATEMENT EXECUTE FUNCTION plandesk_is_append_only();
CREATE TRIGGER work_is_append_only BEFORE UPDATE OR DELETE ON work
    FOR EACH ROW EXECUTE FUNCTION plandesk_is_append_only();
CREATE TRIGGER work_is_never_emptied BEFORE TRUNCATE ON work
    FOR EACH STATEMENT EXECUTE FUNCTION plandesk_is_append_only();",
    },
];

/// The schema version this build writes.
pub(super) fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
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
    fn versions_count_up_from_one() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i64 + 1, "{}", m.name);
        }
    }
}
