//! Kimi Code: a `PreToolUse` hook on `ExitPlanMode` (`plandesk hook kimi-code`) in its
//! `config.toml`. The tool carries no plan: the model writes it to the session's plan file,
//! `sessions/<folder>/<session_id>/agents/<agent>/plans/<slug>.md` in Kimi Code's home
//! (`$KIMI_CODE_HOME`, else `~/.kimi-code`), named afresh each time plan mode is entered and
//! rewritten in place when revised. The agent in plan mode, and its plan's id, are in the
//! agent's `wire.jsonl`; each call makes a copy of the plan file (`plan/<id>/v<N>.md`) before
//! the hook runs: the hook reviews that copy, and only while the file still holds it. Once
//! approved, Kimi Code reads the file again: an
//! approval goes out only if it still holds the approved plan (see `review_plan`). A deny's
//! reason is what the model reads as the tool's error, and it stays in plan mode; an allow ends
//! plan mode. Kimi Code lets the plan through when a hook times out (its `timeout`, at most
//! 600 s), crashes, exits 1 or prints what it cannot read, so every answer here is explicit,
//! within that timeout, and a deny exits 2 (a block whatever stdout holds).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use super::{read_plan_file, Answer, Call, SourceError};
use crate::review::{ExternalPlan, PlanFile};
use crate::store::Source;
use crate::vocabulary::SourceKind;

const AGENT: &str = "Kimi Code";
pub const TOOL: &str = "ExitPlanMode";
pub const EVENT: &str = "PreToolUse";
/// Kimi Code's home, where its config and sessions are.
pub const HOME_ENV: &str = "KIMI_CODE_HOME";
/// How long Kimi Code waits for a hook whose entry sets no `timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest `timeout` Kimi Code takes (one longer drops every hook of the file).
pub const MAX_TIMEOUT_SECS: u64 = 600;
/// The most entries of a folder looked through for the session and its plan.
const MAX_ENTRIES: usize = 10_000;
/// The most of an agent's `wire.jsonl` read for whether it is in plan mode (its entering is
/// a few turns back, near the end).
const MAX_WIRE_TAIL: u64 = 8 * 1024 * 1024;
/// The largest `config.toml` read for the hook's timeout.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Deserialize)]
struct Input {
    session_id: String,
    cwd: String,
    #[serde(default)]
    hook_event_name: Option<String>,
    tool_name: String,
}

/// Kimi Code's home: `$KIMI_CODE_HOME`, else `~/.kimi-code`. `env` reads the environment.
pub fn home(env: &impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    super::agent_dir(env, HOME_ENV, ".kimi-code")
}

/// Parses the hook's stdin; the plan is read from the session's plan file under `home`.
pub fn parse(stdin: &str, home: Option<&Path>) -> Result<Call, SourceError> {
    let input: Input = super::hook_input(AGENT, stdin)?;
    if input.tool_name != TOOL {
        return Ok(Call::NotOurs);
    }
    super::check_event(AGENT, input.hook_event_name.as_deref(), EVENT)?;
    let home =
        home.ok_or_else(|| SourceError::NoPlan(format!("neither ${HOME_ENV} nor $HOME is set")))?;
    let (current, request) = current_plan(home, &input.session_id)?;
    let current = match current {
        Current::One(current) => current,
        Current::None => {
            return Ok(Call::Unusable(format!(
                "No plan was found for this session in plan mode. Write the complete plan to \
                 the plan file plan mode named, then call {TOOL} again."
            )))
        }
        Current::Many => {
            return Ok(Call::Unusable(format!(
                "More than one agent of this session is in plan mode, and Plandesk cannot \
                 tell whose plan this is, so it is not approved. Leave plan mode in the others, \
                 then call {TOOL} again."
            )))
        }
    };
    let plans = current.agent.join("plans");
    let name = format!("{}.md", current.id);
    let path = plans.join(&name);
    // What Kimi Code presents: the copy it made of the plan file for this call (written, and
    // waited for, before the hook runs); the file must still hold it.
    let presented = newest_copy(&current.agent.join("plan").join(&current.id));
    let text = match (is_folder(&plans).then(|| read_plan_file(&path)), presented) {
        (Some(Ok(text)), Some(Ok(presented))) if text == presented => text,
        (Some(Ok(_)), Some(Ok(_))) => {
            return Ok(Call::Unusable(format!(
                "The plan file {} changed after {TOOL} was called. Call {TOOL} again to \
                 present it as it is now.",
                path.display()
            )))
        }
        (Some(Err(err)), _) | (_, Some(Err(err))) => {
            return Ok(Call::Unusable(format!("{err}. Write the plan again.")))
        }
        _ => {
            return Ok(Call::Unusable(format!(
                "Kimi Code kept no copy of this plan. Call {TOOL} again."
            )))
        }
    };
    if let Some(why) = super::unusable_plan(&text, TOOL, "in the plan file") {
        return Ok(Call::Unusable(why));
    }
    Ok(Call::Review(Box::new(ExternalPlan {
        source: Source {
            kind: SourceKind::KimiCode,
            session: Some(input.session_id),
        },
        prompt: super::plan_prompt(request.as_deref(), AGENT, &input.cwd),
        cwd: input.cwd,
        tool_name: TOOL.into(),
        path: path.display().to_string(),
        text,
        item_id: None,
        submitter: None,
        // Kimi Code reads the file again once the plan is approved: what it goes on with is
        // checked then, and a reviewer's edit is written there.
        file: Some(PlanFile { root: plans, name }),
    })))
}

/// The agent of a session in plan mode, and its plan's id (the plan file is `plans/<id>.md`
/// in the agent's folder, Kimi Code's copies of it `plan/<id>/v<N>.md`).
#[derive(Debug)]
struct InPlanMode {
    agent: PathBuf,
    id: String,
}

/// Which of a session's agents are in plan mode.
#[derive(Debug)]
enum Current {
    None,
    One(InPlanMode),
    Many,
}

/// The session's agent in plan mode: each agent's `wire.jsonl` records it entering plan mode
/// (`plan_mode.enter`, with the plan's id) and leaving it (`plan_mode.exit`, `.cancel`), a turn
/// or more before its `ExitPlanMode` can be called. The session's folder is found by name
/// among the work folders' (a session id is a plain name: one that is not is refused); no
/// folder or file is followed through a link, and a log is read as every file an agent names
/// (its last [`MAX_WIRE_TAIL`] bytes): one that cannot be read is an error, not passed over.
/// Beside it, the request the person typed, from the main agent's log (whichever agent plans).
fn current_plan(home: &Path, session: &str) -> Result<(Current, Option<String>), SourceError> {
    if !plain_name(session) {
        return Err(SourceError::Input {
            agent: AGENT,
            message: "session_id is not a plain name".into(),
        });
    }
    let sessions = home.join("sessions");
    if std::fs::symlink_metadata(&sessions).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(SourceError::NoPlan(format!(
            "Kimi Code's sessions folder {} is a symbolic link, which Plandesk does not \
             follow; link Kimi Code's whole home folder instead (that link is followed), or \
             set ${HOME_ENV} to the folder on the other disk",
            sessions.display()
        )));
    }
    let Some(dir) = folders(&sessions)
        .map(|work| work.join(session))
        .find(|dir| is_folder(dir))
    else {
        return Ok((Current::None, None));
    };
    let mut found = Vec::new();
    let mut request = None;
    for agent in folders(&dir.join("agents")) {
        let wire = match super::read_tail(&agent.join("wire.jsonl"), MAX_WIRE_TAIL) {
            Ok(wire) => wire,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => {
                return Err(SourceError::NoPlan(format!(
                    "Kimi Code's record of an agent cannot be read: {err}"
                )))
            }
        };
        if agent.file_name().is_some_and(|name| name == "main") {
            request = super::first_user_request_in(&wire);
        }
        let mut id = None;
        for line in wire.lines().filter(|line| line.contains("plan_mode.")) {
            let Ok(entry) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            match entry["type"].as_str() {
                Some("plan_mode.enter") => id = entry["id"].as_str().map(str::to_owned),
                Some("plan_mode.exit" | "plan_mode.cancel") => id = None,
                _ => {}
            }
        }
        if let Some(id) = id {
            if !plain_name(&id) {
                return Err(SourceError::Input {
                    agent: AGENT,
                    message: "a plan id is not a plain name".into(),
                });
            }
            found.push(InPlanMode { agent, id });
        }
    }
    let current = match found.len() {
        0 => Current::None,
        1 => Current::One(found.remove(0)),
        _ => Current::Many,
    };
    Ok((current, request))
}

/// The newest of Kimi Code's copies of a plan (`v<N>.md`, the highest N) in `dir`, read as a
/// plan file is; `None` if there is none.
fn newest_copy(dir: &Path) -> Option<Result<String, SourceError>> {
    let newest = entries(dir)
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?;
            let version: u64 = name.strip_prefix('v')?.strip_suffix(".md")?.parse().ok()?;
            Some((version, path))
        })
        .max_by_key(|(version, _)| *version)?;
    Some(read_plan_file(&newest.1))
}

/// Whether `name` names a file in a folder, and nothing else (no `..`, no `/`).
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '\0'])
}

/// Whether `path` is a folder itself (not a link to one).
fn is_folder(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// The entries of a folder, at most [`MAX_ENTRIES`]; none if it cannot be read or is a link.
fn entries(dir: &Path) -> impl Iterator<Item = PathBuf> {
    is_folder(dir)
        .then(|| std::fs::read_dir(dir))
        .into_iter()
        .flatten()
        .flatten()
        .take(MAX_ENTRIES)
        .filter_map(|entry| entry.ok().map(|e| e.path()))
}

/// The folders in a folder (links to folders left out).
fn folders(dir: &Path) -> impl Iterator<Item = PathBuf> {
    entries(dir).filter(|path| is_folder(path))
}

/// The hook's stdout for a decision: an allow to approve (the model goes on with the plan file
/// as it is, which holds the approved plan; Kimi Code passes nothing of an allow on, so
/// approval notes stay in Plandesk's record), an explicit deny otherwise.
pub fn answer(answer: &Answer) -> String {
    match answer.denial() {
        None => output(json!({"permissionDecision": "allow"})),
        Some(reason) => deny(&reason),
    }
}

/// A deny whose reason the model reads.
pub fn deny(reason: &str) -> String {
    output(json!({"permissionDecision": "deny", "permissionDecisionReason": reason}))
}

/// The exit status `answer` is printed with: 2 for a deny, which Kimi Code takes as a block
/// whatever stdout holds (its reason then read from stderr); 0 for the rest.
pub fn exit_status(answer: &str) -> u8 {
    let denied = serde_json::from_str::<Value>(answer)
        .is_ok_and(|value| value["hookSpecificOutput"]["permissionDecision"] == "deny");
    if denied {
        2
    } else {
        0
    }
}

/// Not approved because we failed: an explicit deny.
pub fn failure(err: &SourceError) -> String {
    deny(&err.denial())
}

fn output(mut decision: Value) -> String {
    decision["hookEventName"] = json!(EVENT);
    json!({ "hookSpecificOutput": decision }).to_string()
}

/// How long Kimi Code waits for this hook: the shortest `timeout` (seconds; 30 when unset) of
/// the `PreToolUse` hooks in its `config.toml` that run `plandesk hook kimi-code`. Where none
/// is found (another config, a wrapper script), Kimi Code's default, 30 s: what it waits
/// unless told otherwise.
pub fn hook_timeout(env: impl Fn(&str) -> Option<OsString>) -> Duration {
    home(&env)
        .and_then(|home| super::read_settings_file(&home.join("config.toml"), MAX_CONFIG_BYTES))
        .and_then(|text| timeouts_of(&text).min())
        .unwrap_or(DEFAULT_TIMEOUT)
}

/// A `timeout` as Kimi Code reads it: a whole number of seconds, written as an integer or as
/// a float with nothing after its point (`30.0`); `None` for anything else.
pub(crate) fn whole_seconds(timeout: &toml_edit::Item) -> Option<u64> {
    match (timeout.as_integer(), timeout.as_float()) {
        (Some(secs), _) => u64::try_from(secs).ok(),
        (None, Some(secs)) if secs.fract() == 0.0 && (0.0..=1e9).contains(&secs) => {
            Some(secs as u64)
        }
        _ => None,
    }
}

/// The `timeout` of each `[[hooks]]` entry in a `config.toml` that runs `plandesk hook
/// kimi-code` on `PreToolUse` (30 s where it has none).
fn timeouts_of(text: &str) -> impl Iterator<Item = Duration> {
    let document = text.parse::<toml_edit::DocumentMut>().ok();
    let hooks: Vec<Duration> = document
        .as_ref()
        .and_then(|d| d.get("hooks"))
        .and_then(toml_edit::Item::as_array_of_tables)
        .into_iter()
        .flat_map(|hooks| hooks.iter())
        .filter(|hook| hook.get("event").and_then(toml_edit::Item::as_str) == Some(EVENT))
        .filter(|hook| {
            hook.get("command")
                .and_then(toml_edit::Item::as_str)
                .and_then(super::install::shell_words)
                .is_some_and(|words| {
                    words
                        .windows(2)
                        .any(|w| w[0] == "hook" && w[1] == "kimi-code")
                })
        })
        .map(|hook| {
            hook.get("timeout")
                .and_then(whole_seconds)
                .map_or(DEFAULT_TIMEOUT, Duration::from_secs)
        })
        .collect();
    hooks.into_iter()
}

/// What Kimi Code's after-tool hooks say it did (`plandesk record kimi-code`): `PostToolUse`
/// (`Write`, `Edit`: a file; `Bash`: a command that succeeded; `ExitPlanMode`: a plan
/// approved in its own dialog), `PostToolUseFailure` (a command that failed, its exit code in
/// its error's `Command failed with exit code: N.`) and `Stop` (its turn ended). A file in
/// Kimi Code's home (a plan file) is none of the work. `None`: another event.
pub fn report(
    stdin: &str,
    home: Option<&Path>,
) -> Result<Option<super::after::Report>, SourceError> {
    use super::after::{command_work, file_work, finished};
    let input: Value = super::hook_input(AGENT, stdin)?;
    let (Some(session), Some(cwd)) = (input["session_id"].as_str(), input["cwd"].as_str()) else {
        return Err(SourceError::Input {
            agent: AGENT,
            message: "no session_id or cwd".into(),
        });
    };
    let event = input["hook_event_name"].as_str().unwrap_or_default();
    let tool = input["tool_name"].as_str().unwrap_or_default();
    let args = &input["tool_input"];
    let work = match (event, tool) {
        ("Stop", _) => Some(finished()),
        ("PostToolUse", "Write" | "Edit") => args["path"]
            .as_str()
            .filter(|named| !home.is_some_and(|home| Path::new(named).starts_with(home)))
            .and_then(|named| file_work(cwd, named, tool)),
        ("PostToolUse", "Bash") => args["command"]
            .as_str()
            .map(|command| command_work(command, Some(0), tool)),
        ("PostToolUseFailure", "Bash") => args["command"].as_str().map(|command| {
            let exit = input["error"]["message"]
                .as_str()
                .and_then(|error| error.trim_end().rsplit_once("exit code: "))
                .and_then(|(_, code)| code.trim_end_matches('.').parse().ok());
            command_work(command, exit, tool)
        }),
        ("PostToolUse" | "PostToolUseFailure", _) => None,
        _ => return Ok(None),
    };
    Ok(Some(super::after::Report {
        source: Source {
            kind: SourceKind::KimiCode,
            session: Some(session.to_owned()),
        },
        answered: event == "Stop" || (event == "PostToolUse" && tool == TOOL),
        work,
    }))
}

#[cfg(test)]
#[path = "kimi/tests.rs"]
mod tests;
