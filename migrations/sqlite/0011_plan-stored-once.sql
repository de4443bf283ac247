-- An engine run's resume data echoes the plan it decides, most often the decided
-- revision's body: that plan is then left out of the resume data (null) and read from
-- the revision. Writing it again cost each decision the time to write it to disk.
-- Earlier decisions keep theirs.

ALTER TABLE decisions ADD COLUMN plan_from_revision INTEGER NOT NULL DEFAULT 0;
