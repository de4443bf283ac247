//! Kimi Code's `config.toml` (in `$KIMI_CODE_HOME`, else `~/.kimi-code`): Plandesk's
//! `[[hooks]]` tables put after everyone else's, or taken out, with the rest of the file kept
//! as written (comments, order, spacing), so install then uninstall gives it back byte for
//! byte. Kimi Code ignores every hook of a file when one entry is not to its liking (a key it
//! does not know, a `timeout` past 600): ours hold only its four keys, and an install over an
//! entry it would reject is refused, since Plandesk's hook would be ignored with it.

use rustix::fs::OFlags;
use toml_edit::{value, ArrayOfTables, DocumentMut, Item, Table};

use super::file::{read, resolve_links};
use super::words::shell_words;
use super::{file_error, Change, InstallError, Places};
use crate::source::kimi::{EVENT, MAX_TIMEOUT_SECS, TOOL};

/// Kimi Code's tools whose use `PostToolUse` records (a JavaScript regular expression, which
/// Kimi Code matches anywhere in the name unless anchored, as here), and `ExitPlanMode`: a
/// plan answered in Kimi Code's own dialog.
pub(super) const KIMI_RECORDED_TOOLS: &str = "^(ExitPlanMode|Write|Edit|Bash)$";
/// How long Kimi Code waits for a `plandesk record` hook (it answers within milliseconds).
const RECORD_TIMEOUT_SECS: i64 = 10;

/// The events a Kimi Code hook may be on, and the keys it may have: anything else makes Kimi
/// Code drop the file's every hook.
const EVENTS: [&str; 20] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "PermissionResult",
    "UserPromptSubmit",
    "UserPromptQueued",
    "TurnStarted",
    "Stop",
    "StopFailure",
    "Interrupt",
    "SessionStart",
    "SessionEnd",
    "SessionHeartbeat",
    "SubagentStart",
    "SubagentStop",
    "TaskStarted",
    "PreCompact",
    "PostCompact",
    "Notification",
];
const KEYS: [&str; 4] = ["event", "matcher", "command", "timeout"];

/// One of our hooks: its event, matcher, `plandesk` verb and timeout.
struct Hook {
    event: &'static str,
    matcher: Option<&'static str>,
    verb: &'static str,
    timeout: i64,
}

/// Computes what installing (or uninstalling) Plandesk's Kimi Code hooks does to its config.
pub(super) fn plan(uninstall: bool, places: &Places) -> Result<Change, InstallError> {
    let home = places
        .kimi_home
        .clone()
        .unwrap_or_else(|| places.home.join(".kimi-code"));
    let file = home.join("config.toml");
    let target = resolve_links(&file)?;
    let before = read(&target, OFlags::empty())?.map(|existing| existing.text);
    let mut config = before
        .as_deref()
        .unwrap_or_default()
        .parse::<DocumentMut>()
        .map_err(|e| {
            file_error(
                &file,
                format!(
                    "is not valid TOML ({}); fix or move it, then install again",
                    e.message()
                ),
            )
        })?;
    let review = Hook {
        event: EVENT,
        matcher: Some("^ExitPlanMode$"),
        verb: "hook",
        timeout: MAX_TIMEOUT_SECS as i64,
    };
    let record = |event, matcher| Hook {
        event,
        matcher,
        verb: "record",
        timeout: RECORD_TIMEOUT_SECS,
    };
    let mut wanted = vec![review];
    if places.record {
        wanted.extend([
            record("PostToolUse", Some(KIMI_RECORDED_TOOLS)),
            record("PostToolUseFailure", Some("^Bash$")),
            record("Stop", None),
        ]);
    }
    let hooks = match config.get_mut("hooks") {
        None => None,
        Some(Item::ArrayOfTables(hooks)) => Some(hooks),
        Some(_) => {
            return Err(file_error(
                &file,
                "`hooks` is not a list of [[hooks]] tables; make it one, then install again",
            ))
        }
    };
    let mut changed = !uninstall;
    if let Some(hooks) = hooks {
        let had = hooks.len();
        hooks.retain(|hook| !is_ours(hook));
        changed |= hooks.len() != had;
        if !uninstall {
            if let Some(why) = hooks.iter().find_map(rejected) {
                return Err(file_error(
                    &file,
                    format!(
                        "Kimi Code ignores every hook in this file, Plandesk's too, while one \
                         of them is as it is: {why}; fix it, then install again"
                    ),
                ));
            }
        }
    }
    if !uninstall {
        let command = |verb: &str| places.command(&format!("{verb} kimi-code"));
        let hooks = config
            .entry("hooks")
            .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()));
        if let Item::ArrayOfTables(hooks) = hooks {
            for hook in &wanted {
                let mut table = Table::new();
                table.insert("event", value(hook.event));
                if let Some(matcher) = hook.matcher {
                    table.insert("matcher", value(matcher));
                }
                table.insert("command", value(command(hook.verb)));
                table.insert("timeout", value(hook.timeout));
                hooks.push(table);
            }
        }
    }
    if config
        .get("hooks")
        .and_then(Item::as_array_of_tables)
        .is_some_and(ArrayOfTables::is_empty)
    {
        config.remove("hooks");
    }
    // Nothing of ours was there to take out: the file as it was, to the byte.
    let after = match (&before, changed) {
        (Some(text), false) => text.clone(),
        _ => config.to_string(),
    };
    let note = (!uninstall).then(|| {
        format!(
            "Kimi Code waits at most {} minutes for a hook: decide within about nine, or the \
             plan is answered \"not approved\". In its terminal, after you approve, Kimi Code still asks \
             \"Ready to build with this plan?\"; with `kimi -p` your answer is the only one.",
            MAX_TIMEOUT_SECS / 60
        )
    });
    Ok(Change {
        after,
        file,
        before,
        note,
        target,
        remove: false,
    })
}

/// Whether a `[[hooks]]` table is exactly one we write: only Kimi Code's keys, and a command
/// `PROGRAM [--data-dir DIR] hook|record kimi-code` (the program may be any: the binary may
/// have been moved since); the review hook also on our event and matcher.
fn is_ours(hook: &Table) -> bool {
    let only_known = hook.iter().all(|(key, _)| KEYS.contains(&key));
    let verb = hook
        .get("command")
        .and_then(Item::as_str)
        .and_then(shell_words)
        .and_then(|words| {
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            match words.as_slice() {
                [_, verb, "kimi-code"] | [_, "--data-dir", _, verb, "kimi-code"] => {
                    Some(verb.to_string())
                }
                _ => None,
            }
        });
    let review = hook.get("event").and_then(Item::as_str) == Some(EVENT)
        && hook
            .get("matcher")
            .and_then(Item::as_str)
            .is_some_and(|m| m.contains(TOOL));
    only_known
        && match verb.as_deref() {
            Some("hook") => review,
            Some("record") => true,
            _ => false,
        }
}

/// Why Kimi Code would reject a `[[hooks]]` table (and with it every hook of the file).
fn rejected(hook: &Table) -> Option<String> {
    if let Some((key, _)) = hook.iter().find(|(key, _)| !KEYS.contains(key)) {
        return Some(format!(
            "a hook has the key `{}`",
            crate::text::short(key, 60)
        ));
    }
    let event = hook.get("event").and_then(Item::as_str);
    if !event.is_some_and(|e| EVENTS.contains(&e)) {
        return Some("a hook has no event Kimi Code knows".into());
    }
    if hook
        .get("command")
        .and_then(Item::as_str)
        .is_none_or(str::is_empty)
    {
        return Some("a hook has no command".into());
    }
    if hook.get("matcher").is_some_and(|m| m.as_str().is_none()) {
        return Some("a hook's matcher is not text".into());
    }
    match hook.get("timeout") {
        None => None,
        Some(timeout) => match crate::source::kimi::whole_seconds(timeout) {
            Some(secs) if (1..=MAX_TIMEOUT_SECS).contains(&secs) => None,
            _ => Some(format!(
                "a hook's timeout is not a whole number of seconds from 1 to {MAX_TIMEOUT_SECS}"
            )),
        },
    }
}

/// Whether `text` (a `config.toml`) holds our review hook.
#[cfg(test)]
pub(super) fn has_review_hook(text: &str) -> bool {
    text.parse::<DocumentMut>().is_ok_and(|config| {
        config
            .get("hooks")
            .and_then(Item::as_array_of_tables)
            .is_some_and(|hooks| {
                hooks.iter().any(|hook| {
                    is_ours(hook) && hook.get("event").and_then(Item::as_str) == Some(EVENT)
                })
            })
    })
}
