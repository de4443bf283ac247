//! Pi (`@mariozechner/pi-coding-agent`): no plan mode of its own, so Plandesk's extension
//! (`pi/plandesk.js`, written into Pi's extensions folder by `plandesk install pi`) adds one:
//! read-only tools and a `submit_plan` tool, whose call runs `plandesk hook pi` with
//! `{session_id, cwd, plan, prompt?}` and returns what it answers as the tool's result:
//! `{"decision": "allow", "message": …}` (the contract's approval, with the reviewer's notes
//! and edit) or `{"decision": "deny", "reason": …}`. The extension fails closed: anything but
//! that JSON is "not approved". Pi gives a tool no timeout, so Plandesk's own deadline is what
//! ends an undecided wait.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::json;

use super::{Answer, Call, SourceError};
use crate::review::ExternalPlan;
use crate::store::Source;
use crate::tool::submit_plan::{rejected_with_feedback_text, APPROVED_TEXT};
use crate::vocabulary::SourceKind;

const AGENT: &str = "Pi";
const TOOL: &str = "submit_plan";

/// The extension, with the lines `plandesk install pi` fills in (see [`super::script`]).
pub const EXTENSION: &str = include_str!("pi/plandesk.js");

/// How the extension starts: what tells a file of Plandesk's own (any version) from another's.
pub const HEADER: &str = "// Plandesk's extension for Pi";

/// Whether Pi loads the extension installed as `file`: asks `pi --mode rpc --no-session` (with
/// no network) for its commands, and looks for one from `file` (the extension's `/plan`, under
/// whatever name Pi gives it beside another extension's). An
/// extension Pi cannot load keeps Pi from starting at all: so this is said, either way. `Err`:
/// why it could not be told.
pub fn check_loaded(file: &Path) -> Result<bool, String> {
    let mut command = std::process::Command::new("pi");
    command
        .args(["--mode", "rpc", "--no-session"])
        .env("PI_OFFLINE", "1");
    let output = super::script::agent_output(
        command,
        b"{\"id\":\"1\",\"type\":\"get_commands\"}\n",
        false,
    )?;
    Ok(output
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|answer| answer["command"] == "get_commands" && answer["success"] == true)
        .flat_map(|answer| {
            answer["data"]["commands"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|c| c["sourceInfo"]["path"].as_str().map(PathBuf::from))
        .any(|path| same_file(&path, file)))
}

/// Whether `a` and `b` are one file (Pi names it by the path it found, which may go through a
/// link to the folder).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[derive(Debug, Deserialize)]
struct Input {
    session_id: String,
    cwd: String,
    plan: String,
    /// The session's first request, as the extension read it from Pi.
    #[serde(default)]
    prompt: Option<String>,
}

/// Parses what the extension sends: the plan is `submit_plan`'s argument.
pub fn parse(stdin: &str) -> Result<Call, SourceError> {
    let input: Input = super::hook_input(AGENT, stdin)?;
    if input.session_id.trim().is_empty() || input.session_id.len() > 200 {
        return Err(SourceError::Input {
            agent: AGENT,
            message: "session_id is empty or longer than 200 bytes".into(),
        });
    }
    if let Some(why) = super::unusable_plan(&input.plan, TOOL, "in `plan`") {
        return Ok(Call::Unusable(why));
    }
    Ok(Call::Review(Box::new(ExternalPlan {
        source: Source {
            kind: SourceKind::Pi,
            session: Some(input.session_id),
        },
        prompt: super::plan_prompt(input.prompt.as_deref(), AGENT, &input.cwd),
        cwd: input.cwd,
        tool_name: TOOL.into(),
        path: "plan.md".into(),
        text: input.plan,
        item_id: None,
        submitter: None,
        file: None,
    })))
}

/// What the extension reads for a decision: an explicit allow or deny, always, in the
/// contract's words (the tool is the contract's `submit_plan`).
pub fn answer(answer: &Answer) -> String {
    match answer {
        Answer::Revise(feedback) => super::script::deny(&rejected_with_feedback_text(feedback)),
        other => super::script::answer(other, |approval| {
            json!({
                "decision": "allow",
                "message": format!("{APPROVED_TEXT}{}", approval.addendum()),
            })
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{Approval, EditedPlan};
    use serde_json::Value;

    fn stdin(plan: &str) -> String {
        json!({"session_id": "0195-abc", "cwd": "/w", "plan": plan}).to_string()
    }

    #[test]
    fn the_plan_is_submit_plans_argument() {
        let Call::Review(plan) = parse(&stdin("# Cache\n\n1. Add it\n")).unwrap() else {
            panic!("a plan");
        };
        assert_eq!(plan.text, "# Cache\n\n1. Add it\n");
        assert_eq!(plan.source.kind, SourceKind::Pi);
        assert_eq!(plan.source.session.as_deref(), Some("0195-abc"));
        assert_eq!(plan.prompt, "Pi session in /w");
        assert_eq!(plan.tool_name, "submit_plan");
        let asked =
            json!({"session_id": "s", "cwd": "/w", "plan": "# P", "prompt": " Add a cache "});
        let Call::Review(asked) = parse(&asked.to_string()).unwrap() else {
            panic!("a plan");
        };
        assert_eq!(
            asked.prompt, "Add a cache",
            "the request the extension read"
        );
    }

    #[test]
    fn an_empty_a_huge_or_a_malformed_call_is_never_a_plan() {
        assert!(matches!(parse(&stdin("  \n")).unwrap(), Call::Unusable(_)));
        let huge = "x".repeat(crate::workspace::MAX_FILE_BYTES as usize + 1);
        assert!(matches!(parse(&stdin(&huge)).unwrap(), Call::Unusable(_)));
        assert!(parse("{}").is_err());
        assert!(parse(r##"{"session_id": "", "cwd": "/w", "plan": "# P"}"##).is_err());
        assert!(parse(
            &json!({"session_id": "s".repeat(201), "cwd": "/w", "plan": "# P"}).to_string()
        )
        .is_err());
        assert!(parse(r#"{"session_id": "s", "cwd": "/w", "plan": 42}"#).is_err());
    }

    #[test]
    fn every_answer_is_explicit_in_the_contracts_words() {
        let read = |text: String| serde_json::from_str::<Value>(&text).unwrap();
        let approved = read(answer(&Answer::Approve(Approval::default())));
        assert_eq!(
            approved,
            json!({"decision": "allow", "message": APPROVED_TEXT})
        );
        let noted = read(answer(&Answer::Approve(Approval {
            notes: Some("Keep it small".into()),
            edit: Some(EditedPlan {
                markdown: "# P\n\n1. Smaller\n".into(),
                by: "ana".into(),
                diff: "-1. Big\n+1. Smaller\n".into(),
            }),
            accept_edits: false,
        })));
        let message = noted["message"].as_str().unwrap();
        assert!(message.starts_with(APPROVED_TEXT) && message.contains("Keep it small"));
        assert!(
            message.contains("+1. Smaller"),
            "the reviewer's edit reaches Pi: {message}"
        );
        let revise = read(answer(&Answer::Revise("Bound it".into())));
        assert_eq!(revise["decision"], "deny");
        assert!(revise["reason"]
            .as_str()
            .unwrap()
            .contains("User feedback: Bound it"));
        for other in [Answer::Wait, Answer::Expired, Answer::Abandoned] {
            let denied = read(answer(&other));
            assert_eq!(denied["decision"], "deny", "{other:?}");
            assert!(!denied["reason"].as_str().unwrap().is_empty());
        }
        let failed = read(crate::source::script::failure(&SourceError::Stopped));
        assert_eq!(failed["decision"], "deny");
    }
}
