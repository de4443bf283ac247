//! `pending` (the open review items, one per call that waits for a person: a commit replaces a
//! run's set, a decision closes one) and `decisions` (at most one per item, bound to the plan
//! revision it was made on).

use serde_json::json;

use super::revisions::{text_at, BASE_JOIN, TEXT_COLUMNS};
use super::sql::{self, Args, Conn, Dialect, Row, Tx};
use super::*;
use crate::clock::Millis;
use crate::vocabulary::*;

/// A decision's columns, `d` joined with its revision `v` (and `b`, what that is compressed
/// against): the last four are the plan its resume data leaves out (the revision's text, when
/// that is the plan: SQLite's migration 11, PostgreSQL's 2), read by [`text_at`].
pub(super) const DECISION_COLUMNS: &str = "d.id, d.run_id, d.tool_call_id, d.revision_id, \
     d.action, d.feedback, d.resume_data, d.decided_at, d.decided_by, \
     CASE WHEN d.plan_from_revision THEN v.body END, \
     CASE WHEN d.plan_from_revision THEN v.packed END, \
     CASE WHEN d.plan_from_revision THEN b.body END, \
     CASE WHEN d.plan_from_revision THEN b.packed END";

/// [`DECISION_COLUMNS`] with null in place of the resume data, for listings (an engine run's
/// decides a plan, and a listing shows none), and so no plan to put back in it.
pub(super) const LISTED_DECISION_COLUMNS: &str = "d.id, d.run_id, d.tool_call_id, \
     d.revision_id, d.action, d.feedback, 'null', d.decided_at, d.decided_by, \
     CAST(NULL AS TEXT), CAST(NULL AS BYTEA), CAST(NULL AS TEXT), CAST(NULL AS BYTEA)";

/// A decision from the row's columns `at..at + 13`, or `None` when they are NULL (an outer
/// join).
pub(super) fn decision_at(r: &dyn Row, at: usize) -> Result<Option<DecisionRow>, StoreError> {
    let Some(id) = r.get::<Option<i64>>(at)? else {
        return Ok(None);
    };
    let run_id: String = r.get(at + 1)?;
    let plan = text_at(r, at + 9, &run_id)?;
    Ok(Some(DecisionRow {
        id,
        run_id,
        tool_call_id: r.get(at + 2)?,
        revision_id: r.get(at + 3)?,
        action: r.word(Action::parse, at + 4)?,
        feedback: r.get(at + 5)?,
        resume_data: resume_data_as_read(r.get(at + 6)?, plan),
        decided_at: r.get(at + 7)?,
        decided_by: r.get(at + 8)?,
    }))
}

pub(super) async fn decision(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    tool_call_id: &str,
) -> Result<Option<DecisionRow>, StoreError> {
    let sql = format!(
        "SELECT {DECISION_COLUMNS} FROM decisions d
         LEFT JOIN plan_revisions v ON v.id = d.revision_id {BASE_JOIN}
         WHERE d.run_id = $1 AND d.tool_call_id = $2"
    );
    let found = tx
        .row("find decision", &sql, &[&run_id, &tool_call_id], |r| {
            decision_at(r, 0)
        })
        .await?;
    Ok(found.flatten())
}

/// Makes the run's open items exactly `open` (less those already decided), recording each
/// plan's revision the first time its item opens.
pub(super) async fn sync(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    open: &[OpenItem],
    at: Millis,
    by: &Actor,
) -> Result<(), StoreError> {
    let mut keep: Vec<&str> = Vec::with_capacity(open.len());
    for item in open {
        let id = item.tool_call_id.as_str();
        if decision(tx, run_id, id).await?.is_some() {
            continue;
        }
        let revision_id = match &item.plan {
            // An engine run's plan is its model's.
            Some(plan) => {
                Some(revisions::insert_once(tx, run_id, id, plan, at, "agent", by).await?)
            }
            None => None,
        };
        insert(tx, run_id, item, revision_id, at, None).await?;
        keep.push(id);
    }
    // Most moves of a run leave nothing open: a plain delete, not a list to parse.
    if keep.is_empty() {
        let sql = "DELETE FROM pending WHERE run_id = $1";
        tx.later("close items", sql, &[&run_id]).await?;
        return Ok(());
    }
    let keep = serde_json::Value::from(keep).to_string();
    let sql = format!(
        "DELETE FROM pending WHERE run_id = $1 AND tool_call_id NOT IN ({})",
        tx.dialect().text_list(2)
    );
    tx.later("close items", &sql, &[&run_id, &keep]).await?;
    Ok(())
}

/// Adds an open item (with its waiter, for an outside session's); `false` if it was open already.
async fn insert(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    item: &OpenItem,
    revision_id: Option<i64>,
    since: Millis,
    waiter: Option<&Lease<'_>>,
) -> Result<bool, StoreError> {
    let inserted = tx
        .execute(
            "open item",
            "INSERT INTO pending (run_id, tool_call_id, kind, tool_name, args, revision_id, since, waiter, waiter_until)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
            &[
                &run_id,
                &item.tool_call_id,
                &item.kind.as_str(),
                &item.tool_name,
                &item.args.to_string(),
                &revision_id,
                &since,
                &waiter.map(|w| w.holder),
                &waiter.map(|w| w.until),
            ],
        )
        .await?;
    Ok(inserted == 1)
}

/// Opens one item of a session's run, leaving its other items alone.
pub(super) async fn open_one(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    item: &OpenItem,
    waiter: &Lease<'_>,
    by: &Actor,
) -> Result<ItemRow, StoreError> {
    let id = item.tool_call_id.as_str();
    if let Some(existing) = decision(tx, run_id, id).await? {
        return Err(StoreError::already_decided(run_id, id, &existing));
    }
    let revision_id = match &item.plan {
        Some(plan) => {
            Some(revisions::insert_once(tx, run_id, id, plan, waiter.now, &by.name, by).await?)
        }
        None => None,
    };
    if !insert(tx, run_id, item, revision_id, waiter.now, Some(waiter)).await? {
        return Err(StoreError::Invalid {
            run_id: run_id.to_owned(),
            message: format!("item {id} is open already"),
        });
    }
    tx.later(
        "open item",
        "UPDATE runs SET status = 'suspended', updated_at = $2 WHERE id = $1",
        &[&run_id, &waiter.now],
    )
    .await?;
    open_one_row(tx, run_id, id)
        .await?
        .ok_or_else(|| StoreError::Invalid {
            run_id: run_id.to_owned(),
            message: format!("item {id} vanished inside its own transaction"),
        })
}

/// Extends the leases of the waiters `holders` name to `until`, in one statement: how many
/// items were renewed.
pub(super) async fn renew_waiters(
    tx: &mut Tx<impl Conn>,
    holders: &[&str],
    until: Millis,
) -> Result<u64, StoreError> {
    let holders = serde_json::Value::from(holders.to_vec()).to_string();
    let sql = format!(
        "UPDATE pending SET waiter_until = $1 WHERE waiter IN ({})",
        tx.dialect().text_list(2)
    );
    tx.execute("renew waiters", &sql, &[&until, &holders]).await
}

/// The newest decision's id, 0 if there is none.
pub(super) async fn newest_decision(tx: &mut Tx<impl Conn>) -> Result<i64, StoreError> {
    let sql = "SELECT COALESCE(MAX(id), 0) FROM decisions";
    let newest = tx.row("newest decision", sql, &[], |r| r.get(0)).await?;
    Ok(newest.unwrap_or(0))
}

/// Which items the decisions after decision `after` decided, oldest first, at most `limit`.
pub(super) async fn decided_after(
    tx: &mut Tx<impl Conn>,
    after: i64,
    limit: i64,
) -> Result<Vec<Decided>, StoreError> {
    tx.all(
        "decisions after",
        "SELECT id, run_id, tool_call_id FROM decisions WHERE id > $1 ORDER BY id LIMIT $2",
        &[&after, &limit],
        |r| {
            Ok(Decided {
                id: r.get(0)?,
                run_id: r.get(1)?,
                tool_call_id: r.get(2)?,
            })
        },
    )
    .await
}

pub(super) async fn waited(tx: &mut Tx<impl Conn>) -> Result<Vec<WaitedItem>, StoreError> {
    tx.all(
        "list waited items",
        "SELECT p.run_id, p.tool_call_id, p.waiter, p.waiter_until
         FROM pending p JOIN runs r ON r.id = p.run_id WHERE r.source != 'engine'",
        &[],
        |r| {
            let waiter: Option<String> = r.get(2)?;
            let until: Option<Millis> = r.get(3)?;
            Ok(WaitedItem {
                run_id: r.get(0)?,
                tool_call_id: r.get(1)?,
                waiter: waiter.zip(until),
            })
        },
    )
    .await
}

/// Open items with their run's context and plan revision: one query. A run's items are in the
/// order they were opened (SQLite's rowid, PostgreSQL's `seq`); all items, newest first.
pub(super) async fn open(
    tx: &mut Tx<impl Conn>,
    run_id: Option<&str>,
) -> Result<Vec<ItemRow>, StoreError> {
    let seq = seq(tx);
    let order = match run_id {
        Some(_) => seq.to_owned(),
        None => format!("p.since DESC, {seq} DESC"),
    };
    let filter = sql::of_run("p.run_id", 1, run_id);
    select(tx, &filter, &order, &[&run_id]).await
}

/// One open item, as [`open`] reads it.
async fn open_one_row(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    tool_call_id: &str,
) -> Result<Option<ItemRow>, StoreError> {
    let filter = "p.run_id = $1 AND p.tool_call_id = $2";
    let found = select(tx, filter, seq(tx), &[&run_id, &tool_call_id]).await?;
    Ok(found.into_iter().next())
}

/// The order items were opened in.
fn seq(tx: &Tx<impl Conn>) -> &'static str {
    match tx.dialect() {
        Dialect::Sqlite => "p.rowid",
        Dialect::Postgres => "p.seq",
    }
}

/// The open items `filter` keeps, in `order`.
async fn select(
    tx: &mut Tx<impl Conn>,
    filter: &str,
    order: &str,
    args: Args<'_>,
) -> Result<Vec<ItemRow>, StoreError> {
    let sql = format!(
        "SELECT p.run_id, p.tool_call_id, p.kind, p.tool_name, p.args, p.since,
                r.prompt, r.workspace, r.source, r.session,
                v.id, v.tool_call_id, v.path, v.title, {TEXT_COLUMNS}, v.sha256, v.revision_no,
                v.submitted_at, v.author
         FROM pending p JOIN runs r ON r.id = p.run_id
         LEFT JOIN plan_revisions v ON v.id = p.revision_id {BASE_JOIN}
         WHERE {filter} ORDER BY {order}"
    );
    tx.all("list open items", &sql, args, |r| {
        let run_id: String = r.get(0)?;
        let prompt: String = r.get(6)?;
        let revision = match r.get::<Option<i64>>(10)? {
            Some(id) => Some(RevisionRow {
                id,
                run_id: run_id.clone(),
                tool_call_id: r.get(11)?,
                path: r.get(12)?,
                title: r.get(13)?,
                body: text_at(r, 14, &run_id)?.unwrap_or_default(),
                sha256: r.get(18)?,
                revision_no: r.get(19)?,
                submitted_at: r.get(20)?,
                prompt: prompt.clone(),
                open: true,
                decision: None,
                author: r.get(21)?,
            }),
            None => None,
        };
        Ok(ItemRow {
            run_id,
            tool_call_id: r.get(1)?,
            kind: r.word(ItemKind::parse, 2)?,
            tool_name: r.get(3)?,
            args: r.json(4)?,
            since: r.get(5)?,
            prompt,
            workspace: r.get(7)?,
            source: Source {
                kind: r.word(SourceKind::parse, 8)?,
                session: r.get(9)?,
            },
            revision,
        })
    })
    .await
}

/// The plan revision an open item waits on (`None` for an item without a plan), after checking
/// that the item is open and, with `expect_sha`, that its plan is the one the person saw. Its
/// text is not read: a decision only needs to know which revision it is.
pub(super) async fn open_revision(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    tool_call_id: &str,
    expect_sha: Option<&str>,
) -> Result<Option<WaitingPlan>, StoreError> {
    let open = tx
        .row(
            "find open item",
            "SELECT p.revision_id, v.sha256, v.revision_no, v.path
             FROM pending p LEFT JOIN plan_revisions v ON v.id = p.revision_id
             WHERE p.run_id = $1 AND p.tool_call_id = $2",
            &[&run_id, &tool_call_id],
            |r| {
                Ok(match r.get::<Option<i64>>(0)? {
                    Some(id) => Some(WaitingPlan {
                        id,
                        sha256: r.get(1)?,
                        revision_no: r.get(2)?,
                        path: r.get(3)?,
                    }),
                    None => None,
                })
            },
        )
        .await?;
    let Some(waiting) = open else {
        if let Some(existing) = decision(tx, run_id, tool_call_id).await? {
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
pub(super) async fn decide(
    tx: &mut Tx<impl Conn>,
    d: &NewDecision<'_>,
) -> Result<DecisionRow, StoreError> {
    let plan = open_revision(tx, d.run_id, d.tool_call_id, d.expect_sha).await?;
    let revision_id = plan.as_ref().map(|p| p.id);
    let plan_from_revision = match (revision_id, d.plan()) {
        (Some(id), Some(text)) => {
            let sql =
                format!("SELECT {TEXT_COLUMNS} FROM plan_revisions v {BASE_JOIN} WHERE v.id = $1");
            let stored = tx
                .row("read the plan's revision", &sql, &[&id], |r| {
                    text_at(r, 0, d.run_id)
                })
                .await?
                .flatten();
            stored.as_deref() == Some(text)
        }
        _ => false,
    };
    let id: i64 = tx
        .one(
            "insert decision",
            "INSERT INTO decisions (run_id, tool_call_id, revision_id, action, feedback, resume_data,
                                    decided_at, decided_by, plan_from_revision)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
            &[
                &d.run_id,
                &d.tool_call_id,
                &revision_id,
                &d.action.as_str(),
                &d.feedback,
                &d.stored_resume_data(plan_from_revision),
                &d.at,
                &d.by.name,
                &plan_from_revision,
            ],
            || StoreError::Invalid {
                run_id: d.run_id.to_owned(),
                message: "inserting the decision returned no row".into(),
            },
            |r| r.get(0),
        )
        .await?;
    tx.later(
        "close item",
        "DELETE FROM pending WHERE run_id = $1 AND tool_call_id = $2",
        &[&d.run_id, &d.tool_call_id],
    )
    .await?;
    let data = json!({
        "toolCallId": d.tool_call_id,
        "action": d.action,
        "feedback": d.feedback,
        "revisionId": revision_id,
    });
    log::event(tx, d.run_id, d.at, EventKind::Decided, &data).await?;
    log::append(
        tx,
        log::Entry {
            at: d.at,
            actor: &d.by.name,
            process: &d.by.process,
            run_id: d.run_id,
            kind: AuditKind::Decided,
            revision_sha: plan.as_ref().map(|p| p.sha256.as_str()),
            data: d.audit_data(plan_from_revision),
        },
    )
    .await?;
    if let Some(mode) = d.mode_after {
        runs::switch_mode(tx, d.run_id, mode, d.at, d.by).await?;
    }
    runs::settle_session(tx, d.run_id, d.at).await?;
    Ok(d.stored_as(id, revision_id))
}
