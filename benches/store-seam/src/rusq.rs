//! rusqlite (as Plandesk today): on the calling thread, through spawn_blocking, and on a
//! dedicated connection thread fed by a channel (one hop per statement, or per transaction).

use std::path::Path;
use std::sync::{mpsc, Arc};

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::shared::*;

/// `$N` → `?N`: what a shared-text executor would do for SQLite (SQLite reads `$N` as a *name*
/// and numbers names by first appearance; `?N` is numbered by N). None of these texts has a
/// `$` inside a string literal.
pub fn sqlite_text(q: &str) -> String {
    q.replace('$', "?")
}

pub struct Texts {
    open: String,
    same_plan: String,
    insert_decision: String,
    close: String,
    event: String,
    audit_last: String,
    audit_insert: String,
    settle: String,
    audit_since: String,
    inbox: String,
}

pub fn texts() -> Texts {
    Texts {
        open: sqlite_text(Q_OPEN),
        same_plan: sqlite_text(Q_SAME_PLAN),
        insert_decision: sqlite_text(Q_INSERT_DECISION),
        close: sqlite_text(Q_CLOSE),
        event: sqlite_text(Q_EVENT),
        audit_last: sqlite_text(Q_AUDIT_LAST),
        audit_insert: sqlite_text(Q_AUDIT_INSERT),
        settle: sqlite_text(Q_SETTLE),
        audit_since: sqlite_text(Q_AUDIT_SINCE),
        inbox: sqlite_text(Q_INBOX),
    }
}

/// Plandesk's `try_connect` pragmas (src/store/sqlite/mod.rs).
pub fn connect(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.set_prepared_statement_cache_capacity(128);
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = {}; PRAGMA foreign_keys = ON;",
        sync_mode()
    ))
    .unwrap();
    conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })
    .unwrap();
    conn
}

/// A new database file `name.db` in `dir` with `items` open items.
pub fn fresh_db(dir: &Path, name: &str, items: usize) -> Connection {
    let conn = connect(&dir.join(format!("{name}.db")));
    conn.execute_batch(SCHEMA).unwrap();
    conn.execute_batch(&format!("BEGIN; {} COMMIT;", seed_sql(items)))
        .unwrap();
    conn
}

// ---- the decision write, one statement per function (what a hop carries) ----

fn s_open(c: &Connection, t: &Texts, run: &str, call: &str) -> (i64, String) {
    c.prepare_cached(&t.open)
        .unwrap()
        .query_row(params![run, call], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .unwrap()
        .expect("the item is open")
}
fn s_same_plan(c: &Connection, t: &Texts, rev: i64, plan: &str) -> bool {
    c.prepare_cached(&t.same_plan)
        .unwrap()
        .query_row(params![rev, plan], |r| r.get(0))
        .unwrap()
}
fn s_insert_decision(
    c: &Connection,
    t: &Texts,
    run: &str,
    call: &str,
    rev: i64,
    same: bool,
) -> i64 {
    c.prepare_cached(&t.insert_decision)
        .unwrap()
        .execute(params![
            run,
            call,
            rev,
            "approve",
            None::<String>,
            "{\"plan\":null}",
            AT,
            "alice",
            same
        ])
        .unwrap();
    c.last_insert_rowid()
}
fn s_close(c: &Connection, t: &Texts, run: &str, call: &str) {
    assert_eq!(
        c.prepare_cached(&t.close)
            .unwrap()
            .execute(params![run, call])
            .unwrap(),
        1
    );
}
fn s_event(c: &Connection, t: &Texts, run: &str, data: &str) {
    c.prepare_cached(&t.event)
        .unwrap()
        .execute(params![run, AT, "decided", data])
        .unwrap();
}
fn s_audit_last(c: &Connection, t: &Texts) -> (i64, String) {
    let last: Option<(i64, String)> = c
        .prepare_cached(&t.audit_last)
        .unwrap()
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .unwrap();
    match last {
        Some((id, h)) => (id + 1, h),
        None => (1, String::new()),
    }
}
fn s_audit_insert(
    c: &Connection,
    t: &Texts,
    id: i64,
    run: &str,
    sha: &str,
    data: &str,
    prev: &str,
) {
    let hash = chain_hash(prev, id, data);
    c.prepare_cached(&t.audit_insert)
        .unwrap()
        .execute(params![
            id,
            AT,
            "alice",
            "plandesk-app",
            run,
            "decided",
            sha,
            data,
            prev,
            hash
        ])
        .unwrap();
}
fn s_settle(c: &Connection, t: &Texts, run: &str) {
    assert_eq!(
        c.prepare_cached(&t.settle)
            .unwrap()
            .execute(params![run, AT])
            .unwrap(),
        1
    );
}
fn s_since(c: &Connection, t: &Texts, first: i64) -> Vec<(i64, String)> {
    let mut st = c.prepare_cached(&t.audit_since).unwrap();
    let rows = st
        .query_map([first], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    rows
}

/// The whole decision write on `c` (today's way: one call, one IMMEDIATE transaction).
pub fn decide(c: &mut Connection, t: &Texts, i: usize, plan: &str) -> i64 {
    let (run, call) = item(i);
    let tx = c
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap();
    let (rev, sha) = s_open(&tx, t, &run, &call);
    let same = s_same_plan(&tx, t, rev, plan);
    assert!(same);
    let id = s_insert_decision(&tx, t, &run, &call, rev, same);
    s_close(&tx, t, &run, &call);
    s_event(&tx, t, &run, &event_data(&call, rev));
    let (aid, prev) = s_audit_last(&tx, t);
    s_audit_insert(&tx, t, aid, &run, &sha, &audit_data(&call), &prev);
    s_settle(&tx, t, &run);
    let head = s_since(&tx, t, aid);
    assert_eq!(head.len(), 1);
    tx.commit().unwrap();
    id
}

// ---- the inbox, mapped into a struct as items.rs `open` does ----

pub fn inbox(c: &Connection, t: &Texts) -> Vec<Item> {
    let mut st = c.prepare_cached(&t.inbox).unwrap();
    let rows = st
        .query_map([None::<String>], |r| {
            Ok(Item {
                run_id: r.get(0)?,
                tool_call_id: r.get(1)?,
                kind: r.get(2)?,
                tool_name: r.get(3)?,
                args: r.get(4)?,
                since: r.get(5)?,
                prompt: r.get(6)?,
                workspace: r.get(7)?,
                source: r.get(8)?,
                session: r.get(9)?,
                rev_id: r.get(10)?,
                rev_tool_call_id: r.get(11)?,
                path: r.get(12)?,
                title: r.get(13)?,
                body: r.get(14)?,
                sha256: r.get(15)?,
                revision_no: r.get(16)?,
                submitted_at: r.get(17)?,
                author: r.get(18)?,
            })
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    rows
}

// ---- the dedicated connection thread ----

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

#[derive(Clone)]
pub struct ConnThread {
    tx: mpsc::Sender<Job>,
}

impl ConnThread {
    pub fn start(mut conn: Connection) -> Self {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::spawn(move || {
            while let Ok(job) = rx.recv() {
                job(&mut conn);
            }
        });
        Self { tx }
    }

    /// One hop: runs `f` on the connection's thread, the caller awaiting its answer.
    pub async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> T + Send + 'static,
    ) -> T {
        let (send, recv) = tokio::sync::oneshot::channel();
        self.tx
            .send(Box::new(move |c: &mut Connection| {
                let _ = send.send(f(c));
            }))
            .unwrap();
        recv.await.unwrap()
    }
}

/// One hop per transaction: the whole closure runs on the connection thread.
pub async fn decide_one_hop(ct: &ConnThread, t: &Arc<Texts>, i: usize, plan: &Arc<str>) -> i64 {
    let (t, plan) = (t.clone(), plan.clone());
    ct.call(move |c| decide(c, &t, i, &plan)).await
}

/// One hop per statement (BEGIN and COMMIT too: 11 hops), as a driver with a worker thread
/// does it.
pub async fn decide_per_statement(
    ct: &ConnThread,
    t: &Arc<Texts>,
    i: usize,
    plan: &Arc<str>,
) -> i64 {
    let (run, call) = item(i);
    let run: Arc<str> = run.into();
    let call: Arc<str> = call.into();
    ct.call(|c| c.execute_batch("BEGIN IMMEDIATE").unwrap())
        .await;
    let (rev, sha) = {
        let (t, run, call) = (t.clone(), run.clone(), call.clone());
        ct.call(move |c| s_open(c, &t, &run, &call)).await
    };
    let same = {
        let (t, plan) = (t.clone(), plan.clone());
        ct.call(move |c| s_same_plan(c, &t, rev, &plan)).await
    };
    let id = {
        let (t, run, call) = (t.clone(), run.clone(), call.clone());
        ct.call(move |c| s_insert_decision(c, &t, &run, &call, rev, same))
            .await
    };
    {
        let (t, run, call) = (t.clone(), run.clone(), call.clone());
        ct.call(move |c| s_close(c, &t, &run, &call)).await
    }
    {
        let (t, run) = (t.clone(), run.clone());
        let data = event_data(&call, rev);
        ct.call(move |c| s_event(c, &t, &run, &data)).await
    }
    let (aid, prev) = {
        let t = t.clone();
        ct.call(move |c| s_audit_last(c, &t)).await
    };
    {
        let (t, run) = (t.clone(), run.clone());
        let data = audit_data(&call);
        ct.call(move |c| s_audit_insert(c, &t, aid, &run, &sha, &data, &prev))
            .await
    }
    {
        let (t, run) = (t.clone(), run.clone());
        ct.call(move |c| s_settle(c, &t, &run)).await
    }
    let head = {
        let t = t.clone();
        ct.call(move |c| s_since(c, &t, aid)).await
    };
    assert_eq!(head.len(), 1);
    ct.call(|c| c.execute_batch("COMMIT").unwrap()).await;
    id
}

/// Binding by position against `$N` texts: what SQLite does with `$2 ... $1`.
pub fn placeholders(dir: &Path) {
    let c = connect(&dir.join("placeholders.db"));
    let q = "SELECT $2 || '-' || $1";
    let got: String = c.query_row(q, params!["one", "two"], |r| r.get(0)).unwrap();
    let rewritten: String = c
        .query_row(&sqlite_text(q), params!["one", "two"], |r| r.get(0))
        .unwrap();
    let idx = {
        let st = c.prepare(q).unwrap();
        (
            st.parameter_index("$1").unwrap(),
            st.parameter_index("$2").unwrap(),
        )
    };
    let same_twice: String = c
        .query_row("SELECT $1 || $1 || $2", params!["a", "b"], |r| r.get(0))
        .unwrap();
    println!("placeholders, rusqlite (SQLite {}):", rusqlite::version());
    println!("  `{q}` with params![\"one\", \"two\"] -> {got:?} (PostgreSQL gives \"two-one\")");
    println!("  SQLite's parameter index of $1, $2 in that text: {idx:?} (names numbered by first appearance)");
    println!("  the same text rewritten to ?N -> {rewritten:?}");
    println!(
        "  `SELECT $1 || $1 || $2` with [a, b] -> {same_twice:?} (a repeated $N is one parameter)"
    );
}
