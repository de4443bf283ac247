//! Crashes: kill -9 and aborts at named points lose no plan and no decision.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use serde_json::json;

use crate::support::*;

fn fixture() -> Fixture {
    let fx = Fixture::new(json!([{"toolCalls": [submit("c1", PLAN)]}, text("Carrying on.")]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    fx
}

#[test]
fn kill_9_right_after_suspension_keeps_the_plan_pending() {
    let fx = fixture();
    let model = format!("scripted:{}", fx.script.display());
    let mut child = fx
        .command(&["--json", "run", "--model", &model, "Add a cache"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let mut run_id = String::new();
    for line in lines.by_ref() {
        let chunk: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        run_id = chunk["runId"].as_str().unwrap().to_owned();
        if chunk["type"] == "tool-call-suspended" {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let pending = fx.listing(&["pending"]);
    assert_eq!(
        pending[0]["runId"],
        run_id.as_str(),
        "the suspension was durable before it was announced"
    );
    let resumed = fx.stream(&["approve", &run_id]);
    assert_eq!(*types(&resumed).last().unwrap(), "finish");
}

#[test]
fn abort_after_the_decision_is_recorded_loses_nothing() {
    let fx = fixture();
    let (run, _) = fx.start(&[]);
    let out = fx
        .command(&["approve", &run])
        .env("PLANDESK_CRASH_AT", "after-decision")
        .output()
        .unwrap();
    assert!(!out.status.success(), "the process must have died");
    let history = fx.listing(&["history", &run]);
    assert_eq!(
        history[0]["decision"]["action"], "approved",
        "the decision survived the crash"
    );
    assert_eq!(
        fx.listing(&["pending"]),
        json!([]),
        "a decided plan is no longer pending"
    );
    let listed = &fx.listing(&["runs"])[0];
    assert_eq!(
        (&listed["status"], &listed["interrupted"]),
        (&json!("suspended"), &json!(true)),
        "decided, and nobody carries it on: {listed}"
    );
    let err = fx.refused(&["approve", &run]);
    assert!(
        err.contains("plandesk resume"),
        "the refusal says how to continue: {err}"
    );
    let resumed = fx.stream(&["resume", &run]);
    assert_eq!(types(&resumed)[0], "tool-result");
    assert_eq!(
        resumed[0]["payload"]["result"]["content"],
        "Plan approved. Proceed with implementation following the approved plan."
    );
    assert_eq!(*types(&resumed).last().unwrap(), "finish");
    assert_eq!(fx.listing(&["runs"])[0]["mode"], "build");
}

#[test]
fn abort_after_a_model_call_resumes_from_the_last_snapshot() {
    let fx = fixture();
    let model = format!("scripted:{}", fx.script.display());
    let out = fx
        .command(&["--json", "run", "--model", &model, "Add a cache"])
        .env("PLANDESK_CRASH_AT", "after-model-call")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let run = chunks(&out.stdout)[0]["runId"].as_str().unwrap().to_owned();
    let listed = &fx.listing(&["runs"])[0];
    assert_eq!(listed["status"], "running");
    assert_eq!(listed["interrupted"], true, "nobody drives it: {listed}");
    let err = fx.refused(&["send", &run, "are you there?"]);
    assert!(
        err.contains("was interrupted while it ran; `plandesk resume"),
        "{err}"
    );
    let continued = fx.stream(&["resume", &run]);
    assert_eq!(
        types(&continued),
        ["tool-call-suspended"],
        "the model's answer was kept; it is not asked again"
    );
    assert_eq!(fx.model_calls().len(), 1);
}

#[test]
fn abort_after_suspension_is_pending_after_restart() {
    let fx = fixture();
    let model = format!("scripted:{}", fx.script.display());
    let out = fx
        .command(&["--json", "run", "--model", &model, "Add a cache"])
        .env("PLANDESK_CRASH_AT", "after-suspend")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(fx.listing(&["pending"]).as_array().unwrap().len(), 1);
    let run = fx.listing(&["runs"])[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        *types(&fx.stream(&["approve", &run])).last().unwrap(),
        "finish"
    );
}

#[test]
fn a_run_keeps_its_newest_snapshot_and_every_event() {
    let fx = fixture();
    let (run, _) = fx.start(&[]);
    fx.stream(&["approve", &run]);
    let store = block_on(fx.store.open()).unwrap();
    assert!(
        block_on(store.snapshot_version(&run)).unwrap() >= 4,
        "every state change is a new snapshot version"
    );
    assert_eq!(
        block_on(store.snapshot_count(&run)).unwrap(),
        1,
        "a snapshot replaces the one it supersedes"
    );
    let kinds: Vec<String> = events(&fx.store, &run)
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "run-started",
            "plan-submitted",
            "suspended",
            "decided",
            "finished"
        ]
    );
}
