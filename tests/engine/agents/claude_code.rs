//! Claude Code: a plan reviewed, revised and approved from another process, an approval's notes
//! and a reviewer's edit in the plan it gets back, and a rejection without feedback that tells
//! it to stop and wait.

use super::*;

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
    let edited = fx.edit(&item["revision"]["id"], b"# P\n\n1. Add a bounded LRU\n");
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
