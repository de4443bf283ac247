-- An outside agent's session was "running" from its first decision on, whatever its agent
-- reported after. It now stands as its agent last reported (`store::work::record`): a session
-- whose newest plan is approved, with nothing open, and whose agent's last report on it was
-- its "finished", is finished.
UPDATE runs SET status = 'finished'
WHERE source != 'engine' AND status = 'running'
  AND NOT EXISTS (SELECT 1 FROM pending WHERE pending.run_id = runs.id)
  AND (SELECT w.kind FROM work w
       WHERE w.run_id = runs.id
         AND w.kind IN ('file', 'command', 'finished')
         AND w.revision_id = (SELECT MAX(r.id) FROM plan_revisions r WHERE r.run_id = runs.id)
       ORDER BY w.id DESC LIMIT 1) = 'finished';
