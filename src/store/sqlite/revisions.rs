//! `plan_revisions`: every submitted plan, never overwritten. Listings read each revision with
//! its decision and whether its item is still open in one query.

use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};
use serde_json::json;

use super::{audit, decisions, events, query};
use crate::clock::Millis;
use crate::store::*;

// A call can have several revisions (a reviewer's edits): its open item and its decision belong
// to the one they name.
const SELECT: &str = "SELECT v.id, v.run_id, v.tool_call_id, v.path, v.title, {body}, v.sha256,
        v.revision_no, v.submitted_at, r.prompt, p.run_id IS NOT NULL, v.author, {decision}
    FROM plan_revisions v
    JOIN runs r ON r.id = v.run_id
    LEFT JOIN pending p ON p.run_id = v.run_id AND p.tool_call_id = v.tool_call_id
        AND p.revision_id = v.id
    LEFT JOIN decisions d {decisions_index} ON d.run_id = v.run_id AND d.tool_call_id = v.tool_call_id
        AND (d.revision_id IS NULL OR d.revision_id = v.id)";

/// The decision's columns a listing reads: null resume data (an engine run's decides a plan,
/// and a listing shows none), and so no plan to put back in it.
const LISTED_DECISION: &str = "d.id, d.run_id, d.tool_call_id, d.revision_id, d.action,
    d.feedback, 'null', d.decided_at, d.decided_by, NULL";

/// The query's text, with each revision's body and its decision's resume data; or, for
/// listings, an empty body and null resume data in their place, the decision read from the
/// listing's index (migration 10: its row would be read past its resume data).
fn select(bodies: bool) -> String {
    let (body, decision, decisions_index) = if bodies {
        ("v.body", decisions::COLUMNS, "")
    } else {
        ("''", LISTED_DECISION, "INDEXED BY decisions_listing")
    };
    SELECT
        .replace("{body}", body)
        .replace("{decision}", decision)
        .replace("{decisions_index}", decisions_index)
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RevisionRow> {
    Ok(RevisionRow {
        id: r.get(0)?,
        run_id: r.get(1)?,
        tool_call_id: r.get(2)?,
        path: r.get(3)?,
        title: r.get(4)?,
        body: r.get(5)?,
        sha256: r.get(6)?,
        revision_no: r.get(7)?,
        submitted_at: r.get(8)?,
        prompt: r.get(9)?,
        open: r.get(10)?,
        author: r.get(11)?,
        decision: decisions::row_at(r, 12)?,
    })
}

/// The revision of an item, recorded the first time the item is open (afterwards: its newest,
/// a reviewer's edit if there is one); its number counts the revisions of the same plan file in
/// the same run. The audit trail names `submitter` as its author and `by` as the process.
#[allow(clippy::too_many_arguments)]
pub(super) fn insert_once(
    tx: &Connection,
    run_id: &str,
    tool_call_id: &str,
    plan: &PlanText,
    at: Millis,
    submitter: &str,
    by: &Actor,
) -> Result<i64, StoreError> {
    let existing: Option<i64> = tx
        .query_row(
            "SELECT id FROM plan_revisions WHERE run_id = ?1 AND tool_call_id = ?2
             ORDER BY id DESC LIMIT 1",
            params![run_id, tool_call_id],
            |r| r.get(0),
        )
        .optional()
        .map_err(query("find revision"))?;
    if let Some(id) = existing {
        return Ok(id);
    }
    tx.execute(
        "INSERT INTO plan_revisions (run_id, tool_call_id, path, title, body, sha256, revision_no, submitted_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6,
                 (SELECT COUNT(*) + 1 FROM plan_revisions WHERE run_id = ?1 AND path = ?3), ?7)",
        params![run_id, tool_call_id, plan.path, plan.title, plan.body, plan.sha256, at],
    )
    .map_err(query("insert revision"))?;
    let id = tx.last_insert_rowid();
    let data = json!({"revisionId": id, "toolCallId": tool_call_id, "path": plan.path});
    events::insert(tx, run_id, at, EventKind::PlanSubmitted, &data)?;
    audit::append(
        tx,
        audit::Entry {
            at,
            actor: submitter,
            process: &by.process,
            run_id,
            kind: AuditKind::Submitted,
            revision_sha: Some(&plan.sha256),
            data: json!({"revisionId": id, "toolCallId": tool_call_id, "path": plan.path, "title": plan.title}),
        },
    )?;
    Ok(id)
}

/// A reviewer's edit: a revision of their own, which the open item waits on from now.
pub(super) fn edit(tx: &Connection, e: &NewEdit<'_>) -> Result<RevisionRow, StoreError> {
    let Some(edited) = decisions::open_revision(tx, e.run_id, e.tool_call_id, Some(e.expect_sha))?
    else {
        return Err(StoreError::Invalid {
            run_id: e.run_id.to_owned(),
            message: format!("item {} has no plan to edit", e.tool_call_id),
        });
    };
    let plan = e.plan;
    tx.execute(
        "INSERT INTO plan_revisions (run_id, tool_call_id, path, title, body, sha256, revision_no, submitted_at, author)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6,
                 (SELECT COUNT(*) + 1 FROM plan_revisions WHERE run_id = ?1 AND path = ?3), ?7, ?8)",
        params![e.run_id, e.tool_call_id, edited.path, plan.title, plan.body, plan.sha256, e.at, e.by.name],
    )
    .map_err(query("insert edited revision"))?;
    let id = tx.last_insert_rowid();
    tx.execute(
        "UPDATE pending SET revision_id = ?3 WHERE run_id = ?1 AND tool_call_id = ?2",
        params![e.run_id, e.tool_call_id, id],
    )
    .map_err(query("point the item at the edit"))?;
    let data = json!({"revisionId": id, "toolCallId": e.tool_call_id, "path": edited.path,
                      "editedRevisionId": edited.id, "author": e.by.name});
    events::insert(tx, e.run_id, e.at, EventKind::PlanSubmitted, &data)?;
    audit::append(
        tx,
        audit::Entry {
            at: e.at,
            actor: &e.by.name,
            process: &e.by.process,
            run_id: e.run_id,
            kind: AuditKind::Edited,
            revision_sha: Some(&plan.sha256),
            data: json!({"revisionId": id, "toolCallId": e.tool_call_id, "path": edited.path,
                         "editedSha": edited.sha256, "title": plan.title}),
        },
    )?;
    one(tx, id)
}

/// Revisions (of one run, or all), oldest first, whole.
pub(super) fn of_run(
    conn: &Connection,
    run_id: Option<&str>,
) -> Result<Vec<RevisionRow>, StoreError> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "{} WHERE ?1 IS NULL OR v.run_id = ?1 ORDER BY v.id",
            select(true)
        ))
        .map_err(query("list revisions"))?;
    let rows = stmt
        .query_map([run_id], row)
        .map_err(query("list revisions"))?;
    rows.collect::<Result<_, _>>()
        .map_err(query("list revisions"))
}

/// The full-text index's query for `words` in a row, the last one possibly the start of a
/// word: one quoted FTS5 phrase (quotes doubled) with a prefix star, so that nothing a person
/// types is read as FTS5 syntax.
fn phrase(words: &[String]) -> String {
    format!("\"{}\"*", words.join(" ").replace('"', "\"\""))
}

/// Revisions (of one run, or all) whose title or body has `words` in a row (the last one may be
/// the start of a word); oldest first, whole. One query, through the full-text index.
pub(super) fn search(
    conn: &Connection,
    run_id: Option<&str>,
    words: &[String],
) -> Result<Vec<RevisionRow>, StoreError> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "{} WHERE v.id IN (SELECT rowid FROM revisions_fts WHERE revisions_fts MATCH ?1)
             AND (?2 IS NULL OR v.run_id = ?2) ORDER BY v.id",
            select(true)
        ))
        .map_err(query("search revisions"))?;
    let rows = stmt
        .query_map(params![phrase(words), run_id], row)
        .map_err(query("search revisions"))?;
    rows.collect::<Result<_, _>>()
        .map_err(query("search revisions"))
}

/// A listing's query and its arguments: only the conditions it has, so that SQLite walks the
/// listing's index backwards from the page's start and stops at its end.
fn listing_query(listing: &Listing<'_>) -> (String, Vec<Value>) {
    let mut conditions = Vec::new();
    let mut args = Vec::new();
    if let Some(run_id) = listing.run_id {
        conditions.push("v.run_id = ?".to_owned());
        args.push(Value::Text(run_id.to_owned()));
    }
    if !listing.words.is_empty() {
        conditions.push(
            "v.id IN (SELECT rowid FROM revisions_fts WHERE revisions_fts MATCH ?)".to_owned(),
        );
        args.push(Value::Text(phrase(listing.words)));
    }
    if let Some(states) = listing.states {
        conditions.push(states.condition());
    }
    if let Some(before) = listing.before {
        conditions.push("v.id < ?".to_owned());
        args.push(Value::Integer(before));
    }
    let mut sql = select(false);
    if !conditions.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conditions.join(" AND "));
    }
    sql.push_str(" ORDER BY v.id DESC");
    if let Some(limit) = listing.limit {
        sql.push_str(" LIMIT ?");
        args.push(Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
    }
    (sql, args)
}

/// A listing (see [`Listing`]), newest first: one query, which reads the listing's indexes,
/// not the rows of the revisions and decisions (they hold plans). A page starts after the
/// last one's end (by id); SQLite has one writer at a time, so ids are committed in order and
/// a later page never misses a revision committed since.
pub(super) fn list(
    conn: &Connection,
    listing: &Listing<'_>,
) -> Result<Vec<RevisionRow>, StoreError> {
    let (sql, args) = listing_query(listing);
    let mut stmt = conn.prepare_cached(&sql).map_err(query("list revisions"))?;
    let rows = stmt
        .query_map(params_from_iter(args), row)
        .map_err(query("list revisions"))?;
    rows.collect::<Result<_, _>>()
        .map_err(query("list revisions"))
}

/// How SQLite reads a listing: each step of its query plan, a line each.
#[cfg(test)]
pub(super) fn listing_plan(conn: &Connection, listing: &Listing<'_>) -> rusqlite::Result<String> {
    let (sql, args) = listing_query(listing);
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
    let steps = stmt.query_map(params_from_iter(args), |r| r.get::<_, String>(3))?;
    Ok(steps.collect::<rusqlite::Result<Vec<_>>>()?.join("\n"))
}

pub(super) fn by_sha(conn: &Connection, prefix: &str) -> Result<Vec<RevisionRow>, StoreError> {
    // A range scan on the sha index: every hash that starts with `prefix` sorts between it and
    // the prefix followed by the highest hex digit.
    let upper = format!("{prefix}g");
    let mut stmt = conn
        .prepare_cached(&format!(
            "{} WHERE v.sha256 >= ?1 AND v.sha256 < ?2 ORDER BY v.id",
            select(true)
        ))
        .map_err(query("find revisions by hash"))?;
    let rows = stmt
        .query_map(params![prefix, upper], row)
        .map_err(query("find revisions by hash"))?;
    rows.collect::<Result<_, _>>()
        .map_err(query("find revisions by hash"))
}

pub(super) fn one(conn: &Connection, id: i64) -> Result<RevisionRow, StoreError> {
    conn.prepare_cached(&format!("{} WHERE v.id = ?1", select(true)))
        .and_then(|mut stmt| stmt.query_row([id], row).optional())
        .map_err(query("load revision"))?
        .ok_or(StoreError::UnknownRevision(id))
}
