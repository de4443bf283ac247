-- Only the SHA-256 of a secret is kept. A name is unique among active tokens; revoked
-- ones stay, listed as revoked.

CREATE TABLE tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    sha256 TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    revoked_at INTEGER,
    revoked_by TEXT
);
CREATE UNIQUE INDEX tokens_active_by_name ON tokens(name) WHERE revoked_at IS NULL;
