//! Running a step's tool calls: checked against the tool's schema, held for approval where the
//! tool asks for it, executed on a blocking thread with a deadline.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::drive::{done, status_of};
use super::{emit, ChunkSink, Engine, EngineError};
use crate::chunk::ToolCall;
use crate::run::*;
use crate::store::{NewWork, Work, WorkKind, WorkOf};
use crate::tool::{schema, Tool, ToolContext, ToolOutcome, DEFAULT_DECLINE_REASON};
use crate::workspace::Workspace;

/// The longest a tool call may take; past it the model is told it timed out.
const TOOL_TIMEOUT: Duration = Duration::from_secs(120);

const WRITE_FILE: &str = "write_file";

/// `path` as a tool call gives it, relative to the workspace and normalised (`a/../b` is `b`);
/// `None` if it is none (the write was refused then).
fn workspace_relative(path: &str) -> Option<String> {
    crate::workspace::lexical_relative(path).map(|p| p.to_string_lossy().into_owned())
}

/// Whether `path` (normalised) is in the plans folder `plans_dir`.
fn in_plans(path: &str, plans_dir: &str) -> bool {
    let plans = workspace_relative(plans_dir).unwrap_or_default();
    Path::new(path).starts_with(&plans) && Path::new(path) != Path::new(&plans)
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// The hash of a workspace file's text, `None` if there is no such file (or it is no text
/// file Plandesk reads: a link, a FIFO, too large).
fn file_sha256(workspace: &Workspace, path: &str) -> Option<String> {
    let resolved = workspace.resolve_existing(path).ok()?;
    let text = workspace.read_text(&resolved, path).ok()?;
    Some(sha256(text.as_bytes()))
}

/// What a tool is asked to do.
pub(super) enum ToolAction {
    Execute,
    Resume(Value),
}

impl Engine {
    /// Runs the step's call at `index`: checked against its tool's schema, held for approval
    /// where the tool asks for it, else executed off the async runtime. `workspace`: the run's,
    /// opened here if it is not yet.
    pub(super) async fn run_call(
        &self,
        state: &RunState,
        index: usize,
        workspace: &mut Option<Workspace>,
    ) -> Result<CallStatus, EngineError> {
        let Phase::RunTools { step } = &state.phase else {
            return Ok(CallStatus::NotRun);
        };
        let Some(entry) = step.calls.get(index) else {
            return Ok(CallStatus::NotRun);
        };
        let call = &entry.call;
        let tools = self.inner.controller.tools(&step.mode)?;
        let Some(tool) = tools.get(&call.tool_name) else {
            return Ok(done(Outcome::Error(format!(
                "Tool `{}` does not exist in {} mode. Available tools: {}.",
                call.tool_name,
                step.mode,
                tools.names().join(", ")
            ))));
        };
        let violations = schema::validate(&tool.input_schema(), &call.args);
        if !violations.is_empty() {
            let result = schema::validation_error(tool.name(), "input", &call.args, &violations);
            return Ok(done(Outcome::Result(result)));
        }
        let workspace = match workspace {
            Some(workspace) => workspace.clone(),
            None => workspace.insert(self.workspace(state)?).clone(),
        };
        let ctx = ToolContext {
            workspace: &workspace,
            run_id: &state.run_id,
            tool_call_id: &call.tool_call_id,
            can_suspend: true,
            auto_approve: state.auto_approve,
        };
        if tool.requires_approval(&ctx) {
            return Ok(CallStatus::AwaitingApproval);
        }
        let outcome = self
            .run_tool(tool.clone(), workspace, state, call, ToolAction::Execute)
            .await;
        Ok(status_of(outcome))
    }

    /// Runs a tool: one that only reads in place, as a store call runs; any other on a blocking
    /// thread with a deadline, so a slow tool cannot stall the runtime and a cancelled run
    /// stops waiting for it.
    pub(super) async fn run_tool(
        &self,
        tool: Arc<dyn Tool>,
        workspace: Workspace,
        state: &RunState,
        call: &ToolCall,
        action: ToolAction,
    ) -> ToolOutcome {
        let (run_id, call) = (state.run_id.clone(), call.clone());
        let auto_approve = state.auto_approve;
        // A read there cannot hang: see below.
        let in_place = tool.reads_only() && workspace.is_local();
        let name = tool.name();
        // A file written outside the plans folder is work to hold against the approved plan.
        let written = (name == WRITE_FILE && matches!(action, ToolAction::Execute))
            .then(|| workspace_relative(call.args["path"].as_str().unwrap_or("")))
            .flatten()
            .filter(|path| !in_plans(path, &state.plans_dir));
        let work = move || {
            let ctx = ToolContext {
                workspace: &workspace,
                run_id: &run_id,
                tool_call_id: &call.tool_call_id,
                can_suspend: true,
                auto_approve,
            };
            let before = written.as_deref().map(|path| file_sha256(&workspace, path));
            let outcome = match action {
                ToolAction::Execute => tool.execute(&ctx, &call.args),
                ToolAction::Resume(data) => tool.resume(&ctx, &call.args, &data),
            };
            let after = call.args["content"].as_str().map(|c| sha256(c.as_bytes()));
            let record = match (&outcome, written, before) {
                (ToolOutcome::Value(_), Some(path), Some(before)) => Some((path, before, after)),
                _ => None,
            };
            (outcome, record)
        };
        // A tool that only reads (a file of at most 1 MiB, a listing that reads at most
        // 20,000 entries), on a local disk, is as quick as a store call and runs as one does,
        // in place: the hop to a thread of its own and back was a sixth of a step. Any other,
        // and any on a network or FUSE mount (where a read can wait on a server without end),
        // may take long, and runs on a thread of its own under a deadline.
        let done = if in_place {
            Ok(Ok(crate::blocking::in_place(work)))
        } else {
            tokio::time::timeout(TOOL_TIMEOUT, tokio::task::spawn_blocking(work)).await
        };
        match done {
            Ok(Ok((outcome, record))) => {
                if let Some((path, before, after)) = record {
                    self.record_write(&state.run_id, &path, before, after).await;
                }
                outcome
            }
            Ok(Err(join)) => ToolOutcome::Failed(format!("{name} failed: {join}")),
            Err(_) => ToolOutcome::Failed(format!(
                "{name} did not finish within {} s and was abandoned",
                TOOL_TIMEOUT.as_secs()
            )),
        }
    }

    /// Records a file the run wrote (with its hashes before and after), held against its
    /// approved plan if it has one. A record that cannot be made is said, and the run goes on.
    async fn record_write(
        &self,
        run_id: &str,
        path: &str,
        before: Option<String>,
        after: Option<String>,
    ) {
        let data = json!({"tool": WRITE_FILE, "before": before, "after": after, "outside": false});
        self.record_work(run_id, Work::file(path, data)).await;
    }

    /// Records the workspace's git state for the plan just submitted (see
    /// `Review::record_baseline`): in a process that shows the plan, beside it (its way to the
    /// screen waits for nothing); else before the process moves on and may end.
    pub(super) async fn record_baseline(&self, state: &RunState, tool_call_id: &str) {
        let review = self.inner.review.clone();
        let (run_id, call, workspace) = (
            state.run_id.clone(),
            tool_call_id.to_owned(),
            state.workspace.clone(),
        );
        let work = async move {
            if let Ok(Some(revision)) = review.open_revision(&run_id, &call).await {
                review.record_baseline(revision.id, &workspace).await;
            }
        };
        if self
            .inner
            .prerender
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            tokio::spawn(work);
        } else {
            work.await;
        }
    }

    /// Records that the run finished (its model's turn ended), if it has an approved plan.
    pub(super) async fn record_finished(&self, run_id: &str) {
        self.record_work(run_id, Work::of_kind(WorkKind::Finished, json!({})))
            .await;
    }

    /// Records `work` of the run against its approved plan, if it has one. A record that cannot
    /// be made is said, and the run goes on.
    async fn record_work(&self, run_id: &str, work: Work) {
        let new = NewWork {
            of: WorkOf::Run(run_id),
            at: self.now_millis(),
            work,
        };
        if let Err(err) = self.inner.store.record_work(&new).await {
            let what = new.work.path.as_deref().unwrap_or(new.work.kind.as_str());
            eprintln!(
                "plandesk: cannot record {} of run {run_id}: {err}",
                crate::text::terminal_safe(what)
            );
        }
    }

    /// What a declined approval tells the model, and the chunk that reports it.
    pub(super) fn decline(
        &self,
        state: &RunState,
        call: &ToolCall,
        data: &Value,
        sink: &mut dyn ChunkSink,
    ) -> CallStatus {
        let reason = data
            .get("reason")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .unwrap_or(DEFAULT_DECLINE_REASON)
            .to_owned();
        sink.emit(emit::denied(&state.run_id, call, &reason));
        done(Outcome::Denied(reason))
    }

    pub(super) fn workspace(&self, state: &RunState) -> Result<Workspace, EngineError> {
        Ok(Workspace::open(&state.workspace, Some(&state.plans_dir))?)
    }

    /// The tool `name` as mode `mode` offers it.
    pub(super) fn tool(
        &self,
        mode: &str,
        name: &str,
    ) -> Result<Option<Arc<dyn Tool>>, EngineError> {
        Ok(self.inner.controller.tools(mode)?.get(name).cloned())
    }
}
