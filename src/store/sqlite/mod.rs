//! The embedded store: one SQLite file (WAL, synchronous=FULL, but for a lease or a
//! derived commit: see `write_lease`) shared by every process using the same data
//! directory. A table per file; migrations in their own module. What every store must do is
//! tested on this one and on PostgreSQL alike: tests/engine/conformance.rs.

mod audit;
mod checkpoint;
mod comments;
mod decisions;
mod events;
mod items;
mod migrations;
mod revisions;
mod runs;
mod settings;
mod snapshots;
mod tokens;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use rusqlite::{Connection, ErrorCode, TransactionBehavior};

use super::*;

/// How often `changes` asks SQLite whether another connection committed (one cheap PRAGMA).
const CHANGE_POLL: Duration = Duration::from_millis(250);

/// Maps a failed query to a store error that says which query failed.
pub(super) fn query(context: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError {
    move |err| StoreError::Query {
        context,
        message: err.to_string(),
    }
}

/// Reads a stored vocabulary word back, refusing one this build does not know.
pub(super) fn word<T>(
    parse: fn(&str) -> Option<T>,
    text: String,
    column: usize,
) -> rusqlite::Result<T> {
    parse(&text).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            column,
            rusqlite::types::Type::Text,
            format!("unknown value `{text}`").into(),
        )
    })
}

#[derive(Debug)]
pub struct SqliteStore {
    /// First, so that it stops before the store's connection closes (the last connection to
    /// close checkpoints what is left).
    checkpointer: checkpoint::Checkpointer,
    conn: Mutex<Connection>,
    path: PathBuf,
    /// The record of the audit trail's head, beside the database.
    anchor: AuditAnchor,
    /// The connection may not wait for the disk (a lease write set it so and has not been
    /// seen to set it back): a durable write sets it back first.
    relaxed: AtomicBool,
}

impl SqliteStore {
    /// Opens (creating if needed) the store in `dir`, upgrading its schema; refuses a store
    /// written by a newer Plandesk, and says plainly when the file is damaged or read-only.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        let path = dir.join(DB_FILE);
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Open {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let mut conn = connect(&path)?;
        migrations::migrate(&mut conn, &path)?;
        Ok(Self {
            checkpointer: checkpoint::Checkpointer::start(&path),
            conn: Mutex::new(conn),
            path,
            anchor: AuditAnchor::local(dir),
            relaxed: AtomicBool::new(false),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves SQLite consistent (transactions roll back).
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `work` in one IMMEDIATE transaction (the write lock is taken at once, so two
    /// processes never interleave a read and a write), committing if it succeeds.
    fn write<T>(
        &self,
        context: &'static str,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn();
        if self.relaxed.load(Ordering::SeqCst) {
            // A lease write panicked, or could not set it back: this write waits for the disk.
            self.synchronous(&conn, "FULL", context)?;
            self.relaxed.store(false, Ordering::SeqCst);
        }
        let value = self.commit(&mut conn, context, work)?;
        self.checkpointer.written();
        Ok(value)
    }

    /// `work` in one IMMEDIATE transaction on `conn`, committed if it succeeds.
    fn commit<T>(
        &self,
        conn: &mut Connection,
        context: &'static str,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.classify(context, e))?;
        let (value, appended) = super::anchor::appending(|| work(&tx));
        let value = value?;
        // What the record of the trail's head moves to is read under the write lock, so that
        // no other appender comes between; it is written once the entries are committed.
        let head = appended.then(|| audit::since(&tx, self.anchor.first_needed()));
        tx.commit().map_err(|e| self.classify(context, e))?;
        match head {
            Some(Ok(entries)) => self.anchor.advance_later(entries),
            Some(Err(err)) => {
                eprintln!("plandesk: cannot record the audit trail's end: {err}")
            }
            None => {}
        }
        Ok(value)
    }

    /// As [`Self::write`], for a commit derived from durable decisions ([`Commit::derived`]:
    /// the run applies them again): committed without waiting for the disk, as
    /// [`Self::write_lease`].
    fn write_relaxed<T>(
        &self,
        context: &'static str,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let value = self.write_lease(context, work)?;
        self.checkpointer.written();
        Ok(value)
    }

    /// As [`Self::write`], for what need not outlast a crash of the machine: a run's lease or
    /// an item's waiter (the process holding it is gone with the machine, and what it leaves
    /// behind expires or is taken over at once: a lease works without the disk). Such a write
    /// is committed without waiting for the disk (`synchronous = NORMAL`, in WAL mode still
    /// atomic, and on the disk in order with the next durable commit), which takes an fsync
    /// off the way between a click and the run going on, and between a suspension and its
    /// end. A process killed, not the machine, loses nothing either way. Nor does it call for
    /// a checkpoint (which would wait for the disk, every 10 s while a hook waits).
    fn write_lease<T>(
        &self,
        context: &'static str,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn();
        // Marked first: whatever becomes of this write (an error, a panic in `work`), no
        // durable write commits before the connection waits for the disk again.
        self.relaxed.store(true, Ordering::SeqCst);
        self.synchronous(&conn, "NORMAL", context)?;
        let written = self.commit(&mut conn, context, work);
        if self.synchronous(&conn, "FULL", context).is_ok() {
            self.relaxed.store(false, Ordering::SeqCst);
        }
        written
    }

    /// Sets whether `conn`'s commits wait for the disk (`FULL`) or not (`NORMAL`).
    fn synchronous(
        &self,
        conn: &Connection,
        level: &str,
        context: &'static str,
    ) -> Result<(), StoreError> {
        conn.pragma_update(None, "synchronous", level)
            .map_err(|e| self.classify(context, e))
    }

    /// A write that failed because of the file itself names the file.
    fn classify(&self, context: &'static str, err: rusqlite::Error) -> StoreError {
        file_error(&self.path, err).unwrap_or_else(|err| query(context)(err))
    }
}

/// Opens a connection with the store's settings, mapping a bad file to one clear error.
fn connect(path: &Path) -> Result<Connection, StoreError> {
    // Switching a new file to WAL takes an exclusive lock that SQLite does not wait for: when
    // another process is creating the store at the same moment, try again for a while.
    let give_up = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match try_connect(path) {
            Err(err)
                if matches!(
                    err.sqlite_error_code(),
                    Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
                ) && std::time::Instant::now() < give_up =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(err) => {
                return Err(
                    file_error(path, err).unwrap_or_else(|err| StoreError::Open {
                        path: path.to_owned(),
                        message: err.to_string(),
                    }),
                )
            }
            Ok(conn) => return Ok(conn),
        }
    }
}

fn try_connect(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    // Room for every statement the store prepares (rusqlite keeps 16): the history's listing
    // alone is a statement per filter it has (status, words, page start).
    conn.set_prepared_statement_cache_capacity(128);
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;",
    )?;
    // Reading the schema proves the file is a database at all.
    conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })?;
    Ok(conn)
}

/// The store error for a failure caused by the file (damaged, not a database, read-only), or
/// the original error when it is something else.
fn file_error(path: &Path, err: rusqlite::Error) -> Result<StoreError, rusqlite::Error> {
    let code = err.sqlite_error_code();
    let message = err.to_string();
    match code {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => Ok(StoreError::Damaged {
            path: path.to_owned(),
            message,
        }),
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
            Ok(StoreError::ReadOnly {
                path: path.to_owned(),
                message,
            })
        }
        _ => Err(err),
    }
}

#[async_trait]
impl Store for SqliteStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    async fn create_run(&self, run: &NewRun<'_>, first: &Commit<'_>) -> Result<(), StoreError> {
        self.write("create run", |tx| {
            runs::insert(tx, run, first.at)?;
            snapshots::commit(tx, first)
        })
    }

    async fn commit(&self, commit: &Commit<'_>) -> Result<(), StoreError> {
        let work = |tx: &rusqlite::Transaction<'_>| snapshots::commit(tx, commit);
        if commit.derived {
            self.write_relaxed("commit snapshot", work)
        } else {
            self.write("commit snapshot", work)
        }
    }

    async fn load(&self, run_id: &str) -> Result<StoredRun, StoreError> {
        snapshots::load(&self.conn(), run_id)
    }

    async fn snapshot_version(&self, run_id: &str) -> Result<i64, StoreError> {
        snapshots::version(&self.conn(), run_id)
    }

    async fn claim(&self, run_id: &str, lease: &Lease<'_>) -> Result<ClaimOutcome, StoreError> {
        self.write_lease("claim run", |tx| runs::claim(tx, run_id, lease))
    }

    async fn take_over(
        &self,
        run_id: &str,
        holder: &str,
        lease: &Lease<'_>,
    ) -> Result<bool, StoreError> {
        self.write_lease("take over run", |tx| {
            runs::take_over(tx, run_id, holder, lease)
        })
    }

    async fn renew(&self, run_id: &str, lease: &Lease<'_>) -> Result<bool, StoreError> {
        self.write_lease("renew lease", |tx| runs::renew(tx, run_id, lease))
    }

    async fn release(&self, run_id: &str, holder: &str) -> Result<(), StoreError> {
        self.write_lease("release run", |tx| runs::release(tx, run_id, holder))
    }

    async fn run(&self, run_id: &str) -> Result<RunRow, StoreError> {
        runs::one(&self.conn(), run_id)
    }

    async fn runs(&self) -> Result<Vec<RunRow>, StoreError> {
        runs::all(&self.conn())
    }

    async fn latest_run(&self) -> Result<Option<RunRow>, StoreError> {
        runs::latest(&self.conn())
    }

    async fn resolve_run(&self, prefix: &str) -> Result<String, StoreError> {
        runs::resolve(&self.conn(), prefix)
    }

    async fn session_run(&self, run: &NewRun<'_>, at: Millis) -> Result<String, StoreError> {
        self.write("find or create session", |tx| runs::session(tx, run, at))
    }

    async fn open_item(
        &self,
        run_id: &str,
        item: &OpenItem,
        waiter: &Lease<'_>,
        by: &Actor,
    ) -> Result<ItemRow, StoreError> {
        self.write("open item", |tx| {
            items::open_one(tx, run_id, item, waiter, by)
        })
    }

    async fn append_audit(&self, entry: &NewAudit<'_>) -> Result<(), StoreError> {
        self.write("append to the audit trail", |tx| {
            audit::append(tx, entry.entry())
        })
    }

    async fn audit(&self, run_id: Option<&str>) -> Result<Vec<AuditRow>, StoreError> {
        audit::list(&self.conn(), run_id)
    }

    fn audit_anchor(&self) -> Option<&AuditAnchor> {
        Some(&self.anchor)
    }

    async fn renew_waiter(
        &self,
        run_id: &str,
        tool_call_id: &str,
        waiter: &Lease<'_>,
    ) -> Result<bool, StoreError> {
        self.write_lease("renew waiter", |tx| {
            items::renew_waiter(tx, run_id, tool_call_id, waiter)
        })
    }

    async fn waited_items(&self) -> Result<Vec<WaitedItem>, StoreError> {
        items::waited(&self.conn())
    }

    async fn record_decision(&self, d: &NewDecision<'_>) -> Result<DecisionRow, StoreError> {
        self.write("record decision", |tx| decisions::record(tx, d))
    }

    async fn decision(
        &self,
        run_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<DecisionRow>, StoreError> {
        decisions::find(&self.conn(), run_id, tool_call_id)
    }

    async fn open_items(&self, run_id: Option<&str>) -> Result<Vec<ItemRow>, StoreError> {
        items::open(&self.conn(), run_id)
    }

    async fn revisions(&self, run_id: Option<&str>) -> Result<Vec<RevisionRow>, StoreError> {
        revisions::of_run(&self.conn(), run_id)
    }

    async fn revision_list(&self, listing: &Listing<'_>) -> Result<Vec<RevisionRow>, StoreError> {
        revisions::list(&self.conn(), listing)
    }

    async fn revision(&self, id: i64) -> Result<RevisionRow, StoreError> {
        revisions::one(&self.conn(), id)
    }

    async fn search_revisions(
        &self,
        run_id: Option<&str>,
        words: &[String],
    ) -> Result<Vec<RevisionRow>, StoreError> {
        revisions::search(&self.conn(), run_id, words)
    }

    async fn revisions_by_sha(&self, prefix: &str) -> Result<Vec<RevisionRow>, StoreError> {
        revisions::by_sha(&self.conn(), prefix)
    }

    async fn add_comment(&self, comment: &NewComment<'_>) -> Result<CommentRow, StoreError> {
        self.write("add comment", |tx| comments::insert(tx, comment))
    }

    async fn comments(&self, run_id: &str) -> Result<Vec<CommentRow>, StoreError> {
        comments::of_run(&self.conn(), run_id)
    }

    async fn set_comment_resolved(
        &self,
        id: i64,
        resolved: bool,
        by: &Actor,
        at: Millis,
    ) -> Result<CommentRow, StoreError> {
        self.write("resolve comment", |tx| {
            comments::set_resolved(tx, id, resolved, by, at)
        })
    }

    async fn edit_plan(&self, edit: &NewEdit<'_>) -> Result<RevisionRow, StoreError> {
        self.write("edit plan", |tx| revisions::edit(tx, edit))
    }

    async fn events(&self, run_id: &str) -> Result<Vec<EventRow>, StoreError> {
        events::of_run(&self.conn(), run_id)
    }

    async fn snapshot_count(&self, run_id: &str) -> Result<i64, StoreError> {
        snapshots::count(&self.conn(), run_id)
    }

    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        settings::get(&self.conn(), key)
    }

    async fn set_setting(
        &self,
        key: &str,
        value: Option<&str>,
        at: Millis,
    ) -> Result<(), StoreError> {
        self.write("save a setting", |tx| settings::set(tx, key, value, at))
    }

    fn changes(&self) -> BoxStream<'static, ()> {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        let path = self.path.clone();
        let spawned = std::thread::Builder::new()
            .name("store-changes".into())
            .spawn(move || {
                // Its own connection: SQLite's data_version moves on every commit made by any
                // other connection, this process's included.
                let conn = match connect(&path) {
                    Ok(conn) => conn,
                    Err(err) => {
                        eprintln!("plandesk: cannot watch the store for changes: {err}");
                        return;
                    }
                };
                let mut seen: Option<i64> = None;
                loop {
                    let version = conn
                        .query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0))
                        .ok();
                    if version.is_some() && version != seen {
                        seen = version;
                        if tx.unbounded_send(()).is_err() {
                            return;
                        }
                    }
                    if tx.is_closed() {
                        return;
                    }
                    std::thread::sleep(CHANGE_POLL);
                }
            });
        if let Err(err) = spawned {
            eprintln!("plandesk: cannot watch the store for changes: {err}");
        }
        Box::pin(rx)
    }

    async fn create_token(&self, token: &NewToken<'_>) -> Result<TokenRow, StoreError> {
        self.write("create a token", |tx| tokens::create(tx, token))
    }

    async fn tokens(&self) -> Result<Vec<TokenRow>, StoreError> {
        tokens::all(&self.conn())
    }

    async fn revoke_token(
        &self,
        name: &str,
        by: &Actor,
        at: Millis,
    ) -> Result<TokenRow, StoreError> {
        self.write("revoke a token", |tx| tokens::revoke(tx, name, by, at))
    }

    async fn active_token(&self, sha256: &str) -> Result<Option<TokenRow>, StoreError> {
        tokens::active(&self.conn(), sha256)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a panic is the failure report

    use super::*;

    /// `PRAGMA synchronous` as the store's connection has it (1 NORMAL, 2 FULL).
    fn synchronous(conn: &Connection) -> i64 {
        conn.query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap()
    }

    /// ~500 KB written by `write` (or `write_lease`, when `lease`).
    fn blob(store: &SqliteStore, lease: bool) {
        let work = |tx: &rusqlite::Transaction<'_>| {
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS scratch(x);
                 INSERT INTO scratch VALUES (randomblob(500000));",
            )
            .map_err(query("test"))
        };
        if lease {
            store.write_lease("test", work).unwrap();
        } else {
            store.write("test", work).unwrap();
        }
    }

    /// Waits up to 10 s for the store's checkpoints to settle with `whole` of them done (none
    /// due); how many were done then.
    fn checkpoints_settle(store: &SqliteStore, whole: u64) -> u64 {
        let until = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let (done, due) = store.checkpointer.settled();
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
            store.checkpointer.settled(),
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
        for listing in &pages {
            let plan = revisions::listing_plan(&store.conn(), listing).unwrap();
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

    /// A lease is written without waiting for the disk; every other write, before and after
    /// it, waits (FULL), also after a lease write that failed.
    #[test]
    fn only_a_lease_is_written_without_waiting_for_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path()).unwrap();
        let during = |store: &SqliteStore| store.write("a durable write", |tx| Ok(synchronous(tx)));
        assert_eq!(during(&store).unwrap(), 2);
        let lease = store
            .write_lease("a lease", |tx| Ok(synchronous(tx)))
            .unwrap();
        assert_eq!(lease, 1, "a lease: NORMAL");
        assert_eq!(during(&store).unwrap(), 2, "after a lease: FULL again");
        let failed = store.write_lease("a lease that fails", |_| -> Result<(), _> {
            Err(StoreError::Query {
                context: "a lease that fails",
                message: "refused".into(),
            })
        });
        assert!(failed.is_err());
        assert_eq!(
            during(&store).unwrap(),
            2,
            "after a failed lease: FULL again"
        );
        assert_eq!(synchronous(&store.conn()), 2);
        // A lease write that panics midway leaves the connection NORMAL: the next durable
        // write waits for the disk all the same.
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            store.write_lease("a lease that panics", |_| -> Result<(), StoreError> {
                panic!("midway")
            })
        }));
        assert!(panicked.is_err());
        assert_eq!(synchronous(&store.conn()), 1, "left as the panic left it");
        assert_eq!(
            during(&store).unwrap(),
            2,
            "after a panicked lease: FULL again"
        );
    }
}
