//! The team store: one PostgreSQL database shared by every reviewer's app, every CLI and every
//! hook, on any machine. The same tables and the same behaviours as the SQLite store (written
//! once, `store::db`); this is how they reach the server: a pool of connections, each write one
//! transaction that takes the store's write lock first (writes are serialised, as in SQLite, so
//! a decision's check and its record can never interleave with another's) and announces itself
//! with `NOTIFY` on commit, which every process's [`Store::changes`] hears.

mod pipeline;
mod schema;
mod url;

use std::future::Future;
use std::str::FromStr;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use bytes::BytesMut;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use futures::stream::BoxStream;
use futures::StreamExt;
use tokio::sync::broadcast;
use tokio_postgres::types::{IsNull, ToSql, Type};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::db::{announce, Backend, SqlStore, Write};
use super::sql::{self, unreadable, Arg, Args, Cell, Conn, Dialect, Each};
use super::*;
use pipeline::{after, Later};
pub(crate) use url::check_saved_url;
use url::{find_password, redacted, tls};
pub use url::{is_postgres_url, redacted_url};

/// The advisory lock every write transaction holds: one writer at a time, as in SQLite.
pub(super) const WRITE_LOCK: i64 = 0x706c_616e_6465_736b; // "plandesk"
/// The channel commits are announced on.
const CHANNEL: &str = "plandesk_changes";
/// Connections per process: a reviewer's app or a `serve` with many agents waiting.
const POOL_SIZE: usize = 16;
/// How long a query waits for a free connection, for the write lock, or for a connection to
/// be made, before it fails with a clear error instead of hanging.
const WAIT: Duration = Duration::from_secs(30);
/// How long the change listener waits before connecting again after losing its connection.
const RECONNECT: Duration = Duration::from_secs(1);
/// In a process that follows the store's changes, a pooled connection unused this long is
/// closed: the pool hands out the one used last, so those left idle are those not needed (a
/// hook waiting for a decision keeps one besides its listening connection).
const IDLE_CLOSE: Duration = Duration::from_secs(30);

/// A database error with what the server said (the driver's own text is only its kind).
pub(super) fn describe(err: &tokio_postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => {
            let mut text = db.message().to_owned();
            if let Some(detail) = db.detail() {
                text.push_str(&format!(" ({detail})"));
            }
            text
        }
        None => match std::error::Error::source(err) {
            Some(cause) => format!("{err}: {cause}"),
            None => err.to_string(),
        },
    }
}

/// Maps a failed query to a store error that says which query failed.
fn query(context: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError {
    move |err| StoreError::Query {
        context,
        message: describe(&err),
    }
}

/// The store on a PostgreSQL database.
pub type PostgresStore = SqlStore<Postgres>;

pub struct Postgres {
    pool: Pool,
    config: tokio_postgres::Config,
    /// The TLS set-up the pool's connections use; the change listener's use it too.
    tls: MakeRustlsConnect,
    /// The URL without its password, for messages.
    location: String,
    /// Commits announced by the server, to every [`Store::changes`] stream of this store.
    changed: Arc<broadcast::Sender<()>>,
    listening: OnceLock<()>,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database `url` names, creating or upgrading its tables; refuses a
    /// database written by a newer Plandesk, and says plainly when it cannot be reached.
    /// `personal` names whose settings this store reads and writes.
    pub async fn open(url: &str, personal: &str) -> Result<Self, StoreError> {
        let mut config = tokio_postgres::Config::from_str(url).map_err(|e| StoreError::Open {
            // The URL may hold a password: never repeat it.
            path: "the PostgreSQL URL".into(),
            message: describe(&e),
        })?;
        let location = redacted(&config);
        if config.get_password().is_none() {
            if let Some(password) = find_password(&config) {
                config.password(password);
            }
        }
        // A transaction left open by a vanished client must not hold the write lock forever,
        // and no statement waits for the lock without end.
        let mut options = config.get_options().unwrap_or_default().to_owned();
        options.push_str(&format!(
            " -c lock_timeout={ms} -c idle_in_transaction_session_timeout={ms}",
            ms = WAIT.as_millis()
        ));
        config.options(options.trim());
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(WAIT);
        }
        if config.get_application_name().is_none() {
            config.application_name("plandesk");
        }
        let open_error = |message: String| StoreError::Open {
            path: location.clone().into(),
            message,
        };
        let tls = tls().map_err(open_error)?;
        let manager = Manager::from_config(
            config.clone(),
            tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .queue_mode(deadpool_postgres::QueueMode::Lifo)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(WAIT))
            .create_timeout(Some(WAIT))
            .recycle_timeout(Some(WAIT))
            .build()
            .map_err(|e| open_error(e.to_string()))?;
        let mut client = pool.get().await.map_err(|e| open_error(pool_error(&e)))?;
        schema::migrate(&mut client, &location).await?;
        let (changed, _) = broadcast::channel(16);
        Ok(Self {
            backend: Postgres {
                pool,
                config,
                tls,
                location,
                changed: Arc::new(changed),
                listening: OnceLock::new(),
            },
            anchor: None,
            personal: Some(personal.to_owned()),
            tails: Default::default(),
        })
    }

    /// The same store, recording the audit trail's head in `data_dir` (see [`AuditAnchor`]):
    /// what this machine appends, and what it checks, moves that record forward.
    pub fn with_audit_anchor(self, data_dir: &std::path::Path) -> Self {
        let anchor = crate::audit::AuditAnchor::team(data_dir, &self.backend.location);
        Self {
            anchor: Some(anchor),
            ..self
        }
    }
}

impl Postgres {
    /// A connection from the pool.
    async fn client(&self, context: &'static str) -> Result<PgConn, StoreError> {
        let client = self.pool.get().await.map_err(|e| StoreError::Query {
            context,
            message: format!("cannot reach {}: {}", self.location, pool_error(&e)),
        })?;
        Ok(PgConn {
            client: Some(client),
            in_write: false,
            later: Vec::new(),
        })
    }

    /// Starts (once) the thread that listens for commits and tells this store's streams.
    fn listen(&self) {
        self.listening.get_or_init(|| {
            let config = self.config.clone();
            let tls = self.tls.clone();
            let changed = Arc::downgrade(&self.changed);
            let location = self.location.clone();
            let pool = self.pool.clone();
            let spawned = std::thread::Builder::new()
                .name("store-changes".into())
                .spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build();
                    match runtime {
                        Ok(runtime) => {
                            runtime.block_on(listen(config, tls, changed, location, pool))
                        }
                        Err(err) => {
                            eprintln!("plandesk: cannot watch the store for changes: {err}")
                        }
                    }
                });
            if let Err(err) = spawned {
                eprintln!("plandesk: cannot watch the store for changes: {err}");
            }
        });
    }
}

/// A pooled connection. One dropped in the middle of a write (its call cancelled, its commit
/// failed) is closed, not given back, and the server rolls its transaction back.
pub struct PgConn {
    client: Option<deadpool_postgres::Client>,
    in_write: bool,
    /// Statements held back to go with the next one (see [`Conn::later`]).
    later: Vec<Later>,
}

impl PgConn {
    /// The connection (there until dropped).
    fn client(&self, context: &'static str) -> Result<&deadpool_postgres::Client, StoreError> {
        self.client.as_ref().ok_or(StoreError::Query {
            context,
            message: "the connection is closed".into(),
        })
    }

    async fn batch(&mut self, context: &'static str, sql: &str) -> Result<(), StoreError> {
        let later = std::mem::take(&mut self.later);
        let client = self.client(context)?;
        after(client, &later, context, client.batch_execute(sql)).await
    }

    /// A statement, through the connection's statement cache.
    async fn prepare(
        &self,
        context: &'static str,
        sql: &str,
    ) -> Result<(&deadpool_postgres::Client, tokio_postgres::Statement), StoreError> {
        let client = self.client(context)?;
        let statement = client.prepare_cached(sql).await.map_err(query(context))?;
        Ok((client, statement))
    }
}

/// The values of `args`, as the server takes them.
fn binds<'a>(args: Args<'a>) -> Vec<Bind<'a>> {
    args.iter().map(|a| Bind(a.arg())).collect()
}

/// `binds` as the driver's parameters.
fn params<'a>(binds: &'a [Bind<'_>]) -> Vec<&'a (dyn ToSql + Sync)> {
    binds.iter().map(|b| b as &(dyn ToSql + Sync)).collect()
}

impl std::fmt::Debug for PgConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgConn")
            .field("in_write", &self.in_write)
            .finish_non_exhaustive()
    }
}

impl Drop for PgConn {
    fn drop(&mut self) {
        if self.in_write {
            if let Some(client) = self.client.take() {
                drop(deadpool_postgres::Object::take(client));
            }
        }
    }
}

/// A value bound to a placeholder, as the server's type for it takes it (a value of another
/// kind is refused, never reinterpreted).
#[derive(Debug)]
struct Bind<'a>(Arg<'a>);

impl ToSql for Bind<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match (self.0, ty) {
            (Arg::Null, _) => Ok(IsNull::Yes),
            (Arg::Int(n), &Type::INT8) => n.to_sql(ty, out),
            (Arg::Int(n), &Type::INT4) => i32::try_from(n)?.to_sql(ty, out),
            (Arg::Bool(b), &Type::BOOL) => b.to_sql(ty, out),
            (Arg::Text(text), &Type::TEXT | &Type::VARCHAR | &Type::JSON) => text.to_sql(ty, out),
            (Arg::Bytes(bytes), &Type::BYTEA) => bytes.to_sql(ty, out),
            (arg, ty) => Err(format!("{arg:?} cannot be bound as {ty}").into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

impl sql::Row for tokio_postgres::Row {
    /// A column, by its type.
    fn cell(&self, i: usize) -> Result<Cell<'_>, StoreError> {
        let read = query("read a row");
        let column = self
            .columns()
            .get(i)
            .ok_or_else(|| unreadable(i, "there"))?;
        Ok(match *column.type_() {
            Type::INT8 => {
                let n: Option<i64> = self.try_get(i).map_err(read)?;
                n.map_or(Cell::Null, Cell::Int)
            }
            Type::INT4 => {
                let n: Option<i32> = self.try_get(i).map_err(read)?;
                n.map_or(Cell::Null, |n| Cell::Int(n.into()))
            }
            Type::BOOL => {
                let b: Option<bool> = self.try_get(i).map_err(read)?;
                b.map_or(Cell::Null, Cell::Bool)
            }
            Type::BYTEA => {
                let bytes: Option<&[u8]> = self.try_get(i).map_err(read)?;
                bytes.map_or(Cell::Null, Cell::Bytes)
            }
            _ => {
                let text: Option<&str> = self.try_get(i).map_err(read)?;
                text.map_or(Cell::Null, Cell::Text)
            }
        })
    }
}

impl Conn for PgConn {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    async fn query(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
        each: Each<'_>,
    ) -> Result<(), StoreError> {
        let later = std::mem::take(&mut self.later);
        let (client, statement) = self.prepare(context, sql).await?;
        let binds = binds(args);
        let params = params(&binds);
        let rows = after(client, &later, context, client.query(&statement, &params)).await?;
        for row in &rows {
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
        let later = std::mem::take(&mut self.later);
        let (client, statement) = self.prepare(context, sql).await?;
        let binds = binds(args);
        let params = params(&binds);
        after(client, &later, context, client.execute(&statement, &params)).await
    }

    /// Held back until the next statement, or the commit; outside a write (where no commit
    /// would send it), at once.
    async fn later(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
    ) -> Result<(), StoreError> {
        if !self.in_write {
            return self.execute(context, sql, args).await.map(drop);
        }
        self.later.push(Later::new(context, sql, args));
        Ok(())
    }
}

impl Backend for Postgres {
    type Conn = PgConn;

    fn location(&self) -> String {
        self.location.clone()
    }

    /// Every call awaits the server: nothing blocks.
    fn run<T: Send>(&self, work: impl Future<Output = T> + Send) -> impl Future<Output = T> + Send {
        work
    }

    async fn read(&self, context: &'static str) -> Result<PgConn, StoreError> {
        self.client(context).await
    }

    /// One round trip: the transaction, the write lock and the announcement of the change
    /// (sent on commit). A release and a derived commit are committed without waiting for the
    /// server's disk (`synchronous_commit` off for that transaction alone): lost in a crash of
    /// the server, a release leaves a lease that expires, and a derived commit is made again
    /// when the run, interrupted after its decisions, is continued. Claims, take-overs and
    /// renewals stay durable here: unlike the embedded store's, a holder outlives a crash of
    /// its server, and a claim or renewal lost there would let a second process drive the run
    /// beside it.
    async fn begin(&self, context: &'static str, write: Write) -> Result<PgConn, StoreError> {
        let mut conn = self.client(context).await?;
        let relaxed = match write {
            Write::Release | Write::Derived => "SET LOCAL synchronous_commit TO OFF;",
            Write::Durable | Write::Lease => "",
        };
        conn.in_write = true;
        conn.batch(
            context,
            &format!(
                "BEGIN; {relaxed} SELECT pg_advisory_xact_lock({WRITE_LOCK}); NOTIFY {CHANNEL}"
            ),
        )
        .await?;
        Ok(conn)
    }

    async fn commit(
        &self,
        mut conn: PgConn,
        context: &'static str,
        _write: Write,
    ) -> Result<(), StoreError> {
        conn.batch(context, "COMMIT").await?;
        conn.in_write = false;
        Ok(())
    }

    async fn rollback(&self, mut conn: PgConn) {
        conn.later.clear();
        if conn.batch("roll back", "ROLLBACK").await.is_ok() {
            conn.in_write = false;
        }
    }

    fn changes(&self) -> BoxStream<'static, ()> {
        self.listen();
        super::db::changes_of(&self.changed)
    }
}

fn pool_error(err: &deadpool_postgres::PoolError) -> String {
    match err {
        deadpool_postgres::PoolError::Backend(e) => describe(e),
        other => other.to_string(),
    }
}

/// Listens for commits until the store is gone, connecting again whenever the connection is
/// lost (and then telling the streams, since commits may have been missed meanwhile); closes
/// the pool's connections left unused.
async fn listen(
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    changed: Weak<broadcast::Sender<()>>,
    location: String,
    pool: Pool,
) {
    let mut reported = false;
    loop {
        match config.connect(tls.clone()).await {
            Ok((client, mut connection)) => {
                reported = false;
                let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
                let listen = format!("LISTEN {CHANNEL}");
                let subscribe = client.batch_execute(&listen);
                tokio::pin!(subscribe);
                let mut subscribed = false;
                let mut tick = tokio::time::interval(RECONNECT);
                loop {
                    tokio::select! {
                        done = &mut subscribe, if !subscribed => {
                            subscribed = true;
                            if done.is_err() { break; }
                            if !announce(&changed) { return; }
                        }
                        message = messages.next() => match message {
                            Some(Ok(tokio_postgres::AsyncMessage::Notification(_))) => {
                                if !announce(&changed) { return; }
                            }
                            Some(Ok(_)) => {}
                            Some(Err(_)) | None => break,
                        },
                        _ = tick.tick() => {
                            if changed.strong_count() == 0 { return; }
                            pool.retain(|_, used| used.last_used() < IDLE_CLOSE);
                        }
                    }
                }
            }
            Err(err) => {
                if !reported {
                    eprintln!(
                        "plandesk: lost the connection to {location} that shows changes ({}); \
                         trying again",
                        describe(&err)
                    );
                    reported = true;
                }
            }
        }
        if changed.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(RECONNECT).await;
    }
}

#[cfg(test)]
mod tests;
