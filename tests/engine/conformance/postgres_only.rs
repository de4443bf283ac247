//! What only the PostgreSQL store has: a server that may be away, a URL that may hold a
//! password, a schema other processes may have moved on.

use std::time::Duration;

use futures::StreamExt;

use super::*;

use crate::pg::sql_on;

#[tokio::test]
async fn a_database_written_by_a_newer_plandesk_is_refused() {
    let url = crate::pg::database();
    let location = StoreLocation::postgres(url.clone());
    drop(location.open().await.unwrap());
    assert!(
        sql_on(&url, "UPDATE plandesk_schema SET version = version + 1")
            .status
            .success()
    );
    let err = location.open().await.unwrap_err();
    assert!(matches!(err, StoreError::Newer { .. }), "{err}");
    assert!(err.to_string().contains("newer Plandesk"), "{err}");
}

#[tokio::test]
async fn the_audit_trail_cannot_be_changed_even_with_sql() {
    let url = crate::pg::database();
    let store = store_with_run(&StoreLocation::postgres(url.clone()), "r").await;
    open_items(&*store, &[plan_item("c1", "# A\n")]).await;
    for sql in [
        "UPDATE audit SET actor = 'mallory'",
        "DELETE FROM audit",
        "TRUNCATE audit",
    ] {
        let out = sql_on(&url, sql);
        assert!(!out.status.success(), "{sql} was allowed");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("append-only"),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(store.audit(None).await.unwrap()[0].actor, "agent");
}

#[tokio::test]
async fn a_server_without_tls_is_refused_when_the_url_requires_it() {
    // The test server speaks no TLS: `prefer` (the default) connects in the clear, `require`
    // never does.
    let url = crate::pg::database();
    let err = StoreLocation::postgres(format!("{url}?sslmode=require"))
        .open()
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot open the store"), "{err}");
    assert!(err.to_lowercase().contains("tls"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_cut_by_the_server_are_made_again() {
    let url = crate::pg::database();
    let watcher = StoreLocation::postgres(url.clone()).open().await.unwrap();
    let mut changes = watcher.changes();
    changes.next().await.unwrap();
    watcher.set_setting("k", Some("before"), 1).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    while tokio::time::timeout(Duration::from_millis(50), changes.next())
        .await
        .is_ok()
    {}
    // The server (a restart, an admin, a failover) ends every connection to the database.
    let db = url.rsplit('/').next().unwrap();
    let out = sql_on(
        &url,
        &format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = '{db}' AND pid <> pg_backend_pid()"
        ),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Queries work again at once, and the watcher hears commits again.
    assert_eq!(
        watcher.setting("k").await.unwrap().as_deref(),
        Some("before")
    );
    let writer = StoreLocation::postgres(url).open().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    while tokio::time::timeout(Duration::from_millis(50), changes.next())
        .await
        .is_ok()
    {}
    writer.set_setting("k", Some("after"), 2).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), changes.next())
        .await
        .expect("the watcher listens again after losing its connection")
        .unwrap();
}

#[tokio::test]
async fn settings_are_each_persons_own() {
    let url = crate::pg::database();
    let ana = StoreLocation::choose(Some(&url), std::path::Path::new("/home/ana/.plandesk"))
        .unwrap()
        .open()
        .await
        .unwrap();
    let ben = StoreLocation::choose(Some(&url), std::path::Path::new("/home/ben/.plandesk"))
        .unwrap()
        .open()
        .await
        .unwrap();
    ana.set_setting("reviewer_name", Some("Ana"), 1)
        .await
        .unwrap();
    assert_eq!(ben.setting("reviewer_name").await.unwrap(), None);
    ben.set_setting("reviewer_name", Some("Ben"), 2)
        .await
        .unwrap();
    assert_eq!(
        ana.setting("reviewer_name").await.unwrap().as_deref(),
        Some("Ana")
    );
}

#[tokio::test]
async fn an_unreachable_server_is_one_clear_error_without_the_password() {
    // Port 9 (discard): nothing listens on loopback.
    let location = StoreLocation::postgres("postgres://ana:s3cret-pass@127.0.0.1:9/team");
    let err = location.open().await.unwrap_err().to_string();
    assert!(err.contains("postgres://ana@127.0.0.1:9/team"), "{err}");
    assert!(!err.contains("s3cret-pass"), "the password leaked: {err}");
    assert!(format!("{location:?}").find("s3cret").is_none());
    let err = StoreLocation::postgres("postgres://ana:s3cret-pass@[::1")
        .open()
        .await
        .unwrap_err()
        .to_string();
    assert!(!err.contains("s3cret-pass"), "the password leaked: {err}");
    let err = StoreLocation::choose(
        Some("mysql://ana:s3cret-pass@db/team"),
        std::path::Path::new("/d"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("PostgreSQL URL"), "{err}");
    assert!(!err.contains("s3cret-pass"), "the password leaked: {err}");
}

/// A write given up while it waits for the store's write lock (its caller cancelled, timed
/// out) records nothing and holds nothing: its connection is closed, not pooled half-way
/// through a transaction, and the next write goes through at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_given_up_midway_records_nothing_and_holds_nothing() {
    let url = crate::pg::database();
    let store = StoreLocation::postgres(url.clone()).open().await.unwrap();
    let other = crate::support::pg_client(&url).await;
    // The store's write lock ("plandesk"), held by another session.
    let lock = "SELECT pg_advisory_lock(8100956956491346795)";
    other.batch_execute(lock).await.unwrap();
    let waiting = store.set_setting("given-up", Some("v"), 1);
    let gave_up = tokio::time::timeout(Duration::from_millis(300), waiting).await;
    assert!(gave_up.is_err(), "the write did not wait for the lock");
    other
        .batch_execute("SELECT pg_advisory_unlock(8100956956491346795)")
        .await
        .unwrap();
    for round in 0..20 {
        let value = round.to_string();
        let next = store.set_setting("next", Some(&value), 2);
        tokio::time::timeout(Duration::from_secs(5), next)
            .await
            .expect("a later write waited on the one given up")
            .unwrap();
    }
    assert_eq!(store.setting("given-up").await.unwrap(), None);
    assert_eq!(store.setting("next").await.unwrap().as_deref(), Some("19"));
}

#[tokio::test]
async fn a_database_of_schema_4_keeps_each_runs_newest_snapshot_only() {
    let url = crate::pg::database();
    let location = StoreLocation::postgres(url.clone());
    let store = store_with_run(&location, "r").await;
    open_items(&*store, &[]).await;
    drop(store);
    // As schema 4 left it: every snapshot a run's commits wrote.
    for sql in [
        "ALTER TABLE run_snapshots DROP CONSTRAINT run_snapshots_pkey",
        "ALTER TABLE run_snapshots ADD PRIMARY KEY (run_id, version)",
        "INSERT INTO run_snapshots (run_id, version, schema_version, message_count, state, saved_at)
         SELECT run_id, v, schema_version, message_count, state, saved_at
         FROM run_snapshots, generate_series(1, 1) AS v",
        "ALTER TABLE messages DROP COLUMN packed",
        "ALTER TABLE plan_revisions DROP COLUMN packed, DROP COLUMN packed_against",
        "DROP FUNCTION plandesk_is_append_only CASCADE",
        "UPDATE plandesk_schema SET version = 4",
    ] {
        let out = sql_on(&url, sql);
        assert!(out.status.success(), "{sql}: {out:?}");
    }
    let store = location.open().await.unwrap();
    assert_eq!(store.snapshot_count("r").await.unwrap(), 1);
    assert_eq!(store.load("r").await.unwrap().version, 2);
    store.commit(&commit("r", 2, 1, &[], &[])).await.unwrap();
    assert_eq!(store.snapshot_count("r").await.unwrap(), 1);
    assert_eq!(store.load("r").await.unwrap().version, 3);
}

#[tokio::test]
async fn a_snapshot_rewritten_at_every_step_leaves_no_dead_copies() {
    let url = crate::pg::database();
    let store = store_with_run(&StoreLocation::postgres(url.clone()), "r").await;
    // A suspended run's state holds its step's calls, a plan among them: ~4 KB that compress
    // little (a different plan at each step).
    let mut seed = 7u64;
    for version in 1..=300 {
        let plan: String = (0..400)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                format!("{:08x} ", seed >> 32)
            })
            .collect();
        let state = json!({"phase": "suspended", "plan": plan}).to_string();
        let step = Commit {
            state: &state,
            ..commit("r", version, 1, &[], &[])
        };
        store.commit(&step).await.unwrap();
    }
    let out = sql_on(&url, "SELECT pg_total_relation_size('run_snapshots')");
    let bytes: u64 = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|line| line.trim().parse().ok())
        .unwrap();
    // One run's snapshot, alive, and the dead copies not yet cleared: 32 kB on a quiet
    // server, up to ~260 kB while other tests' transactions hold back what a page may clear.
    // (300 dead copies out of line took 1.36 MB.)
    assert!(bytes <= 640 * 1024, "run_snapshots takes {bytes} bytes");
}
