//! Kimi Code through the real binary: the plan it recorded is reviewed, and since Kimi Code
//! reads its plan file again once the plan is approved, an approval goes out only while the
//! file holds what the person approved: a file changed meanwhile is answered "not approved",
//! and a reviewer's edit is written there and goes out as the plan.

use std::path::{Path, PathBuf};
use std::process::Child;

use super::*;

const SESSION: &str = "session_0b7c";

/// A Kimi Code home (`$KIMI_CODE_HOME`) whose session's main agent, in plan mode, presented
/// `text`: its plan file, Kimi Code's copy of it, and the log saying which plan it is. Returns
/// the file.
fn presented(home: &Path, text: &str) -> PathBuf {
    let agent = home
        .join("sessions/wd_w_5f3a/")
        .join(SESSION)
        .join("agents/main");
    std::fs::create_dir_all(agent.join("plans")).unwrap();
    std::fs::create_dir_all(agent.join("plan/iron-fist-storm-hulk")).unwrap();
    let file = agent.join("plans/iron-fist-storm-hulk.md");
    std::fs::write(&file, text).unwrap();
    std::fs::write(agent.join("plan/iron-fist-storm-hulk/v1.md"), text).unwrap();
    let line = json!({"type": "plan_mode.enter", "agentId": "main",
                      "id": "iron-fist-storm-hulk", "time": 1_796_652_810_603_i64});
    std::fs::write(agent.join("wire.jsonl"), format!("{line}\n")).unwrap();
    file
}

/// `plandesk hook kimi-code` for the session, with Kimi Code's home at `home`.
fn kimi_hook(fx: &Fixture, home: &Path) -> Child {
    let payload = json!({"hook_event_name": "PreToolUse", "session_id": SESSION, "cwd": "/w",
                         "client_type": "kimi_code_cli", "tool_name": "ExitPlanMode",
                         "tool_input": {}, "tool_call_id": "call_1"});
    let mut cmd = fx.command(&["hook", "kimi-code"]);
    cmd.env("KIMI_CODE_HOME", home);
    spawn_with_input(cmd, payload.to_string().as_bytes())
}

/// The hook's exit status and its `hookSpecificOutput`.
fn decision(child: Child) -> (Option<i32>, Value, String) {
    let out = child.wait_with_output().unwrap();
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (
        out.status.code(),
        value["hookSpecificOutput"].clone(),
        stderr,
    )
}

#[test]
fn a_kimi_code_plan_file_changed_while_under_review_is_not_approved() {
    let fx = Fixture::new(json!([]));
    let home = fx.root.join("kimi-home");
    let file = presented(&home, "# Cache\n\n1. Add a cache\n");
    let child = kimi_hook(&fx, &home);
    let pending = wait_pending(&fx, 1);
    assert_eq!(pending[0]["source"]["kind"], "kimi-code");
    assert_eq!(pending[0]["revision"]["body"], "1. Add a cache");
    // A background command rewrites the plan while the person reads it.
    std::fs::write(
        &file,
        "# Cache\n\n1. Add a cache\n2. Delete the old tables\n",
    )
    .unwrap();
    fx.ok(&["approve", pending[0]["runId"].as_str().unwrap()]);
    let (status, output, stderr) = decision(child);
    assert_eq!(status, Some(2), "a deny to Kimi Code exits 2");
    assert_eq!(output["permissionDecision"], "deny");
    let reason = output["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.contains("was changed while the user reviewed the plan"),
        "{reason}"
    );
    assert!(
        stderr.contains("was changed while the user reviewed"),
        "{stderr}"
    );
    let audit = String::from_utf8(fx.ok(&["--json", "audit"]).stdout).unwrap();
    assert!(
        audit.contains("was changed while the user reviewed"),
        "what the agent was told is in the trail: {audit}"
    );

    // Unchanged, the same approval goes out as an allow.
    let fx = Fixture::new(json!([]));
    presented(&home, "# Cache\n\n1. Add a cache\n");
    let child = kimi_hook(&fx, &home);
    let pending = wait_pending(&fx, 1);
    fx.ok(&["approve", pending[0]["runId"].as_str().unwrap()]);
    let (status, output, _) = decision(child);
    assert_eq!(
        (status, &output["permissionDecision"]),
        (Some(0), &json!("allow"))
    );
}

/// A reviewer's edit is written into the plan file, which Kimi Code reads once approved: the
/// approval of the edited revision goes out as an allow, and the file holds the edit.
#[test]
fn a_reviewers_edit_reaches_kimi_code_through_its_plan_file() {
    let fx = Fixture::new(json!([]));
    let home = fx.root.join("kimi-home");
    let file = presented(&home, "# Cache\n\n1. Add a cache\n");
    let child = kimi_hook(&fx, &home);
    let pending = wait_pending(&fx, 1);
    let mine = fx.root.join("mine.md");
    std::fs::write(&mine, "# Cache\n\n1. Add an LRU cache of 1000 entries\n").unwrap();
    let revision = pending[0]["revision"]["id"].to_string();
    fx.ok(&["edit", &revision, "--file", mine.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "# Cache\n\n1. Add an LRU cache of 1000 entries\n",
        "written into the plan file"
    );
    fx.ok(&["approve", pending[0]["runId"].as_str().unwrap()]);
    let (status, output, _) = decision(child);
    assert_eq!(
        (status, &output["permissionDecision"]),
        (Some(0), &json!("allow"))
    );
}
