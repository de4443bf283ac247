-- Two reviewers deciding one plan at once: the one refused is told who won. Earlier
-- decisions stay without a name (the audit trail has it).

ALTER TABLE decisions ADD COLUMN decided_by TEXT;
