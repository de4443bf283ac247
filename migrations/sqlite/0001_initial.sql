-- Stores made before migrations existed have exactly these tables (and user_version 0):
-- `IF NOT EXISTS` adopts them as they are.

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
