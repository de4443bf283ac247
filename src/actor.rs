//! Who acts: the person behind a decision, a comment or an edit, and the process they acted
//! from. Every entry of the audit trail and every decision names one.

use serde::Serialize;

/// Who did something, and from which process (`app`, `cli`, `hook:claude-code`, `mcp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Actor {
    pub name: String,
    pub process: String,
}

impl Actor {
    /// The person at this computer ($PLANDESK_REVIEWER, else the OS user), in `process`.
    pub fn local(process: &str) -> Self {
        let name = std::env::var("PLANDESK_REVIEWER")
            .ok()
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(os_account);
        Self {
            name,
            process: process.to_owned(),
        }
    }
}

/// The OS account this process runs as: `$USER` (or its kin), else from `/etc/passwd`.
pub fn os_account() -> String {
    ["USER", "USERNAME", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|n| !n.trim().is_empty()))
        .or_else(os_user)
        .unwrap_or_else(|| "unknown".into())
}

/// The name of the OS account this process runs as, from `/etc/passwd` (services and desktop
/// launchers often start processes without `$USER`).
fn os_user() -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // The owner of this process's /proc entry is its real user; no libc call needed.
        let uid = std::fs::metadata("/proc/self").ok()?.uid();
        let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
        passwd.lines().find_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let id: u32 = fields.nth(1)?.parse().ok()?;
            (id == uid && !name.is_empty()).then(|| name.to_owned())
        })
    }
    #[cfg(not(unix))]
    {
        None
    }
}
