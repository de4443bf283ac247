//! Gemini CLI: a `BeforeTool` hook on `exit_plan_mode` (`plandesk hook gemini`). The input
//! names the plan file (`tool_input.plan_filename`) in `$GEMINI_PLANS_DIR`; it runs before the
//! CLI checks the file, so a missing or empty plan is denied with what to do. Approval is `{}`;
//! anything else is an explicit `{"decision": "deny", "reason": …}` (Gemini CLI lets a plan
//! through on a timeout, a crash or a silent exit 2: we never rely on those).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use super::{read_plan_file, Answer, Call, SourceError};
use crate::review::{ExternalPlan, PlanFile};
use crate::store::Source;
use crate::vocabulary::SourceKind;

const AGENT: &str = "Gemini CLI";
const TOOL: &str = "exit_plan_mode";
pub const PLANS_DIR_ENV: &str = "GEMINI_PLANS_DIR";

#[derive(Debug, Deserialize)]
struct Input {
    session_id: String,
    cwd: String,
    #[serde(default)]
    hook_event_name: Option<String>,
    tool_name: String,
    #[serde(default)]
    tool_input: Value,
}

/// Parses the hook's stdin, with `plans_dir` from `$GEMINI_PLANS_DIR`.
pub fn parse(stdin: &str, plans_dir: Option<&Path>) -> Result<Call, SourceError> {
    let input: Input = super::hook_input(AGENT, stdin)?;
    if input.tool_name != TOOL {
        return Ok(Call::NotOurs);
    }
    super::check_event(AGENT, input.hook_event_name.as_deref(), "BeforeTool")?;
    let name = input
        .tool_input
        .get("plan_filename")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // Only a file name inside the plans folder: never a path that climbs out of it.
    let file_name = Path::new(name)
        .file_name()
        .filter(|f| *f == std::ffi::OsStr::new(name));
    let Some(file_name) = file_name else {
        return Ok(Call::Unusable(format!(
            "The plan file name `{name}` is not a plain file name. Write the plan to a `.md` file \
             in the plans folder and call exit_plan_mode with its name."
        )));
    };
    let dir = plans_dir
        .map(Path::to_owned)
        .ok_or_else(|| SourceError::NoPlan(format!("${PLANS_DIR_ENV} is not set")))?;
    let path: PathBuf = dir.join(file_name);
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
    Ok(Call::Review(Box::new(ExternalPlan {
        source: Source {
            kind: SourceKind::Gemini,
            session: Some(input.session_id),
        },
        prompt: format!("{AGENT} session in {}", input.cwd),
        cwd: input.cwd,
        tool_name: TOOL.into(),
        path: path.display().to_string(),
        text,
        item_id: None,
        submitter: None,
        file: Some(PlanFile {
            root: dir,
            name: file_name.to_string_lossy().into_owned(),
        }),
    })))
}

/// The hook's stdout for a decision: `{}` to approve, an explicit deny otherwise. An approval
/// carries nothing to the model, so approval notes stay in Plandesk's record.
pub fn answer(answer: &Answer) -> String {
    match answer.denial() {
        None => "{}".to_owned(),
        Some(reason) => deny(&reason),
    }
}

pub fn deny(reason: &str) -> String {
    json!({"decision": "deny", "reason": reason}).to_string()
}

/// Not approved because we failed: an explicit deny (Gemini CLI approves on silence).
pub fn failure(err: &SourceError) -> String {
    deny(&err.denial())
}

/// The largest settings file read for the hook's timeout (they are a few KiB).
const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

/// Gemini CLI's timeout for a hook that sets none (milliseconds).
const DEFAULT_TIMEOUT_MS: u64 = 60_000;

/// How long Gemini CLI lets this hook run before it stops it and lets the plan through: the
/// shortest `timeout` (milliseconds; 60 s when unset) of the `BeforeTool` hooks that run
/// `plandesk hook gemini`, in every settings file Gemini CLI reads (system, system defaults,
/// user, project). `None` if none of them has such a hook. `env` reads the hook's environment.
pub fn hook_timeout(env: impl Fn(&str) -> Option<OsString>) -> Option<Duration> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let system = var("GEMINI_CLI_SYSTEM_SETTINGS_PATH").unwrap_or_else(|| {
        PathBuf::from(if cfg!(target_os = "macos") {
            "/Library/Application Support/GeminiCli/settings.json"
        } else {
            "/etc/gemini-cli/settings.json"
        })
    });
    let defaults = var("GEMINI_CLI_SYSTEM_DEFAULTS_PATH")
        .or_else(|| system.parent().map(|dir| dir.join("system-defaults.json")));
    let home = var("GEMINI_CLI_HOME").or_else(|| var("HOME"));
    let user = home.map(|h| h.join(".gemini/settings.json"));
    let project = var("GEMINI_PROJECT_DIR").map(|p| p.join(".gemini/settings.json"));
    let files = [Some(system), defaults, user, project];
    shortest_hook_timeout(
        files.into_iter().flatten(),
        "BeforeTool",
        "gemini",
        |timeout| {
            let ms = timeout.map_or(DEFAULT_TIMEOUT_MS, |ms| ms.max(0.0) as u64);
            // Node runs a longer timer after 1 ms.
            Duration::from_millis(if ms > i32::MAX as u64 { 1 } else { ms })
        },
    )
}

/// The shortest timeout, as the agent reads it (`unit`: a `timeout` as written, `None` where
/// there is none, to how long the agent waits), of the `event` hooks that run `plandesk hook
/// AGENT` in any of `files` (a person's settings, read as [`super::read_settings_file`] reads
/// them). `None` if none of them has such a hook.
pub(crate) fn shortest_hook_timeout(
    files: impl IntoIterator<Item = PathBuf>,
    event: &str,
    agent: &str,
    unit: impl Fn(Option<f64>) -> Duration,
) -> Option<Duration> {
    files
        .into_iter()
        .filter_map(|file| super::read_settings_file(&file, MAX_SETTINGS_BYTES))
        .flat_map(|text| {
            timeouts_of(event, agent, &text)
                .map(&unit)
                .collect::<Vec<_>>()
        })
        .min()
}

/// The `timeout` (Copilot's `timeoutSec` first; `None` where it has none; a number, or a string
/// that holds one, as the agents' JavaScript reads it) of each `event` hook in a settings file of
/// Claude Code's shape (JSON, with comments; the hooks under `hooks`, or at the top level as in
/// Droid's `hooks.json`; in groups, or flat as Copilot also writes them, its command under
/// `bash`) that runs `plandesk hook AGENT`, whatever the path, spacing, or options after it.
pub(crate) fn timeouts_of<'a>(
    event: &'a str,
    agent: &'a str,
    text: &str,
) -> impl Iterator<Item = Option<f64>> + 'a {
    let settings = serde_json::from_str::<Value>(&strip_comments(text)).unwrap_or_default();
    let hooks: Vec<Value> = [&settings["hooks"][event], &settings[event]]
        .into_iter()
        .filter_map(Value::as_array)
        .flatten()
        .flat_map(|entry| match entry["hooks"].as_array() {
            Some(group) => group.clone(),
            None => vec![entry.clone()],
        })
        .collect();
    hooks.into_iter().filter_map(move |hook| {
        let command = hook["command"].as_str().or_else(|| hook["bash"].as_str())?;
        let words: Vec<&str> = command.split_whitespace().collect();
        let timeout = hook.get("timeoutSec").unwrap_or(&hook["timeout"]);
        words
            .windows(2)
            .any(|w| w == ["hook", agent])
            .then(|| match timeout {
                Value::String(text) => text.trim().parse::<f64>().ok(),
                number => number.as_f64(),
            })
            .map(|timeout| timeout.filter(|t| t.is_finite()))
    })
}

/// JSON without `//` and `/* */` comments (Gemini CLI's settings may have them).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push(c);
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdin(name: &str) -> String {
        json!({"session_id": "g1", "transcript_path": "/t", "cwd": "/w",
               "hook_event_name": "BeforeTool", "timestamp": "t", "tool_name": "exit_plan_mode",
               "tool_input": {"plan_filename": name}})
        .to_string()
    }

    #[test]
    fn the_plan_is_read_from_the_plans_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("auth.md"), "# Auth\n\nSteps").unwrap();
        let Call::Review(plan) = parse(&stdin("auth.md"), Some(dir.path())).unwrap() else {
            panic!("a plan to review");
        };
        assert_eq!(plan.text, "# Auth\n\nSteps");
        assert!(plan.path.ends_with("/auth.md"));
    }

    #[test]
    fn missing_empty_or_climbing_plan_files_are_denied_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("empty.md"), "  \n").unwrap();
        for name in ["missing.md", "empty.md", "../../etc/passwd", ""] {
            assert!(
                matches!(
                    parse(&stdin(name), Some(dir.path())).unwrap(),
                    Call::Unusable(_)
                ),
                "{name}"
            );
        }
    }

    #[test]
    fn approval_is_empty_and_everything_else_denies() {
        assert_eq!(
            answer(&Answer::Approve(crate::source::Approval {
                notes: Some("n".into()),
                edit: None,
                accept_edits: false
            })),
            "{}"
        );
        for a in [
            Answer::Wait,
            Answer::Expired,
            Answer::Abandoned,
            Answer::Revise("x".into()),
        ] {
            let v: Value = serde_json::from_str(&answer(&a)).unwrap();
            assert_eq!(v["decision"], "deny", "{a:?}");
        }
        let other =
            json!({"session_id": "g", "cwd": "/", "tool_name": "read_file", "tool_input": {}});
        assert!(matches!(
            parse(&other.to_string(), None).unwrap(),
            Call::NotOurs
        ));
    }

    #[test]
    fn the_hook_knows_how_long_gemini_cli_waits_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let (home, project) = (dir.path().join("home"), dir.path().join("project"));
        let env = |name: &str| -> Option<OsString> {
            match name {
                "HOME" => Some(home.clone().into()),
                "GEMINI_PROJECT_DIR" => Some(project.clone().into()),
                "GEMINI_CLI_SYSTEM_SETTINGS_PATH" => {
                    Some(dir.path().join("none/settings.json").into())
                }
                _ => None,
            }
        };
        assert_eq!(hook_timeout(env), None, "no settings: not known");
        let hook = |timeout: Value| {
            json!({"hooks": {"BeforeTool": [
                {"matcher": "^read_file$", "hooks": [{"type": "command", "command": "other", "timeout": 5}]},
                {"matcher": "^exit_plan_mode$", "hooks": [{"type": "command", "command": "'/opt/my tools/plandesk'  hook gemini", "timeout": timeout}]},
            ]}})
        };
        std::fs::create_dir_all(home.join(".gemini")).unwrap();
        let user = format!(
            "// mine\n{} /* the \"hooks\" // are here */",
            hook(json!(86_400_000))
        );
        std::fs::write(home.join(".gemini/settings.json"), user).unwrap();
        assert_eq!(hook_timeout(env), Some(Duration::from_secs(86_400)));
        std::fs::create_dir_all(project.join(".gemini")).unwrap();
        std::fs::write(
            project.join(".gemini/settings.json"),
            hook(Value::Null).to_string(),
        )
        .unwrap();
        assert_eq!(
            hook_timeout(env),
            Some(Duration::from_secs(60)),
            "the shortest; unset is Gemini CLI's 60 s"
        );
        std::fs::write(
            project.join(".gemini/settings.json"),
            hook(json!(3_000_000_000u64)).to_string(),
        )
        .unwrap();
        assert_eq!(
            hook_timeout(env),
            Some(Duration::from_millis(1)),
            "Node fires longer timers at once"
        );
    }
}
