//! After Approve: what an agent's after-tool hooks say it did (`plandesk record AGENT`), as
//! records of work held against its session's approved plan. These hooks never stop or slow
//! their agent: they print nothing, always exit 0, and give up within a moment. A payload is
//! untrusted like any other: sizes bounded, paths kept as names (never opened or followed),
//! a path outside the session's workspace recorded as such.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

use super::SourceError;
use crate::store::{NewWork, Source, Work, WorkKind, WorkOf};
use crate::vocabulary::SourceKind;

/// Claude Code's tool that ends plan mode.
const PLAN_TOOL: &str = "ExitPlanMode";
/// The longest path kept (a longer one is not recorded).
const MAX_PATH: usize = 4096;
/// The longest command kept (a longer one is cut, with `…`).
const MAX_COMMAND: usize = 2000;

/// What one hook call says: the session it comes from, whether it shows that session's plan
/// was answered (its turn ended, or its plan's tool went on: whatever of it still waits for a
/// person here was answered in the agent), and what it did, if that is work to record.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub source: Source,
    pub answered: bool,
    pub work: Option<Work>,
}

impl Report {
    /// The record to add, at `at`, if there is one.
    pub fn work(&self, at: crate::clock::Millis) -> Option<NewWork<'_>> {
        Some(NewWork {
            of: WorkOf::Session {
                kind: self.source.kind,
                session: self.source.session.as_deref().unwrap_or_default(),
            },
            at,
            work: self.work.clone()?,
        })
    }
}

/// Claude Code's `PostToolUse` and `PostToolUseFailure` (a file written or edited, a command
/// run, the plan's own tool gone on) and `Stop` (its turn ended). `None`: another event.
pub fn claude(stdin: &str) -> Result<Option<Report>, SourceError> {
    let input: HookInput = super::hook_input("Claude Code", stdin)?;
    let tool = input.tool_name.as_deref().unwrap_or("");
    let done = match (input.hook_event_name.as_str(), tool) {
        ("Stop", _) => Some(finished()),
        ("PostToolUse", "Write" | "Edit" | "MultiEdit" | "NotebookEdit") => {
            let named = input.tool_input["file_path"]
                .as_str()
                .or_else(|| input.tool_input["notebook_path"].as_str());
            named
                .and_then(|named| file_work(&input.cwd, named, tool))
                .map(|mut work| {
                    if let Some(diff) = claude_diff(&input.tool_response) {
                        work.data["diff"] = json!(diff);
                    }
                    work
                })
        }
        (event @ ("PostToolUse" | "PostToolUseFailure"), "Bash") => {
            input.tool_input["command"].as_str().map(|command| {
                let response = &input.tool_response;
                // A command that failed says so only in its error: "Exit code 3\n…".
                let exit_code = match event {
                    "PostToolUse" => ["exit_code", "exitCode", "returnCode"]
                        .iter()
                        .find_map(|key| response[key].as_i64())
                        // It went on after a command that succeeded (a failed one is a failure).
                        .or((response["interrupted"] != true).then_some(0)),
                    _ => input.error.as_deref().and_then(|error| {
                        error
                            .strip_prefix("Exit code ")?
                            .split(|c: char| !c.is_ascii_digit() && c != '-')
                            .next()?
                            .parse()
                            .ok()
                    }),
                };
                let mut work = command_work(command, exit_code, tool);
                work.data["interrupted"] = json!(response["interrupted"] == true);
                work
            })
        }
        ("PostToolUse" | "PostToolUseFailure", _) => None,
        _ => return Ok(None),
    };
    // Only what follows an answer: a plan approved in Claude Code's own dialog goes on (its
    // tool's PostToolUse), and one refused there ends the turn (Stop). Other tools may be run
    // by a subagent while the plan waits.
    let answered = input.hook_event_name == "Stop"
        || (input.hook_event_name == "PostToolUse" && tool == PLAN_TOOL);
    Ok(Some(Report {
        source: Source {
            kind: SourceKind::ClaudeCode,
            session: Some(input.session_id),
        },
        answered,
        work: done,
    }))
}

#[derive(Debug, Deserialize)]
struct HookInput {
    session_id: String,
    cwd: String,
    hook_event_name: String,
    #[serde(default)]
    tool_name: Option<String>,
    #[serde(default)]
    tool_input: Value,
    #[serde(default)]
    tool_response: Value,
    /// Claude Code's `PostToolUseFailure`: its account of the failure.
    #[serde(default)]
    error: Option<String>,
}

/// A file a hook reports: kept absolute when `cwd` is (the payload's `cwd`
/// follows the agent's `cd`; the run's own workspace is what progress reads it against).
pub(crate) fn file_work(cwd: &str, named: &str, tool: &str) -> Option<Work> {
    workspace_path(cwd, named).map(|(path, outside)| {
        let path = match outside || !Path::new(cwd).is_absolute() {
            true => path,
            false => lexical(&Path::new(cwd).join(&path))
                .to_string_lossy()
                .into_owned(),
        };
        Work::file(path, json!({"tool": tool, "outside": outside}))
    })
}

/// A command run (cut to a bound), with its exit code when known.
pub(crate) fn command_work(command: &str, exit_code: Option<i64>, tool: &str) -> Work {
    let command = crate::text::short(command.trim(), MAX_COMMAND);
    Work::command(command, exit_code, json!({"tool": tool}))
}

pub(crate) fn finished() -> Work {
    Work::of_kind(WorkKind::Finished, json!({}))
}

/// Gemini CLI's `AfterTool` (`write_file`, `replace`: a file; `run_shell_command`: a command,
/// its exit code read from the `Exit Code: N` line of its output, absent when it succeeded)
/// and `AfterAgent` (its turn ended). `None`: another event.
pub fn gemini(stdin: &str) -> Result<Option<Report>, SourceError> {
    let input: HookInput = super::hook_input("Gemini CLI", stdin)?;
    let tool = input.tool_name.as_deref().unwrap_or("");
    let response = &input.tool_response;
    let failed = response.get("error").is_some_and(|e| !e.is_null());
    let work = match (input.hook_event_name.as_str(), tool) {
        ("AfterAgent", _) => Some(finished()),
        ("AfterTool", "write_file" | "replace") if !failed => written_file(&input, tool),
        ("AfterTool", "run_shell_command") => input.tool_input["command"].as_str().map(|command| {
            let output = response["llmContent"].as_str().unwrap_or_default();
            let exit = exit_code_line(output).or((!failed).then_some(0));
            command_work(command, exit, tool)
        }),
        ("AfterTool", _) => None,
        _ => return Ok(None),
    };
    Ok(Some(Report {
        source: Source {
            kind: SourceKind::Gemini,
            session: Some(input.session_id),
        },
        answered: input.hook_event_name == "AfterAgent",
        work,
    }))
}

/// A file Gemini CLI or Qwen Code wrote or edited: the path it reports, with its diff.
fn written_file(input: &HookInput, tool: &str) -> Option<Work> {
    let shown = &input.tool_response["returnDisplay"];
    let named = shown["filePath"]
        .as_str()
        .or_else(|| input.tool_input["file_path"].as_str())?;
    let mut work = file_work(&input.cwd, named, tool)?;
    if let Some(diff) = shown["fileDiff"].as_str() {
        work.data["diff"] = json!(bounded_diff(diff.to_owned()));
    }
    Some(work)
}

/// The exit code in a shell tool's account of a command (its `Exit Code: N` line).
fn exit_code_line(output: &str) -> Option<i64> {
    output
        .lines()
        .find_map(|line| line.trim().strip_prefix("Exit Code: "))
        .and_then(|code| code.trim().parse().ok())
}

/// Qwen Code's `PostToolUse` (`write_file`, `edit`: a file; `run_shell_command`: a command that
/// succeeded; `exit_plan_mode`: a plan approved in its own dialog), `PostToolUseFailure` (a
/// command that failed, its exit code in its error) and `Stop` (its turn ended). `None`: another
/// event.
pub fn qwen(stdin: &str) -> Result<Option<Report>, SourceError> {
    let input: HookInput = super::hook_input("Qwen Code", stdin)?;
    let tool = input.tool_name.as_deref().unwrap_or("");
    let event = input.hook_event_name.as_str();
    let work = match (event, tool) {
        ("Stop", _) => Some(finished()),
        ("PostToolUse", "write_file" | "edit") => written_file(&input, tool),
        ("PostToolUse" | "PostToolUseFailure", "run_shell_command") => {
            input.tool_input["command"].as_str().map(|command| {
                let exit = match event {
                    "PostToolUse" => input.tool_response["llmContent"]
                        .as_str()
                        .and_then(exit_code_line)
                        .or(Some(0)),
                    _ => input.error.as_deref().and_then(exit_code_line),
                };
                command_work(command, exit, tool)
            })
        }
        ("PostToolUse" | "PostToolUseFailure", _) => None,
        _ => return Ok(None),
    };
    Ok(Some(Report {
        source: Source {
            kind: SourceKind::QwenCode,
            session: Some(input.session_id),
        },
        answered: event == "Stop" || (event == "PostToolUse" && tool == "exit_plan_mode"),
        work,
    }))
}

/// Factory Droid's `PostToolUse` (`Create`, `Edit`, `MultiEdit`, `ApplyPatch`: a file;
/// `Execute`: a command, its exit code from the `[Process exited with code N]` its output ends
/// with; `ExitSpecMode`: a plan approved in its own dialog) and `Stop` (its turn ended). Droid
/// reports only tools that succeeded, each `tool_response` a string. `None`: another event.
pub fn droid(stdin: &str) -> Result<Option<Report>, SourceError> {
    let input: HookInput = super::hook_input("Factory Droid", stdin)?;
    let tool = input.tool_name.as_deref().unwrap_or("");
    let event = input.hook_event_name.as_str();
    let response = input.tool_response.as_str().unwrap_or_default();
    let work = match (event, tool) {
        ("Stop", _) => Some(finished()),
        ("PostToolUse", "Create" | "Edit" | "MultiEdit" | "ApplyPatch") => {
            let reported = serde_json::from_str::<Value>(response).unwrap_or_default();
            reported["file_path"]
                .as_str()
                .or_else(|| input.tool_input["file_path"].as_str())
                .and_then(|named| file_work(&input.cwd, named, tool))
        }
        ("PostToolUse", "Execute") => input.tool_input["command"].as_str().map(|command| {
            let exit = response
                .trim_end()
                .rsplit_once("[Process exited with code ")
                .and_then(|(_, code)| code.strip_suffix(']')?.parse().ok());
            command_work(command, exit, tool)
        }),
        ("PostToolUse", _) => None,
        _ => return Ok(None),
    };
    Ok(Some(Report {
        source: Source {
            kind: SourceKind::Droid,
            session: Some(input.session_id),
        },
        answered: event == "Stop" || (event == "PostToolUse" && tool == "ExitSpecMode"),
        work,
    }))
}

/// Copilot CLI's `postToolUse` (`create`, `edit`: a file; `bash`: a command, its exit code
/// from the `<shellId: N completed with exit code C>` its output ends with; `exit_plan_mode`: a
/// plan approved in its own menu) and `agentStop` (its turn ended). Copilot's payloads are
/// camelCase and name no event: a `toolResult` is a tool's, a `stopReason` the end of a turn.
/// `None`: anything else.
pub fn copilot(stdin: &str) -> Result<Option<Report>, SourceError> {
    let input: Value = super::hook_input("Copilot CLI", stdin)?;
    let (Some(session), Some(cwd)) = (input["sessionId"].as_str(), input["cwd"].as_str()) else {
        return Err(SourceError::Input {
            agent: "Copilot CLI",
            message: "no sessionId or cwd".into(),
        });
    };
    let tool = input["toolName"].as_str().unwrap_or_default();
    let args = &input["toolArgs"];
    let ended = input.get("stopReason").is_some() && input.get("toolName").is_none();
    let used = input["toolResult"].is_object();
    let work = if ended {
        Some(finished())
    } else if !used {
        return Ok(None);
    } else {
        match tool {
            "create" | "edit" => args["path"]
                .as_str()
                .and_then(|named| file_work(cwd, named, tool)),
            "bash" => args["command"].as_str().map(|command| {
                let output = input["toolResult"]["textResultForLlm"]
                    .as_str()
                    .unwrap_or_default();
                let exit = output
                    .trim_end()
                    .rsplit_once(" completed with exit code ")
                    .and_then(|(_, code)| code.strip_suffix('>')?.trim().parse().ok());
                command_work(command, exit, tool)
            }),
            _ => None,
        }
    };
    Ok(Some(Report {
        source: Source {
            kind: SourceKind::Copilot,
            session: Some(session.to_owned()),
        },
        answered: ended || tool == "exit_plan_mode",
        work,
    }))
}

/// What Plandesk's OpenCode plugin sends after a tool ran (`{session_id, cwd, tool, args,
/// output, exit_code?}`: `write`, `edit`, `multiedit`: a file; `apply_patch`: the files its
/// patch names; `bash`: a command) or when the session went idle (`{session_id, cwd, event:
/// "idle"}`: its turn ended). `None`: another tool. Kilo CLI runs the same plugin, and Pi's
/// extension sends the same (`kind`: which of them).
pub fn plugin(stdin: &str, kind: SourceKind) -> Result<Option<Vec<Report>>, SourceError> {
    let agent = kind.agent_name();
    let input: Value = super::hook_input(agent, stdin)?;
    let (Some(session), Some(cwd)) = (input["session_id"].as_str(), input["cwd"].as_str()) else {
        return Err(SourceError::Input {
            agent,
            message: "no session_id or cwd".into(),
        });
    };
    let idle = input["event"] == "idle";
    let tool = input["tool"].as_str().unwrap_or_default();
    let args = &input["args"];
    let works: Vec<Work> = match tool {
        _ if idle => vec![finished()],
        "write" | "edit" | "patch" | "multiedit" => ["filePath", "file_path", "path"]
            .iter()
            .find_map(|key| args[key].as_str())
            .and_then(|named| file_work(cwd, named, tool))
            .into_iter()
            .collect(),
        // Codex's patch format.
        "apply_patch" => patch_files(args["patchText"].as_str().unwrap_or_default())
            .iter()
            .filter_map(|named| file_work(cwd, named, tool))
            .collect(),
        "bash" => args["command"]
            .as_str()
            .map(|command| command_work(command, input["exit_code"].as_i64(), tool))
            .into_iter()
            .collect(),
        _ => return Ok(None),
    };
    let source = Source {
        kind,
        session: Some(session.to_owned()),
    };
    let report = |work| Report {
        source: source.clone(),
        answered: idle,
        work,
    };
    Ok(Some(match works.is_empty() {
        true => vec![report(None)],
        false => works.into_iter().map(|work| report(Some(work))).collect(),
    }))
}

/// Codex's `PostToolUse` (`apply_patch`: the files its patch adds, updates, moves or deletes;
/// `Bash`: a command, whose exit code Codex does not report) and `Stop` (its turn ended).
/// `None`: another event.
pub fn codex(stdin: &str) -> Result<Option<Vec<Report>>, SourceError> {
    let input: HookInput = super::hook_input("Codex", stdin)?;
    let tool = input.tool_name.as_deref().unwrap_or("");
    let works: Vec<Work> = match (input.hook_event_name.as_str(), tool) {
        ("Stop", _) => vec![finished()],
        ("PostToolUse", "apply_patch") => {
            let patch = input.tool_input["command"]
                .as_str()
                .or_else(|| input.tool_input["input"].as_str())
                .unwrap_or_default();
            patch_files(patch)
                .iter()
                .filter_map(|named| file_work(&input.cwd, named, tool))
                .collect()
        }
        ("PostToolUse", "Bash") => input.tool_input["command"]
            .as_str()
            .map(|command| vec![command_work(command, None, tool)])
            .unwrap_or_default(),
        ("PostToolUse", _) => Vec::new(),
        _ => return Ok(None),
    };
    let source = Source {
        kind: SourceKind::Codex,
        session: Some(input.session_id),
    };
    // Codex's Stop is also the hook its plan is reviewed by: it answers nothing here.
    let reports = if works.is_empty() {
        vec![Report {
            source,
            answered: false,
            work: None,
        }]
    } else {
        works
            .into_iter()
            .map(|work| Report {
                source: source.clone(),
                answered: false,
                work: Some(work),
            })
            .collect()
    };
    Ok(Some(reports))
}

/// The most of one change's diff kept.
const MAX_DIFF: usize = 32 * 1024;

/// `diff`, cut to [`MAX_DIFF`] (on a character boundary, saying so).
fn bounded_diff(diff: String) -> String {
    crate::text::cut_to(diff, MAX_DIFF, "\n… (cut: the change is longer)\n")
}

/// What Claude Code says a Write or Edit changed, as a unified diff: its `structuredPatch`
/// hunks, or a created file's content.
fn claude_diff(response: &Value) -> Option<String> {
    let mut diff = String::new();
    if let Some(hunks) = response["structuredPatch"]
        .as_array()
        .filter(|h| !h.is_empty())
    {
        for hunk in hunks.iter().take(200) {
            let n = |key: &str| hunk[key].as_u64().unwrap_or(0);
            diff.push_str(&format!(
                "@@ -{},{} +{},{} @@\n",
                n("oldStart"),
                n("oldLines"),
                n("newStart"),
                n("newLines")
            ));
            for line in hunk["lines"].as_array().into_iter().flatten() {
                diff.push_str(line.as_str().unwrap_or_default());
                diff.push('\n');
            }
            if diff.len() > MAX_DIFF {
                break;
            }
        }
    } else if let Some(content) = response["content"].as_str() {
        for line in content.lines() {
            diff.push('+');
            diff.push_str(line);
            diff.push('\n');
            if diff.len() > MAX_DIFF {
                break;
            }
        }
    }
    (!diff.is_empty()).then(|| bounded_diff(diff))
}

/// The files an `apply_patch` patch names (`*** Add File: P`, `*** Update File: P`, `*** Move
/// to: Q`, `*** Delete File: P`), in order, each once; at most a few hundred.
fn patch_files(patch: &str) -> Vec<String> {
    const HEADERS: [&str; 4] = [
        "*** Add File: ",
        "*** Update File: ",
        "*** Move to: ",
        "*** Delete File: ",
    ];
    let mut files: Vec<String> = Vec::new();
    for line in patch.lines() {
        let named = HEADERS
            .iter()
            .find_map(|header| line.strip_prefix(header))
            .map(str::trim);
        if let Some(named) = named.filter(|n| !n.is_empty()) {
            if !files.iter().any(|f| f == named) && files.len() < 500 {
                files.push(named.to_owned());
            }
        }
    }
    files
}

/// A file an agent names, as recorded: relative to its workspace `cwd` (worked out on the
/// names alone), or absolute and `outside` it. With no `cwd` (a client on another machine) a
/// relative path is the workspace's and any other outside it. `None` for what is no path to
/// keep.
pub fn workspace_path(cwd: &str, named: &str) -> Option<(String, bool)> {
    if named.is_empty() || named.len() > MAX_PATH || named.chars().any(char::is_control) {
        return None;
    }
    if cwd.is_empty() {
        let path = lexical(Path::new(named));
        let inside = path.is_relative() && !path.as_os_str().is_empty() && !path.starts_with("..");
        return Some((path.to_string_lossy().into_owned(), !inside));
    }
    let cwd = lexical(Path::new(cwd));
    let path = lexical(&cwd.join(named));
    match path.strip_prefix(&cwd) {
        Ok(inside) if cwd.is_absolute() && !inside.as_os_str().is_empty() => {
            Some((inside.to_string_lossy().into_owned(), false))
        }
        _ => Some((path.to_string_lossy().into_owned(), true)),
    }
}

/// `path` with `.` and `..` worked out on its names (no link is followed: nothing is read); a
/// relative path keeps the `..` that lead above it.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                let above = matches!(out.components().next_back(), Some(Component::ParentDir))
                    || out.as_os_str().is_empty();
                if above {
                    out.push("..");
                } else {
                    out.pop();
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests;
