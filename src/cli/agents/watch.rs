//! Whether the agent that started a hook is still there: the processes from the hook up to the
//! agent, past the shells that wrap it, and a change of any one's parent.

use std::time::Duration;

/// The processes from this hook up to the agent that started it, as they were when it
/// started: each is a (process, its parent) link. Agents run a hook either directly (Gemini
/// CLI: `bash -c` execs it) or under a `sh -c` that waits for it (Claude Code); the agent is
/// the first ancestor that is not such a wrapper. An agent that dies without stopping its hook
/// leaves it (or its wrapper) with a new parent: a changed link means the agent is gone.
pub(super) struct AgentWatch {
    links: Vec<(u32, u32)>,
}

impl AgentWatch {
    /// How often the links are looked at.
    const EVERY: Duration = Duration::from_millis(250);

    #[cfg(unix)]
    pub(super) fn start() -> Self {
        let mut parent = std::os::unix::process::parent_id();
        let mut links = vec![(std::process::id(), parent)];
        // Wrappers of wrappers (`sh -c "bash -c '…'"`) are rare: three are plenty.
        while links.len() < 4 && is_shell_wrapper(parent) {
            let Some(grandparent) = parent_of(parent) else {
                break;
            };
            links.push((parent, grandparent));
            parent = grandparent;
        }
        AgentWatch { links }
    }

    #[cfg(not(unix))]
    pub(super) fn start() -> Self {
        AgentWatch { links: Vec::new() }
    }

    /// Whether every process still has the parent it had (a wrapper that is gone counts as
    /// changed).
    fn intact(&self) -> bool {
        self.links.iter().enumerate().all(|(i, &(pid, parent))| {
            let now = if i == 0 {
                current_parent()
            } else {
                parent_of(pid)
            };
            now == Some(parent)
        })
    }

    /// Resolves once the agent is gone; never if there is nothing to watch.
    pub(super) async fn gone(&self) {
        if self.links.is_empty() {
            return std::future::pending().await;
        }
        while self.intact() {
            tokio::time::sleep(Self::EVERY).await;
        }
    }
}

#[cfg(unix)]
fn current_parent() -> Option<u32> {
    Some(std::os::unix::process::parent_id())
}

#[cfg(not(unix))]
fn current_parent() -> Option<u32> {
    None
}

/// A process's parent, from `/proc/PID/stat` (Linux; `None` elsewhere or once it is gone).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `PID (COMMAND) STATE PPID …`; the command may hold spaces and parentheses.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Whether `pid` is a shell running a command string (`sh -c …`, `bash -lc …`): a wrapper that
/// waits for the hook, not the agent itself.
fn is_shell_wrapper(pid: u32) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let mut args = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned());
    let Some(program) = args.next() else {
        return false;
    };
    let name = program.rsplit('/').next().unwrap_or_default();
    let shells = ["sh", "dash", "bash", "zsh", "ksh", "mksh", "ash", "busybox"];
    shells.contains(&name.trim_start_matches('-'))
        && args.any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_agent_is_the_first_ancestor_that_is_not_a_shell_wrapper() {
        let watch = AgentWatch::start();
        assert_eq!(watch.links[0].0, std::process::id());
        assert!(watch.intact());
        let parent = parent_of(std::process::id()).unwrap();
        assert_eq!(current_parent(), Some(parent));
        let mut wrapper = std::process::Command::new("sh")
            .args(["-c", "sleep 30; exit"])
            .spawn()
            .unwrap();
        let mut found = false;
        for _ in 0..100 {
            found = is_shell_wrapper(wrapper.id());
            if found {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(found, "sh -c is a wrapper");
        assert_eq!(parent_of(wrapper.id()), Some(std::process::id()));
        wrapper.kill().unwrap();
        wrapper.wait().unwrap();
        assert_eq!(parent_of(wrapper.id()), None, "gone");
        assert!(!is_shell_wrapper(std::process::id()));
    }
}
