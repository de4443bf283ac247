//! Who drives a run. A driver claims the run with one atomic statement that leaves a lease in
//! the store, renews it while it works, and gives it back when it stops. Another process may
//! take a run over when the lease has run out, or at once when the holder is a process on this
//! machine that is gone (a lease works on every OS and survives PID reuse; the PID check only
//! makes recovery after a crash immediate).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::{Engine, EngineError};
use crate::clock::{Clock, Millis};
use crate::store::{ClaimOutcome, Lease, Store};

/// How long a claim holds without renewal.
const LEASE: Millis = 30_000;
/// How often a driver renews its lease.
const RENEW_EVERY: Duration = Duration::from_secs(10);

/// The holders this process has claimed and not given back.
fn live_holders() -> &'static Mutex<HashSet<String>> {
    static LIVE: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    LIVE.get_or_init(Mutex::default)
}

fn host_name() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// A holder name: `host/pid/nonce`, unique to one claim.
fn new_holder() -> String {
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    format!("{}/{}/{}", host_name(), std::process::id(), &nonce[..12])
}

/// Whether `holder` is known to be gone: a claim of this process that was never given back
/// (its task was dropped), or a process on this machine that no longer exists.
fn holder_gone(holder: &str) -> bool {
    let mut parts = holder.splitn(3, '/');
    let (Some(host), Some(pid)) = (parts.next(), parts.next()) else {
        return false;
    };
    if host != host_name() {
        return false;
    }
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    if pid == std::process::id() {
        let live = live_holders().lock().unwrap_or_else(|p| p.into_inner());
        return !live.contains(holder);
    }
    cfg!(target_os = "linux") && !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Whether a run with this holder is being driven now: held, the lease running, the holder
/// not known to be gone.
pub(super) fn is_driven(holder: Option<&(String, Millis)>, now: Millis) -> bool {
    holder.is_some_and(|(holder, until)| *until >= now && !holder_gone(holder))
}

/// Describes a holder for a person: a process of this machine, or the holder as stored.
fn who(holder: &str) -> String {
    let mut parts = holder.splitn(3, '/');
    match (parts.next(), parts.next()) {
        (Some(host), Some(pid)) if host == host_name() => {
            if pid == std::process::id().to_string() {
                "this process".into()
            } else {
                format!("process {pid}")
            }
        }
        (Some(host), Some(pid)) => format!("process {pid} on {host}"),
        _ => holder.to_owned(),
    }
}

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
        let holder = new_holder();
        let now = clock.now();
        let lease = Lease {
            holder: &holder,
            until: now + LEASE,
            now,
        };
        let claimed = match store.claim(run_id, &lease).await? {
            ClaimOutcome::Claimed => true,
            ClaimOutcome::Held { holder: other, .. } if holder_gone(&other) => {
                store.take_over(run_id, &other, &lease).await?
            }
            ClaimOutcome::Held { holder: other, .. } => {
                return Err(EngineError::Busy {
                    run_id: run_id.to_owned(),
                    who: who(&other),
                })
            }
        };
        if !claimed {
            return Err(EngineError::Busy {
                run_id: run_id.to_owned(),
                who: "another process".into(),
            });
        }
        live_holders()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(holder.clone());
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
        live_holders()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.holder);
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
