//! The inbox watcher: notices every change to the store (this app's runs and any other
//! process's, such as the `plandesk` CLI), tells the webview, keeps the window title and tray
//! count, and sends a desktop notification when a plan becomes pending.

use std::collections::{HashMap, HashSet};

use futures::StreamExt;
use plandesk::review::{ItemKind, SourceKind};
use plandesk::text;
use plandesk::view::{self, InboxItem, Settings};
use plandesk::Engine;
use serde::Serialize;
use tauri::menu::{Menu, MenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::WINDOW;

const TRAY: &str = "tray";
/// How often the inbox is read even when nothing changed (to close abandoned plans).
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// The event the webview gets with the whole inbox whenever it changes.
pub const INBOX_EVENT: &str = "inbox-changed";
/// The event that opens a plan (a notification was clicked, a second launch named one).
pub const OPEN_EVENT: &str = "open-plan";
/// The event that shows the inbox (the tray's "Open Plandesk").
pub const INBOX_OPEN_EVENT: &str = "open-inbox";

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OpenPlan {
    pub run_id: String,
    /// The plan's call, when known: its inbox entry is highlighted.
    pub tool_call_id: Option<String>,
}

type Key = (String, String, Option<String>);

fn key(item: &InboxItem) -> Key {
    (
        item.run_id.clone(),
        item.tool_call_id.clone(),
        item.sha256.clone(),
    )
}

/// Follows the store's changes (from this app or any other process) for as long as the app runs.
pub fn watch<R: Runtime>(app: AppHandle<R>, engine: Engine) {
    tauri::async_runtime::spawn(watch_finished(app.clone(), engine.clone()));
    tauri::async_runtime::spawn(async move {
        let mut changes = engine.changes();
        let mut seen: Option<HashSet<Key>> = None;
        // Also now and then with no change: an outside agent that stopped waiting changes
        // nothing in the store until the inbox closes its plan as abandoned.
        let mut sweep = tokio::time::interval(SWEEP_EVERY);
        loop {
            tokio::select! {
                change = changes.next() => if change.is_none() { return },
                _ = sweep.tick() => {}
            }
            refresh(&app, &engine, &mut seen).await;
        }
    });
}

/// Tells of each run whose agent says it finished, from now on: a loop of its own, since
/// reading a run's progress may ask git (a moment on a large repository) and the inbox must
/// not wait for it.
async fn watch_finished<R: Runtime>(app: AppHandle<R>, engine: Engine) {
    let mut changes = engine.changes();
    // Those before are old news.
    let mut after = match view::newest_finished(&engine).await {
        Ok(after) => after,
        Err(err) => {
            eprintln!("plandesk-app: cannot read the runs that finished: {err}");
            return;
        }
    };
    // What each run's last notice said: a turn that ends with nothing new tells nothing.
    let mut told: HashMap<String, String> = HashMap::new();
    while changes.next().await.is_some() {
        tell_finished(&app, &engine, &mut after, &mut told).await;
    }
}

/// A notification for each run whose agent said it finished since `after` (moved past them):
/// "Done: 5 of 6 steps, 2 files outside the plan".
async fn tell_finished<R: Runtime>(
    app: &AppHandle<R>,
    engine: &Engine,
    after: &mut i64,
    told: &mut HashMap<String, String>,
) {
    let finished = match view::finished_after(engine, *after).await {
        Ok(finished) => finished,
        Err(err) => {
            eprintln!("plandesk-app: cannot read the runs that finished: {err}");
            return;
        }
    };
    let Some(newest) = finished.iter().map(|f| f.id).max() else {
        return;
    };
    *after = newest;
    let settings = Settings::load(engine).await.unwrap_or_default();
    if !settings.notifications {
        return;
    }
    for done in finished {
        let summary = done.summary();
        if told.get(&done.progress.run_id) == Some(&summary) {
            continue;
        }
        told.insert(done.progress.run_id.clone(), summary.clone());
        if watching(app, &done.progress.run_id) {
            continue;
        }
        let title = &done.progress.title;
        let body = if settings.notification_titles && !title.is_empty() {
            text::short(title, 120)
        } else {
            "Open Plandesk to see what changed.".to_owned()
        };
        let open = OpenPlan {
            run_id: done.progress.run_id.clone(),
            tool_call_id: None,
        };
        show(app, summary, body, "Open", open);
    }
}

async fn refresh<R: Runtime>(app: &AppHandle<R>, engine: &Engine, seen: &mut Option<HashSet<Key>>) {
    let items = match view::inbox(engine.review()).await {
        Ok(items) => items,
        Err(err) => {
            eprintln!("plandesk-app: cannot read the inbox: {err}");
            return;
        }
    };
    // Plans already waiting when the app starts are in the inbox; only new ones notify.
    if let Some(before) = seen.as_ref() {
        for item in items.iter().filter(|i| !before.contains(&key(i))) {
            if item.kind == ItemKind::Plan {
                maybe_notify(app, engine, item).await;
            }
        }
    }
    *seen = Some(items.iter().map(key).collect());
    show_count(app, items.len());
    let _ = app.emit(INBOX_EVENT, &items);
}

fn show_count<R: Runtime>(app: &AppHandle<R>, count: usize) {
    let title = match count {
        0 => "Plandesk".to_owned(),
        n => format!("Plandesk — {n} waiting"),
    };
    if let Some(window) = app.get_webview_window(WINDOW) {
        let _ = window.set_title(&title);
    }
    if let Some(tray) = app.tray_by_id(TRAY) {
        let label = (count > 0).then(|| count.to_string());
        let _ = tray.set_title(label.as_deref());
        let _ = tray.set_tooltip(Some(&title));
    }
}

async fn maybe_notify<R: Runtime>(app: &AppHandle<R>, engine: &Engine, item: &InboxItem) {
    let settings = Settings::load(engine).await.unwrap_or_default();
    if !settings.notifications {
        return;
    }
    if watching(app, &item.run_id) {
        return;
    }
    let title = item.title.clone().unwrap_or_default();
    // An outside agent's plan names the agent: the person may run several.
    let from = match item.source.kind {
        SourceKind::Engine => String::new(),
        kind => format!(" from {}", kind.agent_name()),
    };
    let summary = if settings.notification_titles && !title.is_empty() {
        format!(
            "Plan \"{}\"{from} requires approval",
            text::short(&title, 80)
        )
    } else {
        format!("A plan{from} requires approval")
    };
    let body = if settings.notification_titles {
        text::short(&item.prompt, 120)
    } else {
        "Open Plandesk to review it.".to_owned()
    };
    let open = OpenPlan {
        run_id: item.run_id.clone(),
        tool_call_id: Some(item.tool_call_id.clone()),
    };
    show(app, summary, body, "Review", open);
}

/// Whether the person is looking at run `run_id` in the focused window (no need to tell them).
fn watching<R: Runtime>(app: &AppHandle<R>, run_id: &str) -> bool {
    let state = crate::state(app);
    let viewing = state
        .viewing
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let focused = app
        .get_webview_window(WINDOW)
        .and_then(|w| w.is_focused().ok())
        .unwrap_or(false);
    focused && viewing.as_deref() == Some(run_id)
}

/// A desktop notification whose click (`action`) opens `open` in the window.
fn show<R: Runtime>(
    app: &AppHandle<R>,
    summary: String,
    body: String,
    action: &'static str,
    open: OpenPlan,
) {
    let app = app.clone();
    // Showing blocks on D-Bus, and waiting for the click blocks until the bubble closes.
    let _ = std::thread::Builder::new()
        .name("notification".into())
        .spawn(move || {
            let shown = notify_rust::Notification::new()
                .appname("Plandesk")
                .summary(&summary)
                .body(&body)
                .action("default", action)
                .show();
            match shown {
                Ok(handle) => handle.wait_for_action(|clicked| {
                    if clicked == "default" {
                        bring_forward(&app, Some(&open));
                    }
                }),
                Err(err) => eprintln!("plandesk-app: the notification was not shown: {err}"),
            }
        });
}

/// Shows, raises and focuses the window; with a plan, opens it there.
pub(crate) fn bring_forward<R: Runtime>(app: &AppHandle<R>, open: Option<&OpenPlan>) {
    crate::window_settled();
    if let Some(window) = app.get_webview_window(WINDOW) {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
    if let Some(open) = open {
        let _ = app.emit(OPEN_EVENT, open);
    }
}

/// The tray icon: the waiting count as its label and tooltip, a menu to open the window on the
/// inbox or quit. Desktops without a tray host simply show none (the launcher then brings the
/// window back: a second launch hands over to this one).
pub fn install_tray<R: Runtime>(app: &AppHandle<R>) {
    let built = (|| -> tauri::Result<()> {
        let open = MenuItem::with_id(app, "open", "Open Plandesk", true, None::<&str>)?;
        let quit = MenuItem::with_id(app, "quit", "Quit Plandesk", true, None::<&str>)?;
        let menu = Menu::with_items(app, &[&open, &quit])?;
        let mut tray = TrayIconBuilder::with_id(TRAY)
            .tooltip("Plandesk")
            .menu(&menu)
            .on_menu_event(|app, event| match event.id.as_ref() {
                "open" => {
                    bring_forward(app, None);
                    let _ = app.emit(INBOX_OPEN_EVENT, ());
                }
                "quit" => app.exit(0),
                _ => {}
            });
        if let Some(icon) = app.default_window_icon() {
            tray = tray.icon(icon.clone());
        }
        tray.build(app)?;
        Ok(())
    })();
    if let Err(err) = built {
        eprintln!("plandesk-app: no tray icon: {err}");
    }
}
