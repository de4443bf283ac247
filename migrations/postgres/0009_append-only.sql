-- As SQLite's migration 18, and emptying them is refused as it is for the audit trail.

CREATE FUNCTION plandesk_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION '% is append-only', TG_TABLE_NAME; END $$;
CREATE TRIGGER plan_revisions_are_append_only BEFORE UPDATE OR DELETE ON plan_revisions
    FOR EACH ROW EXECUTE FUNCTION plandesk_is_append_only();
CREATE TRIGGER plan_revisions_are_never_emptied BEFORE TRUNCATE ON plan_revisions
    FOR EACH STATEMENT EXECUTE FUNCTION plandesk_is_append_only();
CREATE TRIGGER decisions_are_append_only BEFORE UPDATE OR DELETE ON decisions
    FOR EACH ROW EXECUTE FUNCTION plandesk_is_append_only();
CREATE TRIGGER decisions_are_never_emptied BEFORE TRUNCATE ON decisions
    FOR EACH STATEMENT EXECUTE FUNCTION plandesk_is_append_only();
CREATE TRIGGER work_is_append_only BEFORE UPDATE OR DELETE ON work
    FOR EACH ROW EXECUTE FUNCTION plandesk_is_append_only();
CREATE TRIGGER work_is_never_emptied BEFORE TRUNCATE ON work
    FOR EACH STATEMENT EXECUTE FUNCTION plandesk_is_append_only();
