//! Moving the write-ahead log into the database, out of the way of writes. SQLite does it on
//! its own inside the commit that takes the log past 1,000 pages: on a store in use, that is
//! one commit in a few, possibly a decision, whose click then waits for ~4 MB to be copied and
//! synced (measured: a decision's p95 3 → 20 ms on one store over 40 approvals of 200 KB
//! plans). A thread with its own connection does it instead once the store's writes have
//! paused for [`QUIET`]: the log is then nearly empty when the next burst of writes (a click)
//! begins, and SQLite's own checkpoint is left for runs that write without a pause.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

/// How long the store's writes must pause before the log is checkpointed.
pub(super) const QUIET: Duration = Duration::from_millis(250);

/// The checkpointing thread of one store; stopped (and waited for) when dropped.
#[derive(Debug)]
pub(super) struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// When the store last committed, if after the last checkpoint.
    written: Option<Instant>,
    stop: bool,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Checkpointer {
    /// Starts checkpointing the store at `path`, on a connection `connect` opens on the
    /// thread. If no thread can be started, SQLite's own checkpoints go on as before.
    pub(super) fn start(
        path: &Path,
        connect: fn(&Path) -> Result<Connection, crate::store::StoreError>,
    ) -> Self {
        let shared = Arc::new(Shared::default());
        let path = path.to_owned();
        let thread = std::thread::Builder::new()
            .name("store-checkpoint".into())
            .spawn({
                let shared = shared.clone();
                move || run(&shared, &path, connect)
            })
            .map_err(|err| eprintln!("plandesk: the store's log is checkpointed inline: {err}"))
            .ok();
        Self { shared, thread }
    }

    /// The store committed: checkpoint once its writes pause.
    pub(super) fn written(&self) {
        self.shared.state().written = Some(Instant::now());
        self.shared.wake.notify_one();
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.shared.state().stop = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(
    shared: &Shared,
    path: &Path,
    connect: fn(&Path) -> Result<Connection, crate::store::StoreError>,
) {
    let mut conn = None;
    let mut state = shared.state();
    loop {
        // Until a write has been followed by QUIET without another, or the store closes.
        let due = match (state.stop, state.written) {
            (true, _) => return,
            (false, None) => None,
            (false, Some(at)) => Some(at + QUIET),
        };
        let now = Instant::now();
        match due {
            None => state = shared.wake.wait(state).unwrap_or_else(|p| p.into_inner()),
            Some(due) if due > now => {
                state = shared
                    .wake
                    .wait_timeout(state, due - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            Some(_) => {
                state.written = None;
                drop(state);
                checkpoint(&mut conn, path, connect);
                state = shared.state();
            }
        }
    }
}

/// One PASSIVE checkpoint: as much of the log as no reader still needs, without waiting for
/// any reader or writer. A failure is left to the next one (or to SQLite's own).
fn checkpoint(
    conn: &mut Option<Connection>,
    path: &Path,
    connect: fn(&Path) -> Result<Connection, crate::store::StoreError>,
) {
    if conn.is_none() {
        *conn = connect(path).ok();
    }
    if let Some(c) = conn {
        if c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .is_err()
        {
            *conn = None;
        }
    }
}
