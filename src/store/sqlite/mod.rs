//! The embedded store: one SQLite file (WAL, synchronous=FULL, but for a lease or a derived
//! commit: see [`Write`]) shared by every process using the same data directory. Its behaviours
//! are the store's own (`store::db`); this is how they reach the file: a few connections, each
//! store call run off the async workers, one IMMEDIATE transaction per write. What every store
//! must do is tested on this one and on PostgreSQL alike: tests/engine/conformance/.

mod checkpoint;
mod migrations;
mod wake;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::BoxStream;
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{CachedStatement, Connection, ErrorCode};

use super::db::{Backend, SqlStore, Write};
use super::sql::{self, unreadable, Arg, Args, Cell, Conn, Dialect, Each};
use super::*;

/// Connections kept open for the next call (more are opened while calls overlap).
const IDLE: usize = 4;
/// Reads made at once by this process (each takes a thread while it runs); more wait their turn.
const READERS: usize = 4;

/// The store on one SQLite file.
pub type SqliteStore = SqlStore<Sqlite>;

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
            backend: Sqlite {
                checkpointer: checkpoint::Checkpointer::start(&path),
                bell: wake::Bell::new(&path),
                changes: wake::Changes::new(&path),
                writers: tokio::sync::Semaphore::new(1),
                readers: tokio::sync::Semaphore::new(READERS),
                shared: Arc::new(Shared {
                    idle: Mutex::new(vec![Pooled {
                        conn,
                        relaxed: false,
                    }]),
                    path,
                }),
            },
            anchor: Some(crate::audit::AuditAnchor::local(dir)),
            personal: None,
            tails: Default::default(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.backend.shared.path
    }
}

#[derive(Debug)]
pub struct Sqlite {
    /// First, so that it stops before the store's connections close (the last connection to
    /// close checkpoints what is left).
    checkpointer: checkpoint::Checkpointer,
    shared: Arc<Shared>,
    /// Rung after every commit: every process following the store hears of it at once.
    bell: wake::Bell,
    changes: wake::Changes,
    /// This process's writes, one at a time, and its reads, a few at a time: a call waits for
    /// its turn without a thread (a burst of thousands holds no thread each).
    writers: tokio::sync::Semaphore,
    readers: tokio::sync::Semaphore,
}

#[derive(Debug)]
struct Shared {
    path: PathBuf,
    idle: Mutex<Vec<Pooled>>,
}

#[derive(Debug)]
struct Pooled {
    conn: Connection,
    /// Its commits do not wait for the disk (`synchronous = NORMAL`, set by a lease write): a
    /// durable write sets it back first.
    relaxed: bool,
}

impl Shared {
    /// An idle connection, else a new one.
    fn take(&self) -> Result<Pooled, StoreError> {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match idle {
            Some(pooled) => Ok(pooled),
            None => Ok(Pooled {
                conn: connect(&self.path)?,
                relaxed: false,
            }),
        }
    }

    /// A failure caused by the file itself names the file.
    fn failed(&self, context: &'static str, err: rusqlite::Error) -> StoreError {
        file_error(&self.path, err).unwrap_or_else(|err| StoreError::Query {
            context,
            message: err.to_string(),
        })
    }
}

/// One of the store's connections, given back when dropped (rolled back first if a write
/// was left unfinished, as when its call was cancelled).
#[derive(Debug)]
pub struct SqliteConn {
    pooled: Option<Pooled>,
    shared: Arc<Shared>,
    in_write: bool,
}

impl SqliteConn {
    /// The connection (there until dropped).
    fn conn(&self, context: &'static str) -> Result<&Connection, StoreError> {
        match &self.pooled {
            Some(pooled) => Ok(&pooled.conn),
            None => Err(StoreError::Query {
                context,
                message: "the connection is closed".into(),
            }),
        }
    }

    /// Begins or ends the transaction (`BEGIN IMMEDIATE`, `COMMIT`), a statement prepared once
    /// per connection, not parsed again at each write (some 2,000 instructions a write).
    fn transaction(&mut self, context: &'static str, sql: &str) -> Result<(), StoreError> {
        let failed = |err| self.shared.failed(context, err);
        let mut stmt = self.conn(context)?.prepare_cached(sql).map_err(failed)?;
        stmt.execute([]).map(drop).map_err(failed)
    }

    /// Sets whether the connection's commits wait for the disk. Marked first: whatever becomes
    /// of a lease write (an error, a panic), no durable write commits before the connection
    /// waits for the disk again.
    fn wait_for_disk(&mut self, wait: bool, context: &'static str) -> Result<(), StoreError> {
        let Some(pooled) = self.pooled.as_mut() else {
            return Ok(());
        };
        if pooled.relaxed != wait {
            return Ok(());
        }
        pooled.relaxed = true;
        let level = if wait { "FULL" } else { "NORMAL" };
        pooled
            .conn
            .pragma_update(None, "synchronous", level)
            .map_err(|err| self.shared.failed(context, err))?;
        pooled.relaxed = !wait;
        Ok(())
    }
}

impl Drop for SqliteConn {
    fn drop(&mut self) {
        let Some(pooled) = self.pooled.take() else {
            return;
        };
        if self.in_write && pooled.conn.execute_batch("ROLLBACK").is_err() {
            return; // closed, not reused
        }
        let mut idle = self.shared.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < IDLE {
            idle.push(pooled);
        }
    }
}

/// A value bound to a placeholder, as SQLite takes it.
struct Bind<'a>(Arg<'a>);

impl rusqlite::ToSql for Bind<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self.0 {
            Arg::Null => ToSqlOutput::Owned(Value::Null),
            Arg::Int(n) => ToSqlOutput::Owned(Value::Integer(n)),
            Arg::Bool(b) => ToSqlOutput::Owned(Value::Integer(i64::from(b))),
            Arg::Text(text) => ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes())),
            Arg::Bytes(bytes) => ToSqlOutput::Borrowed(ValueRef::Blob(bytes)),
        })
    }
}

/// A statement from the connection's cache (the SQL's `$n` read as SQLite's `?n`).
fn statement<'c>(conn: &'c Connection, sql: &str) -> rusqlite::Result<CachedStatement<'c>> {
    conn.prepare_cached(&sql.replace('$', "?"))
}

fn binds<'a>(args: Args<'a>) -> impl Iterator<Item = Bind<'a>> {
    args.iter().map(|a| Bind(a.arg()))
}

impl sql::Row for rusqlite::Row<'_> {
    fn cell(&self, i: usize) -> Result<Cell<'_>, StoreError> {
        let value = self.get_ref(i).map_err(|err| StoreError::Query {
            context: "read a row",
            message: err.to_string(),
        })?;
        Ok(match value {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(n) => Cell::Int(n),
            ValueRef::Text(text) => {
                Cell::Text(std::str::from_utf8(text).map_err(|_| unreadable(i, "text"))?)
            }
            ValueRef::Blob(bytes) => Cell::Bytes(bytes),
            ValueRef::Real(_) => return Err(unreadable(i, "a whole number")),
        })
    }
}

impl Conn for SqliteConn {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    async fn query(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
        each: Each<'_>,
    ) -> Result<(), StoreError> {
        let failed = |err| self.shared.failed(context, err);
        let mut stmt = statement(self.conn(context)?, sql).map_err(failed)?;
        let mut rows = stmt
            .query(rusqlite::params_from_iter(binds(args)))
            .map_err(failed)?;
        while let Some(row) = rows.next().map_err(failed)? {
            each(row)?;
        }
        Ok(())
    }

    async fn execute(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
    ) -> Result<u64, StoreError> {
        let failed = |err| self.shared.failed(context, err);
        let mut stmt = statement(self.conn(context)?, sql).map_err(failed)?;
        let changed = stmt.execute(rusqlite::params_from_iter(binds(args)));
        changed.map(|n| n as u64).map_err(failed)
    }
}

impl Sqlite {
    fn conn(&self) -> Result<SqliteConn, StoreError> {
        Ok(SqliteConn {
            pooled: Some(self.shared.take()?),
            shared: self.shared.clone(),
            in_write: false,
        })
    }
}

impl Backend for Sqlite {
    type Conn = SqliteConn;

    fn location(&self) -> String {
        self.shared.path.display().to_string()
    }

    /// A store call's statements never wait on anything but SQLite, so the whole call runs
    /// at once, in one go off the async workers.
    async fn run<T: Send>(&self, work: impl Future<Output = T> + Send) -> T {
        crate::blocking::in_place(|| futures::executor::block_on(work))
    }

    async fn read(&self, _context: &'static str) -> Result<SqliteConn, StoreError> {
        self.conn()
    }

    /// An IMMEDIATE transaction: the write lock is taken at once, so two processes never
    /// interleave a read and a write. A lease (a claim, a take-over, a renewal, a release, a
    /// waiter's renewal) or a derived commit is committed without waiting for the disk
    /// (`synchronous = NORMAL`: in WAL mode still atomic, and on the disk in order with the
    /// next durable commit), which takes an fsync off the way between a click and the run
    /// going on, and between a suspension and its end. A process killed, not the machine,
    /// loses nothing either way.
    async fn begin(&self, context: &'static str, write: Write) -> Result<SqliteConn, StoreError> {
        let mut conn = self.conn()?;
        conn.wait_for_disk(write == Write::Durable, context)?;
        conn.transaction(context, "BEGIN IMMEDIATE")?;
        conn.in_write = true;
        Ok(conn)
    }

    async fn commit(
        &self,
        mut conn: SqliteConn,
        context: &'static str,
        write: Write,
    ) -> Result<(), StoreError> {
        conn.transaction(context, "COMMIT")?;
        conn.in_write = false;
        // A lease calls for no checkpoint (which would wait for the disk, every 10 s while a
        // hook waits).
        if matches!(write, Write::Durable | Write::Derived) {
            self.checkpointer.written();
        }
        self.bell.ring();
        Ok(())
    }

    async fn rollback(&self, conn: SqliteConn) {
        drop(conn); // rolls back
    }

    fn changes(&self) -> BoxStream<'static, ()> {
        self.changes.follow()
    }

    async fn turn(&self, write: bool) -> Option<tokio::sync::SemaphorePermit<'_>> {
        let queue = if write { &self.writers } else { &self.readers };
        // Never closed.
        queue.acquire().await.ok()
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

#[cfg(test)]
mod tests;
