#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is the failure report
//! The app's commands through Tauri's IPC, on the mock runtime (no window), over a real store
//! prepared by the engine.

#[path = "../support/mod.rs"]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use plandesk::{Engine, StartOptions};
use plandesk_app::Options;
use serde_json::{json, Value};
use tauri::test::MockRuntime;
use tauri::WebviewWindow;

mod app;
mod history;
mod review;
mod runs;

struct Fixture {
    _dir: tempfile::TempDir,
    data: std::path::PathBuf,
    workspace: std::path::PathBuf,
    _app: tauri::App<MockRuntime>,
    webview: WebviewWindow<MockRuntime>,
}

/// A store with one demo run waiting on its plan, and the app over it.
fn fixture() -> Fixture {
    fixture_with(|_| "demo".into())
}

/// As [`fixture`], the run on the model `model(workspace)` names.
fn fixture_with(model: impl FnOnce(&Path) -> String) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(workspace.join("src")).unwrap();
    std::fs::write(workspace.join("src/main.rs"), "fn main() {}\n").unwrap();
    let model = model(&workspace);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let engine = Engine::open(&data).unwrap();
    let report = runtime
        .block_on(engine.start(
            "Add a --verbose flag",
            &StartOptions::new(workspace.clone(), &model),
            &mut |_| {},
        ))
        .unwrap();
    assert_eq!(report.status, plandesk::RunStatus::Suspended);
    drop(engine);
    let (app, webview) = support::app(&Options {
        data_dir: Some(data.clone()),
        workspace: Some(workspace.clone()),
        ..Options::default()
    });
    Fixture {
        _dir: dir,
        data,
        workspace,
        _app: app,
        webview,
    }
}

impl Fixture {
    fn invoke(&self, cmd: &str, body: Value) -> Result<Value, Value> {
        support::invoke(&self.webview, cmd, body)
    }

    fn ok(&self, cmd: &str, body: Value) -> Value {
        support::ok(&self.webview, cmd, body)
    }

    fn refused(&self, cmd: &str, body: Value) -> Value {
        match self.invoke(cmd, body) {
            Ok(v) => panic!("{cmd} should have been refused, got {v}"),
            Err(e) => e,
        }
    }

    /// Polls the inbox until `check` holds (the continuation runs on the async runtime).
    fn wait_inbox(&self, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let inbox = self.ok("inbox", json!({}));
            if check(&inbox) {
                return inbox;
            }
            assert!(
                Instant::now() < until,
                "timed out waiting for {what}: {inbox}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn channel() -> Value {
    json!("__CHANNEL__:7")
}
