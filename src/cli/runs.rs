//! Plandesk's own runs: `run`, `approve`, `reject`, `resume`, `send`, and the listings of what
//! waits (`pending`) and of every run (`runs`). A command that drives a run streams its chunks
//! as they come, then says what waits and which command comes next.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use plandesk::review::SourceKind;
use plandesk::run::RunError;
use plandesk::{Engine, EngineError, Report, RunStatus, StartOptions, Verdict};

use super::{model, print, Mode};

/// The code of a refused second decision (`EngineError::code`, `ReviewError::code`): hosts
/// branch on codes, not on the store's error type.
pub const ALREADY_DECIDED: &str = "already-decided";

/// What `plandesk run` was given.
#[derive(Debug)]
pub struct Start {
    pub workspace: Option<PathBuf>,
    pub model: Option<String>,
    pub mode: Mode,
    pub auto_approve: bool,
    pub max_steps: u32,
    pub plans_dir: Option<String>,
    pub prompt: String,
}

/// `plandesk run PROMPT`: starts a run and drives it until it waits or ends.
pub async fn start(engine: &Engine, start: Start, json: bool) -> Result<ExitCode> {
    let mut printer = print::StreamPrinter::new(json);
    let workspace = match start.workspace {
        Some(dir) => dir,
        None => std::env::current_dir().context("cannot read the current folder")?,
    };
    let model = match start.model {
        Some(model) => model,
        None => {
            let chosen = model::default_model(engine).await?;
            printer.preface(format!(
                "plandesk: model {} ({})",
                chosen.spec, chosen.reason
            ));
            chosen.spec
        }
    };
    let options = StartOptions {
        workspace,
        plans_dir: start.plans_dir,
        model,
        mode: Some(start.mode.name().to_owned()),
        auto_approve: start.auto_approve,
        max_steps: start.max_steps,
    };
    let report = engine
        .start(&start.prompt, &options, &mut printer.sink())
        .await;
    finish(&printer, report, None)
}

/// `plandesk approve RUN` and `plandesk reject RUN`: the verdict on what the run waits for.
pub async fn decide(
    engine: &Engine,
    run_id: &str,
    verdict: Verdict,
    json: bool,
) -> Result<ExitCode> {
    let run_id = engine.resolve_run(run_id).await?;
    let mut printer = print::StreamPrinter::new(json);
    let report = engine.decide(&run_id, &verdict, &mut printer.sink()).await;
    // `plandesk resume` carries on only Plandesk's own runs: an outside agent's plan that was
    // decided, abandoned or expired has nothing here to resume.
    let own_run = match &report {
        Err(_) => engine
            .run(&run_id)
            .await
            .map_or(true, |run| run.source.kind == SourceKind::Engine),
        Ok(_) => true,
    };
    finish(&printer, report, own_run.then_some(run_id.as_str()))
}

/// `plandesk resume RUN [--data JSON]`: raw resume data, or the continuation of an interrupted
/// run.
pub async fn resume(
    engine: &Engine,
    run_id: &str,
    data: Option<String>,
    tool_call_id: Option<String>,
    json: bool,
) -> Result<ExitCode> {
    let run_id = engine.resolve_run(run_id).await?;
    let mut printer = print::StreamPrinter::new(json);
    let report = match data {
        Some(data) => {
            let data: serde_json::Value = serde_json::from_str(&data)
                .with_context(|| format!("--data is not valid JSON: {data}"))?;
            engine
                .resume(&run_id, tool_call_id.as_deref(), data, &mut printer.sink())
                .await
        }
        None if tool_call_id.is_some() => bail!("--tool-call-id needs --data"),
        None => engine.continue_run(&run_id, &mut printer.sink()).await,
    };
    finish(&printer, report, Some(&run_id))
}

/// `plandesk send RUN TEXT`: the person's next message.
pub async fn send(engine: &Engine, run_id: &str, text: &str, json: bool) -> Result<ExitCode> {
    let run_id = engine.resolve_run(run_id).await?;
    let mut printer = print::StreamPrinter::new(json);
    let report = engine.send(&run_id, text, &mut printer.sink()).await;
    finish(&printer, report, Some(&run_id))
}

/// `plandesk pending`: everything waiting for a decision, newest first.
pub async fn pending(engine: &Engine, json: bool) -> Result<ExitCode> {
    print::listing(json, &engine.review().inbox().await?, print::pending)
}

/// `plandesk runs`: every run, most recently active first.
pub async fn runs(engine: &Engine, json: bool) -> Result<ExitCode> {
    print::listing(json, &engine.runs().await?, print::runs)
}

/// After a stream: what waits and what comes next; exit 1 when the run failed.
fn finish(
    printer: &print::StreamPrinter,
    report: Result<Report, EngineError>,
    run_id: Option<&str>,
) -> Result<ExitCode> {
    let report = report.map_err(|err| explain(err, run_id))?;
    printer.finish(&report);
    Ok(if report.status == RunStatus::Failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Adds the command that helps, where an engine error has one; `run_id` is the run the command
/// named, if it named one that `plandesk resume` could carry on.
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
