//! `plandesk install claude-code|codex|gemini|mcp [--uninstall] [--print]`: merges Plandesk's
//! hook (or MCP server) into the agent's settings file. Ours is recognised by its exact shape
//! (our matcher, one command hook running `PROGRAM [--data-dir DIR] hook AGENT`; for MCP, the
//! `plandesk` server with our arguments), so nobody else's entry is touched, and a hook from a
//! renamed or moved binary is still found. A file that is not valid JSON is refused, not
//! overwritten; installing twice changes nothing. The settings file is read without blocking (a
//! FIFO or a huge file is refused). A symbolic link to it (a dotfile manager's) is followed:
//! its final target is backed up beside itself, never overwriting an older backup, and replaced
//! atomically, keeping its mode and owner, while the link stays a link. Uninstalling gives back
//! the exact bytes of a backup whose JSON equals the result, so install then uninstall leaves
//! the file as it was.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;
use serde_json::{json, Map, Value};

use super::agent_name;
use super::opencode::Host;
use crate::store::SourceKind;
use crate::text::shell_quote;

/// A hook may wait this long for a person (seconds): longer than any deadline of ours, so the
/// agent never times the hook out first (several agents let a plan through on a timeout).
pub const HOOK_TIMEOUT_SECS: u64 = 86_400;

/// The largest settings file read: agents' settings are a few KiB, and a file far past that is
/// not one to load into memory and rewrite.
const MAX_SETTINGS_BYTES: u64 = 4 * 1024 * 1024;

/// How many symbolic links a settings path may go through (the kernel's own limit for a path).
const MAX_LINKS: usize = 40;

/// On uninstall, how many of the newest backups are compared with the result.
const MAX_BACKUPS_COMPARED: usize = 32;

/// How many names a backup (or temporary file) tries before giving up: one per install in the
/// same second is plenty.
const MAX_NAME_TRIES: u64 = 1000;

/// The mode of a settings file made where none was: agents' settings can hold keys (Claude
/// Code's and MCP servers' `env`, Gemini CLI's API key), which only their owner needs to read.
/// Git keeps no read bits, so a `.mcp.json` shared through a repository is not affected.
const NEW_FILE_MODE: u32 = 0o600;

/// The mode of a folder made for a new settings file, for the same reason.
const NEW_FOLDER_MODE: u32 = 0o700;

/// What to install.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    ClaudeCode,
    Codex,
    Gemini,
    Droid,
    QwenCode,
    Copilot,
    OpenCode,
    /// Kilo CLI: OpenCode's plugin, in Kilo's plugins folder.
    Kilo,
    /// Pi: Plandesk's extension, in Pi's extensions folder.
    Pi,
    /// An MCP server entry in the project's `.mcp.json`.
    Mcp,
}

impl Target {
    /// Every target, in the order people see them listed.
    pub const ALL: [Target; 10] = [
        Target::ClaudeCode,
        Target::Codex,
        Target::Gemini,
        Target::Droid,
        Target::QwenCode,
        Target::Copilot,
        Target::OpenCode,
        Target::Kilo,
        Target::Pi,
        Target::Mcp,
    ];

    /// Its name on the command line (`plandesk install NAME`) and in the app.
    pub fn id(self) -> &'static str {
        match self {
            Target::Mcp => "mcp",
            agent => agent.source().as_str(),
        }
    }

    /// The target named `id` (see [`Target::id`]).
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|target| target.id() == id)
    }

    pub fn source(self) -> SourceKind {
        match self {
            Target::ClaudeCode => SourceKind::ClaudeCode,
            Target::Codex => SourceKind::Codex,
            Target::Gemini => SourceKind::Gemini,
            Target::Droid => SourceKind::Droid,
            Target::QwenCode => SourceKind::QwenCode,
            Target::Copilot => SourceKind::Copilot,
            Target::OpenCode => SourceKind::OpenCode,
            Target::Kilo => SourceKind::Kilo,
            Target::Pi => SourceKind::Pi,
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

impl InstallError {
    /// The settings file it is about, if it is about one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            InstallError::File { file, .. } | InstallError::NotJson { file, .. } => Some(file),
            InstallError::NoHome => None,
        }
    }
}

fn file_error(file: &Path, message: impl ToString) -> InstallError {
    InstallError::File {
        file: file.to_owned(),
        message: message.to_string(),
    }
}

/// Where things are: the agents' config folders and the command that runs Plandesk.
#[derive(Debug, Clone)]
pub struct Places {
    pub home: PathBuf,
    /// `CLAUDE_CONFIG_DIR`, `CODEX_HOME`, if set.
    pub claude_dir: Option<PathBuf>,
    pub codex_home: Option<PathBuf>,
    /// `COPILOT_HOME`, if set.
    pub copilot_home: Option<PathBuf>,
    /// `XDG_CONFIG_HOME`, if set (OpenCode's plugins are under it).
    pub config_home: Option<PathBuf>,
    /// `PI_CODING_AGENT_DIR`, if set (Pi's folder, else `~/.pi/agent`).
    pub pi_dir: Option<PathBuf>,
    /// The folder `install mcp` writes `.mcp.json` into (and the server's workspace).
    pub project: PathBuf,
    /// This `plandesk` binary, absolute.
    pub exe: PathBuf,
    /// Passed on to the hook when the store is not the default one.
    pub data_dir: Option<PathBuf>,
    /// Also install the hooks that record what an agent does after its plan is approved
    /// (`plandesk record`); `false` removes them.
    pub record: bool,
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
            copilot_home: env_dir("COPILOT_HOME"),
            config_home: env_dir("XDG_CONFIG_HOME"),
            pi_dir: env_dir("PI_CODING_AGENT_DIR"),
            project: std::env::current_dir().map_err(|e| file_error(Path::new("."), e))?,
            exe,
            data_dir,
            record: true,
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
    /// The settings file as the agent names it (it may be a symbolic link).
    pub file: PathBuf,
    pub before: Option<String>,
    pub after: String,
    /// What the person should know (e.g. a hook Codex must be told to trust).
    pub note: Option<String>,
    /// `file` with every link followed: what is read, backed up beside itself and replaced.
    target: PathBuf,
    /// The file goes (a file of Plandesk's own, uninstalled): `after` is not written.
    remove: bool,
}

impl Change {
    pub fn changes_anything(&self) -> bool {
        match self.remove {
            true => self.before.is_some(),
            false => self.before.as_deref() != Some(self.after.as_str()),
        }
    }
}

/// Where one of an agent's hooks goes and how ours looks there.
struct HookPlace {
    event: &'static str,
    /// Our group's `matcher`; `None`: the group has none (Codex's Stop hooks match nothing).
    matcher: Option<&'static str>,
    /// The `plandesk` command it runs (`hook`, or `record` for what is done after approval).
    verb: &'static str,
    /// The agent that command is told it runs under.
    agent: &'static str,
    /// Ours in the group.
    hook: Value,
    /// Whether it is installed (`false`: only removed, as on uninstall).
    wanted: bool,
}

/// How long Claude Code waits for a `plandesk record` hook (it answers within milliseconds,
/// and gives up itself within a few seconds).
const RECORD_TIMEOUT_SECS: u64 = 10;
/// The tools whose use after an approval Claude Code's `PostToolUse` hook records (and
/// `ExitPlanMode`: a plan answered in Claude Code's own dialog).
const CLAUDE_RECORDED_TOOLS: &str = "ExitPlanMode|Write|Edit|MultiEdit|NotebookEdit|Bash";
/// Gemini CLI's tools whose use `AfterTool` records (its matchers are regular expressions).
const GEMINI_RECORDED_TOOLS: &str = "^(write_file|replace|run_shell_command)$";

/// Factory Droid's tools whose use `PostToolUse` records, and `ExitSpecMode`: a plan answered
/// in Droid's own dialog.
const DROID_RECORDED_TOOLS: &str = "^(ExitSpecMode|Create|Edit|MultiEdit|ApplyPatch|Execute)$";
/// Copilot CLI's tools whose use `postToolUse` records (a regular expression on the whole name),
/// and `exit_plan_mode`: a plan answered in Copilot's own menu.
const COPILOT_RECORDED_TOOLS: &str = "exit_plan_mode|create|edit|bash";
/// Qwen Code's tools whose use `PostToolUse` records (a JavaScript regular expression), and
/// `exit_plan_mode`: a plan answered in Qwen Code's own dialog.
const QWEN_RECORDED_TOOLS: &str = "^(exit_plan_mode|write_file|edit|run_shell_command)$";
/// The `timeout` written for Qwen Code's plan hook, in seconds (under 1000, so read as seconds).
const QWEN_HOOK_TIMEOUT_SECS: u64 = 90;

/// Computes what installing (or uninstalling) `target` does to its settings file.
pub fn plan(target: Target, uninstall: bool, places: &Places) -> Result<Change, InstallError> {
    let command = |verb: &str, agent: &str, timeout: u64| {
        json!({
            "type": "command",
            "command": places.command(&format!("{verb} {agent}")),
            "timeout": timeout,
        })
    };
    let (file, hooks, note) = match target {
        Target::ClaudeCode => {
            let dir = places
                .claude_dir
                .clone()
                .unwrap_or_else(|| places.home.join(".claude"));
            let review = HookPlace {
                event: "PermissionRequest",
                matcher: Some("ExitPlanMode"),
                verb: "hook",
                agent: "claude-code",
                hook: command("hook", "claude-code", HOOK_TIMEOUT_SECS),
                wanted: true,
            };
            let record = |event, matcher| HookPlace {
                event,
                matcher,
                verb: "record",
                agent: "claude-code",
                hook: command("record", "claude-code", RECORD_TIMEOUT_SECS),
                wanted: places.record,
            };
            let hooks = vec![
                review,
                record("PostToolUse", Some(CLAUDE_RECORDED_TOOLS)),
                record("PostToolUseFailure", Some("Bash")),
                record("Stop", None),
            ];
            (dir.join("settings.json"), hooks, None)
        }
        Target::Codex => {
            let dir = places
                .codex_home
                .clone()
                .unwrap_or_else(|| places.home.join(".codex"));
            let mut hook = command("hook", "codex", HOOK_TIMEOUT_SECS);
            hook["statusMessage"] = json!("Waiting for the plan review in Plandesk");
            let place = HookPlace {
                event: "Stop",
                matcher: None,
                verb: "hook",
                agent: "codex",
                hook,
                wanted: true,
            };
            let note = (!uninstall).then(|| {
                "Codex runs a new hook only once you trust it: start Codex and answer \"Hooks need \
                 review\" with \"Trust all and continue\" (or type /hooks)."
                    .to_owned()
            });
            let record = |event| HookPlace {
                event,
                matcher: None,
                verb: "record",
                agent: "codex",
                hook: command("record", "codex", RECORD_TIMEOUT_SECS),
                wanted: places.record,
            };
            let hooks = vec![place, record("PostToolUse"), record("Stop")];
            (dir.join("hooks.json"), hooks, note)
        }
        Target::Gemini => {
            let place = HookPlace {
                event: "BeforeTool",
                matcher: Some("^exit_plan_mode$"),
                verb: "hook",
                agent: "gemini",
                // Milliseconds here.
                hook: command("hook", "gemini", HOOK_TIMEOUT_SECS * 1000),
                wanted: true,
            };
            let record = |event, matcher| HookPlace {
                event,
                matcher,
                verb: "record",
                agent: "gemini",
                hook: command("record", "gemini", RECORD_TIMEOUT_SECS * 1000),
                wanted: places.record,
            };
            let hooks = vec![
                place,
                record("AfterTool", Some(GEMINI_RECORDED_TOOLS)),
                record("AfterAgent", None),
            ];
            (places.home.join(".gemini/settings.json"), hooks, None)
        }
        Target::QwenCode => {
            // Qwen Code stops waiting for any hook after 60 s whatever this says (the hook
            // answers before that); a `timeout` from 1000 up would be milliseconds.
            let place = HookPlace {
                event: "PermissionRequest",
                matcher: Some("exit_plan_mode"),
                verb: "hook",
                agent: "qwen-code",
                hook: command("hook", "qwen-code", QWEN_HOOK_TIMEOUT_SECS),
                wanted: true,
            };
            let record = |event, matcher| HookPlace {
                event,
                matcher,
                verb: "record",
                agent: "qwen-code",
                hook: command("record", "qwen-code", RECORD_TIMEOUT_SECS),
                wanted: places.record,
            };
            let hooks = vec![
                place,
                record("PostToolUse", Some(QWEN_RECORDED_TOOLS)),
                record("PostToolUseFailure", Some("^run_shell_command$")),
                record("Stop", None),
            ];
            let note = (!uninstall).then(|| {
                "Qwen Code waits at most a minute for a hook: decide within it, or the plan is \
                 answered \"not approved\". After you approve, Qwen Code still asks \"Would you \
                 like to proceed?\" in its terminal."
                    .to_owned()
            });
            (places.home.join(".qwen/settings.json"), hooks, note)
        }
        Target::Droid => {
            let dir = places.home.join(".factory");
            let place = HookPlace {
                event: "PreToolUse",
                matcher: Some("^ExitSpecMode$"),
                verb: "hook",
                agent: "droid",
                hook: command("hook", "droid", HOOK_TIMEOUT_SECS),
                wanted: true,
            };
            let record = |event, matcher| HookPlace {
                event,
                matcher,
                verb: "record",
                agent: "droid",
                hook: command("record", "droid", RECORD_TIMEOUT_SECS),
                wanted: places.record,
            };
            let hooks = vec![
                place,
                record("PostToolUse", Some(DROID_RECORDED_TOOLS)),
                record("Stop", None),
            ];
            // Droid reads a folder's `hooks.json` over its `settings.json` (event by event):
            // ours goes where it is not hidden, and is removed from wherever it is.
            let (settings_file, hooks_file) = (dir.join("settings.json"), dir.join("hooks.json"));
            let has_ours = |file: &Path| {
                read(file, OFlags::empty())
                    .ok()
                    .flatten()
                    .is_some_and(|existing| existing.text.contains(" hook droid"))
            };
            let file = if uninstall && !has_ours(&hooks_file) && has_ours(&settings_file) {
                settings_file
            } else if std::fs::symlink_metadata(&hooks_file).is_ok() {
                hooks_file
            } else {
                settings_file
            };
            (file, hooks, None)
        }
        Target::Copilot => {
            // A hooks file of Plandesk's own in Copilot's hooks folder, holding Claude Code's
            // groups (which Copilot reads beside its own flat entries); `timeout` in seconds.
            let state = places
                .copilot_home
                .clone()
                .unwrap_or_else(|| places.home.join(".copilot"));
            let place = HookPlace {
                event: "preToolUse",
                matcher: Some("exit_plan_mode"),
                verb: "hook",
                agent: "copilot",
                hook: command("hook", "copilot", HOOK_TIMEOUT_SECS),
                wanted: true,
            };
            let record = |event, matcher| HookPlace {
                event,
                matcher,
                verb: "record",
                agent: "copilot",
                hook: command("record", "copilot", RECORD_TIMEOUT_SECS),
                wanted: places.record,
            };
            let hooks = vec![
                place,
                record("postToolUse", Some(COPILOT_RECORDED_TOOLS)),
                record("agentStop", None),
            ];
            let note = (!uninstall).then(|| {
                "After you approve, Copilot CLI still shows its own \"Plan Ready for Review\" menu \
                 in its terminal (no setting skips it)."
                    .to_owned()
            });
            (state.join("hooks/plandesk.json"), hooks, note)
        }
        Target::OpenCode | Target::Kilo | Target::Pi => {
            return plan_script(target, uninstall, places)
        }
        Target::Mcp => return plan_mcp(uninstall, places),
    };
    // A `hooks.json` holds the hooks at its top level; a settings file under `hooks`.
    let root = match file.file_name() {
        Some(name) if name == "hooks.json" && target == Target::Droid => None,
        _ => Some("hooks"),
    };
    // Copilot's hooks file is Plandesk's own: once nothing is left in it, it goes (Copilot
    // refuses a hooks file without `hooks`, and says so at every start).
    let own_file = target == Target::Copilot;
    let target = resolve_links(&file)?;
    let before = read(&target, OFlags::empty())?.map(|existing| existing.text);
    let mut settings = parse(&file, before.as_deref())?;
    let events: Vec<&str> = hooks.iter().map(|h| h.event).collect();
    for place in hooks {
        let event = place.event;
        let all = match root {
            Some(key) => object_at(&mut settings, key, &file)?,
            None => settings
                .as_object_mut()
                .ok_or_else(|| file_error(&file, "the top level is not an object"))?,
        };
        let groups = all.entry(event).or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(groups) = groups else {
            return Err(file_error(&file, format!("`hooks.{event}` is not a list")));
        };
        groups.retain(|g| !is_our_group(g, place.matcher, place.verb, place.agent));
        if !uninstall && place.wanted {
            let mut group = Map::new();
            if let Some(matcher) = place.matcher {
                group.insert("matcher".into(), matcher.into());
            }
            group.insert("hooks".into(), json!([place.hook]));
            groups.push(Value::Object(group));
        }
    }
    // No empty list or `hooks` object left of what install added.
    let paths: Vec<Vec<&str>> = events
        .iter()
        .map(|event| root.into_iter().chain([*event]).collect())
        .collect();
    let paths: Vec<&[&str]> = paths.iter().map(Vec::as_slice).collect();
    for path in &paths {
        drop_empty(&mut settings, path);
    }
    let after = finished(&target, before.as_deref(), &settings, uninstall, &paths);
    Ok(Change {
        after,
        file,
        before,
        note,
        target,
        remove: uninstall && own_file && settings == json!({}),
    })
}

/// OpenCode, Kilo CLI and Pi have no command hooks: a script of Plandesk's own (the plugin, the
/// extension), a file of its own in the agent's plugins or extensions folder, naming this
/// `plandesk` (and the store, if not the default). A file there that Plandesk did not write is
/// left alone; uninstalling removes the file (backed up first).
fn plan_script(target: Target, uninstall: bool, places: &Places) -> Result<Change, InstallError> {
    let config = || {
        places
            .config_home
            .clone()
            .unwrap_or_else(|| places.home.join(".config"))
    };
    let (file, script, header, note) = match target {
        Target::OpenCode => (
            config().join("opencode/plugins/plandesk.js"),
            super::opencode::PLUGIN,
            super::opencode::HEADER,
            "OpenCode loads the plugin when it starts: restart it. After you approve, OpenCode \
             still asks whether to switch to its build agent.",
        ),
        Target::Kilo => (
            config().join("kilo/plugins/plandesk.js"),
            super::opencode::PLUGIN,
            super::opencode::HEADER,
            "Kilo CLI loads the plugin when it starts: restart it. After you approve, Kilo still \
             asks \"Ready to implement?\" (in a new session, here, or keep refining).",
        ),
        _ => (
            places
                .pi_dir
                .clone()
                .unwrap_or_else(|| places.home.join(".pi/agent"))
                .join("extensions/plandesk.js"),
            super::pi::EXTENSION,
            super::pi::HEADER,
            "Pi loads the extension when it starts: restart it, then type /plan (or start it with \
             `pi --plan=true`) before asking for a change.",
        ),
    };
    let target = resolve_links(&file)?;
    let before = read(&target, OFlags::empty())?.map(|existing| existing.text);
    if before
        .as_deref()
        .is_some_and(|text| !super::script::is_ours(text, header))
    {
        return Err(file_error(
            &file,
            "a file Plandesk did not write; rename or remove it, then install again",
        ));
    }
    let mut command = vec![places.exe.display().to_string()];
    if let Some(dir) = &places.data_dir {
        command.extend(["--data-dir".to_owned(), dir.display().to_string()]);
    }
    let after = match uninstall {
        true => String::new(),
        false => super::script::filled(script, &command, places.record)
            .ok_or_else(|| file_error(&file, "this plandesk's script has no command line"))?,
    };
    Ok(Change {
        file,
        before,
        after,
        note: (!uninstall).then(|| note.to_owned()),
        target,
        remove: uninstall,
    })
}

/// What a person should know once `change` is made, if anything needs checking: for OpenCode,
/// Kilo CLI and Pi, whether they load Plandesk's script (a plugin OpenCode cannot load is only
/// logged, and plans would go through unreviewed; an extension Pi cannot load keeps Pi from
/// starting).
pub fn check(target: Target, change: &Change) -> Option<String> {
    if change.remove {
        return None;
    }
    let agent = agent_name(target.source());
    let (loaded, how, what) = match target {
        Target::OpenCode | Target::Kilo => {
            let host = match target {
                Target::Kilo => Host::Kilo,
                _ => Host::OpenCode,
            };
            let program = host.program();
            (
                super::opencode::check_loaded(host, &change.target),
                format!("`{program} debug config`"),
                "plugin",
            )
        }
        Target::Pi => (
            super::pi::check_loaded(&change.target),
            "`pi --mode rpc`".to_owned(),
            "extension",
        ),
        _ => return None,
    };
    Some(match loaded {
        Ok(true) => format!("{agent} loads the {what} (checked with {how})."),
        Ok(false) => format!(
            "{agent} did not load the {what} ({how} does not show it): plans would not be \
             reviewed. Look at {agent}'s log."
        ),
        Err(why) => format!("Could not check that {agent} loads the {what}: {why}."),
    })
}

fn plan_mcp(uninstall: bool, places: &Places) -> Result<Change, InstallError> {
    let file = places.project.join(".mcp.json");
    let target = resolve_links(&file)?;
    let before = read(&target, OFlags::empty())?.map(|existing| existing.text);
    let mut settings = parse(&file, before.as_deref())?;
    let servers = object_at(&mut settings, "mcpServers", &file)?;
    let theirs = servers.get("plandesk").is_some_and(|s| !is_our_server(s));
    if theirs && !uninstall {
        return Err(file_error(
            &file,
            "`mcpServers.plandesk` is a server Plandesk did not write (its arguments are not \
             `[--data-dir DIR] mcp --workspace DIR`); rename or remove it, then install again",
        ));
    }
    if uninstall {
        if !theirs {
            servers.remove("plandesk");
        }
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
        // Keys the person added to ours (a `timeout`, as the note below asks) stay.
        let server = servers
            .entry("plandesk")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(server) = server {
            server.insert("command".into(), places.exe.display().to_string().into());
            server.insert("args".into(), json!(args));
        }
    }
    let path = ["mcpServers"];
    drop_empty(&mut settings, &path);
    let paths: [&[&str]; 1] = [&path];
    let note = (!uninstall).then(|| {
        "MCP clients time a tool call out (Codex after 60 s, Gemini CLI after 10 min, Claude Code \
         moves it to the background after 2 min): give `submit_plan` a long timeout — Codex: \
         tool_timeout_sec = 86400; Gemini CLI: \"timeout\": 86400000; Claude Code: \
         CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS=0."
            .to_owned()
    });
    Ok(Change {
        after: finished(&target, before.as_deref(), &settings, uninstall, &paths),
        file,
        before,
        note,
        target,
        remove: false,
    })
}

/// Whether a hook group is exactly one we write: our matcher (or none where we write none), one
/// hook, of type command, running `PROGRAM [--data-dir DIR] hook AGENT`. The program may be any
/// (the binary may have been renamed or moved since); nothing else is ours, however much it
/// mentions Plandesk.
fn is_our_group(group: &Value, matcher: Option<&str>, verb: &str, agent: &str) -> bool {
    let Some(group) = group.as_object() else {
        return false;
    };
    let same_matcher = match matcher {
        Some(matcher) => group.get("matcher").and_then(Value::as_str) == Some(matcher),
        None => !group.contains_key("matcher"),
    };
    let hooks = group.get("hooks").and_then(Value::as_array);
    let Some([hook]) = hooks.map(Vec::as_slice) else {
        return false;
    };
    // A record hook is ours by its command alone: its matcher may have been edited, or written
    // by an older Plandesk with other tools.
    (same_matcher || verb == "record")
        && hook.get("type").and_then(Value::as_str) == Some("command")
        && hook
            .get("command")
            .and_then(Value::as_str)
            .and_then(shell_words)
            .is_some_and(|words| {
                let words: Vec<&str> = words.iter().map(String::as_str).collect();
                matches!(
                    words.as_slice(),
                    [_, v, name] | [_, "--data-dir", _, v, name] if *v == verb && *name == agent
                )
            })
}

/// Whether an `mcpServers.plandesk` entry is one we write: a command and the arguments
/// `[--data-dir DIR] mcp --workspace DIR`.
fn is_our_server(server: &Value) -> bool {
    let command = server.get("command").and_then(Value::as_str);
    let args: Option<Vec<&str>> = server
        .get("args")
        .and_then(Value::as_array)
        .and_then(|args| args.iter().map(Value::as_str).collect());
    command.is_some()
        && args.is_some_and(|args| {
            matches!(
                args.as_slice(),
                ["mcp", "--workspace", _] | ["--data-dir", _, "mcp", "--workspace", _]
            )
        })
}

/// Removes the entry at `path` (keys from the top) if it is an empty list or object, and then
/// each of its parents left empty, so uninstall leaves nothing of what install added.
fn drop_empty(value: &mut Value, path: &[&str]) {
    let Some((key, rest)) = path.split_first() else {
        return;
    };
    let Some(map) = value.as_object_mut() else {
        return;
    };
    let Some(child) = map.get_mut(*key) else {
        return;
    };
    drop_empty(child, rest);
    let empty = match child {
        Value::Array(list) => list.is_empty(),
        Value::Object(object) => object.is_empty(),
        _ => false,
    };
    if empty {
        map.remove(*key);
    }
}

/// The text to write for `settings`. The file's own text if its JSON is already that (but for
/// empty entries on `path`), so nothing is rewritten for nothing. On uninstall, the exact bytes
/// of the newest backup whose JSON is the same, so that install then uninstall gives the file
/// back as it was, formatting, key order and all. Otherwise the JSON, pretty-printed.
fn finished(
    target: &Path,
    before: Option<&str>,
    settings: &Value,
    uninstall: bool,
    paths: &[&[&str]],
) -> String {
    let same = |text: &str| {
        serde_json::from_str::<Value>(text).is_ok_and(|mut value| {
            for path in paths {
                drop_empty(&mut value, path);
            }
            value == *settings
        })
    };
    if let Some(before) = before.filter(|text| same(text)) {
        return before.to_owned();
    }
    if uninstall {
        for backup in backups(target).into_iter().take(MAX_BACKUPS_COMPARED) {
            // A backup is only a copy: one that cannot be read is passed over.
            if let Ok(Some(existing)) = read(&backup, OFlags::NOFOLLOW) {
                if same(&existing.text) {
                    return existing.text;
                }
            }
        }
    }
    let mut text = serde_json::to_string_pretty(settings).unwrap_or_else(|_| settings.to_string());
    text.push('\n');
    text
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
    let not_object = || file_error(file, format!("`{key}` is not an object"));
    let Value::Object(map) = value else {
        return Err(not_object());
    };
    map.entry(key)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(not_object)
}

mod file;
#[cfg(test)]
mod tests;
mod words;

pub use file::apply;
use file::{backups, read, resolve_links};
use words::shell_words;
