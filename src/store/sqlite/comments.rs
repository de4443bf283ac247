//! `comments`: reviewers' comments on lines of a revision. Never deleted; resolving one (or
//! reopening it) is recorded on it and in the audit trail.

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::json;

use super::{audit, query};
use crate::clock::Millis;
use crate::store::*;

const SELECT: &str = "SELECT id, run_id, revision_id, line_start, line_end, quote, body, author,
        created_at, resolved_by, resolved_at FROM comments";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CommentRow> {
    Ok(CommentRow {
        id: r.get(0)?,
        run_id: r.get(1)?,
        revision_id: r.get(2)?,
        line_start: r.get(3)?,
        line_end: r.get(4)?,
        quote: r.get(5)?,
        body: r.get(6)?,
        author: r.get(7)?,
        created_at: r.get(8)?,
        resolved_by: r.get(9)?,
        resolved_at: r.get(10)?,
    })
}

pub(super) fn insert(tx: &Connection, c: &NewComment<'_>) -> Result<CommentRow, StoreError> {
    tx.execute(
        "INSERT INTO comments (run_id, revision_id, line_start, line_end, quote, body, author, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            c.run_id,
            c.revision_id,
            c.line_start,
            c.line_end,
            c.quote,
            c.body,
            c.by.name,
            c.at
        ],
    )
    .map_err(query("insert comment"))?;
    let id = tx.last_insert_rowid();
    audit::append(
        tx,
        audit::Entry {
            at: c.at,
            actor: &c.by.name,
            process: &c.by.process,
            run_id: c.run_id,
            kind: AuditKind::Commented,
            revision_sha: Some(c.revision_sha),
            data: json!({"commentId": id, "revisionId": c.revision_id,
                         "lines": [c.line_start, c.line_end], "text": c.body}),
        },
    )?;
    one(tx, id)
}

pub(super) fn of_run(conn: &Connection, run_id: &str) -> Result<Vec<CommentRow>, StoreError> {
    let mut stmt = conn
        .prepare_cached(&format!("{SELECT} WHERE run_id = ?1 ORDER BY id"))
        .map_err(query("list comments"))?;
    let rows = stmt
        .query_map([run_id], row)
        .map_err(query("list comments"))?;
    rows.collect::<Result<_, _>>()
        .map_err(query("list comments"))
}

pub(super) fn one(conn: &Connection, id: i64) -> Result<CommentRow, StoreError> {
    conn.prepare_cached(&format!("{SELECT} WHERE id = ?1"))
        .and_then(|mut stmt| stmt.query_row([id], row).optional())
        .map_err(query("load comment"))?
        .ok_or(StoreError::UnknownComment(id))
}

pub(super) fn set_resolved(
    tx: &Connection,
    id: i64,
    resolved: bool,
    by: &Actor,
    at: Millis,
) -> Result<CommentRow, StoreError> {
    let before = one(tx, id)?;
    if before.resolved_at.is_some() == resolved {
        return Ok(before);
    }
    let (who, when) = if resolved {
        (Some(by.name.as_str()), Some(at))
    } else {
        (None, None)
    };
    tx.execute(
        "UPDATE comments SET resolved_by = ?2, resolved_at = ?3 WHERE id = ?1",
        params![id, who, when],
    )
    .map_err(query("resolve comment"))?;
    let sha: Option<String> = tx
        .query_row(
            "SELECT sha256 FROM plan_revisions WHERE id = ?1",
            [before.revision_id],
            |r| r.get(0),
        )
        .optional()
        .map_err(query("load comment's revision"))?;
    audit::append(
        tx,
        audit::Entry {
            at,
            actor: &by.name,
            process: &by.process,
            run_id: &before.run_id,
            kind: if resolved {
                AuditKind::CommentResolved
            } else {
                AuditKind::CommentReopened
            },
            revision_sha: sha.as_deref(),
            data: json!({"commentId": id}),
        },
    )?;
    one(tx, id)
}
