//! Plandesk's desktop shell: commands over the engine, a channel per run, the inbox watcher
//! (which also notifies and keeps the title and tray count), and the window. No business logic.

pub mod agents;
pub mod autostart;
pub mod commands;
pub mod inbox;
pub mod instance;
pub mod ipc;
pub mod rendering;
pub mod reviewing;
pub mod revisions;
pub mod settings;

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use plandesk::source::serve::nearby;
use plandesk::view::{self, LiveChunk};
use plandesk::{Chunk, ChunkSink, Engine, EngineError, Report};
use tauri::ipc::Channel;
use tauri::webview::PageLoadEvent;
use tauri::{Emitter, Manager, Runtime, WebviewUrl, WebviewWindowBuilder, WindowEvent};

use crate::ipc::RunEvent;

pub const WINDOW: &str = "main";

/// Where the app keeps its store, which folder it offers first, and how it starts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    pub data_dir: Option<PathBuf>,
    /// A team's PostgreSQL store (`--store`; else `PLANDESK_STORE`, else the one saved in
    /// Settings for the data folder, else the data folder's SQLite file).
    pub store: Option<String>,
    pub workspace: Option<PathBuf>,
    /// A plan to open first: a run id or revision key (`--open`, a `plandesk://plan/` link, a
    /// clicked notification).
    pub open: Option<String>,
    /// Start in the tray with no window shown (`--hidden`, as the login autostart does).
    pub hidden: bool,
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
    /// The store the engine uses.
    pub store: plandesk::config::StoreLocation,
    /// Whether it was named at launch (`--store`, `PLANDESK_STORE`): then it wins over Settings.
    pub store_given: bool,
    pub workspace: Option<PathBuf>,
    /// The run on screen (no notification for it while the window has focus; a run that stops
    /// on a plan hands its review over unless another run is on screen).
    pub viewing: Arc<Mutex<Option<String>>>,
    /// The plan to open first, once (`--open`): a run id or revision key.
    pub open_first: Mutex<Option<String>>,
    /// The login autostart entry ("Start at login, in the tray"); `None` without a config folder.
    pub autostart: Option<autostart::Autostart>,
    /// While on, closing the window hides it to the tray instead of quitting.
    pub keep_in_tray: AtomicBool,
    /// Whether the app serves the review to its network (Settings → Review from your phone).
    pub phone: nearby::Switch,
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
            let _ = channel.send(RunEvent::Chunk(LiveChunk::from(chunk)));
        }
    }
}

impl AppState {
    pub fn open(options: &Options) -> Result<Self, EngineError> {
        let data_dir = options
            .data_dir
            .clone()
            .unwrap_or_else(plandesk::config::default_data_dir);
        let store = plandesk::config::StoreLocation::choose(options.store.as_deref(), &data_dir)?;
        let engine = tauri::async_runtime::block_on(Engine::open_at(&store, "app"))?;
        engine.prerender_plans();
        let autostart = autostart::Autostart::for_this_app(&data_dir)
            .map_err(|err| eprintln!("plandesk-app: no start at login: {err}"))
            .ok();
        let store_given = plandesk::config::named_store(options.store.as_deref()).is_some();
        Ok(Self {
            engine,
            data_dir,
            store,
            store_given,
            workspace: options.workspace.clone(),
            viewing: Arc::default(),
            open_first: Mutex::new(options.open.clone()),
            autostart,
            keep_in_tray: AtomicBool::new(false),
            phone: Default::default(),
            driven: Arc::default(),
            next_task: AtomicU64::new(1),
        })
    }

    /// Runs `work` (a start, a continuation, a message) on its own task, streaming into
    /// `channel`, and ends the channel with how it went (`None`: the command that started it
    /// has already answered with the error, and the channel says nothing more). One task per
    /// run at a time: a run this window is carrying on already is refused at once (a second
    /// task would take the first one's place, and Stop would stop the wrong one); the engine
    /// refuses a second driver in another process itself.
    pub fn drive<F, Fut>(
        &self,
        run_id: String,
        channel: Option<Channel<RunEvent>>,
        work: F,
    ) -> Result<(), ipc::IpcError>
    where
        F: FnOnce(ChannelSink) -> Fut + Send + 'static,
        Fut: Future<Output = Option<Result<Report, EngineError>>> + Send + 'static,
    {
        let task = self.next_task.fetch_add(1, Ordering::Relaxed);
        let driven = self.driven.clone();
        let engine = self.engine.clone();
        let viewing = self.viewing.clone();
        let sink = ChannelSink(channel.clone());
        let end = channel.clone();
        let id = run_id.clone();
        // Held while spawning, so the task cannot finish and deregister before it is registered.
        let mut map = driven.lock().unwrap_or_else(|p| p.into_inner());
        if map.contains_key(&run_id) {
            return Err(ipc::IpcError::new(
                "busy",
                format!("run {run_id} is going on in this window; wait for it to stop"),
            ));
        }
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
                if let (Some(channel), Some(outcome)) = (end, outcome) {
                    let event = match outcome {
                        Ok(report) => {
                            let hand_over = view::hands_review_over(
                                viewing.lock().unwrap_or_else(|p| p.into_inner()).as_deref(),
                                &report.run_id,
                            );
                            RunEvent::Ended(view::run_end(&engine, report, hand_over).await)
                        }
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
        Ok(())
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
            settings::app_info,
            settings::sign_in_link,
            settings::phone_serving,
            settings::serve_phone,
            settings::webhooks,
            settings::add_webhook,
            settings::remove_webhook,
            commands::default_model,
            commands::start_run,
            commands::decide,
            commands::send_message,
            commands::retry_run,
            commands::cancel_run,
            commands::inbox,
            commands::runs,
            commands::run_detail,
            commands::tool_call,
            revisions::revision,
            revisions::revision_source,
            revisions::revision_pages,
            revisions::plan_thread,
            revisions::compare,
            revisions::history,
            settings::save_settings,
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
            reviewing::progress,
            reviewing::revision_progress,
            reviewing::file_diff,
            reviewing::mark_step,
        ])
}

/// The app: window, tray, inbox watcher; one instance per store.
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
    let context = tauri::generate_context!("../tauri.conf.json");
    let mut builder = tauri::Builder::default();
    // First, so a second launch hands over before anything else starts. Without a session bus
    // (where the plugin would panic) the app still runs, just not as a single instance.
    if session_bus_reachable() {
        let id = format!(
            "{}.{}",
            context.config().identifier,
            plandesk::source::presence::store_tag(&state.data_dir)
        );
        builder = builder.plugin(
            tauri_plugin_single_instance::Builder::new()
                .dbus_id(id)
                .callback(|app, argv, _cwd| instance::second_launch(app, argv))
                .build(),
        );
    }
    let builder = builder
        .plugin(tauri_plugin_opener::init())
        .plugin(tauri_plugin_dialog::init());
    let hidden = options.hidden;
    configure(builder, state)
        .setup(move |app| {
            let state = crate::state(app.handle());
            if let Some(entry) = &state.autostart {
                let on = tauri::async_runtime::block_on(autostart::settle(&engine, entry));
                state.keep_in_tray.store(on, Ordering::Relaxed);
            }
            // Mapped only once its page has loaded (see `show_when_loaded`).
            let window =
                WebviewWindowBuilder::new(app, WINDOW, WebviewUrl::App("index.html".into()))
                    .title("Plandesk")
                    .inner_size(1200.0, 800.0)
                    .min_inner_size(860.0, 560.0)
                    .visible(false)
                    // Nothing but the app itself is ever shown in the window: links in plans go to
                    // the system browser through `open_link`.
                    .on_navigation(|url| {
                        matches!(url.scheme(), "tauri") || url.host_str() == Some("tauri.localhost")
                    })
                    .on_page_load(move |window, payload| {
                        if !hidden && payload.event() == PageLoadEvent::Finished {
                            show_once(&window);
                        }
                    })
                    .build()?;
            if !hidden {
                show_when_loaded(window);
            }
            inbox::install_tray(app.handle());
            inbox::watch(app.handle().clone(), engine.clone());
            follow_network(app.handle().clone());
            quit_on_signals(app.handle().clone());
            Ok(())
        })
        .on_window_event(|window, event| {
            if let WindowEvent::CloseRequested { api, .. } = event {
                // In the tray: the window goes, the app stays (Quit is in the tray's menu).
                if crate::state(window.app_handle())
                    .keep_in_tray
                    .load(Ordering::Relaxed)
                {
                    api.prevent_close();
                    window_settled();
                    let _ = window.hide();
                }
            }
        })
        .build(context)
        .map_err(|e| format!("the app could not start: {e}"))?
        .run(|app, event| {
            if let tauri::RunEvent::ExitRequested { api, code, .. } = event {
                // Quitting: first every plan waiting on the phones' server is answered "not
                // approved" (a dropped connection would leave its agent to decide), on a task
                // of its own while the main thread goes on (the inbox watcher, telling the
                // tray of the plans closed, needs it); then the app exits for good.
                if !QUITTING.swap(true, Ordering::Relaxed) {
                    api.prevent_exit();
                    let app = app.clone();
                    tauri::async_runtime::spawn(async move {
                        let phone = &crate::state(&app).phone;
                        let _ = tokio::time::timeout(QUIT_WAIT, phone.shut_down()).await;
                        app.exit(code.unwrap_or(0));
                    });
                }
            }
        });
    drop(presence);
    Ok(())
}

/// How long quitting waits for the phones' server to answer what waits on it.
pub(crate) const QUIT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
/// Set once quitting has begun: the exit asked for after the phones' server stopped goes
/// through.
static QUITTING: AtomicBool = AtomicBool::new(false);

/// Quits as the tray's Quit does on SIGTERM (a logout, `kill`), SIGINT (Ctrl+C in the terminal
/// it was started from) and SIGHUP (that terminal closed): what waits on the phones' server is
/// answered first.
fn quit_on_signals<R: Runtime>(app: tauri::AppHandle<R>) {
    use tokio::signal::unix::{signal, SignalKind};
    tauri::async_runtime::spawn(async move {
        let kinds = [
            SignalKind::terminate(),
            SignalKind::interrupt(),
            SignalKind::hangup(),
        ];
        let mut signals = Vec::new();
        for kind in kinds {
            match signal(kind) {
                Ok(stream) => signals.push(stream),
                Err(err) => eprintln!("plandesk-app: signals are not heard: {err}"),
            }
        }
        if signals.is_empty() {
            return;
        }
        let received = signals.iter_mut().map(|s| Box::pin(s.recv()));
        futures::future::select_all(received).await;
        app.exit(0);
    });
}

/// Lets phones in while the person left it on and this computer is on the network it was
/// turned on for, looking again every [`nearby::LOOK_AGAIN`]; the window hears of each change
/// (`phone-serving`), for Settings.
fn follow_network<R: Runtime>(app: tauri::AppHandle<R>) {
    tauri::async_runtime::spawn(async move {
        let mut told = None;
        loop {
            let state = crate::state(&app);
            state
                .phone
                .follow_network(&state.engine, &state.data_dir)
                .await;
            let serving = state.phone.serving(&state.engine).await;
            if told.as_ref() != Some(&serving) {
                let _ = app.emit("phone-serving", &serving);
                told = Some(serving);
            }
            tokio::time::sleep(nearby::LOOK_AGAIN).await;
        }
    });
}

/// How long a launch waits for the page to load before it shows the window anyway.
const SHOW_ANYWAY: std::time::Duration = std::time::Duration::from_secs(3);

/// Shows the window once its page has loaded (`on_page_load` calls [`show_once`]), or after
/// [`SHOW_ANYWAY`] if it never reports that. Mapped any earlier, GTK asks WebKit to paint it
/// before the web process has drawn anything, and WebKit may hold the main thread until it
/// has, for up to 500 ms (a timed wait that ran out in 6 of 20 launches here; none since).
fn show_when_loaded<R: Runtime>(window: tauri::WebviewWindow<R>) {
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(SHOW_ANYWAY).await;
        show_once(&window);
    });
}

/// Whether the launch's own showing of the window is done with: it showed it, or the person
/// already showed it (tray, a second launch, a notification) or closed it to the tray.
static LAUNCH_SHOWN: AtomicBool = AtomicBool::new(false);

/// Shows and focuses the window, unless the launch's showing is done with.
fn show_once<R: Runtime>(window: &tauri::WebviewWindow<R>) {
    if !LAUNCH_SHOWN.swap(true, Ordering::Relaxed) {
        let _ = window.show();
        let _ = window.set_focus();
    }
}

/// The person showed or hid the window: a launch still waiting for its page leaves it so.
pub(crate) fn window_settled() {
    LAUNCH_SHOWN.store(true, Ordering::Relaxed);
}

/// Whether a D-Bus session bus can be found (the single-instance plugin needs one).
fn session_bus_reachable() -> bool {
    std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some_and(|a| !a.is_empty())
        || std::env::var_os("XDG_RUNTIME_DIR")
            .is_some_and(|dir| std::path::Path::new(&dir).join("bus").exists())
}

/// The state, for code that has an app handle.
pub fn state<R: Runtime>(app: &tauri::AppHandle<R>) -> tauri::State<'_, AppState> {
    app.state::<AppState>()
}
