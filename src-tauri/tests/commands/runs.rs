//! Runs started and decided through IPC: when a decision is recorded, waits, or is refused.

use super::*;

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
