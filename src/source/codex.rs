//! Codex: a `Stop` hook (`plandesk hook codex`). In Plan mode the model's proposed plan is the
//! newest `Plan` item of the turn in the session file (`transcript_path`; Codex cuts the
//! `<proposed_plan>` block out of `last_assistant_message`). Each plan item of a turn is
//! reviewed once: a Stop with no new plan (not Plan mode, or after a decision) is let through.
//! Approval lets the stop happen; changes are `{"decision": "block", "reason": …}`, which the
//! model reads as the user's next message.

use std::path::Path;

use serde::Deserialize;
use serde_json::{json, Value};

use super::{Answer, SourceError};
use crate::review::ExternalPlan;
use crate::store::Source;
use crate::vocabulary::SourceKind;

const AGENT: &str = "Codex";
/// The most of a session file read (its tail holds the current turn).
const MAX_TRANSCRIPT: u64 = 32 * 1024 * 1024;

#[derive(Debug, Deserialize)]
struct Input {
    session_id: String,
    turn_id: String,
    #[serde(default)]
    transcript_path: Option<String>,
    cwd: String,
    #[serde(default)]
    hook_event_name: Option<String>,
    #[serde(default)]
    last_assistant_message: Option<String>,
}

/// Parses the hook's stdin; `Ok(None)`: no plan to review, let the stop happen.
pub fn parse(stdin: &str) -> Result<Option<ExternalPlan>, SourceError> {
    let input: Input = super::hook_input(AGENT, stdin)?;
    super::check_event(AGENT, input.hook_event_name.as_deref(), "Stop")?;
    let from_transcript = input
        .transcript_path
        .as_deref()
        .map(|p| (p, plans_of_turn(Path::new(p), &input.turn_id)));
    let inline = input
        .last_assistant_message
        .as_deref()
        .and_then(proposed_plan);
    let (index, text) = match (from_transcript, inline) {
        (Some((_, Ok(mut plans))), _) if !plans.is_empty() => {
            (plans.len(), plans.pop().unwrap_or_default())
        }
        (_, Some(text)) => (1, text),
        // A session file that cannot be read may hold a plan: not one to let through unseen.
        (Some((path, Err(err))), None) => {
            return Err(SourceError::NoPlan(format!(
                "cannot read Codex's session file {}: {err}",
                crate::text::short(path, 300)
            )))
        }
        _ => return Ok(None),
    };
    // The n-th plan of a turn is reviewed once, however many Stops mention it; another text
    // in its place (the message's plan, when the session file had fewer) is another item.
    let sha = crate::review::plan_sha256("", &text);
    Ok(Some(ExternalPlan {
        source: Source {
            kind: SourceKind::Codex,
            session: Some(input.session_id),
        },
        prompt: format!("{AGENT} session in {}", input.cwd),
        cwd: input.cwd,
        tool_name: "Stop".into(),
        path: "proposed_plan.md".into(),
        text,
        item_id: Some(format!("{}-plan-{index}-{}", input.turn_id, &sha[..12])),
        submitter: None,
        // Codex keeps its plan in its session file, not a file of its own.
        file: None,
    }))
}

/// The texts of the turn's `Plan` items, oldest first.
fn plans_of_turn(path: &Path, turn_id: &str) -> Result<Vec<String>, std::io::Error> {
    Ok(super::read_tail(path, MAX_TRANSCRIPT)?
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "event_msg")
        .map(|e| e["payload"].clone())
        .filter(|p| p["type"] == "item_completed" && p["turn_id"] == turn_id)
        .filter(|p| p["item"]["type"] == "Plan")
        .filter_map(|p| p["item"]["text"].as_str().map(str::to_owned))
        .filter(|t| !t.trim().is_empty())
        .collect())
}

/// The `<proposed_plan>` block of a message, where a Codex version leaves it in.
fn proposed_plan(message: &str) -> Option<String> {
    let start = message.find("<proposed_plan>")? + "<proposed_plan>".len();
    let end = message[start..].find("</proposed_plan>")? + start;
    let plan = message[start..end].trim();
    (!plan.is_empty()).then(|| plan.to_owned())
}

/// The hook's stdout for a decision (`None`: print nothing and let the stop happen).
pub fn answer(answer: &Answer) -> Option<String> {
    answer
        .denial()
        .map(|reason| json!({"decision": "block", "reason": reason}).to_string())
}

/// Not approved because we failed: block the stop so the plan is never taken as approved.
pub fn failure(err: &SourceError) -> String {
    json!({"decision": "block", "reason": err.denial()}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdin(transcript: &Path, last: &str) -> String {
        json!({"session_id": "s", "turn_id": "T1", "transcript_path": transcript, "cwd": "/w",
               "hook_event_name": "Stop", "model": "m", "permission_mode": "default",
               "stop_hook_active": false, "last_assistant_message": last})
        .to_string()
    }

    fn event(turn: &str, text: &str) -> Value {
        json!({"timestamp": "t", "type": "event_msg", "payload": {"type": "item_completed",
               "turn_id": turn, "item": {"type": "Plan", "id": "p", "text": text}}})
    }

    #[test]
    fn the_newest_plan_of_the_turn_is_reviewed_once_per_item() {
        let dir = tempfile::tempdir().unwrap();
        let transcript = dir.path().join("rollout.jsonl");
        let lines = [
            event("T0", "# Old"),
            event("T1", "# First"),
            event("T1", "# Revised"),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&transcript, text).unwrap();
        let plan = parse(&stdin(&transcript, "Here is my plan."))
            .unwrap()
            .unwrap();
        assert_eq!(plan.text, "# Revised");
        let id = plan.item_id.unwrap();
        assert!(id.starts_with("T1-plan-2-"), "{id}");
        let again = parse(&stdin(&transcript, "")).unwrap().unwrap();
        assert_eq!(again.item_id.unwrap(), id, "one item however many Stops");
        assert_eq!(plan.source.session.as_deref(), Some("s"));
    }

    #[test]
    fn a_stop_without_a_plan_is_let_through() {
        let dir = tempfile::tempdir().unwrap();
        let transcript = dir.path().join("rollout.jsonl");
        std::fs::write(&transcript, format!("{}\n", event("T0", "# Old"))).unwrap();
        assert!(parse(&stdin(&transcript, "All done.")).unwrap().is_none());
        let inline = parse(&stdin(
            &dir.path().join("missing"),
            "x <proposed_plan>\n# P\n</proposed_plan>",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(inline.text, "# P");
    }

    #[test]
    fn a_session_file_that_cannot_be_read_lets_no_plan_through() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("rollout.jsonl");
        std::fs::write(&real, format!("{}\n", event("T1", "# Hidden"))).unwrap();
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        for unreadable in [
            &link,
            &fifo,
            &dir.path().to_path_buf(),
            &dir.path().join("gone"),
        ] {
            let err = parse(&stdin(unreadable, "All done.")).unwrap_err();
            assert!(err.to_string().contains("session file"), "{err}");
            let inline = parse(&stdin(unreadable, "<proposed_plan># P</proposed_plan>"));
            assert_eq!(inline.unwrap().unwrap().text, "# P", "the message's plan");
        }
    }

    #[test]
    fn changes_block_and_approval_prints_nothing() {
        assert_eq!(
            answer(&Answer::Approve(crate::source::Approval::default())),
            None
        );
        let block: Value =
            serde_json::from_str(&answer(&Answer::Revise("no".into())).unwrap()).unwrap();
        assert_eq!(block["decision"], "block");
        assert!(block["reason"]
            .as_str()
            .unwrap()
            .contains("User feedback: no"));
        let closed: Value = serde_json::from_str(&answer(&Answer::Abandoned).unwrap()).unwrap();
        assert_eq!(
            closed["decision"], "block",
            "a plan closed while the hook waited is not approved"
        );
        let failed: Value = serde_json::from_str(&failure(&SourceError::Stopped)).unwrap();
        assert_eq!(failed["decision"], "block", "fail closed");
        assert!(parse("[]").is_err());
    }
}
