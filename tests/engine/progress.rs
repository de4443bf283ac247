//! After Approve through the real binary: Claude Code's after-tool hooks (`plandesk record
//! claude-code`) record what the agent did after its plan was approved, and `plandesk progress`
//! holds it against the plan's steps; a person marks a step by hand, audited. Nothing is
//! recorded before an approval, and a record hook never answers the agent or fails it.

use serde_json::{json, Value};

use crate::support::*;

const PLAN: &str = "# Add a cache\n\n## Steps\n\n1. Add `src/cache.rs` with an LRU.\n\
                    2. Use it from src/lib.rs.\n3. Run `cargo test`.\n4. Write the docs.\n";

fn claude(fx: &Fixture, event: &str, tool: &str, input: Value) -> Value {
    json!({
        "session_id": "cc-after-1", "transcript_path": "/nonexistent/t.jsonl",
        "cwd": fx.workspace, "permission_mode": "default", "hook_event_name": event,
        "tool_name": tool, "tool_input": input, "tool_response": {"success": true},
    })
}

/// Runs `plandesk record claude-code` on `payload`: it prints nothing and exits 0.
fn record(fx: &Fixture, payload: &Value) -> String {
    let child = spawn_with_input(
        fx.command(&["record", "claude-code"]),
        payload.to_string().as_bytes(),
    );
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "a record hook always exits 0");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "",
        "and answers nothing"
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Claude Code's plan hook on `plan`, waiting; returns it and the plan's run once it is pending.
fn plan_waiting(fx: &Fixture, plan: &str) -> (std::process::Child, String) {
    let mut permission = claude(
        fx,
        "PermissionRequest",
        "ExitPlanMode",
        json!({"plan": plan}),
    );
    permission["permission_mode"] = json!("plan");
    let hook = spawn_with_input(
        fx.command(&["hook", "claude-code"]),
        permission.to_string().as_bytes(),
    );
    block_on(until_pending(fx));
    let run = fx.listing(&["pending"])[0]["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    (hook, run)
}

/// The files of a progress (only the changed ones, with `changed_only`), each as the JSON list
/// of its `keys`.
fn files_of(progress: &Value, changed_only: bool, keys: &[&str]) -> Vec<Value> {
    progress["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !changed_only || f["changed"] == true)
        .map(|f| Value::Array(keys.iter().map(|k| f[*k].clone()).collect()))
        .collect()
}

fn write(fx: &Fixture, rel: &str) -> Value {
    fx.write(rel, b"x\n");
    let mut payload = claude(
        fx,
        "PostToolUse",
        "Write",
        json!({"file_path": fx.workspace.join(rel), "content": "x\n"}),
    );
    payload["tool_response"] = json!({"type": "create", "content": "x\n"});
    payload
}

#[test]
fn work_after_an_approval_is_held_against_the_plans_steps() {
    let fx = Fixture::new(json!([]));
    // Before any plan, and before its approval, nothing is recorded.
    record(&fx, &write(&fx, "src/early.rs"));
    let (hook, run) = plan_waiting(&fx, PLAN);
    record(&fx, &write(&fx, "src/too-early.rs"));
    let refused = fx.refused(&["progress", &run]);
    assert!(refused.contains("no approved plan yet"), "{refused}");
    fx.ok(&["approve", &run]);
    let answered = hook.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&answered.stdout).contains("allow"));

    // The agent works: a planned file, an unplanned one, one outside its workspace, a command
    // (with hostile bytes), a tool that changes nothing; then it stops.
    record(&fx, &write(&fx, "src/cache.rs"));
    record(&fx, &write(&fx, "src/extra.rs"));
    record(
        &fx,
        &claude(
            &fx,
            "PostToolUse",
            "Edit",
            json!({"file_path": "/etc/hosts", "old_string": "a", "new_string": "b"}),
        ),
    );
    let mut bash = claude(
        &fx,
        "PostToolUse",
        "Bash",
        json!({"command": "cargo test --all \u{1b}[2J"}),
    );
    bash["tool_response"] = json!({"stdout": "ok", "stderr": "", "interrupted": false});
    record(&fx, &bash);
    record(
        &fx,
        &claude(
            &fx,
            "PostToolUse",
            "Read",
            json!({"file_path": "/etc/passwd"}),
        ),
    );
    let progress = fx.listing(&["progress", &run]);
    assert_eq!(progress["finished"], false, "still working: {progress}");
    record(
        &fx,
        &json!({"session_id": "cc-after-1", "cwd": fx.workspace, "hook_event_name": "Stop",
                "stop_hook_active": false}),
    );

    let progress = fx.listing(&["progress", &run]);
    let states: Vec<(&str, &str)> = progress["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["text"].as_str().unwrap(), s["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        [
            ("Add `src/cache.rs` with an LRU.", "done"),
            ("Use it from src/lib.rs.", "not-done-yet"),
            ("Run `cargo test`.", "done"),
            ("Write the docs.", "not-done-yet"),
        ],
        "{progress}"
    );
    assert_eq!(progress["finished"], true);
    assert_eq!(
        files_of(&progress, false, &["path", "planned", "changed"]),
        [
            json!(["src/cache.rs", true, true]),
            json!(["src/lib.rs", true, false]),
            json!(["src/extra.rs", false, true]),
            json!(["/etc/hosts", false, true]),
        ],
        "nothing recorded before the approval; {progress}"
    );
    assert_eq!(progress["files"][3]["outside"], true);
    assert_eq!(
        progress["summary"],
        "2 of 4 steps done, 2 files outside the plan"
    );
    assert_eq!(progress["commands"][0]["planned"], true);

    // A person marks the docs step done by hand: audited, and shown as such.
    let marked = fx.listing(&["mark", &run, "4", "done"]);
    assert_eq!(marked["steps"][3]["state"], "done");
    assert_eq!(marked["steps"][3]["byHand"], true);
    let refused = fx.refused(&["mark", &run, "9", "done"]);
    assert!(refused.contains("has 4 steps"), "{refused}");
    let audit = String::from_utf8(fx.ok(&["--json", "audit", &run]).stdout).unwrap();
    assert!(audit.contains("\"kind\":\"step-marked\""), "{audit}");
    let human = String::from_utf8(fx.ok(&["progress", &run]).stdout).unwrap();
    assert!(human.contains("3 of 4 steps done"), "{human}");
    assert!(human.contains("done (by hand)"), "{human}");
    assert!(
        human.contains("/etc/hosts (outside the workspace)"),
        "{human}"
    );
    eprintln!("{human}");
    // An unplanned file's diff, as the agent reported it (no git here).
    let diff =
        String::from_utf8(fx.ok(&["progress", &run, "--diff", "src/extra.rs"]).stdout).unwrap();
    assert_eq!(diff, "+x\n");
    let none = fx.refused(&["progress", &run, "--diff", "../../etc/passwd"]);
    assert!(none.contains("no diff is known"), "{none}");
    assert!(
        !human.contains('\u{1b}'),
        "no raw escape reaches the terminal"
    );
}

/// What a plan lists under Context or Risks is not counted as work to do, yet keeps its number
/// (a mark names a step by it): the file it names changed does not make a step done.
#[test]
fn items_under_context_and_risks_are_not_counted_as_steps() {
    let fx = Fixture::new(json!([]));
    let plan = "# Add a cache\n\n## Context\n\n- `README.md` says how to build.\n\n\
                ## Steps\n\n1. Add `src/cache.rs`.\n2. Run `cargo test`.\n\n\
                ## Risks\n\n- Stale reads.\n";
    let (hook, run) = plan_waiting(&fx, plan);
    fx.ok(&["approve", &run]);
    hook.wait_with_output().unwrap();
    // A file only the Context names is no planned work: changed, it is outside the plan.
    record(&fx, &write(&fx, "README.md"));
    let progress = fx.listing(&["progress", &run]);
    assert_eq!(
        progress["summary"], "0 of 2 steps done, 1 file outside the plan",
        "{progress}"
    );
    let context: Vec<(u64, bool)> = progress["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["number"].as_u64().unwrap(), s["context"] == true))
        .collect();
    assert_eq!(context, [(1, true), (2, false), (3, false), (4, true)]);
    let marked = fx.listing(&["mark", &run, "2", "done"]);
    assert_eq!(
        marked["summary"],
        "1 of 2 steps done, 1 file outside the plan"
    );
    let refused = fx.refused(&["mark", &run, "1", "done"]);
    assert!(refused.contains("step 1 of revision"), "{refused}");
    assert!(refused.contains("not counted"), "{refused}");
    let human = String::from_utf8(fx.ok(&["progress", &run]).stdout).unwrap();
    assert!(
        human.contains("Not counted as steps: 2 list items under headings such as Context"),
        "{human}"
    );
    assert!(!human.contains("Stale reads"), "{human}");
}

#[test]
fn a_record_hook_that_cannot_record_still_exits_at_once_and_says_why() {
    let fx = Fixture::new(json!([]));
    let stderr = record(&fx, &json!("not a payload"));
    assert!(stderr.contains("nothing recorded"), "{stderr}");
    let stderr = record(
        &fx,
        &json!({"session_id": "x", "cwd": "/", "hook_event_name": "Stop"}),
    );
    assert_eq!(
        stderr, "",
        "a session Plandesk does not know: nothing to say"
    );
}

#[test]
fn an_engine_runs_writes_after_approval_are_held_against_its_plan_with_their_hashes() {
    let write = |id: &str, path: &str| {
        json!({"toolCallId": id, "toolName": "write_file",
               "args": {"path": path, "content": format!("// {path}\n")}})
    };
    let fx = Fixture::new(json!([
        {"toolCalls": [submit("call-1", ".plandesk/plans/cache.md")]},
        {"toolCalls": [write("w1", "src/cache.rs"), write("w2", "src/lib.rs"),
                       write("w3", "notes.txt")]},
        text("Done."),
    ]));
    fx.write(".plandesk/plans/cache.md", PLAN.as_bytes());
    let (run, _) = fx.start(&["--auto-approve"]);
    let before = sha256(b"pub fn answer() -> u32 { 42 }\n");
    fx.stream(&["approve", &run]);

    let progress = fx.listing(&["progress", &run]);
    let states: Vec<&str> = progress["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        ["done", "done", "not-done-yet", "not-done-yet"],
        "{progress}"
    );
    assert_eq!(progress["finished"], true, "the run ended its turn");
    assert_eq!(
        progress["summary"],
        "2 of 4 steps done, 1 file outside the plan"
    );
    let unplanned: Vec<&Value> = progress["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["planned"] == false)
        .collect();
    assert_eq!(unplanned.len(), 1);
    assert_eq!(unplanned[0]["path"], "notes.txt");

    // Each write's hashes before (none for a new file) and after.
    let records = plandesk_work(&fx, &run);
    let lib = records
        .iter()
        .find(|w| w["path"] == "src/lib.rs")
        .expect("src/lib.rs recorded");
    assert_eq!(lib["data"]["before"], before.as_str());
    assert_eq!(lib["data"]["after"], sha256(b"// src/lib.rs\n").as_str());
    let cache = records
        .iter()
        .find(|w| w["path"] == "src/cache.rs")
        .unwrap();
    assert_eq!(cache["data"]["before"], Value::Null, "a new file");
    assert!(
        !records.iter().any(|w| w["path"]
            .as_str()
            .is_some_and(|p| p.starts_with(".plandesk"))),
        "the plan file is no work: {records:?}"
    );
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// The work records of a run's approved revision, from the store itself.
fn plandesk_work(fx: &Fixture, run: &str) -> Vec<Value> {
    block_on(async {
        let store = fx.store.open().await.unwrap();
        let revision = store.approved_revision(run).await.unwrap().unwrap();
        store
            .work(revision)
            .await
            .unwrap()
            .into_iter()
            .map(|w| serde_json::to_value(w).unwrap())
            .collect()
    })
}

#[test]
fn a_plan_answered_in_claude_codes_own_dialog_leaves_the_inbox_and_is_not_decided_here() {
    let fx = Fixture::new(json!([]));
    for (title, went_on) in [
        // Approved there: its tool went on.
        (
            "Approved there",
            json!({"hook_event_name": "PostToolUse", "tool_name": "ExitPlanMode",
                                  "tool_input": {}, "tool_response": {"plan": "x"}}),
        ),
        // Refused there with feedback: the turn ended.
        (
            "Refused there",
            json!({"hook_event_name": "Stop", "stop_hook_active": false}),
        ),
    ] {
        let plan = format!("# {title}\n\n1. Do it.\n");
        let (hook, run) = plan_waiting(&fx, &plan);
        let mut event = went_on;
        event["session_id"] = json!("cc-after-1");
        event["cwd"] = json!(fx.workspace);
        record(&fx, &event);
        assert_eq!(
            fx.listing(&["pending"]),
            json!([]),
            "{title}: out of the inbox"
        );
        let refused = fx.refused(&["approve", &run]);
        assert!(
            refused.contains("answered-in-agent by Claude Code"),
            "{refused}"
        );
        // The hook that still waited ends; Claude Code no longer reads it.
        let out = hook.wait_with_output().unwrap();
        assert!(out.status.success());
        assert!(!String::from_utf8_lossy(&out.stdout).contains("allow"));
        let history = fx.listing(&["history"]);
        let revision = history
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["title"] == title)
            .unwrap();
        assert_eq!(revision["status"], "answered-in-agent", "{history}");
    }
}

/// Runs `script` in the workspace with git's identity set; panics if it fails.
fn sh(fx: &Fixture, script: &str) {
    let ok = std::process::Command::new("sh")
        .args(["-c", script])
        .current_dir(&fx.workspace)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .status()
        .unwrap()
        .success();
    assert!(ok, "{script}");
}

#[test]
fn a_git_workspaces_changes_outside_any_tool_call_are_held_against_the_plan() {
    let fx = Fixture::new(json!([]));
    sh(&fx, "git init -q && git add -A && git commit -qm start");
    // Changed before the plan: not the agent's work.
    sh(&fx, "echo '// wip' >> src/lib.rs && echo draft > notes.md");
    let (hook, run) = plan_waiting(&fx, PLAN);
    fx.ok(&["approve", &run]);
    hook.wait_with_output().unwrap();

    // After the approval, edits no hook reports: a planned file created, an unplanned one
    // changed and committed; notes.md (dirty before) left as it was.
    sh(
        &fx,
        "printf 'a\\nb\\n' > src/cache.rs && echo '// more' >> README.txt && git add README.txt \
         && git commit -qm readme",
    );
    let progress = fx.listing(&["progress", &run]);
    assert_eq!(progress["gitError"], Value::Null, "{progress}");
    assert_eq!(progress["steps"][0]["state"], "done", "{progress}");
    assert_eq!(
        files_of(&progress, true, &["path", "planned", "added", "removed"]),
        [
            json!(["src/cache.rs", true, 2, 0]),
            json!(["README.txt", false, 1, 0]),
        ],
        "{progress}"
    );

    // Its diff, from git: the whole change since the plan was submitted.
    let diff = fx.listing(&["progress", &run, "--diff", "README.txt"]);
    assert_eq!(diff["from"], "git");
    assert!(
        diff["text"].as_str().unwrap().contains("+// more"),
        "{diff}"
    );

    // A git that does not answer is reported, within its time limit, never waited on.
    let bin = fx.root.join("slow-git");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("git"), "#!/bin/sh\nsleep 60\n").unwrap();
    std::process::Command::new("chmod")
        .args(["+x", bin.join("git").to_str().unwrap()])
        .status()
        .unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let started = std::time::Instant::now();
    let out = fx
        .command(&["--json", "progress", &run])
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let progress: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        progress["gitError"]
            .as_str()
            .is_some_and(|e| e.contains("did not answer")),
        "{progress}"
    );
}

#[test]
fn work_after_a_newer_plan_is_not_held_against_the_older_approval() {
    let fx = Fixture::new(json!([]));
    let (first, run) = plan_waiting(&fx, PLAN);
    fx.ok(&["approve", &run]);
    first.wait_with_output().unwrap();
    record(&fx, &write(&fx, "src/cache.rs"));
    let approved = fx.listing(&["history", &run])[0]["id"].as_i64().unwrap();

    // The agent plans again: what it does now is not the first plan's work.
    let (second, _) = plan_waiting(&fx, "# Another plan\n\n1. Touch `src/cache.rs` again.\n");
    record(&fx, &write(&fx, "src/other.rs"));
    let refused = fx.refused(&["progress", &run]);
    assert!(refused.contains("no approved plan yet"), "{refused}");
    let first_work = fx.listing(&["progress", &format!("#{approved}")]);
    assert_eq!(
        files_of(&first_work, true, &["path"]),
        [json!(["src/cache.rs"])],
        "{first_work}"
    );
    fx.ok(&["reject", &run]);
    second.wait_with_output().unwrap();
}

#[test]
fn files_are_held_against_the_runs_workspace_wherever_the_agent_cds() {
    let fx = Fixture::new(json!([]));
    let (hook, run) = plan_waiting(&fx, PLAN);
    fx.ok(&["approve", &run]);
    hook.wait_with_output().unwrap();
    // The agent went into src/: its hooks' cwd follows it.
    let inside = fx.workspace.join("src");
    for named in [inside.join("cache.rs"), fx.workspace.join("README.md")] {
        let mut payload = claude(&fx, "PostToolUse", "Write", json!({"file_path": named}));
        payload["cwd"] = json!(inside);
        record(&fx, &payload);
    }
    let progress = fx.listing(&["progress", &run]);
    assert_eq!(
        files_of(&progress, true, &["path", "planned", "outside"]),
        [
            json!(["src/cache.rs", true, false]),
            json!(["README.md", false, false]),
        ],
        "{progress}"
    );
}

#[test]
fn a_plans_record_of_work_is_bounded() {
    let fx = Fixture::new(json!([]));
    if sqlite_only("a_plans_record_of_work_is_bounded") {
        return;
    }
    let (hook, run) = plan_waiting(&fx, PLAN);
    fx.ok(&["approve", &run]);
    hook.wait_with_output().unwrap();
    record(&fx, &write(&fx, "src/cache.rs"));
    // Fill the plan's record to its bound at once, as a runaway agent would in time.
    let db = rusqlite::Connection::open(fx.data.join("plandesk.db")).unwrap();
    db.execute_batch(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 19999)
         INSERT INTO work (run_id, revision_id, at, kind, path, command, exit_code, data)
         SELECT run_id, revision_id, at, 'command', NULL, 'echo', 0, '{}' FROM work, n",
    )
    .unwrap();
    let stderr = record(&fx, &write(&fx, "src/one-more.rs"));
    assert!(stderr.contains("no more are kept"), "{stderr}");
    let progress = fx.listing(&["progress", &run]);
    assert_eq!(
        files_of(&progress, true, &["path"]),
        [json!(["src/cache.rs"])],
        "{progress}"
    );
}
