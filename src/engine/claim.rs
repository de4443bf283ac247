//! Who drives a run. A driver claims the run with one atomic statement that leaves a lease in
//! the store, renews it while it works, and gives it back when it stops. Another process may
//! take a run over when the lease has run out, or at once when the holder is a process on this
//! machine that is gone (a lease works on every OS and survives PID reuse; the PID check only
//! makes recovery after a crash immediate).

use std::sync::Arc;

use super::{Engine, EngineError};
use crate::clock::Clock;
use crate::lease::{self, LEASE, RENEW_EVERY};
use crate::store::{ClaimOutcome, Lease, Store};

/// A run held by this process until [`Claim::release`] (or drop).
#[derive(Debug)]
pub(super) struct Claim {
    store: Arc<dyn Store>,
    run_id: String,
    holder: String,
    renewal: Option<tokio::task::JoinHandle<()>>,
    released: bool,
}

impl Engine {
    /// Claims `run_id` for this driver, or says who holds it.
    pub(super) async fn claim(&self, run_id: &str) -> Result<Claim, EngineError> {
        let store = self.inner.store.clone();
        let clock = self.inner.clock.clone();
        let holder = lease::new_holder();
        let now = clock.now();
        let lease = Lease {
            holder: &holder,
            until: now + LEASE,
            now,
        };
        let mut claimed = false;
        // A holder that is gone may give the run back between the claim and the take-over (a
        // cancelled driver's release is on its way): then the run is free, and claimed again.
        for _ in 0..2 {
            claimed = match store.claim(run_id, &lease).await? {
                ClaimOutcome::Claimed => true,
                ClaimOutcome::Held { holder: other, .. } if lease::is_gone(&other) => {
                    store.take_over(run_id, &other, &lease).await?
                }
                ClaimOutcome::Held { holder: other, .. } => {
                    lease::let_go(&holder);
                    return Err(EngineError::Busy {
                        run_id: run_id.to_owned(),
                        who: lease::describe(&other),
                    });
                }
            };
            if claimed {
                break;
            }
        }
        if !claimed {
            lease::let_go(&holder);
            return Err(EngineError::Busy {
                run_id: run_id.to_owned(),
                who: "another process".into(),
            });
        }
        let renewal = tokio::spawn(renew(
            store.clone(),
            clock,
            run_id.to_owned(),
            holder.clone(),
        ));
        Ok(Claim {
            store,
            run_id: run_id.to_owned(),
            holder,
            renewal: Some(renewal),
            released: false,
        })
    }
}

async fn renew(store: Arc<dyn Store>, clock: Arc<dyn Clock>, run_id: String, holder: String) {
    loop {
        tokio::time::sleep(RENEW_EVERY).await;
        let now = clock.now();
        let lease = Lease {
            holder: &holder,
            until: now + LEASE,
            now,
        };
        // Lost (taken over after an expiry) or failing: the driver's next commit is refused by
        // the snapshot version check, so it stops there.
        if !matches!(store.renew(&run_id, &lease).await, Ok(true)) {
            return;
        }
    }
}

impl Claim {
    /// Gives the run back, so any process may drive it next.
    pub(super) async fn release(mut self) {
        self.stop();
        let _ = self.store.release(&self.run_id, &self.holder).await;
    }

    fn stop(&mut self) {
        if let Some(renewal) = self.renewal.take() {
            renewal.abort();
        }
        self.released = true;
        lease::let_go(&self.holder);
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        // Dropped without a release (the task was cancelled, or an error returned early): this
        // process no longer counts it as live, so the next claim takes it over at once; give it
        // back in the store too where a runtime is at hand.
        self.stop();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (store, run_id, holder) =
                (self.store.clone(), self.run_id.clone(), self.holder.clone());
            runtime.spawn(async move {
                let _ = store.release(&run_id, &holder).await;
            });
        }
    }
}
