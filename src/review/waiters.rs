//! One waker per process for every agent waiting here on a person's decision. The waiters
//! register; one task follows the store's changes (PostgreSQL's `LISTEN`, SQLite's bell),
//! reads in one query which items were decided since it last looked, and wakes exactly their
//! waiters, and renews every waiter's lease in one write. A waiter holds no connection while it
//! waits, and reads the store only when woken. A missed announcement (a lost connection, a
//! program that announces nothing) is caught by the same read, made again with each renewal.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use futures::StreamExt;
use tokio::sync::Notify;

use crate::clock::Clock;
use crate::lease::{LEASE, RENEW_EVERY};
use crate::store::{Store, StoreError};

/// Decisions read at once when catching up.
const BATCH: i64 = 500;

/// The waiters of one store, in this process.
#[derive(Debug, Default)]
pub(super) struct Waiters {
    shared: Arc<Shared>,
    /// Held while the task is started, so that two registrations start one.
    starting: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct Shared {
    waiting: Mutex<Waiting>,
}

#[derive(Debug, Default)]
struct Waiting {
    next: u64,
    /// By item (run id, tool call id).
    items: HashMap<(String, String), Vec<Waiter>>,
    /// The task, while it runs: stopped by the last waiter to go, started again by the next
    /// to come. A process that has answered its one agent (a hook) then has no task left to be
    /// polled while its runtime shuts down, when its timer can no longer be read (a panic on
    /// the agent's stderr, and the process's end delayed).
    follower: Option<tokio::task::AbortHandle>,
}

/// A registration: its number, the waiter's lease holder, and how it is woken.
#[derive(Debug)]
struct Waiter {
    number: u64,
    holder: String,
    wake: Arc<Notify>,
}

/// A waiter's registration: woken when its item is decided; gone when dropped.
#[derive(Debug)]
pub(super) struct Registered {
    shared: Weak<Shared>,
    key: (String, String),
    number: u64,
    wake: Arc<Notify>,
}

impl Registered {
    /// Resolves when the item may have been decided (at once if it was since the last call).
    pub(super) async fn woken(&self) {
        self.wake.notified().await;
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let mut waiting = shared.lock();
        if let Some(list) = waiting.items.get_mut(&self.key) {
            list.retain(|waiter| waiter.number != self.number);
            if list.is_empty() {
                waiting.items.remove(&self.key);
            }
        }
        if waiting.items.is_empty() {
            if let Some(follower) = waiting.follower.take() {
                follower.abort();
            }
        }
    }
}

/// The task ends with the waiters it serves (see [`Waiting::follower`]).
impl Drop for Waiters {
    fn drop(&mut self) {
        if let Some(follower) = self.shared.lock().follower.take() {
            follower.abort();
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Waiters {
    /// Registers a waiter on an item, holding its lease as `holder`, and makes sure the task
    /// runs. A decision recorded before this returns may not wake it: the waiter reads its item
    /// once after this, then only when woken.
    pub(super) async fn register(
        &self,
        store: &Arc<dyn Store>,
        clock: &Arc<dyn Clock>,
        run_id: &str,
        tool_call_id: &str,
        holder: &str,
    ) -> Result<Registered, StoreError> {
        let key = (run_id.to_owned(), tool_call_id.to_owned());
        let wake = Arc::new(Notify::new());
        let number = {
            let mut waiting = self.shared.lock();
            waiting.next += 1;
            let number = waiting.next;
            let waiter = Waiter {
                number,
                holder: holder.to_owned(),
                wake: wake.clone(),
            };
            waiting.items.entry(key.clone()).or_default().push(waiter);
            number
        };
        let registered = Registered {
            shared: Arc::downgrade(&self.shared),
            key,
            number,
            wake,
        };
        let _starting = self.starting.lock().await;
        // Started again if the last waiter stopped it, or the runtime that ran it has ended.
        let running = self
            .shared
            .lock()
            .follower
            .as_ref()
            .is_some_and(|f| !f.is_finished());
        if !running {
            let newest = store.newest_decision().await?;
            let shared = Arc::downgrade(&self.shared);
            let follower = tokio::spawn(follow(shared, store.clone(), clock.clone(), newest));
            self.shared.lock().follower = Some(follower.abort_handle());
        }
        Ok(registered)
    }
}

/// The task: wakes the waiters of each item decided after decision `newest`, and renews
/// their leases, until the waiters are gone.
async fn follow(
    shared: Weak<Shared>,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    mut newest: i64,
) {
    let mut changes = store.changes();
    let mut renew = tokio::time::interval(RENEW_EVERY);
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            change = changes.next() => {
                if change.is_none() {
                    changes = store.changes();
                }
            }
            _ = renew.tick() => {
                let Some(shared) = shared.upgrade() else { return };
                renew_leases(&shared, store.as_ref(), clock.as_ref()).await;
            }
        }
        let Some(shared) = shared.upgrade() else {
            return;
        };
        match wake_decided(&shared, store.as_ref(), newest).await {
            Ok(read_to) => newest = read_to,
            // Read again at the next change or renewal.
            Err(err) => eprintln!("plandesk: cannot look for decisions: {err}"),
        }
    }
}

/// Wakes the waiters of every item decided after decision `after`: the newest decision read.
async fn wake_decided(
    shared: &Shared,
    store: &dyn Store,
    mut after: i64,
) -> Result<i64, StoreError> {
    loop {
        let decided = store.decided_after(after, BATCH).await?;
        let Some(last) = decided.last() else {
            return Ok(after);
        };
        after = last.id;
        {
            let waiting = shared.lock();
            for decision in &decided {
                let key = (decision.run_id.clone(), decision.tool_call_id.clone());
                for waiter in waiting.items.get(&key).into_iter().flatten() {
                    waiter.wake.notify_one();
                }
            }
        }
        if (decided.len() as i64) < BATCH {
            return Ok(after);
        }
    }
}

/// Renews the lease of every waiter, in one write. One that fails is reported: an item whose
/// lease runs out is closed by another process as abandoned, and its waiter is told so.
async fn renew_leases(shared: &Shared, store: &dyn Store, clock: &dyn Clock) {
    let holders: Vec<String> = shared
        .lock()
        .items
        .values()
        .flatten()
        .map(|waiter| waiter.holder.clone())
        .collect();
    if holders.is_empty() {
        return;
    }
    let holders: Vec<&str> = holders.iter().map(String::as_str).collect();
    if let Err(err) = store.renew_waiters(&holders, clock.now() + LEASE).await {
        eprintln!("plandesk: cannot renew the waiting agents' leases: {err}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SteppingClock;

    #[tokio::test]
    async fn the_task_ends_with_the_last_waiter_and_starts_with_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(crate::SqliteStore::open(dir.path()).unwrap());
        let clock: Arc<dyn Clock> = Arc::new(SteppingClock::starting_at(1_700_000_000_000));
        let waiters = Waiters::default();
        let registered = waiters
            .register(&store, &clock, "r", "c", "holder")
            .await
            .unwrap();
        assert_eq!(Arc::strong_count(&store), 2, "the task follows the store");
        // Its first look and first renewal are behind it: it waits for the next change.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        drop(registered);
        assert!(ended(&store).await, "the task outlived the last waiter");
        let again = waiters
            .register(&store, &clock, "r", "c2", "holder")
            .await
            .unwrap();
        assert_eq!(
            Arc::strong_count(&store),
            2,
            "the next waiter starts it again"
        );
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        drop(waiters);
        assert!(ended(&store).await, "the task outlived its waiters");
        drop(again);
    }

    /// Whether the task let go of `store` within a second.
    async fn ended(store: &Arc<dyn Store>) -> bool {
        for _ in 0..100 {
            if Arc::strong_count(store) == 1 {
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        false
    }
}
