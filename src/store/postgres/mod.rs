//! The team store: one PostgreSQL database shared by every reviewer's app, every CLI and every
//! hook, on any machine. The same tables and the same behaviour as the SQLite store: each write
//! is one transaction that takes the store's write lock first (writes are serialised, as in
//! SQLite, so a decision's check and its record can never interleave with another's), and
//! announces itself with `NOTIFY` on commit, which every process's [`Store::changes`] hears.

mod items;
mod log;
mod revisions;
mod runs;
mod schema;
mod tokens;

use std::str::FromStr;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use futures::stream::BoxStream;
use futures::StreamExt;
use tokio::sync::broadcast;
use tokio_postgres::types::{FromSql, ToSql};
use tokio_postgres::Row;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::*;

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

/// TLS for connections the URL's `sslmode` asks for (`prefer` unless it says otherwise; use
/// `sslmode=require` for a server across a network): server certificates are checked against
/// the Mozilla roots.
fn tls() -> Result<MakeRustlsConnect, String> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("cannot set up TLS: {e}"))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// The URL schemes that name a PostgreSQL store.
pub fn is_postgres_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// `url` as a person may see it (no password); a URL that does not parse is not repeated.
pub fn redacted_url(url: &str) -> String {
    match tokio_postgres::Config::from_str(url) {
        Ok(config) => redacted(&config),
        Err(_) => "an unreadable PostgreSQL URL".into(),
    }
}

/// Checks a URL that is about to be saved: a PostgreSQL URL that parses and holds no password.
pub(super) fn check_saved_url(url: &str) -> Result<(), StoreError> {
    let refused = |message: &str| StoreError::Open {
        path: redacted_url(url).into(),
        message: message.into(),
    };
    if !is_postgres_url(url) {
        return Err(refused(
            "a team store is a PostgreSQL URL: postgres://USER@HOST/DATABASE",
        ));
    }
    let config = tokio_postgres::Config::from_str(url).map_err(|e| refused(&describe(&e)))?;
    if config.get_password().is_some() {
        return Err(refused(
            "the URL holds a password, and Plandesk keeps no passwords in its files: leave it out \
             and put it in PostgreSQL's password file (~/.pgpass) or PGPASSWORD",
        ));
    }
    Ok(())
}

/// The password for `config` when its URL has none: `PGPASSWORD`, else the first matching line
/// of PostgreSQL's password file (`PGPASSFILE`, else `~/.pgpass`), which, like libpq, is only
/// read when nobody else may read it.
fn find_password(config: &tokio_postgres::Config) -> Option<String> {
    if let Some(password) = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()) {
        return Some(password);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".pgpass")))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).ok()?.permissions().mode();
        if mode & 0o077 != 0 {
            eprintln!(
                "plandesk: {} is ignored: others may read it (chmod 600 it)",
                file.display()
            );
            return None;
        }
    }
    let text = std::fs::read_to_string(&file).ok()?;
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(name)) => name.clone(),
        #[cfg(unix)]
        Some(tokio_postgres::config::Host::Unix(_)) | None => "localhost".into(),
        #[cfg(not(unix))]
        None => "localhost".into(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config.get_user().unwrap_or_default();
    let db = config.get_dbname().unwrap_or(user);
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .find_map(|line| {
            let fields = pgpass_fields(line);
            let [h, p, d, u, password] = fields.as_slice() else {
                return None;
            };
            let matches = |field: &str, value: &str| field == "*" || field == value;
            (matches(h, &host) && matches(p, &port) && matches(d, db) && matches(u, user))
                .then(|| password.clone())
        })
}

/// A password file line's five fields (`:` separates them; `\:` and `\\` escape).
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields
                .last_mut()
                .into_iter()
                .for_each(|f| f.extend(chars.next())),
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().into_iter().for_each(|f| f.push(c)),
        }
    }
    fields
}

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
pub(super) fn query(context: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError {
    move |err| StoreError::Query {
        context,
        message: describe(&err),
    }
}

/// Column `i` of a row.
pub(super) fn col<'a, T: FromSql<'a>>(r: &'a Row, i: usize) -> Result<T, StoreError> {
    r.try_get(i).map_err(query("read a row"))
}

/// Column `i`, a stored vocabulary word, refused if this build does not know it.
pub(super) fn word<T>(parse: fn(&str) -> Option<T>, r: &Row, i: usize) -> Result<T, StoreError> {
    let text: String = col(r, i)?;
    parse(&text).ok_or_else(|| StoreError::Query {
        context: "read a row",
        message: format!("unknown value `{text}` in column {i}"),
    })
}

/// Column `i`, JSON kept as text (a value altered into invalid JSON reads as its text).
pub(super) fn json(r: &Row, i: usize) -> Result<serde_json::Value, StoreError> {
    let text: String = col(r, i)?;
    Ok(serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)))
}

pub(super) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// Runs a query through the connection's statement cache.
pub(super) async fn rows(
    c: &impl GenericClient,
    context: &'static str,
    sql: &str,
    params: Params<'_>,
) -> Result<Vec<Row>, StoreError> {
    let statement = c.prepare_cached(sql).await.map_err(query(context))?;
    c.query(&statement, params).await.map_err(query(context))
}

/// A query's one row, if any.
pub(super) async fn row(
    c: &impl GenericClient,
    context: &'static str,
    sql: &str,
    params: Params<'_>,
) -> Result<Option<Row>, StoreError> {
    Ok(rows(c, context, sql, params).await?.into_iter().next())
}

/// Runs a statement; the number of rows it changed.
pub(super) async fn execute(
    c: &impl GenericClient,
    context: &'static str,
    sql: &str,
    params: Params<'_>,
) -> Result<u64, StoreError> {
    let statement = c.prepare_cached(sql).await.map_err(query(context))?;
    c.execute(&statement, params).await.map_err(query(context))
}

pub(super) type Tx<'a> = deadpool_postgres::Transaction<'a>;

pub struct PostgresStore {
    pool: Pool,
    config: tokio_postgres::Config,
    /// The TLS set-up the pool's connections use; the change listener's use it too.
    tls: MakeRustlsConnect,
    /// The URL without its password, for messages.
    location: String,
    /// Prefixes this person's settings (see `StoreLocation::Postgres`).
    personal: String,
    /// Commits announced by the server, to every [`Store::changes`] stream of this store.
    changed: Arc<broadcast::Sender<()>>,
    listening: OnceLock<()>,
    /// This machine's record of the audit trail's head, if it keeps one.
    anchor: Option<AuditAnchor>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database `url` names, creating or upgrading its tables; refuses a
    /// database written by a newer Plandesk, and says plainly when it cannot be reached.
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
            pool,
            config,
            tls,
            location,
            personal: personal.to_owned(),
            changed: Arc::new(changed),
            listening: OnceLock::new(),
            anchor: None,
        })
    }

    /// The same store, recording the audit trail's head in `data_dir` (see [`AuditAnchor`]):
    /// what this machine appends, and what it checks, moves that record forward.
    pub fn with_audit_anchor(self, data_dir: &std::path::Path) -> Self {
        let anchor = AuditAnchor::team(data_dir, &self.location);
        Self {
            anchor: Some(anchor),
            ..self
        }
    }

    /// A setting's key in the shared table: this person's own.
    fn personal_key(&self, key: &str) -> String {
        format!("{}/{key}", self.personal)
    }

    /// A connection from the pool.
    async fn client(&self, context: &'static str) -> Result<deadpool_postgres::Client, StoreError> {
        self.pool.get().await.map_err(|e| StoreError::Query {
            context,
            message: format!("cannot reach {}: {}", self.location, pool_error(&e)),
        })
    }

    /// Runs `work` in one transaction holding the write lock, announcing the change on commit.
    async fn write<T>(
        &self,
        context: &'static str,
        work: impl AsyncFnOnce(&Tx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.transact(context, "", work).await
    }

    /// As [`Self::write`], for a run's release and a commit derived from durable decisions
    /// ([`Commit::derived`]): committed without waiting for the server's disk
    /// (`synchronous_commit` off for this transaction alone). Lost in a crash of the server, a
    /// release leaves a lease that expires, and a derived commit is made again when the run,
    /// interrupted after its decisions, is continued. Claims, take-overs and renewals stay
    /// durable here: unlike the embedded store's, a holder outlives a crash of its server, and
    /// a claim or renewal lost there would let a second process drive the run beside it.
    async fn write_relaxed<T>(
        &self,
        context: &'static str,
        work: impl AsyncFnOnce(&Tx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.transact(context, "SET LOCAL synchronous_commit TO OFF;", work)
            .await
    }

    /// `work` in one transaction holding the write lock, after `settings` (statements that
    /// set this transaction up), announcing the change on commit.
    async fn transact<T>(
        &self,
        context: &'static str,
        settings: &str,
        work: impl AsyncFnOnce(&Tx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut client = self.client(context).await?;
        let tx = client.transaction().await.map_err(query(context))?;
        tx.batch_execute(&format!(
            "{settings} SELECT pg_advisory_xact_lock({WRITE_LOCK}); NOTIFY {CHANNEL}"
        ))
        .await
        .map_err(query(context))?;
        let (value, appended) = super::anchor::appending_async(work(&tx)).await;
        let value = value?;
        // What the record of the trail's head moves to is read under the write lock, so that
        // no other appender comes between; it is written once the entries are committed.
        let head = match &self.anchor {
            Some(anchor) if appended => Some(log::since(&tx, anchor.first_needed()).await),
            _ => None,
        };
        tx.commit().await.map_err(query(context))?;
        match (&self.anchor, head) {
            (Some(anchor), Some(Ok(entries))) => anchor.advance_later(entries),
            (_, Some(Err(err))) => {
                eprintln!("plandesk: cannot record the audit trail's end: {err}")
            }
            _ => {}
        }
        Ok(value)
    }

    /// Starts (once) the thread that listens for commits and tells this store's streams.
    fn listen(&self) {
        self.listening.get_or_init(|| {
            let config = self.config.clone();
            let tls = self.tls.clone();
            let changed = Arc::downgrade(&self.changed);
            let location = self.location.clone();
            let spawned = std::thread::Builder::new()
                .name("store-changes".into())
                .spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build();
                    match runtime {
                        Ok(runtime) => runtime.block_on(listen(config, tls, changed, location)),
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

/// The URL a person may see: scheme, user, hosts and database, never the password.
fn redacted(config: &tokio_postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let name = match host {
                tokio_postgres::config::Host::Tcp(name) => name.clone(),
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(dir) => dir.display().to_string(),
            };
            match config.get_ports().get(i).or(config.get_ports().first()) {
                Some(port) => format!("{name}:{port}"),
                None => name,
            }
        })
        .collect();
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or_default();
    format!("postgres://{user}{}/{db}", hosts.join(","))
}

fn pool_error(err: &deadpool_postgres::PoolError) -> String {
    match err {
        deadpool_postgres::PoolError::Backend(e) => describe(e),
        other => other.to_string(),
    }
}

/// Listens for commits until the store is gone, connecting again whenever the connection is
/// lost (and then telling the streams, since commits may have been missed meanwhile).
async fn listen(
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    changed: Weak<broadcast::Sender<()>>,
    location: String,
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

/// Tells every stream that the store changed; `false` once the store is gone.
fn announce(changed: &Weak<broadcast::Sender<()>>) -> bool {
    match changed.upgrade() {
        Some(sender) => {
            // No stream listening right now is fine.
            let _ = sender.send(());
            true
        }
        None => false,
    }
}

#[async_trait]
impl Store for PostgresStore {
    fn location(&self) -> String {
        self.location.clone()
    }

    async fn create_run(&self, run: &NewRun<'_>, first: &Commit<'_>) -> Result<(), StoreError> {
        self.write("create run", async |tx| {
            runs::insert(tx, run, first.at).await?;
            runs::commit(tx, first).await
        })
        .await
    }

    async fn commit(&self, commit: &Commit<'_>) -> Result<(), StoreError> {
        let work = async |tx: &Tx<'_>| runs::commit(tx, commit).await;
        if commit.derived {
            self.write_relaxed("commit snapshot", work).await
        } else {
            self.write("commit snapshot", work).await
        }
    }

    async fn load(&self, run_id: &str) -> Result<StoredRun, StoreError> {
        runs::load(&self.client("load snapshot").await?, run_id).await
    }

    async fn snapshot_version(&self, run_id: &str) -> Result<i64, StoreError> {
        runs::snapshot_version(&self.client("snapshot version").await?, run_id).await
    }

    async fn claim(&self, run_id: &str, lease: &Lease<'_>) -> Result<ClaimOutcome, StoreError> {
        self.write("claim run", async |tx| runs::claim(tx, run_id, lease).await)
            .await
    }

    async fn take_over(
        &self,
        run_id: &str,
        holder: &str,
        lease: &Lease<'_>,
    ) -> Result<bool, StoreError> {
        self.write("take over run", async |tx| {
            runs::take_over(tx, run_id, holder, lease).await
        })
        .await
    }

    async fn renew(&self, run_id: &str, lease: &Lease<'_>) -> Result<bool, StoreError> {
        self.write("renew lease", async |tx| {
            runs::renew(tx, run_id, lease).await
        })
        .await
    }

    async fn release(&self, run_id: &str, holder: &str) -> Result<(), StoreError> {
        self.write_relaxed("release run", async |tx| {
            runs::release(tx, run_id, holder).await
        })
        .await
    }

    async fn run(&self, run_id: &str) -> Result<RunRow, StoreError> {
        runs::one(&self.client("load run").await?, run_id).await
    }

    async fn runs(&self) -> Result<Vec<RunRow>, StoreError> {
        runs::all(&self.client("list runs").await?).await
    }

    async fn latest_run(&self) -> Result<Option<RunRow>, StoreError> {
        runs::latest(&self.client("load the latest run").await?).await
    }

    async fn resolve_run(&self, prefix: &str) -> Result<String, StoreError> {
        runs::resolve(&self.client("resolve run").await?, prefix).await
    }

    async fn session_run(&self, run: &NewRun<'_>, at: Millis) -> Result<String, StoreError> {
        self.write("find or create session", async |tx| {
            runs::session(tx, run, at).await
        })
        .await
    }

    async fn open_item(
        &self,
        run_id: &str,
        item: &OpenItem,
        waiter: &Lease<'_>,
        by: &Actor,
    ) -> Result<ItemRow, StoreError> {
        self.write("open item", async |tx| {
            items::open_one(tx, run_id, item, waiter, by).await
        })
        .await
    }

    async fn append_audit(&self, entry: &NewAudit<'_>) -> Result<(), StoreError> {
        self.write("append to the audit trail", async |tx| {
            log::append(tx, entry.entry()).await
        })
        .await
    }

    async fn audit(&self, run_id: Option<&str>) -> Result<Vec<AuditRow>, StoreError> {
        log::audit(&self.client("read the audit trail").await?, run_id).await
    }

    fn audit_anchor(&self) -> Option<&AuditAnchor> {
        self.anchor.as_ref()
    }

    async fn renew_waiter(
        &self,
        run_id: &str,
        tool_call_id: &str,
        waiter: &Lease<'_>,
    ) -> Result<bool, StoreError> {
        self.write("renew waiter", async |tx| {
            items::renew_waiter(tx, run_id, tool_call_id, waiter).await
        })
        .await
    }

    async fn waited_items(&self) -> Result<Vec<WaitedItem>, StoreError> {
        items::waited(&self.client("list waited items").await?).await
    }

    async fn record_decision(&self, d: &NewDecision<'_>) -> Result<DecisionRow, StoreError> {
        self.write("record decision", async |tx| items::decide(tx, d).await)
            .await
    }

    async fn decision(
        &self,
        run_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<DecisionRow>, StoreError> {
        items::decision(&self.client("find decision").await?, run_id, tool_call_id).await
    }

    async fn open_items(&self, run_id: Option<&str>) -> Result<Vec<ItemRow>, StoreError> {
        items::open(&self.client("list open items").await?, run_id).await
    }

    async fn revisions(&self, run_id: Option<&str>) -> Result<Vec<RevisionRow>, StoreError> {
        revisions::of_run(&self.client("list revisions").await?, run_id).await
    }

    async fn revision_list(&self, listing: &Listing<'_>) -> Result<Vec<RevisionRow>, StoreError> {
        revisions::list(&self.client("list revisions").await?, listing).await
    }

    async fn revision(&self, id: i64) -> Result<RevisionRow, StoreError> {
        revisions::one(&self.client("load revision").await?, id).await
    }

    async fn search_revisions(
        &self,
        run_id: Option<&str>,
        words: &[String],
    ) -> Result<Vec<RevisionRow>, StoreError> {
        revisions::search(&self.client("search revisions").await?, run_id, words).await
    }

    async fn revisions_by_sha(&self, prefix: &str) -> Result<Vec<RevisionRow>, StoreError> {
        revisions::by_sha(&self.client("find revisions by hash").await?, prefix).await
    }

    async fn add_comment(&self, comment: &NewComment<'_>) -> Result<CommentRow, StoreError> {
        self.write("add comment", async |tx| {
            revisions::add_comment(tx, comment).await
        })
        .await
    }

    async fn comments(&self, run_id: &str) -> Result<Vec<CommentRow>, StoreError> {
        revisions::comments(&self.client("list comments").await?, run_id).await
    }

    async fn set_comment_resolved(
        &self,
        id: i64,
        resolved: bool,
        by: &Actor,
        at: Millis,
    ) -> Result<CommentRow, StoreError> {
        self.write("resolve comment", async |tx| {
            revisions::set_resolved(tx, id, resolved, by, at).await
        })
        .await
    }

    async fn edit_plan(&self, edit: &NewEdit<'_>) -> Result<RevisionRow, StoreError> {
        self.write("edit plan", async |tx| revisions::edit(tx, edit).await)
            .await
    }

    async fn events(&self, run_id: &str) -> Result<Vec<EventRow>, StoreError> {
        log::events(&self.client("list events").await?, run_id).await
    }

    async fn snapshot_count(&self, run_id: &str) -> Result<i64, StoreError> {
        runs::snapshot_count(&self.client("count snapshots").await?, run_id).await
    }

    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        let key = self.personal_key(key);
        log::setting(&self.client("read a setting").await?, &key).await
    }

    async fn set_setting(
        &self,
        key: &str,
        value: Option<&str>,
        at: Millis,
    ) -> Result<(), StoreError> {
        let key = self.personal_key(key);
        self.write("save a setting", async |tx| {
            log::set_setting(tx, &key, value, at).await
        })
        .await
    }

    async fn create_token(&self, token: &NewToken<'_>) -> Result<TokenRow, StoreError> {
        self.write("create a token", async |tx| tokens::create(tx, token).await)
            .await
    }

    async fn tokens(&self) -> Result<Vec<TokenRow>, StoreError> {
        tokens::all(&self.client("list tokens").await?).await
    }

    async fn revoke_token(
        &self,
        name: &str,
        by: &Actor,
        at: Millis,
    ) -> Result<TokenRow, StoreError> {
        self.write("revoke a token", async |tx| {
            tokens::revoke(tx, name, by, at).await
        })
        .await
    }

    async fn active_token(&self, sha256: &str) -> Result<Option<TokenRow>, StoreError> {
        tokens::active(&self.client("look up a token").await?, sha256).await
    }

    fn changes(&self) -> BoxStream<'static, ()> {
        self.listen();
        let receiver = self.changed.subscribe();
        // First: whatever is there now; then each commit anyone makes (a stream that fell
        // behind hears one change for all it missed).
        let commits = futures::stream::unfold(receiver, |mut receiver| async move {
            match receiver.recv().await {
                Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => Some(((), receiver)),
                Err(broadcast::error::RecvError::Closed) => None,
            }
        });
        Box::pin(futures::stream::once(async {}).chain(commits))
    }
}

/// The engine suite's PostgreSQL server, for this module's tests.
#[cfg(test)]
#[path = "../../../tests/engine/pg.rs"]
#[allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
mod test_pg;

#[cfg(test)]
mod tests {
    use super::*;

    /// A release is committed without waiting for the server's disk, in its transaction alone;
    /// every other write, before and after it, waits.
    #[tokio::test]
    async fn only_a_release_skips_the_disk_wait() {
        let store = PostgresStore::open(&test_pg::database(), "test")
            .await
            .unwrap();
        let mode = async |tx: &Tx<'_>| {
            let row = tx
                .query_one("SHOW synchronous_commit", &[])
                .await
                .map_err(query("show"))?;
            col::<String>(&row, 0)
        };
        assert_eq!(store.write("write", mode).await.unwrap(), "on");
        assert_eq!(store.write_relaxed("release", mode).await.unwrap(), "off");
        assert_eq!(store.write("write", mode).await.unwrap(), "on");
    }

    #[test]
    fn password_file_lines_split_on_unescaped_colons() {
        assert_eq!(
            pgpass_fields(r"db.example.com:5432:*:ana:pa\:ss\\word:x"),
            ["db.example.com", "5432", "*", "ana", r"pa:ss\word:x"]
        );
        assert_eq!(pgpass_fields("a:b"), ["a", "b"]);
    }

    #[test]
    fn a_saved_url_is_a_postgres_url_without_a_password() {
        assert!(check_saved_url("postgres://ana@db.example.com/plandesk").is_ok());
        let err = check_saved_url("postgres://ana:hunter2@db/plandesk").unwrap_err();
        assert!(err.to_string().contains("~/.pgpass"), "{err}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(check_saved_url("mysql://ana@db/x").is_err());
        assert_eq!(
            redacted_url("postgresql://ana:hunter2@db.example.com:6543/team"),
            "postgres://ana@db.example.com:6543/team"
        );
    }
}
