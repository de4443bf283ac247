-- Each commit wrote a new snapshot beside the others, and nothing read any but the
-- newest: a run revised ten times kept its state some thirty times. A commit now
-- replaces it; those kept so far go. (Their pages are used again as the store grows.)

DELETE FROM run_snapshots WHERE version <
    (SELECT MAX(version) FROM run_snapshots AS newest WHERE newest.run_id = run_snapshots.run_id);
