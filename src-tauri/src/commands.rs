//! The commands the webview invokes. Each converts its IPC arguments into engine calls; no
//! business logic lives here. Runs stream their chunks over the per-run channel they are given.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use plandesk::message::Message;
use plandesk::model::select;
use plandesk::run::{Phase, RunState};
use plandesk::store::{PlanRevision, Store};
use plandesk::{StartOptions, Verdict};
use tauri::ipc::Channel;
use tauri::{AppHandle, Runtime, State};
use tauri_plugin_dialog::DialogExt;
use tauri_plugin_opener::OpenerExt;

use crate::ipc::{
    AppInfo, Comparison, DecideRequest, FeedbackStep, HistoryFilter, InboxItem, IpcError,
    RevisionSummary, RevisionView, RunDetail, RunEvent, Settings, StartRequest, TranscriptItem,
};
use crate::AppState;

type Result<T> = std::result::Result<T, IpcError>;

const NOTIFICATIONS: &str = "notifications";
const NOTIFICATION_TITLES: &str = "notification_titles";

/// The settings as stored (`on`/`off`), defaults where unset.
pub fn load_settings(store: &Store) -> Result<Settings> {
    let on = |key: &str, default: bool| -> Result<bool> {
        Ok(store.setting(key)?.map_or(default, |v| v == "on"))
    };
    let defaults = Settings::default();
    Ok(Settings {
        notifications: on(NOTIFICATIONS, defaults.notifications)?,
        notification_titles: on(NOTIFICATION_TITLES, defaults.notification_titles)?,
    })
}

fn now() -> i64 {
    use plandesk::clock::Clock;
    plandesk::clock::SystemClock.now()
}

#[tauri::command]
pub async fn app_info(state: State<'_, AppState>) -> Result<AppInfo> {
    let store = state.engine.store();
    let saved = store.setting(select::MODEL_SETTING)?;
    let chosen = select::default_model(saved).await;
    let workspace = match &state.workspace {
        Some(dir) => dir.display().to_string(),
        None => store
            .runs()?
            .into_iter()
            .next()
            .map(|r| r.workspace)
            .or_else(|| std::env::var("HOME").ok())
            .unwrap_or_default(),
    };
    Ok(AppInfo {
        data_dir: state.data_dir.display().to_string(),
        default_model: chosen.spec,
        default_model_reason: chosen.reason,
        settings: load_settings(store)?,
        workspace,
        version: env!("CARGO_PKG_VERSION"),
    })
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

#[tauri::command]
pub async fn start_run(
    state: State<'_, AppState>,
    request: StartRequest,
    on_event: Channel<RunEvent>,
) -> Result<String> {
    let model = match request.model.as_deref().map(str::trim) {
        Some(model) if !model.is_empty() => model.to_owned(),
        _ => {
            let saved = state.engine.store().setting(select::MODEL_SETTING)?;
            select::default_model(saved).await.spec
        }
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    let options = start_options(&cwd, &request, model)?;
    let engine = state.engine.clone();
    let run_id = engine.new_run_id();
    let id = run_id.clone();
    let prompt = request.prompt.trim().to_owned();
    state.drive(run_id.clone(), Some(on_event), move |mut sink| async move {
        engine.start_as(id, &prompt, &options, &mut sink).await
    });
    Ok(run_id)
}

/// Records the decision (durably, refused if the plan changed since it was shown), then lets
/// the run carry on in the background, streaming into `on_event`.
#[tauri::command]
pub async fn decide(
    state: State<'_, AppState>,
    request: DecideRequest,
    on_event: Channel<RunEvent>,
) -> Result<()> {
    let verdict = Verdict {
        approve: request.approve,
        feedback: request.feedback.clone(),
        tool_call_id: Some(request.tool_call_id.clone()),
        revision: request.revision.clone(),
    };
    let engine = state.engine.clone();
    let run_id = request.run_id.clone();
    tauri::async_runtime::spawn_blocking(move || engine.record_verdict(&run_id, &verdict))
        .await
        .map_err(|e| IpcError::new("internal", format!("the decision task failed: {e}")))??;
    let engine = state.engine.clone();
    let run_id = request.run_id.clone();
    state.drive(request.run_id, Some(on_event), move |mut sink| async move {
        engine.continue_run(&run_id, &mut sink).await
    });
    Ok(())
}

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
    let summary = state.engine.store().run(&run_id)?;
    if summary.status == "suspended" {
        return Err(IpcError::new(
            "decision-pending",
            "This run waits for a decision on its plan: approve or reject it first.",
        ));
    }
    let engine = state.engine.clone();
    let id = run_id.clone();
    state.drive(run_id, Some(on_event), move |mut sink| async move {
        engine.send(&id, text.trim(), &mut sink).await
    });
    Ok(())
}

/// Calls the model again for a run that failed (or was interrupted or cancelled).
#[tauri::command]
pub async fn retry_run(
    state: State<'_, AppState>,
    run_id: String,
    on_event: Channel<RunEvent>,
) -> Result<()> {
    state.engine.store().run(&run_id)?;
    let engine = state.engine.clone();
    let id = run_id.clone();
    state.drive(run_id, Some(on_event), move |mut sink| async move {
        engine.continue_run(&id, &mut sink).await
    });
    Ok(())
}

#[tauri::command]
pub async fn cancel_run(state: State<'_, AppState>, run_id: String) -> Result<bool> {
    Ok(state.cancel(&run_id))
}

pub fn inbox_items(store: &Store) -> Result<Vec<InboxItem>> {
    Ok(store.pending(None)?.iter().map(InboxItem::from).collect())
}

#[tauri::command]
pub async fn inbox(state: State<'_, AppState>) -> Result<Vec<InboxItem>> {
    inbox_items(state.engine.store())
}

#[tauri::command]
pub async fn runs(state: State<'_, AppState>) -> Result<Vec<plandesk::store::RunSummary>> {
    Ok(state.engine.store().runs()?)
}

fn transcript(messages: &[Message]) -> Vec<TranscriptItem> {
    let mut items = Vec::new();
    for message in messages {
        match message {
            Message::System { .. } => {}
            Message::User { content } => items.push(TranscriptItem::User {
                text: content.clone(),
            }),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if !content.is_empty() {
                    items.push(TranscriptItem::Assistant {
                        text: content.clone(),
                    });
                }
                items.extend(tool_calls.iter().map(|c| TranscriptItem::ToolCall {
                    tool_call_id: c.tool_call_id.clone(),
                    tool_name: c.tool_name.clone(),
                    args: c.args.clone(),
                }));
            }
            Message::Tool {
                tool_call_id,
                tool_name,
                result,
            } => items.push(TranscriptItem::ToolResult {
                tool_call_id: tool_call_id.clone(),
                tool_name: tool_name.clone(),
                result: result.clone(),
            }),
        }
    }
    items
}

#[tauri::command]
pub async fn run_detail(state: State<'_, AppState>, run_id: String) -> Result<RunDetail> {
    let store = state.engine.store();
    let run = store.run(&run_id)?;
    let loaded: RunState = store.load(&run_id)?;
    let (error, waiting) = match &loaded.phase {
        Phase::Failed { error } => (Some(error.clone()), None),
        Phase::Waiting { reason } => (
            None,
            serde_json::to_value(reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned)),
        ),
        _ => (None, None),
    };
    Ok(RunDetail {
        run,
        transcript: transcript(&loaded.messages),
        pending: store
            .pending(Some(&run_id))?
            .iter()
            .map(InboxItem::from)
            .collect(),
        error,
        waiting,
    })
}

/// Revision ids with a pending plan.
fn pending_revisions(store: &Store) -> Result<HashSet<i64>> {
    Ok(store
        .pending(None)?
        .iter()
        .filter_map(|p| p.revision.as_ref().map(|r| r.id))
        .collect())
}

fn summary(
    store: &Store,
    revision: &PlanRevision,
    pending: &HashSet<i64>,
) -> Result<RevisionSummary> {
    let prompt = store.run(&revision.run_id)?.prompt;
    Ok(RevisionSummary::new(
        revision,
        pending.contains(&revision.id),
        &prompt,
    ))
}

/// The revisions of one plan: same run, same file.
fn thread(store: &Store, revision: &PlanRevision) -> Result<Vec<PlanRevision>> {
    Ok(store
        .revisions(Some(&revision.run_id))?
        .into_iter()
        .filter(|r| r.path == revision.path)
        .collect())
}

#[tauri::command]
pub async fn revision(state: State<'_, AppState>, id: i64) -> Result<RevisionView> {
    let store = state.engine.store();
    let revision = store.revision(id)?;
    let pending = pending_revisions(store)?;
    Ok(RevisionView {
        summary: summary(store, &revision, &pending)?,
        html: plandesk::plan::render_html(&revision.body),
        markdown: revision.markdown(),
        revisions_in_thread: thread(store, &revision)?.len() as i64,
    })
}

/// Every revision of the plan `id` belongs to, oldest first.
#[tauri::command]
pub async fn plan_thread(state: State<'_, AppState>, id: i64) -> Result<Vec<RevisionSummary>> {
    let store = state.engine.store();
    let pending = pending_revisions(store)?;
    thread(store, &store.revision(id)?)?
        .iter()
        .map(|r| summary(store, r, &pending))
        .collect()
}

#[tauri::command]
pub async fn compare(state: State<'_, AppState>, left: i64, right: i64) -> Result<Comparison> {
    let store = state.engine.store();
    let (mut a, mut b) = (store.revision(left)?, store.revision(right)?);
    if a.run_id != b.run_id || a.path != b.path {
        return Err(IpcError::invalid(
            "Only revisions of the same plan can be compared.",
        ));
    }
    if a.revision_no > b.revision_no {
        std::mem::swap(&mut a, &mut b);
    }
    let between = thread(store, &a)?
        .into_iter()
        .filter(|r| r.revision_no >= a.revision_no && r.revision_no < b.revision_no)
        .filter_map(|r| {
            r.decision.map(|d| FeedbackStep {
                revision_no: r.revision_no,
                action: d.action,
                feedback: d.feedback,
            })
        })
        .collect();
    let pending = pending_revisions(store)?;
    Ok(Comparison {
        left: summary(store, &a, &pending)?,
        right: summary(store, &b, &pending)?,
        diff: plandesk::plan::side_by_side(&a.markdown(), &b.markdown()),
        between,
    })
}

#[tauri::command]
pub async fn history(
    state: State<'_, AppState>,
    filter: Option<HistoryFilter>,
) -> Result<Vec<RevisionSummary>> {
    let filter = filter.unwrap_or_default();
    let store = state.engine.store();
    let pending = pending_revisions(store)?;
    let query = filter
        .query
        .as_deref()
        .map(|q| q.trim().to_lowercase())
        .filter(|q| !q.is_empty());
    let mut out = Vec::new();
    for revision in store.revisions(None)?.iter().rev() {
        if let Some(q) = &query {
            let hit = revision.title.to_lowercase().contains(q)
                || revision.body.to_lowercase().contains(q);
            if !hit {
                continue;
            }
        }
        let row = summary(store, revision, &pending)?;
        let keep = match filter.status.as_deref() {
            Some(s @ ("pending" | "approved" | "rejected" | "superseded")) => row.status == s,
            _ => true,
        };
        if keep {
            out.push(row);
        }
    }
    Ok(out)
}

#[tauri::command]
pub async fn save_settings(state: State<'_, AppState>, settings: Settings) -> Result<Settings> {
    let store = state.engine.store();
    let flag = |on: bool| if on { "on" } else { "off" };
    store.set_setting(NOTIFICATIONS, Some(flag(settings.notifications)), now())?;
    store.set_setting(
        NOTIFICATION_TITLES,
        Some(flag(settings.notification_titles)),
        now(),
    )?;
    load_settings(store)
}

/// Which run the person is looking at: no notification is shown for its plans while the
/// window has focus.
#[tauri::command]
pub async fn set_viewing(state: State<'_, AppState>, run_id: Option<String>) -> Result<()> {
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
