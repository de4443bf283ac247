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
