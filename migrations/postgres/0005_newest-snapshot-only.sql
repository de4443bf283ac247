-- As SQLite's migration 14.

DELETE FROM run_snapshots WHERE version <
    (SELECT MAX(version) FROM run_snapshots AS newest WHERE newest.run_id = run_snapshots.run_id);
