//! Scripts of Plandesk's own that an agent loads where it has no command hooks (OpenCode's and
//! Kilo CLI's plugin, Pi's extension): `plandesk install` writes them with two lines filled in,
//! and asks the agent whether it loaded them (an agent that cannot load one only logs it, or
//! does not start at all).

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{Answer, Approval, SourceError};

/// The line the installer fills in with the `plandesk` command to run (a JSON array of argv
/// strings).
const COMMAND_LINE_START: &str = "const PLANDESK = [";

/// The line that says whether the script records work after an approval.
const RECORD_LINE_START: &str = "const RECORD = ";

/// `script` as installed: `command` (argv) in place of its placeholder, recording work or not.
/// `None` if the script lacks either line (a build mistake, caught by its test).
pub fn filled(script: &str, command: &[String], record: bool) -> Option<String> {
    let line = |start: &str| script.lines().find(|line| line.starts_with(start));
    let (command_line, record_line) = (line(COMMAND_LINE_START)?, line(RECORD_LINE_START)?);
    let script = script.replacen(
        command_line,
        &format!(
            "const PLANDESK = {}; // set by plandesk install",
            json!(command)
        ),
        1,
    );
    Some(script.replacen(
        record_line,
        &format!("const RECORD = {record}; // set by plandesk install"),
        1,
    ))
}

/// Whether `text` is a script Plandesk wrote (any version, any command): it starts with
/// `header`, and has the command line.
pub fn is_ours(text: &str, header: &str) -> bool {
    text.starts_with(header)
        && text
            .lines()
            .any(|line| line.starts_with(COMMAND_LINE_START))
}

/// What a script reads for a decision: an explicit allow (`allow`, built from the approval) or
/// a deny with the reason the model reads, always. A script treats anything else as "not
/// approved".
pub fn answer(answer: &Answer, allow: impl FnOnce(&Approval) -> Value) -> String {
    match answer {
        Answer::Approve(approval) => allow(approval).to_string(),
        other => deny(&other.denial().unwrap_or_default()),
    }
}

pub fn deny(reason: &str) -> String {
    json!({"decision": "deny", "reason": reason}).to_string()
}

/// Not approved because we failed.
pub fn failure(err: &SourceError) -> String {
    deny(&err.denial())
}

/// How long an agent may take to start and say whether it loaded the script (it may first add
/// its own packages with npm, a few seconds).
pub const LOAD_CHECK_LIMIT: Duration = Duration::from_secs(60);

/// How long the output of an agent that exited may stay open (held by something it started).
const OUTPUT_CLOSE_LIMIT: Duration = Duration::from_secs(5);

/// Runs `command` (in the home folder, so that no project's own scripts are loaded) with
/// `stdin`, for at most [`LOAD_CHECK_LIMIT`], and returns what it wrote to stdout or stderr
/// (`stderr`), at most 16 MiB. It runs in a process group of its own: past the limit, or if
/// something it started still holds its output once it exited, the whole group is killed (an
/// agent's launcher may run the agent itself as a child). `Err`: why it could not be run to its
/// end.
pub fn agent_output(mut command: Command, stdin: &[u8], stderr: bool) -> Result<String, String> {
    use std::os::unix::process::CommandExt;
    use std::sync::mpsc;
    let program = command.get_program().to_string_lossy().into_owned();
    let (stdout, stderr_pipe) = match stderr {
        true => (Stdio::null(), Stdio::piped()),
        false => (Stdio::piped(), Stdio::null()),
    };
    let mut child = command
        .current_dir(std::env::var_os("HOME").unwrap_or_else(|| "/".into()))
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(stderr_pipe)
        .spawn()
        .map_err(|e| format!("cannot run {program} ({e})"))?;
    let group = rustix::process::Pid::from_child(&child);
    let kill_group = || {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    };
    let mut output: Box<dyn Read + Send> = match (child.stdout.take(), child.stderr.take()) {
        (Some(out), _) => Box::new(out),
        (None, Some(err)) => Box::new(err),
        (None, None) => return Err(format!("no output from {program}")),
    };
    // Read beside the wait, so that a chatty agent never fills the pipe.
    let (sender, read) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = (&mut output).take(16 * 1024 * 1024).read_to_end(&mut text);
        let _ = std::io::copy(&mut output, &mut std::io::sink());
        let _ = sender.send(String::from_utf8_lossy(&text).into_owned());
    });
    // Written beside the wait too: an agent that never reads cannot hold it up.
    if let Some(mut input) = child.stdin.take() {
        let stdin = stdin.to_vec();
        std::thread::spawn(move || {
            // An agent that exits without reading is told by its exit, not here.
            let _ = input.write_all(&stdin);
        });
    }
    let deadline = Instant::now() + LOAD_CHECK_LIMIT;
    loop {
        let waited = child.try_wait();
        match waited {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            _ => {}
        }
        kill_group();
        let _ = child.wait();
        return Err(match waited {
            Err(e) => format!("cannot wait for {program} ({e})"),
            _ => format!("{program} did not finish within {LOAD_CHECK_LIMIT:?}"),
        });
    }
    read.recv_timeout(OUTPUT_CLOSE_LIMIT)
        .or_else(|_| {
            // Something it started still holds its output: stopped with it, and what was
            // written is read.
            kill_group();
            read.recv_timeout(OUTPUT_CLOSE_LIMIT)
        })
        .map_err(|_| format!("{program} exited, but its output was not closed"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "// Plandesk's thing\nconst PLANDESK = [\"plandesk\"]; // set by \
                          plandesk install\nconst RECORD = true; // set by plandesk install\n";

    #[test]
    fn a_script_is_filled_with_the_command_and_known_as_ours() {
        let command = vec![
            "/opt/Plan Desk/plandesk".to_owned(),
            "--data-dir".into(),
            "/d \"x\"".into(),
        ];
        let script = filled(SCRIPT, &command, false).unwrap();
        assert!(script
            .contains(r#"const PLANDESK = ["/opt/Plan Desk/plandesk","--data-dir","/d \"x\""];"#));
        assert!(script.contains("const RECORD = false;"));
        assert!(is_ours(&script, "// Plandesk's thing") && is_ours(SCRIPT, "// Plandesk's"));
        assert!(!is_ours(&script, "// Plandesk's other"));
        assert!(!is_ours("export const Mine = async () => ({})\n", ""));
        assert_eq!(filled("const PLANDESK = [];\n", &command, true), None);
    }

    #[test]
    fn an_agents_output_is_read_and_a_missing_agent_said() {
        let mut cat = Command::new("sh");
        cat.args(["-c", "cat; echo done >&2"]);
        assert_eq!(agent_output(cat, b"hello\n", false).unwrap(), "hello\n");
        let mut err = Command::new("sh");
        err.args(["-c", "cat >/dev/null; echo done >&2"]);
        assert_eq!(agent_output(err, b"x", true).unwrap(), "done\n");
        let missing = agent_output(Command::new("/no/such/agent"), b"", false).unwrap_err();
        assert!(
            missing.starts_with("cannot run /no/such/agent"),
            "{missing}"
        );
        // It exits at once, but leaves a child holding its output: the child is stopped.
        let mut left = Command::new("sh");
        left.args(["-c", "echo started; sleep 600.4242 & exit 0"]);
        let started = Instant::now();
        assert_eq!(agent_output(left, b"", false).unwrap(), "started\n");
        assert!(
            started.elapsed() < OUTPUT_CLOSE_LIMIT * 2,
            "{:?}",
            started.elapsed()
        );
        std::thread::sleep(Duration::from_millis(200));
        let running = std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
            std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|cmdline| cmdline == b"sleep\x00600.4242\x00")
        });
        assert!(!running, "what the agent left running was killed");
    }
}
