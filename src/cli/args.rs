//! The command line as clap reads it: every command with its arguments, flags and choices, and
//! the help people see for each.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use plandesk::engine::DEFAULT_MAX_STEPS;

use super::choices::{InstallTarget, Mode, Provider};
use super::{agents, choices, record};

#[derive(Debug, Parser)]
#[command(
    name = "plandesk",
    version,
    about = "Review and steer an AI agent's implementation plans"
)]
pub(super) struct Cli {
    /// Where the store lives [default: $PLANDESK_DATA_DIR, else the user's data folder]
    #[arg(long, global = true, value_name = "DIR")]
    pub(super) data_dir: Option<PathBuf>,
    /// A team's shared store, `postgres://USER@HOST/DATABASE` [default: $PLANDESK_STORE, else
    /// the SQLite file in the data folder]
    #[arg(long, global = true, value_name = "URL")]
    pub(super) store: Option<String>,
    /// Machine-readable output: one chunk per line for streams, one JSON document for listings
    #[arg(long, global = true)]
    pub(super) json: bool,
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Debug, Subcommand)]
pub(super) enum Command {
    /// Start a run: the agent plans, submits the plan, and waits for your decision
    Run {
        /// Workspace folder the agent works in [default: the current folder]
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// `demo`, `openai:MODEL`, `anthropic:MODEL`, `ollama:MODEL` (each may end in `@BASE_URL`)
        /// or `scripted:FILE` [default: `plandesk model` says which]
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// Mode to start in
        #[arg(long, value_enum, default_value_t = Mode::Plan)]
        mode: Mode,
        /// Run approval-gated tools (file writes in build mode) without asking
        #[arg(long)]
        auto_approve: bool,
        /// Most model calls per stream
        #[arg(long, default_value_t = DEFAULT_MAX_STEPS, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        max_steps: u32,
        /// Plans folder, relative to the workspace
        #[arg(long, value_name = "DIR")]
        plans_dir: Option<String>,
        /// What the agent should do
        #[arg(required = true, num_args = 1.., value_name = "PROMPT")]
        prompt: Vec<String>,
    },
    /// Approve what a run waits for: its plan, or a gated tool call
    Approve {
        run_id: String,
        /// A note for the agent, read after the approval ("Reviewer notes: …")
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
        #[arg(long, value_name = "ID")]
        tool_call_id: Option<String>,
        /// The plan revision you reviewed (sha256 or a prefix); refused if the plan changed since
        #[arg(long, value_name = "SHA256")]
        revision: Option<String>,
        /// Claude Code's plan: it then edits files without asking, for the rest of its session
        #[arg(long)]
        accept_edits: bool,
    },
    /// Reject a plan (feedback goes to the model) or decline a gated tool call (feedback = reason)
    Reject {
        run_id: String,
        /// What to change; without it the run waits for your next message (`plandesk send`)
        #[arg(long, value_name = "TEXT")]
        feedback: Option<String>,
        #[arg(long, value_name = "ID")]
        tool_call_id: Option<String>,
        #[arg(long, value_name = "SHA256")]
        revision: Option<String>,
    },
    /// Resume with raw resume data; without --data, continue a run that was interrupted
    Resume {
        run_id: String,
        /// Resume data as JSON, e.g. '{"action":"approved"}'
        #[arg(long, value_name = "JSON")]
        data: Option<String>,
        #[arg(long, value_name = "ID")]
        tool_call_id: Option<String>,
    },
    /// Send the run your next message; it continues with its whole history
    Send {
        run_id: String,
        #[arg(required = true, num_args = 1.., value_name = "TEXT")]
        text: Vec<String>,
    },
    /// Everything waiting for a decision, newest first
    Pending,
    /// Every run, most recently active first
    Runs,
    /// Every plan revision (of one run) with its decision
    History {
        run_id: Option<String>,
        /// Only revisions with these words in a row, in the title or the plan (the last may be the
        /// start of a word)
        #[arg(long, value_name = "WORDS")]
        search: Option<String>,
    },
    /// One plan revision (by id or sha256 prefix)
    Show {
        revision: String,
        /// Print the sanitised HTML rendering instead of the markdown
        #[arg(long)]
        html: bool,
    },
    /// Two plan revisions side by side, changed words marked
    Diff { a: String, b: String },
    /// Comment on lines of a plan revision; rejecting it sends its open comments to the agent,
    /// each quoting its lines
    Comment {
        /// A plan revision (number, #N, or 8+ hex digits of its sha256)
        revision: String,
        /// The lines, as numbered in the plan file: N or N-M
        #[arg(long, value_name = "N[-M]")]
        lines: String,
        #[arg(required = true)]
        text: Vec<String>,
    },
    /// The comments to see with a revision: its own, and those on earlier revisions of the plan
    /// (addressed if their lines changed, not addressed if not)
    Comments { revision: String },
    /// Resolve a comment (it is not sent again, nor shown as open), or reopen it
    Resolve {
        comment: i64,
        #[arg(long)]
        reopen: bool,
    },
    /// Replace a waiting plan with your version: a revision by you, written to the plan file;
    /// approving it tells the agent what you changed
    Edit {
        revision: String,
        /// Your version of the plan (markdown); `-` reads standard input
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
    },
    /// The audit trail: every submission, comment, edit, decision and mode switch, who and
    /// when; `--json` prints it as JSON lines, `--export` saves it with its head, `--verify`
    /// checks its hash chain and its end
    Audit {
        #[arg(conflicts_with_all = ["verify", "export"])]
        run_id: Option<String>,
        /// Check that no entry was changed or removed (exit 1 and name it if one was), and say
        /// what could not be checked
        #[arg(long)]
        verify: bool,
        /// With --verify: check this export instead of the store
        #[arg(long, value_name = "EXPORT", requires = "verify")]
        file: Option<PathBuf>,
        /// Save the whole trail to FILE as JSON lines, its head (entry count, newest hash) first
        #[arg(long, value_name = "FILE", conflicts_with = "verify")]
        export: Option<PathBuf>,
    },
    /// The model new runs use, and why; `set` saves a choice, `clear` forgets it
    Model {
        #[command(subcommand)]
        action: Option<ModelAction>,
    },
    /// Review an outside agent's plan: the hook an agent runs (`plandesk install` sets it up).
    /// Reads the agent's payload on stdin, waits for your decision, prints the agent's answer
    Hook {
        #[arg(value_enum)]
        agent: agents::Agent,
        /// Answer "not approved" when nobody decides within this long (30s, 10m, 2h,
        /// 1h 30m; a bare number is seconds)
        /// [default: $PLANDESK_HOOK_DEADLINE, else no deadline]
        #[arg(long, value_name = "DURATION")]
        deadline: Option<String>,
    },
    /// An MCP server on stdin/stdout whose `submit_plan` hands plans to you for review
    Mcp {
        /// The folder plan paths are relative to [default: the current folder]
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Plans folder, relative to the workspace [default: .plandesk/plans]
        #[arg(long, value_name = "DIR")]
        plans_dir: Option<String>,
        /// Answer "not approved" when nobody decides within this long (30s, 10m, 2h,
        /// 1h 30m; a bare number is seconds)
        #[arg(long, value_name = "DURATION")]
        deadline: Option<String>,
    },
    /// Take plans from agents on other machines over HTTP: MCP at /mcp, Claude Code's
    /// `type: "http"` hooks at /hooks/claude; every request needs a bearer token (`plandesk
    /// token`). Put TLS in front with a reverse proxy
    Serve(ServeArgs),
    /// Sign a browser in to the review served by `plandesk serve`: prints a one-time link
    /// (valid 10 minutes) and shows it as a QR code to scan with a phone
    Pair {
        /// The reviewer's name in the audit trail [default: yours on this computer]
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        /// The server's address as the browser reaches it [default: what `serve --public-url`
        /// saved, else http://127.0.0.1:8765]
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
    /// Browsers signed in to the web review: list them, or sign one out
    Session {
        #[command(subcommand)]
        action: SessionAction,
    },
    /// Tell people off the desktop: `plandesk serve` POSTs to each webhook when a plan becomes
    /// pending (title, agent, age and a link into the web review)
    Webhook {
        #[command(subcommand)]
        action: WebhookAction,
    },
    /// Add Plandesk's hook (or MCP server) to an agent's settings, or remove it
    Install {
        #[arg(value_enum)]
        agent: InstallTarget,
        /// Remove Plandesk's entry instead
        #[arg(long)]
        uninstall: bool,
        /// Print the settings file as it would be, and write nothing
        #[arg(long)]
        print: bool,
        /// Leave out (or remove) the hooks that record what the agent does after its plan is
        /// approved (`plandesk progress` then shows no work)
        #[arg(long)]
        no_record: bool,
    },
    /// Record what an agent did after its plan was approved: the after-tool hook an agent runs
    /// (`plandesk install` sets it up). Reads the payload on stdin, prints nothing, exits 0
    #[command(hide = true)]
    Record {
        #[arg(value_enum)]
        agent: record::Agent,
    },
    /// What the agent did after its plan was approved, step by step, and what it changed
    /// outside the plan
    Progress {
        /// A run (its newest approved plan), or an approved plan revision (number, #N, or 8+
        /// hex digits of its sha256)
        #[arg(value_name = "RUN|REVISION")]
        key: String,
        /// Print this changed file's diff since the approval instead (a path as listed)
        #[arg(long, value_name = "PATH")]
        diff: Option<String>,
    },
    /// Mark a step of an approved plan done or not applicable by hand (or clear the mark)
    Mark {
        #[arg(value_name = "RUN|REVISION")]
        key: String,
        /// The step's number, as `plandesk progress` shows it
        #[arg(value_name = "STEP")]
        step: usize,
        #[arg(value_enum)]
        mark: choices::StepMark,
    },
    /// Show a plan in the desktop app: starts it, or brings the running one forward on it
    Open {
        /// A plan revision (number, #N, or 8+ hex digits of its sha256), or a run id or prefix
        #[arg(value_name = "REVISION|RUN")]
        key: String,
    },
    /// The store this data folder uses; `set` saves a team's PostgreSQL database for it (the
    /// app, the CLI and every hook on this folder then share it), `clear` goes back to the
    /// SQLite file
    Store {
        #[command(subcommand)]
        action: Option<StoreAction>,
    },
    /// Bearer tokens for `plandesk serve`: one per machine or agent; only hashes are stored
    Token {
        #[command(subcommand)]
        action: TokenAction,
    },
    /// API keys in the OS keyring (the environment's OPENAI_API_KEY / ANTHROPIC_API_KEY win)
    Key {
        #[command(subcommand)]
        action: KeyAction,
    },
    /// Print the completion script for a shell, e.g. `plandesk completions bash >
    /// ~/.local/share/bash-completion/completions/plandesk`
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
pub(super) enum ModelAction {
    /// Save the model new runs use when `--model` is not given
    Set { spec: String },
    /// Forget the saved model: the default is chosen from what is configured
    Clear,
}

#[derive(Debug, Subcommand)]
pub(super) enum StoreAction {
    /// Use a team's PostgreSQL database: postgres://USER@HOST/DATABASE (the password goes in
    /// ~/.pgpass or PGPASSWORD, never in the URL); checked before it is saved
    Set { url: String },
    /// Go back to this data folder's own SQLite file
    Clear,
}

#[derive(Debug, Subcommand)]
pub(super) enum TokenAction {
    /// Create a token and print its secret (shown this once)
    Create { name: String },
    /// Every token, active and revoked (never a secret)
    List,
    /// Revoke a token: requests carrying it are refused from then on
    Revoke { name: String },
}

#[derive(Debug, Subcommand)]
pub(super) enum WebhookAction {
    /// Add a webhook (one with the same URL is replaced)
    Add {
        url: String,
        /// json: Plandesk's JSON; ntfy: an ntfy topic URL (https://ntfy.sh/TOPIC); slack: a
        /// Slack incoming webhook
        #[arg(long, value_parser = ["json", "ntfy", "slack"], default_value = "json")]
        format: String,
        /// Send the plan's text too (by default only its title and a link)
        #[arg(long)]
        with_plan: bool,
    },
    /// Every webhook, with how its last delivery went
    List,
    /// Remove a webhook
    Remove { url: String },
}

#[derive(Debug, Subcommand)]
pub(super) enum SessionAction {
    /// Every session and unused sign-in link, active and ended (never a secret)
    List,
    /// Sign a browser out: its session is refused from then on
    Revoke { name: String },
}

#[derive(Debug, Subcommand)]
pub(super) enum KeyAction {
    /// Save a provider's key in the OS keyring, read from standard input
    Set {
        #[arg(value_enum)]
        provider: Provider,
    },
    /// Remove a provider's key from the OS keyring
    Rm {
        #[arg(value_enum)]
        provider: Provider,
    },
    /// Which providers have a key, and where it comes from (never the key itself)
    List,
}

/// `plandesk serve`'s options.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The address to listen on
    #[arg(long, value_name = "ADDR", default_value = plandesk::source::serve::DEFAULT_LISTEN)]
    pub listen: String,
    /// Answer "not approved" when nobody decides within this long (30s, 10m, 2h,
    /// 1h 30m; a bare number is seconds)
    /// [default: $PLANDESK_HOOK_DEADLINE, else no deadline for MCP calls]
    #[arg(long, value_name = "DURATION")]
    pub deadline: Option<String>,
    /// The `timeout` of the Claude Code http hook pointed here: its plans are answered
    /// before it runs out [default: 1 day, as the README's hook says]
    #[arg(long, value_name = "DURATION")]
    pub hook_timeout: Option<String>,
    /// The address browsers reach this server at (the proxy's https://… in front of it):
    /// saved, for the links of `plandesk pair`
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Connections served at once, each waiting agent holding one [default: as many as
    /// the OS lets this process open]
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Requests one token may have waiting at once; more are refused (a Claude Code hook
    /// with a deny) [default: half the connections]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_per_token: Option<u64>,
    /// A reverse proxy in front of this server (repeat for each): a browser's address is
    /// then the one it puts last in `X-Forwarded-For`, for the limit on sign-in attempts.
    /// Only for a proxy that appends the address it was reached from to that header (Caddy
    /// does; nginx with `proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for`)
    #[arg(long = "trusted-proxy", value_name = "ADDR")]
    pub trusted_proxies: Vec<std::net::IpAddr>,
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;
    use clap::CommandFactory;
    use plandesk::secret::KeyProvider;
    use plandesk::source::install::Target;

    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("plandesk").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_wrong_choice_is_refused_by_clap_listing_the_choices() {
        for (args, choices) in [
            (
                &["install", "cursor"][..],
                "claude-code, codex, gemini, droid, qwen-code, kimi-code, copilot, opencode, kilo, pi, mcp",
            ),
            (
                &["hook", "mcp"],
                "claude-code, codex, gemini, droid, qwen-code, kimi-code, copilot, opencode, kilo, pi",
            ),
            (&["run", "--mode", "yolo", "Add a cache"], "plan, build"),
            (&["key", "set", "google"], "openai, anthropic"),
            (&["key", "rm", "OpenAI"], "openai, anthropic"),
        ] {
            let err = parse(args).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidValue, "{args:?}: {err}");
            assert!(
                err.to_string()
                    .contains(&format!("[possible values: {choices}]")),
                "clap's own error names every choice: {err}"
            );
        }
    }

    #[test]
    fn choices_become_the_librarys_own() {
        let install = |name: &str| match parse(&["install", name]).unwrap().command {
            Command::Install { agent, .. } => Target::from(agent),
            other => panic!("{other:?}"),
        };
        assert_eq!(install("claude-code"), Target::ClaudeCode);
        assert_eq!(install("claude"), Target::ClaudeCode, "an alias kept");
        assert_eq!(install("gemini-cli"), Target::Gemini, "an alias kept");
        assert_eq!(install("mcp"), Target::Mcp);
        match parse(&["run", "Add a cache"]).unwrap().command {
            Command::Run { mode, .. } => assert_eq!(mode.name(), plandesk::mode::PLAN),
            other => panic!("{other:?}"),
        }
        assert_eq!(Mode::Build.name(), plandesk::mode::BUILD);
        match parse(&["key", "set", "openai"]).unwrap().command {
            Command::Key {
                action: KeyAction::Set { provider },
            } => assert_eq!(KeyProvider::from(provider), KeyProvider::OpenAi),
            other => panic!("{other:?}"),
        }
    }
}
