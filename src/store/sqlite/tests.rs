//! The embedded store's own ways: its checkpoints, how it reads the history listing, which
//! writes wait for the disk, and that a waiting write holds up no async worker.
#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use futures::executor::block_on;

use super::*;

/// Runs `sql` in one write of the kind `write`, returning its first row's first column.
fn write(store: &SqliteStore, write: Write, sql: &str) -> Option<i64> {
    let backend = &store.backend;
    block_on(async {
        let mut conn = backend.begin("test", write).await.unwrap();
        let mut first = None;
        let mut each = |r: &dyn sql::Row| {
            first = first.or(Some(r.get(0)?));
            Ok(())
        };
        conn.query("test", sql, &[], &mut each).await.unwrap();
        backend.commit(conn, "test", write).await.unwrap();
        first
    })
}

/// `PRAGMA synchronous` in a write of the kind `kind` (1 NORMAL, 2 FULL).
fn synchronous(store: &SqliteStore, kind: Write) -> i64 {
    write(store, kind, "PRAGMA synchronous").unwrap()
}

/// ~500 KB written by a durable write (or a lease, when `lease`).
fn blob(store: &SqliteStore, lease: bool) {
    let kind = if lease { Write::Lease } else { Write::Durable };
    write(store, kind, "CREATE TABLE IF NOT EXISTS scratch(x)");
    write(
        store,
        kind,
        "INSERT INTO scratch VALUES (randomblob(500000))",
    );
}

/// Waits up to 10 s for the store's checkpoints to settle with `whole` of them done (none
/// due); how many were done then.
fn checkpoints_settle(store: &SqliteStore, whole: u64) -> u64 {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (done, due) = store.backend.checkpointer.settled();
        if (done >= whole && !due) || std::time::Instant::now() >= until {
            return done;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn file_size(store: &SqliteStore) -> u64 {
    std::fs::metadata(store.path()).unwrap().len()
}

/// Writes that pause have their log moved into the database by the store's own thread,
/// not by a later commit: ~2 MB written (half of what makes SQLite checkpoint inside a
/// commit) are in the database file soon after the writes stop. Lease writes call for no
/// checkpoint.
#[test]
fn a_pause_in_the_writes_checkpoints_the_log_and_leases_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let before = file_size(&store);
    for _ in 0..4 {
        blob(&store, false);
    }
    // One checkpoint, or more if this thread stalled between the writes.
    let done = checkpoints_settle(&store, 1);
    assert!(done >= 1);
    assert!(
        file_size(&store) >= before + 2_000_000,
        "checkpointed: {} bytes",
        file_size(&store)
    );
    for _ in 0..4 {
        blob(&store, true);
    }
    std::thread::sleep(checkpoint::QUIET * 4);
    assert_eq!(
        store.backend.checkpointer.settled(),
        (done, false),
        "leases were checkpointed"
    );
    drop(store); // stops the thread (a hang here is the failure)
}

/// A checkpoint that a reader kept from taking the whole log is tried again once the
/// reader is done, with no write to call for it.
#[test]
fn a_checkpoint_a_reader_held_up_is_tried_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let before = file_size(&store);
    blob(&store, false);
    // The reader's snapshot holds the next writes' frames in the log.
    let reader = Connection::open(store.path()).unwrap();
    reader
        .execute_batch("BEGIN; SELECT COUNT(*) FROM scratch;")
        .unwrap();
    for _ in 0..3 {
        blob(&store, false);
    }
    std::thread::sleep(checkpoint::QUIET * 3);
    reader.execute_batch("COMMIT").unwrap();
    assert!(checkpoints_settle(&store, 1) >= 1);
    assert!(
        file_size(&store) >= before + 2_000_000,
        "checkpointed: {} bytes",
        file_size(&store)
    );
}

/// The history listing (every revision, without its plan) reads the listing's indexes,
/// not the rows of the revisions and decisions, which hold plans; a page of it (the first,
/// a later one, of one status) walks the index from the page's start, with nothing sorted.
#[test]
fn the_history_listing_reads_no_plan() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let pending = States {
        undecided_open: true,
        ..States::default()
    };
    let pages = [
        Listing::default(),
        Listing {
            limit: Some(100),
            ..Listing::default()
        },
        Listing {
            before: Some(5000),
            limit: Some(100),
            ..Listing::default()
        },
        Listing {
            states: Some(&pending),
            before: Some(5000),
            limit: Some(100),
            ..Listing::default()
        },
    ];
    let mut conn = store.backend.conn().unwrap();
    for listing in &pages {
        let limit = listing.limit.map(|l| l as i64);
        let (sql, args) = super::super::revisions::listing_sql(Dialect::Sqlite, listing, &limit);
        let mut steps = Vec::new();
        let mut each = |step: &dyn sql::Row| {
            steps.push(step.get::<String>(3)?);
            Ok(())
        };
        let explain = format!("EXPLAIN QUERY PLAN {sql}");
        block_on(conn.query("test", &explain, &args, &mut each)).unwrap();
        let plan = steps.join("\n");
        assert!(
            plan.contains("USING COVERING INDEX revisions_listing"),
            "{listing:?}: {plan}"
        );
        assert!(
            plan.contains("SEARCH d USING COVERING INDEX decisions_listing"),
            "{listing:?}: {plan}"
        );
        assert!(!plan.contains("TEMP B-TREE"), "{listing:?}: {plan}");
    }
}

/// A lease and a derived commit are written without waiting for the disk; every other
/// write, before and after them, waits (FULL), also after a lease write that failed or
/// panicked midway.
#[test]
fn only_a_lease_is_written_without_waiting_for_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    assert_eq!(synchronous(&store, Write::Durable), 2);
    assert_eq!(synchronous(&store, Write::Lease), 1, "a lease: NORMAL");
    assert_eq!(synchronous(&store, Write::Release), 1, "a release: NORMAL");
    assert_eq!(synchronous(&store, Write::Derived), 1, "derived: NORMAL");
    assert_eq!(
        synchronous(&store, Write::Durable),
        2,
        "after a lease: FULL again"
    );
    let backend = &store.backend;
    let failed = block_on(async {
        let mut conn = backend.begin("test", Write::Lease).await.unwrap();
        conn.execute("test", "INSERT INTO nowhere VALUES (1)", &[])
            .await
    });
    assert!(failed.is_err());
    assert_eq!(
        synchronous(&store, Write::Durable),
        2,
        "after a failed lease"
    );
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        block_on(async {
            let _conn = backend.begin("test", Write::Lease).await.unwrap();
            panic!("midway")
        })
    }));
    assert!(panicked.is_err());
    assert_eq!(
        synchronous(&store, Write::Durable),
        2,
        "after a panicked lease"
    );
}

/// A write that waits for SQLite's lock (another process holds it) keeps no async worker
/// waiting with it: on a runtime of one worker, another task still runs meanwhile, and the
/// write goes through once the lock is given back.
#[test]
fn a_write_waiting_for_the_lock_blocks_no_async_worker() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path()).unwrap());
    let other = Connection::open(store.path()).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let waiting = store.clone();
    let write = runtime.spawn(async move { waiting.set_setting("k", Some("v"), 1).await });
    std::thread::sleep(Duration::from_millis(300));
    let (ran, told) = std::sync::mpsc::channel();
    runtime.spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        ran.send(()).unwrap();
    });
    let meanwhile = told.recv_timeout(Duration::from_secs(5));
    assert!(!write.is_finished(), "the write did not wait for the lock");
    other.execute_batch("COMMIT").unwrap();
    assert!(meanwhile.is_ok(), "the one worker waited with the write");
    runtime.block_on(write).unwrap().unwrap();
    let saved = runtime.block_on(store.setting("k")).unwrap();
    assert_eq!(saved.as_deref(), Some("v"));
}

/// The wake folder's sockets, by name.
fn sockets(store: &SqliteStore) -> Vec<String> {
    let dir = wake::folder(store.path());
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `store`'s changes, once its thread is rung on a socket of its own and what it heard on its
/// first look (what was there already) is taken: from then on, nothing until a commit.
fn following(store: &SqliteStore) -> futures::stream::BoxStream<'static, ()> {
    let mut changes = store.changes();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while sockets(store).is_empty() {
        assert!(
            std::time::Instant::now() < until,
            "the follower has a socket"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    while futures::FutureExt::now_or_never(futures::StreamExt::next(&mut changes)).is_some() {}
    changes
}

/// How long after `writer` commits `sql` its change is heard on `changes`.
fn heard_after(
    writer: &SqliteStore,
    changes: &mut futures::stream::BoxStream<'static, ()>,
    sql: &str,
) -> std::time::Duration {
    let started = std::time::Instant::now();
    write(writer, Write::Durable, sql);
    block_on(futures::StreamExt::next(changes)).unwrap();
    started.elapsed()
}

#[test]
fn a_commit_in_one_process_wakes_another_at_once_and_a_dead_ones_socket_goes() {
    let dir = tempfile::tempdir().unwrap();
    // Two handles on one file: two processes, as far as SQLite and the bell can tell.
    let (follower, writer) = (
        SqliteStore::open(dir.path()).unwrap(),
        SqliteStore::open(dir.path()).unwrap(),
    );
    let mut changes = following(&follower);
    assert_eq!(sockets(&follower).len(), 1, "one socket for the follower");
    // A socket left by a process that was killed: nobody reads it.
    let stale = wake::folder(follower.path()).join("1-deadbeef");
    drop(std::os::unix::net::UnixDatagram::bind(&stale).unwrap());
    // The thread looks on its own only every 5 s: heard well before, the bell rang.
    let heard = heard_after(&writer, &mut changes, "CREATE TABLE scratch(x)");
    assert!(
        heard < std::time::Duration::from_millis(2500),
        "heard after {heard:?}"
    );
    assert_eq!(sockets(&follower).len(), 1, "the stale socket is removed");
    assert!(!stale.exists());
    // The folder is the user's alone.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(wake::folder(follower.path()))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
}

/// A writer keeps the folder's listing while it stands: a follower that comes later (its
/// socket changes the folder) is rung by the next commit all the same.
#[test]
fn a_follower_that_comes_after_the_listing_was_kept_is_rung_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let writer = SqliteStore::open(dir.path()).unwrap();
    write(&writer, Write::Durable, "CREATE TABLE scratch(x)");
    // The folder settled: this commit's listing (no one) is kept.
    std::thread::sleep(std::time::Duration::from_millis(200));
    write(&writer, Write::Durable, "INSERT INTO scratch VALUES (1)");
    let follower = SqliteStore::open(dir.path()).unwrap();
    let mut changes = following(&follower);
    let heard = heard_after(&writer, &mut changes, "INSERT INTO scratch VALUES (2)");
    assert!(
        heard < std::time::Duration::from_millis(2500),
        "heard after {heard:?}: the kept listing missed the follower"
    );
}

#[test]
fn a_link_in_place_of_the_wake_folder_is_not_followed() {
    use futures::StreamExt;
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let wake = wake::folder(store.path());
    std::fs::remove_dir(&wake).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &wake).unwrap();
    // Opened again with the link there: no socket is made through it, and changes are still
    // heard (by looking).
    let (follower, writer) = (
        SqliteStore::open(dir.path()).unwrap(),
        SqliteStore::open(dir.path()).unwrap(),
    );
    let mut changes = follower.changes();
    block_on(changes.next()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    while futures::FutureExt::now_or_never(changes.next()).is_some() {}
    write(&writer, Write::Durable, "CREATE TABLE scratch(x)");
    block_on(changes.next()).unwrap();
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    assert!(std::fs::symlink_metadata(&wake).unwrap().is_symlink());
}
