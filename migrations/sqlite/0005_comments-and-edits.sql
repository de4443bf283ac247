-- A reviewer's edit is one more revision of the same call, so a call can have several
-- revisions (the open item points at the newest); `author` names the reviewer (NULL:
-- the agent wrote it).

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
