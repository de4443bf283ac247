#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is the failure report
//! The app's commands through Tauri's IPC, on the mock runtime (no window), over a real store
//! prepared by the engine.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use plandesk::{Engine, StartOptions};
use plandesk_app::Options;
use serde_json::{json, Value};
use tauri::test::MockRuntime;
use tauri::WebviewWindow;

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

#[test]
fn inbox_revision_and_a_stale_decision() {
    let fx = fixture();
    let inbox = fx.ok("inbox", json!({}));
    assert_eq!(inbox.as_array().unwrap().len(), 1);
    let item = &inbox[0];
    assert_eq!(item["kind"], "plan");
    assert_eq!(item["title"], "Add a --verbose flag");
    assert_eq!(item["revisionNo"], 1);
    let revision = fx.ok("revision", json!({"id": item["revisionId"]}));
    assert_eq!(revision["status"], "pending");
    assert_eq!(revision["revisionsInThread"], 1);
    let pages: Vec<&str> = revision["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        pages.concat().contains("<h2 data-sourcepos="),
        "rendered, each block with its lines: {pages:?}"
    );
    assert_eq!(
        revision["pageBytes"],
        json!(pages.iter().map(|p| p.len()).collect::<Vec<_>>()),
        "a short plan comes whole"
    );
    assert_eq!(
        fx.ok(
            "revision_pages",
            json!({"id": item["revisionId"], "from": 0})
        ),
        json!(pages),
        "the pages, from the first"
    );
    assert!(
        revision.get("markdown").is_none() && revision.get("sourceHtml").is_none(),
        "the text comes on its own, when asked for"
    );
    let source = fx.ok("revision_source", json!({"id": item["revisionId"]}));
    assert!(source["markdown"]
        .as_str()
        .unwrap()
        .starts_with("# Add a --verbose flag"));
    assert!(source["sourceHtml"]
        .as_str()
        .unwrap()
        .starts_with("<pre class=\"plan-source\"><code># Add a --verbose flag"));

    let stale = fx.refused(
        "decide",
        json!({"request": {"runId": item["runId"], "toolCallId": item["toolCallId"], "approve": true,
                           "revision": "0000000000"}, "onEvent": channel()}),
    );
    assert_eq!(stale["code"], "stale-revision", "{stale}");
    assert!(
        stale["message"].as_str().unwrap().contains("changed"),
        "{stale}"
    );
    assert_eq!(
        fx.ok("inbox", json!({})),
        inbox,
        "a refused decision changes nothing"
    );
}

/// A run read for the window carries long tool arguments and results as previews; opened, a
/// tool call comes whole.
#[test]
fn long_tool_arguments_and_results_come_as_previews_then_whole() {
    let content = "Move a table, then check the counts.\n".repeat(5_000);
    let notes = "A line of notes to read.\n".repeat(4_000);
    let fx = fixture_with(|workspace| {
        std::fs::write(workspace.join("notes.txt"), &notes).unwrap();
        let script = workspace.join("script.json");
        let turns = json!({"turns": [{"toolCalls": [
            {"toolCallId": "read", "toolName": "read_file", "args": {"path": "notes.txt"}},
            {"toolCallId": "write", "toolName": "write_file",
             "args": {"path": ".plandesk/plans/big.md", "content": format!("# Big\n\n{content}")}},
        ]}, {"toolCalls": [
            {"toolCallId": "plan", "toolName": "submit_plan", "args": {"path": ".plandesk/plans/big.md"}},
        ]}]});
        std::fs::write(&script, turns.to_string()).unwrap();
        format!("scripted:{}", script.display())
    });
    let inbox = fx.ok("inbox", json!({}));
    let run_id = inbox[0]["runId"].clone();
    let detail = fx.ok("run_detail", json!({"runId": run_id}));
    assert!(
        detail.to_string().len() < 16 * 1024,
        "{} bytes: the long values went whole",
        detail.to_string().len()
    );
    let items = detail["transcript"].as_array().unwrap();
    let find = |kind: &str, id: &str| {
        items
            .iter()
            .find(|i| i["kind"] == kind && i["toolCallId"] == id)
            .unwrap_or_else(|| panic!("no {kind} {id} in {items:?}"))
            .clone()
    };
    let write = find("tool-call", "write");
    assert_eq!(write["args"]["path"], ".plandesk/plans/big.md");
    let shown = write["args"]["content"].as_str().unwrap();
    assert!(
        shown.len() < 1024 && content.starts_with(&shown["# Big\n\n".len()..]),
        "the start of the plan: {shown:?}"
    );
    let whole = fx.ok("tool_call", json!({"runId": run_id, "toolCallId": "write"}));
    assert_eq!(
        write["fullBytes"],
        json!(whole["args"].to_string().len()),
        "the preview says how long the whole is"
    );
    assert_eq!(
        whole["args"]["content"],
        json!(format!("# Big\n\n{content}"))
    );
    assert!(whole["result"].is_object(), "written: {}", whole["result"]);

    let read = find("tool-result", "read");
    assert!(read["fullBytes"].as_u64().unwrap() > notes.len() as u64);
    assert!(read["result"]["content"].as_str().unwrap().len() < 1024);
    let whole = fx.ok("tool_call", json!({"runId": run_id, "toolCallId": "read"}));
    assert!(
        whole["result"]["content"]
            .as_str()
            .unwrap()
            .contains(&notes[..2000]),
        "the file as it was read: {}",
        &whole["result"].to_string()[..200]
    );
    assert_eq!(
        find("tool-call", "plan")["fullBytes"],
        Value::Null,
        "short: as it is"
    );
    assert_eq!(
        find("tool-call", "plan")["args"],
        json!({"path": ".plandesk/plans/big.md"})
    );

    let unknown = fx.refused("tool_call", json!({"runId": run_id, "toolCallId": "nope"}));
    assert_eq!(unknown["code"], "unknown-tool-call", "{unknown}");
    assert!(
        unknown["message"].as_str().unwrap().contains("nope"),
        "{unknown}"
    );
}

/// The inbox lists a pending approval with its long arguments as a preview (they went to the
/// window whole with every change to the inbox); the run's detail, which the review is drawn
/// from, has them whole.
#[test]
fn the_inbox_lists_long_approval_arguments_as_a_preview_and_the_review_has_them_whole() {
    let content = "fn step() {}\n".repeat(10_000);
    let fx = fixture_with(|workspace| {
        let script = workspace.join("script.json");
        let turns = json!({"turns": [{"toolCalls": [
            {"toolCallId": "draft", "toolName": "write_file",
             "args": {"path": ".plandesk/plans/steps.md", "content": "# Steps\n\nWrite the steps.\n"}},
            {"toolCallId": "plan", "toolName": "submit_plan", "args": {"path": ".plandesk/plans/steps.md"}},
        ]}, {"toolCalls": [
            {"toolCallId": "big", "toolName": "write_file", "args": {"path": "src/steps.rs", "content": content}},
        ]}]});
        std::fs::write(&script, turns.to_string()).unwrap();
        format!("scripted:{}", script.display())
    });
    let plan = fx.ok("inbox", json!({}))[0].clone();
    fx.ok(
        "decide",
        json!({"request": {"runId": plan["runId"], "toolCallId": plan["toolCallId"], "approve": true,
                           "revision": plan["sha256"]}, "onEvent": channel()}),
    );
    let inbox = fx.wait_inbox("the write to approve", |items| {
        items[0]["kind"] == "approval"
    });
    let listed = &inbox[0];
    assert_eq!(
        listed["args"]["path"], "src/steps.rs",
        "the preview names the file"
    );
    assert!(listed["args"]["content"].as_str().unwrap().len() < 1024);
    assert!(
        inbox.to_string().len() < 8 * 1024,
        "{} bytes: the arguments went whole",
        inbox.to_string().len()
    );
    let detail = fx.ok("run_detail", json!({"runId": listed["runId"]}));
    let pending = &detail["pending"][0];
    assert_eq!(pending["toolCallId"], "big");
    assert_eq!(
        pending["args"]["content"],
        json!(content),
        "the review shows all of it"
    );
    assert_eq!(pending["argsFullBytes"], Value::Null);
    assert_eq!(
        listed["argsFullBytes"],
        json!(pending["args"].to_string().len()),
        "the preview says how long the whole is"
    );
}

/// The window is told a decision is taken only once it is recorded: read at once, the plan is
/// decided (the run goes on meanwhile, streaming into the channel).
#[test]
fn a_decision_is_recorded_when_it_is_answered() {
    let fx = fixture();
    let item = fx.ok("inbox", json!({}))[0].clone();
    fx.ok(
        "decide",
        json!({"request": {"runId": item["runId"], "toolCallId": item["toolCallId"], "approve": true,
                           "revision": item["sha256"]}, "onEvent": channel()}),
    );
    let thread = fx.ok("plan_thread", json!({"id": item["revisionId"]}));
    assert_eq!(thread[0]["status"], "approved", "{thread}");
    let again = fx.refused(
        "decide",
        json!({"request": {"runId": item["runId"], "toolCallId": item["toolCallId"], "approve": false,
                           "revision": item["sha256"]}, "onEvent": channel()}),
    );
    // Decided, and going on in this window (or already finished, on the demo model): the
    // command itself refuses.
    assert!(
        ["busy", "already-decided", "not-suspended"].contains(&again["code"].as_str().unwrap()),
        "{again}"
    );
}

/// A decision that meets the run still held by the driver that made its plan pending (it lets
/// go right after: a reviewer that quick, here or on a team store, once got "busy") waits for
/// it; a run held for longer is refused as busy, and nothing is recorded.
#[test]
fn a_decision_waits_a_moment_for_the_driver_to_let_go_of_the_run() {
    use plandesk::store::{Lease, SqliteStore, Store};
    let fx = fixture();
    let item = fx.ok("inbox", json!({}))[0].clone();
    let run_id = item["runId"].as_str().unwrap().to_owned();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = SqliteStore::open(&fx.data).unwrap();
    let holder = plandesk::lease::new_holder();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let hold = |until| {
        let lease = Lease {
            holder: &holder,
            until,
            now,
        };
        let claimed = runtime.block_on(store.claim(&run_id, &lease)).unwrap();
        assert_eq!(claimed, plandesk::store::ClaimOutcome::Claimed);
    };
    let decide = |approve: bool| {
        fx.invoke(
            "decide",
            json!({"request": {"runId": run_id, "toolCallId": item["toolCallId"], "approve": approve,
                               "feedback": "Shorter", "revision": item["sha256"]}, "onEvent": channel()}),
        )
    };

    // Held for longer than a decision waits: refused, nothing recorded.
    hold(now + 60_000);
    let refused = decide(false).unwrap_err();
    assert_eq!(refused["code"], "busy", "{refused}");
    assert_eq!(fx.ok("inbox", json!({}))[0]["sha256"], item["sha256"]);

    // Let go 300 ms after the decision is sent: it waits, and is recorded.
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            runtime.block_on(store.release(&run_id, &holder)).unwrap();
        });
        decide(true).unwrap();
    });
    let thread = fx.ok("plan_thread", json!({"id": item["revisionId"]}));
    assert_eq!(thread[0]["status"], "approved", "{thread}");
}

/// A decision, a message or a retry for a run this window is carrying on right now (its model
/// is answering) is refused at once: its task must not take the place of the running one (Stop
/// would then stop the wrong task).
#[test]
fn a_run_going_on_in_the_window_takes_no_second_task() {
    let fx = fixture();
    // A model server that takes the request and never answers.
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let held: Vec<_> = server.incoming().take(4).collect();
        std::thread::sleep(Duration::from_secs(30));
        drop(held);
    });
    let run_id = fx.ok(
        "start_run",
        json!({"request": {"workspace": fx.workspace.display().to_string(), "prompt": "Wait",
                           "model": format!("ollama:m@http://127.0.0.1:{port}/v1/")},
               "onEvent": channel()}),
    );
    let started = Instant::now();
    let refused = fx.refused(
        "decide",
        json!({"request": {"runId": run_id, "toolCallId": "call-1", "approve": true},
               "onEvent": channel()}),
    );
    assert_eq!(refused["code"], "busy", "{refused}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "refused at once, not after waiting: {:?}",
        started.elapsed()
    );
    // So are a message and a retry (each would have started a second task for the run), once
    // the run is stored (both read it first).
    let until = Instant::now() + Duration::from_secs(20);
    while !fx
        .ok("runs", json!({}))
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["id"] == run_id)
    {
        assert!(Instant::now() < until, "the run was never stored");
        std::thread::sleep(Duration::from_millis(20));
    }
    for (cmd, body) in [
        (
            "send_message",
            json!({"runId": run_id, "text": "More", "onEvent": channel()}),
        ),
        ("retry_run", json!({"runId": run_id, "onEvent": channel()})),
    ] {
        assert_eq!(fx.refused(cmd, body)["code"], "busy", "{cmd}");
    }
    assert_eq!(
        fx.ok("cancel_run", json!({"runId": run_id})),
        json!(true),
        "the run's own task is still the one Stop stops"
    );
}

#[test]
fn reject_with_feedback_then_compare_and_search_history() {
    let fx = fixture();
    let item = fx.ok("inbox", json!({}))[0].clone();
    fx.ok(
        "decide",
        json!({"request": {"runId": item["runId"], "toolCallId": item["toolCallId"], "approve": false,
                           "feedback": "Also log to a file", "revision": item["sha256"]}, "onEvent": channel()}),
    );
    let inbox = fx.wait_inbox("revision 2", |i| i[0]["revisionNo"] == 2);
    let second = &inbox[0];
    let comparison = fx.ok(
        "compare",
        json!({"left": second["revisionId"], "right": item["revisionId"]}),
    );
    assert_eq!(comparison["left"]["revisionNo"], 1, "ordered oldest first");
    assert_eq!(
        comparison["between"],
        json!([{"revisionNo": 1, "action": "rejected", "feedback": "Also log to a file"}])
    );
    assert!(comparison["diff"]["added"].as_u64().unwrap() > 0);
    let thread = fx.ok("plan_thread", json!({"id": second["revisionId"]}));
    let statuses: Vec<&str> = thread
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["rejected", "pending"]);
    for id in [&item["revisionId"], &second["revisionId"]] {
        let revision = fx.ok("revision", json!({"id": id}));
        assert_eq!(revision["revisionsInThread"], 2, "{id}: its thread so far");
    }
    let rejected = fx.ok("history", json!({"filter": {"status": "rejected"}}));
    assert_eq!(rejected["revisions"].as_array().unwrap().len(), 1);
    assert_eq!(rejected["revisions"][0]["feedback"], "Also log to a file");
    assert_eq!(rejected["more"], false);
    let found = fx.ok("history", json!({"filter": {"query": "LOG TO A FILE"}}));
    assert_eq!(
        found["revisions"].as_array().unwrap().len(),
        1,
        "search is case-insensitive over plan text: only revision 2 mentions it"
    );
    let none = fx.ok("history", json!({"filter": {"query": "no such words"}}));
    assert_eq!(none, json!({"revisions": [], "more": false}));
    // A page at a time, newest first, each after the last one's end.
    let first = fx.ok("history", json!({"filter": {"status": "all"}, "limit": 1}));
    assert_eq!(first["revisions"][0]["id"], second["revisionId"]);
    assert_eq!(first["more"], true);
    let next = fx.ok(
        "history",
        json!({"filter": {}, "before": second["revisionId"], "limit": 1}),
    );
    assert_eq!(next["revisions"][0]["id"], item["revisionId"]);
    assert_eq!(next["more"], false);
}

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

#[test]
fn a_run_started_through_ipc_reaches_its_plan() {
    let fx = fixture();
    let run_id = fx.ok(
        "start_run",
        json!({"request": {"workspace": fx.workspace.display().to_string(), "prompt": "Fix the login bug",
                           "model": "demo"}, "onEvent": channel()}),
    );
    let run_id = run_id.as_str().unwrap().to_owned();
    fx.wait_inbox("the new run's plan", |i| {
        i.as_array()
            .unwrap()
            .iter()
            .any(|p| p["runId"] == run_id.as_str())
    });
    let detail = fx.ok("run_detail", json!({"runId": run_id}));
    assert_eq!(detail["run"]["status"], "suspended");
    assert_eq!(
        detail["transcript"][0],
        json!({"kind": "user", "text": "Fix the login bug"})
    );
    let _ = Path::new(&fx.data);
}

/// Issue 9: the CLI and the app once disagreed about an undecided old revision. Both now read
/// statuses from the review core: every revision shows the same status in the CLI's history
/// (`Review::revisions`, what `plandesk history` prints) and in the app's history, thread and
/// revision views.
#[test]
fn the_cli_and_the_app_show_the_same_status_for_every_revision() {
    let fx = fixture();
    let item = fx.ok("inbox", json!({}))[0].clone();
    fx.ok(
        "decide",
        json!({"request": {"runId": item["runId"], "toolCallId": item["toolCallId"], "approve": false,
                           "feedback": "Also log to a file"}, "onEvent": channel()}),
    );
    let inbox = fx.wait_inbox("revision 2", |i| i[0]["revisionNo"] == 2);
    // Resume data that fits no schema: recorded as invalid, the revision superseded.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let engine = Engine::open(&fx.data).unwrap();
    let run_id = inbox[0]["runId"].as_str().unwrap().to_owned();
    let _ = runtime.block_on(engine.resume(&run_id, None, json!({"action": "maybe"}), &mut |_| {}));
    let cli: Vec<(i64, String)> = runtime
        .block_on(engine.review().revisions(None))
        .unwrap()
        .into_iter()
        .map(|r| (r.id, r.status.as_str().to_owned()))
        .collect();
    let statuses: Vec<&str> = cli.iter().map(|(_, s)| s.as_str()).collect();
    assert!(
        statuses.contains(&"rejected") && statuses.contains(&"superseded"),
        "{statuses:?}"
    );
    let history = fx.ok("history", json!({}))["revisions"].clone();
    for (id, status) in &cli {
        // Filtered by its status (in the store's query), the history lists it, and only the
        // revisions of that status.
        let of_status = fx.ok("history", json!({"filter": {"status": status}}));
        let ids: Vec<i64> = of_status["revisions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_i64().unwrap())
            .collect();
        let expected: Vec<i64> = cli
            .iter()
            .rev()
            .filter(|(_, s)| s == status)
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(ids, expected, "history of status {status}");
        let in_history = history
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == *id)
            .unwrap();
        assert_eq!(in_history["status"], *status, "history, revision {id}");
        assert_eq!(
            fx.ok("revision", json!({"id": id}))["status"],
            *status,
            "revision {id}"
        );
        let thread = fx.ok("plan_thread", json!({"id": id}));
        let mine = thread
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == *id)
            .unwrap();
        assert_eq!(mine["status"], *status, "plan thread, revision {id}");
    }
}

/// A run that stops on a plan hands its review over with the end of its stream: the run as
/// `run_detail` reads it, and the revision as `revision` gives it but with only the pages a
/// review fills first, small enough to cross with the message. A run that ends otherwise hands
/// nothing over.
#[test]
fn a_run_that_stops_on_a_plan_hands_its_review_over_with_its_end() {
    let mut plan = String::from("# Migrate the store\n\n");
    for step in 0..400 {
        plan.push_str(&format!(
            "## Step {step}\n\nMove table `t{step}`; keep **reads** working.\n\n| table | rows |\n|---|---|\n| t{step} | {step} |\n\n"
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let (data, workspace) = (dir.path().join("data"), dir.path().join("ws"));
    std::fs::create_dir_all(&workspace).unwrap();
    let script = dir.path().join("script.json");
    let turns = json!({"turns": [
        {"toolCalls": [
            {"toolName": "write_file", "args": {"path": ".plandesk/plans/big.md", "content": plan}},
            {"toolName": "submit_plan", "args": {"path": ".plandesk/plans/big.md"}},
        ]},
        {"text": "Approved; starting."},
    ]});
    std::fs::write(&script, turns.to_string()).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let engine = Engine::open(&data).unwrap();
    let options = StartOptions::new(workspace.clone(), format!("scripted:{}", script.display()));
    let report = runtime
        .block_on(engine.start("Migrate the store", &options, &mut |_| {}))
        .unwrap();
    let run_id = report.run_id.clone();
    // When to hand over, and what, is `plandesk::view`'s (tested there): here, that the
    // message the channel sends is what the commands answer, and small enough.
    let event = plandesk_app::ipc::RunEvent::Ended(
        runtime.block_on(plandesk::view::run_end(&engine, report, true)),
    );
    let message = serde_json::to_string(&event).unwrap();
    let ended: Value = serde_json::from_str(&message).unwrap();
    assert_eq!(ended["event"], "ended");
    let review = &ended["data"]["review"];

    let (_app, webview) = support::app(&Options {
        data_dir: Some(data.clone()),
        workspace: Some(workspace.clone()),
        ..Options::default()
    });
    let detail = support::ok(&webview, "run_detail", json!({"runId": run_id}));
    assert_eq!(review["detail"], detail, "the run, as the window reads it");
    let revision_id = &detail["pending"][0]["revisionId"];
    assert_eq!(&ended["data"]["revisionId"], revision_id);
    let mut revision = support::ok(&webview, "revision", json!({"id": revision_id}));
    let page_bytes: Vec<usize> = serde_json::from_value(revision["pageBytes"].clone()).unwrap();
    assert!(
        page_bytes.len() > 20,
        "a plan of many pages: {page_bytes:?}"
    );
    // The pages a review fills first: while fewer than 4 KiB are in, one more.
    let mut first = 0;
    let mut bytes = 0;
    while bytes < 4 * 1024 {
        bytes += page_bytes[first];
        first += 1;
    }
    let handed: Vec<Value> = review["revision"]["pages"].as_array().unwrap().clone();
    assert_eq!(handed.len(), first, "{bytes} bytes in {first} pages");
    assert_eq!(
        handed[..],
        revision["pages"].as_array().unwrap()[..first],
        "the first pages, as `revision` sends them"
    );
    revision["pages"] = json!(handed);
    assert_eq!(
        review["revision"], revision,
        "all else as `revision` says it"
    );
    assert!(
        message.len() < 8 * 1024,
        "{} bytes: too large to cross with its notice",
        message.len()
    );

    // Approved: the run goes on and finishes, with no plan to hand over.
    let verdict = plandesk::Verdict {
        approve: true,
        ..Default::default()
    };
    let report = runtime
        .block_on(engine.decide(&run_id, &verdict, &mut |_| {}))
        .unwrap();
    assert_ne!(report.status, plandesk::RunStatus::Suspended);
    let end = runtime.block_on(plandesk::view::run_end(&engine, report, true));
    let ended = serde_json::to_value(plandesk_app::ipc::RunEvent::Ended(end)).unwrap();
    assert!(
        ended["data"].get("review").is_none() && ended["data"]["revisionId"].is_null(),
        "{ended}"
    );
}

/// The audit view says what its check found: the trail checked to its newest entry, then,
/// with the record of its head outside the database two entries further (as the two newest
/// entries deleted from the database leave it), cut.
#[test]
fn the_audit_view_says_when_the_newest_entries_were_removed() {
    let fx = fixture();
    let view = fx.ok("audit", json!({"runId": null}));
    let check = &view["check"];
    assert_eq!(check["holds"], true, "{check}");
    assert!(
        check["summary"]
            .as_str()
            .unwrap()
            .contains("None was changed or removed"),
        "the whole trail, checked to its end: {check}"
    );
    let entries = view["entries"].as_array().unwrap().len();
    let anchor = plandesk::store::AuditAnchor::local(&fx.data);
    std::fs::write(
        anchor.path(),
        json!({"entries": entries + 2, "hash": "of an entry deleted since"}).to_string(),
    )
    .unwrap();
    let check = fx.ok("audit", json!({"runId": null}))["check"].clone();
    assert_eq!(check["holds"], false, "a cut trail does not hold: {check}");
    let said = check["summary"].as_str().unwrap();
    assert!(
        said.contains("2 newest entries were removed") && !said.contains("changed or removed"),
        "the view says the trail was cut, and how much: {said}"
    );
}
