-- `owner_pid` stays (unread): dropping a column rewrites the table for nothing.

ALTER TABLE runs ADD COLUMN source TEXT NOT NULL DEFAULT 'engine';
ALTER TABLE runs ADD COLUMN session TEXT;
ALTER TABLE runs ADD COLUMN holder TEXT;
ALTER TABLE runs ADD COLUMN lease_until INTEGER;
UPDATE runs SET owner_pid = NULL;
CREATE INDEX revisions_by_sha ON plan_revisions(sha256);
CREATE INDEX runs_by_source_session ON runs(source, session);
CREATE INDEX runs_by_update ON runs(updated_at);
CREATE INDEX pending_by_since ON pending(since);
