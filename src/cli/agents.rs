//! The commands outside agents run (`hook`, `mcp`) and the one that sets them up (`install`).
//! A hook always answers its agent, and fails closed: whatever goes wrong on our side, the
//! agent is told the plan is not approved, never left to its own fallback (which for several
//! agents approves).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use plandesk::config::StoreLocation;
use plandesk::source::install::{self, Places, Target};
use plandesk::source::mcp::{self, McpOptions};
use plandesk::source::serve::ServeOptions;
use plandesk::source::{
    self, claude, codex, copilot, gemini, held, opencode, pi, review_plan, script, stop_requested,
    SourceError, WaitSettings,
};
use plandesk::{Engine, EngineError};

use super::runs::ALREADY_DECIDED;

/// Where the deadline can also come from, for hooks installed without one.
pub const DEADLINE_ENV: &str = "PLANDESK_HOOK_DEADLINE";

/// A duration as people write it: `30s`, `10m`, `2h`, `1h 30m` (humantime's forms), or a bare
/// number of seconds (how the README first documented deadlines). Never 0: a deadline of
/// nothing would deny every plan before anyone saw it.
pub fn parse_duration(text: &str) -> Result<Duration> {
    let text = text.trim();
    let duration = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse().map(Duration::from_secs).ok()
    } else {
        humantime::parse_duration(text).ok()
    };
    match duration {
        None => bail!("`{text}` is not a duration such as 30s, 10m, 2h or 1h 30m"),
        Some(d) if d.is_zero() => bail!("a deadline must be longer than 0 s"),
        Some(d) => Ok(d),
    }
}

/// The deadline given on the command line, else in [`DEADLINE_ENV`].
fn configured_deadline(deadline: Option<String>) -> Result<Option<Duration>> {
    let deadline = deadline.or_else(|| std::env::var(DEADLINE_ENV).ok().filter(|d| !d.is_empty()));
    deadline.as_deref().map(parse_duration).transpose()
}

fn wait_settings(data_dir: &Path, deadline: Option<String>) -> Result<WaitSettings> {
    Ok(WaitSettings {
        data_dir: data_dir.to_owned(),
        deadline: configured_deadline(deadline)?,
        desktop: true,
    })
}

/// A hook's deadline: the one configured, but never past the moment its agent stops waiting for
/// it (`agent_timeout`: a timed-out hook's answer is lost, and Gemini CLI and Codex then let
/// the plan through). It answers "not approved" a margin before that.
fn hook_deadline(configured: Option<Duration>, agent_timeout: Duration) -> Duration {
    let margin = (agent_timeout / 5).clamp(Duration::from_millis(500), Duration::from_secs(60));
    let limit = agent_timeout
        .saturating_sub(margin)
        .max(Duration::from_millis(500));
    configured.map_or(limit, |d| d.min(limit))
}

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
            Agent::Copilot => copilot::failure(err),
            Agent::OpenCode | Agent::Kilo | Agent::Pi => script::failure(err),
        })
    }

    /// The exit status `answer` is printed with (0 but for a deny Droid must not let another
    /// hook's allow overrule); a deny's reason also goes to stderr then, where Droid reads it.
    fn exit_status(self, answer: Option<&str>) -> u8 {
        let (Some(held), Some(answer)) = (self.held(), answer) else {
            return 0;
        };
        let status = held::exit_status(held, answer);
        if status != 0 {
            let reason = serde_json::from_str::<serde_json::Value>(answer)
                .ok()
                .and_then(|v| {
                    v["hookSpecificOutput"]["permissionDecisionReason"]
                        .as_str()
                        .map(str::to_owned)
                });
            eprintln!("{}", reason.unwrap_or_default());
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
/// Always exits 0 with an explicit answer (non-zero exits and silence are read as approval by
/// some agents), and always within the hook's deadline: a watchdog thread answers "not
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
            eprintln!(
                "plandesk hook: {}",
                plandesk::text::terminal_safe(&err.to_string())
            );
            agent.failure(&err)
        }
    };
    if answer_once(answer.as_deref()) {
        return ExitCode::from(agent.exit_status(answer.as_deref()));
    }
    // The watchdog answered: it ends the process.
    std::future::pending().await
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
                eprintln!("plandesk hook: {err}");
                // The plan, if it was submitted, is closed as abandoned once its waiter's lease
                // runs out (nobody renews it).
                std::process::exit(agent.exit_status(answer.as_deref()).into());
            }
        });
    }
}

/// How long the agent waits for this hook: Gemini CLI's from its settings, else the timeout
/// `plandesk install` configures.
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
        Agent::Droid => {
            held_hook(held::Agent::Droid, &input, &store, settings(), &agent_watch).await
        }
        Agent::QwenCode => {
            held_hook(
                held::Agent::QwenCode,
                &input,
                &store,
                settings(),
                &agent_watch,
            )
            .await
        }
        Agent::Copilot => {
            let state = copilot::state_dir(&|name: &str| std::env::var_os(name));
            match copilot::parse(&input, state.as_deref())? {
                copilot::Call::NotOurs => Ok(None),
                copilot::Call::Unwritten(reason) => Ok(Some(copilot::deny(&reason))),
                copilot::Call::Review(plan) => {
                    let engine = Engine::open_at(&store, "hook:copilot").await?;
                    // Copilot's Ctrl+C only writes an `abort` to the session's events.
                    let session = plan.source.session.clone().unwrap_or_default();
                    let events = state.as_deref().map(|s| copilot::events_file(s, &session));
                    let cancelled = events.map(copilot::cancelled);
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
                    let answer = review_plan(&engine, *plan, &settings(), stopped).await?;
                    Ok(Some(copilot::answer(&answer)))
                }
            }
        }
        Agent::OpenCode | Agent::Kilo => {
            let host = match agent {
                Agent::Kilo => opencode::Host::Kilo,
                _ => opencode::Host::OpenCode,
            };
            match opencode::parse(&input, host)? {
                opencode::Call::Unwritten(reason) => Ok(Some(script::deny(&reason))),
                opencode::Call::Review(plan) => {
                    let process = format!("hook:{}", host.program());
                    let engine = Engine::open_at(&store, &process).await?;
                    let answer =
                        review_plan(&engine, *plan, &settings(), stop(&agent_watch)).await?;
                    Ok(Some(opencode::answer(&answer)))
                }
            }
        }
        Agent::Pi => match pi::parse(&input)? {
            pi::Call::Unusable(reason) => Ok(Some(script::deny(&reason))),
            pi::Call::Review(plan) => {
                let engine = Engine::open_at(&store, "hook:pi").await?;
                let answer = review_plan(&engine, *plan, &settings(), stop(&agent_watch)).await?;
                Ok(Some(pi::answer(&answer)))
            }
        },
        Agent::Gemini => {
            let plans_dir = std::env::var_os(gemini::PLANS_DIR_ENV).map(PathBuf::from);
            match gemini::parse(&input, plans_dir.as_deref())? {
                gemini::Call::NotOurs => Ok(None),
                gemini::Call::Unwritten(reason) => Ok(Some(gemini::deny(&reason))),
                gemini::Call::Review(plan) => {
                    let engine = Engine::open_at(&store, "hook:gemini").await?;
                    let answer =
                        review_plan(&engine, *plan, &settings(), stop(&agent_watch)).await?;
                    Ok(Some(gemini::answer(&answer)))
                }
            }
        }
    }
}

/// A plan tool held by a hook in Claude Code's style (Droid, Qwen Code).
async fn held_hook(
    agent: held::Agent,
    input: &str,
    store: &StoreLocation,
    settings: WaitSettings,
    agent_watch: &AgentWatch,
) -> Result<Option<String>, SourceError> {
    match held::parse(agent, input)? {
        held::Call::NotOurs => Ok(None),
        held::Call::Unusable(reason) => Ok(Some(held::deny(agent, &reason, false))),
        held::Call::Review(plan) => {
            let engine = Engine::open_at(store, agent.process()).await?;
            let answer = review_plan(&engine, *plan, &settings, stop(agent_watch)).await?;
            Ok(held::answer(agent, &answer))
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

/// The processes from this hook up to the agent that started it, as they were when it
/// started: each is a (process, its parent) link. Agents run a hook either directly (Gemini
/// CLI: `bash -c` execs it) or under a `sh -c` that waits for it (Claude Code); the agent is
/// the first ancestor that is not such a wrapper. An agent that dies without stopping its hook
/// leaves it (or its wrapper) with a new parent: a changed link means the agent is gone.
struct AgentWatch {
    links: Vec<(u32, u32)>,
}

impl AgentWatch {
    /// How often the links are looked at.
    const EVERY: Duration = Duration::from_millis(250);

    #[cfg(unix)]
    fn start() -> Self {
        let mut parent = std::os::unix::process::parent_id();
        let mut links = vec![(std::process::id(), parent)];
        // Wrappers of wrappers (`sh -c "bash -c '…'"`) are rare: three are plenty.
        while links.len() < 4 && is_shell_wrapper(parent) {
            let Some(grandparent) = parent_of(parent) else {
                break;
            };
            links.push((parent, grandparent));
            parent = grandparent;
        }
        AgentWatch { links }
    }

    #[cfg(not(unix))]
    fn start() -> Self {
        AgentWatch { links: Vec::new() }
    }

    /// Whether every process still has the parent it had (a wrapper that is gone counts as
    /// changed).
    fn intact(&self) -> bool {
        self.links.iter().enumerate().all(|(i, &(pid, parent))| {
            let now = if i == 0 {
                current_parent()
            } else {
                parent_of(pid)
            };
            now == Some(parent)
        })
    }

    /// Resolves once the agent is gone; never if there is nothing to watch.
    async fn gone(&self) {
        if self.links.is_empty() {
            return std::future::pending().await;
        }
        while self.intact() {
            tokio::time::sleep(Self::EVERY).await;
        }
    }
}

#[cfg(unix)]
fn current_parent() -> Option<u32> {
    Some(std::os::unix::process::parent_id())
}

#[cfg(not(unix))]
fn current_parent() -> Option<u32> {
    None
}

/// A process's parent, from `/proc/PID/stat` (Linux; `None` elsewhere or once it is gone).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `PID (COMMAND) STATE PPID …`; the command may hold spaces and parentheses.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Whether `pid` is a shell running a command string (`sh -c …`, `bash -lc …`): a wrapper that
/// waits for the hook, not the agent itself.
fn is_shell_wrapper(pid: u32) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let mut args = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned());
    let Some(program) = args.next() else {
        return false;
    };
    let name = program.rsplit('/').next().unwrap_or_default();
    let shells = ["sh", "dash", "bash", "zsh", "ksh", "mksh", "ash", "busybox"];
    shells.contains(&name.trim_start_matches('-'))
        && args.any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'))
}

/// `plandesk mcp`: serves until the client closes stdin.
pub async fn mcp(
    data_dir: &Path,
    store: &StoreLocation,
    workspace: Option<PathBuf>,
    plans_dir: Option<String>,
    deadline: Option<String>,
) -> Result<ExitCode> {
    let workspace = match workspace {
        Some(dir) => dir,
        None => std::env::current_dir()?,
    };
    let engine = Engine::open_at(store, "mcp").await?;
    let options = McpOptions {
        workspace,
        plans_dir,
        wait: wait_settings(data_dir, deadline)?,
    };
    mcp::serve(engine, options).await.map_err(|e| anyhow!(e))?;
    Ok(ExitCode::SUCCESS)
}

/// `plandesk serve`: serves until SIGINT or SIGTERM, then closes waiting plans as abandoned.
pub async fn serve(
    data_dir: &Path,
    store: &StoreLocation,
    listen: &str,
    (deadline, hook_timeout): (Option<String>, &str),
    (public_url, max_connections): (Option<&str>, Option<usize>),
) -> Result<ExitCode> {
    // A server tells nobody on its own desktop: the app, hooks on a desktop and the inbox do.
    let mcp_wait = WaitSettings {
        desktop: false,
        ..wait_settings(data_dir, deadline)?
    };
    let mut hook_wait = mcp_wait.clone();
    hook_wait.deadline = Some(hook_deadline(
        hook_wait.deadline,
        parse_duration(hook_timeout)?,
    ));
    let engine = Engine::open_at(store, "serve").await?;
    if let Some(url) = public_url {
        let url = source::serve::web::pair::public_url(url)?;
        engine
            .set_setting(source::serve::web::pair::PUBLIC_URL_SETTING, Some(&url))
            .await?;
    }
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow!("cannot listen on {listen}: {e}"))?;
    let address = listener.local_addr()?;
    eprintln!(
        "plandesk: serving on http://{address}: MCP at /mcp, Claude Code hooks at /hooks/claude, \
         the review for browsers at / (sign one in with `plandesk pair`)"
    );
    if !address.ip().is_loopback() {
        eprintln!(
            "plandesk: warning: {address} is reachable from other machines and this server \
             speaks plain HTTP: put TLS in front of it with a reverse proxy (see the README)"
        );
    }
    let options = ServeOptions {
        mcp_wait,
        hook_wait,
        max_connections,
    };
    source::serve::serve(engine, listener, options, stop_requested()).await;
    eprintln!("plandesk: stopped serving");
    Ok(ExitCode::SUCCESS)
}

/// `plandesk install TARGET [--uninstall] [--print] [--no-record]`.
pub fn install(
    target: Target,
    uninstall: bool,
    print: bool,
    record: bool,
    data_dir: Option<PathBuf>,
) -> Result<ExitCode> {
    let exe = std::env::current_exe()?;
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    let mut places = Places::from_env(exe, data_dir)?;
    places.record = record;
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
        // Installing again is how a person asks whether it still works.
        if let Some(checked) = install::check(target, &change) {
            eprintln!("plandesk: {checked}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let backup = install::apply(&change, now)?;
    let what = match target {
        Target::Mcp => "MCP server",
        Target::OpenCode | Target::Kilo => "plugin",
        Target::Pi => "extension",
        _ => "hook",
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
    if let Some(note) = &change.note {
        eprintln!("plandesk: {note}");
    }
    if let Some(checked) = install::check(target, &change) {
        eprintln!("plandesk: {checked}");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_read_as_people_write_them() {
        for (text, secs) in [
            ("30s", 30),
            ("10m", 600),
            ("2h", 7200),
            ("1h 30m", 5400),
            ("1h30m", 5400),
            ("90", 90),
            (" 45 ", 45),
            ("1.5h", 5400),
            ("1day", 86_400),
        ] {
            assert_eq!(
                parse_duration(text).unwrap(),
                Duration::from_secs(secs),
                "{text:?}"
            );
        }
        assert_eq!(
            parse_duration("1500ms").unwrap(),
            Duration::from_millis(1500)
        );
    }

    #[test]
    fn a_duration_that_is_not_one_or_is_nothing_is_refused() {
        for text in [
            "",
            "soon",
            "10x",
            "-5s",
            "2h soon",
            "s",
            "99999999999999999999",
        ] {
            let err = parse_duration(text).unwrap_err().to_string();
            assert!(
                err.contains("is not a duration such as 30s, 10m, 2h or 1h 30m"),
                "{text:?}: {err}"
            );
        }
        for text in ["0", "0s", "0h 0m"] {
            let err = parse_duration(text).unwrap_err().to_string();
            assert_eq!(err, "a deadline must be longer than 0 s", "{text:?}");
        }
    }

    #[test]
    fn a_hook_answers_before_its_agent_stops_waiting() {
        let day = Duration::from_secs(86_400);
        assert_eq!(hook_deadline(None, day), day - Duration::from_secs(60));
        let short = Some(Duration::from_secs(3));
        assert_eq!(hook_deadline(short, day), Duration::from_secs(3));
        assert_eq!(
            hook_deadline(short, Duration::from_secs(2)),
            Duration::from_millis(1500),
            "never past the agent's own timeout"
        );
        assert_eq!(
            hook_deadline(None, Duration::from_secs(60)),
            Duration::from_secs(48)
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_agent_is_the_first_ancestor_that_is_not_a_shell_wrapper() {
        let watch = AgentWatch::start();
        assert_eq!(watch.links[0].0, std::process::id());
        assert!(watch.intact());
        let parent = parent_of(std::process::id()).unwrap();
        assert_eq!(current_parent(), Some(parent));
        let mut wrapper = std::process::Command::new("sh")
            .args(["-c", "sleep 30; exit"])
            .spawn()
            .unwrap();
        let mut found = false;
        for _ in 0..100 {
            found = is_shell_wrapper(wrapper.id());
            if found {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(found, "sh -c is a wrapper");
        assert_eq!(parent_of(wrapper.id()), Some(std::process::id()));
        wrapper.kill().unwrap();
        wrapper.wait().unwrap();
        assert_eq!(parent_of(wrapper.id()), None, "gone");
        assert!(!is_shell_wrapper(std::process::id()));
    }
}
