-- An external-content index over the revisions (never updated or deleted, so one
-- trigger keeps it); words are matched by prefix, accents folded.

CREATE VIRTUAL TABLE revisions_fts USING fts5(
    title, body, content='plan_revisions', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2'
);
INSERT INTO revisions_fts(revisions_fts) VALUES ('rebuild');
CREATE TRIGGER revisions_fts_insert AFTER INSERT ON plan_revisions
BEGIN INSERT INTO revisions_fts(rowid, title, body) VALUES (new.id, new.title, new.body); END;
