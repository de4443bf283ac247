//! `pending`: the open review items, one per call that waits for a person. A commit replaces a
//! run's set; a decision closes one.

use rusqlite::{params, Connection};
use serde_json::Value;

use super::{decisions, query, revisions, word};
use crate::clock::Millis;
use crate::store::*;

/// Makes the run's open items exactly `open` (less those already decided), recording each
/// plan's revision the first time its item opens.
pub(super) fn sync(
    tx: &Connection,
    run_id: &str,
    open: &[OpenItem],
    at: Millis,
    by: &Actor,
) -> Result<(), StoreError> {
    let mut keep = Vec::with_capacity(open.len());
    for item in open {
        let id = item.tool_call_id.as_str();
        if decisions::find(tx, run_id, id)?.is_some() {
            continue;
        }
        let revision_id = match &item.plan {
            // An engine run's plan is its model's.
            Some(plan) => Some(revisions::insert_once(
                tx, run_id, id, plan, at, "agent", by,
            )?),
            None => None,
        };
        insert(tx, run_id, item, revision_id, at, None)?;
        keep.push(id);
    }
    let keep = serde_json::to_string(&keep).map_err(|e| StoreError::Invalid {
        run_id: run_id.to_owned(),
        message: e.to_string(),
    })?;
    tx.prepare_cached(
        "DELETE FROM pending WHERE run_id = ?1
         AND tool_call_id NOT IN (SELECT value FROM json_each(?2))",
    )
    .and_then(|mut stmt| stmt.execute(params![run_id, keep]))
    .map_err(query("close items"))?;
    Ok(())
}

/// Adds an open item (with its waiter, for an outside session's); `false` if it was open already.
fn insert(
    tx: &Connection,
    run_id: &str,
    item: &OpenItem,
    revision_id: Option<i64>,
    since: Millis,
    waiter: Option<&Lease<'_>>,
) -> Result<bool, StoreError> {
    let inserted = tx
        .prepare_cached(
            "INSERT INTO pending (run_id, tool_call_id, kind, tool_name, args, revision_id, since, waiter, waiter_until)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING",
        )
        .and_then(|mut stmt| {
            stmt.execute(params![
                run_id,
                item.tool_call_id,
                item.kind.as_str(),
                item.tool_name,
                item.args.to_string(),
                revision_id,
                since,
                waiter.map(|w| w.holder),
                waiter.map(|w| w.until)
            ])
        })
        .map_err(query("open item"))?;
    Ok(inserted == 1)
}

/// Opens one item of a session's run, leaving its other items alone.
pub(super) fn open_one(
    tx: &Connection,
    run_id: &str,
    item: &OpenItem,
    waiter: &Lease<'_>,
    by: &Actor,
) -> Result<ItemRow, StoreError> {
    let id = item.tool_call_id.as_str();
    if let Some(existing) = decisions::find(tx, run_id, id)? {
        return Err(StoreError::already_decided(run_id, id, &existing));
    }
    let revision_id = match &item.plan {
        Some(plan) => Some(revisions::insert_once(
            tx, run_id, id, plan, waiter.now, &by.name, by,
        )?),
        None => None,
    };
    if !insert(tx, run_id, item, revision_id, waiter.now, Some(waiter))? {
        return Err(StoreError::Invalid {
            run_id: run_id.to_owned(),
            message: format!("item {id} is open already"),
        });
    }
    tx.execute(
        "UPDATE runs SET status = 'suspended', updated_at = ?2 WHERE id = ?1",
        params![run_id, waiter.now],
    )
    .map_err(query("open item"))?;
    open(tx, Some(run_id))?
        .into_iter()
        .find(|i| i.tool_call_id == id)
        .ok_or_else(|| StoreError::Invalid {
            run_id: run_id.to_owned(),
            message: format!("item {id} vanished inside its own transaction"),
        })
}

pub(super) fn renew_waiter(
    tx: &Connection,
    run_id: &str,
    tool_call_id: &str,
    waiter: &Lease<'_>,
) -> Result<bool, StoreError> {
    let changed = tx
        .execute(
            "UPDATE pending SET waiter_until = ?4 WHERE run_id = ?1 AND tool_call_id = ?2 AND waiter = ?3",
            params![run_id, tool_call_id, waiter.holder, waiter.until],
        )
        .map_err(query("renew waiter"))?;
    Ok(changed == 1)
}

pub(super) fn waited(conn: &Connection) -> Result<Vec<WaitedItem>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT p.run_id, p.tool_call_id, p.waiter, p.waiter_until
             FROM pending p JOIN runs r ON r.id = p.run_id WHERE r.source != 'engine'",
        )
        .map_err(query("list waited items"))?;
    let rows = stmt
        .query_map([], |r| {
            let waiter: Option<String> = r.get(2)?;
            let until: Option<Millis> = r.get(3)?;
            Ok(WaitedItem {
                run_id: r.get(0)?,
                tool_call_id: r.get(1)?,
                waiter: waiter.zip(until),
            })
        })
        .map_err(query("list waited items"))?;
    rows.collect::<Result<_, _>>()
        .map_err(query("list waited items"))
}

/// Open items with their run's context and plan revision: one query.
pub(super) fn open(conn: &Connection, run_id: Option<&str>) -> Result<Vec<ItemRow>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT p.run_id, p.tool_call_id, p.kind, p.tool_name, p.args, p.since,
                    r.prompt, r.workspace, r.source, r.session,
                    v.id, v.tool_call_id, v.path, v.title, v.body, v.sha256, v.revision_no,
                    v.submitted_at, v.author
             FROM pending p JOIN runs r ON r.id = p.run_id
             LEFT JOIN plan_revisions v ON v.id = p.revision_id
             WHERE ?1 IS NULL OR p.run_id = ?1
             ORDER BY CASE WHEN ?1 IS NULL THEN -p.since ELSE p.rowid END, p.rowid DESC",
        )
        .map_err(query("list open items"))?;
    let rows = stmt
        .query_map([run_id], |r| {
            let run_id: String = r.get(0)?;
            let args: String = r.get(4)?;
            let revision = match r.get::<_, Option<i64>>(10)? {
                Some(id) => Some(RevisionRow {
                    id,
                    run_id: run_id.clone(),
                    tool_call_id: r.get(11)?,
                    path: r.get(12)?,
                    title: r.get(13)?,
                    body: r.get(14)?,
                    sha256: r.get(15)?,
                    revision_no: r.get(16)?,
                    submitted_at: r.get(17)?,
                    prompt: r.get(6)?,
                    open: true,
                    decision: None,
                    author: r.get(18)?,
                }),
                None => None,
            };
            Ok(ItemRow {
                run_id,
                tool_call_id: r.get(1)?,
                kind: word(ItemKind::parse, r.get(2)?, 2)?,
                tool_name: r.get(3)?,
                args: serde_json::from_str(&args).unwrap_or(Value::String(args)),
                since: r.get(5)?,
                prompt: r.get(6)?,
                workspace: r.get(7)?,
                source: Source {
                    kind: word(SourceKind::parse, r.get(8)?, 8)?,
                    session: r.get(9)?,
                },
                revision,
            })
        })
        .map_err(query("list open items"))?;
    rows.collect::<Result<_, _>>()
        .map_err(query("list open items"))
}
