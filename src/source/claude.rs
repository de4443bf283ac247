//! Claude Code: a `PermissionRequest` hook on `ExitPlanMode` (`plandesk hook claude-code`).
//! The plan comes in `tool_input` (`plan`, `planFilePath`), or, when that is empty, from the
//! plan file the session's transcript names. Approval is an `allow` that echoes the input (a
//! bare allow is ignored by Claude Code); a rejection is a `deny` whose message the model reads
//! as the tool's error, with `interrupt` when the model must stop and wait for the user.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

#[cfg(test)]
use super::Approval;
use super::{read_plan_file, Answer, SourceError};
use crate::review::{ExternalPlan, PlanFile};
use crate::store::Source;
use crate::token::Caller;
use crate::vocabulary::SourceKind;
use crate::workspace::MAX_FILE_BYTES;

const AGENT: &str = "Claude Code";
const TOOL: &str = "ExitPlanMode";
/// The most of a transcript read when looking for the plan (its tail is what matters).
const MAX_TRANSCRIPT: u64 = 32 * 1024 * 1024;

#[derive(Debug, Deserialize)]
struct Input {
    session_id: String,
    #[serde(default)]
    transcript_path: Option<String>,
    cwd: String,
    #[serde(default)]
    hook_event_name: Option<String>,
    tool_name: String,
    #[serde(default)]
    tool_input: Value,
}

/// A parsed hook call: the plan to review, and the input to echo on approval.
#[derive(Debug)]
pub struct Call {
    pub plan: ExternalPlan,
    tool_input: Value,
}

/// Parses the hook's stdin. `Ok(None)`: not a plan (another tool); Claude Code asks as usual.
pub fn parse(stdin: &str) -> Result<Option<Call>, SourceError> {
    let Some(input) = read_input(stdin)? else {
        return Ok(None);
    };
    let (path, text) = find_plan(&input)?;
    let request = input
        .transcript_path
        .as_deref()
        .and_then(|t| super::first_user_request(Path::new(t), MAX_TRANSCRIPT));
    let prompt = super::plan_prompt(request.as_deref(), AGENT, &input.cwd);
    let session = input.session_id.clone();
    let file = PlanFile::inside(Path::new(&path), &writable_roots(&input.cwd));
    let mut call = call(input, path, text, prompt, session, None);
    call.plan.file = file;
    Ok(Some(call))
}

/// Where a reviewer's edit of a Claude Code plan may be written back: its plans folder
/// (`$CLAUDE_CONFIG_DIR/plans`, else `~/.claude/plans`) and the session's workspace.
fn writable_roots(cwd: &str) -> Vec<PathBuf> {
    let config = std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".claude")));
    super::plan_roots(cwd, config.map(|c| c.join("plans")))
}

/// Parses what Claude Code's `type: "http"` hook POSTs to `plandesk serve`, sent with the
/// token of `caller`. That machine's files are not ours to read, and the paths in the
/// payload are whatever the sender wrote: the plan must be in `tool_input.plan`, and no path
/// in the payload (`transcript_path`, `planFilePath`) is ever opened.
pub fn parse_remote(body: &str, caller: &Caller) -> Result<Option<Call>, SourceError> {
    let Some(input) = read_input(body)? else {
        return Ok(None);
    };
    let text = input
        .tool_input
        .get("plan")
        .and_then(Value::as_str)
        .filter(|plan| !plan.trim().is_empty())
        .ok_or_else(|| {
            SourceError::NoPlan(
                "over HTTP the plan must be in tool_input.plan; Plandesk opens no file a request \
                 names (transcript_path, planFilePath)"
                    .into(),
            )
        })?
        .to_owned();
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(SourceError::NoPlan(format!(
            "the plan is {} bytes; plans may be at most {MAX_FILE_BYTES}",
            text.len()
        )));
    }
    // Only a name for the thread: the file is on the agent's machine.
    let path = input
        .tool_input
        .get("planFilePath")
        .and_then(Value::as_str)
        .map(|p| crate::text::short(p, MAX_REMOTE_PATH))
        .unwrap_or_else(|| "plan.md".into());
    let prompt = format!(
        "{AGENT} session in {} (token {})",
        crate::text::short(&input.cwd, 200),
        caller.name
    );
    // One token's sessions never mix with another's (or with this machine's own hooks).
    let session = format!(
        "{}/{}",
        caller.session_owner(),
        crate::text::short(&input.session_id, 200)
    );
    let submitter = Some(caller.name.clone());
    Ok(Some(call(input, path, text, prompt, session, submitter)))
}

/// The longest plan path kept from a remote payload (it only names the plan).
const MAX_REMOTE_PATH: usize = 512;

/// The hook's input, if it is a plan (`None`: another tool).
fn read_input(json: &str) -> Result<Option<Input>, SourceError> {
    let input: Input = super::hook_input(AGENT, json)?;
    if input.tool_name != TOOL {
        return Ok(None);
    }
    super::check_event(AGENT, input.hook_event_name.as_deref(), "PermissionRequest")?;
    Ok(Some(input))
}

fn call(
    input: Input,
    path: String,
    text: String,
    prompt: String,
    session: String,
    submitter: Option<String>,
) -> Call {
    // Only what the person reviews goes back with an allow: any other field of the input
    // (`allowedPrompts`, which once granted commands, or one a later version adds) is
    // neither shown nor part of the revision, so it is not approved.
    let tool_input = json!({"plan": text, "planFilePath": path});
    Call {
        plan: ExternalPlan {
            source: Source {
                kind: SourceKind::ClaudeCode,
                session: Some(session),
            },
            cwd: input.cwd,
            prompt,
            tool_name: TOOL.into(),
            path,
            text,
            item_id: None,
            submitter,
            file: None,
        },
        tool_input,
    }
}

/// The plan and its file: from the input, else the file the transcript names, else the last
/// `ExitPlanMode` call in the transcript.
fn find_plan(input: &Input) -> Result<(String, String), SourceError> {
    let given_plan = input.tool_input.get("plan").and_then(Value::as_str);
    let given_path = input.tool_input.get("planFilePath").and_then(Value::as_str);
    match (given_plan, given_path) {
        (Some(plan), Some(path)) => return Ok((path.to_owned(), plan.to_owned())),
        (Some(plan), None) => return Ok(("plan.md".into(), plan.to_owned())),
        (None, Some(path)) => return Ok((path.to_owned(), read_plan_file(Path::new(path))?)),
        (None, None) => {}
    }
    let transcript = input
        .transcript_path
        .as_deref()
        .ok_or_else(|| SourceError::NoPlan("no plan in the input and no transcript".into()))?;
    let lines = read_tail(Path::new(transcript))?;
    let mut file = None;
    let mut called = None;
    for line in lines.lines() {
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let Some(path) = entry
            .pointer("/attachment/planFilePath")
            .and_then(Value::as_str)
        {
            file = Some(path.to_owned());
        }
        let content = entry.pointer("/message/content").and_then(Value::as_array);
        for block in content.into_iter().flatten() {
            if block["type"] == "tool_use" && block["name"] == TOOL {
                called = block["input"]["plan"].as_str().map(str::to_owned);
            }
        }
    }
    if let Some(path) = file {
        if let Ok(text) = read_plan_file(Path::new(&path)) {
            if !text.trim().is_empty() {
                return Ok((path, text));
            }
        }
    }
    called
        .map(|text| ("plan.md".to_owned(), text))
        .ok_or_else(|| SourceError::NoPlan(format!("the transcript {transcript} names no plan")))
}

fn read_tail(path: &Path) -> Result<String, SourceError> {
    super::read_tail(path, MAX_TRANSCRIPT)
        .map_err(|e| SourceError::NoPlan(format!("{}: {e}", path.display())))
}

/// The hook's stdout for a decision (`None`: print nothing, Claude Code asks as usual).
pub fn answer(call: &Call, answer: &Answer) -> Option<String> {
    let decision = match answer {
        Answer::Approve(approval) => {
            // An allow carries no message: a reviewer's edit and notes travel in the plan
            // handed back.
            let mut input = call.tool_input.clone();
            let addendum = approval.addendum();
            if let (false, Some(fields)) = (addendum.is_empty(), input.as_object_mut()) {
                let plan = match &approval.edit {
                    Some(edit) => edit.markdown.as_str(),
                    None => fields
                        .get("plan")
                        .and_then(Value::as_str)
                        .unwrap_or(&call.plan.text),
                };
                fields.insert("plan".to_owned(), json!(format!("{plan}{addendum}")));
            }
            let mut allow = json!({"behavior": "allow", "updatedInput": input});
            if approval.accept_edits {
                // As Claude Code's own "Yes, and auto-accept edits": for this session.
                allow["updatedPermissions"] = json!([
                    {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
                ]);
            }
            allow
        }
        Answer::Abandoned => return None,
        Answer::Revise(_) => json!({"behavior": "deny", "message": answer.denial()}),
        Answer::Wait | Answer::Expired => {
            json!({"behavior": "deny", "message": answer.denial(), "interrupt": true})
        }
    };
    Some(output(decision))
}

/// The hook's stdout when we failed: not approved, and the model stops (fail closed).
pub fn failure(err: &SourceError) -> String {
    output(json!({"behavior": "deny", "message": err.denial(), "interrupt": true}))
}

fn output(decision: Value) -> String {
    json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}})
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(tool_input: Value, transcript: Option<&Path>) -> String {
        json!({
            "session_id": "s1", "cwd": "/home/u/proj", "permission_mode": "plan",
            "hook_event_name": "PermissionRequest", "tool_name": "ExitPlanMode",
            "tool_input": tool_input,
            "transcript_path": transcript.map(|p| p.display().to_string()),
        })
        .to_string()
    }

    #[test]
    fn the_plan_comes_from_the_input() {
        let call = parse(&input(
            json!({"plan": "# P\n\nDo it", "planFilePath": "/p/brave.md",
                   "allowedPrompts": [{"tool": "Bash", "prompt": "run anything"}],
                   "unreviewed": true}),
            None,
        ))
        .unwrap()
        .unwrap();
        assert_eq!(call.plan.path, "/p/brave.md");
        assert_eq!(call.plan.text, "# P\n\nDo it");
        assert_eq!(call.plan.source.session.as_deref(), Some("s1"));
        let approved: Value =
            serde_json::from_str(&answer(&call, &Answer::Approve(Approval::default())).unwrap())
                .unwrap();
        assert_eq!(
            approved["hookSpecificOutput"]["decision"],
            json!({"behavior": "allow", "updatedInput": {"plan": "# P\n\nDo it", "planFilePath": "/p/brave.md"}}),
            "an allow echoes the plan and its file (a bare allow is ignored), nothing unreviewed"
        );
        let noted: Value = serde_json::from_str(
            &answer(
                &call,
                &Answer::Approve(Approval {
                    notes: Some("Keep the old API".into()),
                    edit: None,
                    accept_edits: true,
                }),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(
            noted["hookSpecificOutput"]["decision"]["updatedInput"]["plan"],
            "# P\n\nDo it\n\nReviewer notes: Keep the old API",
            "an allow carries no message: the notes go into the plan handed back"
        );
        assert_eq!(
            noted["hookSpecificOutput"]["decision"]["updatedPermissions"],
            json!([{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]),
            "edits without asking, as the reviewer chose, for this session only"
        );
    }

    #[test]
    fn an_empty_input_reads_the_plan_the_transcript_names() {
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("otter.md");
        std::fs::write(&plan, "# From the file\n").unwrap();
        let transcript = dir.path().join("t.jsonl");
        let lines = [
            json!({"type": "user", "message": {"role": "user", "content": "Add a cache"}}),
            json!({"type": "attachment", "attachment": {"type": "plan_mode", "planFilePath": plan}}),
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "ExitPlanMode", "input": {}}]}}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\nnot json\n")).collect();
        std::fs::write(&transcript, text).unwrap();
        let call = parse(&input(json!({}), Some(&transcript)))
            .unwrap()
            .unwrap();
        assert_eq!(call.plan.text, "# From the file\n");
        assert_eq!(call.plan.path, plan.display().to_string());
        assert_eq!(call.plan.prompt, "Add a cache");
    }

    #[test]
    fn other_tools_are_not_ours_and_junk_is_refused() {
        let other = json!({"session_id": "s", "cwd": "/", "tool_name": "Bash", "tool_input": {}});
        assert!(parse(&other.to_string()).unwrap().is_none());
        assert!(parse("{").is_err());
        assert!(parse(&input(json!({}), None)).is_err(), "no plan anywhere");
    }

    #[test]
    fn a_remote_payload_names_no_file_that_is_read() {
        let laptop = Caller {
            name: "laptop".into(),
            token_id: 7,
        };
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("secret.md");
        std::fs::write(&plan, "# Local secret\n").unwrap();
        let transcript = dir.path().join("t.jsonl");
        let line = json!({"type": "attachment", "attachment": {"planFilePath": plan}});
        std::fs::write(&transcript, format!("{line}\n")).unwrap();
        for tool_input in [
            json!({}),
            json!({"planFilePath": plan}),
            json!({"plan": "  "}),
        ] {
            let err = parse_remote(&input(tool_input, Some(&transcript)), &laptop).unwrap_err();
            assert!(err.to_string().contains("tool_input.plan"), "{err}");
        }
        let call = parse_remote(
            &input(
                json!({"plan": "# P\n\nDo it", "planFilePath": plan}),
                Some(&transcript),
            ),
            &laptop,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            call.plan.text, "# P\n\nDo it",
            "the plan in the payload, not the file"
        );
        assert_eq!(
            call.plan.source.session.as_deref(),
            Some("laptop#7/s1"),
            "the token's own, not any token's of that name"
        );
        assert!(
            call.plan.prompt.contains("token laptop"),
            "{}",
            call.plan.prompt
        );
    }

    #[test]
    fn rejections_deny_and_waiting_interrupts() {
        let call = parse(&input(
            json!({"plan": "# P", "planFilePath": "/p.md"}),
            None,
        ))
        .unwrap()
        .unwrap();
        let deny: Value =
            serde_json::from_str(&answer(&call, &Answer::Revise("smaller".into())).unwrap())
                .unwrap();
        let decision = &deny["hookSpecificOutput"]["decision"];
        assert_eq!(decision["behavior"], "deny");
        assert!(decision["message"]
            .as_str()
            .unwrap()
            .contains("User feedback: smaller"));
        assert!(decision.get("interrupt").is_none(), "the model revises");
        let wait: Value = serde_json::from_str(&answer(&call, &Answer::Wait).unwrap()).unwrap();
        assert_eq!(wait["hookSpecificOutput"]["decision"]["interrupt"], true);
        assert!(answer(&call, &Answer::Abandoned).is_none());
        let failed: Value = serde_json::from_str(&failure(&SourceError::Stopped)).unwrap();
        assert_eq!(failed["hookSpecificOutput"]["decision"]["behavior"], "deny");
    }
}
