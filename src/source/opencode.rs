//! OpenCode: no command hooks, so a plugin of Plandesk's own (`opencode/plandesk.js`, written
//! into OpenCode's plugins folder by `plandesk install opencode`) holds the plan agent's
//! `plan_exit` in `tool.execute.before` and runs `plandesk hook opencode`, which reads
//! `{session_id, cwd, plan_file}` and answers `{"decision": "allow"}` or `{"decision": "deny",
//! "reason": …}`; the plugin throws the reason, which the model reads as the tool's result.
//! The plugin fails closed: anything but that JSON is a deny. OpenCode gives a plugin's hook no
//! timeout, so Plandesk's own deadline is what ends an undecided wait.
//!
//! Kilo CLI, OpenCode's fork, runs the same plugin unchanged (`plandesk install kilo` writes it
//! into Kilo's plugins folder): the plugin tells which agent runs it, and calls `plandesk hook
//! kilo` there.

use std::path::Path;

use serde::Deserialize;
use serde_json::json;

use super::{read_plan_file, Answer, SourceError};
use crate::review::ExternalPlan;
use crate::store::{Source, SourceKind};

const TOOL: &str = "plan_exit";

/// The agents that run Plandesk's plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    OpenCode,
    /// Kilo CLI: OpenCode's fork (its plans in `.kilo/plans`, its config in `~/.config/kilo`).
    Kilo,
}

impl Host {
    pub fn kind(self) -> SourceKind {
        match self {
            Host::OpenCode => SourceKind::OpenCode,
            Host::Kilo => SourceKind::Kilo,
        }
    }

    fn name(self) -> &'static str {
        super::agent_name(self.kind())
    }

    /// Its command, which is also its config folder's name (`~/.config/NAME/plugins/`).
    pub fn program(self) -> &'static str {
        match self {
            Host::OpenCode => "opencode",
            Host::Kilo => "kilo",
        }
    }
}

/// The plugin, with the line that names the `plandesk` command to run.
pub const PLUGIN: &str = include_str!("opencode/plandesk.js");

/// The plugin's line the installer fills in (a JSON array of argv strings).
const COMMAND_LINE_START: &str = "const PLANDESK = [";

/// The plugin's line that says whether it records work after an approval.
const RECORD_LINE_START: &str = "const RECORD = ";

/// The plugin as installed: `command` (argv) in place of its placeholder, recording work or
/// not. `None` if the plugin lacks either line (a build mistake, caught by its test).
pub fn plugin_with(command: &[String], record: bool) -> Option<String> {
    let line = |start: &str| PLUGIN.lines().find(|line| line.starts_with(start));
    let (command_line, record_line) = (line(COMMAND_LINE_START)?, line(RECORD_LINE_START)?);
    let plugin = PLUGIN.replacen(
        command_line,
        &format!(
            "const PLANDESK = {}; // set by plandesk install",
            json!(command)
        ),
        1,
    );
    Some(plugin.replacen(
        record_line,
        &format!("const RECORD = {record}; // set by plandesk install"),
        1,
    ))
}

/// Whether `text` is a plugin Plandesk wrote (any version, any command).
pub fn is_ours(text: &str) -> bool {
    text.lines()
        .any(|line| line.starts_with(COMMAND_LINE_START))
        && text.starts_with("// Plandesk's plugin for OpenCode")
}

/// How long OpenCode may take to start and show that it loaded the plugin (it may first add
/// its plugin package with npm, a few seconds).
const LOAD_CHECK_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Whether `host` loads the plugin installed as `file`: runs `opencode debug config
/// --print-logs` (OpenCode starts its plugins for any command, and the plugin logs a line when
/// it starts), at most a minute, and looks for that line naming `file`. A plugin OpenCode
/// cannot load is only logged by it, and the plan would go through unreviewed: so this is said,
/// either way. `Err`: why it could not be told.
pub fn check_loaded(host: Host, file: &Path) -> Result<bool, String> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let program = host.program();
    let mut child = Command::new(program)
        .args(["debug", "config", "--print-logs"])
        .current_dir(std::env::var_os("HOME").unwrap_or_else(|| "/".into()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {program} ({e})"))?;
    let mut stderr = child.stderr.take().ok_or("no stderr")?;
    // Read beside the wait, so that a chatty log never fills the pipe; at most 16 MiB kept.
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = (&mut stderr).take(16 * 1024 * 1024).read_to_end(&mut text);
        let _ = std::io::copy(&mut stderr, &mut std::io::sink());
        String::from_utf8_lossy(&text).into_owned()
    });
    let started = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < LOAD_CHECK_LIMIT => {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{program} did not finish within {LOAD_CHECK_LIMIT:?}"
                ));
            }
        }
    }
    let log = reader
        .join()
        .map_err(|_| format!("cannot read {program}'s log"))?;
    let loaded = format!(
        "message=\"Plandesk plugin loaded\" plugin=file://{} ",
        file.display()
    );
    Ok(log.contains(&loaded))
}

#[derive(Debug, Deserialize)]
struct Input {
    session_id: String,
    cwd: String,
    plan_file: String,
    /// The session's first request, as the plugin read it from OpenCode.
    #[serde(default)]
    prompt: Option<String>,
}

/// What a plugin call asks for.
#[derive(Debug)]
pub enum Call {
    Review(Box<ExternalPlan>),
    /// The plan file is missing or empty: deny, telling the model to write it first.
    Unwritten(String),
}

/// Parses what the plugin sends from `host`; the plan is read from the file it names (a regular
/// `.md` file, never through a link).
pub fn parse(stdin: &str, host: Host) -> Result<Call, SourceError> {
    let input: Input = serde_json::from_str(stdin).map_err(|e| SourceError::Input {
        agent: host.name(),
        message: e.to_string(),
    })?;
    let path = Path::new(&input.plan_file);
    if !path.is_absolute() || path.extension().is_none_or(|e| e != "md") {
        return Err(SourceError::Input {
            agent: host.name(),
            message: "plan_file is not the absolute path of a .md file".into(),
        });
    }
    let text = match read_plan_file(path) {
        Ok(text) if !text.trim().is_empty() => text,
        _ => {
            return Ok(Call::Unwritten(format!(
                "The plan file {} is missing or empty. Write the complete plan there first, then \
                 call {TOOL} again.",
                crate::text::terminal_safe(&crate::text::short(&path.display().to_string(), 300))
            )))
        }
    };
    Ok(Call::Review(Box::new(ExternalPlan {
        source: Source {
            kind: host.kind(),
            session: Some(input.session_id),
        },
        prompt: input
            .prompt
            .as_deref()
            .map(|p| crate::text::short(p.trim(), 200))
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| {
                let agent = host.name();
                format!("{agent} session in {}", crate::text::short(&input.cwd, 200))
            }),
        cwd: input.cwd,
        tool_name: TOOL.into(),
        path: input.plan_file,
        text,
        item_id: None,
        submitter: None,
        file: None,
    })))
}

/// What the plugin prints for a decision: an explicit allow or deny, always.
pub fn answer(answer: &Answer) -> String {
    match answer {
        Answer::Approve(_) => json!({"decision": "allow"}).to_string(),
        Answer::Abandoned => deny("The plan was not reviewed: the review was stopped."),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn the_plugin_is_filled_with_the_command_and_known_as_ours() {
        let command = vec![
            "/opt/Plan Desk/plandesk".to_owned(),
            "--data-dir".into(),
            "/d \"x\"".into(),
        ];
        let plugin = plugin_with(&command, false).unwrap();
        assert!(plugin
            .contains(r#"const PLANDESK = ["/opt/Plan Desk/plandesk","--data-dir","/d \"x\""];"#));
        assert!(plugin.contains("const RECORD = false;"));
        assert!(is_ours(&plugin) && is_ours(PLUGIN));
        assert!(!is_ours("export const Mine = async () => ({})\n"));
    }

    fn parse_opencode(stdin: &str) -> Result<Call, SourceError> {
        parse(stdin, Host::OpenCode)
    }

    #[test]
    fn the_plan_is_the_file_the_plugin_names() {
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("1765-cache.md");
        let stdin = |file: &Path| {
            json!({"session_id": "ses_1", "cwd": "/w", "plan_file": file}).to_string()
        };
        assert!(matches!(
            parse_opencode(&stdin(&plan)).unwrap(),
            Call::Unwritten(_)
        ));
        std::fs::write(&plan, "# Cache\n\n1. Add it\n").unwrap();
        let Call::Review(review) = parse_opencode(&stdin(&plan)).unwrap() else {
            panic!("a plan");
        };
        assert_eq!(review.text, "# Cache\n\n1. Add it\n");
        assert_eq!(review.source.kind, SourceKind::OpenCode);
        assert_eq!(review.prompt, "OpenCode session in /w");
        let asked =
            json!({"session_id": "s", "cwd": "/w", "plan_file": plan, "prompt": "  Add a cache  "});
        let Call::Review(asked) = parse(&asked.to_string(), Host::Kilo).unwrap() else {
            panic!("a plan");
        };
        assert_eq!(asked.prompt, "Add a cache", "the request the plugin read");
        assert_eq!(asked.source.kind, SourceKind::Kilo, "Kilo CLI's plugin");
        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink(&plan, &link).unwrap();
        assert!(
            matches!(parse_opencode(&stdin(&link)).unwrap(), Call::Unwritten(_)),
            "never through a link"
        );
        assert!(
            parse_opencode(&stdin(Path::new("plan.md"))).is_err(),
            "relative"
        );
        assert!(
            parse_opencode(&stdin(&dir.path().join("x.txt"))).is_err(),
            "not .md"
        );
        let denied: Value =
            serde_json::from_str(&answer(&Answer::Revise("Smaller".into()))).unwrap();
        assert_eq!(denied["decision"], "deny");
        assert_eq!(
            answer(&Answer::Approve(Default::default())),
            r#"{"decision":"allow"}"#
        );
    }
}
