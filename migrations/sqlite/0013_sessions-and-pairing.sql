-- A name is unique among the active tokens of its kind; earlier tokens are agents'.

ALTER TABLE tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'agent';
ALTER TABLE tokens ADD COLUMN expires_at INTEGER;
DROP INDEX tokens_active_by_name;
CREATE UNIQUE INDEX tokens_active_by_kind_name ON tokens(kind, name) WHERE revoked_at IS NULL;
