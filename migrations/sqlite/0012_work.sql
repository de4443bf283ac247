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
CREATE INDEX work_by_revision ON work(revision_id, id);
