//! Who holds something (a run being driven, an outside agent's item being waited on), and
//! whether that holder is still there. A holder is named `host/pid/nonce`; it keeps a lease in
//! the store and renews it while it works. Anyone may take over once the lease has run out,
//! or at once when the holder is a process of this machine that is gone (the lease works on
//! every OS and survives PID reuse; the PID check only makes recovery after a crash immediate).

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::clock::Millis;

/// How long a lease holds without renewal.
pub const LEASE: Millis = 30_000;
/// How often a holder renews its lease.
pub const RENEW_EVERY: Duration = Duration::from_secs(10);

/// The holders this process has taken and not given back.
fn live_holders() -> &'static Mutex<HashSet<String>> {
    static LIVE: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    LIVE.get_or_init(Mutex::default)
}

/// This machine's name.
pub(crate) fn host_name() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// A new holder name, counted live in this process until [`let_go`].
pub fn new_holder() -> String {
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let holder = format!("{}/{}/{}", host_name(), std::process::id(), &nonce[..12]);
    live_holders()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(holder.clone());
    holder
}

/// This process no longer holds anything as `holder`.
pub fn let_go(holder: &str) {
    live_holders()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(holder);
}

/// Whether `holder` is known to be gone: a holder of this process that was let go (its task
/// was dropped), or a process on this machine that no longer exists.
pub fn is_gone(holder: &str) -> bool {
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

/// Whether a lease is held now: a holder whose lease runs and who is not known to be gone.
pub fn is_held(holder: Option<&(String, Millis)>, now: Millis) -> bool {
    holder.is_some_and(|(holder, until)| *until >= now && !is_gone(holder))
}

/// Describes a holder for a person: a process of this machine, or where it runs.
pub fn describe(holder: &str) -> String {
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
