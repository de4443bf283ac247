//! Every process on one SQLite file hears at once that another committed. A process that
//! follows the store's changes ([`Store::changes`](crate::store::Store::changes)) keeps one
//! thread, with a connection of its own and a datagram socket in a folder beside the file
//! (`plandesk.db-wake/`, the user's alone); every commit sends a byte to each socket there (its
//! own process's included). Woken, the thread asks SQLite whether the file changed
//! (`PRAGMA data_version`) and tells every stream. A commit by a program that rings no bell
//! (the `sqlite3` shell, an older Plandesk) is still seen within [`UNRUNG`]; where there can
//! be no socket (a folder whose path is too long for one, another OS), the thread looks every
//! [`NO_BELL`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, SystemTime};

use futures::stream::BoxStream;
use rusqlite::Connection;
use tokio::sync::broadcast;

use crate::store::db::{announce, changes_of};

/// How often the thread looks when no bell rang (a commit by a program that rings none).
const UNRUNG: Duration = Duration::from_secs(5);
/// How often it looks when it has no socket to be rung on.
const NO_BELL: Duration = Duration::from_millis(25);
/// The longest socket path the OS takes (`sun_path`, less its closing NUL).
const MAX_SOCKET_PATH: usize = 107;

/// The folder of the sockets to ring, beside the store's file.
pub(super) fn folder(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-wake");
    PathBuf::from(name)
}

/// The folder, made if missing, if it is a folder of this user's that no one else may enter
/// (never a link to one).
#[cfg(unix)]
fn own_folder(dir: &Path) -> Option<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    let meta = std::fs::symlink_metadata(dir).ok()?;
    let private = meta.permissions().mode() & 0o077 == 0;
    (meta.is_dir() && meta.uid() == rustix::process::getuid().as_raw() && private).then_some(())
}

/// What this process rings after each commit.
#[derive(Debug)]
pub(super) struct Bell {
    dir: PathBuf,
    #[cfg(unix)]
    sender: Option<std::os::unix::net::UnixDatagram>,
    /// The sockets the folder held when last read, with its modification time then: read
    /// again only once that time moves (a socket added or removed).
    #[cfg(unix)]
    known: std::sync::Mutex<Option<(SystemTime, Arc<[PathBuf]>)>>,
}

/// How long after a folder's last change its listing is trusted to stand until the next: the
/// time a file system stamps on a change may lag the clock by a tick (a few milliseconds), so
/// a socket added just after a listing could otherwise leave the folder's time unchanged.
#[cfg(unix)]
const SETTLED: Duration = Duration::from_millis(50);

impl Bell {
    pub(super) fn new(db: &Path) -> Self {
        let dir = folder(db);
        #[cfg(unix)]
        let sender = own_folder(&dir).and_then(|()| {
            let socket = std::os::unix::net::UnixDatagram::unbound().ok()?;
            // A listener whose queue is full has a wake-up coming already.
            socket.set_nonblocking(true).ok()?;
            Some(socket)
        });
        Self {
            dir,
            #[cfg(unix)]
            sender,
            #[cfg(unix)]
            known: std::sync::Mutex::new(None),
        }
    }

    /// Wakes every process following the store (after a commit). A socket nobody listens on
    /// any more (its process was killed) is removed.
    pub(super) fn ring(&self) {
        #[cfg(unix)]
        {
            let Some(sender) = &self.sender else {
                return;
            };
            let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
            let changed = std::fs::metadata(&self.dir).and_then(|m| m.modified()).ok();
            let sockets = match (&*known, changed) {
                (Some((at, sockets)), Some(changed)) if *at == changed => sockets.clone(),
                _ => {
                    let sockets: Arc<[PathBuf]> = self.sockets().into();
                    // A listing taken right after a change may miss one made within the same
                    // tick: kept only once the folder has settled.
                    let settled = changed.filter(|at| {
                        SystemTime::now()
                            .duration_since(*at)
                            .is_ok_and(|age| age > SETTLED)
                    });
                    *known = settled.map(|at| (at, sockets.clone()));
                    sockets
                }
            };
            drop(known);
            for path in sockets.iter() {
                if let Err(err) = sender.send_to(b"!", path) {
                    if err.kind() == std::io::ErrorKind::ConnectionRefused {
                        let _ = std::fs::remove_file(path);
                    }
                }
            }
        }
    }

    /// The sockets in the folder now.
    #[cfg(unix)]
    fn sockets(&self) -> Vec<PathBuf> {
        use std::os::unix::fs::FileTypeExt;
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter(|entry| entry.file_type().is_ok_and(|t| t.is_socket()))
            .map(|entry| entry.path())
            .collect()
    }
}

/// The store's changes as this process hears them: one thread for every stream.
#[derive(Debug)]
pub(super) struct Changes {
    db: PathBuf,
    changed: OnceLock<Arc<broadcast::Sender<()>>>,
}

impl Changes {
    pub(super) fn new(db: &Path) -> Self {
        Self {
            db: db.to_owned(),
            changed: OnceLock::new(),
        }
    }

    /// A stream of the store's changes (its first item at once), starting the thread the
    /// first time.
    pub(super) fn follow(&self) -> BoxStream<'static, ()> {
        let changed = self.changed.get_or_init(|| {
            let changed = Arc::new(broadcast::channel(1).0);
            let (db, weak) = (self.db.clone(), Arc::downgrade(&changed));
            let spawned = std::thread::Builder::new()
                .name("store-changes".into())
                .spawn(move || watch(&db, &weak));
            if let Err(err) = spawned {
                eprintln!("plandesk: cannot watch the store for changes: {err}");
            }
            changed
        });
        changes_of(changed)
    }
}

/// A socket in the folder for this process to be rung on, if it can have one.
#[cfg(unix)]
fn listen(db: &Path) -> Option<(std::os::unix::net::UnixDatagram, PathBuf)> {
    let dir = folder(db);
    own_folder(&dir)?;
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let path = dir.join(format!("{}-{}", std::process::id(), &nonce[..8]));
    if path.as_os_str().len() > MAX_SOCKET_PATH {
        return None;
    }
    let socket = std::os::unix::net::UnixDatagram::bind(&path).ok()?;
    socket.set_read_timeout(Some(UNRUNG)).ok()?;
    Some((socket, path))
}

/// Tells the streams whenever the file changes, until the store is gone.
fn watch(db: &Path, changed: &Weak<broadcast::Sender<()>>) {
    // Its own connection: SQLite's data_version moves on every commit made by any other
    // connection, this process's included.
    let conn = match super::connect(db) {
        Ok(conn) => conn,
        Err(err) => {
            eprintln!("plandesk: cannot watch the store for changes: {err}");
            return;
        }
    };
    #[cfg(unix)]
    let socket = listen(db);
    let version = |conn: &Connection| {
        conn.query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0))
            .ok()
    };
    let mut seen = version(&conn);
    // Whatever was committed before the thread looked first.
    let mut heard = announce(changed);
    while heard {
        #[cfg(unix)]
        {
            match &socket {
                Some((socket, _)) => {
                    let _ = socket.recv(&mut [0; 16]);
                }
                None => std::thread::sleep(NO_BELL),
            }
        }
        #[cfg(not(unix))]
        std::thread::sleep(NO_BELL);
        let now = version(&conn);
        heard = if now.is_some() && now != seen {
            seen = now;
            announce(changed)
        } else {
            changed.strong_count() > 0
        };
    }
    #[cfg(unix)]
    if let Some((_, path)) = socket {
        let _ = std::fs::remove_file(path);
    }
}
