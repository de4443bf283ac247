//! Moving the write-ahead log into the database, out of the way of writes. SQLite does it on
//! its own inside the commit that takes the log past 1,000 pages: on a store in use, that is
//! one commit in a few, possibly a decision, whose click then waits for ~4 MB to be copied and
//! synced (measured: a decision's p95 3 → 20 ms on one store over 40 approvals of 200 KB
//! plans). A thread with its own connection does it instead once the store's writes have
//! paused for [`QUIET`]: the log is then nearly empty when the next burst of writes (a click)
//! begins, and SQLite's own checkpoint is left for runs that write without a pause. Lease
//! renewals do not call for one (they are written without waiting for the disk, and a
//! checkpoint would make them wait for it every 10 s).

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

/// How long the store's writes must pause before the log is checkpointed.
pub(super) const QUIET: Duration = Duration::from_millis(250);
/// A checkpoint that could not take the whole log (a reader still needs part of it, another
/// connection was checkpointing) is tried again after QUIET, twice as long each time, this
/// many times at most; then SQLite's own checkpoints take over until the next write.
const RETRIES: u32 = 5;
/// How long the checkpointing connection waits for a lock: it never holds anything up.
const BUSY: Duration = Duration::from_millis(50);

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
    /// When to checkpoint, if the log holds writes not yet checkpointed.
    due: Option<Instant>,
    /// Checkpoints tried since the last write that did not take the whole log.
    retries: u32,
    /// Checkpoints that took the whole log, since the store opened.
    whole: u64,
    /// A checkpoint is under way.
    running: bool,
    stop: bool,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How a checkpoint went.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// The whole log is in the database.
    Whole,
    /// Part of it is (or none): a reader or another checkpoint was in the way.
    Partial,
    Failed(String),
}

impl Checkpointer {
    /// Starts checkpointing the store at `path`. If no thread can be started, SQLite's own
    /// checkpoints go on as before.
    pub(super) fn start(path: &Path) -> Self {
        let shared = Arc::new(Shared::default());
        let path = path.to_owned();
        let thread = std::thread::Builder::new()
            .name("store-checkpoint".into())
            .spawn({
                let shared = shared.clone();
                move || run(&shared, &path)
            })
            .map_err(|err| eprintln!("plandesk: the store's log is checkpointed inline: {err}"))
            .ok();
        Self { shared, thread }
    }

    /// How many checkpoints took the whole log, and whether one is under way or to come.
    #[cfg(test)]
    pub(super) fn settled(&self) -> (u64, bool) {
        let state = self.shared.state();
        (state.whole, state.running || state.due.is_some())
    }

    /// The store committed: checkpoint once its writes pause. The thread is woken only if it
    /// waits for no time at all: one that waits for an earlier time finds the later one when
    /// it wakes, and one checkpointing looks again when it is done (waking it at every commit
    /// of a long run was a thread's wake-up a step).
    pub(super) fn written(&self) {
        let mut state = self.shared.state();
        let idle = state.due.is_none() && !state.running;
        state.due = Some(Instant::now() + QUIET);
        state.retries = 0;
        drop(state);
        if idle {
            self.shared.wake.notify_one();
        }
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

fn run(shared: &Shared, path: &Path) {
    let mut conn = None;
    let mut reported = false;
    let mut state = shared.state();
    loop {
        if state.stop {
            return;
        }
        let now = Instant::now();
        match state.due {
            None => state = shared.wake.wait(state).unwrap_or_else(|p| p.into_inner()),
            Some(due) if due > now => {
                state = shared
                    .wake
                    .wait_timeout(state, due - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            Some(_) => {
                state.due = None;
                state.running = true;
                drop(state);
                let outcome = checkpoint(&mut conn, path);
                if let (Outcome::Failed(err), false) = (&outcome, reported) {
                    eprintln!("plandesk: cannot checkpoint the store's log (SQLite will): {err}");
                    reported = true;
                }
                state = shared.state();
                state.running = false;
                if outcome == Outcome::Whole {
                    state.whole += 1;
                }
                // Not all of it, and no write since to try again after: try again later.
                if outcome != Outcome::Whole && state.due.is_none() && state.retries < RETRIES {
                    state.retries += 1;
                    state.due = Some(Instant::now() + QUIET * 2u32.pow(state.retries));
                }
            }
        }
    }
}

/// One PASSIVE checkpoint: as much of the log as no reader still needs, without waiting for
/// any reader or writer.
fn checkpoint(conn: &mut Option<Connection>, path: &Path) -> Outcome {
    if conn.is_none() {
        match Connection::open(path).and_then(|c| c.busy_timeout(BUSY).map(|()| c)) {
            Ok(c) => *conn = Some(c),
            Err(err) => return Outcome::Failed(err.to_string()),
        }
    }
    let Some(c) = conn.as_ref() else {
        return Outcome::Failed("no connection".into());
    };
    // (busy, frames in the log, frames checkpointed); -1 when the file is not in WAL mode.
    let row = c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
        ))
    });
    match row {
        Ok((0, log, done)) if done >= log => Outcome::Whole,
        Ok(_) => Outcome::Partial,
        Err(err) => {
            *conn = None;
            Outcome::Failed(err.to_string())
        }
    }
}
