//! PostgreSQL: the same decision write with tokio-postgres (as Plandesk's team store:
//! `client.query(&str)` prepares each time; and with statements prepared once) and with
//! sqlx-postgres, against a local server at `PG_URL`
//! (default host=127.0.0.1 port=55432 user=postgres). Plandesk's write transaction: BEGIN,
//! `SELECT pg_advisory_xact_lock(..); NOTIFY ..` in one batch, the statements, COMMIT.

use std::sync::Arc;

use crate::shared::*;
use crate::{async_variant, interleave, rt_name, runtime, Op};

const PG_SCHEMA: &str = "
DROP TABLE IF EXISTS audit, events, pending, decisions, plan_revisions, runs CASCADE;
CREATE TABLE runs (
    id TEXT PRIMARY KEY, prompt TEXT NOT NULL, model TEXT NOT NULL, mode TEXT NOT NULL,
    status TEXT NOT NULL, workspace TEXT NOT NULL, source TEXT NOT NULL, session TEXT,
    holder TEXT, lease_until BIGINT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL);
CREATE TABLE plan_revisions (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id),
    tool_call_id TEXT NOT NULL, path TEXT NOT NULL, title TEXT NOT NULL, body TEXT NOT NULL,
    sha256 TEXT COLLATE \"C\" NOT NULL, revision_no BIGINT NOT NULL, submitted_at BIGINT NOT NULL,
    author TEXT);
CREATE INDEX revisions_by_call ON plan_revisions(run_id, tool_call_id);
CREATE TABLE decisions (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id),
    tool_call_id TEXT NOT NULL, revision_id BIGINT REFERENCES plan_revisions(id),
    action TEXT NOT NULL, feedback TEXT, resume_data TEXT NOT NULL, decided_at BIGINT NOT NULL,
    decided_by TEXT, plan_from_revision BOOLEAN NOT NULL DEFAULT FALSE,
    UNIQUE (run_id, tool_call_id));
CREATE TABLE pending (
    run_id TEXT NOT NULL REFERENCES runs(id), tool_call_id TEXT NOT NULL, kind TEXT NOT NULL,
    tool_name TEXT NOT NULL, args TEXT NOT NULL, revision_id BIGINT REFERENCES plan_revisions(id),
    since BIGINT NOT NULL, waiter TEXT, waiter_until BIGINT,
    seq BIGINT GENERATED ALWAYS AS IDENTITY, PRIMARY KEY (run_id, tool_call_id));
CREATE INDEX pending_by_since ON pending(since);
CREATE TABLE events (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, run_id TEXT NOT NULL, at BIGINT NOT NULL,
    kind TEXT NOT NULL, data TEXT NOT NULL);
CREATE INDEX events_by_run ON events(run_id, id);
CREATE TABLE audit (
    id BIGINT PRIMARY KEY, at BIGINT NOT NULL, actor TEXT NOT NULL, process TEXT NOT NULL,
    run_id TEXT NOT NULL, kind TEXT NOT NULL, revision_sha TEXT, data TEXT NOT NULL,
    prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
CREATE INDEX audit_by_run ON audit(run_id, id);
";

fn pg_seed(n: usize) -> String {
    let body = body();
    format!(
        "INSERT INTO runs (id, prompt, model, mode, status, workspace, created_at, updated_at, source, session)
SELECT 'run-'||x, 'Refactor the store so every behaviour is written once, run '||x, 'model', 'plan',
       'suspended', '/home/user/project-'||x, 1700000000000, 1700000000000, 'claude', 'session-'||x
FROM generate_series(0, {last_run}) x;
INSERT INTO plan_revisions (run_id, tool_call_id, path, title, body, sha256, revision_no, submitted_at)
SELECT 'run-'||(x % {RUNS}), 'call-'||x, 'plans/plan-'||x||'.md', 'Plan number '||x, '{body}',
       lpad(to_hex(x), 64, '0'), 1, 1700000000000 + x FROM generate_series(0, {last}) x;
INSERT INTO pending (run_id, tool_call_id, kind, tool_name, args, revision_id, since)
SELECT run_id, tool_call_id, 'plan', 'ExitPlanMode', '{{\"plan\":\"see the revision\",\"n\":1}}', id, submitted_at
FROM plan_revisions ORDER BY id;",
        last_run = RUNS - 1,
        last = n - 1,
    )
}

/// The write's opening batch in Plandesk's PostgreSQL store (`transact`).
const LOCK: &str = "SELECT pg_advisory_xact_lock(7461); NOTIFY plandesk_spike";

/// The inbox: SQLite's text with `p.rowid` → `p.seq` and `$1::text` (PostgreSQL cannot type an
/// untyped `$1 IS NULL`): the one statement here whose text cannot be shared.
fn pg_inbox() -> String {
    Q_INBOX
        .replace("p.rowid", "p.seq")
        .replace("$1 IS NULL", "$1::text IS NULL")
}

fn url() -> String {
    std::env::var("PG_URL").unwrap_or_else(|_| "host=127.0.0.1 port=55432 user=postgres".into())
}

fn sqlx_url() -> String {
    std::env::var("PG_SQLX_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:55432/postgres".into())
}

async fn tp_connect() -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(&url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// A fresh schema with `n` open items (tables shared by all PostgreSQL variants: each variant
/// uses its own run of item numbers, `offset..offset + n`).
async fn reset(total: usize) {
    let c = tp_connect().await;
    c.batch_execute(PG_SCHEMA).await.unwrap();
    c.batch_execute(&pg_seed(total)).await.unwrap();
}

struct Prepared {
    open: tokio_postgres::Statement,
    same_plan: tokio_postgres::Statement,
    insert_decision: tokio_postgres::Statement,
    close: tokio_postgres::Statement,
    event: tokio_postgres::Statement,
    audit_last: tokio_postgres::Statement,
    audit_insert: tokio_postgres::Statement,
    settle: tokio_postgres::Statement,
    audit_since: tokio_postgres::Statement,
}

/// `tokio_postgres::ToStatement` for both `&str` (prepared each time) and `Statement`.
macro_rules! tp_decide {
    ($c:expr, $i:expr, $plan:expr, $q:expr) => {{
        let (run, call) = item($i);
        let mut c = $c;
        let tx = c.transaction().await.unwrap();
        tx.batch_execute(LOCK).await.unwrap();
        let r = tx.query_one($q.0, &[&run, &call]).await.unwrap();
        let (rev, sha): (i64, String) = (r.get(0), r.get(1));
        let same: bool = tx.query_one($q.1, &[&rev, &$plan]).await.unwrap().get(0);
        assert!(same);
        tx.execute(
            $q.2,
            &[
                &run,
                &call,
                &rev,
                &"approve",
                &None::<String>,
                &"{\"plan\":null}",
                &AT,
                &"alice",
                &same,
            ],
        )
        .await
        .unwrap();
        assert_eq!(tx.execute($q.3, &[&run, &call]).await.unwrap(), 1);
        tx.execute($q.4, &[&run, &AT, &"decided", &event_data(&call, rev)])
            .await
            .unwrap();
        let last = tx.query_opt($q.5, &[]).await.unwrap();
        let (aid, prev) = match last {
            Some(r) => (r.get::<_, i64>(0) + 1, r.get::<_, String>(1)),
            None => (1, String::new()),
        };
        let data = audit_data(&call);
        let hash = chain_hash(&prev, aid, &data);
        tx.execute(
            $q.6,
            &[
                &aid,
                &AT,
                &"alice",
                &"plandesk-app",
                &run,
                &"decided",
                &sha,
                &data,
                &prev,
                &hash,
            ],
        )
        .await
        .unwrap();
        assert_eq!(tx.execute($q.7, &[&run, &AT]).await.unwrap(), 1);
        assert_eq!(tx.query($q.8, &[&aid]).await.unwrap().len(), 1);
        tx.commit().await.unwrap();
    }};
}

async fn sqlx_decide(pool: &sqlx::PgPool, i: usize, plan: &str) {
    let (run, call) = item(i);
    let mut tx = pool.begin().await.unwrap();
    // One simple-protocol batch (no arguments), as tokio-postgres `batch_execute`.
    sqlx::Executor::execute(&mut *tx, LOCK).await.unwrap();
    let (rev, sha): (i64, String) = sqlx::query_as(Q_OPEN)
        .bind(&run)
        .bind(&call)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    let same: bool = sqlx::query_scalar(Q_SAME_PLAN)
        .bind(rev)
        .bind(plan)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert!(same);
    sqlx::query(Q_INSERT_DECISION)
        .bind(&run)
        .bind(&call)
        .bind(rev)
        .bind("approve")
        .bind(None::<String>)
        .bind("{\"plan\":null}")
        .bind(AT)
        .bind("alice")
        .bind(same)
        .execute(&mut *tx)
        .await
        .unwrap();
    assert_eq!(
        sqlx::query(Q_CLOSE)
            .bind(&run)
            .bind(&call)
            .execute(&mut *tx)
            .await
            .unwrap()
            .rows_affected(),
        1
    );
    sqlx::query(Q_EVENT)
        .bind(&run)
        .bind(AT)
        .bind("decided")
        .bind(event_data(&call, rev))
        .execute(&mut *tx)
        .await
        .unwrap();
    let last: Option<(i64, String)> = sqlx::query_as(Q_AUDIT_LAST)
        .fetch_optional(&mut *tx)
        .await
        .unwrap();
    let (aid, prev) = match last {
        Some((id, h)) => (id + 1, h),
        None => (1, String::new()),
    };
    let data = audit_data(&call);
    let hash = chain_hash(&prev, aid, &data);
    sqlx::query(Q_AUDIT_INSERT)
        .bind(aid)
        .bind(AT)
        .bind("alice")
        .bind("plandesk-app")
        .bind(&run)
        .bind("decided")
        .bind(&sha)
        .bind(&data)
        .bind(&prev)
        .bind(&hash)
        .execute(&mut *tx)
        .await
        .unwrap();
    assert_eq!(
        sqlx::query(Q_SETTLE)
            .bind(&run)
            .bind(AT)
            .execute(&mut *tx)
            .await
            .unwrap()
            .rows_affected(),
        1
    );
    let head: Vec<(i64, String)> = sqlx::query_as(Q_AUDIT_SINCE)
        .bind(aid)
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    assert_eq!(head.len(), 1);
    tx.commit().await.unwrap();
}

fn tp_item(r: &tokio_postgres::Row) -> Item {
    Item {
        run_id: r.get(0),
        tool_call_id: r.get(1),
        kind: r.get(2),
        tool_name: r.get(3),
        args: r.get(4),
        since: r.get(5),
        prompt: r.get(6),
        workspace: r.get(7),
        source: r.get(8),
        session: r.get(9),
        rev_id: r.get(10),
        rev_tool_call_id: r.get(11),
        path: r.get(12),
        title: r.get(13),
        body: r.get(14),
        sha256: r.get(15),
        revision_no: r.get(16),
        submitted_at: r.get(17),
        author: r.get(18),
    }
}

pub fn run(n: usize, warm: usize, chunk: usize, inbox_rows: usize) {
    let setup = runtime(false);
    // 5 write variants, each deciding its own n items: item numbers offset by k * n.
    let variants = 5;
    setup.block_on(reset(variants * n));
    // `Any` with the shared `$N` texts on PostgreSQL too.
    setup.block_on(async {
        sqlx::any::install_default_drivers();
        let any = sqlx::any::AnyPoolOptions::new().max_connections(1).connect(&sqlx_url()).await.unwrap();
        let got: String = sqlx::query_scalar("SELECT $2 || '-' || $1").bind("one").bind("two").fetch_one(&any).await.unwrap();
        let as_bool: Result<bool, _> = sqlx::query_scalar("SELECT 'x' = $1").bind("x").fetch_one(&any).await;
        let as_int: Result<i64, _> = sqlx::query_scalar("SELECT 'x' = $1").bind("x").fetch_one(&any).await;
        println!("placeholders, sqlx Any on PostgreSQL: `SELECT $2 || '-' || $1` -> {got:?}; `SELECT 'x' = $1` as bool -> {as_bool:?}, as i64 -> {:?}", as_int.map_err(|e| e.to_string()));
        let untyped = sqlx::query_scalar::<_, i64>("SELECT count(*) FROM pending p WHERE $1 IS NULL OR p.run_id = $1")
            .bind(None::<String>).fetch_one(&any).await;
        println!("  PostgreSQL with an untyped `$1 IS NULL OR run_id = $1`: {:?}", untyped.map_err(|e| e.to_string()));
    });
    let plan: Arc<str> = body().into();
    let mut vs = Vec::new();
    let mut k = 0;
    for multi in [false, true] {
        // tokio-postgres, `&str` statements (prepared per call: Plandesk's team store today).
        let rt = runtime(multi);
        let client = Arc::new(tokio::sync::Mutex::new(rt.block_on(tp_connect())));
        let (plan2, off) = (plan.clone(), k * n);
        let op: Op = Arc::new(move |i| {
            let (client, plan) = (client.clone(), plan2.clone());
            Box::pin(async move {
                let plan: &str = &plan;
                tp_decide!(
                    client.lock().await,
                    i + off,
                    plan,
                    (
                        Q_OPEN,
                        Q_SAME_PLAN,
                        Q_INSERT_DECISION,
                        Q_CLOSE,
                        Q_EVENT,
                        Q_AUDIT_LAST,
                        Q_AUDIT_INSERT,
                        Q_SETTLE,
                        Q_AUDIT_SINCE
                    )
                );
            })
        });
        vs.push(async_variant(
            format!(
                "pg write: tokio-postgres, &str (prepared per call) ({})",
                rt_name(multi)
            ),
            0,
            rt,
            op,
        ));
        k += 1;
    }
    {
        let rt = runtime(true);
        let (client, prepared) = rt.block_on(async {
            let c = tp_connect().await;
            let p = Prepared {
                open: c.prepare(Q_OPEN).await.unwrap(),
                same_plan: c.prepare(Q_SAME_PLAN).await.unwrap(),
                insert_decision: c.prepare(Q_INSERT_DECISION).await.unwrap(),
                close: c.prepare(Q_CLOSE).await.unwrap(),
                event: c.prepare(Q_EVENT).await.unwrap(),
                audit_last: c.prepare(Q_AUDIT_LAST).await.unwrap(),
                audit_insert: c.prepare(Q_AUDIT_INSERT).await.unwrap(),
                settle: c.prepare(Q_SETTLE).await.unwrap(),
                audit_since: c.prepare(Q_AUDIT_SINCE).await.unwrap(),
            };
            (c, p)
        });
        let client = Arc::new(tokio::sync::Mutex::new(client));
        let prepared = Arc::new(prepared);
        let (plan2, off) = (plan.clone(), k * n);
        let op: Op = Arc::new(move |i| {
            let (client, plan, p) = (client.clone(), plan2.clone(), prepared.clone());
            Box::pin(async move {
                let plan: &str = &plan;
                tp_decide!(
                    client.lock().await,
                    i + off,
                    plan,
                    (
                        &p.open,
                        &p.same_plan,
                        &p.insert_decision,
                        &p.close,
                        &p.event,
                        &p.audit_last,
                        &p.audit_insert,
                        &p.settle,
                        &p.audit_since
                    )
                );
            })
        });
        vs.push(async_variant(
            "pg write: tokio-postgres, prepared once (multi_thread)".into(),
            0,
            rt,
            op,
        ));
        k += 1;
    }
    for multi in [false, true] {
        let rt = runtime(multi);
        let pool = rt
            .block_on(
                sqlx::postgres::PgPoolOptions::new()
                    .max_connections(1)
                    .min_connections(1)
                    .test_before_acquire(false)
                    .connect(&sqlx_url()),
            )
            .unwrap();
        let (plan2, off) = (plan.clone(), k * n);
        let op: Op = Arc::new(move |i| {
            let (pool, plan) = (pool.clone(), plan2.clone());
            Box::pin(async move {
                sqlx_decide(&pool, i + off, &plan).await;
            })
        });
        vs.push(async_variant(
            format!("pg write: sqlx-postgres ({})", rt_name(multi)),
            0,
            rt,
            op,
        ));
        k += 1;
    }
    assert_eq!(k, variants);
    interleave(&mut vs, n, warm, chunk);

    // The inbox, 200 rows.
    setup.block_on(reset(inbox_rows));
    let q: Arc<str> = pg_inbox().into();
    let mut vs = Vec::new();
    {
        let rt = runtime(true);
        let client = Arc::new(rt.block_on(tp_connect()));
        let q = q.clone();
        let op: Op = Arc::new(move |_| {
            let (client, q) = (client.clone(), q.clone());
            Box::pin(async move {
                let rows = client.query(&*q, &[&None::<String>]).await.unwrap();
                let items: Vec<Item> = rows.iter().map(tp_item).collect();
                assert_eq!(items.len(), inbox_rows);
            })
        });
        vs.push(async_variant(
            format!("pg inbox {inbox_rows} rows: tokio-postgres, by index (multi_thread)"),
            inbox_rows,
            rt,
            op,
        ));
    }
    {
        let rt = runtime(true);
        let pool = rt
            .block_on(
                sqlx::postgres::PgPoolOptions::new()
                    .max_connections(1)
                    .min_connections(1)
                    .test_before_acquire(false)
                    .connect(&sqlx_url()),
            )
            .unwrap();
        let q = q.clone();
        let op: Op = Arc::new(move |_| {
            let (pool, q) = (pool.clone(), q.clone());
            Box::pin(async move {
                let items: Vec<Item> = sqlx::query_as(&*q)
                    .bind(None::<String>)
                    .fetch_all(&pool)
                    .await
                    .unwrap();
                assert_eq!(items.len(), inbox_rows);
            })
        });
        vs.push(async_variant(
            format!("pg inbox {inbox_rows} rows: sqlx-postgres, derive(FromRow) (multi_thread)"),
            inbox_rows,
            rt,
            op,
        ));
    }
    interleave(&mut vs, n, warm, chunk);
}
