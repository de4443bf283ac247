-- As SQLite's migration 13.

ALTER TABLE tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'agent';
ALTER TABLE tokens ADD COLUMN expires_at BIGINT;
DROP INDEX tokens_active_by_name;
CREATE UNIQUE INDEX tokens_active_by_kind_name ON tokens(kind, name) WHERE revoked_at IS NULL;
