-- Each move of a run rewrote six pages: the run, its row in `runs_by_update`, its
-- snapshot, the snapshot's key (run and version: it changed with every move), the new
-- message and its key. A snapshot keyed by its run keeps its key through a move, and
-- messages stored in their key's order need no second tree: four pages a move.

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
ALTER TABLE messages_in_order RENAME TO messages;
