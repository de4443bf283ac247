//! Outside agents' hooks through the real binary: a plan lands in the inbox with its source,
//! the hook blocks until a person decides from another process, and answers in the agent's own
//! format; consecutive plans of one session are revisions of one thread; a hook that is
//! stopped, killed or past its deadline never leaves a plan pending, and never approves.

use std::io::Write;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

/// Starts `plandesk hook AGENT` with `payload` on stdin.
fn hook(fx: &Fixture, agent: &str, payload: &Value, extra: &[&str]) -> Child {
    let mut args = vec!["hook", agent];
    args.extend_from_slice(extra);
    spawn_with_input(fx.command(&args), payload.to_string().as_bytes())
}

/// The hook's answer: its stdout as JSON (`Null` for no output), after it exits 0.
fn answer(child: Child) -> Value {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "a hook always exits 0 with an explicit answer: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }
}

/// Waits until `pending` holds `count` items; returns them.
fn wait_pending(fx: &Fixture, count: usize) -> Vec<Value> {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let pending = fx.listing(&["pending"]);
        let items = pending.as_array().unwrap().clone();
        if items.len() == count {
            return items;
        }
        assert!(
            Instant::now() < until,
            "waited for {count} pending: {pending}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn claude_payload(plan: &str) -> Value {
    json!({
        "session_id": "cc-session-1", "transcript_path": "/nonexistent/t.jsonl",
        "cwd": "/home/u/proj", "permission_mode": "plan",
        "hook_event_name": "PermissionRequest", "tool_name": "ExitPlanMode",
        "tool_input": {"plan": plan, "planFilePath": "/home/u/.claude/plans/brave-otter.md"}
    })
}

#[test]
fn a_claude_code_plan_is_reviewed_revised_and_approved_from_the_cli() {
    let fx = Fixture::new(json!([]));
    let first = hook(
        &fx,
        "claude-code",
        &claude_payload("# Cache\n\n1. Add an LRU"),
        &[],
    );
    let items = wait_pending(&fx, 1);
    let item = &items[0];
    assert_eq!(
        item["source"],
        json!({"kind": "claude-code", "session": "cc-session-1"})
    );
    assert_eq!(item["kind"], "plan");
    assert_eq!(item["workspace"], "/home/u/proj");
    assert_eq!(
        item["revision"]["title"], "Cache",
        "today's fields, for every source"
    );
    let run = item["runId"].as_str().unwrap().to_owned();
    let human = String::from_utf8(fx.ok(&["pending"]).stdout).unwrap();
    assert!(human.contains("claude-code"), "{human}");

    fx.ok(&["reject", &run, "--feedback", "Bound the cache"]);
    let denied = answer(first);
    let decision = &denied["hookSpecificOutput"]["decision"];
    assert_eq!(
        denied["hookSpecificOutput"]["hookEventName"],
        "PermissionRequest"
    );
    assert_eq!(decision["behavior"], "deny");
    assert!(
        decision["message"]
            .as_str()
            .unwrap()
            .contains("User feedback: Bound the cache"),
        "{denied}"
    );

    let second = hook(
        &fx,
        "claude-code",
        &claude_payload("# Cache\n\n1. Add a bounded LRU"),
        &[],
    );
    let items = wait_pending(&fx, 1);
    assert_eq!(items[0]["runId"], run, "one session, one run");
    assert_eq!(
        items[0]["revision"]["revisionNo"], 2,
        "the revised plan is revision 2"
    );
    let sha = items[0]["revision"]["sha256"].as_str().unwrap().to_owned();
    let history = fx.listing(&["history", &run]);
    assert_eq!(history[0]["status"], "rejected");
    let ids: Vec<String> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].to_string())
        .collect();
    let diff = fx.listing(&["diff", &ids[0], &ids[1]]);
    assert_eq!(diff["between"][0]["feedback"], "Bound the cache");
    assert!(diff["diff"]["changed"].as_u64().unwrap() >= 1);

    fx.ok(&["approve", &run, "--revision", &sha[..8]]);
    let allowed = answer(second);
    assert_eq!(
        allowed["hookSpecificOutput"]["decision"],
        json!({"behavior": "allow", "updatedInput": {
            "plan": "# Cache\n\n1. Add a bounded LRU",
            "planFilePath": "/home/u/.claude/plans/brave-otter.md"}})
    );
    assert_eq!(fx.listing(&["pending"]), json!([]));
    assert_eq!(fx.listing(&["history", &run])[1]["status"], "approved");
}

#[test]
fn approval_notes_reach_claude_code_in_the_plan_it_gets_back() {
    let fx = Fixture::new(json!([]));
    let child = hook(&fx, "claude-code", &claude_payload("# P\n\nx"), &[]);
    let run = wait_pending(&fx, 1)[0]["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    fx.ok(&["approve", &run, "--note", "  Keep the old API  "]);
    let decision = answer(child)["hookSpecificOutput"]["decision"].clone();
    assert_eq!(decision["behavior"], "allow");
    assert_eq!(
        decision["updatedInput"]["plan"], "# P\n\nx\n\nReviewer notes: Keep the old API",
        "an allow carries no message: the notes follow the plan"
    );
    let audit = fx.stream(&["audit", &run]);
    let answered = audit
        .iter()
        .find(|e| e["kind"] == "answered")
        .expect("the hook's answer is in the audit trail");
    assert!(
        answered["data"]["answer"]
            .as_str()
            .unwrap()
            .contains("Reviewer notes: Keep the old API"),
        "{answered}"
    );
}

#[test]
fn a_reviewers_edit_reaches_claude_code_as_the_plan_with_the_diff() {
    let fx = Fixture::new(json!([]));
    let plans = fx.root.join("claude-plans");
    std::fs::create_dir_all(&plans).unwrap();
    let plan_file = plans.join("brave-otter.md");
    std::fs::write(&plan_file, "# P\n\n1. Add an LRU\n").unwrap();
    let mut payload = claude_payload("# P\n\n1. Add an LRU");
    payload["tool_input"]["planFilePath"] = json!(plan_file);
    // The plan file lies in the session's workspace: an edit may be written there.
    payload["cwd"] = json!(fx.root);
    let child = hook(&fx, "claude-code", &payload, &[]);
    let item = wait_pending(&fx, 1).remove(0);
    let run = item["runId"].as_str().unwrap().to_owned();
    let mine = fx.write("mine.md", b"# P\n\n1. Add a bounded LRU\n");
    let edited = fx.listing(&[
        "edit",
        &item["revision"]["id"].to_string(),
        "--file",
        mine.to_str().unwrap(),
    ]);
    assert_eq!(edited["written"], true, "{edited}");
    assert_eq!(
        std::fs::read_to_string(&plan_file).unwrap(),
        "# P\n\n1. Add a bounded LRU\n",
        "the agent's plan file holds the edit"
    );
    fx.ok(&["approve", &run]);
    let decision = answer(child)["hookSpecificOutput"]["decision"].clone();
    assert_eq!(decision["behavior"], "allow");
    let plan = decision["updatedInput"]["plan"].as_str().unwrap();
    assert!(
        plan.starts_with("# P\n\n1. Add a bounded LRU\n\n"),
        "{plan}"
    );
    assert!(
        plan.contains("changed the plan before approving it"),
        "{plan}"
    );
    assert!(
        plan.contains("-1. Add an LRU\n+1. Add a bounded LRU"),
        "{plan}"
    );
}

#[test]
fn rejecting_without_feedback_tells_claude_code_to_stop_and_wait() {
    let fx = Fixture::new(json!([]));
    let child = hook(&fx, "claude-code", &claude_payload("# P\n\nx"), &[]);
    let run = wait_pending(&fx, 1)[0]["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    fx.ok(&["reject", &run]);
    let decision = answer(child)["hookSpecificOutput"]["decision"].clone();
    assert_eq!(decision["behavior"], "deny");
    assert_eq!(decision["interrupt"], true);
    assert!(decision["message"]
        .as_str()
        .unwrap()
        .contains("wait for the user"));
}

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
    fx.ok(&["approve", &run]);
    assert_eq!(answer(child), json!({}));
}

#[test]
fn a_stopped_or_killed_hook_never_leaves_its_plan_pending() {
    let fx = Fixture::new(json!([]));
    let child = hook(&fx, "claude-code", &claude_payload("# Stop me\n\nx"), &[]);
    let run = wait_pending(&fx, 1)[0]["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    let pid = child.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(fx.listing(&["pending"]), json!([]));
    assert_eq!(fx.listing(&["history", &run])[0]["status"], "abandoned");

    let mut killed = hook(&fx, "claude-code", &claude_payload("# Kill me\n\ny"), &[]);
    wait_pending(&fx, 1);
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert_eq!(
        fx.listing(&["pending"]),
        json!([]),
        "a waiter whose process is gone is swept as abandoned"
    );
    let history = fx.listing(&["history", &run]);
    assert_eq!(history[1]["status"], "abandoned", "{history}");
}

/// `cmd` (a `plandesk` command of the fixture's) run by `runner` instead, with the same
/// arguments, environment and folder.
fn run_under(runner: &[&str], cmd: &std::process::Command) -> std::process::Command {
    let mut under = std::process::Command::new(runner[0]);
    under
        .args(&runner[1..])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => under.env(key, value),
            None => under.env_remove(key),
        };
    }
    under.current_dir(cmd.get_current_dir().unwrap());
    under
}

#[test]
fn a_hook_whose_agent_is_killed_abandons_its_plan() {
    // The agent is `timeout` (a program that waits for its child, like an agent for its hook),
    // killed with SIGKILL so it cannot stop the hook. Gemini CLI runs a hook directly; Claude
    // Code under a `sh -c` that stays and waits for it.
    let runners: [&[&str]; 2] = [
        &["timeout", "120"],
        &["timeout", "120", "sh", "-c", "\"$@\"; exit $?", "sh"],
    ];
    for runner in runners {
        let fx = Fixture::new(json!([]));
        let mut agent = run_under(runner, &fx.command(&["hook", "claude-code"]))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        agent
            .stdin
            .take()
            .unwrap()
            .write_all(claude_payload("# Orphan\n\nx").to_string().as_bytes())
            .unwrap();
        let run = wait_pending(&fx, 1)[0]["runId"]
            .as_str()
            .unwrap()
            .to_owned();
        agent.kill().unwrap();
        agent.wait().unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        while fx.listing(&["pending"]) != json!([]) {
            assert!(
                Instant::now() < until,
                "{runner:?}: the hook noticed its agent is gone"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            fx.listing(&["history", &run])[0]["status"],
            "abandoned",
            "{runner:?}"
        );
    }
}

#[test]
fn past_its_deadline_a_plan_is_denied_and_recorded_as_expired() {
    let fx = Fixture::new(json!([]));
    // Long enough that the review, not the hook's last-resort watchdog, meets it even on a
    // loaded machine (the watchdog keeps a fifth of it for the answer; both deny).
    let child = hook(
        &fx,
        "claude-code",
        &claude_payload("# Slow\n\nz"),
        &["--deadline", "3s"],
    );
    let decision = answer(child)["hookSpecificOutput"]["decision"].clone();
    assert_eq!(decision["behavior"], "deny", "fail closed, never open");
    let message = decision["message"].as_str().unwrap();
    assert!(message.contains("No decision was made"), "{message}");
    let history = fx.listing(&["history"]);
    assert_eq!(history[0]["status"], "expired");
}

/// A deadline that is not one (or is nothing) is a mistake in the agent's settings: the hook
/// still answers its agent, "not approved", and never becomes clap's non-zero exit.
#[test]
fn a_hook_given_no_usable_deadline_denies_and_says_why() {
    let fx = Fixture::new(json!([]));
    for (deadline, env, why) in [
        (Some("soon"), None, "is not a duration such as 30s"),
        (Some("0s"), None, "longer than 0 s"),
        (None, Some("10 parsecs"), "is not a duration such as 30s"),
    ] {
        let mut args = vec!["hook", "claude-code"];
        args.extend(deadline.map(|d| ["--deadline", d]).into_iter().flatten());
        let mut cmd = fx.command(&args);
        if let Some(env) = env {
            cmd.env("PLANDESK_HOOK_DEADLINE", env);
        }
        let child = spawn_with_input(cmd, claude_payload("# P").to_string().as_bytes());
        let decision = answer(child)["hookSpecificOutput"]["decision"].clone();
        assert_eq!(
            decision["behavior"], "deny",
            "{deadline:?} {env:?}: {decision}"
        );
        assert!(
            decision["message"].as_str().unwrap().contains(why),
            "{deadline:?} {env:?}: {decision}"
        );
    }
    assert_eq!(fx.listing(&["pending"]), json!([]), "nothing was submitted");
}

#[test]
fn a_hook_that_cannot_reach_the_store_denies() {
    if sqlite_only("a_hook_that_cannot_reach_the_store_denies") {
        return;
    }
    let fx = Fixture::new(json!([]));
    std::fs::create_dir_all(&fx.data).unwrap();
    std::fs::write(fx.data.join("plandesk.db"), vec![0x42; 4096]).unwrap();
    let decision = answer(hook(&fx, "claude-code", &claude_payload("# P"), &[]))
        ["hookSpecificOutput"]["decision"]
        .clone();
    assert_eq!(decision["behavior"], "deny", "{decision}");
    assert!(decision["message"]
        .as_str()
        .unwrap()
        .contains("not approved"));
    let junk = answer(hook(&fx, "gemini", &json!("not an object"), &[]));
    assert_eq!(junk["decision"], "deny");
}

/// A Claude-style plan tool call of Factory Droid or Qwen Code.
fn held_payload(agent: &str, session: &str, plan: &str) -> Value {
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
    fx.ok(&["approve", &run]);
    assert_eq!(answer(second), json!({"permissionDecision": "allow"}));
}
