//! `plan_revisions` (every submitted plan, never overwritten; listings read each revision with
//! its decision and whether its item is still open in one query) and `comments` (reviewers'
//! comments on lines of a revision: never deleted, resolving one is recorded).

use std::collections::BTreeSet;

use deadpool_postgres::GenericClient;
use serde_json::json;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use super::items::{decision_at, open_revision, DECISION_COLUMNS, LISTED_DECISION_COLUMNS};
use super::{col, execute, log, row, rows, Tx};
use crate::clock::Millis;
use crate::store::words::{has_phrase, phrase, words};
use crate::store::*;

/// How much of a plan's distinct words the search index keeps (a tsvector is limited to 1 MiB);
/// a plan with more is checked word by word on every search instead, so it is found all the
/// same and never refused for its size.
const MAX_INDEX_BYTES: usize = 256 * 1024;
/// Longest word the index keeps (a plan with a longer one is checked word by word, as above).
const MAX_WORD_BYTES: usize = 200;

/// A word as a quoted tsvector or tsquery lexeme (ours are letters and digits only; quoted and
/// escaped all the same, so no text is ever read as syntax).
fn lexeme(word: &str) -> String {
    format!("'{}'", word.replace('\\', "\\\\").replace('\'', "''"))
}

/// The query's text with each revision's body.
fn select() -> String {
    select_with(true)
}

/// The query's text; without `bodies` (listings), an empty body stands in for each revision's
/// and null for its decision's resume data.
fn select_with(bodies: bool) -> String {
    select_columns(if bodies { "v.body" } else { "''" }, !bodies)
}

/// The query's text, with `body` for each revision's body, and for a `listing` null for its
/// decision's resume data.
fn select_columns(body: &str, listing: bool) -> String {
    let decision = if listing {
        LISTED_DECISION_COLUMNS
    } else {
        DECISION_COLUMNS
    };
    // A call can have several revisions (a reviewer's edits): its open item and its decision
    // belong to the one they name.
    format!(
        "SELECT v.id, v.run_id, v.tool_call_id, v.path, v.title, {body}, v.sha256,
            v.revision_no, v.submitted_at, r.prompt, p.run_id IS NOT NULL, v.author, {decision}
        FROM plan_revisions v
        JOIN runs r ON r.id = v.run_id
        LEFT JOIN pending p ON p.run_id = v.run_id AND p.tool_call_id = v.tool_call_id
            AND p.revision_id = v.id
        LEFT JOIN decisions d ON d.run_id = v.run_id AND d.tool_call_id = v.tool_call_id
            AND (d.revision_id IS NULL OR d.revision_id = v.id)"
    )
}

fn revision(r: &Row) -> Result<RevisionRow, StoreError> {
    Ok(RevisionRow {
        id: col(r, 0)?,
        run_id: col(r, 1)?,
        tool_call_id: col(r, 2)?,
        path: col(r, 3)?,
        title: col(r, 4)?,
        body: col(r, 5)?,
        sha256: col(r, 6)?,
        revision_no: col(r, 7)?,
        submitted_at: col(r, 8)?,
        prompt: col(r, 9)?,
        open: col(r, 10)?,
        author: col(r, 11)?,
        decision: decision_at(r, 12)?,
    })
}

/// The search index's entry for a plan: its distinct words as a tsvector literal (written
/// without PostgreSQL's parser, so words are exactly [`words`]'s), and whether that is all of
/// them.
fn index_entry(plan: &PlanText) -> (String, bool) {
    let all: BTreeSet<String> = words(&plan.title)
        .into_iter()
        .chain(words(&plan.body))
        .collect();
    let mut literal = String::new();
    let mut complete = true;
    for word in &all {
        if word.len() > MAX_WORD_BYTES || literal.len() + word.len() + 3 > MAX_INDEX_BYTES {
            complete = false;
            continue;
        }
        if !literal.is_empty() {
            literal.push(' ');
        }
        literal.push_str(&lexeme(word));
    }
    (literal, complete)
}

/// Inserts a revision (numbered among the revisions of the same plan file in the same run).
async fn insert(
    tx: &Tx<'_>,
    run_id: &str,
    tool_call_id: &str,
    path: &str,
    plan: &PlanText,
    at: Millis,
    author: Option<&str>,
) -> Result<i64, StoreError> {
    let (words, complete) = index_entry(plan);
    let inserted = row(
        tx,
        "insert revision",
        "INSERT INTO plan_revisions (run_id, tool_call_id, path, title, body, sha256, revision_no,
                                     submitted_at, author, words, words_complete)
         VALUES ($1, $2, $3, $4, $5, $6,
                 (SELECT COUNT(*) + 1 FROM plan_revisions WHERE run_id = $1 AND path = $3),
                 $7, $8, $9::text::tsvector, $10)
         RETURNING id",
        &[
            &run_id,
            &tool_call_id,
            &path,
            &plan.title,
            &plan.body,
            &plan.sha256,
            &at,
            &author,
            &words,
            &complete,
        ],
    )
    .await?;
    match inserted {
        Some(r) => col(&r, 0),
        None => Err(StoreError::Invalid {
            run_id: run_id.to_owned(),
            message: "the new revision has no id".into(),
        }),
    }
}

/// The revision of an item, recorded the first time the item is open (afterwards: its newest,
/// a reviewer's edit if there is one); `submitter` is who the audit trail says sent it (the
/// agent, or the token an outside agent came with).
pub(super) async fn insert_once(
    tx: &Tx<'_>,
    run_id: &str,
    tool_call_id: &str,
    plan: &PlanText,
    at: Millis,
    submitter: &str,
    by: &Actor,
) -> Result<i64, StoreError> {
    let existing = row(
        tx,
        "find revision",
        "SELECT id FROM plan_revisions WHERE run_id = $1 AND tool_call_id = $2
         ORDER BY id DESC LIMIT 1",
        &[&run_id, &tool_call_id],
    )
    .await?;
    if let Some(existing) = existing {
        return col(&existing, 0);
    }
    let id = insert(tx, run_id, tool_call_id, &plan.path, plan, at, None).await?;
    let data = json!({"revisionId": id, "toolCallId": tool_call_id, "path": plan.path});
    log::event(tx, run_id, at, EventKind::PlanSubmitted, &data).await?;
    log::append(
        tx,
        log::Entry {
            at,
            actor: submitter,
            process: &by.process,
            run_id,
            kind: AuditKind::Submitted,
            revision_sha: Some(&plan.sha256),
            data: json!({"revisionId": id, "toolCallId": tool_call_id, "path": plan.path, "title": plan.title}),
        },
    )
    .await?;
    Ok(id)
}

/// A reviewer's edit: a revision of their own, which the open item waits on from now.
pub(super) async fn edit(tx: &Tx<'_>, e: &NewEdit<'_>) -> Result<RevisionRow, StoreError> {
    let Some(edited) = open_revision(tx, e.run_id, e.tool_call_id, Some(e.expect_sha)).await?
    else {
        return Err(StoreError::Invalid {
            run_id: e.run_id.to_owned(),
            message: format!("item {} has no plan to edit", e.tool_call_id),
        });
    };
    let plan = e.plan;
    let id = insert(
        tx,
        e.run_id,
        e.tool_call_id,
        &edited.path,
        plan,
        e.at,
        Some(&e.by.name),
    )
    .await?;
    execute(
        tx,
        "point the item at the edit",
        "UPDATE pending SET revision_id = $3 WHERE run_id = $1 AND tool_call_id = $2",
        &[&e.run_id, &e.tool_call_id, &id],
    )
    .await?;
    let data = json!({"revisionId": id, "toolCallId": e.tool_call_id, "path": edited.path,
                      "editedRevisionId": edited.id, "author": e.by.name});
    log::event(tx, e.run_id, e.at, EventKind::PlanSubmitted, &data).await?;
    log::append(
        tx,
        log::Entry {
            at: e.at,
            actor: &e.by.name,
            process: &e.by.process,
            run_id: e.run_id,
            kind: AuditKind::Edited,
            revision_sha: Some(&plan.sha256),
            data: json!({"revisionId": id, "toolCallId": e.tool_call_id, "path": edited.path,
                         "editedSha": edited.sha256, "title": plan.title}),
        },
    )
    .await?;
    one(tx, id).await
}

/// Revisions (of one run, or all), oldest first, whole.
pub(super) async fn of_run(
    c: &impl GenericClient,
    run_id: Option<&str>,
) -> Result<Vec<RevisionRow>, StoreError> {
    rows(
        c,
        "list revisions",
        &format!(
            "{} WHERE $1::text IS NULL OR v.run_id = $1 ORDER BY v.id",
            select()
        ),
        &[&run_id],
    )
    .await?
    .iter()
    .map(revision)
    .collect()
}

/// The index's query for the phrase `phrase`, the last word as a prefix; `None` when a word is
/// too long for the index (then it is in no indexed plan: only those checked word by word can
/// have it).
fn index_query(phrase: &[String]) -> Option<String> {
    let (last, whole) = phrase.split_last()?;
    phrase.iter().all(|w| w.len() <= MAX_WORD_BYTES).then(|| {
        let mut terms: Vec<String> = whole.iter().map(|w| lexeme(w)).collect();
        terms.push(format!("{}:*", lexeme(last)));
        terms.join(" & ")
    })
}

/// Whether a candidate of the index has `phrase` in a row, in its title or its plan.
fn says(candidate: &RevisionRow, phrase: &[String]) -> bool {
    has_phrase(&candidate.title, phrase) || has_phrase(&candidate.body, phrase)
}

/// Revisions (of one run, or all) whose title or body has `typed` in a row (the last word may
/// be the start of one), oldest first, whole: the index finds the plans that have every word
/// (the last as a prefix), and each of those is then read for the phrase.
pub(super) async fn search(
    c: &impl GenericClient,
    run_id: Option<&str>,
    typed: &[String],
) -> Result<Vec<RevisionRow>, StoreError> {
    let phrase = phrase(typed);
    if phrase.is_empty() {
        return Ok(Vec::new());
    }
    let found = rows(
        c,
        "search revisions",
        &format!(
            "{} WHERE (v.words @@ $1::text::tsquery OR NOT v.words_complete)
             AND ($2::text IS NULL OR v.run_id = $2) ORDER BY v.id",
            select()
        ),
        &[&index_query(&phrase), &run_id],
    )
    .await?;
    let mut hits = Vec::new();
    for r in &found {
        let candidate = revision(r)?;
        if says(&candidate, &phrase) {
            hits.push(candidate);
        }
    }
    Ok(hits)
}

/// How many candidates a searching listing reads at a time, at least: each is read whole to
/// check for the phrase, and most of the index's candidates have it.
const SEARCH_BATCH: i64 = 200;

/// A listing's query: only the conditions it has (a condition PostgreSQL cannot know to be
/// absent, such as `$2 IS NULL OR v.id < $2`, would keep a cached statement's generic plan
/// from starting its walk at the page's start), with their arguments numbered in order.
/// `before` is the page's start, `limit` its size, `matching` the index's query for words.
fn listing_query<'a>(
    columns: &str,
    listing: &'a Listing<'_>,
    before: &'a Option<i64>,
    limit: &'a Option<i64>,
    matching: Option<&'a Option<String>>,
) -> (String, Vec<&'a (dyn ToSql + Sync)>) {
    let mut conditions = Vec::new();
    let mut args: Vec<&'a (dyn ToSql + Sync)> = Vec::new();
    if listing.run_id.is_some() {
        args.push(&listing.run_id);
        conditions.push(format!("v.run_id = ${}", args.len()));
    }
    if before.is_some() {
        args.push(before);
        conditions.push(format!("v.id < ${}", args.len()));
    }
    if let Some(states) = listing.states {
        conditions.push(states.condition());
    }
    if let Some(matching) = matching {
        args.push(matching);
        conditions.push(format!(
            "(v.words @@ ${}::text::tsquery OR NOT v.words_complete)",
            args.len()
        ));
    }
    let mut sql = columns.to_owned();
    if !conditions.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conditions.join(" AND "));
    }
    sql.push_str(" ORDER BY v.id DESC");
    if limit.is_some() {
        args.push(limit);
        sql.push_str(&format!(" LIMIT ${}", args.len()));
    }
    (sql, args)
}

/// A listing (see [`Listing`]), newest first. Without words, one query. With words, the
/// index's candidates are read whole (newest first, in batches while the page is not full) and
/// kept if they have the phrase; their bodies are then dropped.
///
/// A page starts after the last one's end (by id). Ids are given out as revisions are
/// inserted, and two writers' transactions may commit in the other order: a revision committed
/// just then with an id older than a page already read shows when the list is read again.
pub(super) async fn list(
    c: &impl GenericClient,
    listing: &Listing<'_>,
) -> Result<Vec<RevisionRow>, StoreError> {
    let limit = listing.limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
    if listing.words.is_empty() {
        let columns = select_with(false);
        let (sql, args) = listing_query(&columns, listing, &listing.before, &limit, None);
        return rows(c, "list revisions", &sql, &args)
            .await?
            .iter()
            .map(revision)
            .collect();
    }
    let phrase = phrase(listing.words);
    if phrase.is_empty() {
        return Ok(Vec::new());
    }
    let matching = index_query(&phrase);
    let columns = select_columns("v.body", true);
    let batch = limit.map(|l| l.max(SEARCH_BATCH));
    let mut before = listing.before;
    let mut hits = Vec::new();
    loop {
        let found = {
            let (sql, args) = listing_query(&columns, listing, &before, &batch, Some(&matching));
            rows(c, "search revisions", &sql, &args).await?
        };
        for r in &found {
            let mut candidate = revision(r)?;
            before = Some(candidate.id);
            if says(&candidate, &phrase) {
                candidate.body = String::new();
                hits.push(candidate);
            }
        }
        let exhausted = batch.is_none_or(|b| (found.len() as i64) < b);
        if exhausted || limit.is_some_and(|l| hits.len() as i64 >= l) {
            break;
        }
    }
    if let Some(limit) = listing.limit {
        hits.truncate(limit);
    }
    Ok(hits)
}

pub(super) async fn by_sha(
    c: &impl GenericClient,
    prefix: &str,
) -> Result<Vec<RevisionRow>, StoreError> {
    // A range scan on the sha index (byte order): every hash that starts with `prefix` sorts
    // between it and the prefix followed by the highest hex digit.
    let upper = format!("{prefix}g");
    rows(
        c,
        "find revisions by hash",
        &format!(
            "{} WHERE v.sha256 >= $1 AND v.sha256 < $2 ORDER BY v.id",
            select()
        ),
        &[&prefix, &upper],
    )
    .await?
    .iter()
    .map(revision)
    .collect()
}

pub(super) async fn one(c: &impl GenericClient, id: i64) -> Result<RevisionRow, StoreError> {
    match row(
        c,
        "load revision",
        &format!("{} WHERE v.id = $1", select()),
        &[&id],
    )
    .await?
    {
        Some(r) => revision(&r),
        None => Err(StoreError::UnknownRevision(id)),
    }
}

const COMMENT_COLUMNS: &str = "SELECT id, run_id, revision_id, line_start, line_end, quote, body,
        author, created_at, resolved_by, resolved_at FROM comments";

fn comment(r: &Row) -> Result<CommentRow, StoreError> {
    Ok(CommentRow {
        id: col(r, 0)?,
        run_id: col(r, 1)?,
        revision_id: col(r, 2)?,
        line_start: col(r, 3)?,
        line_end: col(r, 4)?,
        quote: col(r, 5)?,
        body: col(r, 6)?,
        author: col(r, 7)?,
        created_at: col(r, 8)?,
        resolved_by: col(r, 9)?,
        resolved_at: col(r, 10)?,
    })
}

pub(super) async fn add_comment(tx: &Tx<'_>, c: &NewComment<'_>) -> Result<CommentRow, StoreError> {
    let inserted = row(
        tx,
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
    )
    .await?
    .ok_or_else(|| StoreError::Invalid {
        run_id: c.run_id.to_owned(),
        message: "the new comment has no id".into(),
    })?;
    let id: i64 = col(&inserted, 0)?;
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
    c: &impl GenericClient,
    run_id: &str,
) -> Result<Vec<CommentRow>, StoreError> {
    rows(
        c,
        "list comments",
        &format!("{COMMENT_COLUMNS} WHERE run_id = $1 ORDER BY id"),
        &[&run_id],
    )
    .await?
    .iter()
    .map(comment)
    .collect()
}

async fn one_comment(c: &impl GenericClient, id: i64) -> Result<CommentRow, StoreError> {
    match row(
        c,
        "load comment",
        &format!("{COMMENT_COLUMNS} WHERE id = $1"),
        &[&id],
    )
    .await?
    {
        Some(r) => comment(&r),
        None => Err(StoreError::UnknownComment(id)),
    }
}

pub(super) async fn set_resolved(
    tx: &Tx<'_>,
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
    execute(
        tx,
        "resolve comment",
        "UPDATE comments SET resolved_by = $2, resolved_at = $3 WHERE id = $1",
        &[&id, &who, &when],
    )
    .await?;
    let sha = row(
        tx,
        "load comment's revision",
        "SELECT sha256 FROM plan_revisions WHERE id = $1",
        &[&before.revision_id],
    )
    .await?
    .map(|r| col::<String>(&r, 0))
    .transpose()?;
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
