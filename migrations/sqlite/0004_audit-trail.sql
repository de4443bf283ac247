-- Append-only, and each entry carries the hash of the one before (`audit_hash`): an
-- edit or a deletion anywhere breaks the chain from there on.

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
