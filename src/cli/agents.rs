//! The commands outside agents run (`hook`, `mcp`) and the one that sets them up (`install`).
//! A hook always answers its agent, and fails closed: whatever goes wrong on our side, the
//! agent is told the plan is not approved, never left to its own fallback (which for several
//! agents approves).
//! The hook itself is in `hook`, the watch on its agent in `watch`, and the deadlines hooks and
//! servers share in `deadline`.

mod deadline;
mod hook;
mod watch;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use plandesk::config::StoreLocation;
use plandesk::source::install::{self, Places, Target};
use plandesk::source::mcp::{self, McpOptions};
use plandesk::source::serve::ServeOptions;
use plandesk::source::{self, stop_requested, WaitSettings};
use plandesk::Engine;

use super::args::ServeArgs;

use deadline::{configured_deadline, parse_duration};
pub use hook::{hook, Agent};
use plandesk::source::deadline::hook_deadline;

fn wait_settings(data_dir: &Path, deadline: Option<String>) -> Result<WaitSettings> {
    Ok(WaitSettings {
        data_dir: data_dir.to_owned(),
        deadline: configured_deadline(deadline)?,
        desktop: true,
    })
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
pub async fn serve(data_dir: &Path, store: &StoreLocation, args: ServeArgs) -> Result<ExitCode> {
    let ServeArgs {
        listen,
        deadline,
        hook_timeout,
        public_url,
        max_connections,
        max_per_token,
        trusted_proxies,
    } = args;
    // A server tells nobody on its own desktop: the app, hooks on a desktop and the inbox do.
    let mcp_wait = WaitSettings {
        desktop: false,
        ..wait_settings(data_dir, deadline)?
    };
    let mut hook_wait = mcp_wait.clone();
    let hook_timeout = match hook_timeout {
        Some(timeout) => parse_duration(&timeout)?,
        None => source::serve::DEFAULT_HOOK_TIMEOUT,
    };
    hook_wait.deadline = Some(hook_deadline(hook_wait.deadline, hook_timeout));
    let engine = Engine::open_at(store, "serve").await?;
    if let Some(url) = public_url.as_deref() {
        let url = source::serve::web::pair::public_url(url)?;
        engine
            .set_setting(source::serve::web::pair::PUBLIC_URL_SETTING, Some(&url))
            .await?;
    }
    let listener = tokio::net::TcpListener::bind(&listen)
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
        max_per_token: max_per_token.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        trusted_proxies,
        // Saved above, where `plandesk pair` finds it too.
        public_url: None,
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
    let agent = target.source().agent_name();
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
