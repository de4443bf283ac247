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

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::json;

use super::{read_plan_file, Answer, Call, SourceError};
use crate::review::{ExternalPlan, PlanFile};
use crate::store::Source;
use crate::vocabulary::SourceKind;

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
        self.kind().agent_name()
    }

    /// Its command, which is also its config folder's name (`~/.config/NAME/plugins/`).
    pub fn program(self) -> &'static str {
        match self {
            Host::OpenCode => "opencode",
            Host::Kilo => "kilo",
        }
    }

    /// Where it keeps the plans of a session outside a git project:
    /// `$XDG_DATA_HOME/NAME/plans`, else `~/.local/share/NAME/plans`.
    fn plans_folder(self) -> Option<PathBuf> {
        let env = |name| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let data = env("XDG_DATA_HOME").or_else(|| env("HOME").map(|h| h.join(".local/share")));
        data.map(|data| data.join(self.program()).join("plans"))
    }
}

/// The plugin, with the lines `plandesk install` fills in (see [`super::script`]).
pub const PLUGIN: &str = include_str!("opencode/plandesk.js");

/// How the plugin starts: what tells a file of Plandesk's own (any version) from another's.
pub const HEADER: &str = "// Plandesk's plugin for OpenCode";

/// Whether `host` loads the plugin installed as `file`: runs `opencode debug config
/// --print-logs` (OpenCode starts its plugins for any command, and the plugin logs a line when
/// it starts) and looks for that line naming `file`. A plugin OpenCode cannot load is only
/// logged by it, and the plan would go through unreviewed: so this is said, either way. `Err`:
/// why it could not be told.
pub fn check_loaded(host: Host, file: &Path) -> Result<bool, String> {
    let mut command = std::process::Command::new(host.program());
    command.args(["debug", "config", "--print-logs"]);
    let log = super::script::agent_output(command, b"", true)?;
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

/// Parses what the plugin sends from `host`; the plan is read from the file it names (a regular
/// `.md` file, never through a link).
pub fn parse(stdin: &str, host: Host) -> Result<Call, SourceError> {
    let input: Input = super::hook_input(host.name(), stdin)?;
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
            return Ok(Call::Unusable(format!(
                "The plan file {} is missing or empty. Write the complete plan there first, then \
                 call {TOOL} again.",
                crate::text::terminal_safe(&crate::text::short(&path.display().to_string(), 300))
            )))
        }
    };
    let file = PlanFile::inside(path, &super::plan_roots(&input.cwd, host.plans_folder()));
    Ok(Call::Review(Box::new(ExternalPlan {
        source: Source {
            kind: host.kind(),
            session: Some(input.session_id),
        },
        prompt: super::plan_prompt(input.prompt.as_deref(), host.name(), &input.cwd),
        cwd: input.cwd,
        tool_name: TOOL.into(),
        path: input.plan_file,
        text,
        item_id: None,
        submitter: None,
        file,
    })))
}

/// What the plugin reads for a decision: an explicit allow or deny, always. An allow's
/// `message` is what the reviewer added (an edit, notes; else empty), which the plugin appends
/// to `plan_exit`'s result.
pub fn answer(answer: &Answer) -> String {
    super::script::answer(
        answer,
        |approval| json!({"decision": "allow", "message": approval.addendum()}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn the_plugin_has_the_lines_install_fills_in_and_is_known_as_ours() {
        let plugin = crate::source::script::filled(PLUGIN, &["/p".to_owned()], true).unwrap();
        assert!(plugin.contains(r#"const PLANDESK = ["/p"]; // set by plandesk install"#));
        assert!(crate::source::script::is_ours(&plugin, HEADER));
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
            Call::Unusable(_)
        ));
        std::fs::write(&plan, "# Cache\n\n1. Add it\n").unwrap();
        let Call::Review(review) = parse_opencode(&stdin(&plan)).unwrap() else {
            panic!("a plan");
        };
        assert_eq!(
            review.file, None,
            "outside the workspace (/w) and the plans folder"
        );
        let workspace = json!({"session_id": "s", "cwd": dir.path(), "plan_file": plan});
        let Call::Review(inside) = parse_opencode(&workspace.to_string()).unwrap() else {
            panic!("a plan");
        };
        let file = inside
            .file
            .expect("a plan in the workspace: an edit is written back");
        assert_eq!(
            (file.root.as_path(), file.name.as_str()),
            (dir.path(), "1765-cache.md")
        );
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
            matches!(parse_opencode(&stdin(&link)).unwrap(), Call::Unusable(_)),
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
            r#"{"decision":"allow","message":""}"#
        );
        let noted: Value =
            serde_json::from_str(&answer(&Answer::Approve(crate::source::Approval {
                notes: Some("Keep it per process".into()),
                edit: None,
                accept_edits: false,
            })))
            .unwrap();
        assert_eq!(noted["decision"], "allow");
        assert!(noted["message"]
            .as_str()
            .unwrap()
            .contains("Keep it per process"));
    }
}
