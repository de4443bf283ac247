//! sqlx 0.8 (sqlite feature): the same transaction with `pool.begin_with("BEGIN IMMEDIATE")`,
//! `sqlx::query` (no macros, no DATABASE_URL), the same `$N` texts as PostgreSQL.

use std::path::Path;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::Row;

use crate::shared::*;

/// Plandesk's pragmas through sqlx's options; one connection, as Plandesk's one
/// `Mutex<Connection>`. `test_before_acquire` is sqlx's default (a ping per acquire).
pub async fn pool(path: &Path, test_before_acquire: bool) -> SqlitePool {
    let sync = match sync_mode().as_str() {
        "OFF" => SqliteSynchronous::Off,
        "NORMAL" => SqliteSynchronous::Normal,
        _ => SqliteSynchronous::Full,
    };
    let opts = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(sync)
        .busy_timeout(Duration::from_secs(10))
        .foreign_keys(true)
        .statement_cache_capacity(128);
    SqlitePoolOptions::new()
        .max_connections(1)
        .min_connections(1)
        .test_before_acquire(test_before_acquire)
        .connect_with(opts)
        .await
        .unwrap()
}

/// The decision write: 11 round trips to sqlx's connection worker thread (BEGIN, 9
/// statements, COMMIT), plus the pool's acquire (and its ping, if `test_before_acquire`).
pub async fn decide(pool: &SqlitePool, i: usize, plan: &str) -> i64 {
    let (run, call) = item(i);
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
    let (rev, sha): (i64, String) = sqlx::query_as(Q_OPEN)
        .bind(&run)
        .bind(&call)
        .fetch_optional(&mut *tx)
        .await
        .unwrap()
        .expect("the item is open");
    let same: bool = sqlx::query_scalar(Q_SAME_PLAN)
        .bind(rev)
        .bind(plan)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert!(same);
    let id = sqlx::query(Q_INSERT_DECISION)
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
        .unwrap()
        .last_insert_rowid();
    let closed = sqlx::query(Q_CLOSE)
        .bind(&run)
        .bind(&call)
        .execute(&mut *tx)
        .await
        .unwrap();
    assert_eq!(closed.rows_affected(), 1);
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
    let settled = sqlx::query(Q_SETTLE)
        .bind(&run)
        .bind(AT)
        .execute(&mut *tx)
        .await
        .unwrap();
    assert_eq!(settled.rows_affected(), 1);
    let head: Vec<(i64, String)> = sqlx::query_as(Q_AUDIT_SINCE)
        .bind(aid)
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    assert_eq!(head.len(), 1);
    tx.commit().await.unwrap();
    id
}

/// The inbox with derived mapping (`#[derive(FromRow)]` on `Item`).
pub async fn inbox(pool: &SqlitePool) -> Vec<Item> {
    sqlx::query_as::<_, Item>(Q_INBOX)
        .bind(None::<String>)
        .fetch_all(pool)
        .await
        .unwrap()
}

/// The inbox mapped by hand, by index (as rusqlite's closure does).
pub async fn inbox_by_index(pool: &SqlitePool) -> Vec<Item> {
    let rows = sqlx::query(Q_INBOX)
        .bind(None::<String>)
        .fetch_all(pool)
        .await
        .unwrap();
    rows.iter()
        .map(|r| Item {
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
        })
        .collect()
}

/// `$N` binding in sqlx-sqlite and through the `Any` driver (sqlite URL).
pub async fn placeholders(dir: &Path) {
    let pool = pool(&dir.join("placeholders-sqlx.db"), false).await;
    let q = "SELECT $2 || '-' || $1";
    let got: String = sqlx::query_scalar(q)
        .bind("one")
        .bind("two")
        .fetch_one(&pool)
        .await
        .unwrap();
    let twice: String = sqlx::query_scalar("SELECT $1 || $1 || $2")
        .bind("a")
        .bind("b")
        .fetch_one(&pool)
        .await
        .unwrap();
    println!("placeholders, sqlx-sqlite 0.8:");
    println!("  `{q}` with .bind(\"one\").bind(\"two\") -> {got:?}");
    println!("  `SELECT $1 || $1 || $2` with [a, b] -> {twice:?}");
    sqlx::any::install_default_drivers();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.join("placeholders-any.db").display()
    );
    let any = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .unwrap();
    let got: String = sqlx::query_scalar(q)
        .bind("one")
        .bind("two")
        .fetch_one(&any)
        .await
        .unwrap();
    println!("  Any driver on sqlite: `{q}` -> {got:?}");
    let as_bool: Result<bool, _> = sqlx::query_scalar("SELECT 'x' = $1")
        .bind("x")
        .fetch_one(&any)
        .await;
    let as_int: Result<i64, _> = sqlx::query_scalar("SELECT 'x' = $1")
        .bind("x")
        .fetch_one(&any)
        .await;
    println!("  Any driver on sqlite: `SELECT 'x' = $1` decoded as bool -> {as_bool:?}, as i64 -> {as_int:?}");
    let mut tx = any.begin_with("BEGIN IMMEDIATE").await.unwrap();
    let one: i64 = sqlx::query_scalar("SELECT 1")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    println!("  Any driver on sqlite: begin_with(\"BEGIN IMMEDIATE\") works ({one})");
}
