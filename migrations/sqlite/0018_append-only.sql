-- Like the audit trail: nothing Plandesk does changes or removes a plan revision, a
-- decision or a record of work, so a bug (or a hand with SQL) that would turn a
-- rejection into an approval, or rewrite the plan a decision names, is refused by the
-- database itself; `audit --verify` finds what was done with the guard dropped. A later
-- migration that rebuilds one of these tables must create its triggers again (the
-- conformance test `what_was_decided_cannot_be_rewritten_with_sql` fails otherwise).

CREATE TRIGGER plan_revisions_are_append_only_update BEFORE UPDATE ON plan_revisions
BEGIN SELECT RAISE(ABORT, 'plan revisions are append-only'); END;
CREATE TRIGGER plan_revisions_are_append_only_delete BEFORE DELETE ON plan_revisions
BEGIN SELECT RAISE(ABORT, 'plan revisions are append-only'); END;
CREATE TRIGGER decisions_are_append_only_update BEFORE UPDATE ON decisions
BEGIN SELECT RAISE(ABORT, 'decisions are append-only'); END;
CREATE TRIGGER decisions_are_append_only_delete BEFORE DELETE ON decisions
BEGIN SELECT RAISE(ABORT, 'decisions are append-only'); END;
CREATE TRIGGER work_is_append_only_update BEFORE UPDATE ON work
BEGIN SELECT RAISE(ABORT, 'the record of work is append-only'); END;
CREATE TRIGGER work_is_append_only_delete BEFORE DELETE ON work
BEGIN SELECT RAISE(ABORT, 'the record of work is append-only'); END;
