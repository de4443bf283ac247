//! Argument parsing and command dispatch for the `plandesk` binary.

mod agents;
mod open;
mod print;
mod reviewing;
mod tokens;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Parser, Subcommand};
use plandesk::config::{default_data_dir, StoreLocation};
use plandesk::engine::DEFAULT_MAX_STEPS;
use plandesk::model::select::{self, DefaultModel, MODEL_SETTING};
use plandesk::review;
use plandesk::run::RunError;
use plandesk::secret::{self, ApiKey, KeyError, KeyProvider, KeySource};
use plandesk::{Engine, EngineError, RunStatus, StartOptions, Verdict};

#[derive(Debug, Parser)]
#[command(
    name = "plandesk",
    version,
    about = "Review and steer an AI agent's implementation plans"
)]
struct Cli {
    /// Where the store lives [default: $PLANDESK_DATA_DIR, else the user's data folder]
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// A team's shared store, `postgres://USER@HOST/DATABASE` [default: $PLANDESK_STORE, else
    /// the SQLite file in the data folder]
    #[arg(long, global = true, value_name = "URL")]
    store: Option<String>,
    /// Machine-readable output: one chunk per line for streams, one JSON document for listings
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
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
        #[arg(long, default_value = "plan", value_parser = ["plan", "build"])]
        mode: String,
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
        #[arg(value_parser = ["claude-code", "codex", "gemini"])]
        agent: String,
        /// Answer "not approved" when nobody decides within this long (30s, 10m, 2h)
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
        /// Answer "not approved" when nobody decides within this long (30s, 10m, 2h)
        #[arg(long, value_name = "DURATION")]
        deadline: Option<String>,
    },
    /// Take plans from agents on other machines over HTTP: MCP at /mcp, Claude Code's
    /// `type: "http"` hooks at /hooks/claude; every request needs a bearer token (`plandesk
    /// token`). Put TLS in front with a reverse proxy
    Serve {
        /// The address to listen on
        #[arg(long, value_name = "ADDR", default_value = plandesk::source::serve::DEFAULT_LISTEN)]
        listen: String,
        /// Answer "not approved" when nobody decides within this long (30s, 10m, 2h)
        /// [default: $PLANDESK_HOOK_DEADLINE, else no deadline for MCP calls]
        #[arg(long, value_name = "DURATION")]
        deadline: Option<String>,
        /// The `timeout` of the Claude Code http hook pointed here: its plans are answered
        /// before it runs out
        #[arg(long, value_name = "DURATION", default_value = "86400s")]
        hook_timeout: String,
    },
    /// Add Plandesk's hook (or MCP server) to an agent's settings, or remove it
    Install {
        #[arg(value_parser = ["claude-code", "codex", "gemini", "mcp"])]
        agent: String,
        /// Remove Plandesk's entry instead
        #[arg(long)]
        uninstall: bool,
        /// Print the settings file as it would be, and write nothing
        #[arg(long)]
        print: bool,
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
}

#[derive(Debug, Subcommand)]
enum ModelAction {
    /// Save the model new runs use when `--model` is not given
    Set { spec: String },
    /// Forget the saved model: the default is chosen from what is configured
    Clear,
}

#[derive(Debug, Subcommand)]
enum StoreAction {
    /// Use a team's PostgreSQL database: postgres://USER@HOST/DATABASE (the password goes in
    /// ~/.pgpass or PGPASSWORD, never in the URL); checked before it is saved
    Set { url: String },
    /// Go back to this data folder's own SQLite file
    Clear,
}

#[derive(Debug, Subcommand)]
enum TokenAction {
    /// Create a token and print its secret (shown this once)
    Create { name: String },
    /// Every token, active and revoked (never a secret)
    List,
    /// Revoke a token: requests carrying it are refused from then on
    Revoke { name: String },
}

#[derive(Debug, Subcommand)]
enum KeyAction {
    /// Save a provider's key in the OS keyring, read from standard input
    Set {
        #[arg(value_parser = ["openai", "anthropic"])]
        provider: String,
    },
    /// Remove a provider's key from the OS keyring
    Rm {
        #[arg(value_parser = ["openai", "anthropic"])]
        provider: String,
    },
    /// Which providers have a key, and where it comes from (never the key itself)
    List,
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => return fail(&anyhow!("cannot start the async runtime: {err}")),
    };
    match runtime.block_on(dispatch(cli)) {
        Ok(code) => code,
        Err(err) => fail(&err),
    }
}

fn fail(err: &anyhow::Error) -> ExitCode {
    let mut line = format!("{err}");
    for cause in err.chain().skip(1) {
        line.push_str(&format!(": {cause}"));
    }
    // An error may quote what an agent or a file sent: shown as visible escapes.
    let line = line.replace('\n', " ");
    let _ = writeln!(
        std::io::stderr(),
        "plandesk: {}",
        plandesk::text::terminal_safe(&line)
    );
    ExitCode::from(2)
}

async fn dispatch(cli: Cli) -> Result<ExitCode> {
    let data_dir = cli.data_dir.clone().unwrap_or_else(default_data_dir);
    let json = cli.json;
    // Commands that need no store never open it (a damaged store cannot stop `key list`), and
    // a hook opens it itself, so that even a store it cannot open is answered to its agent.
    let engine = match cli.command {
        Command::Key { action } => return key_command(action, json),
        Command::Store { action } => {
            return store_command(&data_dir, cli.store.as_deref(), action, json).await
        }
        Command::Install {
            agent,
            uninstall,
            print,
        } => return agents::install(&agent, uninstall, print, cli.data_dir.clone()),
        Command::Hook { agent, deadline } => {
            let agent = agents::Agent::parse(&agent).ok_or_else(|| anyhow!("unknown agent"))?;
            return Ok(agents::hook(agent, &data_dir, cli.store.as_deref(), deadline).await);
        }
        Command::Mcp {
            workspace,
            plans_dir,
            deadline,
        } => {
            let store = StoreLocation::choose(cli.store.as_deref(), &data_dir)?;
            return agents::mcp(&data_dir, &store, workspace, plans_dir, deadline).await;
        }
        Command::Serve {
            listen,
            deadline,
            hook_timeout,
        } => {
            let store = StoreLocation::choose(cli.store.as_deref(), &data_dir)?;
            return agents::serve(&data_dir, &store, &listen, deadline, &hook_timeout).await;
        }
        _ => {
            let store = StoreLocation::choose(cli.store.as_deref(), &data_dir)?;
            Engine::open_at(&store, "cli").await?
        }
    };
    let mut printer = print::StreamPrinter::new(json);
    // The run a command names, for the hint a refusal may need.
    let mut named_run: Option<String> = None;
    let report = match cli.command {
        Command::Key { .. }
        | Command::Store { .. }
        | Command::Install { .. }
        | Command::Hook { .. }
        | Command::Mcp { .. }
        | Command::Serve { .. } => return Ok(ExitCode::SUCCESS),
        Command::Run {
            workspace,
            model,
            mode,
            auto_approve,
            max_steps,
            plans_dir,
            prompt,
        } => {
            let workspace = match workspace {
                Some(dir) => dir,
                None => std::env::current_dir().context("cannot read the current folder")?,
            };
            let model = match model {
                Some(model) => model,
                None => {
                    let chosen = default_model(&engine).await?;
                    printer.preface(format!(
                        "plandesk: model {} ({})",
                        chosen.spec, chosen.reason
                    ));
                    chosen.spec
                }
            };
            let options = StartOptions {
                workspace,
                plans_dir,
                model,
                mode: Some(mode),
                auto_approve,
                max_steps,
            };
            engine
                .start(&prompt.join(" "), &options, &mut printer.sink())
                .await
        }
        Command::Approve {
            run_id,
            note,
            tool_call_id,
            revision,
        } => {
            let run_id = engine.resolve_run(&run_id).await?;
            named_run = Some(run_id.clone());
            let verdict = Verdict {
                approve: true,
                feedback: None,
                note,
                tool_call_id,
                revision,
            };
            engine.decide(&run_id, &verdict, &mut printer.sink()).await
        }
        Command::Reject {
            run_id,
            feedback,
            tool_call_id,
            revision,
        } => {
            let run_id = engine.resolve_run(&run_id).await?;
            named_run = Some(run_id.clone());
            let verdict = Verdict {
                approve: false,
                feedback,
                note: None,
                tool_call_id,
                revision,
            };
            engine.decide(&run_id, &verdict, &mut printer.sink()).await
        }
        Command::Resume {
            run_id,
            data,
            tool_call_id,
        } => {
            let run_id = engine.resolve_run(&run_id).await?;
            named_run = Some(run_id.clone());
            match data {
                Some(data) => {
                    let data: serde_json::Value = serde_json::from_str(&data)
                        .with_context(|| format!("--data is not valid JSON: {data}"))?;
                    engine
                        .resume(&run_id, tool_call_id.as_deref(), data, &mut printer.sink())
                        .await
                }
                None if tool_call_id.is_some() => bail!("--tool-call-id needs --data"),
                None => engine.continue_run(&run_id, &mut printer.sink()).await,
            }
        }
        Command::Send { run_id, text } => {
            let run_id = engine.resolve_run(&run_id).await?;
            named_run = Some(run_id.clone());
            engine
                .send(&run_id, &text.join(" "), &mut printer.sink())
                .await
        }
        Command::Pending => return listing(json, &engine.review().inbox().await?, print::pending),
        Command::Runs => return listing(json, &engine.runs().await?, print::runs),
        Command::History { run_id, search } => {
            let run_id = match run_id {
                Some(r) => Some(engine.resolve_run(&r).await?),
                None => None,
            };
            let filter = review::HistoryFilter {
                run_id,
                status: None,
                query: search,
            };
            // JSON carries each plan's text, for scripts; a person's listing is a line per
            // revision and reads none.
            let mut revisions = if json {
                engine.review().history(&filter).await?
            } else {
                engine.review().listing(&filter, None).await?
            };
            // Oldest first.
            revisions.reverse();
            return listing(json, &revisions, print::history);
        }
        Command::Show { revision, html } => {
            let revision = engine.review().revision(&revision).await?;
            let view = review::view_of(revision, 0);
            if json {
                let mut value = serde_json::to_value(&view.revision)?;
                value["html"] = view.html.into();
                value["hidden"] = serde_json::to_value(&view.hidden)?;
                value["fallback"] = serde_json::to_value(&view.fallback)?;
                println!("{value}");
            } else if html {
                println!("{}", view.html);
            } else {
                print::revision(&view);
            }
            return Ok(ExitCode::SUCCESS);
        }
        Command::Diff { a, b } => {
            let (a, b) = (
                engine.review().revision(&a).await?,
                engine.review().revision(&b).await?,
            );
            let comparison = engine.review().compare(a.id, b.id).await?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({
                        "left": comparison.left.id,
                        "right": comparison.right.id,
                        "diff": comparison.diff,
                        "between": comparison.between,
                    })
                );
            } else {
                print::diff(&comparison.left, &comparison.right, &comparison.diff);
            }
            return Ok(ExitCode::SUCCESS);
        }
        Command::Comment {
            revision,
            lines,
            text,
        } => return reviewing::comment(&engine, &revision, &lines, &text.join(" "), json).await,
        Command::Comments { revision } => {
            return reviewing::comments(&engine, &revision, json).await
        }
        Command::Resolve { comment, reopen } => {
            return reviewing::resolve(&engine, comment, reopen, json).await
        }
        Command::Edit { revision, file } => {
            return reviewing::edit(&engine, &revision, &file, json).await
        }
        Command::Model { action } => return model_command(&engine, action, json).await,
        Command::Audit {
            run_id,
            verify,
            file,
            export,
        } => {
            if let Some(file) = file {
                let text = std::fs::read_to_string(&file)
                    .with_context(|| format!("cannot read {}", file.display()))?;
                return Ok(print::audit_check(&review::check_export(&text), json));
            }
            if verify {
                let check = engine.review().verify_audit().await?;
                return Ok(print::audit_check(&check, json));
            }
            if let Some(path) = export {
                let trail = engine.review().audit(None).await?;
                let failed = |e: std::io::Error| anyhow!("cannot write {}: {e}", path.display());
                let mut out =
                    std::io::BufWriter::new(std::fs::File::create(&path).map_err(failed)?);
                review::write_export(&trail, &mut out)
                    .and_then(|()| out.flush())
                    .map_err(failed)?;
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"path": path, "entries": trail.len()})
                    );
                } else {
                    print::next(&format!(
                        "Saved the audit trail ({} entries, its head first) to {}.",
                        trail.len(),
                        path.display()
                    ));
                }
                return Ok(ExitCode::SUCCESS);
            }
            let run_id = match run_id {
                Some(r) => Some(engine.resolve_run(&r).await?),
                None => None,
            };
            let entries = engine.review().audit(run_id.as_deref()).await?;
            print::audit(&entries, json);
            return Ok(ExitCode::SUCCESS);
        }
        Command::Open { key } => return open::open(&engine, &data_dir, &key, json).await,
        Command::Token { action } => {
            return match action {
                TokenAction::Create { name } => tokens::create(&engine, &name, json).await,
                TokenAction::List => tokens::list(&engine, json).await,
                TokenAction::Revoke { name } => tokens::revoke(&engine, &name, json).await,
            }
        }
    };
    let report = report.map_err(|err| explain(err, named_run.as_deref()))?;
    printer.finish(&report);
    Ok(if report.status == RunStatus::Failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

async fn default_model(engine: &Engine) -> Result<DefaultModel> {
    let saved = engine.setting(MODEL_SETTING).await?;
    Ok(select::default_model(saved).await)
}

async fn model_command(
    engine: &Engine,
    action: Option<ModelAction>,
    json: bool,
) -> Result<ExitCode> {
    match action {
        Some(ModelAction::Set { spec }) => {
            select::ModelSpec::parse(&spec)?;
            engine.set_setting(MODEL_SETTING, Some(&spec)).await?;
            eprintln!("plandesk: new runs use {spec} unless --model says otherwise");
        }
        Some(ModelAction::Clear) => {
            engine.set_setting(MODEL_SETTING, None).await?;
            let chosen = default_model(engine).await?;
            eprintln!(
                "plandesk: saved model forgotten; new runs use {} ({})",
                chosen.spec, chosen.reason
            );
        }
        None => {
            let chosen = default_model(engine).await?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({"model": chosen.spec, "reason": chosen.reason})
                );
            } else {
                println!("{}\t{}", chosen.spec, chosen.reason);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn key_command(action: KeyAction, json: bool) -> Result<ExitCode> {
    match action {
        KeyAction::Set { provider } => {
            let provider = KeyProvider::parse(&provider)?;
            if std::io::stdin().is_terminal() {
                eprint!("Paste the {} API key, then press Enter: ", provider.name());
            }
            let mut line = String::new();
            std::io::stdin()
                .read_line(&mut line)
                .context("cannot read the key from standard input")?;
            let key = ApiKey::new(&line).ok_or(KeyError::Empty)?;
            secret::keyring_set(provider, &key)?;
            eprintln!(
                "plandesk: the {} key is saved in the OS keyring",
                provider.name()
            );
            if std::env::var_os(provider.env_var()).is_some() {
                eprintln!(
                    "plandesk: note: {} is set in this environment and is used before the keyring",
                    provider.env_var()
                );
            }
        }
        KeyAction::Rm { provider } => {
            let provider = KeyProvider::parse(&provider)?;
            secret::keyring_remove(provider)?;
            eprintln!(
                "plandesk: the {} key is removed from the OS keyring",
                provider.name()
            );
        }
        KeyAction::List => {
            let rows: Vec<(&str, String)> = KeyProvider::ALL
                .into_iter()
                .map(|p| {
                    let (found, problem) = secret::find_key(p);
                    let source = match (found, problem) {
                        (Some((_, KeySource::Environment)), _) => {
                            format!("from {}", p.env_var())
                        }
                        (Some((_, KeySource::Keyring)), _) => "in the OS keyring".into(),
                        (None, Some(problem)) => format!("none ({problem})"),
                        (None, None) => "none".into(),
                    };
                    (p.name(), source)
                })
                .collect();
            if json {
                let map: serde_json::Map<String, serde_json::Value> = rows
                    .into_iter()
                    .map(|(p, s)| (p.to_owned(), s.into()))
                    .collect();
                println!("{}", serde_json::Value::Object(map));
            } else {
                for (provider, source) in rows {
                    println!("{provider}\t{source}");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The code of a refused second decision (`EngineError::code`, `ReviewError::code`): hosts
/// branch on codes, not on the store's error type.
const ALREADY_DECIDED: &str = "already-decided";

/// Adds the command that helps, where an engine error has one; `run_id` is the run the command
/// named, if it named one.
fn explain(err: EngineError, run_id: Option<&str>) -> anyhow::Error {
    let hint = match (&err, run_id) {
        (err, Some(run_id)) if err.code() == ALREADY_DECIDED => {
            format!(" (if the run did not carry on, `plandesk resume {run_id}` continues it)")
        }
        (EngineError::Run(RunError::DecisionPending { run_id, .. }), _) => {
            format!(" (`plandesk pending` shows it; `plandesk approve {run_id}` or `plandesk reject {run_id}`)")
        }
        (EngineError::Run(RunError::Interrupted { run_id }), _) => {
            format!("; `plandesk resume {run_id}` continues it")
        }
        _ => String::new(),
    };
    anyhow!("{err}{hint}")
}

fn listing<T: serde::Serialize>(json: bool, items: &[T], human: fn(&[T])) -> Result<ExitCode> {
    if json {
        println!("{}", serde_json::to_string(items)?);
    } else {
        human(items);
    }
    Ok(ExitCode::SUCCESS)
}

/// `plandesk store [set URL | clear]`.
async fn store_command(
    data_dir: &std::path::Path,
    given: Option<&str>,
    action: Option<StoreAction>,
    json: bool,
) -> Result<ExitCode> {
    use plandesk::config::{named_store, reach_team_store, save_team_store};
    match action {
        None => {}
        Some(StoreAction::Set { url }) => {
            // Reached (and its tables made) before it is saved: a wrong URL changes nothing.
            reach_team_store(&url).await?;
            save_team_store(data_dir, Some(&url))?;
        }
        Some(StoreAction::Clear) => save_team_store(data_dir, None)?,
    }
    let location = StoreLocation::choose(given, data_dir)?;
    let overridden = named_store(given).is_some();
    if json {
        let kind = match location {
            StoreLocation::Sqlite(_) => "sqlite",
            StoreLocation::Postgres { .. } => "postgres",
        };
        let listing = serde_json::json!({
            "kind": kind,
            "store": location.describe(),
            "dataDir": data_dir.display().to_string(),
        });
        println!("{listing}");
    } else {
        println!("Store: {}", location.describe());
        if overridden {
            println!("(named by --store or PLANDESK_STORE, which win over the saved choice)");
        }
    }
    Ok(ExitCode::SUCCESS)
}
