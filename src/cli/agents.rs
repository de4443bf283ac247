//! The commands outside agents run (`hook`, `mcp`) and the one that sets them up (`install`).
//! A hook always answers its agent, and fails closed: whatever goes wrong on our side, the
//! agent is told the plan is not approved, never left to its own fallback (which for several
//! agents approves).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use plandesk::review::ReviewError;
use plandesk::source::install::{self, Places, Target};
use plandesk::source::mcp::{self, McpOptions};
use plandesk::source::{
    self, claude, codex, gemini, review_plan, stop_requested, SourceError, WaitSettings,
};
use plandesk::store::StoreError;
use plandesk::Engine;

/// Where the deadline can also come from, for hooks installed without one.
pub const DEADLINE_ENV: &str = "PLANDESK_HOOK_DEADLINE";

/// `30s`, `10m`, `2h` or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&text[..i], c),
        _ => (text, 's'),
    };
    let number: u64 = number
        .parse()
        .map_err(|_| anyhow!("`{text}` is not a duration such as 30s, 10m or 2h"))?;
    let seconds = match unit {
        's' => number,
        'm' => number.saturating_mul(60),
        'h' => number.saturating_mul(3600),
        _ => bail!("`{text}` is not a duration such as 30s, 10m or 2h"),
    };
    if seconds == 0 {
        bail!("a deadline must be longer than 0 s");
    }
    Ok(Duration::from_secs(seconds))
}

fn wait_settings(data_dir: &Path, deadline: Option<String>) -> Result<WaitSettings> {
    let deadline = deadline.or_else(|| std::env::var(DEADLINE_ENV).ok().filter(|d| !d.is_empty()));
    Ok(WaitSettings {
        data_dir: data_dir.to_owned(),
        deadline: deadline.as_deref().map(parse_duration).transpose()?,
    })
}

/// What a hook prints, for each agent.
#[derive(Debug, Clone, Copy)]
pub enum Agent {
    ClaudeCode,
    Codex,
    Gemini,
}

impl Agent {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "claude-code" => Some(Agent::ClaudeCode),
            "codex" => Some(Agent::Codex),
            "gemini" => Some(Agent::Gemini),
            _ => None,
        }
    }

    fn failure(self, err: &SourceError) -> Option<String> {
        Some(match self {
            Agent::ClaudeCode => claude::failure(err),
            Agent::Codex => codex::failure(err),
            Agent::Gemini => gemini::failure(err),
        })
    }
}

/// `plandesk hook AGENT`: reads the agent's payload, waits for a decision, prints the answer.
/// Always exits 0 with an explicit answer (non-zero exits and silence are read as approval by
/// some agents).
pub async fn hook(agent: Agent, data_dir: &Path, deadline: Option<String>) -> ExitCode {
    let answer = match run_hook(agent, data_dir, deadline).await {
        Ok(answer) => answer,
        Err(err) => {
            eprintln!("plandesk hook: {err}");
            agent.failure(&err)
        }
    };
    if let Some(out) = answer {
        let mut stdout = std::io::stdout();
        let _ = writeln!(stdout, "{out}");
        let _ = stdout.flush();
    }
    ExitCode::SUCCESS
}

async fn run_hook(
    agent: Agent,
    data_dir: &Path,
    deadline: Option<String>,
) -> Result<Option<String>, SourceError> {
    let input =
        source::read_stdin(source::MAX_HOOK_INPUT).map_err(|message| SourceError::Input {
            agent: "the agent",
            message,
        })?;
    let settings = wait_settings(data_dir, deadline).map_err(|e| SourceError::Input {
        agent: "the agent",
        message: e.to_string(),
    })?;
    match agent {
        Agent::ClaudeCode => {
            let Some(call) = claude::parse(&input)? else {
                return Ok(None);
            };
            let engine = Engine::open_as(data_dir, "hook:claude-code")?;
            let answer =
                review_plan(&engine, call.plan.clone(), &settings, stop_requested()).await?;
            Ok(claude::answer(&call, &answer))
        }
        Agent::Codex => {
            let Some(plan) = codex::parse(&input)? else {
                return Ok(None);
            };
            let engine = Engine::open_as(data_dir, "hook:codex")?;
            match review_plan(&engine, plan, &settings, stop_requested()).await {
                Ok(answer) => Ok(codex::answer(&answer)),
                // This plan was already decided (the Stop that follows a decision): let it stop.
                Err(SourceError::Review(ReviewError::Store(StoreError::AlreadyDecided {
                    ..
                }))) => Ok(None),
                Err(err) => Err(err),
            }
        }
        Agent::Gemini => {
            let plans_dir = std::env::var_os(gemini::PLANS_DIR_ENV).map(PathBuf::from);
            match gemini::parse(&input, plans_dir.as_deref())? {
                gemini::Call::NotOurs => Ok(None),
                gemini::Call::Unwritten(reason) => Ok(Some(gemini::deny(&reason))),
                gemini::Call::Review(plan) => {
                    let engine = Engine::open_as(data_dir, "hook:gemini")?;
                    let answer = review_plan(&engine, plan, &settings, stop_requested()).await?;
                    Ok(Some(gemini::answer(&answer)))
                }
            }
        }
    }
}

/// `plandesk mcp`: serves until the client closes stdin.
pub async fn mcp(
    data_dir: &Path,
    workspace: Option<PathBuf>,
    plans_dir: Option<String>,
    deadline: Option<String>,
) -> Result<ExitCode> {
    let workspace = match workspace {
        Some(dir) => dir,
        None => std::env::current_dir()?,
    };
    let engine = Engine::open_as(data_dir, "mcp")?;
    let options = McpOptions {
        workspace,
        plans_dir,
        wait: wait_settings(data_dir, deadline)?,
    };
    mcp::serve(engine, options).await.map_err(|e| anyhow!(e))?;
    Ok(ExitCode::SUCCESS)
}

/// `plandesk install TARGET [--uninstall] [--print]`.
pub fn install(
    target: &str,
    uninstall: bool,
    print: bool,
    data_dir: Option<PathBuf>,
) -> Result<ExitCode> {
    let target = Target::parse(target).ok_or_else(|| anyhow!("unknown agent `{target}`"))?;
    let exe = std::env::current_exe()?;
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    let places = Places::from_env(exe, data_dir)?;
    let change = install::plan(target, uninstall, &places)?;
    let agent = source::agent_name(target.source());
    if print {
        print!("{}", change.after);
        eprintln!(
            "plandesk: this is {} as it would be (nothing written)",
            change.file.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let verb = if uninstall {
        "removed from"
    } else {
        "installed in"
    };
    if !change.changes_anything() {
        eprintln!(
            "plandesk: nothing to change in {} (already {})",
            change.file.display(),
            if uninstall {
                "without Plandesk"
            } else {
                "set up"
            }
        );
        return Ok(ExitCode::SUCCESS);
    }
    let backup = install::apply(&change, now)?;
    let what = if target == Target::Mcp {
        "MCP server"
    } else {
        "hook"
    };
    eprintln!(
        "plandesk: the {what} for {agent} is {verb} {}",
        change.file.display()
    );
    if let Some(backup) = backup {
        eprintln!(
            "plandesk: the previous file is kept as {}",
            backup.display()
        );
    }
    if let Some(note) = change.note {
        eprintln!("plandesk: {note}");
    }
    Ok(ExitCode::SUCCESS)
}
