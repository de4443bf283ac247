-- A revision's row holds its plan (a page or more each): listing 10,000 of them without
-- their plans still read every row whole, ~40 MB. The listing's columns in an index of
-- their own: it reads that instead (`SCAN v USING COVERING INDEX`).

CREATE INDEX revisions_listing ON plan_revisions(
    id, run_id, tool_call_id, path, title, sha256, revision_no, submitted_at, author);
