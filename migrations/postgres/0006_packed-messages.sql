-- As SQLite's migration 15.

ALTER TABLE messages ADD COLUMN packed BYTEA;
