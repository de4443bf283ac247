-- As SQLite's migration 16 (the words are indexed from Rust already).

ALTER TABLE plan_revisions ADD COLUMN packed BYTEA;
ALTER TABLE plan_revisions ADD COLUMN packed_against BIGINT REFERENCES plan_revisions(id);
