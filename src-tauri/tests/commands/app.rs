//! The app itself: refused input, its info and settings, and the workspace it opens on.

use super::*;

#[test]
fn bad_input_is_refused_with_codes() {
    let fx = fixture();
    let ws = fx.workspace.display().to_string();
    let empty = fx.refused(
        "start_run",
        json!({"request": {"workspace": ws, "prompt": "  ", "model": null}, "onEvent": channel()}),
    );
    assert_eq!(empty["code"], "invalid-input");
    let missing = fx.refused(
        "start_run",
        json!({"request": {"workspace": "/no/such/folder", "prompt": "x"}, "onEvent": channel()}),
    );
    assert_eq!(missing["code"], "workspace");
    let status = fx.refused("history", json!({"filter": {"status": "maybe\u{1b}[2J"}}));
    assert_eq!(status["code"], "invalid-input");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("no revision status"),
        "{status}"
    );
    for limit in [0, 1001] {
        let page = fx.refused("history", json!({"filter": {}, "limit": limit}));
        assert_eq!(page["code"], "invalid-input", "{limit}: {page}");
    }
    assert!(missing["message"]
        .as_str()
        .unwrap()
        .contains("/no/such/folder"));
    let model = fx.refused(
        "start_run",
        json!({"request": {"workspace": ws, "prompt": "x", "model": "gpt-4"}, "onEvent": channel()}),
    );
    assert_eq!(model["code"], "model-unknown");
    let link = fx.refused("open_link", json!({"url": "javascript:alert(1)"}));
    assert_eq!(link["code"], "invalid-input");
    let run = fx.refused("run_detail", json!({"runId": "nope"}));
    assert_eq!(run["code"], "unknown-run");
    let busy = fx.refused(
        "send_message",
        json!({"runId": fx.ok("inbox", json!({}))[0]["runId"], "text": "hi", "onEvent": channel()}),
    );
    assert_eq!(busy["code"], "decision-pending");
}

#[test]
fn settings_round_trip_and_app_info() {
    let fx = fixture();
    let info = fx.ok("app_info", json!({}));
    assert_eq!(
        info["settings"],
        json!({"notifications": true, "notificationTitles": true, "startAtLogin": false,
               "reviewerName": "", "teamStore": ""}),
        "start at login is off on a store other than the user's own"
    );
    assert_eq!(info["workspace"], fx.workspace.display().to_string());
    assert_eq!(info["dataDir"], fx.data.display().to_string());
    assert_eq!(
        info["store"],
        fx.data.join("plandesk.db").display().to_string()
    );
    // A team store that cannot be used is refused, and nothing is saved (nor restarted).
    for (url, says) in [
        ("postgres://ana:hunter2@127.0.0.1:9/team", "~/.pgpass"),
        ("mysql://ana@db/team", "PostgreSQL URL"),
        (
            "postgres://ana@127.0.0.1:9/team",
            "cannot open the store postgres://ana@127.0.0.1:9/team",
        ),
    ] {
        let refused = fx.refused(
            "save_settings",
            json!({"settings": {"notifications": true, "notificationTitles": false,
                                "startAtLogin": false, "teamStore": url}}),
        );
        assert_eq!(refused["code"], "team-store", "{refused}");
        let message = refused["message"].as_str().unwrap();
        assert!(message.contains(says), "{url}: {message}");
        assert!(!message.contains("hunter2"), "{message}");
        assert!(!fx.data.join(plandesk::config::STORE_FILE).exists());
    }
    let saved = fx.ok(
        "save_settings",
        json!({"settings": {"notifications": true, "notificationTitles": false, "startAtLogin": false}}),
    );
    assert_eq!(saved["notificationTitles"], false);
    assert_eq!(
        fx.ok("app_info", json!({}))["settings"]["notificationTitles"],
        false,
        "stored"
    );
}

#[test]
fn without_a_workspace_the_window_opens_on_the_latest_runs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let options = Options {
        data_dir: Some(data.clone()),
        ..Options::default()
    };
    let (app, webview) = support::app(&options);
    assert_eq!(
        support::ok(&webview, "app_info", json!({}))["workspace"],
        std::env::var("HOME").unwrap(),
        "no run yet: the home folder"
    );
    drop((app, webview));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let engine = Engine::open(&data).unwrap();
    for name in ["older", "newer"] {
        let workspace = dir.path().join(name);
        std::fs::create_dir_all(&workspace).unwrap();
        runtime
            .block_on(engine.start(
                "Add a --verbose flag",
                &StartOptions::new(workspace, "demo"),
                &mut |_| {},
            ))
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    drop(engine);
    let (_app, webview) = support::app(&options);
    assert_eq!(
        support::ok(&webview, "app_info", json!({}))["workspace"],
        dir.path().join("newer").display().to_string()
    );
}
