//! `decisions`: at most one per item, bound to the plan revision it was made on.

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::json;

use super::{audit, events, query, runs, word};
use crate::store::*;

/// A decision's columns, `d` joined with its revision `v`: the last one is the plan its resume
/// data leaves out (migration 11: the revision's body, when that is the plan).
pub(super) const COLUMNS: &str = "d.id, d.run_id, d.tool_call_id, d.revision_id, d.action,
    d.feedback, d.resume_data, d.decided_at, d.decided_by,
    CASE WHEN d.plan_from_revision THEN v.body END";

/// A decision from the row's columns `at..at + 10`, or `None` when they are NULL (an outer
/// join).
pub(super) fn row_at(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Option<DecisionRow>> {
    let Some(id) = r.get::<_, Option<i64>>(at)? else {
        return Ok(None);
    };
    Ok(Some(DecisionRow {
        id,
        run_id: r.get(at + 1)?,
        tool_call_id: r.get(at + 2)?,
        revision_id: r.get(at + 3)?,
        action: word(Action::parse, r.get(at + 4)?, at + 4)?,
        feedback: r.get(at + 5)?,
        resume_data: resume_data_as_read(r.get(at + 6)?, r.get(at + 9)?),
        decided_at: r.get(at + 7)?,
        decided_by: r.get(at + 8)?,
    }))
}

pub(super) fn find(
    conn: &Connection,
    run_id: &str,
    tool_call_id: &str,
) -> Result<Option<DecisionRow>, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM decisions d LEFT JOIN plan_revisions v ON v.id = d.revision_id
         WHERE d.run_id = ?1 AND d.tool_call_id = ?2"
    ))
    .and_then(|mut stmt| {
        stmt.query_row(params![run_id, tool_call_id], |r| row_at(r, 0))
            .optional()
    })
    .map(Option::flatten)
    .map_err(query("find decision"))
}

/// The plan revision an open item waits on (`None` for an item without a plan), after checking
/// that the item is open and, with `expect_sha`, that its plan is the one the person saw. Its
/// text is not read: a decision only needs to know which revision it is.
pub(super) fn open_revision(
    tx: &Connection,
    run_id: &str,
    tool_call_id: &str,
    expect_sha: Option<&str>,
) -> Result<Option<WaitingPlan>, StoreError> {
    let open = tx
        .prepare_cached(
            "SELECT p.revision_id, v.sha256, v.revision_no, v.path
             FROM pending p LEFT JOIN plan_revisions v ON v.id = p.revision_id
             WHERE p.run_id = ?1 AND p.tool_call_id = ?2",
        )
        .and_then(|mut stmt| {
            stmt.query_row(params![run_id, tool_call_id], |r| {
                Ok(match r.get::<_, Option<i64>>(0)? {
                    Some(id) => Some(WaitingPlan {
                        id,
                        sha256: r.get(1)?,
                        revision_no: r.get(2)?,
                        path: r.get(3)?,
                    }),
                    None => None,
                })
            })
            .optional()
        })
        .map_err(query("find open item"))?;
    let Some(waiting) = open else {
        if let Some(existing) = find(tx, run_id, tool_call_id)? {
            return Err(StoreError::already_decided(run_id, tool_call_id, &existing));
        }
        return Err(StoreError::NotPending {
            run_id: run_id.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
        });
    };
    if let (Some(expect), Some(plan)) = (expect_sha, &waiting) {
        plan.check_seen(expect)?;
    }
    Ok(waiting)
}

/// Checks the item is open (and, with `expect_sha`, that its plan is the one the person saw),
/// records the decision, closes the item and logs it: all or nothing.
pub(super) fn record(tx: &Connection, d: &NewDecision<'_>) -> Result<DecisionRow, StoreError> {
    let plan = open_revision(tx, d.run_id, d.tool_call_id, d.expect_sha)?;
    let revision_id = plan.as_ref().map(|p| p.id);
    let plan_from_revision = match (revision_id, d.plan()) {
        (Some(id), Some(text)) => tx
            .prepare_cached("SELECT body = ?2 FROM plan_revisions WHERE id = ?1")
            .and_then(|mut stmt| stmt.query_row(params![id, text], |r| r.get(0)))
            .map_err(query("compare the plan with its revision"))?,
        _ => false,
    };
    tx.execute(
        "INSERT INTO decisions (run_id, tool_call_id, revision_id, action, feedback, resume_data,
                                decided_at, decided_by, plan_from_revision)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            d.run_id,
            d.tool_call_id,
            revision_id,
            d.action.as_str(),
            d.feedback,
            d.stored_resume_data(plan_from_revision),
            d.at,
            d.by.name,
            plan_from_revision
        ],
    )
    .map_err(query("insert decision"))?;
    let id = tx.last_insert_rowid();
    tx.execute(
        "DELETE FROM pending WHERE run_id = ?1 AND tool_call_id = ?2",
        params![d.run_id, d.tool_call_id],
    )
    .map_err(query("close item"))?;
    let data = json!({
        "toolCallId": d.tool_call_id,
        "action": d.action,
        "feedback": d.feedback,
        "revisionId": revision_id,
    });
    events::insert(tx, d.run_id, d.at, EventKind::Decided, &data)?;
    audit::append(
        tx,
        audit::Entry {
            at: d.at,
            actor: &d.by.name,
            process: &d.by.process,
            run_id: d.run_id,
            kind: AuditKind::Decided,
            revision_sha: plan.as_ref().map(|p| p.sha256.as_str()),
            data: d.audit_data(plan_from_revision),
        },
    )?;
    if let Some(mode) = d.mode_after {
        runs::switch_mode(tx, d.run_id, mode, d.at, d.by)?;
    }
    runs::settle_session(tx, d.run_id, d.at)?;
    Ok(d.stored_as(id, revision_id))
}
