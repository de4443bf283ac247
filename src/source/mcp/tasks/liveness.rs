//! Whether a task's client is still there. A client over HTTP holds no connection while it
//! polls, so one that crashed or lost its network without `DELETE /mcp` says nothing; what it
//! leaves is silence. Each owner's signs of life are kept here: when it last sent a request
//! (any, on its token and session) and how many `tasks/result` streams it holds open. A client
//! silent for the limit, with no stream open, is taken to be gone: its working tasks' plans are
//! abandoned, as a call's plan is when its client goes. An open stream is a client waiting;
//! when it drops, the clock starts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::Owner;

/// One owner's signs of life.
#[derive(Debug, Clone, Copy)]
struct Seen {
    /// Its last request, or when its last open `tasks/result` closed.
    last: Instant,
    /// Its `tasks/result` requests still open.
    open: usize,
}

/// The signs of life of every owner that holds tasks.
#[derive(Debug)]
pub(super) struct Liveness {
    /// How long an owner may be silent.
    limit: Duration,
    clients: Mutex<HashMap<Owner, watch::Sender<Seen>>>,
}

impl Liveness {
    pub(super) fn new(limit: Duration) -> Arc<Self> {
        Arc::new(Self {
            limit,
            clients: Mutex::default(),
        })
    }

    pub(super) fn limit(&self) -> Duration {
        self.limit
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Owner, watch::Sender<Seen>>> {
        // Nothing here can panic while the lock is held; a poisoned map is still whole.
        self.clients.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A request from `owner`, which is there now. Owners without tasks are not kept.
    pub(super) fn touch(&self, owner: &Owner) {
        if let Some(seen) = self.lock().get(owner) {
            seen.send_modify(|seen| seen.last = Instant::now());
        }
    }

    /// Resolves once `owner` (who has just made a request) has been silent for the limit.
    pub(super) fn silence(&self, owner: &Owner) -> impl std::future::Future<Output = ()> {
        let seen = {
            let mut clients = self.lock();
            let seen = clients.entry(owner.clone()).or_insert_with(|| {
                watch::channel(Seen {
                    last: Instant::now(),
                    open: 0,
                })
                .0
            });
            seen.send_modify(|seen| seen.last = Instant::now());
            seen.subscribe()
        };
        silent(seen, self.limit)
    }

    /// `owner` is there while the guard lives (it waits on an open `tasks/result`); when it
    /// drops, its silence starts.
    pub(super) fn hold(self: &Arc<Self>, owner: &Owner) -> Held {
        let counted = match self.lock().get(owner) {
            Some(seen) => {
                seen.send_modify(|seen| seen.open += 1);
                true
            }
            None => false,
        };
        Held {
            liveness: self.clone(),
            owner: owner.clone(),
            counted,
        }
    }

    /// How many owners' signs of life are kept.
    #[cfg(test)]
    pub(super) fn owners(&self) -> usize {
        self.lock().len()
    }

    /// Forgets every owner `keep` says holds no task any more.
    pub(super) fn retain(&self, keep: impl Fn(&Owner) -> bool) {
        self.lock().retain(|owner, _| keep(owner));
    }
}

/// An open `tasks/result` of an owner (see [`Liveness::hold`]).
#[derive(Debug)]
pub(super) struct Held {
    liveness: Arc<Liveness>,
    owner: Owner,
    /// Whether it was counted open (its owner held tasks then).
    counted: bool,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(seen) = self.liveness.lock().get(&self.owner) {
            let counted = usize::from(self.counted);
            seen.send_modify(|seen| {
                seen.open = seen.open.saturating_sub(counted);
                seen.last = Instant::now();
            });
        }
    }
}

/// Resolves once `seen` says its owner has had no stream open and made no request for
/// `limit`. Never resolves once the owner is forgotten (its tasks went with it).
async fn silent(mut seen: watch::Receiver<Seen>, limit: Duration) {
    loop {
        let now = *seen.borrow_and_update();
        if now.open > 0 {
            if seen.changed().await.is_err() {
                return std::future::pending().await;
            }
            continue;
        }
        tokio::select! {
            () = tokio::time::sleep_until(now.last + limit) => return,
            changed = seen.changed() => {
                if changed.is_err() {
                    return std::future::pending().await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(session: &str) -> Owner {
        Owner {
            principal: "laptop".into(),
            session: Some(session.into()),
        }
    }

    #[tokio::test]
    async fn silence_comes_a_limit_after_the_last_sign_of_life() {
        let limit = Duration::from_millis(300);
        let liveness = Liveness::new(limit);
        let (me, other) = (owner("a"), owner("b"));
        let silence = tokio::spawn(liveness.silence(&me));
        let others = tokio::spawn(liveness.silence(&other));

        // Requests every 150 ms keep it there; another client's do nothing for it.
        for _ in 0..4 {
            tokio::time::sleep(limit / 2).await;
            liveness.touch(&me);
        }
        assert!(others.is_finished(), "the other client fell silent");
        assert!(!silence.is_finished(), "a client that asks is there");

        // An open tasks/result keeps it there however long; its end starts the clock.
        let held = liveness.hold(&me);
        tokio::time::sleep(limit * 3).await;
        assert!(!silence.is_finished(), "a stream open is a client waiting");
        drop(held);
        let dropped = Instant::now();
        silence.await.unwrap();
        let took = dropped.elapsed();
        assert!(took >= limit && took < limit * 2, "{took:?}");

        // A forgotten owner's silence never comes (its tasks are gone with it).
        let forgotten = tokio::spawn(liveness.silence(&me));
        liveness.retain(|_| false);
        tokio::time::sleep(limit * 2).await;
        assert!(!forgotten.is_finished());
        liveness.touch(&me);
        drop(liveness.hold(&me));
        forgotten.abort();
    }
}
