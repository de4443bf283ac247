//! The commands of runs and the window: starting, deciding, messaging, retrying and stopping
//! runs (each streams its chunks over the per-run channel it is given), the inbox and runs as
//! listed, a run's detail and tool calls, and the window's own (what is on screen, links, a
//! folder picker). Each converts its IPC arguments and calls the engine or `plandesk::view`;
//! no business logic lives here. Settings are in `settings.rs`, revisions in `revisions.rs`.

use std::path::{Path, PathBuf};

use plandesk::engine::RunView;
use plandesk::model::select;
use plandesk::view::{self, InboxItem, RunDetailView, ToolCallFull};
use plandesk::{Engine, RunStatus, StartOptions};
use tauri::ipc::Channel;
use tauri::{AppHandle, Runtime, State};
use tauri_plugin_dialog::DialogExt;
use tauri_plugin_opener::OpenerExt;

use crate::ipc::{DecideRequest, IpcError, RunEvent, StartRequest};
use crate::AppState;

type Result<T> = std::result::Result<T, IpcError>;

/// The model a run started without one uses: the saved choice, else the first provider this
/// computer is set up for. Not part of `app_info`: finding it asks the keyring and a local
/// Ollama (tens of milliseconds), which the window's first view does not wait for.
#[tauri::command]
pub async fn default_model(state: State<'_, AppState>) -> Result<select::DefaultModel> {
    chosen_model(&state.engine).await
}

async fn chosen_model(engine: &Engine) -> Result<select::DefaultModel> {
    let saved = engine.setting(select::MODEL_SETTING).await?;
    Ok(select::default_model(saved).await)
}

/// Checks what can be checked before a run exists: the prompt, the folder, the model and its key.
fn start_options(engine_cwd: &Path, request: &StartRequest, model: String) -> Result<StartOptions> {
    if request.prompt.trim().is_empty() {
        return Err(IpcError::invalid("Say what the agent should do first."));
    }
    let workspace = PathBuf::from(request.workspace.trim());
    if !workspace.is_absolute() || !workspace.is_dir() {
        return Err(IpcError::new(
            "workspace",
            format!(
                "The workspace {} is not a folder on this computer.",
                workspace.display()
            ),
        ));
    }
    plandesk::model::from_spec(&model, engine_cwd)?;
    Ok(StartOptions::new(workspace, model))
}

/// Starts a run (checked first: the prompt, the folder, the model) and answers with its id,
/// while it goes on streaming into `on_event`.
#[tauri::command]
pub async fn start_run(
    state: State<'_, AppState>,
    request: StartRequest,
    on_event: Channel<RunEvent>,
) -> Result<String> {
    let model = match request.model.as_deref().map(str::trim) {
        Some(model) if !model.is_empty() => model.to_owned(),
        _ => chosen_model(&state.engine).await?.spec,
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    let options = start_options(&cwd, &request, model)?;
    let engine = state.engine.clone();
    let run_id = engine.new_run_id();
    let id = run_id.clone();
    let prompt = request.prompt.trim().to_owned();
    state.drive(run_id.clone(), Some(on_event), move |mut sink| async move {
        Some(engine.start_as(id, &prompt, &options, &mut sink).await)
    })?;
    Ok(run_id)
}

/// Records the decision (durably, refused if the plan changed since it was shown) and answers
/// once it is recorded, while the run carries on in the background, streaming into `on_event`.
#[tauri::command]
pub async fn decide(
    state: State<'_, AppState>,
    request: DecideRequest,
    on_event: Channel<RunEvent>,
) -> Result<()> {
    let verdict = request.verdict();
    let engine = state.engine.clone();
    let run_id = request.run_id.clone();
    let (answer, recorded) = tokio::sync::oneshot::channel::<Result<()>>();
    state.drive(request.run_id, Some(on_event), move |mut sink| async move {
        let mut answer = Some(answer);
        let outcome = engine
            .decide_and_tell(
                &run_id,
                &verdict,
                &mut || {
                    if let Some(answer) = answer.take() {
                        let _ = answer.send(Ok(()));
                    }
                },
                &mut sink,
            )
            .await;
        match (answer, outcome) {
            // Refused before anything was recorded: the command says why; the stream, nothing.
            (Some(answer), Err(err)) => {
                let _ = answer.send(Err(err.into()));
                None
            }
            (_, outcome) => Some(outcome),
        }
    })?;
    recorded.await.unwrap_or_else(|_| {
        Err(IpcError::new(
            "not-recorded",
            "The decision was not recorded: the run was stopped before it could be.",
        ))
    })
}

/// Sends the person's message to a run that is not waiting for a decision; it goes on
/// streaming into `on_event`.
#[tauri::command]
pub async fn send_message(
    state: State<'_, AppState>,
    run_id: String,
    text: String,
    on_event: Channel<RunEvent>,
) -> Result<()> {
    if text.trim().is_empty() {
        return Err(IpcError::invalid("The message is empty."));
    }
    // Refuse at once what the engine would refuse (a run still waiting for a decision).
    let run = state.engine.run(&run_id).await?;
    if run.status == RunStatus::Suspended {
        return Err(IpcError::new(
            "decision-pending",
            "This run waits for a decision on its plan: approve or reject it first.",
        ));
    }
    let engine = state.engine.clone();
    let id = run_id.clone();
    state.drive(run_id, Some(on_event), move |mut sink| async move {
        Some(engine.send(&id, text.trim(), &mut sink).await)
    })
}

/// Calls the model again for a run that failed (or was interrupted or cancelled).
#[tauri::command]
pub async fn retry_run(
    state: State<'_, AppState>,
    run_id: String,
    on_event: Channel<RunEvent>,
) -> Result<()> {
    state.engine.run(&run_id).await?;
    let engine = state.engine.clone();
    let id = run_id.clone();
    state.drive(run_id, Some(on_event), move |mut sink| async move {
        Some(engine.continue_run(&id, &mut sink).await)
    })
}

/// Stops the run this window drives; `false` if it drives none by that id.
#[tauri::command]
pub async fn cancel_run(state: State<'_, AppState>, run_id: String) -> Result<bool> {
    Ok(state.cancel(&run_id))
}

/// Every plan and approval waiting for a person, as the inbox lists them.
#[tauri::command]
pub async fn inbox(state: State<'_, AppState>) -> Result<Vec<InboxItem>> {
    Ok(view::inbox(state.engine.review()).await?)
}

/// Every run, most recently active first.
#[tauri::command]
pub async fn runs(state: State<'_, AppState>) -> Result<Vec<RunView>> {
    Ok(state.engine.runs().await?)
}

/// A run as its view shows it: transcript (long values as previews) and what waits in it.
#[tauri::command]
pub async fn run_detail(state: State<'_, AppState>, run_id: String) -> Result<RunDetailView> {
    Ok(view::run_detail(&state.engine, &run_id).await?)
}

/// A tool call of a run's transcript in full: its arguments and its result (`run_detail`
/// sends long ones as previews).
#[tauri::command]
pub async fn tool_call(
    state: State<'_, AppState>,
    run_id: String,
    tool_call_id: String,
) -> Result<ToolCallFull> {
    Ok(view::tool_call(&state.engine, &run_id, &tool_call_id).await?)
}

/// Which run the person is looking at: no notification is shown for its plans while the
/// window has focus. Not async: it runs on the main thread as each call arrives, where an async
/// command is spawned and two could finish in either order; the window says it only when the
/// run changes, so a stale value would stay.
#[tauri::command]
pub fn set_viewing(state: State<'_, AppState>, run_id: Option<String>) -> Result<()> {
    *state.viewing.lock().unwrap_or_else(|p| p.into_inner()) = run_id;
    Ok(())
}

/// Opens a link from a plan in the system browser (never in the app window).
#[tauri::command]
pub async fn open_link<R: Runtime>(app: AppHandle<R>, url: String) -> Result<()> {
    let allowed = ["https://", "http://", "mailto:"]
        .iter()
        .any(|p| url.to_ascii_lowercase().starts_with(p));
    if !allowed {
        return Err(IpcError::invalid(format!(
            "Only web and mail links open from a plan, not {url}"
        )));
    }
    app.opener()
        .open_url(&url, None::<&str>)
        .map_err(|e| IpcError::new("open-link", format!("Could not open {url}: {e}")))
}

/// Asks the person for a workspace folder; `None` if they cancelled.
#[tauri::command]
pub async fn pick_workspace<R: Runtime>(app: AppHandle<R>) -> Result<Option<String>> {
    Ok(app
        .dialog()
        .file()
        .set_title("Choose the workspace folder")
        .blocking_pick_folder()
        .and_then(|p| p.into_path().ok())
        .map(|p| p.display().to_string()))
}
