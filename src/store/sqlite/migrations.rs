//! Versioned schema changes. `PRAGMA user_version` counts the migrations applied; each runs in
//! its own IMMEDIATE transaction (so two processes opening a new store at once apply it once),
//! and a store with more migrations than this build knows is refused rather than misread.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use super::file_error;
use crate::store::StoreError;

struct Migration {
    version: i64,
    name: &'static str,
    sql: &'static str,
    /// Rebuilds a table other tables refer to: foreign keys are off while it runs (SQLite's
    /// documented way to change a table's constraints; ids are kept, so references hold).
    rebuilds: bool,
}

/// Every migration, oldest first; `version` is its position, starting at 1. Never edit one that
/// has shipped: add another.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "runs, snapshots, messages, revisions, decisions, pending, events, settings",
        // Stores made before migrations existed have exactly these tables (and user_version 0):
        // `IF NOT EXISTS` adopts them as they are.
        sql: "
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    prompt TEXT NOT NULL,
    model TEXT NOT NULL,
    mode TEXT NOT NULL,
    status TEXT NOT NULL,
    workspace TEXT NOT NULL,
    owner_pid INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS run_snapshots (
    run_id TEXT NOT NULL REFERENCES runs(id),
    version INTEGER NOT NULL,
    schema_version INTEGER NOT NULL,
    message_count INTEGER NOT NULL,
    state TEXT NOT NULL,
    saved_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, version)
);
CREATE TABLE IF NOT EXISTS messages (
    run_id TEXT NOT NULL REFERENCES runs(id),
    seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS plan_revisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id),
    tool_call_id TEXT NOT NULL,
    path TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    revision_no INTEGER NOT NULL,
    submitted_at INTEGER NOT NULL,
    UNIQUE (run_id, tool_call_id)
);
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id),
    tool_call_id TEXT NOT NULL,
    revision_id INTEGER REFERENCES plan_revisions(id),
    action TEXT NOT NULL,
    feedback TEXT,
    resume_data TEXT NOT NULL,
    decided_at INTEGER NOT NULL,
    UNIQUE (run_id, tool_call_id)
);
CREATE TABLE IF NOT EXISTS pending (
    run_id TEXT NOT NULL REFERENCES runs(id),
    tool_call_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    args TEXT NOT NULL,
    revision_id INTEGER REFERENCES plan_revisions(id),
    since INTEGER NOT NULL,
    PRIMARY KEY (run_id, tool_call_id)
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_run ON events(run_id, id);
CREATE INDEX IF NOT EXISTS revisions_by_run ON plan_revisions(run_id, path);
",
        rebuilds: false,
    },
    Migration {
        version: 2,
        name: "plan sources and run leases",
        // `owner_pid` stays (unread): dropping a column rewrites the table for nothing.
        sql: "
ALTER TABLE runs ADD COLUMN source TEXT NOT NULL DEFAULT 'engine';
ALTER TABLE runs ADD COLUMN session TEXT;
ALTER TABLE runs ADD COLUMN holder TEXT;
ALTER TABLE runs ADD COLUMN lease_until INTEGER;
UPDATE runs SET owner_pid = NULL;
CREATE INDEX revisions_by_sha ON plan_revisions(sha256);
CREATE INDEX runs_by_source_session ON runs(source, session);
CREATE INDEX runs_by_update ON runs(updated_at);
CREATE INDEX pending_by_since ON pending(since);
",
        rebuilds: false,
    },
    Migration {
        version: 3,
        name: "waiters on outside agents' items",
        // An outside agent's hook waits on its item; its lease says it still does.
        sql: "
ALTER TABLE pending ADD COLUMN waiter TEXT;
ALTER TABLE pending ADD COLUMN waiter_until INTEGER;
",
        rebuilds: false,
    },
    Migration {
        version: 4,
        name: "the audit trail",
        // Append-only, and each entry carries the hash of the one before (`audit_hash`): an
        // edit or a deletion anywhere breaks the chain from there on.
        sql: "
CREATE TABLE audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
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
CREATE TRIGGER audit_is_append_only_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
CREATE TRIGGER audit_is_append_only_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
",
        rebuilds: false,
    },
    Migration {
        version: 5,
        name: "line comments and reviewers' edits",
        // A reviewer's edit is one more revision of the same call, so a call can have several
        // revisions (the open item points at the newest); `author` names the reviewer (NULL:
        // the agent wrote it).
        sql: "
CREATE TABLE plan_revisions_v5 (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id),
    tool_call_id TEXT NOT NULL,
    path TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    revision_no INTEGER NOT NULL,
    submitted_at INTEGER NOT NULL,
    author TEXT
);
INSERT INTO plan_revisions_v5 (id, run_id, tool_call_id, path, title, body, sha256, revision_no, submitted_at)
    SELECT id, run_id, tool_call_id, path, title, body, sha256, revision_no, submitted_at FROM plan_revisions;
DROP TABLE plan_revisions;
ALTER TABLE plan_revisions_v5 RENAME TO plan_revisions;
CREATE INDEX revisions_by_run ON plan_revisions(run_id, path);
CREATE INDEX revisions_by_sha ON plan_revisions(sha256);
CREATE INDEX revisions_by_call ON plan_revisions(run_id, tool_call_id);
CREATE TABLE comments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id),
    revision_id INTEGER NOT NULL REFERENCES plan_revisions(id),
    line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL,
    quote TEXT NOT NULL,
    body TEXT NOT NULL,
    author TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    resolved_by TEXT,
    resolved_at INTEGER
);
CREATE INDEX comments_by_run ON comments(run_id, id);
",
        rebuilds: true,
    },
    Migration {
        version: 6,
        name: "full-text search of plans",
        // An external-content index over the revisions (never updated or deleted, so one
        // trigger keeps it); words are matched by prefix, accents folded.
        sql: "
CREATE VIRTUAL TABLE revisions_fts USING fts5(
    title, body, content='plan_revisions', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2'
);
INSERT INTO revisions_fts(revisions_fts) VALUES ('rebuild');
CREATE TRIGGER revisions_fts_insert AFTER INSERT ON plan_revisions
BEGIN INSERT INTO revisions_fts(rowid, title, body) VALUES (new.id, new.title, new.body); END;
",
        rebuilds: false,
    },
    Migration {
        version: 7,
        name: "bearer tokens for `plandesk serve`",
        // Only the SHA-256 of a secret is kept. A name is unique among active tokens; revoked
        // ones stay, listed as revoked.
        sql: "
CREATE TABLE tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    sha256 TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    revoked_at INTEGER,
    revoked_by TEXT
);
CREATE UNIQUE INDEX tokens_active_by_name ON tokens(name) WHERE revoked_at IS NULL;
",
        rebuilds: false,
    },
    Migration {
        version: 8,
        name: "who made each decision",
        // Two reviewers deciding one plan at once: the one refused is told who won. Earlier
        // decisions stay without a name (the audit trail has it).
        sql: "ALTER TABLE decisions ADD COLUMN decided_by TEXT;",
        rebuilds: false,
    },
    Migration {
        version: 9,
        name: "the history listing reads no plan",
        // A revision's row holds its plan (a page or more each): listing 10,000 of them without
        // their plans still read every row whole, ~40 MB. The listing's columns in an index of
        // their own: it reads that instead (`SCAN v USING COVERING INDEX`).
        sql: "CREATE INDEX revisions_listing ON plan_revisions(
    id, run_id, tool_call_id, path, title, sha256, revision_no, submitted_at, author);",
        rebuilds: false,
    },
    Migration {
        version: 10,
        name: "the history listing reads no decision's resume data",
        // An engine run's resume data echoes the plan it decides, and a decision's time and
        // author are stored after it in its row: reading them walked the plan's pages. The
        // columns the listing reads of a decision in an index of their own.
        sql: "CREATE INDEX decisions_listing ON decisions(
    run_id, tool_call_id, revision_id, id, action, feedback, decided_at, decided_by);",
        rebuilds: false,
    },
    Migration {
        version: 11,
        name: "a decided plan is stored once",
        // An engine run's resume data echoes the plan it decides, most often the decided
        // revision's body: that plan is then left out of the resume data (null) and read from
        // the revision. Writing it again cost each decision the time to write it to disk.
        // Earlier decisions keep theirs.
        sql: "ALTER TABLE decisions ADD COLUMN plan_from_revision INTEGER NOT NULL DEFAULT 0;",
        rebuilds: false,
    },
    Migration {
        version: 12,
        name: "what an agent did after an approval",
        sql: "
CREATE TABLE work (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id),
    revision_id INTEGER NOT NULL REFERENCES plan_revisions(id),
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    path TEXT,
    command TEXT,
    exit_code INTEGER,
    data TEXT NOT NULL
);
CREATE INDEX work_by_revision ON work(revision_id, id);",
        rebuilds: false,
    },
    Migration {
        version: 13,
        name: "sign-in links and reviewers' sessions beside agents' tokens",
        // A name is unique among the active tokens of its kind; earlier tokens are agents'.
        sql: "
ALTER TABLE tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'agent';
ALTER TABLE tokens ADD COLUMN expires_at INTEGER;
DROP INDEX tokens_active_by_name;
CREATE UNIQUE INDEX tokens_active_by_kind_name ON tokens(kind, name) WHERE revoked_at IS NULL;",
        rebuilds: false,
    },
    Migration {
        version: 14,
        name: "a run keeps its newest snapshot only",
        // Each commit wrote a new snapshot beside the others, and nothing read any but the
        // newest: a run revised ten times kept its state some thirty times. A commit now
        // replaces it; those kept so far go. (Their pages are used again as the store grows.)
        sql: crate::store::runs::SUPERSEDED_SNAPSHOTS,
        rebuilds: false,
    },
    Migration {
        version: 15,
        name: "a message is stored as what changed since the conversation before it",
        // A message of some size is kept compressed against the messages before it
        // (`store::conversation`), its text then empty; earlier messages keep their text.
        sql: "ALTER TABLE messages ADD COLUMN packed BLOB;",
        rebuilds: false,
    },
    Migration {
        version: 16,
        name: "a plan revision is stored as what changed since its plan's first",
        // A revision of some length is kept compressed against the first revision of the same
        // plan file in its run (`store::revisions::text_at`), its body then empty; earlier
        // revisions keep their text. The full-text index can no longer read the bodies: it
        // becomes contentless (words only), written with each revision, and is filled again
        // from the revisions so far (all of them text).
        sql: "
ALTER TABLE plan_revisions ADD COLUMN packed BLOB;
ALTER TABLE plan_revisions ADD COLUMN packed_against INTEGER REFERENCES plan_revisions(id);
DROP TRIGGER revisions_fts_insert;
DROP TABLE revisions_fts;
CREATE VIRTUAL TABLE revisions_fts USING fts5(
    title, body, content='', tokenize='unicode61 remove_diacritics 2'
);
INSERT INTO revisions_fts (rowid, title, body) SELECT id, title, body FROM plan_revisions;",
        rebuilds: false,
    },
    Migration {
        version: 17,
        name: "a run's snapshot is found by its run alone; messages are kept in their order",
        // Each move of a run rewrote six pages: the run, its row in `runs_by_update`, its
        // snapshot, the snapshot's key (run and version: it changed with every move), the new
        // message and its key. A snapshot keyed by its run keeps its key through a move, and
        // messages stored in their key's order need no second tree: four pages a move.
        sql: "
CREATE TABLE run_snapshots_by_run (
    run_id TEXT PRIMARY KEY REFERENCES runs(id),
    version INTEGER NOT NULL,
    schema_version INTEGER NOT NULL,
    message_count INTEGER NOT NULL,
    state TEXT NOT NULL,
    saved_at INTEGER NOT NULL
);
INSERT INTO run_snapshots_by_run
    SELECT run_id, version, schema_version, message_count, state, saved_at FROM run_snapshots s
    WHERE version = (SELECT MAX(version) FROM run_snapshots WHERE run_id = s.run_id);
DROP TABLE run_snapshots;
ALTER TABLE run_snapshots_by_run RENAME TO run_snapshots;
CREATE TABLE messages_in_order (
    run_id TEXT NOT NULL REFERENCES runs(id),
    seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    packed BLOB,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
INSERT INTO messages_in_order SELECT run_id, seq, message, packed FROM messages;
DROP TABLE messages;
ALTER TABLE messages_in_order RENAME TO messages;",
        rebuilds: false,
    },
    Migration {
        version: 18,
        name: "plans, decisions and the work after them are append-only",
        // Like the audit trail: nothing Plandesk does changes or removes a plan revision, a
        // decision or a record of work, so a bug (or a hand with SQL) that would turn a
        // rejection into an approval, or rewrite the plan a decision names, is refused by the
        // database itself; `audit --verify` finds what was done with the guard dropped. A later
        // migration that rebuilds one of these tables must create its triggers again (the
        // conformance test `what_was_decided_cannot_be_rewritten_with_sql` fails otherwise).
        sql: "
CREATE TRIGGER plan_revisions_are_append_only_update BEFORE UPDATE ON plan_revisions
BEGIN SELECT RAISE(ABORT, 'plan revisions are append-only'); END;
CREATE TRIGGER plan_revisions_are_append_only_delete BEFORE DELETE ON plan_revisions
BEGIN SELECT RAISE(ABORT, 'plan revisions are append-only'); END;
CREATE TRIGGER decisions_are_append_only_update BEFORE UPDATE ON decisions
BEGIN SELECT RAISE(ABORT, 'decisions are append-only'); END;
CREATE TRIGGER decisions_are_append_only_delete BEFORE DELETE ON decisions
BEGIN SELECT RAISE(ABORT, 'decisions are append-only'); END;
CREATE TRIGGER work_is_append_only_update BEFORE UPDATE ON work
BEGIN SELECT RAISE(ABORT, 'the record of work is append-only'); END;
CREATE TRIGGER work_is_append_only_delete BEFORE DELETE ON work
BEGIN SELECT RAISE(ABORT, 'the record of work is append-only'); END;",
        rebuilds: false,
    },
];

/// The schema version this build writes.
pub(super) fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
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
    fn versions_count_up_from_one() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i64 + 1, "{}", m.name);
        }
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
