-- PostgreSQL only (SQLite rewrites a row in place). A run's snapshot is rewritten at
-- every step: keyed by its version it could not be rewritten on its own page (the key
-- changed), and a suspended run's state (its step's calls, a plan among them) went out
-- of line, so each step left a dead copy until autovacuum came by: 10 MB for 200 runs
-- revised ten times, with 0.2 MB alive. Keyed by its run, its state kept in the row
-- (compressed) and half of each page left free, a rewrite stays on its page and the
-- next one there clears the dead copies. The word index's list of entries not yet
-- merged grew to 4 MB (PostgreSQL's default) before any merge: 64 kB now.

ALTER TABLE run_snapshots DROP CONSTRAINT run_snapshots_pkey;
ALTER TABLE run_snapshots ADD PRIMARY KEY (run_id);
ALTER TABLE run_snapshots ALTER COLUMN state SET STORAGE MAIN;
ALTER TABLE run_snapshots SET (fillfactor = 50);
ALTER INDEX revisions_by_word SET (gin_pending_list_limit = 64);
