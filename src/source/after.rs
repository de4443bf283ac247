//! After Approve: what an agent's after-tool hooks say it did (`plandesk record AGENT`), as
//! records of work held against its session's approved plan. These hooks never stop or slow
//! their agent: they print nothing, always exit 0, and give up within a moment. A payload is
//! untrusted like any other: sizes bounded, paths kept as names (never opened or followed),
//! a path outside the session's workspace recorded as such.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

use super::SourceError;
use crate::store::{NewWork, Source, SourceKind, WorkKind, WorkOf};

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

/// One thing an agent did.
#[derive(Debug, Clone, PartialEq)]
pub struct Work {
    pub kind: WorkKind,
    pub path: Option<String>,
    pub command: Option<String>,
    pub exit_code: Option<i64>,
    pub data: Value,
}

impl Report {
    /// The record to add, at `at`, if there is one.
    pub fn work(&self, at: crate::clock::Millis) -> Option<NewWork<'_>> {
        let work = self.work.as_ref()?;
        Some(NewWork {
            of: WorkOf::Session {
                kind: self.source.kind,
                session: self.source.session.as_deref().unwrap_or_default(),
            },
            at,
            kind: work.kind,
            path: work.path.as_deref(),
            command: work.command.as_deref(),
            exit_code: work.exit_code,
            data: work.data.clone(),
        })
    }
}

#[derive(Debug, Deserialize)]
struct ClaudeInput {
    session_id: String,
    cwd: String,
    hook_event_name: String,
    #[serde(default)]
    tool_name: Option<String>,
    #[serde(default)]
    tool_input: Value,
    #[serde(default)]
    tool_response: Value,
    /// `PostToolUseFailure`'s account of the failure.
    #[serde(default)]
    error: Option<String>,
}

/// Claude Code's `PostToolUse` and `PostToolUseFailure` (a file written or edited, a command
/// run, the plan's own tool gone on) and `Stop` (its turn ended). `None`: another event.
pub fn claude(stdin: &str) -> Result<Option<Report>, SourceError> {
    let input: ClaudeInput = serde_json::from_str(stdin).map_err(|e| SourceError::Input {
        agent: "Claude Code",
        message: e.to_string(),
    })?;
    let tool = input.tool_name.as_deref().unwrap_or("");
    let work = |kind, path, command, exit_code, data| Work {
        kind,
        path,
        command,
        exit_code,
        data,
    };
    let done = match (input.hook_event_name.as_str(), tool) {
        ("Stop", _) => Some(work(WorkKind::Finished, None, None, None, json!({}))),
        ("PostToolUse", "Write" | "Edit" | "MultiEdit" | "NotebookEdit") => {
            let named = input.tool_input["file_path"]
                .as_str()
                .or_else(|| input.tool_input["notebook_path"].as_str());
            named
                .and_then(|named| workspace_path(&input.cwd, named))
                .map(|(path, outside)| {
                    let data = json!({"tool": tool, "outside": outside});
                    work(WorkKind::File, Some(path), None, None, data)
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
                let command = crate::text::short(command.trim(), MAX_COMMAND);
                let data = json!({"tool": tool, "interrupted": response["interrupted"] == true});
                work(WorkKind::Command, None, Some(command), exit_code, data)
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
mod tests {
    use super::*;

    fn payload(event: &str, tool: &str, input: Value, response: Value) -> String {
        json!({"session_id": "s1", "transcript_path": "/t.jsonl", "cwd": "/home/u/proj",
               "hook_event_name": event, "tool_name": tool, "tool_input": input,
               "tool_response": response})
        .to_string()
    }

    #[test]
    fn files_commands_and_the_end_of_a_turn_are_reported() {
        let write = claude(&payload(
            "PostToolUse",
            "Write",
            json!({"file_path": "/home/u/proj/src/a.rs", "content": "x"}),
            json!({}),
        ))
        .unwrap()
        .unwrap()
        .work
        .unwrap();
        assert_eq!(write.kind, WorkKind::File);
        assert_eq!(write.path.as_deref(), Some("src/a.rs"));
        assert_eq!(write.data["outside"], false);
        let bash = claude(&payload(
            "PostToolUse",
            "Bash",
            json!({"command": " cargo test "}),
            json!({"stdout": "", "interrupted": false}),
        ))
        .unwrap()
        .unwrap()
        .work
        .unwrap();
        assert_eq!(
            (bash.command.as_deref(), bash.exit_code),
            (Some("cargo test"), Some(0))
        );
        let mut failed: Value = serde_json::from_str(&payload(
            "PostToolUseFailure",
            "Bash",
            json!({"command": "exit 3"}),
            Value::Null,
        ))
        .unwrap();
        failed["error"] = json!("Exit code 3\noops");
        let failed = claude(&failed.to_string()).unwrap().unwrap().work.unwrap();
        assert_eq!(failed.exit_code, Some(3));
        // The plan's own tool gone on: nothing to record, but the session is heard from.
        let plan = claude(&payload(
            "PostToolUse",
            "ExitPlanMode",
            json!({}),
            json!({"plan": "x"}),
        ))
        .unwrap()
        .unwrap();
        assert_eq!(plan.work, None);
        assert!(plan.answered);
        assert!(!failed_answered(), "another tool answers nothing");
        assert_eq!(plan.source.session.as_deref(), Some("s1"));
        let stop = claude(
            &json!({"session_id": "s1", "cwd": "/p", "hook_event_name": "Stop",
                                  "stop_hook_active": false})
            .to_string(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(stop.work.unwrap().kind, WorkKind::Finished);
        assert!(stop.answered);
        let read = claude(&payload(
            "PostToolUse",
            "Read",
            json!({"file_path": "/x"}),
            json!({}),
        ));
        assert_eq!(read.unwrap().unwrap().work, None);
        let other = claude(&payload("SessionStart", "", json!({}), json!({})));
        assert_eq!(other.unwrap(), None);
        assert!(claude("{not json").is_err());
    }

    fn failed_answered() -> bool {
        claude(&payload(
            "PostToolUse",
            "Bash",
            json!({"command": "ls"}),
            json!({}),
        ))
        .unwrap()
        .unwrap()
        .answered
    }

    #[test]
    fn paths_outside_the_workspace_are_kept_as_such_and_never_resolved() {
        let file = workspace_path;
        assert_eq!(
            file("/home/u/proj", "/home/u/proj/../other/x.rs"),
            Some(("/home/u/other/x.rs".into(), true))
        );
        assert_eq!(
            file("/home/u/proj", "/etc/passwd"),
            Some(("/etc/passwd".into(), true))
        );
        assert_eq!(
            file("/home/u/proj", "lib/./b.rs"),
            Some(("lib/b.rs".into(), false))
        );
        assert_eq!(file("/home/u/proj", "a\u{1b}[2J.rs"), None);
        assert_eq!(file("/home/u/proj", &"a".repeat(MAX_PATH + 1)), None);
        assert_eq!(
            file("/home/u/proj", "/home/u/proj"),
            Some(("/home/u/proj".into(), true))
        );
    }
}
