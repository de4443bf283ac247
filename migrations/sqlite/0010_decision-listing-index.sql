-- An engine run's resume data echoes the plan it decides, and a decision's time and
-- author are stored after it in its row: reading them walked the plan's pages. The
-- columns the listing reads of a decision in an index of their own.

CREATE INDEX decisions_listing ON decisions(
    run_id, tool_call_id, revision_id, id, action, feedback, decided_at, decided_by);
