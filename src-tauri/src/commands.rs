//! The commands the webview invokes. Each converts its IPC arguments into engine calls; no
//! business logic lives here. Runs stream their chunks over the per-run channel they are given.

use std::path::{Path, PathBuf};

use plandesk::engine::RunView;
use plandesk::message::Message;
use plandesk::model::select;
use plandesk::review::Page;
use plandesk::{Engine, Report, RunStatus, StartOptions, Verdict};
use tauri::ipc::Channel;
use tauri::{AppHandle, Runtime, State};
use tauri_plugin_dialog::DialogExt;
use tauri_plugin_opener::OpenerExt;

use crate::ipc::{
    preview, AppInfo, Comparison, DecideRequest, HistoryFilter, HistoryPage, InboxItem, IpcError,
    ReviewHandOff, RevisionSource, RevisionSummary, RevisionView, RunDetail, RunEnd, RunEvent,
    Settings, StartRequest, ToolCallFull, TranscriptItem, FIRST_BYTES, FIRST_SCREEN_BYTES,
};
use crate::AppState;

type Result<T> = std::result::Result<T, IpcError>;

const NOTIFICATIONS: &str = "notifications";
const NOTIFICATION_TITLES: &str = "notification_titles";
const START_AT_LOGIN: &str = crate::autostart::SETTING;

/// The settings as stored (`on`/`off`), defaults where unset.
pub async fn load_settings(engine: &Engine) -> Result<Settings> {
    let defaults = Settings::default();
    let on = |value: Option<String>, default: bool| value.map_or(default, |v| v == "on");
    Ok(Settings {
        notifications: on(engine.setting(NOTIFICATIONS).await?, defaults.notifications),
        notification_titles: on(
            engine.setting(NOTIFICATION_TITLES).await?,
            defaults.notification_titles,
        ),
        reviewer_name: engine
            .setting(plandesk::review::REVIEWER_SETTING)
            .await?
            .unwrap_or_default(),
        team_store: String::new(),
        start_at_login: on(
            engine.setting(START_AT_LOGIN).await?,
            defaults.start_at_login,
        ),
    })
}

#[tauri::command]
pub async fn app_info(state: State<'_, AppState>) -> Result<AppInfo> {
    let engine = &state.engine;
    let workspace = match &state.workspace {
        Some(dir) => dir.display().to_string(),
        None => engine
            .latest_run()
            .await?
            .map(|r| r.workspace)
            .or_else(|| std::env::var("HOME").ok())
            .unwrap_or_default(),
    };
    let open = state
        .open_first
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    let (open_run, open_tool_call_id, open_error) = match open {
        None => (None, None, None),
        Some(key) => match plandesk::desktop::plan_target(engine, &key).await {
            Ok(target) => (Some(target.run_id), target.tool_call_id, None),
            Err(err) => (None, None, Some(err.into())),
        },
    };
    Ok(AppInfo {
        data_dir: state.data_dir.display().to_string(),
        store: state.store.describe(),
        settings: Settings {
            team_store: plandesk::store::saved_team_store(&state.data_dir).unwrap_or_default(),
            ..load_settings(engine).await?
        },
        workspace,
        version: env!("CARGO_PKG_VERSION"),
        open_run,
        open_tool_call_id,
        open_error,
    })
}

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
    let verdict = Verdict {
        approve: request.approve,
        feedback: request.feedback.clone(),
        note: request.note.clone(),
        tool_call_id: Some(request.tool_call_id.clone()),
        revision: request.revision.clone(),
    };
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

#[tauri::command]
pub async fn cancel_run(state: State<'_, AppState>, run_id: String) -> Result<bool> {
    Ok(state.cancel(&run_id))
}

pub async fn inbox_items(engine: &Engine) -> Result<Vec<InboxItem>> {
    Ok(engine
        .review()
        .inbox()
        .await?
        .iter()
        .map(InboxItem::listed)
        .collect())
}

#[tauri::command]
pub async fn inbox(state: State<'_, AppState>) -> Result<Vec<InboxItem>> {
    inbox_items(&state.engine).await
}

#[tauri::command]
pub async fn runs(state: State<'_, AppState>) -> Result<Vec<RunView>> {
    Ok(state.engine.runs().await?)
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
                items.extend(tool_calls.iter().map(|c| {
                    let (args, full_bytes) = preview(&c.args);
                    TranscriptItem::ToolCall {
                        tool_call_id: c.tool_call_id.clone(),
                        tool_name: c.tool_name.clone(),
                        args,
                        full_bytes,
                    }
                }));
            }
            Message::Tool {
                tool_call_id,
                tool_name,
                result,
            } => {
                let (result, full_bytes) = preview(result);
                items.push(TranscriptItem::ToolResult {
                    tool_call_id: tool_call_id.clone(),
                    tool_name: tool_name.clone(),
                    result,
                    full_bytes,
                });
            }
        }
    }
    items
}

#[tauri::command]
pub async fn run_detail(state: State<'_, AppState>, run_id: String) -> Result<RunDetail> {
    detail_view(&state.engine, &run_id).await
}

/// The run `run_id` as its view shows it.
async fn detail_view(engine: &Engine, run_id: &str) -> Result<RunDetail> {
    let detail = engine.run_detail(run_id).await?;
    Ok(RunDetail {
        transcript: transcript(&detail.messages),
        pending: detail.open.iter().map(InboxItem::from).collect(),
        run: detail.run,
        error: detail.error,
        waiting: detail.waiting,
        interrupted: detail.interrupted,
    })
}

/// Whether the end of `run_id`'s stream hands its review over, with `viewing` on screen: unless
/// the window shows another run (the person moved on; it would not draw this one's review). A
/// window that has just switched to the run may not have said so yet: it gets the hand-off.
pub fn hands_review_over(viewing: Option<&str>, run_id: &str) -> bool {
    viewing.is_none_or(|on_screen| on_screen == run_id)
}

/// How a run's stream ended, as its channel says it. A run that stopped on a plan hands its
/// review over with it (its run and the plan's first screen) when `hand_over`: the window,
/// which draws it at once, would otherwise ask for both, one more round trip between the
/// suspension and the plan on screen. If they cannot be read, the window asks itself, and
/// shows why. (Not when the window shows another run: it would read them for nothing.)
pub async fn run_end(engine: &Engine, report: Report, hand_over: bool) -> RunEnd {
    let mut end = RunEnd::from(report);
    if let Some(id) = end.revision_id.filter(|_| hand_over) {
        if let (Ok(detail), Ok(revision)) = tokio::join!(
            detail_view(engine, &end.run_id),
            revision_view(engine, id, FIRST_SCREEN_BYTES),
        ) {
            end.review = Some(Box::new(ReviewHandOff { detail, revision }));
        }
    }
    end
}

/// A tool call of a run's transcript in full: its arguments and its result (`run_detail`
/// sends long ones as previews).
#[tauri::command]
pub async fn tool_call(
    state: State<'_, AppState>,
    run_id: String,
    tool_call_id: String,
) -> Result<ToolCallFull> {
    let detail = state.engine.run_detail(&run_id).await?;
    let mut args = None;
    let mut result = None;
    for message in &detail.messages {
        match message {
            Message::Assistant { tool_calls, .. } => {
                if let Some(call) = tool_calls.iter().find(|c| c.tool_call_id == tool_call_id) {
                    args = Some(call.args.clone());
                }
            }
            Message::Tool {
                tool_call_id: id,
                result: output,
                ..
            } if *id == tool_call_id => result = Some(output.clone()),
            _ => {}
        }
    }
    let args = args.ok_or_else(|| {
        IpcError::new(
            "unknown-tool-call",
            format!("run {run_id} has no tool call {tool_call_id:?}"),
        )
    })?;
    Ok(ToolCallFull { args, result })
}

#[tauri::command]
pub async fn revision(state: State<'_, AppState>, id: i64) -> Result<RevisionView> {
    revision_view(&state.engine, id, FIRST_BYTES).await
}

/// The revision `id` to review, with its first pages (enough for `first_bytes`).
async fn revision_view(engine: &Engine, id: i64, first_bytes: usize) -> Result<RevisionView> {
    let review = engine.review();
    let (revision, _, rendered) = review.rendering(id).await?;
    let in_thread = review.thread(&revision).await?.len();
    Ok(RevisionView::of(
        &revision,
        &rendered,
        in_thread as i64,
        first_bytes,
    ))
}

/// A revision's plan pages from `from` on (`revision` sends the first ones).
#[tauri::command]
pub async fn revision_pages(
    state: State<'_, AppState>,
    id: i64,
    from: usize,
) -> Result<Vec<String>> {
    let (_, _, rendered) = state.engine.review().rendering(id).await?;
    Ok(rendered
        .pages()
        .into_iter()
        .skip(from)
        .map(str::to_owned)
        .collect())
}

/// A revision's exact text, for the source view and the editor (not sent with `revision`: a
/// long plan's second and third copies would slow every plan's way to the screen).
#[tauri::command]
pub async fn revision_source(state: State<'_, AppState>, id: i64) -> Result<RevisionSource> {
    let (_, markdown, rendered) = state.engine.review().rendering(id).await?;
    Ok(RevisionSource {
        markdown,
        source_html: rendered.source_html.clone(),
    })
}

/// Every revision of the plan `id` belongs to, oldest first.
#[tauri::command]
pub async fn plan_thread(state: State<'_, AppState>, id: i64) -> Result<Vec<RevisionSummary>> {
    let review = state.engine.review();
    let revision = review.revision_by_id(id).await?;
    Ok(review
        .thread(&revision)
        .await?
        .iter()
        .map(RevisionSummary::from)
        .collect())
}

#[tauri::command]
pub async fn compare(state: State<'_, AppState>, left: i64, right: i64) -> Result<Comparison> {
    let review = state.engine.review();
    let compared = review.compare(left, right).await?;
    let comments = review.comments(&compared.right).await?;
    let mut comparison = Comparison::from(compared);
    comparison.comments = comments;
    Ok(comparison)
}

/// The most revisions one page of the history may hold.
const MAX_HISTORY_PAGE: usize = 1000;

/// A page of the history: at most `limit` revisions (100 if not given) older than `before`
/// (from the newest if not given), newest first. One query: the window asks for the next page
/// as its list scrolls to the end.
#[tauri::command]
pub async fn history(
    state: State<'_, AppState>,
    filter: Option<HistoryFilter>,
    before: Option<i64>,
    limit: Option<usize>,
) -> Result<HistoryPage> {
    let filter = filter.unwrap_or_default().try_into()?;
    let limit = limit.unwrap_or(100);
    if !(1..=MAX_HISTORY_PAGE).contains(&limit) {
        return Err(IpcError::invalid(format!(
            "A page of the history holds 1 to {MAX_HISTORY_PAGE} revisions, not {limit}."
        )));
    }
    // One more than the page: whether there are more.
    let page = Page {
        before,
        limit: limit + 1,
    };
    let mut revisions = state.engine.review().listing(&filter, Some(page)).await?;
    let more = revisions.len() > limit;
    revisions.truncate(limit);
    Ok(HistoryPage {
        revisions: revisions.iter().map(RevisionSummary::from).collect(),
        more,
    })
}

#[tauri::command]
pub async fn save_settings<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    settings: Settings,
) -> Result<Settings> {
    let engine = &state.engine;
    // The team store first: a URL that cannot be used leaves everything as it was.
    let team = settings.team_store.trim();
    let saved = plandesk::store::saved_team_store(&state.data_dir).unwrap_or_default();
    let switching = team != saved;
    if switching {
        check_team_store(&state, team).await?;
    }
    let flag = |on: bool| if on { "on" } else { "off" };
    engine
        .set_setting(NOTIFICATIONS, Some(flag(settings.notifications)))
        .await?;
    engine
        .set_setting(
            NOTIFICATION_TITLES,
            Some(flag(settings.notification_titles)),
        )
        .await?;
    let name = settings.reviewer_name.trim();
    if name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(IpcError::invalid(
            "Your name may have at most 100 characters, and no control characters.",
        ));
    }
    engine
        .set_setting(
            plandesk::review::REVIEWER_SETTING,
            (!name.is_empty()).then_some(name),
        )
        .await?;
    if let Some(entry) = &state.autostart {
        let written = if settings.start_at_login {
            entry.write()
        } else {
            entry.remove()
        };
        written.map_err(|e| IpcError::new("autostart", e.to_string()))?;
    }
    engine
        .set_setting(START_AT_LOGIN, Some(flag(settings.start_at_login)))
        .await?;
    state.keep_in_tray.store(
        settings.start_at_login,
        std::sync::atomic::Ordering::Relaxed,
    );
    if switching {
        plandesk::store::save_team_store(&state.data_dir, (!team.is_empty()).then_some(team))
            .map_err(|e| IpcError::new("team-store", e.to_string()))?;
        // The app opens its store once: it starts again on the new one (after this answer
        // reaches the window, which says so).
        tauri::async_runtime::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(800)).await;
            app.restart();
        });
    }
    Ok(Settings {
        team_store: team.to_owned(),
        ..load_settings(engine).await?
    })
}

/// Refuses a team store that cannot be used: chosen at launch already, not a PostgreSQL URL
/// without a password, or not reachable now.
async fn check_team_store(state: &AppState, url: &str) -> Result<()> {
    let refused = |message: String| IpcError::new("team-store", message);
    if state.store_given {
        return Err(refused(
            "This window was started on a store named with --store or PLANDESK_STORE, which wins \
             over Settings; start it without them to choose here."
                .into(),
        ));
    }
    if url.is_empty() {
        return Ok(());
    }
    plandesk::store::reach_team_store(url)
        .await
        .map_err(|e| refused(e.to_string()))
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
