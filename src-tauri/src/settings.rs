//! Settings and what the window learns first: the app's facts (data folder, store, version,
//! the folder to offer, a plan to open), and saving Settings, the team store included (a new
//! one is checked first, then the app starts again on it).

use plandesk::source::serve::nearby::Serving;
use plandesk::source::serve::web::pair;
use plandesk::view::Settings;
use plandesk::webhook;
use tauri::{AppHandle, Runtime, State};

use crate::ipc::{AppInfo, IpcError};
use crate::AppState;

type Result<T> = std::result::Result<T, IpcError>;

/// What the window learns first: where the data and the store are, the settings, the folder
/// to offer, and the plan to open first (once).
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
            team_store: plandesk::config::saved_team_store(&state.data_dir).unwrap_or_default(),
            ..Settings::load(engine).await?
        },
        workspace,
        version: env!("CARGO_PKG_VERSION"),
        open_run,
        open_tool_call_id,
        open_error,
    })
}

/// Saves Settings: a new team store is checked first (one that cannot be used changes
/// nothing), then the preferences, the login entry and its flag; on a new team store the app
/// starts again on it. Answers with the settings as saved.
#[tauri::command]
pub async fn save_settings<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    settings: Settings,
) -> Result<Settings> {
    let engine = &state.engine;
    // The team store first: a URL that cannot be used leaves everything as it was.
    let team = settings.team_store.trim();
    let saved = plandesk::config::saved_team_store(&state.data_dir).unwrap_or_default();
    let switching = team != saved;
    if switching {
        check_team_store(&state, team).await?;
    }
    settings.save_preferences(engine).await?;
    if let Some(entry) = &state.autostart {
        let written = if settings.start_at_login {
            entry.write()
        } else {
            entry.remove()
        };
        written.map_err(|e| IpcError::new("autostart", e.to_string()))?;
    }
    Settings::save_start_at_login(engine, settings.start_at_login).await?;
    state.keep_in_tray.store(
        settings.start_at_login,
        std::sync::atomic::Ordering::Relaxed,
    );
    if switching {
        plandesk::config::save_team_store(&state.data_dir, (!team.is_empty()).then_some(team))
            .map_err(|e| IpcError::new("team-store", e.to_string()))?;
        // The app opens its store once: it starts again on the new one (after this answer
        // reaches the window, which says so).
        tauri::async_runtime::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(800)).await;
            // What waits on the phones' server is answered before the process is replaced.
            let state = crate::state(&app);
            let _ = tokio::time::timeout(crate::QUIT_WAIT, state.phone.shut_down()).await;
            app.restart();
        });
    }
    Ok(Settings {
        team_store: team.to_owned(),
        ..Settings::load(engine).await?
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
    plandesk::config::reach_team_store(url)
        .await
        .map_err(|e| refused(e.to_string()))
}

/// A one-time sign-in link for a phone (Settings → Review from your phone), with its QR code
/// as SVG: `plandesk pair`'s.
#[tauri::command]
pub async fn sign_in_link(state: State<'_, AppState>) -> Result<PhoneLink> {
    // To the app's own server on its network while it serves; else `plandesk serve`'s.
    let base = state.phone.url().await;
    let link = pair::sign_in_link(&state.engine, None, base.as_deref()).await?;
    Ok(PhoneLink {
        qr_svg: pair::qr_svg(&link.url).unwrap_or_default(),
        link,
    })
}

#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PhoneLink {
    #[serde(flatten)]
    link: pair::SignInLink,
    qr_svg: String,
}

/// Whether the app serves the review to its network, and where a phone reaches it.
#[tauri::command]
pub async fn phone_serving(state: State<'_, AppState>) -> Result<Serving> {
    Ok(state.phone.serving(&state.engine).await)
}

/// Serves the review to this computer's network at `port` (as typed; remembered for the next
/// launch), or stops serving it.
#[tauri::command]
pub async fn serve_phone(state: State<'_, AppState>, on: bool, port: String) -> Result<Serving> {
    if on {
        state
            .phone
            .turn_on(&state.engine, &state.data_dir, &port)
            .await
    } else {
        state.phone.turn_off(&state.engine).await
    }
}

/// The webhooks, with how each one's last delivery went.
#[tauri::command]
pub async fn webhooks(state: State<'_, AppState>) -> Result<Vec<webhook::Listed>> {
    Ok(webhook::list(&state.engine).await?)
}

#[tauri::command]
pub async fn add_webhook(
    state: State<'_, AppState>,
    webhook: webhook::Webhook,
) -> Result<Vec<webhook::Listed>> {
    webhook::add(&state.engine, webhook).await?;
    Ok(webhook::list(&state.engine).await?)
}

#[tauri::command]
pub async fn remove_webhook(
    state: State<'_, AppState>,
    url: String,
) -> Result<Vec<webhook::Listed>> {
    webhook::remove(&state.engine, &url).await?;
    Ok(webhook::list(&state.engine).await?)
}
