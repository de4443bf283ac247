//! `plandesk hook AGENT`: the agent's payload read, its plan reviewed, and the answer printed in
//! the agent's own format, once, within the hook's deadline (a watchdog answers "not approved"
//! at it, whatever the hook is stuck on); every failure is answered as not approved.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use plandesk::config::StoreLocation;
use plandesk::source::install;
use plandesk::source::{
    self, claude, codex, copilot, gemini, held, kimi, opencode, pi, review_plan, script,
    stop_requested, Answer, Call, SourceError, WaitSettings,
};
use plandesk::{Engine, EngineError};

use super::deadline::configured_deadline;
use super::watch::AgentWatch;
use crate::cli::runs::ALREADY_DECIDED;
use plandesk::source::deadline::hook_deadline;

/// The agent a hook answers, and so what it prints.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code (PermissionRequest on ExitPlanMode)
    ClaudeCode,
    /// Codex (Stop)
    Codex,
    /// Gemini CLI (BeforeTool on exit_plan_mode)
    Gemini,
    /// Factory Droid (PreToolUse on ExitSpecMode)
    Droid,
    /// Qwen Code (PermissionRequest on exit_plan_mode)
    QwenCode,
    /// Kimi Code (PreToolUse on ExitPlanMode)
    KimiCode,
    /// Copilot CLI (preToolUse on exit_plan_mode)
    Copilot,
    /// OpenCode (Plandesk's plugin, on plan_exit)
    #[value(name = "opencode")]
    OpenCode,
    /// Kilo CLI (the same plugin, on plan_exit)
    Kilo,
    /// Pi (Plandesk's extension: its submit_plan tool)
    Pi,
}

impl Agent {
    fn failure(self, err: &SourceError) -> Option<String> {
        Some(match self {
            Agent::ClaudeCode => claude::failure(err),
            Agent::Codex => codex::failure(err),
            Agent::Gemini => gemini::failure(err),
            Agent::Droid => held::failure(held::Agent::Droid, err),
            Agent::QwenCode => held::failure(held::Agent::QwenCode, err),
            Agent::KimiCode => kimi::failure(err),
            Agent::Copilot => copilot::failure(err),
            Agent::OpenCode | Agent::Kilo | Agent::Pi => script::failure(err),
        })
    }

    /// The exit status `answer` is printed with (0 but for a deny Droid must not let another
    /// hook's allow overrule, and Kimi Code's, which blocks whatever stdout holds); a deny's
    /// reason also goes to stderr then, where they read it.
    fn exit_status(self, answer: Option<&str>) -> u8 {
        let Some(answer) = answer else {
            return 0;
        };
        let status = match (self, self.held()) {
            (Agent::KimiCode, _) => kimi::exit_status(answer),
            (_, Some(held)) => held::exit_status(held, answer),
            _ => return 0,
        };
        if status != 0 {
            let reason = serde_json::from_str::<serde_json::Value>(answer)
                .ok()
                .and_then(|v| {
                    v["hookSpecificOutput"]["permissionDecisionReason"]
                        .as_str()
                        .map(str::to_owned)
                });
            say(&reason.unwrap_or_default());
        }
        status
    }

    /// The agent's plan tool held by a hook in Claude Code's style, if it is one.
    fn held(self) -> Option<held::Agent> {
        match self {
            Agent::Droid => Some(held::Agent::Droid),
            Agent::QwenCode => Some(held::Agent::QwenCode),
            _ => None,
        }
    }
}

/// `plandesk hook AGENT`: reads the agent's payload, waits for a decision, prints the answer.
/// Always answers explicitly (silence, and with most agents a non-zero exit, are read as
/// approval), exiting 0 but for a deny to Droid or Kimi Code ([`Agent::exit_status`]), and
/// always within the hook's deadline: a watchdog thread answers "not
/// approved" at the deadline whatever the hook is stuck on (a payload naming a file that blocks,
/// a store that does not answer), and ends the process.
pub async fn hook(
    agent: Agent,
    data_dir: &Path,
    store: Option<&str>,
    deadline: Option<String>,
) -> ExitCode {
    let started = Instant::now();
    let timeout = agent_timeout(agent);
    // A deadline that cannot be read is refused, but only after the payload is read (an agent
    // writing it to a hook that is already gone could fail in its own way), and within the
    // agent's own timeout all the same.
    let (limit, unusable) = match configured_deadline(deadline) {
        Ok(configured) => (hook_deadline(configured, timeout), None),
        Err(err) => (hook_deadline(None, timeout), Some(err)),
    };
    answer_panics(agent);
    Watchdog::arm(agent, started, limit);
    let answered = match unusable {
        Some(err) => {
            let _ = source::read_stdin(source::MAX_HOOK_INPUT);
            Err(SourceError::Input {
                agent: "the agent",
                message: err.to_string(),
            })
        }
        // The review itself ends a little before the watchdog would, so that an undecided
        // plan is closed as expired (and the agent told so) rather than left to its lease.
        None => run_hook(agent, data_dir, store, started + limit).await,
    };
    let answer = match answered {
        Ok(answer) => answer,
        Err(err) => {
            say(&format!("plandesk hook: {err}"));
            agent.failure(&err)
        }
    };
    if answer_once(answer.as_deref()) {
        return ExitCode::from(agent.exit_status(answer.as_deref()));
    }
    // The watchdog answered: it ends the process.
    std::future::pending().await
}

/// Writes a line to stderr for the agent's log or the person: made safe for a terminal (it
/// may quote the agent's own text), and never a panic if the agent closed its end.
fn say(text: &str) {
    let _ = writeln!(std::io::stderr(), "{}", plandesk::text::terminal_safe(text));
}

/// A panic on the main thread (where the hook's review runs; one in a task is returned to it
/// as an error, one in a thread of its own ends that thread alone) answers "not approved",
/// unless an answer was printed already, and ends the process with that answer's status: an
/// agent reads a crash's silence and status as it likes (Gemini CLI goes on with the plan).
fn answer_panics(agent: Agent) {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() != Some("main") {
            return default(info);
        }
        let err = SourceError::Internal("Plandesk failed while handling the hook".into());
        let answer = agent.failure(&err);
        if answer_once(answer.as_deref()) {
            say(&format!("plandesk hook: {info}"));
            std::process::exit(agent.exit_status(answer.as_deref()).into());
        }
        default(info);
    }));
}

/// Whether the hook has answered: its answer is printed once, by whichever of the hook and its
/// watchdog comes first.
static ANSWERED: std::sync::Mutex<bool> = std::sync::Mutex::new(false);

/// Prints the hook's answer unless one was printed already; `true` if this one was.
fn answer_once(answer: Option<&str>) -> bool {
    let mut answered = ANSWERED.lock().unwrap_or_else(|e| e.into_inner());
    if *answered {
        return false;
    }
    *answered = true;
    if let Some(out) = answer {
        let mut stdout = std::io::stdout();
        let _ = writeln!(stdout, "{out}");
        let _ = stdout.flush();
    }
    true
}

/// The hook's last resort: at its deadline it answers "not approved" and ends the process, so
/// that nothing a payload names (a FIFO, a file on a hung network mount) or a store that does not
/// answer can keep the agent waiting until it times the hook out and lets the plan through.
struct Watchdog;

impl Watchdog {
    fn arm(agent: Agent, started: Instant, limit: Duration) {
        std::thread::spawn(move || {
            std::thread::sleep(limit.saturating_sub(started.elapsed()));
            let err = SourceError::Deadline(limit);
            let answer = agent.failure(&err);
            if answer_once(answer.as_deref()) {
                say(&format!("plandesk hook: {err}"));
                // The plan, if it was submitted, is closed as abandoned once its waiter's lease
                // runs out (nobody renews it).
                std::process::exit(agent.exit_status(answer.as_deref()).into());
            }
        });
    }
}

/// How long the agent waits for this hook: Gemini CLI's, Copilot CLI's, Droid's, Qwen Code's
/// and Kimi Code's from their settings (each agent's own default where its hook is not found
/// there), else the timeout `plandesk install` configures.
fn agent_timeout(agent: Agent) -> Duration {
    let env = |name: &str| std::env::var_os(name);
    let installed = Duration::from_secs(install::HOOK_TIMEOUT_SECS);
    match agent {
        Agent::Gemini => gemini::hook_timeout(env).unwrap_or(installed),
        // Where the hook's entry is not found (another settings file, a wrapper script), the
        // agent's own default is what it waits, not the day `plandesk install` writes.
        Agent::Copilot => copilot::hook_timeout(env).unwrap_or(copilot::DEFAULT_TIMEOUT),
        Agent::Droid => {
            held::hook_timeout(held::Agent::Droid, env).unwrap_or(held::DROID_DEFAULT_TIMEOUT)
        }
        Agent::QwenCode => held::hook_timeout(held::Agent::QwenCode, env).unwrap_or(installed),
        Agent::KimiCode => kimi::hook_timeout(env),
        Agent::ClaudeCode | Agent::Codex | Agent::OpenCode | Agent::Kilo | Agent::Pi => installed,
    }
}

/// How long before the hook's own deadline its review gives up waiting for a person.
fn review_margin(limit: Duration) -> Duration {
    (limit / 5).clamp(Duration::from_millis(250), Duration::from_secs(10))
}

async fn run_hook(
    agent: Agent,
    data_dir: &Path,
    store: Option<&str>,
    answer_by: Instant,
) -> Result<Option<String>, SourceError> {
    // Who started this hook, taken before anything can go away.
    let agent_watch = AgentWatch::start();
    let input =
        source::read_stdin(source::MAX_HOOK_INPUT).map_err(|message| SourceError::Input {
            agent: "the agent",
            message,
        })?;
    let store = StoreLocation::choose(store, data_dir).map_err(EngineError::from)?;
    // What is left of the hook's time once the payload is read and the store opened, less the
    // margin its answer needs.
    let settings = || {
        let left = answer_by.saturating_duration_since(Instant::now());
        WaitSettings {
            data_dir: data_dir.to_owned(),
            deadline: Some(left.saturating_sub(review_margin(left))),
            desktop: true,
        }
    };
    match agent {
        Agent::ClaudeCode => {
            let Some(call) = claude::parse(&input)? else {
                return Ok(None);
            };
            let engine = Engine::open_at(&store, "hook:claude-code").await?;
            let answer =
                review_plan(&engine, call.plan.clone(), &settings(), stop(&agent_watch)).await?;
            Ok(claude::answer(&call, &answer))
        }
        Agent::Codex => {
            let Some(plan) = codex::parse(&input)? else {
                return Ok(None);
            };
            let engine = Engine::open_at(&store, "hook:codex").await?;
            match review_plan(&engine, plan, &settings(), stop(&agent_watch)).await {
                Ok(answer) => Ok(codex::answer(&answer)),
                // This plan was already decided (the Stop that follows a decision): let it stop.
                Err(SourceError::Review(err)) if err.code() == ALREADY_DECIDED => Ok(None),
                Err(err) => Err(err),
            }
        }
        Agent::Droid | Agent::QwenCode => {
            let held = match agent {
                Agent::Droid => held::Agent::Droid,
                _ => held::Agent::QwenCode,
            };
            let call = held::parse(held, &input)?;
            let deny = |reason: &str| held::deny(held, reason, false);
            let answer = |answer: &Answer| held::answer(held, answer);
            let watched = stop(&agent_watch);
            answer_call(
                call,
                &store,
                held.process(),
                settings(),
                watched,
                deny,
                answer,
            )
            .await
        }
        Agent::KimiCode => {
            let home = kimi::home(&|name: &str| std::env::var_os(name));
            let call = kimi::parse(&input, home.as_deref())?;
            let answer = |answer: &Answer| Some(kimi::answer(answer));
            let watched = stop(&agent_watch);
            answer_call(
                call,
                &store,
                "hook:kimi-code",
                settings(),
                watched,
                kimi::deny,
                answer,
            )
            .await
        }
        Agent::Copilot => {
            let state = copilot::state_dir(&|name: &str| std::env::var_os(name));
            let call = copilot::parse(&input, state.as_deref())?;
            // Copilot's Ctrl+C only writes an `abort` to the session's events (watched only
            // while a plan waits).
            let cancelled = match (&call, state.as_deref()) {
                (Call::Review(plan), Some(state)) => {
                    let session = plan.source.session.as_deref().unwrap_or_default();
                    Some(copilot::cancelled(copilot::events_file(state, session)))
                }
                _ => None,
            };
            let stopped = async {
                tokio::select! {
                    () = stop(&agent_watch) => {}
                    () = async {
                        match cancelled {
                            Some(cancelled) => cancelled.await,
                            None => std::future::pending().await,
                        }
                    } => {}
                }
            };
            let answer = |answer: &Answer| Some(copilot::answer(answer));
            answer_call(
                call,
                &store,
                "hook:copilot",
                settings(),
                stopped,
                copilot::deny,
                answer,
            )
            .await
        }
        Agent::OpenCode | Agent::Kilo => {
            let host = match agent {
                Agent::Kilo => opencode::Host::Kilo,
                _ => opencode::Host::OpenCode,
            };
            let call = opencode::parse(&input, host)?;
            let process = format!("hook:{}", host.program());
            let answer = |answer: &Answer| Some(opencode::answer(answer));
            let watched = stop(&agent_watch);
            answer_call(
                call,
                &store,
                &process,
                settings(),
                watched,
                script::deny,
                answer,
            )
            .await
        }
        Agent::Pi => {
            let call = pi::parse(&input)?;
            let answer = |answer: &Answer| Some(pi::answer(answer));
            let watched = stop(&agent_watch);
            answer_call(
                call,
                &store,
                "hook:pi",
                settings(),
                watched,
                script::deny,
                answer,
            )
            .await
        }
        Agent::Gemini => {
            let plans_dir = std::env::var_os(gemini::PLANS_DIR_ENV).map(PathBuf::from);
            let call = gemini::parse(&input, plans_dir.as_deref())?;
            let answer = |answer: &Answer| Some(gemini::answer(answer));
            let watched = stop(&agent_watch);
            answer_call(
                call,
                &store,
                "hook:gemini",
                settings(),
                watched,
                gemini::deny,
                answer,
            )
            .await
        }
    }
}

/// A hook call answered in its agent's words: nothing for another tool (`NotOurs`), `deny`
/// for a plan Plandesk cannot take, and for a plan, the person's decision (`answer`), waited
/// for until `stopped` (the agent gave up) as `process` in the audit trail.
async fn answer_call(
    call: Call,
    store: &StoreLocation,
    process: &str,
    settings: WaitSettings,
    stopped: impl std::future::Future<Output = ()>,
    deny: impl Fn(&str) -> String,
    answer: impl Fn(&Answer) -> Option<String>,
) -> Result<Option<String>, SourceError> {
    match call {
        Call::NotOurs => Ok(None),
        Call::Unusable(reason) => Ok(Some(deny(&reason))),
        Call::Review(plan) => {
            let engine = Engine::open_at(store, process).await?;
            let decided = review_plan(&engine, *plan, &settings, stopped).await?;
            Ok(answer(&decided))
        }
    }
}

/// Resolves when the hook should stop waiting: it is told to (SIGTERM, SIGINT, SIGHUP), or
/// its agent is gone without a word (killed with SIGKILL, crashed).
async fn stop(watch: &AgentWatch) {
    tokio::select! {
        () = stop_requested() => {}
        () = watch.gone() => {}
    }
}
