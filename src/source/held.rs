//! Factory Droid and Qwen Code: agents whose plan step is one tool call that carries the plan
//! (`ExitSpecMode {title, plan}`, `exit_plan_mode {plan}`), held by a hook in Claude Code's
//! style until a person decides (`plandesk hook droid`, `plandesk hook qwen-code`).
//!
//! Droid's is a `PreToolUse` hook answered with `permissionDecision` (in `droid exec` the hook
//! is the only gate). Qwen Code's is a `PermissionRequest` hook answered with
//! `decision.behavior` (its `PreToolUse` runs only after its own dialog was answered); a deny
//! is final there, an allow leads to Qwen Code's own "proceed?" question. A hook that fails is
//! no answer to either: in their terminal UIs each then asks in its own dialog, and Droid under
//! `--skip-permissions-unsafe` lets the plan through; so every answer of ours is explicit.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use super::gemini::shortest_hook_timeout;
use super::{Answer, Call, SourceError};
use crate::review::ExternalPlan;
use crate::store::Source;
use crate::vocabulary::SourceKind;

/// An agent whose plan tool a hook holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Droid,
    QwenCode,
}

impl Agent {
    fn kind(self) -> SourceKind {
        match self {
            Agent::Droid => SourceKind::Droid,
            Agent::QwenCode => SourceKind::QwenCode,
        }
    }

    fn name(self) -> &'static str {
        self.kind().agent_name()
    }

    /// Its plan tool.
    pub fn tool(self) -> &'static str {
        match self {
            Agent::Droid => "ExitSpecMode",
            Agent::QwenCode => "exit_plan_mode",
        }
    }

    /// This process, for the audit trail.
    pub fn process(self) -> &'static str {
        match self {
            Agent::Droid => "hook:droid",
            Agent::QwenCode => "hook:qwen-code",
        }
    }

    /// The hook event Plandesk is installed on.
    pub fn event(self) -> &'static str {
        match self {
            Agent::Droid => "PreToolUse",
            Agent::QwenCode => "PermissionRequest",
        }
    }
}

/// Qwen Code gives up on any hook after this, whatever its `timeout` says (its answer is then
/// ignored and its own dialog opens).
const QWEN_HOOK_LIMIT: Duration = Duration::from_secs(60);

/// How long `agent` waits for this hook, from its settings (user and project) and its own
/// limits; `None` when no setting says (the timeout `plandesk install` wrote is long).
/// `env` reads the hook's environment.
pub fn hook_timeout(agent: Agent, env: impl Fn(&str) -> Option<OsString>) -> Option<Duration> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    match agent {
        Agent::QwenCode => {
            let system = var("QWEN_CODE_SYSTEM_SETTINGS_PATH")
                .unwrap_or_else(|| PathBuf::from("/etc/qwen-code/settings.json"));
            let defaults = var("QWEN_CODE_SYSTEM_DEFAULTS_PATH")
                .or_else(|| system.parent().map(|dir| dir.join("system-defaults.json")));
            let files = [
                Some(system),
                defaults,
                var("HOME").map(|home| home.join(".qwen/settings.json")),
                var("QWEN_PROJECT_DIR").map(|dir| dir.join(".qwen/settings.json")),
            ];
            let files = files.into_iter().flatten();
            let configured = shortest_hook_timeout(files, agent.event(), "qwen-code", qwen_timeout);
            Some(configured.map_or(QWEN_HOOK_LIMIT, |t| t.min(QWEN_HOOK_LIMIT)))
        }
        Agent::Droid => {
            let folders = [
                var("HOME").map(|home| home.join(".factory")),
                var("FACTORY_PROJECT_DIR").map(|dir| dir.join(".factory")),
            ];
            let files = folders
                .into_iter()
                .flatten()
                .flat_map(|dir| [dir.join("settings.json"), dir.join("hooks.json")]);
            shortest_hook_timeout(files, agent.event(), "droid", droid_timeout)
        }
    }
}

/// Droid's default hook timeout, when a hook sets none (or 0).
pub const DROID_DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A Droid hook `timeout`: seconds (60 when unset, 0 or less; past what a Node timer holds,
/// 1 ms).
fn droid_timeout(timeout: Option<f64>) -> Duration {
    match timeout {
        Some(secs) if secs * 1000.0 > f64::from(i32::MAX) => Duration::from_millis(1),
        Some(secs) if secs > 0.0 => Duration::from_secs_f64(secs),
        _ => DROID_DEFAULT_TIMEOUT,
    }
}

/// The exit status a hook's `answer` is printed with: Droid lets the first `allow` among its
/// hooks win over a deny printed with status 0, but no allow over status 2.
pub fn exit_status(agent: Agent, answer: &str) -> u8 {
    let denied = || {
        serde_json::from_str::<Value>(answer)
            .is_ok_and(|value| value["hookSpecificOutput"]["permissionDecision"] == "deny")
    };
    match agent {
        Agent::Droid if denied() => 2,
        _ => 0,
    }
}

/// A Qwen Code hook `timeout`: seconds below 1000 (fractions too), milliseconds from there
/// (60 s when unset, 0 or less; past what a Node timer holds, 1 ms).
fn qwen_timeout(timeout: Option<f64>) -> Duration {
    match timeout {
        Some(secs) if secs > 0.0 && secs < 1000.0 => Duration::from_secs_f64(secs),
        Some(ms) if ms > f64::from(i32::MAX) => Duration::from_millis(1),
        Some(ms) if ms >= 1000.0 => Duration::from_millis(ms as u64),
        _ => QWEN_HOOK_LIMIT,
    }
}

/// The most of a transcript read for the session's first request.
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

/// Parses the hook's stdin.
pub fn parse(agent: Agent, stdin: &str) -> Result<Call, SourceError> {
    let input: Input = super::hook_input(agent.name(), stdin)?;
    if input.tool_name != agent.tool() {
        return Ok(Call::NotOurs);
    }
    super::check_event(
        agent.name(),
        input.hook_event_name.as_deref(),
        agent.event(),
    )?;
    let plan = input.tool_input["plan"].as_str().unwrap_or_default();
    if let Some(why) = super::unusable_plan(plan, agent.tool(), "in `plan`") {
        return Ok(Call::Unusable(why));
    }
    // Droid's spec has its title apart: the plan shown is titled by it unless it has a heading.
    let title = input.tool_input["title"]
        .as_str()
        .map(|t| crate::text::short(t.trim(), 200))
        .filter(|t| !t.is_empty() && !t.contains('\n'));
    let text = match title {
        Some(title) if !plan.trim_start().starts_with('#') => format!("# {title}\n\n{plan}"),
        _ => plan.to_owned(),
    };
    Ok(Call::Review(Box::new(ExternalPlan {
        source: Source {
            kind: agent.kind(),
            session: Some(input.session_id),
        },
        prompt: super::plan_prompt(
            input
                .transcript_path
                .as_deref()
                .and_then(|t| super::first_user_request(std::path::Path::new(t), MAX_TRANSCRIPT))
                .as_deref(),
            agent.name(),
            &input.cwd,
        ),
        cwd: input.cwd,
        tool_name: agent.tool().into(),
        path: "plan.md".into(),
        text,
        item_id: None,
        submitter: None,
        file: None,
    })))
}

/// The hook's stdout for a decision. An approval lets the tool run: the model reads the plan as
/// it sent it, so a reviewer's notes reach it only in the agent's next message (Plandesk keeps
/// them in its record), and an edit is answered as changes to make (see `review_plan`).
pub fn answer(agent: Agent, answer: &Answer) -> Option<String> {
    match answer {
        Answer::Approve(_) => Some(allow(agent)),
        Answer::Revise(_) => Some(deny(agent, &answer.denial()?, false)),
        // Closed while the hook still waits (its lease seen as run out, or answered in the
        // agent): silence would let Droid go on, so it is a deny all the same.
        Answer::Abandoned | Answer::Wait | Answer::Expired => {
            Some(deny(agent, &answer.denial()?, true))
        }
    }
}

/// Not approved because we failed: an explicit deny, and the model stops.
pub fn failure(agent: Agent, err: &SourceError) -> String {
    deny(agent, &err.denial(), true)
}

fn allow(agent: Agent) -> String {
    let decision = match agent {
        Agent::Droid => json!({"permissionDecision": "allow"}),
        Agent::QwenCode => json!({"decision": {"behavior": "allow"}}),
    };
    output(agent, decision)
}

/// A deny whose `reason` the model reads; `stop`: the model is to stop and wait for the user.
pub fn deny(agent: Agent, reason: &str, stop: bool) -> String {
    let decision = match agent {
        Agent::Droid => json!({"permissionDecision": "deny", "permissionDecisionReason": reason}),
        Agent::QwenCode if stop => {
            json!({"decision": {"behavior": "deny", "message": reason, "interrupt": true}})
        }
        Agent::QwenCode => json!({"decision": {"behavior": "deny", "message": reason}}),
    };
    output(agent, decision)
}

fn output(agent: Agent, mut decision: Value) -> String {
    decision["hookEventName"] = json!(agent.event());
    json!({ "hookSpecificOutput": decision }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdin(agent: Agent, tool_input: Value) -> String {
        json!({
            "session_id": "s1", "transcript_path": "/t.jsonl", "cwd": "/w",
            "permission_mode": "plan", "hook_event_name": agent.event(),
            "tool_name": agent.tool(), "tool_input": tool_input,
        })
        .to_string()
    }

    fn review(agent: Agent, tool_input: Value) -> ExternalPlan {
        match parse(agent, &stdin(agent, tool_input)).unwrap() {
            Call::Review(plan) => *plan,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_plan_is_the_tools_argument_titled_by_droids_title() {
        let plan = review(
            Agent::Droid,
            json!({"title": "Cache lookups", "plan": "1. Add a cache"}),
        );
        assert_eq!(plan.text, "# Cache lookups\n\n1. Add a cache");
        assert_eq!(plan.source.kind, SourceKind::Droid);
        assert_eq!(plan.source.session.as_deref(), Some("s1"));
        let titled = review(
            Agent::Droid,
            json!({"title": "Other", "plan": "# Mine\n\nx"}),
        );
        assert_eq!(titled.text, "# Mine\n\nx", "a heading of its own is kept");
        let qwen = review(Agent::QwenCode, json!({"plan": "# Q\n\ny"}));
        assert_eq!(qwen.text, "# Q\n\ny");
        assert_eq!(qwen.tool_name, "exit_plan_mode");
    }

    #[test]
    fn the_inbox_shows_the_request_qwen_codes_transcript_holds() {
        let dir = tempfile::tempdir().unwrap();
        let transcript = dir.path().join("chat.jsonl");
        let lines = [
            json!({"type": "system", "subtype": "slash_command", "systemPayload": {}}),
            json!({"type": "user", "provenance": "system", "message": {"role": "user", "parts": [{"text": "injected"}]}}),
            json!({"type": "user", "provenance": "real_user", "message": {"role": "user", "parts": [{"text": "Add a cache"}]}}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\nnot json\n")).collect();
        std::fs::write(&transcript, text).unwrap();
        let mut payload: Value =
            serde_json::from_str(&stdin(Agent::QwenCode, json!({"plan": "p"}))).unwrap();
        payload["transcript_path"] = json!(transcript);
        let Call::Review(plan) = parse(Agent::QwenCode, &payload.to_string()).unwrap() else {
            panic!("a plan");
        };
        assert_eq!(plan.prompt, "Add a cache");
        let droid_transcript = dir.path().join("droid.jsonl");
        let reminder =
            json!({"type": "text", "text": "<system-reminder>\nTools\n</system-reminder>"});
        let lines = [
            json!({"type": "session_start", "id": "s"}),
            json!({"type": "message", "id": "context-1", "message": {"role": "user", "content": [reminder]}}),
            json!({"type": "message", "id": "m", "message": {"role": "user", "content": [reminder, {"type": "text", "text": "Add a cache to fetchUser"}]}}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&droid_transcript, text).unwrap();
        let mut payload: Value =
            serde_json::from_str(&stdin(Agent::Droid, json!({"plan": "p"}))).unwrap();
        payload["transcript_path"] = json!(droid_transcript);
        let Call::Review(plan) = parse(Agent::Droid, &payload.to_string()).unwrap() else {
            panic!("a plan");
        };
        assert_eq!(
            plan.prompt, "Add a cache to fetchUser",
            "Droid's reminders are not the request"
        );
        let missing = review(Agent::QwenCode, json!({"plan": "p"}));
        assert_eq!(
            missing.prompt, "Qwen Code session in /w",
            "no transcript: the session"
        );
    }

    #[test]
    fn other_tools_pass_and_empty_or_huge_plans_are_denied_with_what_to_do() {
        let other = json!({"session_id": "s", "cwd": "/", "hook_event_name": "PreToolUse",
                           "tool_name": "Execute", "tool_input": {}});
        assert!(matches!(
            parse(Agent::Droid, &other.to_string()).unwrap(),
            Call::NotOurs
        ));
        for plan in [json!(""), json!("  \n"), json!(null), json!(42)] {
            let call = parse(
                Agent::QwenCode,
                &stdin(Agent::QwenCode, json!({"plan": plan})),
            );
            assert!(
                matches!(call.unwrap(), Call::Unusable(ref m) if m.contains("empty")),
                "{plan}"
            );
        }
        let huge = "x".repeat(crate::workspace::MAX_FILE_BYTES as usize + 1);
        let call = parse(Agent::Droid, &stdin(Agent::Droid, json!({"plan": huge})));
        assert!(matches!(call.unwrap(), Call::Unusable(ref m) if m.contains("at most")));
        assert!(parse(Agent::Droid, "[1]").is_err());
        let wrong_event =
            stdin(Agent::Droid, json!({"plan": "p"})).replace("PreToolUse", "PostToolUse");
        let err = parse(Agent::Droid, &wrong_event).unwrap_err().to_string();
        assert!(err.contains("install it as a PreToolUse hook"), "{err}");
    }

    #[test]
    fn qwen_codes_hook_timeout_is_read_in_its_units_and_never_past_its_limit() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let write = |dir: &std::path::Path, timeout: Value| {
            std::fs::create_dir_all(dir.join(".qwen")).unwrap();
            let hook = json!({"type": "command", "command": "/bin/plandesk hook qwen-code", "timeout": timeout});
            let settings = json!({"hooks": {"PermissionRequest": [{"matcher": "exit_plan_mode", "hooks": [hook]}]}});
            std::fs::write(
                dir.join(".qwen/settings.json"),
                format!("// mine\n{settings}"),
            )
            .unwrap();
        };
        let env = |name: &str| match name {
            "HOME" => Some(home.path().into()),
            "QWEN_PROJECT_DIR" => Some(project.path().into()),
            _ => None,
        };
        let timeout = || hook_timeout(Agent::QwenCode, env).unwrap();
        assert_eq!(timeout(), QWEN_HOOK_LIMIT, "no settings: its own limit");
        write(home.path(), json!(90));
        assert_eq!(timeout(), QWEN_HOOK_LIMIT, "90 s is past the limit");
        write(project.path(), json!(30));
        assert_eq!(timeout(), Duration::from_secs(30), "seconds below 1000");
        write(project.path(), json!(4000));
        assert_eq!(timeout(), Duration::from_secs(4), "milliseconds from 1000");
        write(project.path(), json!(3_000_000_000u64));
        assert_eq!(timeout(), Duration::from_millis(1), "past a Node timer");
        write(project.path(), json!("5"));
        assert_eq!(
            timeout(),
            Duration::from_secs(5),
            "a string Qwen reads as a number"
        );
        write(project.path(), json!(0.5));
        assert_eq!(
            timeout(),
            Duration::from_millis(500),
            "fractions of seconds"
        );
        write(project.path(), json!(-3));
        assert_eq!(timeout(), QWEN_HOOK_LIMIT, "0 or less: the default");
        assert_eq!(hook_timeout(Agent::Droid, env), None);
        std::fs::create_dir_all(project.path().join(".factory")).unwrap();
        let hooks = json!({"PreToolUse": [{"matcher": "^ExitSpecMode$", "hooks": [
            {"type": "command", "command": "plandesk --data-dir /d hook droid", "timeout": 45}]}]});
        std::fs::write(
            project.path().join(".factory/hooks.json"),
            hooks.to_string(),
        )
        .unwrap();
        let droid_env = |name: &str| match name {
            "HOME" => Some(home.path().into()),
            "FACTORY_PROJECT_DIR" => Some(project.path().into()),
            _ => None,
        };
        assert_eq!(
            hook_timeout(Agent::Droid, droid_env),
            Some(Duration::from_secs(45)),
            "Droid's hooks.json holds them at the top level, in seconds"
        );
        assert_eq!(droid_timeout(Some(0.0)), DROID_DEFAULT_TIMEOUT);
        assert_eq!(droid_timeout(Some(2_147_484.0)), Duration::from_millis(1));
    }

    #[test]
    fn every_answer_is_explicit_in_each_agents_format() {
        let droid = |a: &Answer| -> Value {
            serde_json::from_str(&answer(Agent::Droid, a).unwrap()).unwrap()
        };
        let allowed = droid(&Answer::Approve(Default::default()));
        assert_eq!(
            allowed,
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}})
        );
        let revised = droid(&Answer::Revise("Smaller".into()));
        assert_eq!(revised["hookSpecificOutput"]["permissionDecision"], "deny");
        assert!(revised["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("User feedback: Smaller"));
        let qwen = |a: &Answer| -> Value {
            serde_json::from_str(&answer(Agent::QwenCode, a).unwrap()).unwrap()
        };
        let decision = qwen(&Answer::Revise("Smaller".into()))["hookSpecificOutput"].clone();
        assert_eq!(decision["hookEventName"], "PermissionRequest");
        assert_eq!(decision["decision"]["behavior"], "deny");
        assert!(
            decision["decision"].get("interrupt").is_none(),
            "it revises"
        );
        let waiting = qwen(&Answer::Wait)["hookSpecificOutput"]["decision"].clone();
        assert_eq!(waiting["interrupt"], true);
        assert_eq!(
            qwen(&Answer::Approve(Default::default()))["hookSpecificOutput"]["decision"],
            json!({"behavior": "allow"})
        );
        for agent in [Agent::Droid, Agent::QwenCode] {
            let closed = answer(agent, &Answer::Abandoned).unwrap();
            assert!(closed.contains("deny"), "silence is no answer: {closed}");
        }
        let failed = failure(Agent::Droid, &SourceError::Stopped);
        let failed_json: Value = serde_json::from_str(&failed).unwrap();
        assert_eq!(
            failed_json["hookSpecificOutput"]["permissionDecision"],
            "deny"
        );
        assert_eq!(
            exit_status(Agent::Droid, &failed),
            2,
            "a deny no other hook overrules"
        );
        let allow = answer(Agent::Droid, &Answer::Approve(Default::default())).unwrap();
        assert_eq!(exit_status(Agent::Droid, &allow), 0);
        let qwen_deny = failure(Agent::QwenCode, &SourceError::Stopped);
        assert_eq!(exit_status(Agent::QwenCode, &qwen_deny), 0);
    }
}
