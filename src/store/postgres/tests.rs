//! The team store's own ways: which writes wait for the server's disk, statements held back
//! and sent with the next, and reads of one run that its indexes serve.
#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use super::*;

/// The engine suite's PostgreSQL server, for these tests.
#[path = "../../../tests/engine/pg.rs"]
#[allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
mod test_pg;

/// A release and a derived commit are committed without waiting for the server's disk, in
/// their transaction alone; every other write, before and after, waits.
#[tokio::test]
async fn only_a_release_and_a_derived_commit_skip_the_disk_wait() {
    let store = PostgresStore::open(&test_pg::database(), "test")
        .await
        .unwrap();
    let mode = async |write: Write| {
        let mut conn = store.backend.begin("test", write).await.unwrap();
        let mut mode = String::new();
        let mut each = |r: &dyn sql::Row| {
            mode = r.get(0)?;
            Ok(())
        };
        let shown = conn.query("show", "SHOW synchronous_commit", &[], &mut each);
        shown.await.unwrap();
        store.backend.commit(conn, "test", write).await.unwrap();
        mode
    };
    assert_eq!(mode(Write::Durable).await, "on");
    assert_eq!(mode(Write::Lease).await, "on");
    assert_eq!(mode(Write::Release).await, "off");
    assert_eq!(mode(Write::Derived).await, "off");
    assert_eq!(mode(Write::Durable).await, "on");
}

/// A read of one run's rows finds them by its index even in the plan the server makes once
/// for any value (which it keeps after a statement's fifth run), where a condition that
/// also means "every run" reads the whole table.
#[tokio::test]
async fn one_runs_rows_are_read_by_index_in_a_generic_plan() {
    let store = PostgresStore::open(&test_pg::database(), "test")
        .await
        .unwrap();
    let conn = store.backend.read("test").await.unwrap();
    let client = conn.client("test").unwrap();
    let session = "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off";
    client.batch_execute(session).await.unwrap();
    let plan = async |name: &str, sql: &str| {
        let prepare = format!("PREPARE {name}(text) AS {sql}");
        client.batch_execute(&prepare).await.unwrap();
        let explain = format!("EXPLAIN EXECUTE {name}('r')");
        let rows = client.simple_query(&explain).await.unwrap();
        let lines = rows.iter().filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
            _ => None,
        });
        lines.collect::<Vec<_>>().join("\n")
    };
    for (n, (table, column)) in [
        ("pending", "run_id"),
        ("audit", "run_id"),
        ("plan_revisions", "run_id"),
    ]
    .into_iter()
    .enumerate()
    {
        let one = sql::of_run(column, 1, Some("r"));
        let sql = format!("SELECT * FROM {table} WHERE {one}");
        let read = plan(&format!("one{n}"), &sql).await;
        assert!(!read.contains("Seq Scan"), "{table}: {read}");
        let either = format!("CAST($1 AS TEXT) IS NULL OR {column} = $1");
        let sql = format!("SELECT * FROM {table} WHERE {either}");
        let read = plan(&format!("either{n}"), &sql).await;
        assert!(
            read.contains("Seq Scan"),
            "the old way, for contrast: {read}"
        );
    }
}

/// A statement held back runs before the next one, in order; one that fails fails the
/// statement it went with, or the commit, which then keeps nothing of the transaction.
#[tokio::test]
async fn a_statement_held_back_runs_in_order_and_its_failure_is_not_lost() {
    let store = PostgresStore::open(&test_pg::database(), "test")
        .await
        .unwrap();
    let save = "INSERT INTO settings (key, value, updated_at) VALUES ($1, $2, 0)";
    let read = async |conn: &mut PgConn, key: &str| {
        let mut found = Vec::new();
        let mut each = |r: &dyn sql::Row| {
            found.push(r.get::<String>(0)?);
            Ok(())
        };
        let sql = "SELECT value FROM settings WHERE key = $1";
        conn.query("read", sql, &[&key], &mut each).await.unwrap();
        found
    };

    let mut conn = store.backend.begin("test", Write::Durable).await.unwrap();
    conn.later("save", save, &[&"one", &"1"]).await.unwrap();
    conn.later(
        "save",
        "UPDATE settings SET value = '2' WHERE key = 'one'",
        &[],
    )
    .await
    .unwrap();
    assert_eq!(read(&mut conn, "one").await, ["2"], "both ran, in order");
    store
        .backend
        .commit(conn, "test", Write::Durable)
        .await
        .unwrap();

    // A failure the server finds, one it finds before anything runs (no such table), and one
    // the driver finds before sending (a value of the wrong kind): each sent (or not) with the
    // commit, which fails with it and keeps nothing of the transaction.
    let wrong_kind = "INSERT INTO settings (key, value, updated_at) VALUES ('k', 'v', $1)";
    let failures: [(&str, &[&dyn sql::ToArg], &str); 3] = [
        (save, &[&"one", &"again"], "duplicate key"),
        ("INSERT INTO no_such_table VALUES (1)", &[], "no_such_table"),
        (wrong_kind, &[&"not a number"], "cannot be bound"),
    ];
    for (n, (failing, args, says)) in failures.into_iter().enumerate() {
        let key = format!("kept{n}");
        let mut conn = store.backend.begin("test", Write::Durable).await.unwrap();
        conn.later("save", save, &[&key, &"1"]).await.unwrap();
        conn.later("fail", failing, args).await.unwrap();
        conn.later("save", save, &[&"after", &"1"]).await.unwrap();
        let committed = store.backend.commit(conn, "test", Write::Durable).await;
        let err = committed.expect_err("the commit fails with the statement that failed");
        assert!(err.to_string().contains(says), "{err}");
        let mut conn = store.backend.read("test").await.unwrap();
        assert!(
            read(&mut conn, &key).await.is_empty(),
            "{says}: nothing kept"
        );
        assert!(
            read(&mut conn, "after").await.is_empty(),
            "{says}: nothing kept"
        );
    }

    // Sent with a statement, a failure fails that statement.
    let mut conn = store.backend.begin("test", Write::Durable).await.unwrap();
    assert_eq!(read(&mut conn, "one").await, ["2"]);
    conn.later("save", save, &[&"one", &"again"]).await.unwrap();
    let err = conn.execute("count", "SELECT 1", &[]).await.unwrap_err();
    assert!(err.to_string().contains("duplicate key"), "{err}");
    store.backend.rollback(conn).await;
}

/// Outside a write no commit would send a statement held back: it runs at once, and its
/// failure is its own.
#[tokio::test]
async fn a_statement_held_back_outside_a_write_runs_at_once() {
    let store = PostgresStore::open(&test_pg::database(), "test")
        .await
        .unwrap();
    let mut conn = store.backend.read("test").await.unwrap();
    let save = "INSERT INTO settings (key, value, updated_at) VALUES ('read conn', 'v', 0)";
    conn.later("save", save, &[]).await.unwrap();
    drop(conn);
    let mut conn = store.backend.read("test").await.unwrap();
    let mut found = 0;
    let mut each = |_: &dyn sql::Row| {
        found += 1;
        Ok(())
    };
    let sql = "SELECT value FROM settings WHERE key = 'read conn'";
    conn.query("read", sql, &[], &mut each).await.unwrap();
    assert_eq!(found, 1, "kept without a commit");
    let err = conn.later("save", save, &[]).await.unwrap_err();
    assert!(err.to_string().contains("duplicate key"), "{err}");
}
