//! The other agents, each in its own format: Codex's plan from its session file, Gemini CLI's
//! plan file, Factory Droid's and Qwen Code's held plan tool, Copilot CLI's session state.

use super::*;

#[test]
fn codex_plans_come_from_the_session_file_and_each_is_reviewed_once() {
    let fx = Fixture::new(json!([]));
    let rollout = fx.root.join("rollout.jsonl");
    let plan_event = |text: &str| {
        json!({"timestamp": "t", "type": "event_msg", "payload": {"type": "item_completed",
               "turn_id": "T1", "item": {"type": "Plan", "id": "p", "text": text}}})
    };
    std::fs::write(&rollout, format!("{}\n", plan_event("# Plan A\n\nStep"))).unwrap();
    let stop = json!({"session_id": "cx-1", "turn_id": "T1", "transcript_path": rollout,
        "cwd": "/w", "hook_event_name": "Stop", "model": "m", "permission_mode": "default",
        "stop_hook_active": false, "last_assistant_message": "Here is the plan."});
    let child = hook(&fx, "codex", &stop, &[]);
    let run = wait_pending(&fx, 1)[0]["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    fx.ok(&["reject", &run, "--feedback", "Add tests"]);
    let blocked = answer(child);
    assert_eq!(blocked["decision"], "block");
    assert!(blocked["reason"].as_str().unwrap().contains("Add tests"));

    // The model revises in the same turn: a new Plan item, a new revision.
    let mut text = std::fs::read_to_string(&rollout).unwrap();
    text.push_str(&format!("{}\n", plan_event("# Plan A\n\nStep\nTests")));
    std::fs::write(&rollout, text).unwrap();
    let child = hook(&fx, "codex", &stop, &[]);
    let items = wait_pending(&fx, 1);
    assert_eq!(items[0]["revision"]["revisionNo"], 2);
    fx.ok(&["approve", &run]);
    assert_eq!(answer(child), Value::Null, "approval lets the stop happen");

    // A Stop with no new plan (after the decision) passes at once, and adds nothing.
    let again = hook(&fx, "codex", &stop, &[]);
    assert_eq!(answer(again), Value::Null);
    assert_eq!(fx.listing(&["history", &run]).as_array().unwrap().len(), 2);
}

/// Two plans waiting in one session: a decision that names neither is refused (which plan a
/// person approves is never guessed); naming one by its revision decides that one.
#[test]
fn with_two_plans_waiting_a_decision_must_name_one() {
    let fx = Fixture::new(json!([]));
    let rollout = fx.root.join("rollout.jsonl");
    let event = |turn: &str, text: &str| {
        json!({"timestamp": "t", "type": "event_msg", "payload": {"type": "item_completed",
            "turn_id": turn, "item": {"type": "Plan", "id": "p", "text": text}}})
    };
    let lines = [
        event("T1", "# First\n\nOne"),
        event("T2", "# Second\n\nTwo"),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&rollout, text).unwrap();
    let stop = |turn: &str| {
        json!({"session_id": "cx-3", "turn_id": turn, "transcript_path": rollout, "cwd": "/w",
               "hook_event_name": "Stop", "last_assistant_message": "Here is the plan."})
    };
    let first = hook(&fx, "codex", &stop("T1"), &[]);
    wait_pending(&fx, 1);
    let second = hook(&fx, "codex", &stop("T2"), &[]);
    let items = wait_pending(&fx, 2);
    let run = items[0]["runId"].as_str().unwrap().to_owned();
    assert_eq!(items[1]["runId"], run.as_str(), "one session, one run");

    let refused = fx.command(&["approve", &run]).output().unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("several calls wait"), "{said}");
    assert_eq!(fx.listing(&["pending"]).as_array().unwrap().len(), 2);

    let second_item = items
        .iter()
        .find(|i| i["revision"]["title"] == "Second")
        .unwrap();
    let sha = second_item["revision"]["sha256"].as_str().unwrap();
    fx.ok(&["approve", &run, "--revision", &sha[..12]]);
    assert_eq!(answer(second), Value::Null, "the plan named is approved");
    let left = wait_pending(&fx, 1);
    assert_eq!(left[0]["revision"]["title"], "First");
    fx.ok(&["reject", &run, "--feedback", "Not this one"]);
    assert_eq!(answer(first)["decision"], "block");
}

/// Codex goes on with the plan it wrote: a reviewer's edit approved is not that plan, so Codex
/// is told to present the reviewer's version, and the trail records what it was told.
#[test]
fn an_edit_codex_cannot_be_handed_is_answered_as_the_plan_to_present() {
    let fx = Fixture::new(json!([]));
    let rollout = fx.root.join("rollout.jsonl");
    let event = json!({"timestamp": "t", "type": "event_msg", "payload": {"type": "item_completed",
        "turn_id": "T1", "item": {"type": "Plan", "id": "p", "text": "# Plan A\n\n1. Add an LRU"}}});
    std::fs::write(&rollout, format!("{event}\n")).unwrap();
    let stop = json!({"session_id": "cx-2", "turn_id": "T1", "transcript_path": rollout,
        "cwd": "/w", "hook_event_name": "Stop", "last_assistant_message": "Here is the plan."});
    let child = hook(&fx, "codex", &stop, &[]);
    let item = wait_pending(&fx, 1).remove(0);
    let run = item["runId"].as_str().unwrap().to_owned();
    let edited = fx.edit(
        &item["revision"]["id"],
        b"# Plan A\n\n1. Add a bounded LRU\n",
    );
    assert_eq!(edited["written"], false, "Codex has no plan file: {edited}");
    fx.ok(&["approve", &run]);
    let told = answer(child);
    assert_eq!(
        told["decision"], "block",
        "Codex's own plan is not approved"
    );
    let reason = told["reason"].as_str().unwrap();
    assert!(reason.contains("yours is not approved"), "{reason}");
    assert!(
        reason.contains("# Plan A\n\n1. Add a bounded LRU"),
        "{reason}"
    );
    let audit = fx.stream(&["audit", &run]);
    let answered = audit.iter().find(|e| e["kind"] == "answered").unwrap();
    assert_eq!(answered["data"]["answer"], reason, "{answered}");
}

#[test]
fn gemini_reads_the_plan_file_and_denies_explicitly() {
    let fx = Fixture::new(json!([]));
    let plans = fx.root.join("gemini-plans");
    std::fs::create_dir_all(&plans).unwrap();
    let payload = |name: &str| {
        json!({"session_id": "gm-1", "transcript_path": "/t", "cwd": "/w",
               "hook_event_name": "BeforeTool", "timestamp": "t",
               "tool_name": "exit_plan_mode", "tool_input": {"plan_filename": name}})
    };
    let gemini = || {
        let mut cmd = fx.command(&["hook", "gemini"]);
        cmd.env("GEMINI_PLANS_DIR", &plans);
        spawn_with_input(cmd, payload("auth.md").to_string().as_bytes())
    };
    let denied = answer(gemini());
    assert_eq!(
        denied["decision"], "deny",
        "a plan not yet written is denied at once"
    );
    assert!(denied["reason"]
        .as_str()
        .unwrap()
        .contains("missing or empty"));

    std::fs::write(plans.join("auth.md"), "# Auth\n\nUse OAuth").unwrap();
    let child = gemini();
    let run = wait_pending(&fx, 1)[0]["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Only Claude Code can be let edit without asking: refused here, the plan still waits.
    let refused = fx.refused(&["approve", &run, "--accept-edits"]);
    assert!(
        refused.contains("run ") && refused.contains("is a gemini session"),
        "{refused}"
    );
    fx.ok(&["approve", &run]);
    assert_eq!(answer(child), json!({}));

    // A reviewer's edit reaches Gemini CLI in its plan file, which it reads once approved; if
    // the file no longer holds it, Gemini CLI is told to present the reviewer's version.
    for (n, kept) in [(1, true), (2, false)] {
        let name = format!("auth{n}.md");
        std::fs::write(plans.join(&name), "# Auth\n\nUse OAuth").unwrap();
        let mut cmd = fx.command(&["hook", "gemini"]);
        cmd.env("GEMINI_PLANS_DIR", &plans);
        let child = spawn_with_input(cmd, payload(&name).to_string().as_bytes());
        let item = wait_pending(&fx, 1).remove(0);
        let edited = fx.edit(&item["revision"]["id"], b"# Auth\n\nUse OAuth with PKCE\n");
        assert_eq!(edited["written"], true, "{edited}");
        if !kept {
            std::fs::write(plans.join(&name), "# Auth\n\nSomething else").unwrap();
        }
        fx.ok(&["approve", item["runId"].as_str().unwrap()]);
        let told = answer(child);
        if kept {
            assert_eq!(told, json!({}), "the plan file holds the edit");
        } else {
            assert_eq!(told["decision"], "deny", "{told}");
            let reason = told["reason"].as_str().unwrap();
            assert!(reason.contains("Use OAuth with PKCE"), "{reason}");
        }
    }
}

/// A Claude-style plan tool call of Factory Droid or Qwen Code.
pub(super) fn held_payload(agent: &str, session: &str, plan: &str) -> Value {
    let (event, tool) = match agent {
        "droid" => ("PreToolUse", "ExitSpecMode"),
        _ => ("PermissionRequest", "exit_plan_mode"),
    };
    json!({"session_id": session, "transcript_path": "/nonexistent/t.jsonl", "cwd": "/w",
           "permission_mode": "plan", "hook_event_name": event, "tool_name": tool,
           "tool_input": {"title": "Cache lookups", "plan": plan}})
}

#[test]
fn droid_and_qwen_code_plans_are_held_revised_and_approved() {
    let fx = Fixture::new(json!([]));
    for agent in ["droid", "qwen-code"] {
        let session = format!("{agent}-session");
        let first = hook(
            &fx,
            agent,
            &held_payload(agent, &session, "1. Add a cache"),
            &[],
        );
        let pending = wait_pending(&fx, 1);
        assert_eq!(pending[0]["source"]["kind"], agent);
        let run = pending[0]["runId"].as_str().unwrap().to_owned();
        fx.ok(&["reject", &run, "--feedback", "Bound it"]);
        let out = first.wait_with_output().unwrap();
        let denied: Value = serde_json::from_slice(&out.stdout).unwrap();
        let output = &denied["hookSpecificOutput"];
        let reason = match agent {
            "droid" => {
                assert_eq!(
                    out.status.code(),
                    Some(2),
                    "Droid lets no other hook's allow overrule a deny with status 2"
                );
                assert_eq!(output["permissionDecision"], "deny");
                assert!(String::from_utf8_lossy(&out.stderr).contains("User feedback: Bound it"));
                output["permissionDecisionReason"].as_str().unwrap()
            }
            _ => {
                assert!(out.status.success());
                assert_eq!(output["hookEventName"], "PermissionRequest");
                assert_eq!(output["decision"]["behavior"], "deny");
                output["decision"]["message"].as_str().unwrap()
            }
        };
        assert!(reason.contains("User feedback: Bound it"), "{reason}");

        let second = hook(
            &fx,
            agent,
            &held_payload(agent, &session, "1. Add an LRU cache of 1000"),
            &[],
        );
        let pending = wait_pending(&fx, 1);
        assert_eq!(pending[0]["runId"], run.as_str(), "one thread, revised");
        fx.ok(&["approve", &run]);
        let allowed = answer(second)["hookSpecificOutput"].clone();
        match agent {
            "droid" => assert_eq!(allowed["permissionDecision"], "allow"),
            _ => assert_eq!(allowed["decision"]["behavior"], "allow"),
        }
        let history = fx.listing(&["history", &run]);
        assert_eq!(
            history[1]["title"], "Cache lookups",
            "titled by Droid's title: {history}"
        );
        assert_eq!(history[1]["body"], "1. Add an LRU cache of 1000");
    }
}

/// Qwen Code gives a hook at most a minute (less if its settings say so), then ignores its
/// answer: the hook says "not approved" before that.
#[test]
fn a_qwen_code_hook_answers_before_qwen_code_stops_waiting() {
    let fx = Fixture::new(json!([]));
    let home = fx.root.join("qwen-home");
    std::fs::create_dir_all(home.join(".qwen")).unwrap();
    let hook_entry = json!({"type": "command", "command": "plandesk hook qwen-code", "timeout": 3});
    let settings = json!({"hooks": {"PermissionRequest": [
        {"matcher": "exit_plan_mode", "hooks": [hook_entry]}]}});
    std::fs::write(home.join(".qwen/settings.json"), settings.to_string()).unwrap();
    let mut cmd = fx.command(&["hook", "qwen-code"]);
    cmd.env("HOME", &home);
    let started = Instant::now();
    let payload = held_payload("qwen-code", "q-slow", "1. Wait");
    let decision = answer(spawn_with_input(cmd, payload.to_string().as_bytes()))
        ["hookSpecificOutput"]["decision"]
        .clone();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(decision["behavior"], "deny", "{decision}");
    assert!(decision["message"]
        .as_str()
        .unwrap()
        .contains("No decision was made"));
    assert_eq!(fx.listing(&["history"])[0]["status"], "expired");
}

/// Copilot CLI names only its session: the plan is that session's `plan.md` in its state folder.
#[test]
fn a_copilot_plan_is_read_from_its_session_state_and_answered_explicitly() {
    let fx = Fixture::new(json!([]));
    let state = fx.root.join("copilot-home");
    let session = state.join("session-state/7720-ab");
    std::fs::create_dir_all(&session).unwrap();
    let payload = json!({"sessionId": "7720-ab", "timestamp": 1, "cwd": "/w",
                         "toolName": "exit_plan_mode", "toolArgs": {"summary": "Cache"}});
    let copilot = || {
        let mut cmd = fx.command(&["hook", "copilot"]);
        cmd.env("COPILOT_HOME", &state);
        spawn_with_input(cmd, payload.to_string().as_bytes())
    };
    let unwritten = answer(copilot());
    assert_eq!(unwritten["permissionDecision"], "deny");
    std::fs::write(session.join("plan.md"), "# Cache\n\n1. Add it\n").unwrap();
    let first = copilot();
    let run = wait_pending(&fx, 1)[0]["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    fx.ok(&["reject", &run, "--feedback", "Bound it"]);
    let denied = answer(first);
    assert_eq!(denied["permissionDecision"], "deny");
    assert!(denied["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .contains("User feedback: Bound it"));
    std::fs::write(session.join("plan.md"), "# Cache\n\n1. Add an LRU cache\n").unwrap();
    let second = copilot();
    assert_eq!(wait_pending(&fx, 1)[0]["runId"], run.as_str());
    // Copilot reads plan.md again once the plan is allowed, for its own menu and the approval
    // it records: changed while the person reviewed it, the approval does not go out.
    std::fs::write(
        session.join("plan.md"),
        "# Cache\n\n1. Add an LRU cache\n2. Drop the old tables\n",
    )
    .unwrap();
    fx.ok(&["approve", &run]);
    let changed = answer(second);
    assert_eq!(changed["permissionDecision"], "deny");
    assert!(
        changed["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("was changed while the user reviewed the plan"),
        "{changed}"
    );
    let third = copilot();
    assert_eq!(wait_pending(&fx, 1)[0]["runId"], run.as_str());
    fx.ok(&["approve", &run]);
    assert_eq!(answer(third), json!({"permissionDecision": "allow"}));
}
