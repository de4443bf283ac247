//! The `plandesk` binary's command line: its clap definitions (`args`) and the one dispatch from
//! a command to the module of its group. Each module turns its commands into calls on the engine
//! and the review core and prints what they return (`print`); none holds business logic.

mod agents;
mod args;
mod audit;
mod choices;
mod history;
mod keys;
mod model;
mod open;
mod print;
mod progress;
mod record;
mod reviewing;
mod runs;
mod storage;
mod tokens;

use std::io::Write;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use clap::{CommandFactory, Parser};
use plandesk::config::{default_data_dir, StoreLocation};
use plandesk::{Engine, Verdict};

use args::{Cli, Command};
// What the command groups take, named by them as `super::KeyAction`, `super::Mode`, ….
use args::{KeyAction, ModelAction, SessionAction, StoreAction, TokenAction, WebhookAction};
use choices::Mode;

/// Threads beside the async workers at most. A SQLite call hands its worker's other tasks to
/// another thread while it runs (`store::sqlite`); a burst of them in `serve` grew tokio's
/// default pool (512) to ~150 threads, for at most five calls at a time. Past this, work that
/// blocks waits for a thread (and a worker's tasks wait for the call to end).
const MAX_BLOCKING_THREADS: usize = 48;

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // More than one worker: a store call that waits (SQLite's lock, the disk) hands the
    // others on, so `serve` keeps answering meanwhile.
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .max_blocking_threads(MAX_BLOCKING_THREADS)
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

/// `plandesk completions SHELL`: generated from the clap definitions (`args`), so it always
/// knows every command, flag and choice.
fn completions(shell: clap_complete::Shell) -> Result<ExitCode> {
    // Into memory first: the generator panics on a write error (`… | head`), this does not.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "plandesk", &mut script);
    let mut stdout = std::io::stdout();
    let _ = stdout.write_all(&script).and_then(|()| stdout.flush());
    Ok(ExitCode::SUCCESS)
}

async fn dispatch(cli: Cli) -> Result<ExitCode> {
    let data_dir = cli.data_dir.clone().unwrap_or_else(default_data_dir);
    let json = cli.json;
    let given_store = cli.store.as_deref();
    let location = || StoreLocation::choose(given_store, &data_dir);
    // Opened only by the commands that read or write runs: a damaged store cannot stop `key
    // list`, and a hook opens it itself, so that even a store it cannot open is answered to its
    // agent.
    let engine = async || -> Result<Engine> { Ok(Engine::open_at(&location()?, "cli").await?) };
    match cli.command {
        Command::Run {
            workspace,
            model,
            mode,
            auto_approve,
            max_steps,
            plans_dir,
            prompt,
        } => {
            let start = runs::Start {
                workspace,
                model,
                mode,
                auto_approve,
                max_steps,
                plans_dir,
                prompt: prompt.join(" "),
            };
            runs::start(&engine().await?, start, json).await
        }
        Command::Approve {
            run_id,
            note,
            tool_call_id,
            revision,
            accept_edits,
        } => {
            let verdict = Verdict {
                approve: true,
                feedback: None,
                note,
                tool_call_id,
                revision,
                accept_edits,
            };
            runs::decide(&engine().await?, &run_id, verdict, json).await
        }
        Command::Reject {
            run_id,
            feedback,
            tool_call_id,
            revision,
        } => {
            let verdict = Verdict {
                approve: false,
                feedback,
                note: None,
                tool_call_id,
                revision,
                accept_edits: false,
            };
            runs::decide(&engine().await?, &run_id, verdict, json).await
        }
        Command::Resume {
            run_id,
            data,
            tool_call_id,
        } => runs::resume(&engine().await?, &run_id, data, tool_call_id, json).await,
        Command::Send { run_id, text } => {
            runs::send(&engine().await?, &run_id, &text.join(" "), json).await
        }
        Command::Pending => runs::pending(&engine().await?, json).await,
        Command::Runs => runs::runs(&engine().await?, json).await,
        Command::History { run_id, search } => {
            history::history(&engine().await?, run_id, search, json).await
        }
        Command::Show { revision, html } => {
            history::show(&engine().await?, &revision, html, json).await
        }
        Command::Diff { a, b } => history::diff(&engine().await?, &a, &b, json).await,
        Command::Comment {
            revision,
            lines,
            text,
        } => reviewing::comment(&engine().await?, &revision, &lines, &text.join(" "), json).await,
        Command::Comments { revision } => {
            reviewing::comments(&engine().await?, &revision, json).await
        }
        Command::Resolve { comment, reopen } => {
            reviewing::resolve(&engine().await?, comment, reopen, json).await
        }
        Command::Edit { revision, file } => {
            reviewing::edit(&engine().await?, &revision, &file, json).await
        }
        Command::Audit {
            run_id,
            verify,
            file,
            export,
        } => {
            let what = match (verify, export) {
                (true, _) => audit::Audit::Verify { file },
                (false, Some(path)) => audit::Audit::Export { path },
                (false, None) => audit::Audit::List { run_id },
            };
            audit::audit(&engine().await?, what, json).await
        }
        Command::Model { action } => model::model(&engine().await?, action, json).await,
        Command::Progress { key, diff } => match diff {
            Some(path) => progress::diff(&engine().await?, &key, &path, json).await,
            None => progress::progress(&engine().await?, &key, json).await,
        },
        Command::Mark { key, step, mark } => {
            progress::mark(&engine().await?, &key, step, mark, json).await
        }
        Command::Open { key } => open::open(&engine().await?, &data_dir, &key, json).await,
        Command::Token { action } => tokens::token(&engine().await?, action, json).await,
        Command::Pair { name, url } => {
            tokens::pair(&engine().await?, name.as_deref(), url.as_deref(), json).await
        }
        Command::Session { action } => tokens::session(&engine().await?, action, json).await,
        Command::Webhook { action } => tokens::webhook(&engine().await?, action, json).await,
        Command::Key { action } => keys::key(action, json),
        Command::Completions { shell } => completions(shell),
        Command::Store { action } => storage::store(&data_dir, given_store, action, json).await,
        Command::Hook { agent, deadline } => {
            Ok(agents::hook(agent, &data_dir, given_store, deadline).await)
        }
        Command::Mcp {
            workspace,
            plans_dir,
            deadline,
        } => agents::mcp(&data_dir, &location()?, workspace, plans_dir, deadline).await,
        Command::Serve(args) => agents::serve(&data_dir, &location()?, args).await,
        Command::Install {
            agent,
            uninstall,
            print,
            no_record,
        } => agents::install(
            agent.into(),
            uninstall,
            print,
            !no_record,
            cli.data_dir.clone(),
        ),
        Command::Record { agent } => Ok(record::record(agent, &data_dir, given_store).await),
    }
}
