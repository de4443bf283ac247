-- As SQLite's migration 11: a decision whose resume data echoes the decided revision's
-- body keeps `plan` null there and reads it from the revision. Earlier ones keep theirs.

ALTER TABLE decisions ADD COLUMN plan_from_revision BOOLEAN NOT NULL DEFAULT FALSE;
