//! Agents with command hooks (Claude Code, Codex, Gemini CLI, Factory Droid, Qwen Code,
//! Copilot CLI): where each one's hooks go, how ours look there, and the merge that puts them in
//! its settings file (or takes them out) beside everyone else's. Ours is recognised by its exact
//! shape, whatever the binary's path.

use std::path::Path;

use rustix::fs::OFlags;
use serde_json::{json, Map, Value};

use super::file::{read, resolve_links};
use super::settings::{drop_empty, finished, object_at, parse};
use super::words::shell_words;
use super::{file_error, Change, InstallError, Places, Target, HOOK_TIMEOUT_SECS};

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
pub(super) const RECORD_TIMEOUT_SECS: u64 = 10;
/// The tools whose use after an approval Claude Code's `PostToolUse` hook records (and
/// `ExitPlanMode`: a plan answered in Claude Code's own dialog).
pub(super) const CLAUDE_RECORDED_TOOLS: &str =
    "ExitPlanMode|Write|Edit|MultiEdit|NotebookEdit|Bash";
/// Gemini CLI's tools whose use `AfterTool` records (its matchers are regular expressions).
const GEMINI_RECORDED_TOOLS: &str = "^(write_file|replace|run_shell_command)$";

/// Factory Droid's tools whose use `PostToolUse` records, and `ExitSpecMode`: a plan answered
/// in Droid's own dialog.
pub(super) const DROID_RECORDED_TOOLS: &str =
    "^(ExitSpecMode|Create|Edit|MultiEdit|ApplyPatch|Execute)$";
/// Copilot CLI's tools whose use `postToolUse` records (a regular expression on the whole name),
/// and `exit_plan_mode`: a plan answered in Copilot's own menu.
pub(super) const COPILOT_RECORDED_TOOLS: &str = "exit_plan_mode|create|edit|bash";
/// Qwen Code's tools whose use `PostToolUse` records (a JavaScript regular expression), and
/// `exit_plan_mode`: a plan answered in Qwen Code's own dialog.
pub(super) const QWEN_RECORDED_TOOLS: &str = "^(exit_plan_mode|write_file|edit|run_shell_command)$";
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
            return super::script::plan(target, uninstall, places)
        }
        Target::KimiCode => return super::kimi::plan(uninstall, places),
        Target::Mcp => return super::mcp::plan(uninstall, places),
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
