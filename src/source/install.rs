//! `plandesk install claude-code|codex|gemini|mcp [--uninstall] [--print]`: merges Plandesk's
//! hook (or MCP server) into the agent's settings file. Other entries are never touched; the
//! file is backed up before it changes and replaced atomically; installing twice changes
//! nothing; a file that is not valid JSON is refused, not overwritten.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::store::SourceKind;
use crate::text::shell_quote;

/// A hook may wait this long for a person (seconds): longer than any deadline of ours, so the
/// agent never times the hook out first (several agents let a plan through on a timeout).
pub const HOOK_TIMEOUT_SECS: u64 = 86_400;

/// What to install.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    ClaudeCode,
    Codex,
    Gemini,
    /// An MCP server entry in the project's `.mcp.json`.
    Mcp,
}

impl Target {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "claude-code" | "claude" => Some(Target::ClaudeCode),
            "codex" => Some(Target::Codex),
            "gemini" | "gemini-cli" => Some(Target::Gemini),
            "mcp" => Some(Target::Mcp),
            _ => None,
        }
    }

    pub fn source(self) -> SourceKind {
        match self {
            Target::ClaudeCode => SourceKind::ClaudeCode,
            Target::Codex => SourceKind::Codex,
            Target::Gemini => SourceKind::Gemini,
            Target::Mcp => SourceKind::Mcp,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{file}: {message}")]
    File { file: PathBuf, message: String },
    #[error("{file} is not valid JSON ({message}); fix or move it, then install again")]
    NotJson { file: PathBuf, message: String },
    #[error("cannot tell where the home folder is (HOME is not set)")]
    NoHome,
}

/// Where things are: the agents' config folders and the command that runs Plandesk.
#[derive(Debug, Clone)]
pub struct Places {
    pub home: PathBuf,
    /// `CLAUDE_CONFIG_DIR`, `CODEX_HOME`, if set.
    pub claude_dir: Option<PathBuf>,
    pub codex_home: Option<PathBuf>,
    /// The folder `install mcp` writes `.mcp.json` into (and the server's workspace).
    pub project: PathBuf,
    /// This `plandesk` binary, absolute.
    pub exe: PathBuf,
    /// Passed on to the hook when the store is not the default one.
    pub data_dir: Option<PathBuf>,
}

impl Places {
    /// From the environment of this process.
    pub fn from_env(exe: PathBuf, data_dir: Option<PathBuf>) -> Result<Self, InstallError> {
        let env_dir = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Ok(Self {
            home: env_dir("HOME").ok_or(InstallError::NoHome)?,
            claude_dir: env_dir("CLAUDE_CONFIG_DIR"),
            codex_home: env_dir("CODEX_HOME"),
            project: std::env::current_dir().map_err(|e| InstallError::File {
                file: PathBuf::from("."),
                message: e.to_string(),
            })?,
            exe,
            data_dir,
        })
    }

    /// The command line an agent runs: this binary, the store if not the default, `args`.
    fn command(&self, args: &str) -> String {
        let mut command = shell_quote(&self.exe.display().to_string()).into_owned();
        if let Some(dir) = &self.data_dir {
            command.push_str(" --data-dir ");
            command.push_str(&shell_quote(&dir.display().to_string()));
        }
        command.push(' ');
        command.push_str(args);
        command
    }
}

/// A change to one settings file, computed but not yet made.
#[derive(Debug, Clone)]
pub struct Change {
    pub file: PathBuf,
    pub before: Option<String>,
    pub after: String,
    /// What the person should know (e.g. a hook Codex must be told to trust).
    pub note: Option<String>,
}

impl Change {
    pub fn changes_anything(&self) -> bool {
        self.before.as_deref() != Some(self.after.as_str())
    }
}

/// Computes what installing (or uninstalling) `target` does to its settings file.
pub fn plan(target: Target, uninstall: bool, places: &Places) -> Result<Change, InstallError> {
    let (file, event, group, note) = match target {
        Target::ClaudeCode => {
            let dir = places
                .claude_dir
                .clone()
                .unwrap_or_else(|| places.home.join(".claude"));
            let group = json!({"matcher": "ExitPlanMode", "hooks": [{
                "type": "command",
                "command": places.command("hook claude-code"),
                "timeout": HOOK_TIMEOUT_SECS,
            }]});
            (dir.join("settings.json"), "PermissionRequest", group, None)
        }
        Target::Codex => {
            let dir = places
                .codex_home
                .clone()
                .unwrap_or_else(|| places.home.join(".codex"));
            let group = json!({"hooks": [{
                "type": "command",
                "command": places.command("hook codex"),
                "timeout": HOOK_TIMEOUT_SECS,
                "statusMessage": "Waiting for the plan review in Plandesk",
            }]});
            let note = (!uninstall).then(|| {
                "Codex runs a new hook only once you trust it: start Codex and answer \"Hooks need \
                 review\" with \"Trust all and continue\" (or type /hooks)."
                    .to_owned()
            });
            (dir.join("hooks.json"), "Stop", group, note)
        }
        Target::Gemini => {
            let group = json!({"matcher": "^exit_plan_mode$", "hooks": [{
                "type": "command",
                "command": places.command("hook gemini"),
                // Milliseconds here.
                "timeout": HOOK_TIMEOUT_SECS * 1000,
            }]});
            (
                places.home.join(".gemini/settings.json"),
                "BeforeTool",
                group,
                None,
            )
        }
        Target::Mcp => return plan_mcp(uninstall, places),
    };
    let file_path = file.clone();
    let before = read(&file)?;
    let mut settings = parse(&file, before.as_deref())?;
    let hooks = object_at(&mut settings, "hooks", &file_path)?;
    let groups = hooks
        .entry(event)
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(groups) = groups else {
        return Err(InstallError::File {
            file: file_path,
            message: format!("`hooks.{event}` is not a list"),
        });
    };
    groups.retain(|g| !is_ours(g));
    if !uninstall {
        groups.push(group);
    }
    if groups.is_empty() {
        hooks.remove(event);
    }
    Ok(Change {
        after: pretty(&settings),
        file,
        before,
        note,
    })
}

fn plan_mcp(uninstall: bool, places: &Places) -> Result<Change, InstallError> {
    let file = places.project.join(".mcp.json");
    let before = read(&file)?;
    let mut settings = parse(&file, before.as_deref())?;
    let servers = object_at(&mut settings, "mcpServers", &file)?;
    if uninstall {
        servers.remove("plandesk");
    } else {
        let mut args = Vec::new();
        if let Some(dir) = &places.data_dir {
            args.extend(["--data-dir".to_owned(), dir.display().to_string()]);
        }
        args.extend([
            "mcp".to_owned(),
            "--workspace".to_owned(),
            places.project.display().to_string(),
        ]);
        servers.insert(
            "plandesk".into(),
            json!({"command": places.exe.display().to_string(), "args": args}),
        );
    }
    let note = (!uninstall).then(|| {
        "MCP clients time a tool call out (Codex after 60 s, Gemini CLI after 10 min, Claude Code \
         moves it to the background after 2 min): give `submit_plan` a long timeout — Codex: \
         tool_timeout_sec = 86400; Gemini CLI: \"timeout\": 86400000; Claude Code: \
         CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS=0."
            .to_owned()
    });
    Ok(Change {
        after: pretty(&settings),
        file,
        before,
        note,
    })
}

/// Whether a hook group is ours: every hook in it runs `plandesk … hook AGENT`.
fn is_ours(group: &Value) -> bool {
    let hooks = group["hooks"].as_array();
    hooks.is_some_and(|hooks| {
        !hooks.is_empty()
            && hooks.iter().all(|h| {
                let command = h["command"].as_str().unwrap_or_default();
                command.contains("plandesk") && command.contains(" hook ")
            })
    })
}

fn read(file: &Path) -> Result<Option<String>, InstallError> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(InstallError::File {
            file: file.to_owned(),
            message: e.to_string(),
        }),
    }
}

fn parse(file: &Path, text: Option<&str>) -> Result<Value, InstallError> {
    match text {
        None => Ok(json!({})),
        Some(text) if text.trim().is_empty() => Ok(json!({})),
        Some(text) => {
            let value: Value = serde_json::from_str(text).map_err(|e| InstallError::NotJson {
                file: file.to_owned(),
                message: e.to_string(),
            })?;
            if value.is_object() {
                Ok(value)
            } else {
                Err(InstallError::NotJson {
                    file: file.to_owned(),
                    message: "the top level is not an object".into(),
                })
            }
        }
    }
}

fn object_at<'v>(
    value: &'v mut Value,
    key: &str,
    file: &Path,
) -> Result<&'v mut Map<String, Value>, InstallError> {
    let not_object = || InstallError::File {
        file: file.to_owned(),
        message: format!("`{key}` is not an object"),
    };
    let Value::Object(map) = value else {
        return Err(not_object());
    };
    map.entry(key)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(not_object)
}

fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    text.push('\n');
    text
}

/// Makes the change: the old file backed up beside it, the new one written atomically.
/// Returns the backup's path, if there was a file to back up.
pub fn apply(change: &Change, now_secs: u64) -> Result<Option<PathBuf>, InstallError> {
    let failed = |file: &Path, e: std::io::Error| InstallError::File {
        file: file.to_owned(),
        message: e.to_string(),
    };
    if !change.changes_anything() {
        return Ok(None);
    }
    let dir = change.file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| failed(dir, e))?;
    let backup = match &change.before {
        Some(before) => {
            let name = change
                .file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let backup = dir.join(format!("{name}.plandesk-backup-{now_secs}"));
            std::fs::write(&backup, before).map_err(|e| failed(&backup, e))?;
            Some(backup)
        }
        None => None,
    };
    let temp = dir.join(format!(
        ".{}.plandesk-{}",
        change
            .file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    std::fs::write(&temp, &change.after).map_err(|e| failed(&temp, e))?;
    std::fs::rename(&temp, &change.file).map_err(|e| failed(&change.file, e))?;
    Ok(backup)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(dir: &Path) -> Places {
        Places {
            home: dir.join("home"),
            claude_dir: None,
            codex_home: None,
            project: dir.join("project"),
            exe: PathBuf::from("/opt/Plan Desk/plandesk"),
            data_dir: None,
        }
    }

    fn settings(change: &Change) -> Value {
        serde_json::from_str(&change.after).unwrap()
    }

    #[test]
    fn installing_merges_beside_other_entries_and_twice_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let file = p.home.join(".claude/settings.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let theirs = json!({"model": "opus", "hooks": {"PermissionRequest": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}]}});
        std::fs::write(&file, theirs.to_string()).unwrap();

        let change = plan(Target::ClaudeCode, false, &p).unwrap();
        let after = settings(&change);
        assert_eq!(after["model"], "opus", "other settings stay");
        let groups = after["hooks"]["PermissionRequest"].as_array().unwrap();
        assert_eq!(groups.len(), 2, "their hook stays beside ours");
        assert_eq!(groups[1]["matcher"], "ExitPlanMode");
        assert_eq!(
            groups[1]["hooks"][0]["command"], "'/opt/Plan Desk/plandesk' hook claude-code",
            "the path is quoted for the shell"
        );
        assert_eq!(groups[1]["hooks"][0]["timeout"], HOOK_TIMEOUT_SECS);
        let backup = apply(&change, 7).unwrap().unwrap();
        assert_eq!(
            std::fs::read_to_string(&backup).unwrap(),
            theirs.to_string(),
            "the old file is kept"
        );
        let again = plan(Target::ClaudeCode, false, &p).unwrap();
        assert!(
            !again.changes_anything(),
            "installing twice changes nothing"
        );

        let removed = plan(Target::ClaudeCode, true, &p).unwrap();
        assert_eq!(settings(&removed), theirs, "uninstall removes only ours");
    }

    #[test]
    fn a_file_that_is_not_json_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let file = p.home.join(".gemini/settings.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "{ not json").unwrap();
        let err = plan(Target::Gemini, false, &p).unwrap_err();
        assert!(err.to_string().contains("not valid JSON"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ not json");
    }

    #[test]
    fn each_agent_gets_its_own_shape() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = places(dir.path());
        p.data_dir = Some(PathBuf::from("/data"));
        let codex = settings(&plan(Target::Codex, false, &p).unwrap());
        assert_eq!(
            codex["hooks"]["Stop"][0]["hooks"][0]["command"],
            "'/opt/Plan Desk/plandesk' --data-dir /data hook codex"
        );
        let gemini = settings(&plan(Target::Gemini, false, &p).unwrap());
        let group = &gemini["hooks"]["BeforeTool"][0];
        assert_eq!(group["matcher"], "^exit_plan_mode$");
        assert_eq!(
            group["hooks"][0]["timeout"], 86_400_000,
            "Gemini counts milliseconds"
        );
        let mcp = settings(&plan(Target::Mcp, false, &p).unwrap());
        assert_eq!(
            mcp["mcpServers"]["plandesk"]["command"],
            "/opt/Plan Desk/plandesk"
        );
        assert_eq!(mcp["mcpServers"]["plandesk"]["args"][2], "mcp", "{mcp}");
    }
}
