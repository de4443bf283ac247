//! `comments`: reviewers' comments on lines of a revision, never deleted; adding, resolving
//! and reopening one is recorded in the audit trail, in the same transaction.

use serde_json::json;

use super::log;
use super::sql::{Conn, Row, Tx};
use super::{Actor, CommentRow, NewComment, StoreError};
use crate::clock::Millis;
use crate::vocabulary::AuditKind;

const COMMENT_COLUMNS: &str = "SELECT id, run_id, revision_id, line_start, line_end, quote, body,
        author, created_at, resolved_by, resolved_at FROM comments";

fn comment(r: &dyn Row) -> Result<CommentRow, StoreError> {
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

pub(super) async fn add_comment(
    tx: &mut Tx<impl Conn>,
    c: &NewComment<'_>,
) -> Result<CommentRow, StoreError> {
    let id: i64 = tx
        .one(
            "insert comment",
            "INSERT INTO comments (run_id, revision_id, line_start, line_end, quote, body, author, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
            &[
                &c.run_id,
                &c.revision_id,
                &c.line_start,
                &c.line_end,
                &c.quote,
                &c.body,
                &c.by.name,
                &c.at,
            ],
            || StoreError::Invalid {
                run_id: c.run_id.to_owned(),
                message: "the new comment has no id".into(),
            },
            |r| r.get(0),
        )
        .await?;
    log::append(
        tx,
        log::Entry {
            at: c.at,
            actor: &c.by.name,
            process: &c.by.process,
            run_id: c.run_id,
            kind: AuditKind::Commented,
            revision_sha: Some(c.revision_sha),
            data: json!({"commentId": id, "revisionId": c.revision_id,
                         "lines": [c.line_start, c.line_end], "text": c.body}),
        },
    )
    .await?;
    one_comment(tx, id).await
}

pub(super) async fn comments(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
) -> Result<Vec<CommentRow>, StoreError> {
    let sql = format!("{COMMENT_COLUMNS} WHERE run_id = $1 ORDER BY id");
    tx.all("list comments", &sql, &[&run_id], comment).await
}

async fn one_comment(tx: &mut Tx<impl Conn>, id: i64) -> Result<CommentRow, StoreError> {
    let sql = format!("{COMMENT_COLUMNS} WHERE id = $1");
    let missing = || StoreError::UnknownComment(id);
    tx.one("load comment", &sql, &[&id], missing, comment).await
}

pub(super) async fn set_resolved(
    tx: &mut Tx<impl Conn>,
    id: i64,
    resolved: bool,
    by: &Actor,
    at: Millis,
) -> Result<CommentRow, StoreError> {
    let before = one_comment(tx, id).await?;
    if before.resolved_at.is_some() == resolved {
        return Ok(before);
    }
    let (who, when) = if resolved {
        (Some(by.name.as_str()), Some(at))
    } else {
        (None, None)
    };
    tx.later(
        "resolve comment",
        "UPDATE comments SET resolved_by = $2, resolved_at = $3 WHERE id = $1",
        &[&id, &who, &when],
    )
    .await?;
    let sha: Option<String> = tx
        .row(
            "load comment's revision",
            "SELECT sha256 FROM plan_revisions WHERE id = $1",
            &[&before.revision_id],
            |r| r.get(0),
        )
        .await?;
    log::append(
        tx,
        log::Entry {
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
    )
    .await?;
    one_comment(tx, id).await
}
