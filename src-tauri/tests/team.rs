#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is the failure report
//! Two reviewers' apps, each on a data folder of its own, pointed at one PostgreSQL database
//! (a real server, started by the test harness): a plan submitted through one app reaches the
//! other's inbox through LISTEN/NOTIFY, within a second, and a decision made in either closes it
//! in both.

#[path = "../../tests/engine/pg.rs"]
#[allow(dead_code)] // shared with the engine suite, which uses all of it
mod pg;
mod support;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use plandesk_app::{AppState, Options};
use serde_json::{json, Value};
use tauri::test::MockRuntime;
use tauri::{Listener, Manager, WebviewWindow};

struct App {
    app: tauri::App<MockRuntime>,
    webview: WebviewWindow<MockRuntime>,
}

impl App {
    fn on(store: &str, data: std::path::PathBuf, reviewer: &str) -> Self {
        let (app, webview) = support::app(&Options {
            data_dir: Some(data),
            store: Some(store.to_owned()),
            ..Options::default()
        });
        let app = Self { app, webview };
        app.ok(
            "save_settings",
            json!({"settings": {"notifications": false, "notificationTitles": true,
                                "startAtLogin": false, "reviewerName": reviewer, "teamStore": ""}}),
        );
        app
    }

    fn ok(&self, cmd: &str, body: Value) -> Value {
        support::ok(&self.webview, cmd, body)
    }

    /// The inbox as the window is told of it, each time it changes.
    fn inbox_events(&self) -> mpsc::Receiver<(Instant, Value)> {
        let (tx, rx) = mpsc::channel();
        self.app
            .listen_any(plandesk_app::inbox::INBOX_EVENT, move |event| {
                let inbox: Value = serde_json::from_str(event.payload()).unwrap();
                let _ = tx.send((Instant::now(), inbox));
            });
        let engine = self.app.state::<AppState>().engine.clone();
        plandesk_app::inbox::watch(self.app.handle().clone(), engine);
        rx
    }
}

fn has_run(inbox: &Value, run_id: &str) -> bool {
    inbox
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["runId"] == run_id)
}

/// The first inbox from `events` that satisfies `check`, and when it came.
fn wait_for(
    events: &mpsc::Receiver<(Instant, Value)>,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Instant {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let (at, inbox) = events
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
        if check(&inbox) {
            return at;
        }
    }
}

#[test]
fn a_plan_submitted_through_one_app_shows_in_the_other_within_a_second() {
    let store = pg::database();
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(workspace.join("src")).unwrap();
    std::fs::write(workspace.join("src/main.rs"), "fn main() {}\n").unwrap();
    let ana = App::on(&store, dir.path().join("ana"), "Ana");
    let ben = App::on(&store, dir.path().join("ben"), "Ben");
    let ben_sees = ben.inbox_events();
    let ana_sees = ana.inbox_events();
    wait_for(&ben_sees, "Ben's first inbox", |_| true);

    let run_id = ana.ok(
        "start_run",
        json!({"request": {"workspace": workspace.display().to_string(),
                           "prompt": "Fix the login bug", "model": "demo"},
               "onEvent": "__CHANNEL__:7"}),
    );
    let run_id = run_id.as_str().unwrap().to_owned();
    // When the plan was stored: Ana's own window hears of it through the same channel.
    let stored = wait_for(&ana_sees, "the plan in Ana's inbox", |i| {
        has_run(i, &run_id)
    });
    let seen = wait_for(&ben_sees, "the plan in Ben's inbox", |i| {
        has_run(i, &run_id)
    });
    let lag = seen.saturating_duration_since(stored);
    eprintln!("Ben saw Ana's plan {} ms after Ana did", lag.as_millis());
    assert!(lag < Duration::from_secs(1), "took {lag:?}");

    // Ben decides; Ana's inbox empties, and the decision says who made it.
    let item = ben.ok("inbox", json!({}))[0].clone();
    ben.ok(
        "decide",
        json!({"request": {"runId": run_id, "toolCallId": item["toolCallId"], "approve": false,
                           "feedback": "Log the failed attempts too", "revision": item["sha256"]},
               "onEvent": "__CHANNEL__:8"}),
    );
    wait_for(&ana_sees, "the decision in Ana's inbox", |i| {
        !has_run(i, &run_id)
    });
    let trail = ana.ok("audit", json!({"runId": run_id}));
    let decided = trail["entries"]
        .as_array()
        .or(trail.as_array())
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "decided")
        .cloned()
        .unwrap_or_else(|| panic!("no decision in {trail}"));
    assert_eq!(decided["actor"], "Ben", "{decided}");
}
