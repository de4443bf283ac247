//! The agent loop. A run moves CallModel -> RunTools -> Suspended | Waiting | Failed; every move
//! is persisted before the chunk that announces it is emitted, so any process sharing the store
//! can pick the run up where it stopped.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::{json, Value};

use crate::chunk::*;
use crate::clock::{Clock, IdSource, RandomIds, SystemClock};
use crate::message::Message;
use crate::mode::{self, AgentController, ModeError};
use crate::model::{self, LanguageModel, ModelError, ModelEvent, ModelRequest, ToolSpec};
use crate::run::*;
use crate::store::{NewDecision, PendingItem, Store, StoreError};
use crate::tool::submit_plan::{self, TOOL_ID as SUBMIT_PLAN};
use crate::tool::{
    approval_schema, schema, Tool, ToolContext, ToolOutcome, DEFAULT_DECLINE_REASON,
};
use crate::workspace::{Workspace, WorkspaceError};

pub const AGENT_ID: &str = "plandesk";
pub const DEFAULT_MAX_STEPS: u32 = 50;
/// Set to a crash point name (`after-model-call`, `after-suspend`, `after-decision`) to make
/// the process abort there, as `kill -9` would: the crash tests use it.
pub const CRASH_ENV: &str = "PLANDESK_CRASH_AT";

const AGENT_INSTRUCTIONS: &str = "You are Plandesk's agent. You work inside one workspace folder; \
     every path you use is relative to its root. Before changing anything, write an implementation \
     plan and have the user approve it.";

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    Mode(#[from] ModeError),
    #[error("the prompt is empty: say what the agent should do")]
    EmptyPrompt,
    #[error("the message is empty")]
    EmptyMessage,
    #[error("max steps must be at least 1")]
    MaxSteps,
    #[error("run {run_id} is {status}, not waiting for a decision")]
    NotSuspended {
        run_id: String,
        status: &'static str,
    },
    #[error(
        "run {run_id} is waiting for a decision on {tool_call_id}; approve or reject it first"
    )]
    DecisionPending {
        run_id: String,
        tool_call_id: String,
    },
    #[error("run {run_id} is being run by {who}; wait for it to stop")]
    Busy { run_id: String, who: String },
    #[error("run {run_id} was interrupted while it ran; `plandesk resume {run_id}` continues it")]
    Interrupted { run_id: String },
    #[error("run {run_id} has nothing to continue: it is {status}")]
    NothingToContinue {
        run_id: String,
        status: &'static str,
    },
    #[error("--revision applies to plans; tool call {tool_call_id} of run {run_id} is a {tool_name} approval")]
    RevisionOnApproval {
        run_id: String,
        tool_call_id: String,
        tool_name: String,
    },
    #[error("tool `{tool}` of run {run_id} is no longer available in mode `{mode}`")]
    MissingTool {
        run_id: String,
        tool: String,
        mode: String,
    },
}

impl EngineError {
    /// A stable code for hosts (CLI exit paths, IPC) to branch on.
    pub fn code(&self) -> &'static str {
        match self {
            EngineError::Store(StoreError::StaleRevision { .. }) => "stale-revision",
            EngineError::Store(StoreError::AlreadyDecided { .. }) => "already-decided",
            EngineError::Store(StoreError::NotPending { .. }) => "not-pending",
            EngineError::Store(StoreError::UnknownRun(_) | StoreError::AmbiguousRun { .. }) => {
                "unknown-run"
            }
            EngineError::Store(StoreError::UnknownRevision(_)) => "unknown-revision",
            EngineError::Store(_) => "store",
            EngineError::Model(e) => e.code(),
            EngineError::Workspace(_) => "workspace",
            EngineError::Mode(_) => "mode",
            EngineError::EmptyPrompt | EngineError::EmptyMessage | EngineError::MaxSteps => {
                "invalid-input"
            }
            EngineError::NotSuspended { .. } | EngineError::NothingToContinue { .. } => {
                "not-suspended"
            }
            EngineError::Interrupted { .. } => "interrupted",
            EngineError::DecisionPending { .. } => "decision-pending",
            EngineError::Busy { .. } => "busy",
            EngineError::RevisionOnApproval { .. } => "invalid-input",
            EngineError::MissingTool { .. } => "missing-tool",
        }
    }
}

/// Receives a run's chunks as they happen.
pub trait ChunkSink: Send {
    fn emit(&mut self, chunk: Chunk);
}

impl<F: FnMut(Chunk) + Send> ChunkSink for F {
    fn emit(&mut self, chunk: Chunk) {
        self(chunk)
    }
}

/// How a new run starts.
#[derive(Debug, Clone)]
pub struct StartOptions {
    pub workspace: PathBuf,
    pub plans_dir: Option<String>,
    /// A model spec (`demo`, `scripted:FILE`).
    pub model: String,
    /// `None`: `plan`.
    pub mode: Option<String>,
    pub auto_approve: bool,
    pub max_steps: u32,
}

impl StartOptions {
    pub fn new(workspace: impl Into<PathBuf>, model: impl Into<String>) -> Self {
        Self {
            workspace: workspace.into(),
            plans_dir: None,
            model: model.into(),
            mode: None,
            auto_approve: false,
            max_steps: DEFAULT_MAX_STEPS,
        }
    }
}

/// A person's answer to what a run waits for, as a host (CLI, app) gives it.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    pub approve: bool,
    pub feedback: Option<String>,
    pub tool_call_id: Option<String>,
    /// sha256 (or a prefix) of the plan revision the person saw.
    pub revision: Option<String>,
}

/// Where a run stands after a stream ended.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub run_id: String,
    pub status: RunStatus,
    pub mode: String,
    pub pending: Option<PendingItem>,
    pub error: Option<ChunkError>,
}

#[derive(Debug)]
struct Inner {
    store: Store,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdSource>,
    controller: AgentController,
    /// Runs this process is driving now.
    active: Mutex<HashSet<String>>,
    cwd: PathBuf,
}

/// The engine: runs agents over a store. Cheap to clone; clones share everything.
#[derive(Debug, Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// Removes a run from the active set when its driver stops, however it stops.
struct ActiveRun<'a> {
    engine: &'a Engine,
    run_id: String,
}

impl Drop for ActiveRun<'_> {
    fn drop(&mut self) {
        let mut active = self
            .engine
            .inner
            .active
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        active.remove(&self.run_id);
        // Best effort: a stale owner is also detected by its process being gone.
        let _ = self.engine.inner.store.set_owner(&self.run_id, None);
    }
}

fn crash_point(name: &str) {
    if std::env::var(CRASH_ENV).is_ok_and(|v| v == name) {
        std::process::abort();
    }
}

fn process_alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new(&format!("/proc/{pid}")).exists()
    } else {
        true
    }
}

enum Flow {
    Continue,
    Stop,
}

impl Engine {
    /// Opens the store in `data_dir` with the wall clock, random ids and the built-in modes.
    pub fn open(data_dir: &Path) -> Result<Self, EngineError> {
        Ok(Self::new(
            Store::open(data_dir)?,
            Arc::new(SystemClock),
            Arc::new(RandomIds),
            mode::builtin(),
        ))
    }

    pub fn new(
        store: Store,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdSource>,
        controller: AgentController,
    ) -> Self {
        let cwd = std::env::current_dir().unwrap_or_default();
        let inner = Inner {
            store,
            clock,
            ids,
            controller,
            active: Mutex::default(),
            cwd,
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    fn now(&self) -> i64 {
        self.inner.clock.now()
    }

    fn claim(&self, run_id: &str) -> Result<ActiveRun<'_>, EngineError> {
        let mut active = self.inner.active.lock().unwrap_or_else(|p| p.into_inner());
        if !active.insert(run_id.to_owned()) {
            return Err(EngineError::Busy {
                run_id: run_id.to_owned(),
                who: "this process".into(),
            });
        }
        drop(active);
        let guard = ActiveRun {
            engine: self,
            run_id: run_id.to_owned(),
        };
        let summary = self.inner.store.run(run_id)?;
        let me = std::process::id();
        if let Some(pid) = summary
            .owner_pid
            .filter(|&pid| pid != me && process_alive(pid))
        {
            return Err(EngineError::Busy {
                run_id: run_id.to_owned(),
                who: format!("process {pid}"),
            });
        }
        self.inner.store.set_owner(run_id, Some(me))?;
        Ok(guard)
    }

    /// Starts a new run: persists it, emits `start`, and drives it until it suspends or stops.
    pub async fn start(
        &self,
        prompt: &str,
        options: &StartOptions,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        let run_id = self.inner.ids.next_id("run");
        self.start_as(run_id, prompt, options, sink).await
    }

    /// `start` with a run id chosen beforehand (see `new_run_id`), so a host can show the run
    /// before its first chunk.
    pub async fn start_as(
        &self,
        run_id: String,
        prompt: &str,
        options: &StartOptions,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        if prompt.trim().is_empty() {
            return Err(EngineError::EmptyPrompt);
        }
        if options.max_steps == 0 {
            return Err(EngineError::MaxSteps);
        }
        let workspace = Workspace::open(&options.workspace, options.plans_dir.as_deref())?;
        let model = model::from_spec(&options.model, &self.inner.cwd)?;
        let mode = options
            .mode
            .clone()
            .unwrap_or_else(|| mode::PLAN.to_owned());
        self.inner.controller.mode(&mode)?;
        let mut state = RunState {
            schema_version: SCHEMA_VERSION,
            run_id: run_id.clone(),
            agent_id: AGENT_ID.into(),
            model: model.spec(),
            workspace: workspace.root().to_owned(),
            plans_dir: workspace.plans_dir().to_owned(),
            mode,
            auto_approve: options.auto_approve,
            max_steps: options.max_steps,
            steps_this_stream: 0,
            usage: Usage::default(),
            phase: Phase::CallModel,
            messages: vec![Message::user(prompt)],
        };
        self.inner.store.create_run(&state, prompt, self.now())?;
        let _active = self.claim(&run_id)?;
        let message_id = self.inner.ids.next_id("msg");
        sink.emit(Chunk::new(
            &run_id,
            ChunkKind::Start(StartPayload {
                id: AGENT_ID.into(),
                message_id: message_id.clone(),
            }),
        ));
        self.drive(&mut state, &*model, Some(message_id), sink)
            .await
    }

    /// A fresh run id, for hosts that drive `start_as` on their own task.
    pub fn new_run_id(&self) -> String {
        self.inner.ids.next_id("run")
    }

    /// Starts a run on a background task and returns its id and chunk stream at once.
    pub fn stream(&self, prompt: String, options: StartOptions) -> RunStream {
        let run_id = self.inner.ids.next_id("run");
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let engine = self.clone();
        let id = run_id.clone();
        let task = tokio::spawn(async move {
            let mut sink = move |chunk: Chunk| {
                let _ = tx.send(chunk);
            };
            engine.start_as(id, &prompt, &options, &mut sink).await
        });
        RunStream {
            run_id,
            chunks: rx,
            task,
        }
    }

    /// A person's decision, filled in as a host: for a plan, the resume data echoes the stored
    /// path, title and plan; for an approval, `{approved, reason?}`.
    pub async fn decide(
        &self,
        run_id: &str,
        verdict: &Verdict,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        let state = self.inner.store.load(run_id)?;
        let (call_id, data) = self.verdict_data(&state, verdict)?;
        self.resume_inner(
            state,
            Some(&call_id),
            data,
            verdict.revision.as_deref(),
            sink,
        )
        .await
    }

    /// Records a person's decision durably and returns without applying it, for hosts that
    /// acknowledge the decision at once and stream the run's continuation separately
    /// (`continue_run` applies it, from this process or any other).
    pub fn record_verdict(&self, run_id: &str, verdict: &Verdict) -> Result<(), EngineError> {
        let state = self.inner.store.load(run_id)?;
        let (call_id, data) = self.verdict_data(&state, verdict)?;
        let _active = self.claim(run_id)?;
        self.record(&state, &call_id, &data, verdict.revision.as_deref())
    }

    /// The call a verdict answers and the resume data it means.
    fn verdict_data(
        &self,
        state: &RunState,
        verdict: &Verdict,
    ) -> Result<(String, Value), EngineError> {
        let run_id = state.run_id.as_str();
        let call = self.target_call(state, verdict.tool_call_id.as_deref())?;
        let feedback = verdict
            .feedback
            .as_deref()
            .map(str::trim)
            .filter(|f| !f.is_empty());
        let data = match &call.status {
            CallStatus::Suspended { suspend_payload } => {
                let mut data =
                    json!({"action": if verdict.approve { "approved" } else { "rejected" }});
                if let Some(feedback) = feedback {
                    data["feedback"] = json!(feedback);
                }
                for key in ["path", "title", "plan"] {
                    if let Some(value) = suspend_payload.get(key) {
                        data[key] = value.clone();
                    }
                }
                data
            }
            _ => {
                if verdict.revision.is_some() {
                    return Err(EngineError::RevisionOnApproval {
                        run_id: run_id.to_owned(),
                        tool_call_id: call.call.tool_call_id.clone(),
                        tool_name: call.call.tool_name.clone(),
                    });
                }
                let mut data = json!({"approved": verdict.approve});
                if let Some(reason) = feedback.filter(|_| !verdict.approve) {
                    data["reason"] = json!(reason);
                }
                data
            }
        };
        Ok((call.call.tool_call_id.clone(), data))
    }

    /// Resumes a suspended run with raw resume data, for the named call or the earliest pending.
    pub async fn resume(
        &self,
        run_id: &str,
        tool_call_id: Option<&str>,
        data: Value,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        let state = self.inner.store.load(run_id)?;
        self.resume_inner(state, tool_call_id, data, None, sink)
            .await
    }

    fn target_call<'s>(
        &self,
        state: &'s RunState,
        tool_call_id: Option<&str>,
    ) -> Result<&'s CallState, EngineError> {
        let run_id = state.run_id.as_str();
        let Phase::Suspended { step } = &state.phase else {
            return Err(EngineError::NotSuspended {
                run_id: run_id.to_owned(),
                status: state.phase.status().as_str(),
            });
        };
        let pending = |id: &str| {
            step.calls
                .iter()
                .find(|c| c.call.tool_call_id == id && c.status.is_pending())
        };
        let found = match tool_call_id {
            Some(id) => pending(id),
            None => {
                let mut undecided = None;
                for call in step.calls.iter().filter(|c| c.status.is_pending()) {
                    if !self.has_decision(run_id, &call.call.tool_call_id)? {
                        undecided = Some(call);
                        break;
                    }
                }
                undecided
            }
        };
        match (found, tool_call_id) {
            (Some(call), _) => Ok(call),
            (None, Some(id)) => Err(self.already_or_not_pending(run_id, id)),
            (None, None) => match step.first_pending() {
                // Decided, but the process that decided died before applying it.
                Some(call) => Err(self.already_or_not_pending(run_id, &call.call.tool_call_id)),
                None => Err(EngineError::NotSuspended {
                    run_id: run_id.to_owned(),
                    status: "already decided",
                }),
            },
        }
    }

    fn has_decision(&self, run_id: &str, tool_call_id: &str) -> Result<bool, EngineError> {
        Ok(self.inner.store.decision(run_id, tool_call_id)?.is_some())
    }

    fn already_or_not_pending(&self, run_id: &str, id: &str) -> EngineError {
        match self.inner.store.decision(run_id, id) {
            Ok(Some(d)) => StoreError::AlreadyDecided {
                run_id: run_id.to_owned(),
                tool_call_id: id.to_owned(),
                action: d.action,
                decided_at: d.decided_at,
            }
            .into(),
            Ok(None) => StoreError::NotPending {
                run_id: run_id.to_owned(),
                tool_call_id: id.to_owned(),
            }
            .into(),
            Err(err) => err.into(),
        }
    }

    async fn resume_inner(
        &self,
        mut state: RunState,
        tool_call_id: Option<&str>,
        data: Value,
        expect_sha: Option<&str>,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        let run_id = state.run_id.clone();
        let call_id = self
            .target_call(&state, tool_call_id)?
            .call
            .tool_call_id
            .clone();
        let _active = self.claim(&run_id)?;
        self.record(&state, &call_id, &data, expect_sha)?;
        crash_point("after-decision");
        let model = model::from_spec(&state.model, &self.inner.cwd)?;
        state.steps_this_stream = 0;
        self.apply_decisions(&mut state, &*model, sink).await
    }

    /// Stores a decision for a pending call (refused if it is not pending, already decided, or
    /// with `expect_sha`, if the pending plan is not that revision).
    fn record(
        &self,
        state: &RunState,
        call_id: &str,
        data: &Value,
        expect_sha: Option<&str>,
    ) -> Result<(), EngineError> {
        let call = self.target_call(state, Some(call_id))?;
        let (action, feedback) = match &call.status {
            CallStatus::AwaitingApproval => match data.get("approved").and_then(Value::as_bool) {
                Some(true) => ("approved", None),
                Some(false) => ("declined", data.get("reason").and_then(Value::as_str)),
                None => ("invalid", None),
            },
            _ => match data.get("action").and_then(Value::as_str) {
                Some(a @ ("approved" | "rejected")) => {
                    (a, data.get("feedback").and_then(Value::as_str))
                }
                _ => ("invalid", None),
            },
        };
        self.inner.store.record_decision(&NewDecision {
            run_id: &state.run_id,
            tool_call_id: call_id,
            action,
            feedback,
            resume_data: data,
            expect_sha,
            at: self.now(),
        })?;
        Ok(())
    }

    /// Continues a run that was interrupted (its process died while it ran, or after a decision
    /// was recorded but before it was applied), or retries a failed model call.
    pub async fn continue_run(
        &self,
        run_id: &str,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        let mut state = self.inner.store.load(run_id)?;
        let _active = self.claim(run_id)?;
        let model = model::from_spec(&state.model, &self.inner.cwd)?;
        state.steps_this_stream = 0;
        match &state.phase {
            Phase::Suspended { step } => {
                let mut decided = false;
                for call in step.calls.iter().filter(|c| c.status.is_pending()) {
                    decided |= self.has_decision(run_id, &call.call.tool_call_id)?;
                }
                if !decided {
                    return Err(decision_pending(run_id, step));
                }
                self.apply_decisions(&mut state, &*model, sink).await
            }
            Phase::CallModel | Phase::RunTools { .. } => {
                self.drive(&mut state, &*model, None, sink).await
            }
            Phase::Failed { .. } => {
                state.phase = Phase::CallModel;
                self.inner
                    .store
                    .save(&state, self.now(), Some(("retry", json!({}))))?;
                self.drive(&mut state, &*model, None, sink).await
            }
            Phase::Waiting { .. } => Err(EngineError::NothingToContinue {
                run_id: run_id.to_owned(),
                status: state.phase.status().as_str(),
            }),
        }
    }

    /// The user's next message: the run continues with its whole history.
    pub async fn send(
        &self,
        run_id: &str,
        text: &str,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        if text.trim().is_empty() {
            return Err(EngineError::EmptyMessage);
        }
        let mut state = self.inner.store.load(run_id)?;
        match &state.phase {
            Phase::Suspended { step } => return Err(decision_pending(run_id, step)),
            Phase::CallModel | Phase::RunTools { .. } => {
                // Either another process drives it (claim refuses) or it was interrupted; the
                // message waits until the run is continued.
                let _probe = self.claim(run_id)?;
                return Err(EngineError::Interrupted {
                    run_id: run_id.to_owned(),
                });
            }
            Phase::Waiting { .. } | Phase::Failed { .. } => {}
        }
        let _active = self.claim(run_id)?;
        let model = model::from_spec(&state.model, &self.inner.cwd)?;
        state.messages.push(Message::user(text));
        state.steps_this_stream = 0;
        state.phase = Phase::CallModel;
        self.inner
            .store
            .save(&state, self.now(), Some(("message", json!({"text": text}))))?;
        self.drive(&mut state, &*model, None, sink).await
    }

    fn report(&self, state: &RunState) -> Result<Report, EngineError> {
        let pending = match &state.phase {
            Phase::Suspended { .. } => self
                .inner
                .store
                .pending(Some(&state.run_id))?
                .into_iter()
                .next(),
            _ => None,
        };
        let error = match &state.phase {
            Phase::Failed { error } => Some(error.clone()),
            _ => None,
        };
        Ok(Report {
            run_id: state.run_id.clone(),
            status: state.phase.status(),
            mode: state.mode.clone(),
            pending,
            error,
        })
    }

    fn workspace(&self, state: &RunState) -> Result<Workspace, EngineError> {
        Ok(Workspace::open(&state.workspace, Some(&state.plans_dir))?)
    }

    /// The tool `name` as mode `mode` offers it.
    fn tool(&self, mode: &str, name: &str) -> Result<Option<Arc<dyn Tool>>, EngineError> {
        Ok(self.inner.controller.tools(mode)?.get(name).cloned())
    }

    /// Applies every recorded decision on the suspended step's pending calls, then carries on.
    async fn apply_decisions(
        &self,
        state: &mut RunState,
        model: &dyn LanguageModel,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        let Phase::Suspended { step } = &state.phase else {
            return self.report(state);
        };
        let mut step = step.clone();
        let workspace = self.workspace(state)?;
        for index in 0..step.calls.len() {
            let call = step.calls[index].call.clone();
            if !step.calls[index].status.is_pending() {
                continue;
            }
            let Some(decision) = self
                .inner
                .store
                .decision(&state.run_id, &call.tool_call_id)?
            else {
                continue;
            };
            let tool = self.tool(&step.mode, &call.tool_name)?.ok_or_else(|| {
                EngineError::MissingTool {
                    run_id: state.run_id.clone(),
                    tool: call.tool_name.clone(),
                    mode: step.mode.clone(),
                }
            })?;
            let ctx = ToolContext {
                workspace: &workspace,
                run_id: &state.run_id,
                tool_call_id: &call.tool_call_id,
                can_suspend: true,
                auto_approve: state.auto_approve,
            };
            let data = &decision.resume_data;
            let status = match &step.calls[index].status {
                CallStatus::AwaitingApproval => {
                    self.apply_approval(&*tool, &ctx, &call, data, sink)
                }
                _ => {
                    let resume_schema = tool.resume_schema().unwrap_or(Value::Null);
                    let violations = schema::validate(&resume_schema, data);
                    if violations.is_empty() {
                        let outcome = tool.resume(&ctx, &call.args, data);
                        if let ToolOutcome::Value(result) = &outcome {
                            if call.tool_name == SUBMIT_PLAN && submit_plan::is_approval(result) {
                                state.mode = self
                                    .inner
                                    .controller
                                    .after_approval(&state.mode)?
                                    .to_owned();
                            }
                        }
                        status_of(outcome)
                    } else {
                        let result =
                            schema::validation_error(tool.name(), "resume", data, &violations);
                        CallStatus::Done {
                            outcome: Outcome::Result(result),
                        }
                    }
                }
            };
            step.calls[index].status = status;
        }
        state.phase = if step.first_pending().is_some() {
            Phase::Suspended { step }
        } else {
            Phase::RunTools { step }
        };
        self.drive(state, model, None, sink).await
    }

    fn apply_approval(
        &self,
        tool: &dyn Tool,
        ctx: &ToolContext<'_>,
        call: &ToolCall,
        data: &Value,
        sink: &mut dyn ChunkSink,
    ) -> CallStatus {
        let violations = schema::validate(&approval_schema(), data);
        if !violations.is_empty() {
            let result = schema::validation_error(tool.name(), "resume", data, &violations);
            return CallStatus::Done {
                outcome: Outcome::Result(result),
            };
        }
        if data.get("approved").and_then(Value::as_bool) == Some(true) {
            return status_of(tool.execute(ctx, &call.args));
        }
        let reason = data
            .get("reason")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .unwrap_or(DEFAULT_DECLINE_REASON)
            .to_owned();
        sink.emit(Chunk::new(
            ctx.run_id,
            ChunkKind::ToolOutputDenied(DeniedPayload {
                tool_call_id: call.tool_call_id.clone(),
                tool_name: call.tool_name.clone(),
                args: call.args.clone(),
                reason: reason.clone(),
            }),
        ));
        CallStatus::Done {
            outcome: Outcome::Denied(reason),
        }
    }

    /// Drives the state machine until the run suspends, waits, or fails.
    async fn drive(
        &self,
        state: &mut RunState,
        model: &dyn LanguageModel,
        mut message_id: Option<String>,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        loop {
            let flow = match &state.phase {
                Phase::CallModel => {
                    let id = message_id
                        .take()
                        .unwrap_or_else(|| self.inner.ids.next_id("msg"));
                    self.call_model(state, model, id, sink).await?
                }
                Phase::RunTools { .. } => self.run_tools(state, sink)?,
                Phase::Suspended { step } => {
                    // Reached after applying a decision while other calls still wait.
                    let step = step.clone();
                    self.suspend(state, step, sink)?;
                    Flow::Stop
                }
                Phase::Waiting { .. } | Phase::Failed { .. } => Flow::Stop,
            };
            if let Flow::Stop = flow {
                return self.report(state);
            }
        }
    }

    async fn call_model(
        &self,
        state: &mut RunState,
        model: &dyn LanguageModel,
        message_id: String,
        sink: &mut dyn ChunkSink,
    ) -> Result<Flow, EngineError> {
        let run_id = state.run_id.clone();
        let emit = |sink: &mut dyn ChunkSink, kind| sink.emit(Chunk::new(&run_id, kind));
        emit(
            sink,
            ChunkKind::StepStart(StepStartPayload {
                message_id: message_id.clone(),
            }),
        );
        let tools = self.inner.controller.tools(&state.mode)?;
        let specs: Vec<ToolSpec> = tools
            .iter()
            .map(|t| ToolSpec {
                name: t.name().into(),
                description: t.description(),
                input_schema: t.input_schema(),
            })
            .collect();
        let system = self.system_prompt(state)?;
        let request = ModelRequest {
            run_id: &run_id,
            system: &system,
            messages: &state.messages,
            tools: &specs,
        };
        let mut events = model.stream(request);
        let mut text = String::new();
        let mut text_id: Option<String> = None;
        let mut calls: Vec<(String, String, String)> = Vec::new();
        let mut tool_calls = Vec::new();
        let mut reason = String::from("stop");
        let mut usage: Option<Usage> = None;
        let mut failure = None;
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(err) => {
                    failure = Some(err);
                    break;
                }
            };
            if !matches!(event, ModelEvent::TextDelta(_)) {
                if let Some(id) = text_id.take() {
                    emit(sink, ChunkKind::TextEnd(TextIdPayload { id }));
                }
            }
            match event {
                ModelEvent::TextDelta(delta) => {
                    let id = text_id.get_or_insert_with(|| {
                        let id = self.inner.ids.next_id("text");
                        sink.emit(Chunk::new(
                            &run_id,
                            ChunkKind::TextStart(TextIdPayload { id: id.clone() }),
                        ));
                        id
                    });
                    text.push_str(&delta);
                    emit(
                        sink,
                        ChunkKind::TextDelta(TextDeltaPayload {
                            id: id.clone(),
                            text: delta,
                        }),
                    );
                }
                ModelEvent::ToolCallStart { id, name } => calls.push((id, name, String::new())),
                ModelEvent::ToolCallArgsDelta { id, delta } => {
                    if let Some(call) = calls.iter_mut().rev().find(|c| c.0 == id) {
                        call.2.push_str(&delta);
                    }
                }
                ModelEvent::ToolCallEnd { id } => {
                    if let Some(index) = calls.iter().position(|c| c.0 == id) {
                        let (id, name, raw) = calls.remove(index);
                        let args = parse_args(&raw);
                        let call = ToolCall {
                            tool_call_id: id,
                            tool_name: name,
                            args,
                        };
                        emit(sink, ChunkKind::ToolCall(call.clone()));
                        tool_calls.push(call);
                    }
                }
                ModelEvent::Usage(u) => usage = Some(u),
                ModelEvent::Finish { reason: r } => reason = r,
            }
        }
        drop(events);
        if let Some(id) = text_id.take() {
            emit(sink, ChunkKind::TextEnd(TextIdPayload { id }));
        }
        if let Some(err) = failure {
            let error = ChunkError {
                code: err.code().into(),
                message: err.to_string(),
            };
            emit(
                sink,
                ChunkKind::Error(ErrorPayload {
                    error: error.clone(),
                }),
            );
            state.phase = Phase::Failed {
                error: error.clone(),
            };
            // What streamed before the failure is kept in the log, not lost; the run itself
            // resumes from its last good state (the model is called again).
            let mut event = json!({"code": error.code, "error": error.message});
            if !text.is_empty() {
                event["partialText"] = json!(text);
            }
            if !tool_calls.is_empty() {
                event["partialToolCalls"] = json!(tool_calls);
            }
            self.inner
                .store
                .save(state, self.now(), Some(("failed", event)))?;
            return Ok(Flow::Stop);
        }
        state.steps_this_stream += 1;
        if let Some(u) = usage {
            state.usage.add(u);
        }
        state.messages.push(Message::Assistant {
            content: text.clone(),
            tool_calls: tool_calls.clone(),
        });
        let output = StepOutput {
            text,
            tool_calls: tool_calls.clone(),
            usage,
        };
        if tool_calls.is_empty() {
            emit(
                sink,
                ChunkKind::StepFinish(StepFinishPayload {
                    message_id,
                    step_result: StepResult {
                        reason: reason.clone(),
                        is_continued: false,
                    },
                    output: output.clone(),
                }),
            );
            state.phase = Phase::Waiting {
                reason: WaitReason::Finished,
            };
            self.inner.store.save(
                state,
                self.now(),
                Some(("finished", json!({"reason": reason}))),
            )?;
            emit(
                sink,
                ChunkKind::Finish(FinishPayload {
                    step_result: StepResult {
                        reason,
                        is_continued: false,
                    },
                    output,
                    usage: Some(state.usage),
                }),
            );
            return Ok(Flow::Stop);
        }
        let calls = tool_calls
            .into_iter()
            .map(|call| CallState {
                call,
                status: CallStatus::NotRun,
            })
            .collect();
        state.phase = Phase::RunTools {
            step: Step {
                message_id,
                mode: state.mode.clone(),
                calls,
            },
        };
        self.inner.store.save(state, self.now(), None)?;
        crash_point("after-model-call");
        Ok(Flow::Continue)
    }

    fn system_prompt(&self, state: &RunState) -> Result<String, EngineError> {
        let mode = self.inner.controller.mode(&state.mode)?;
        let mut prompt = format!(
            "{AGENT_INSTRUCTIONS}\nPlans go in the `{}/` folder of the workspace.",
            state.plans_dir
        );
        if let Some(instructions) = &mode.instructions {
            prompt.push_str("\n\n");
            prompt.push_str(instructions);
        }
        Ok(prompt)
    }

    /// Runs every call of the step not yet run; suspends if any waits for a person, else
    /// finishes the step.
    fn run_tools(
        &self,
        state: &mut RunState,
        sink: &mut dyn ChunkSink,
    ) -> Result<Flow, EngineError> {
        let Phase::RunTools { step } = &state.phase else {
            return Ok(Flow::Stop);
        };
        let mut step = step.clone();
        let workspace = self.workspace(state)?;
        let tools = self.inner.controller.tools(&step.mode)?;
        for entry in step
            .calls
            .iter_mut()
            .filter(|c| c.status == CallStatus::NotRun)
        {
            let call = &entry.call;
            let Some(tool) = tools.get(&call.tool_name) else {
                entry.status = CallStatus::Done {
                    outcome: Outcome::Error(format!(
                        "Tool `{}` does not exist in {} mode. Available tools: {}.",
                        call.tool_name,
                        step.mode,
                        tools.names().join(", ")
                    )),
                };
                continue;
            };
            let violations = schema::validate(&tool.input_schema(), &call.args);
            if !violations.is_empty() {
                let result =
                    schema::validation_error(tool.name(), "input", &call.args, &violations);
                entry.status = CallStatus::Done {
                    outcome: Outcome::Result(result),
                };
                continue;
            }
            let ctx = ToolContext {
                workspace: &workspace,
                run_id: &state.run_id,
                tool_call_id: &call.tool_call_id,
                can_suspend: true,
                auto_approve: state.auto_approve,
            };
            entry.status = if tool.requires_approval(&ctx) {
                CallStatus::AwaitingApproval
            } else {
                status_of(tool.execute(&ctx, &call.args))
            };
        }
        if step.first_pending().is_some() {
            self.suspend(state, step, sink)?;
            return Ok(Flow::Stop);
        }
        self.finish_step(state, step, sink)
    }

    /// Persists the suspension (plan revisions and pending items included), then announces the
    /// earliest pending call.
    fn suspend(
        &self,
        state: &mut RunState,
        step: Step,
        sink: &mut dyn ChunkSink,
    ) -> Result<(), EngineError> {
        let first = step.first_pending().cloned();
        state.phase = Phase::Suspended { step };
        let Some(first) = first else { return Ok(()) };
        let call = first.call;
        self.inner.store.save(
            state,
            self.now(),
            Some(("suspended", json!({"toolCallId": call.tool_call_id}))),
        )?;
        crash_point("after-suspend");
        let Phase::Suspended { step } = &state.phase else {
            return Ok(());
        };
        let tool = self.tool(&step.mode, &call.tool_name)?;
        let kind = match first.status {
            CallStatus::Suspended { suspend_payload } => {
                let resume_schema = tool.and_then(|t| t.resume_schema()).unwrap_or(Value::Null);
                ChunkKind::ToolCallSuspended(SuspendedPayload {
                    tool_call_id: call.tool_call_id,
                    tool_name: call.tool_name,
                    args: call.args,
                    suspend_payload,
                    resume_schema: resume_schema.to_string(),
                })
            }
            _ => ChunkKind::ToolCallApproval(ApprovalPayload {
                tool_call_id: call.tool_call_id,
                tool_name: call.tool_name,
                args: call.args,
                resume_schema: approval_schema().to_string(),
            }),
        };
        sink.emit(Chunk::new(&state.run_id, kind));
        Ok(())
    }

    /// Every call of the step is done: report the results, give them to the model, and decide
    /// whether the loop goes on.
    fn finish_step(
        &self,
        state: &mut RunState,
        step: Step,
        sink: &mut dyn ChunkSink,
    ) -> Result<Flow, EngineError> {
        let run_id = state.run_id.clone();
        let mut wait_for_user = false;
        for entry in &step.calls {
            let CallStatus::Done { outcome } = &entry.status else {
                continue;
            };
            let call = &entry.call;
            match outcome {
                Outcome::Result(result) => {
                    wait_for_user |=
                        call.tool_name == SUBMIT_PLAN && submit_plan::waits_for_user(result);
                    sink.emit(Chunk::new(
                        &run_id,
                        ChunkKind::ToolResult(ToolResultPayload {
                            tool_call_id: call.tool_call_id.clone(),
                            tool_name: call.tool_name.clone(),
                            args: call.args.clone(),
                            result: result.clone(),
                        }),
                    ));
                }
                Outcome::Error(error) => sink.emit(Chunk::new(
                    &run_id,
                    ChunkKind::ToolError(ToolErrorPayload {
                        tool_call_id: call.tool_call_id.clone(),
                        tool_name: call.tool_name.clone(),
                        args: call.args.clone(),
                        error: error.clone(),
                    }),
                )),
                Outcome::Denied(_) => {}
            }
            state.messages.push(Message::Tool {
                tool_call_id: call.tool_call_id.clone(),
                tool_name: call.tool_name.clone(),
                result: outcome.for_model(),
            });
        }
        let text = state
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::Assistant { content, .. } => Some(content.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let output = StepOutput {
            text,
            tool_calls: step.calls.iter().map(|c| c.call.clone()).collect(),
            usage: None,
        };
        let stop = if wait_for_user {
            Some(WaitReason::Feedback)
        } else if state.steps_this_stream >= state.max_steps {
            Some(WaitReason::MaxSteps)
        } else {
            None
        };
        let step_finish = |is_continued| {
            ChunkKind::StepFinish(StepFinishPayload {
                message_id: step.message_id.clone(),
                step_result: StepResult {
                    reason: "tool-calls".into(),
                    is_continued,
                },
                output: output.clone(),
            })
        };
        let Some(reason) = stop else {
            state.phase = Phase::CallModel;
            self.inner.store.save(state, self.now(), None)?;
            sink.emit(Chunk::new(&run_id, step_finish(true)));
            return Ok(Flow::Continue);
        };
        state.phase = Phase::Waiting { reason };
        let event = if reason == WaitReason::Feedback {
            "waiting"
        } else {
            "max-steps"
        };
        self.inner
            .store
            .save(state, self.now(), Some((event, json!({}))))?;
        sink.emit(Chunk::new(&run_id, step_finish(false)));
        sink.emit(Chunk::new(
            &run_id,
            ChunkKind::Finish(FinishPayload {
                step_result: StepResult {
                    reason: "tool-calls".into(),
                    is_continued: false,
                },
                output,
                usage: Some(state.usage),
            }),
        ));
        Ok(Flow::Stop)
    }
}

/// The refusal for acting on a run whose step still waits for a person.
fn decision_pending(run_id: &str, step: &Step) -> EngineError {
    EngineError::DecisionPending {
        run_id: run_id.to_owned(),
        tool_call_id: step
            .first_pending()
            .map(|c| c.call.tool_call_id.clone())
            .unwrap_or_default(),
    }
}

fn status_of(outcome: ToolOutcome) -> CallStatus {
    match outcome {
        ToolOutcome::Value(result) => CallStatus::Done {
            outcome: Outcome::Result(result),
        },
        ToolOutcome::Failed(error) => CallStatus::Done {
            outcome: Outcome::Error(error),
        },
        ToolOutcome::Suspend { payload } => CallStatus::Suspended {
            suspend_payload: payload,
        },
    }
}

/// Tool arguments as the model streamed them: `""` means no arguments; text that is not JSON is
/// kept as a string so schema validation can say what is wrong with it.
fn parse_args(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// A run started on a background task: its id at once, its chunks as they come.
#[derive(Debug)]
pub struct RunStream {
    pub run_id: String,
    chunks: tokio::sync::mpsc::UnboundedReceiver<Chunk>,
    task: tokio::task::JoinHandle<Result<Report, EngineError>>,
}

impl RunStream {
    /// The next chunk, or `None` once the run's stream has ended.
    pub async fn next_chunk(&mut self) -> Option<Chunk> {
        self.chunks.recv().await
    }

    /// Stops the run where it is: the model call in flight is dropped, which closes its HTTP
    /// stream. The run keeps its last committed state; `Engine::continue_run` picks it up again.
    /// Returns once the run's task has ended.
    pub async fn cancel(self) {
        self.task.abort();
        let _ = self.task.await;
    }

    /// Waits for the stream to end and returns where the run stands.
    pub async fn report(self) -> Result<Report, EngineError> {
        match self.task.await {
            Ok(report) => report,
            Err(join) => Err(EngineError::Store(StoreError::Invalid {
                run_id: self.run_id,
                message: format!("run task failed: {join}"),
            })),
        }
    }
}

impl futures::Stream for RunStream {
    type Item = Chunk;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Chunk>> {
        self.chunks.poll_recv(cx)
    }
}
