//! Plandesk's desktop shell: commands over the engine, a channel per run, the inbox watcher
//! (which also notifies and keeps the title and tray count), and the window. No business logic.

pub mod agents;
pub mod commands;
mod inbox;
pub mod ipc;
pub mod reviewing;

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use plandesk::{Chunk, ChunkSink, Engine, EngineError, Report};
use tauri::ipc::Channel;
use tauri::{Manager, Runtime, WebviewUrl, WebviewWindowBuilder};

use crate::ipc::RunEvent;

pub const WINDOW: &str = "main";

/// Where the app keeps its store and which folder it offers first.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub data_dir: Option<PathBuf>,
    pub workspace: Option<PathBuf>,
    /// A run whose plan the window opens on (a notification sent by a hook was clicked).
    pub open: Option<String>,
}

/// A run this app is driving: its task, and the channel its chunks go to.
struct Driven {
    task: u64,
    abort: tauri::async_runtime::JoinHandle<()>,
    channel: Option<Channel<RunEvent>>,
}

/// Everything the commands share.
pub struct AppState {
    pub engine: Engine,
    pub data_dir: PathBuf,
    pub workspace: Option<PathBuf>,
    /// The run on screen (no notification for it while the window has focus).
    pub viewing: Mutex<Option<String>>,
    /// The run to open first, once (`--open`).
    pub open_first: Mutex<Option<String>>,
    driven: Arc<Mutex<HashMap<String, Driven>>>,
    next_task: AtomicU64,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}

/// Sends a run's chunks to its channel (or nowhere, when nobody listens).
pub struct ChannelSink(Option<Channel<RunEvent>>);

impl std::fmt::Debug for ChannelSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "ChannelSink(channel)"
        } else {
            "ChannelSink(none)"
        })
    }
}

impl ChunkSink for ChannelSink {
    fn emit(&mut self, chunk: Chunk) {
        if let Some(channel) = &self.0 {
            let _ = channel.send(RunEvent::Chunk(chunk));
        }
    }
}

impl AppState {
    pub fn open(options: &Options) -> Result<Self, EngineError> {
        let data_dir = options
            .data_dir
            .clone()
            .unwrap_or_else(plandesk::store::default_data_dir);
        Ok(Self {
            engine: Engine::open_as(&data_dir, "app")?,
            data_dir,
            workspace: options.workspace.clone(),
            viewing: Mutex::default(),
            open_first: Mutex::new(options.open.clone()),
            driven: Arc::default(),
            next_task: AtomicU64::new(1),
        })
    }

    /// Runs `work` (a start, a continuation, a message) on its own task, streaming into
    /// `channel`, and ends the channel with how it went. One task per run at a time; the engine
    /// refuses a second driver itself.
    pub fn drive<F, Fut>(&self, run_id: String, channel: Option<Channel<RunEvent>>, work: F)
    where
        F: FnOnce(ChannelSink) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Report, EngineError>> + Send + 'static,
    {
        let task = self.next_task.fetch_add(1, Ordering::Relaxed);
        let driven = self.driven.clone();
        let sink = ChannelSink(channel.clone());
        let end = channel.clone();
        let id = run_id.clone();
        // Held while spawning, so the task cannot finish and deregister before it is registered.
        let mut map = driven.lock().unwrap_or_else(|p| p.into_inner());
        let handle = tauri::async_runtime::spawn({
            let driven = driven.clone();
            async move {
                let outcome = work(sink).await;
                {
                    let mut map = driven.lock().unwrap_or_else(|p| p.into_inner());
                    if map.get(&id).is_some_and(|d| d.task == task) {
                        map.remove(&id);
                    }
                }
                if let Some(channel) = end {
                    let event = match outcome {
                        Ok(report) => RunEvent::Ended(Box::new(report)),
                        Err(err) => RunEvent::Refused(err.into()),
                    };
                    let _ = channel.send(event);
                }
            }
        });
        map.insert(
            run_id,
            Driven {
                task,
                abort: handle,
                channel,
            },
        );
    }

    /// Cancels the run's task (its HTTP stream closes with it); `false` if none runs.
    pub fn cancel(&self, run_id: &str) -> bool {
        let driven = self
            .driven
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(run_id);
        match driven {
            Some(driven) => {
                driven.abort.abort();
                if let Some(channel) = driven.channel {
                    let _ = channel.send(RunEvent::Cancelled {
                        run_id: run_id.to_owned(),
                    });
                }
                true
            }
            None => false,
        }
    }
}

/// Adds the state and the commands: what both the real app and the command tests build on.
pub fn configure<R: Runtime>(builder: tauri::Builder<R>, state: AppState) -> tauri::Builder<R> {
    builder
        .manage(state)
        .invoke_handler(tauri::generate_handler![
            commands::app_info,
            commands::start_run,
            commands::decide,
            commands::send_message,
            commands::retry_run,
            commands::cancel_run,
            commands::inbox,
            commands::runs,
            commands::run_detail,
            commands::revision,
            commands::plan_thread,
            commands::compare,
            commands::history,
            commands::save_settings,
            commands::set_viewing,
            commands::open_link,
            commands::pick_workspace,
            agents::agent_setup,
            agents::install_agent,
            reviewing::comments,
            reviewing::add_comment,
            reviewing::resolve_comment,
            reviewing::edit_plan,
            reviewing::preview,
            reviewing::audit,
            reviewing::export_audit,
        ])
}

/// The app: window, tray, inbox watcher.
pub fn run(options: Options) -> Result<(), String> {
    let state = AppState::open(&options).map_err(|e| e.to_string())?;
    let engine = state.engine.clone();
    // Hooks look for this to know a person will be told of their plans.
    let presence = plandesk::source::presence::hold(&state.data_dir).map_err(|e| {
        format!(
            "cannot mark the app as running in {}: {e}",
            state.data_dir.display()
        )
    })?;
    let builder = tauri::Builder::default()
        .plugin(tauri_plugin_opener::init())
        .plugin(tauri_plugin_dialog::init());
    configure(builder, state)
        .setup(move |app| {
            let window =
                WebviewWindowBuilder::new(app, WINDOW, WebviewUrl::App("index.html".into()))
                    .title("Plandesk")
                    .inner_size(1200.0, 800.0)
                    .min_inner_size(860.0, 560.0)
                    // Nothing but the app itself is ever shown in the window: links in plans go to
                    // the system browser through `open_link`.
                    .on_navigation(|url| {
                        matches!(url.scheme(), "tauri") || url.host_str() == Some("tauri.localhost")
                    })
                    .build()?;
            let _ = window.set_focus();
            inbox::install_tray(app.handle());
            inbox::watch(app.handle().clone(), engine.clone());
            Ok(())
        })
        .run(tauri::generate_context!("../tauri.conf.json"))
        .map_err(|e| format!("the app stopped: {e}"))?;
    drop(presence);
    Ok(())
}

/// The state, for code that has an app handle.
pub fn state<R: Runtime>(app: &tauri::AppHandle<R>) -> tauri::State<'_, AppState> {
    app.state::<AppState>()
}
