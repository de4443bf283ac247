//! The engine: runs agents over a store. It drives each run's state machine (`run`): calls the
//! model, runs tools, persists every move before the chunk that announces it, and hands plans to
//! the review core. Split by concern: `drive` (the loop), `turn` (folding model events),
//! `emit` (chunk payloads), `decide` (decisions and continuations), `claim` (who drives a run),
//! `runs` (what hosts read), `error`.

mod claim;
mod decide;
mod drive;
mod emit;
mod error;
mod persist;
mod runs;
mod tools;
mod turn;
mod verdict;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::chunk::{Chunk, ChunkError, Usage};
use crate::clock::{Clock, IdSource, RandomIds, SystemClock};
use crate::config::StoreLocation;
use crate::message::Message;
use crate::mode::{self, AgentController};
use crate::model;
use crate::review::{Review, ReviewItem};
use crate::run::{Phase, RunState, RunStatus, Stored, SCHEMA_VERSION};
use crate::store::{Actor, NewRun, Source, SqliteStore, Store};
use crate::workspace::Workspace;

pub use error::EngineError;
pub use runs::{RunDetail, RunView};

pub const AGENT_ID: &str = "plandesk";
pub const DEFAULT_MAX_STEPS: u32 = 50;
/// Set to a crash point name (`after-model-call`, `after-suspend`, `after-decision`) to make
/// the process abort there, as `kill -9` would: the crash tests use it.
pub const CRASH_ENV: &str = "PLANDESK_CRASH_AT";

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
    /// A model spec (`demo`, `scripted:FILE`, `openai:MODEL`, ...).
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
    /// Notes that go with an approval: the agent reads them after the approval text.
    pub note: Option<String>,
    pub tool_call_id: Option<String>,
    /// sha256 (or a prefix of 8+ hex digits) of the plan revision the person saw.
    pub revision: Option<String>,
    /// With an approval of Claude Code's plan: it then edits files without asking, as its own
    /// "Yes, and auto-accept edits" does. Refused for any other decision.
    pub accept_edits: bool,
}

/// Where a run stands after a stream ended.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub run_id: String,
    pub status: RunStatus,
    pub mode: String,
    pub pending: Option<ReviewItem>,
    pub error: Option<ChunkError>,
    /// Where the run's plans come from: an outside agent's session is answered, not driven.
    pub source: Source,
}

#[derive(Debug)]
struct Inner {
    /// This process, for the audit trail (`cli`, `app`, `hook:claude-code`, `mcp`).
    actor: Actor,
    store: Arc<dyn Store>,
    review: Review,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdSource>,
    /// Shared by every engine acting for someone else (each request `serve` waits on): made
    /// once, with each mode's tools and what the model is told of them.
    controller: Arc<AgentController>,
    cwd: PathBuf,
    /// Render each plan as soon as it is submitted (a process that will show it: the app).
    prerender: std::sync::atomic::AtomicBool,
    /// The state the last stream driven here stopped on, or the last run looked at (see `park`
    /// and `park_looked_at`): what a person acts on next.
    parked: std::sync::Mutex<Option<RunState>>,
}

/// The engine: runs agents over a store. Cheap to clone; clones share everything.
#[derive(Debug, Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// Aborts the process at a named point, as `kill -9` would, when `PLANDESK_CRASH_AT` names it.
fn crash_point(name: &str) {
    if std::env::var(CRASH_ENV).is_ok_and(|v| v == name) {
        std::process::abort();
    }
}

impl Engine {
    /// Opens the SQLite store in `data_dir` with the wall clock, random ids and built-in modes,
    /// as the `plandesk` CLI.
    pub fn open(data_dir: &Path) -> Result<Self, EngineError> {
        Self::open_as(data_dir, "cli")
    }

    /// [`Engine::open`] for a named process (`app`, `hook:claude-code`, `mcp`): what the audit
    /// trail says a decision or a submission came from.
    pub fn open_as(data_dir: &Path, process: &str) -> Result<Self, EngineError> {
        Ok(Self::new(
            Arc::new(SqliteStore::open(data_dir)?),
            Arc::new(SystemClock),
            Arc::new(RandomIds),
            mode::builtin(),
        )
        .with_actor(Actor::local(process)))
    }

    /// [`Engine::open_as`] on any store: the SQLite file of a data folder, or a team's
    /// PostgreSQL database.
    pub async fn open_at(location: &StoreLocation, process: &str) -> Result<Self, EngineError> {
        Ok(Self::new(
            location.open().await?,
            Arc::new(SystemClock),
            Arc::new(RandomIds),
            mode::builtin(),
        )
        .with_actor(Actor::local(process)))
    }

    /// The same engine, acting as `actor` (as this computer's reviewer: a name in Settings
    /// wins).
    pub fn with_actor(self, actor: Actor) -> Self {
        self.acting_as(actor, false)
    }

    /// The same engine, acting as the person `actor` names whatever Settings say: a reviewer
    /// signed in to the web review.
    pub fn as_person(self, actor: Actor) -> Self {
        self.acting_as(actor, true)
    }

    fn acting_as(self, actor: Actor, named: bool) -> Self {
        let inner = match Arc::try_unwrap(self.inner) {
            Ok(inner) => inner,
            Err(shared) => Inner {
                actor: shared.actor.clone(),
                store: shared.store.clone(),
                review: shared.review.clone(),
                clock: shared.clock.clone(),
                ids: shared.ids.clone(),
                controller: shared.controller.clone(),
                cwd: shared.cwd.clone(),
                prerender: shared
                    .prerender
                    .load(std::sync::atomic::Ordering::Relaxed)
                    .into(),
                parked: Default::default(),
            },
        };
        Self {
            inner: Arc::new(Inner {
                review: inner.review.acting_as(actor.clone(), named),
                actor,
                ..inner
            }),
        }
    }

    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdSource>,
        controller: AgentController,
    ) -> Self {
        let cwd = std::env::current_dir().unwrap_or_default();
        let actor = Actor::local("cli");
        let inner = Inner {
            review: Review::new(store.clone(), clock.clone(), actor.clone()),
            actor,
            store,
            clock,
            ids,
            controller: Arc::new(controller),
            cwd,
            prerender: false.into(),
            parked: Default::default(),
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// From now on each plan is rendered as soon as it is submitted, off the run's path, so
    /// that showing it finds it ready (for the app; a CLI process would only wait for it).
    pub fn prerender_plans(&self) {
        self.inner
            .prerender
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The review core over the same store: inbox, history, revisions, comparisons.
    pub fn review(&self) -> &Review {
        &self.inner.review
    }

    fn now(&self) -> i64 {
        self.inner.clock.now()
    }

    /// The bearer tokens of `plandesk serve`, managed as this engine's actor.
    pub fn tokens(&self) -> crate::token::Tokens {
        crate::token::Tokens::new(
            self.inner.store.clone(),
            self.inner.clock.clone(),
            self.inner.actor.clone(),
        )
    }

    /// The engine's clock, in milliseconds since the epoch.
    pub fn now_millis(&self) -> i64 {
        self.now()
    }

    /// A fresh run id, for hosts that drive `start_as` on their own task.
    pub fn new_run_id(&self) -> String {
        self.inner.ids.next_id("run")
    }

    /// Starts a new run: persists it, emits `start`, and drives it until it suspends or stops.
    pub async fn start(
        &self,
        prompt: &str,
        options: &StartOptions,
        sink: &mut dyn ChunkSink,
    ) -> Result<Report, EngineError> {
        let run_id = self.new_run_id();
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
            stored: Stored::default(),
        };
        let workspace_text = state.workspace.display().to_string();
        let model_spec = state.model.clone();
        let new_run = NewRun {
            id: &run_id,
            prompt,
            model: &model_spec,
            workspace: &workspace_text,
            source: &Source::engine(),
        };
        self.create(&mut state, &new_run).await?;
        let claim = self.claim(&run_id).await?;
        let message_id = self.inner.ids.next_id("msg");
        sink.emit(emit::start(&run_id, AGENT_ID, &message_id));
        let report = self
            .drive(&mut state, &*model, Some(message_id), sink)
            .await;
        claim.release().await;
        self.park(state, &report);
        report
    }

    /// Starts a run on a background task and returns its id and chunk stream at once.
    pub fn stream(&self, prompt: String, options: StartOptions) -> RunStream {
        let run_id = self.new_run_id();
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
            Err(join) => Err(EngineError::Task {
                run_id: self.run_id,
                message: format!("the run's task failed: {join}"),
            }),
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
