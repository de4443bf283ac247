//! GitHub Copilot CLI: a `preToolUse` hook on `exit_plan_mode` (`plandesk hook copilot`). The
//! payload is camelCase (`sessionId`, `cwd`, `toolName`, `toolArgs`) and carries only the
//! plan's summary: the plan is the session's `plan.md` in Copilot's state folder
//! (`$COPILOT_HOME`, else `~/.copilot`), always written before the hook runs. Answers are
//! `permissionDecision` allow / deny with `permissionDecisionReason`, which the model reads as
//! "Denied by preToolUse hook: …". Copilot sends the plan to its own menu when a hook prints
//! nothing or times out (30 s unless its `timeout` says otherwise), so every answer is explicit
//! and comes before that; after an allow, Copilot's own "Plan Ready for Review" menu still asks,
//! showing `plan.md` read again then: an allow goes out only while it holds the approved plan
//! (see `review_plan`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use super::{read_plan_file, Answer, Call, SourceError};
use crate::review::ExternalPlan;
use crate::store::Source;
use crate::vocabulary::SourceKind;

const AGENT: &str = "Copilot CLI";
const TOOL: &str = "exit_plan_mode";
const EVENT: &str = "preToolUse";

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Input {
    session_id: String,
    cwd: String,
    tool_name: String,
}

/// Copilot's state folder: `$COPILOT_HOME`, else `~/.copilot`. `env` reads the hook's
/// environment.
pub fn state_dir(env: &impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    super::agent_dir(env, "COPILOT_HOME", ".copilot")
}

/// Parses the hook's stdin; the plan is read from the session's `plan.md` under `state`.
pub fn parse(stdin: &str, state: Option<&Path>) -> Result<Call, SourceError> {
    let input: Input = super::hook_input(AGENT, stdin)?;
    if input.tool_name != TOOL {
        return Ok(Call::NotOurs);
    }
    // Only a plain name for a folder in the state folder: never one that climbs out of it.
    let session = &input.session_id;
    let plain = !session.is_empty()
        && session.len() <= 200
        && session
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !plain {
        return Err(SourceError::Input {
            agent: AGENT,
            message: "the sessionId is not a plain name".into(),
        });
    }
    let state = state.ok_or_else(|| {
        SourceError::NoPlan("neither COPILOT_HOME nor HOME is set: no state folder".into())
    })?;
    let folder = state.join("session-state").join(session);
    let path = folder.join("plan.md");
    let events = events_file(state, session);
    let text = match read_plan_file(&path) {
        Ok(text) if !text.trim().is_empty() => text,
        _ => {
            return Ok(Call::Unusable(format!(
                "The plan file {} is missing or empty. Write the complete plan there first, then \
                 call exit_plan_mode again.",
                path.display()
            )))
        }
    };
    // Copilot may write the session's log a moment after the hook starts.
    for _ in 0..10 {
        if std::fs::symlink_metadata(&events).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let request = super::first_user_request(&events, MAX_EVENTS);
    let prompt = super::plan_prompt(request.as_deref(), AGENT, &input.cwd);
    Ok(Call::Review(Box::new(ExternalPlan {
        source: Source {
            kind: SourceKind::Copilot,
            session: Some(input.session_id),
        },
        prompt,
        cwd: input.cwd,
        tool_name: TOOL.into(),
        path: path.display().to_string(),
        text,
        item_id: None,
        submitter: None,
        file: None,
    })))
}

/// The session's event log, where Copilot writes an `abort` when the person cancels (Ctrl+C)
/// while the hook waits, without stopping the hook.
pub fn events_file(state: &Path, session: &str) -> PathBuf {
    state
        .join("session-state")
        .join(session)
        .join("events.jsonl")
}

/// Resolves once Copilot writes an `abort` to `events` after this was called (the person
/// cancelled the turn while the hook waits). The log's end is taken now, not when first
/// polled; Copilot may write the log only after the hook started, and then only an `abort`
/// after a `hook.start` counts (an older turn's is not this one). The log is read as any
/// untrusted file, only what was added since the last look, at most 1 MiB at a time.
pub fn cancelled(events: PathBuf) -> impl std::future::Future<Output = ()> {
    let start = crate::untrusted::open_untrusted(&events)
        .map(|(_, size)| size)
        .ok();
    aborted_after(events, start)
}

async fn aborted_after(events: PathBuf, start: Option<u64>) {
    const EVERY: Duration = Duration::from_millis(250);
    const MAX_READ: u64 = 1024 * 1024;
    let mut offset = start.unwrap_or(0);
    let mut hook_started = start.is_some();
    let mut partial = String::new();
    loop {
        tokio::time::sleep(EVERY).await;
        let Ok((file, size)) = crate::untrusted::open_untrusted(&events) else {
            continue;
        };
        if size < offset {
            // Rewritten: start again from its end.
            offset = size;
            partial.clear();
            continue;
        }
        let Ok(bytes) = crate::untrusted::read_bounded(file, offset, MAX_READ) else {
            continue;
        };
        offset += bytes.len() as u64;
        partial.push_str(&String::from_utf8_lossy(&bytes));
        let complete = partial.rfind('\n').map_or(0, |end| end + 1);
        for line in partial[..complete].lines() {
            let kind = serde_json::from_str::<Value>(line)
                .ok()
                .and_then(|event| event["type"].as_str().map(str::to_owned));
            match kind.as_deref() {
                Some("hook.start") => hook_started = true,
                Some("abort") if hook_started => return,
                _ => {}
            }
        }
        partial.drain(..complete);
        if partial.len() as u64 > MAX_READ {
            partial.clear();
        }
    }
}

/// The hook's stdout for a decision: an explicit allow or deny, always.
pub fn answer(answer: &Answer) -> String {
    match answer {
        Answer::Approve(_) => json!({"permissionDecision": "allow"}).to_string(),
        other => deny(&other.denial().unwrap_or_default()),
    }
}

pub fn deny(reason: &str) -> String {
    json!({"permissionDecision": "deny", "permissionDecisionReason": reason}).to_string()
}

/// Not approved because we failed: an explicit deny (Copilot sends silence to its own menu).
pub fn failure(err: &SourceError) -> String {
    deny(&err.denial())
}

/// The most of a session's `events.jsonl` read for its first request.
const MAX_EVENTS: u64 = 32 * 1024 * 1024;

/// Copilot's timeout for a hook that sets none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// At most this many hook files are looked at in the hooks folder.
const MAX_HOOK_FILES: usize = 100;

/// How long Copilot lets this hook run: the shortest `timeoutSec` / `timeout` (seconds, fractions
/// too: Copilot kills a hook of `timeout: 5.5` at 5.5 s; 30 when unset) of the `preToolUse`
/// hooks that run `plandesk hook copilot`, flat or in groups, in the state folder's
/// `hooks/*.json` and `settings.json`. `None` if none is found.
pub fn hook_timeout(env: impl Fn(&str) -> Option<OsString>) -> Option<Duration> {
    let state = state_dir(&env)?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(state.join("hooks"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .take(MAX_HOOK_FILES)
        .collect();
    files.push(state.join("settings.json"));
    super::gemini::shortest_hook_timeout(files, EVENT, "copilot", |timeout| {
        timeout
            .filter(|secs| *secs > 0.0)
            .map_or(DEFAULT_TIMEOUT, |secs| {
                Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdin(session: &str, tool: &str) -> String {
        json!({"sessionId": session, "timestamp": 1_796_506_204_523u64, "cwd": "/w",
               "toolName": tool, "toolArgs": {"summary": "Cache lookups"}})
        .to_string()
    }

    #[test]
    fn the_plan_is_the_sessions_plan_file() {
        let state = tempfile::tempdir().unwrap();
        let dir = state.path().join("session-state/7720-ab");
        std::fs::create_dir_all(&dir).unwrap();
        let Call::Unusable(why) = parse(&stdin("7720-ab", TOOL), Some(state.path())).unwrap()
        else {
            panic!("no plan yet");
        };
        assert!(why.contains("missing or empty"), "{why}");
        std::fs::write(dir.join("plan.md"), "# Cache\n\n1. Add it\n").unwrap();
        let Call::Review(plan) = parse(&stdin("7720-ab", TOOL), Some(state.path())).unwrap() else {
            panic!("a plan to review");
        };
        assert_eq!(plan.text, "# Cache\n\n1. Add it\n");
        assert_eq!(plan.source.kind, SourceKind::Copilot);
        assert_eq!(plan.source.session.as_deref(), Some("7720-ab"));
        assert!(matches!(
            parse(&stdin("7720-ab", "bash"), Some(state.path())).unwrap(),
            Call::NotOurs
        ));
    }

    #[tokio::test]
    async fn a_cancel_written_to_the_sessions_events_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let events = dir.path().join("events.jsonl");
        std::fs::write(&events, "{\"type\":\"abort\"}\n").unwrap();
        let watch = tokio::spawn(cancelled(events.clone()));
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(
            !watch.is_finished(),
            "an abort from before the hook is not this one"
        );
        use std::io::Write;
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .open(&events)
            .unwrap();
        write!(log, "{{\"type\":\"hook.start\"}}\n{{\"type\":\"ab").unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(!watch.is_finished(), "half a line is not yet an abort");
        writeln!(log, "ort\",\"data\":{{\"reason\":\"user_initiated\"}}}}").unwrap();
        tokio::time::timeout(Duration::from_secs(5), watch)
            .await
            .expect("the abort is seen")
            .unwrap();

        // A log Copilot writes only once the hook runs: an abort counts after a hook.start.
        let later = dir.path().join("later.jsonl");
        let watch = tokio::spawn(cancelled(later.clone()));
        std::fs::write(&later, "{\"type\":\"abort\"}\n{\"type\":\"hook.start\"}\n").unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(!watch.is_finished(), "an older turn's abort");
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .open(&later)
            .unwrap();
        writeln!(log, "{{\"type\":\"abort\"}}").unwrap();
        tokio::time::timeout(Duration::from_secs(5), watch)
            .await
            .expect("the abort after the hook started is seen")
            .unwrap();
    }

    #[test]
    fn a_session_id_that_is_not_a_plain_name_is_refused() {
        let state = tempfile::tempdir().unwrap();
        for session in ["../../etc", "a/b", "", ".."] {
            assert!(
                parse(&stdin(session, TOOL), Some(state.path())).is_err(),
                "{session:?}"
            );
        }
        assert!(parse("{}", Some(state.path())).is_err());
    }

    #[test]
    fn answers_are_explicit() {
        assert_eq!(
            answer(&Answer::Approve(Default::default())),
            r#"{"permissionDecision":"allow"}"#
        );
        let denied: Value =
            serde_json::from_str(&answer(&Answer::Revise("Smaller".into()))).unwrap();
        assert_eq!(denied["permissionDecision"], "deny");
        assert!(denied["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("User feedback: Smaller"));
        let failed: Value = serde_json::from_str(&failure(&SourceError::Stopped)).unwrap();
        assert_eq!(failed["permissionDecision"], "deny");
    }

    #[test]
    fn the_timeout_is_read_from_the_hook_files_in_seconds() {
        let home = tempfile::tempdir().unwrap();
        let env = |name: &str| (name == "COPILOT_HOME").then(|| home.path().into());
        assert_eq!(hook_timeout(env), None);
        std::fs::create_dir_all(home.path().join("hooks")).unwrap();
        let group = json!({"hooks": {"preToolUse": [{"matcher": "exit_plan_mode", "hooks": [
            {"type": "command", "command": "/bin/plandesk hook copilot", "timeout": 600}]}]}});
        std::fs::write(home.path().join("hooks/plandesk.json"), group.to_string()).unwrap();
        assert_eq!(hook_timeout(env), Some(Duration::from_secs(600)));
        let flat = json!({"version": 1, "hooks": {"preToolUse": [
            {"type": "command", "bash": "plandesk hook copilot", "matcher": "exit_plan_mode"}]}});
        std::fs::write(home.path().join("settings.json"), flat.to_string()).unwrap();
        assert_eq!(hook_timeout(env), Some(DEFAULT_TIMEOUT), "30 s when unset");
        let fraction = json!({"hooks": {"preToolUse": [
            {"type": "command", "bash": "plandesk hook copilot", "timeoutSec": 5.5}]}});
        std::fs::write(home.path().join("settings.json"), fraction.to_string()).unwrap();
        assert_eq!(
            hook_timeout(env),
            Some(Duration::from_millis(5500)),
            "fractions count"
        );
    }
}
