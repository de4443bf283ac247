//! `plandesk open REVISION|RUN`: the desktop app on that plan. Starting the app is also how the
//! running one is brought forward: on a store it already shows, the new process hands the plan
//! over and exits.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use plandesk::desktop::{self, PlanTarget};
use plandesk::Engine;

use super::print;

/// How long a handover to a running app may take; a process still alive after this is a new
/// app (a second one exits as soon as it has handed over).
const HANDOVER: Duration = Duration::from_secs(3);

pub async fn open(engine: &Engine, data_dir: &Path, key: &str, json: bool) -> Result<ExitCode> {
    let target = desktop::plan_target(engine, key).await?;
    let app = desktop::app_binary().ok_or_else(|| {
        anyhow!(
            "the desktop app ({}) is not installed beside this binary or on PATH",
            desktop::APP_BINARY
        )
    })?;
    // The app resolves the key again: give it one that names exactly what was found here.
    let open = match target.revision_id {
        Some(id) => format!("#{id}"),
        None => target.run_id.clone(),
    };
    let mut child = desktop::start_app(&app, data_dir, &open)
        .with_context(|| format!("cannot start {}", app.display()))?;
    let started = Instant::now();
    let handed_over = loop {
        if let Some(status) = child.try_wait()? {
            if !status.success() {
                bail!(
                    "the desktop app stopped ({status}); `{} --data-dir {} --open {open}` shows why",
                    app.display(),
                    data_dir.display()
                );
            }
            break true;
        }
        if started.elapsed() >= HANDOVER {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    report(&target, handed_over, json);
    Ok(ExitCode::SUCCESS)
}

fn report(target: &PlanTarget, handed_over: bool, json: bool) {
    if json {
        let _ = print::json_line(&serde_json::json!({
            "runId": target.run_id,
            "revisionId": target.revision_id,
            "link": desktop::plan_link(&target.run_id),
            "started": !handed_over,
        }));
        return;
    }
    let what = match target.revision_id {
        Some(id) => format!("revision {id} of run {}", target.run_id),
        None => format!("run {}", target.run_id),
    };
    if handed_over {
        eprintln!("plandesk: the running app shows {what}");
    } else {
        eprintln!("plandesk: started the app on {what}");
    }
}
