//! What a hook reads, all of it untrusted: its payload (bounded, read as the agent's shape),
//! the files its agent names (a plan file, a transcript's tail, a settings file: never through
//! a link or a FIFO, never past a size), and from a transcript the request the person typed.

use super::SourceError;
use crate::untrusted::{open_regular, open_untrusted, read_bounded, read_text};
use crate::workspace::MAX_FILE_BYTES;

/// A hook call's payload (`stdin`) read as `T`; what cannot be is an error naming `agent`.
pub(crate) fn hook_input<T: serde::de::DeserializeOwned>(
    agent: &'static str,
    stdin: &str,
) -> Result<T, SourceError> {
    serde_json::from_str(stdin).map_err(|e| SourceError::Input {
        agent,
        message: e.to_string(),
    })
}

/// Refuses a call made on another hook event than `event`, the one Plandesk is installed on
/// (a hook someone moved by hand). A payload that names no event is taken.
pub(crate) fn check_event(
    agent: &'static str,
    named: Option<&str>,
    event: &str,
) -> Result<(), SourceError> {
    match named.filter(|named| *named != event) {
        Some(named) => Err(SourceError::Input {
            agent,
            message: format!(
                "hook event {}; install it as a {event} hook",
                crate::text::short(named, 60)
            ),
        }),
        None => Ok(()),
    }
}

/// Reads a whole hook payload from standard input, bounded (hook payloads are small; a huge
/// one is refused rather than buffered).
pub fn read_stdin(limit: usize) -> Result<String, String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read standard input: {e}"))?;
    if bytes.len() > limit {
        return Err(format!("standard input is over {limit} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| "standard input is not UTF-8".to_owned())
}

/// The largest hook payload read (a plan inside it is at most 1 MiB).
pub const MAX_HOOK_INPUT: usize = 4 * 1024 * 1024;

/// Reads a plan file an agent names: a regular file only (a FIFO, a device or a symbolic link
/// is refused without blocking), UTF-8, at most [`MAX_FILE_BYTES`].
pub(crate) fn read_plan_file(path: &std::path::Path) -> Result<String, SourceError> {
    open_untrusted(path)
        .and_then(|(file, _)| read_text(file, MAX_FILE_BYTES))
        .map_err(|e| {
            SourceError::NoPlan(format!(
                "{}: {e}",
                crate::text::short(&path.display().to_string(), 300)
            ))
        })
}

/// The last `max` bytes of a file an agent names (its transcript: the tail holds the current
/// turn), as text; opened as [`open_untrusted`] opens it.
pub(crate) fn read_tail(path: &std::path::Path, max: u64) -> std::io::Result<String> {
    let (file, size) = open_untrusted(path)?;
    let bytes = read_bounded(file, size.saturating_sub(max), max)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The user's first request in a session's transcript (JSON lines, Claude Code's, Droid's or
/// Qwen Code's: a `user` entry's, or a user `message`'s, `message.content`, a string or blocks,
/// or its `message.parts`; the reminders an agent adds are not the request; Copilot CLI's
/// `user.message`; Kimi Code's `turn.prompt` typed by the person), for the inbox; read as
/// [`read_tail`] reads, at most `max` bytes.
pub(crate) fn first_user_request(transcript: &std::path::Path, max: u64) -> Option<String> {
    first_user_request_in(&read_tail(transcript, max).ok()?)
}

/// The user's first request in `text`, a transcript's lines as [`first_user_request`] reads
/// them.
pub(crate) fn first_user_request_in(text: &str) -> Option<String> {
    use serde_json::Value;
    let first_text = |blocks: &Value| {
        blocks
            .as_array()?
            .iter()
            .filter(|b| b["type"] == "text" || (b.get("type").is_none() && b["text"].is_string()))
            .filter_map(|b| b["text"].as_str())
            .find(|text| !text.trim_start().starts_with("<system-reminder>"))
            .map(str::to_owned)
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| {
            let user = e["type"] == "user"
                || e["type"] == "user.message"
                || (e["type"] == "message" && e["message"]["role"] == "user")
                || (e["type"] == "turn.prompt" && kimi_typed(&e["origin"]));
            user && e["provenance"].as_str().is_none_or(|p| p == "real_user")
        })
        .find_map(|e| match &e["message"]["content"] {
            // Copilot CLI's `events.jsonl`: `{"type": "user.message", "data": {"content": …}}`.
            _ if e["type"] == "user.message" => e["data"]["content"]
                .as_str()
                .filter(|s| !s.trim().is_empty())
                .map(str::to_owned),
            _ if e["type"] == "turn.prompt" => kimi_prompt_text(&e),
            Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
            Value::Array(_) => first_text(&e["message"]["content"]),
            _ => first_text(&e["message"]["parts"]),
        })
        .map(|s| crate::text::short(&s, 200))
}

/// Whether a Kimi Code `turn.prompt` of this `origin` is one the person typed: a message, or a
/// skill started with its slash command.
fn kimi_typed(origin: &serde_json::Value) -> bool {
    origin["kind"] == "user"
        || (origin["kind"] == "skill_activation" && origin["trigger"] == "user-slash")
}

/// What the person typed in Kimi Code's `turn.prompt` (`{"input": [parts], "origin": {"kind":
/// "user", "skillActivations": [..]}}`): its text parts, joined as Kimi Code shows them (an
/// image between two splits the text), but for the first ones, the bodies of the skills the
/// person added (one per `skillActivations` entry); a skill's slash command as typed
/// (`/name args`: its input is the skill's body).
fn kimi_prompt_text(entry: &serde_json::Value) -> Option<String> {
    let origin = &entry["origin"];
    if origin["kind"] == "skill_activation" {
        let name = origin["skillName"].as_str()?;
        let args = origin["skillArgs"].as_str().unwrap_or_default();
        return Some(format!("/{name} {args}"));
    }
    let skills = entry["origin"]["skillActivations"]
        .as_array()
        .map_or(0, Vec::len);
    let text: String = entry["input"]
        .as_array()?
        .iter()
        .filter(|part| part["type"] == "text")
        .skip(skills)
        .filter_map(|part| part["text"].as_str())
        .collect();
    (!text.trim().is_empty()).then_some(text)
}

/// A person's settings file for an agent (JSON), never blocking on it: `None` if it is missing,
/// not a regular file (a link to one is followed), not UTF-8 or larger than `max` bytes.
pub(crate) fn read_settings_file(path: &std::path::Path, max: u64) -> Option<String> {
    let (file, _) = open_regular(path, rustix::fs::OFlags::empty()).ok()?;
    read_text(file, max).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_on_another_hook_event_is_refused_and_named_briefly() {
        assert!(check_event("Gemini CLI", None, "BeforeTool").is_ok());
        assert!(check_event("Gemini CLI", Some("BeforeTool"), "BeforeTool").is_ok());
        let named = format!("AfterTool\n{}", "x".repeat(100_000));
        let err = check_event("Gemini CLI", Some(&named), "BeforeTool")
            .unwrap_err()
            .to_string();
        assert!(err.contains("hook event AfterTool x"), "{err}");
        assert!(err.ends_with("install it as a BeforeTool hook"), "{err}");
        assert!(err.len() < 300, "bounded: {} bytes", err.len());
    }
}
