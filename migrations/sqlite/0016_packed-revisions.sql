-- A revision of some length is kept compressed against the first revision of the same
-- plan file in its run (`store::revisions::text_at`), its body then empty; earlier
-- revisions keep their text. The full-text index can no longer read the bodies: it
-- becomes contentless (words only), written with each revision, and is filled again
-- from the revisions so far (all of them text).

ALTER TABLE plan_revisions ADD COLUMN packed BLOB;
ALTER TABLE plan_revisions ADD COLUMN packed_against INTEGER REFERENCES plan_revisions(id);
DROP TRIGGER revisions_fts_insert;
DROP TABLE revisions_fts;
CREATE VIRTUAL TABLE revisions_fts USING fts5(
    title, body, content='', tokenize='unicode61 remove_diacritics 2'
);
INSERT INTO revisions_fts (rowid, title, body) SELECT id, title, body FROM plan_revisions;
