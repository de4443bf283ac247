-- As SQLite's migration 12.

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
CREATE INDEX work_by_revision ON work(revision_id, id);
