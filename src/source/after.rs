//! After Approve: what an agent's after-tool hooks say it did (`plandesk record AGENT`), as
//! records of work held against its session's approved plan. These hooks never stop or slow
//! their agent: they print nothing, always exit 0, and give up within a moment. A payload is
//! untrusted like any other: sizes bounded, paths kept as names (never opened or followed),
//! a path outside the session's workspace recorded as such.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

use super::SourceError;
use crate::store::{NewWork, SourceKind, WorkKind, WorkOf};

/// The longest path kept (a longer one is not recorded).
const MAX_PATH: usize = 4096;
/// The longest command kept (a longer one is cut, with `…`).
const MAX_COMMAND: usize = 2000;

/// What one hook call reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub kind: SourceKind,
    pub session: String,
    pub work: WorkKind,
    pub path: Option<String>,
    pub command: Option<String>,
    pub exit_code: Option<i64>,
    pub data: Value,
}

impl Report {
    /// The record to add, at `at`.
    pub fn work(&self, at: crate::clock::Millis) -> NewWork<'_> {
        NewWork {
            of: WorkOf::Session {
                kind: self.kind,
                session: &self.session,
            },
            at,
            kind: self.work,
            path: self.path.as_deref(),
            command: self.command.as_deref(),
            exit_code: self.exit_code,
            data: self.data.clone(),
        }
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
}

/// Claude Code's `PostToolUse` (a file written or edited, a command run) and `Stop` (its turn
/// ended). `None`: nothing to record (another tool, another event).
pub fn claude(stdin: &str) -> Result<Option<Report>, SourceError> {
    let input: ClaudeInput = serde_json::from_str(stdin).map_err(|e| SourceError::Input {
        agent: "Claude Code",
        message: e.to_string(),
    })?;
    let report = |work, path, command, exit_code, data| Report {
        kind: SourceKind::ClaudeCode,
        session: input.session_id.clone(),
        work,
        path,
        command,
        exit_code,
        data,
    };
    let tool = input.tool_name.as_deref().unwrap_or("");
    Ok(match (input.hook_event_name.as_str(), tool) {
        ("Stop", _) => Some(report(WorkKind::Finished, None, None, None, json!({}))),
        ("PostToolUse", "Write" | "Edit" | "MultiEdit" | "NotebookEdit") => {
            let named = input.tool_input["file_path"]
                .as_str()
                .or_else(|| input.tool_input["notebook_path"].as_str());
            named
                .and_then(|named| file(&input.cwd, named))
                .map(|(path, outside)| {
                    report(
                        WorkKind::File,
                        Some(path),
                        None,
                        None,
                        json!({"tool": tool, "outside": outside}),
                    )
                })
        }
        ("PostToolUse", "Bash") => input.tool_input["command"].as_str().map(|command| {
            let response = &input.tool_response;
            let exit_code = ["exit_code", "exitCode", "returnCode"]
                .iter()
                .find_map(|key| response[key].as_i64());
            report(
                WorkKind::Command,
                None,
                Some(crate::text::short(command.trim(), MAX_COMMAND)),
                exit_code,
                json!({"tool": tool, "interrupted": response["interrupted"] == true}),
            )
        }),
        _ => None,
    })
}

/// A file an agent names, as recorded: relative to its workspace `cwd` (worked out on the
/// names alone), or absolute and `outside` it. `None` for what is no path to keep.
fn file(cwd: &str, named: &str) -> Option<(String, bool)> {
    if named.is_empty() || named.len() > MAX_PATH || named.chars().any(char::is_control) {
        return None;
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

/// `path` with `.` and `..` worked out on its names (no link is followed: nothing is read).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
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
        .unwrap();
        assert_eq!(write.work, WorkKind::File);
        assert_eq!(write.path.as_deref(), Some("src/a.rs"));
        assert_eq!(write.data["outside"], false);
        let bash = claude(&payload(
            "PostToolUse",
            "Bash",
            json!({"command": " cargo test "}),
            json!({"stdout": "", "exit_code": 101}),
        ))
        .unwrap()
        .unwrap();
        assert_eq!(
            (bash.command.as_deref(), bash.exit_code),
            (Some("cargo test"), Some(101))
        );
        let stop = claude(
            &json!({"session_id": "s1", "cwd": "/p", "hook_event_name": "Stop",
                                  "stop_hook_active": false})
            .to_string(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(stop.work, WorkKind::Finished);
        assert_eq!(
            claude(&payload(
                "PostToolUse",
                "Read",
                json!({"file_path": "/x"}),
                json!({})
            ))
            .unwrap(),
            None
        );
        assert!(claude("{not json").is_err());
    }

    #[test]
    fn paths_outside_the_workspace_are_kept_as_such_and_never_resolved() {
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
