//! `plan_revisions`: every submitted plan, never overwritten; listings read each revision with
//! its decision and whether its item is still open in one query. A revision of some length is
//! stored compressed against the first revision of its plan file (see [`text_at`]).
//!
//! Search is where the two databases differ most: SQLite's FTS5 table (written here) finds
//! the plans that have a phrase exactly; PostgreSQL's `tsvector` column (written here, from
//! [`words`]) finds those that have its words, which are then read for the phrase.

use std::collections::BTreeSet;

use serde_json::json;

use super::conversation;
use super::items::{decision_at, open_revision, DECISION_COLUMNS, LISTED_DECISION_COLUMNS};
use super::sql::{self, Conn, Dialect, Row, ToArg, Tx};
use super::words::{has_phrase, phrase, words};
use super::*;
use crate::clock::Millis;
use crate::vocabulary::*;

/// How much of a plan's distinct words PostgreSQL's index keeps (a tsvector is limited to
/// 1 MiB); a plan with more is checked word by word on every search instead, so it is found
/// all the same and never refused for its size.
const MAX_INDEX_BYTES: usize = 256 * 1024;
/// Longest word that index keeps (a plan with a longer one is checked word by word, as above).
const MAX_WORD_BYTES: usize = 200;

/// A word as a quoted tsvector or tsquery lexeme (ours are letters and digits only; quoted and
/// escaped all the same, so no text is ever read as syntax).
fn lexeme(word: &str) -> String {
    format!("'{}'", word.replace('\\', "\\\\").replace('\'', "''"))
}

/// A revision's text: `v`'s body, or its compressed bytes with the text of the revision `b`
/// they are compressed against (joined by [`BASE_JOIN`]). Read by [`text_at`].
pub(super) const TEXT_COLUMNS: &str = "v.body, v.packed, b.body, b.packed";
/// Joins the revision `b` that `v` is compressed against, if any.
pub(super) const BASE_JOIN: &str = "LEFT JOIN plan_revisions b ON b.id = v.packed_against";
/// [`TEXT_COLUMNS`] for a listing, which reads no plan.
const NO_TEXT: &str = "'', CAST(NULL AS BYTEA), CAST(NULL AS TEXT), CAST(NULL AS BYTEA)";

/// A revision's text from its row's [`TEXT_COLUMNS`] at `at..at + 4`; `None` when they are
/// null (an outer join found no revision). A revision is stored as its text, or as nothing and
/// its text compressed (see [`conversation::compress`]) against the text of another revision,
/// stored on its own, or against nothing.
pub(super) fn text_at(r: &dyn Row, at: usize, run_id: &str) -> Result<Option<String>, StoreError> {
    let corrupt = |message: String| StoreError::Corrupt {
        run_id: run_id.to_owned(),
        message: format!("a plan revision {message}"),
    };
    let unpack = |prefix: &[u8], packed: &[u8]| {
        conversation::decompress(prefix, packed)
            .map_err(|message| corrupt(format!("cannot be read: {message}")))
    };
    let Some(body) = r.get::<Option<String>>(at)? else {
        return Ok(None);
    };
    let Some(packed) = r.get::<Option<Vec<u8>>>(at + 1)? else {
        return Ok(Some(body));
    };
    // A compressed revision keeps no text (one with both was changed past the store), and
    // the one it is compressed against is stored on its own.
    if !body.is_empty() {
        return Err(corrupt("is stored both ways".into()));
    }
    let base = match (
        r.get::<Option<String>>(at + 2)?,
        r.get::<Option<Vec<u8>>>(at + 3)?,
    ) {
        (None, _) => String::new(),
        (Some(text), None) => text,
        (Some(text), Some(base)) if text.is_empty() => unpack(&[], &base)?,
        (Some(_), Some(_)) => {
            return Err(corrupt("is compressed against one stored both ways".into()))
        }
    };
    unpack(base.as_bytes(), &packed).map(Some)
}

/// How a new revision of `path` in `run_id` is stored, when not as its text: its body
/// compressed against the first revision of the same file in the run (a revised plan keeps
/// most of its text: it costs what changed), with that revision's id, if that is shorter. The
/// first revision is compressed on its own (it is never compressed against another: there was
/// none), so reading any takes at most two.
async fn packed(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    path: &str,
    body: &str,
) -> Result<Option<(Vec<u8>, Option<i64>)>, StoreError> {
    if body.len() < conversation::PACK_FROM {
        return Ok(None);
    }
    let sql = format!(
        "SELECT v.id, {TEXT_COLUMNS} FROM plan_revisions v {BASE_JOIN}
         WHERE v.run_id = $1 AND v.path = $2 ORDER BY v.id LIMIT 1"
    );
    let first = tx
        .row(
            "find the plan's first revision",
            &sql,
            &[&run_id, &path],
            |r| Ok((r.get::<i64>(0)?, text_at(r, 1, run_id)?.unwrap_or_default())),
        )
        .await?;
    let (against, prefix) = match &first {
        Some((id, text)) => (Some(*id), text.as_bytes()),
        None => (None, &[][..]),
    };
    let packed = conversation::compress(prefix, body.as_bytes())?;
    Ok((packed.len() < body.len()).then_some((packed, against)))
}

/// The query's text: with each revision's text when `text`, and for a `listing` null for its
/// decision's resume data (an engine run's echoes the plan), read on SQLite from the listing's
/// index (migration 10: the decision's row would be read past its resume data).
fn select(dialect: Dialect, text: bool, listing: bool) -> String {
    let (decision, index) = match (listing, dialect) {
        (false, _) => (DECISION_COLUMNS, ""),
        (true, Dialect::Sqlite) => (LISTED_DECISION_COLUMNS, "INDEXED BY decisions_listing"),
        (true, Dialect::Postgres) => (LISTED_DECISION_COLUMNS, ""),
    };
    // Only what reads a plan (a revision's, or a decision's) joins what it is compressed
    // against: a listing reads the revisions from an index of their own (SQLite's migration 9).
    let columns = if text { TEXT_COLUMNS } else { NO_TEXT };
    let base = if text || !listing { BASE_JOIN } else { "" };
    // A call can have several revisions (a reviewer's edits): its open item and its decision
    // belong to the one they name.
    format!(
        "SELECT v.id, v.run_id, v.tool_call_id, v.path, v.title, {columns}, v.sha256,
            v.revision_no, v.submitted_at, r.prompt, p.run_id IS NOT NULL, v.author, {decision}
        FROM plan_revisions v
        {base}
        JOIN runs r ON r.id = v.run_id
        LEFT JOIN pending p ON p.run_id = v.run_id AND p.tool_call_id = v.tool_call_id
            AND p.revision_id = v.id
        LEFT JOIN decisions d {index} ON d.run_id = v.run_id AND d.tool_call_id = v.tool_call_id
            AND (d.revision_id IS NULL OR d.revision_id = v.id)"
    )
}

/// The query's text with each revision whole.
fn whole(tx: &Tx<impl Conn>) -> String {
    select(tx.dialect(), true, false)
}

fn revision(r: &dyn Row) -> Result<RevisionRow, StoreError> {
    let run_id: String = r.get(1)?;
    Ok(RevisionRow {
        id: r.get(0)?,
        tool_call_id: r.get(2)?,
        path: r.get(3)?,
        title: r.get(4)?,
        body: text_at(r, 5, &run_id)?.unwrap_or_default(),
        sha256: r.get(9)?,
        revision_no: r.get(10)?,
        submitted_at: r.get(11)?,
        prompt: r.get(12)?,
        open: r.get(13)?,
        author: r.get(14)?,
        decision: decision_at(r, 15)?,
        run_id,
    })
}

/// PostgreSQL's index entry for a plan: its distinct words as a tsvector literal (written
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
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    tool_call_id: &str,
    path: &str,
    plan: &PlanText,
    at: Millis,
    author: Option<&str>,
) -> Result<i64, StoreError> {
    let (packed, against) = packed(tx, run_id, path, &plan.body).await?.unzip();
    // A compressed revision keeps no text.
    let body = if packed.is_some() { "" } else { &plan.body };
    let against = against.flatten();
    let entry: (String, bool);
    let mut args: Vec<&dyn ToArg> = vec![
        &run_id,
        &tool_call_id,
        &path,
        &plan.title,
        &body,
        &plan.sha256,
        &at,
        &author,
        &packed,
        &against,
    ];
    let index = match tx.dialect() {
        // Its words are added to the full-text table below.
        Dialect::Sqlite => ("", ""),
        Dialect::Postgres => {
            entry = index_entry(plan);
            args.extend([&entry.0 as &dyn ToArg, &entry.1]);
            (
                ", words, words_complete",
                ", CAST(CAST($11 AS TEXT) AS tsvector), $12",
            )
        }
    };
    let sql = format!(
        "INSERT INTO plan_revisions (run_id, tool_call_id, path, title, body, sha256, revision_no,
                                     submitted_at, author, packed, packed_against{})
         VALUES ($1, $2, $3, $4, $5, $6,
                 (SELECT COUNT(*) + 1 FROM plan_revisions WHERE run_id = $1 AND path = $3),
                 $7, $8, $9, $10{})
         RETURNING id",
        index.0, index.1
    );
    let missing = || StoreError::Invalid {
        run_id: run_id.to_owned(),
        message: "the new revision has no id".into(),
    };
    let id = tx
        .one("insert revision", &sql, &args, missing, |r| r.get(0))
        .await?;
    if tx.dialect() == Dialect::Sqlite {
        // A contentless FTS5 table (migration 16): it keeps the words, not the text.
        tx.later(
            "index the revision's words",
            "INSERT INTO revisions_fts (rowid, title, body) VALUES ($1, $2, $3)",
            &[&id, &plan.title, &plan.body],
        )
        .await?;
    }
    Ok(id)
}

/// The revision of an item, recorded the first time the item is open (afterwards: its newest,
/// a reviewer's edit if there is one); `submitter` is who the audit trail says sent it (the
/// agent, or the token an outside agent came with).
pub(super) async fn insert_once(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    tool_call_id: &str,
    plan: &PlanText,
    at: Millis,
    submitter: &str,
    by: &Actor,
) -> Result<i64, StoreError> {
    let existing = tx
        .row(
            "find revision",
            "SELECT id FROM plan_revisions WHERE run_id = $1 AND tool_call_id = $2
             ORDER BY id DESC LIMIT 1",
            &[&run_id, &tool_call_id],
            |r| r.get(0),
        )
        .await?;
    if let Some(existing) = existing {
        return Ok(existing);
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
pub(super) async fn edit(
    tx: &mut Tx<impl Conn>,
    e: &NewEdit<'_>,
) -> Result<RevisionRow, StoreError> {
    let Some(edited) = open_revision(tx, e.run_id, e.tool_call_id, Some(e.expect_sha)).await?
    else {
        return Err(StoreError::Invalid {
            run_id: e.run_id.to_owned(),
            message: format!("item {} has no plan to edit", e.tool_call_id),
        });
    };
    let plan = e.plan;
    let author = Some(e.by.name.as_str());
    let id = insert(
        tx,
        e.run_id,
        e.tool_call_id,
        &edited.path,
        plan,
        e.at,
        author,
    )
    .await?;
    tx.later(
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
    tx: &mut Tx<impl Conn>,
    run_id: Option<&str>,
) -> Result<Vec<RevisionRow>, StoreError> {
    let sql = format!(
        "{} WHERE {} ORDER BY v.id",
        whole(tx),
        sql::of_run("v.run_id", 1, run_id)
    );
    tx.all("list revisions", &sql, &[&run_id], revision).await
}

/// The full-text index's query for `phrase`, the words of what a person `typed` (the last one
/// as a prefix), and whether what it finds has the phrase for sure (else each must be read to
/// check).
fn index_query(dialect: Dialect, typed: &[String], phrase: &[String]) -> (Option<String>, bool) {
    match dialect {
        // One quoted FTS5 phrase (quotes doubled) with a prefix star, so that nothing a
        // person types is read as FTS5 syntax; of the words as typed, which FTS5's tokenizer
        // reads as it read the plans (`words` folds more than it does: Hangul, kana, Cyrillic
        // and Greek marks).
        Dialect::Sqlite => (
            Some(format!("\"{}\"*", typed.join(" ").replace('"', "\"\""))),
            true,
        ),
        // Every word, the last as a prefix; none when a word is too long for the index (then
        // it is in no indexed plan: only those checked word by word can have it).
        Dialect::Postgres => {
            let query = phrase.split_last().and_then(|(last, whole)| {
                phrase.iter().all(|w| w.len() <= MAX_WORD_BYTES).then(|| {
                    let mut terms: Vec<String> = whole.iter().map(|w| lexeme(w)).collect();
                    terms.push(format!("{}:*", lexeme(last)));
                    terms.join(" & ")
                })
            });
            (query, false)
        }
    }
}

/// The condition on `v` that its revision is among what the index's query, bound as `$n`, finds.
fn index_condition(dialect: Dialect, n: usize) -> String {
    match dialect {
        Dialect::Sqlite => {
            format!("v.id IN (SELECT rowid FROM revisions_fts WHERE revisions_fts MATCH ${n})")
        }
        Dialect::Postgres => {
            format!("(v.words @@ CAST(CAST(${n} AS TEXT) AS tsquery) OR NOT v.words_complete)")
        }
    }
}

/// Whether a candidate of the index has `phrase` in a row, in its title or its plan.
fn says(candidate: &RevisionRow, phrase: &[String]) -> bool {
    has_phrase(&candidate.title, phrase) || has_phrase(&candidate.body, phrase)
}

/// Revisions (of one run, or all) whose title or body has `typed` in a row (the last word may
/// be the start of one), oldest first, whole.
pub(super) async fn search(
    tx: &mut Tx<impl Conn>,
    run_id: Option<&str>,
    typed: &[String],
) -> Result<Vec<RevisionRow>, StoreError> {
    let phrase = phrase(typed);
    if phrase.is_empty() {
        return Ok(Vec::new());
    }
    let (query, exact) = index_query(tx.dialect(), typed, &phrase);
    let sql = format!(
        "{} WHERE {} AND {} ORDER BY v.id",
        whole(tx),
        index_condition(tx.dialect(), 1),
        sql::of_run("v.run_id", 2, run_id)
    );
    let found = tx
        .all("search revisions", &sql, &[&query, &run_id], revision)
        .await?;
    Ok(found
        .into_iter()
        .filter(|candidate| exact || says(candidate, &phrase))
        .collect())
}

/// How many candidates a searching listing reads at a time, at least, where each must be read
/// whole to check for the phrase (most of the index's candidates have it).
const SEARCH_BATCH: i64 = 200;

/// A listing's query: only the conditions it has (so that SQLite walks the listing's index
/// backwards from the page's start and stops at its end, and a cached PostgreSQL statement's
/// generic plan starts its walk there), with their arguments numbered in order. `before` is
/// the page's start, `limit` its size, `matching` the index's query for words.
fn listing_query<'a>(
    dialect: Dialect,
    columns: &str,
    listing: &'a Listing<'_>,
    before: &'a Option<i64>,
    limit: &'a Option<i64>,
    matching: Option<&'a Option<String>>,
) -> (String, Vec<&'a dyn ToArg>) {
    let mut conditions = Vec::new();
    let mut args: Vec<&'a dyn ToArg> = Vec::new();
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
    if let Some(query) = matching {
        args.push(query);
        conditions.push(index_condition(dialect, args.len()));
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

/// The query of a listing without words, and its arguments.
pub(super) fn listing_sql<'a>(
    dialect: Dialect,
    listing: &'a Listing<'_>,
    limit: &'a Option<i64>,
) -> (String, Vec<&'a dyn ToArg>) {
    let columns = select(dialect, false, true);
    listing_query(dialect, &columns, listing, &listing.before, limit, None)
}

/// A listing (see [`Listing`]), newest first. Without words, or where the index is exact, one
/// query. Else the index's candidates are read whole (newest first, in batches while the page
/// is not full) and kept if they have the phrase; their bodies are then dropped.
///
/// A page starts after the last one's end (by id). On PostgreSQL, ids are given out as
/// revisions are inserted and two writers' transactions may commit in the other order: a
/// revision committed just then with an id older than a page already read shows when the list
/// is read again. (SQLite has one writer at a time, so its ids are committed in order.)
pub(super) async fn list(
    tx: &mut Tx<impl Conn>,
    listing: &Listing<'_>,
) -> Result<Vec<RevisionRow>, StoreError> {
    let dialect = tx.dialect();
    let limit = listing.limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
    if listing.words.is_empty() {
        let (sql, args) = listing_sql(dialect, listing, &limit);
        return tx.all("list revisions", &sql, &args, revision).await;
    }
    let phrase = phrase(listing.words);
    if phrase.is_empty() {
        return Ok(Vec::new());
    }
    let (query, exact) = index_query(dialect, listing.words, &phrase);
    let columns = select(dialect, !exact, true);
    let batch = if exact {
        limit
    } else {
        limit.map(|l| l.max(SEARCH_BATCH))
    };
    let mut before = listing.before;
    let mut hits = Vec::new();
    loop {
        let found = {
            let (sql, args) =
                listing_query(dialect, &columns, listing, &before, &batch, Some(&query));
            tx.all("search revisions", &sql, &args, revision).await?
        };
        let read = found.len() as i64;
        for mut candidate in found {
            before = Some(candidate.id);
            if exact || says(&candidate, &phrase) {
                candidate.body = String::new();
                hits.push(candidate);
            }
        }
        let exhausted = batch.is_none_or(|b| read < b);
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
    tx: &mut Tx<impl Conn>,
    prefix: &str,
) -> Result<Vec<RevisionRow>, StoreError> {
    // A range scan on the sha index (byte order): every hash that starts with `prefix` sorts
    // between it and the prefix followed by the highest hex digit.
    let upper = format!("{prefix}g");
    let sql = format!(
        "{} WHERE v.sha256 >= $1 AND v.sha256 < $2 ORDER BY v.id",
        whole(tx)
    );
    tx.all("find revisions by hash", &sql, &[&prefix, &upper], revision)
        .await
}

pub(super) async fn one(tx: &mut Tx<impl Conn>, id: i64) -> Result<RevisionRow, StoreError> {
    let sql = format!("{} WHERE v.id = $1", whole(tx));
    let missing = || StoreError::UnknownRevision(id);
    tx.one("load revision", &sql, &[&id], missing, revision)
        .await
}
