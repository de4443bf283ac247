//! Kimi Code's hook on real files: the plan Kimi Code presented found (and nothing followed to
//! it), the answers, the timeout read from its `config.toml`, and what its after-tool hooks
//! record.

use super::*;

const SESSION: &str = "session_5c251d8c-a363-45e7-b9ab-43ed5814550e";

fn payload(tool: &str, session: &str) -> String {
    json!({
        "hook_event_name": "PreToolUse", "session_id": session, "cwd": "/w/proj",
        "client_type": "kimi_code_cli", "tool_name": tool, "tool_input": {},
        "tool_call_id": "call_1",
    })
    .to_string()
}

/// A Kimi Code home with an agent's folder in the session made; returns that folder.
fn agent(home: &Path, agent: &str) -> PathBuf {
    let dir = home
        .join("sessions/wd_proj_d1fe66d34029")
        .join(SESSION)
        .join("agents")
        .join(agent);
    std::fs::create_dir_all(dir.join("plans")).unwrap();
    dir
}

/// Enters plan mode in an agent (folder `dir`) for plan `id`, as Kimi Code records it.
fn enter(dir: &Path, id: &str) {
    log(
        dir,
        json!({"type": "plan_mode.enter", "agentId": "main", "id": id, "time": 1}),
    );
}

fn log(dir: &Path, entry: Value) {
    let mut wire = std::fs::read_to_string(dir.join("wire.jsonl")).unwrap_or_default();
    wire.push_str(&entry.to_string());
    wire.push('\n');
    std::fs::write(dir.join("wire.jsonl"), wire).unwrap();
}

/// Presents plan `id` of an agent (folder `dir`) as Kimi Code does when ExitPlanMode is
/// called: the plan file, and its copy `plan/<id>/v<version>.md`.
fn present(dir: &Path, id: &str, text: &str, version: u32) {
    std::fs::write(dir.join("plans").join(format!("{id}.md")), text).unwrap();
    let copies = dir.join("plan").join(id);
    std::fs::create_dir_all(&copies).unwrap();
    std::fs::write(copies.join(format!("v{version}.md")), text).unwrap();
}

fn unusable(home: &Path, session: &str) -> String {
    match parse(&payload(TOOL, session), Some(home)).unwrap() {
        Call::Unusable(why) => why,
        other => panic!("{other:?}"),
    }
}

/// The plan reviewed is Kimi Code's newest copy of the plan of the agent in plan mode, not a
/// file that is merely newer or an earlier plan mode's.
#[test]
fn the_plan_is_the_copy_kimi_code_made_of_the_agents_plan() {
    let home = tempfile::tempdir().unwrap();
    let main = agent(home.path(), "main");
    enter(&main, "old-hero-slug");
    present(&main, "old-hero-slug", "# Old\n\nfirst plan mode", 1);
    log(&main, json!({"type": "plan_mode.exit", "agentId": "main"}));
    enter(&main, "new-hero-slug");
    present(&main, "new-hero-slug", "# Cache\n\n1. Add a cache", 1);
    present(&main, "new-hero-slug", "# Cache\n\n1. Add an LRU cache", 2);
    let sub = agent(home.path(), "agent-7");
    enter(&sub, "sub-slug");
    present(&sub, "sub-slug", "# Sub", 1);
    log(
        &sub,
        json!({"type": "plan_mode.cancel", "agentId": "agent-7"}),
    );
    // A decoy written later that Kimi Code never presented.
    std::fs::write(main.join("plans/decoy.md"), "# Decoy").unwrap();
    let Call::Review(plan) = parse(&payload(TOOL, SESSION), Some(home.path())).unwrap() else {
        panic!("a plan to review");
    };
    assert_eq!(plan.text, "# Cache\n\n1. Add an LRU cache");
    assert_eq!(plan.source.kind, SourceKind::KimiCode);
    assert_eq!(plan.source.session.as_deref(), Some(SESSION));
    assert_eq!(plan.cwd, "/w/proj");
    assert_eq!(plan.prompt, "Kimi Code session in /w/proj");
    assert!(plan.path.ends_with("agents/main/plans/new-hero-slug.md"));
    let file = plan.file.unwrap();
    assert_eq!(
        (file.root, file.name.as_str()),
        (main.join("plans"), "new-hero-slug.md")
    );
    // Two agents in plan mode at once: whose plan this is cannot be told.
    enter(&sub, "sub-slug-2");
    present(&sub, "sub-slug-2", "# Sub 2", 1);
    assert!(unusable(home.path(), SESSION).contains("More than one agent"));
    // Another tool is let through; another event is refused.
    assert!(matches!(
        parse(&payload("Bash", SESSION), Some(home.path())).unwrap(),
        Call::NotOurs
    ));
    let stop = payload(TOOL, SESSION).replace("PreToolUse", "PostToolUse");
    assert!(parse(&stop, Some(home.path())).is_err());
}

/// The inbox shows what the person typed, from the main agent's log (Kimi Code's `turn.prompt`
/// of a person), even for a subagent's plan: not a reminder Kimi Code added, not what the main
/// agent told its subagent, not the body of a skill, and an image between words leaves the
/// words.
#[test]
fn the_inbox_shows_the_request_the_person_typed() {
    let home = tempfile::tempdir().unwrap();
    let main = agent(home.path(), "main");
    let prompt = |input: Value, origin: Value| {
        json!({"type": "turn.prompt", "agentId": "main", "input": input, "origin": origin,
               "promptId": "msg_01", "turnId": 0, "time": 1})
    };
    log(
        &main,
        prompt(
            json!([{"type": "text", "text": "<system-reminder>plan mode</system-reminder>"}]),
            json!({"kind": "injection"}),
        ),
    );
    log(
        &main,
        prompt(
            json!([{"type": "image_url", "imageUrl": {"url": "kimi-file://f_1"}}]),
            json!({"kind": "user"}),
        ),
    );
    log(
        &main,
        prompt(
            json!([{"type": "text", "text": "SKILL BODY: always test"},
                   {"type": "text", "text": "Plan this from the screenshot "},
                   {"type": "image_url", "imageUrl": {"url": "data:image/png;base64,iVBO"}},
                   {"type": "text", "text": " and\nkeep it small"}]),
            json!({"kind": "user", "skillActivations": [{"name": "tests"}]}),
        ),
    );
    log(
        &main,
        prompt(
            json!([{"type": "text", "text": "Also add tests"}]),
            json!({"kind": "user"}),
        ),
    );
    // A main agent's folder that is a link is not read.
    let linked = home.path().join("linked-main");
    std::fs::rename(&main, &linked).unwrap();
    std::os::unix::fs::symlink(&linked, &main).unwrap();
    let sub = agent(home.path(), "agent-1");
    log(
        &sub,
        prompt(
            json!([{"type": "text", "text": "Plan the cache, as the main agent asks"}]),
            json!({"kind": "system_trigger", "name": "subagent"}),
        ),
    );
    enter(&sub, "sub-slug");
    present(&sub, "sub-slug", "# Cache\n\n1. Add a cache", 1);
    let Call::Review(plan) = parse(&payload(TOOL, SESSION), Some(home.path())).unwrap() else {
        panic!("a plan to review");
    };
    assert_eq!(plan.prompt, "Kimi Code session in /w/proj");
    std::fs::remove_file(&main).unwrap();
    std::fs::rename(&linked, &main).unwrap();
    let Call::Review(plan) = parse(&payload(TOOL, SESSION), Some(home.path())).unwrap() else {
        panic!("a plan to review");
    };
    assert_eq!(
        plan.prompt,
        "Plan this from the screenshot and keep it small"
    );
    // A skill started with its slash command is shown as typed (its input is the skill's body).
    let slash = json!({"type": "turn.prompt", "agentId": "main",
        "input": [{"type": "text", "text": "User activated the skill \"review\". ..."}],
        "origin": {"kind": "skill_activation", "trigger": "user-slash", "skillName": "review",
                   "skillArgs": "the cache"}, "promptId": "p0", "turnId": 0, "time": 0});
    let wire = std::fs::read_to_string(main.join("wire.jsonl")).unwrap();
    std::fs::write(main.join("wire.jsonl"), format!("{slash}\n{wire}")).unwrap();
    let Call::Review(plan) = parse(&payload(TOOL, SESSION), Some(home.path())).unwrap() else {
        panic!("a plan to review");
    };
    assert_eq!(plan.prompt, "/review the cache");
    // With no request typed (or none that can be read), the session and its folder.
    std::fs::write(
        main.join("wire.jsonl"),
        "{\"type\": \"turn.prompt\", \"input\": [{\"ty",
    )
    .unwrap();
    let Call::Review(plan) = parse(&payload(TOOL, SESSION), Some(home.path())).unwrap() else {
        panic!("a plan to review");
    };
    assert_eq!(plan.prompt, "Kimi Code session in /w/proj");
}

#[test]
fn no_plan_mode_no_copy_or_a_file_changed_since_is_denied_with_what_to_do() {
    let home = tempfile::tempdir().unwrap();
    assert!(unusable(home.path(), SESSION).contains("No plan was found"));
    let main = agent(home.path(), "main");
    assert!(unusable(home.path(), SESSION).contains("No plan was found"));
    enter(&main, "hero");
    std::fs::write(main.join("plans/hero.md"), "# Plan").unwrap();
    assert!(unusable(home.path(), SESSION).contains("kept no copy"));
    present(&main, "hero", "  \n", 1);
    assert!(unusable(home.path(), SESSION).contains("complete plan in the plan file"));
    present(&main, "hero", "# Plan\n\n1. Step", 2);
    // Changed after Kimi Code copied it (a background command, say): not reviewed.
    std::fs::write(main.join("plans/hero.md"), "# Plan\n\n1. Something else").unwrap();
    assert!(unusable(home.path(), SESSION).contains("changed after ExitPlanMode was called"));
}

/// Nothing a session or its files name is followed: a session id or a plan id that climbs
/// out, a session or plans folder that is a link, a plan file or log that is a link or a FIFO
/// (it would block).
#[test]
fn the_worst_session_and_plan_files_are_refused_without_blocking() {
    let home = tempfile::tempdir().unwrap();
    for session in ["../../etc", "", ".", "a/b", "x\0y"] {
        assert!(
            parse(&payload(TOOL, session), Some(home.path())).is_err(),
            "{session:?}"
        );
    }
    let main = agent(home.path(), "main");
    enter(&main, "../../../outside");
    assert!(parse(&payload(TOOL, SESSION), Some(home.path())).is_err());
    std::fs::remove_file(main.join("wire.jsonl")).unwrap();

    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.md"), "# Secret").unwrap();
    enter(&main, "link");
    present(&main, "link", "# Secret", 1);
    std::fs::remove_file(main.join("plans/link.md")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.md"), main.join("plans/link.md"))
        .unwrap();
    assert!(unusable(home.path(), SESSION).contains("Write the plan again"));
    // A FIFO where the plan is: refused, not read.
    enter(&main, "fifo");
    present(&main, "fifo", "# F", 1);
    std::fs::remove_file(main.join("plans/fifo.md")).unwrap();
    let mkfifo = |path: PathBuf| {
        assert!(std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap()
            .success())
    };
    mkfifo(main.join("plans/fifo.md"));
    let started = std::time::Instant::now();
    assert!(unusable(home.path(), SESSION).contains("Write the plan again"));
    assert!(started.elapsed() < Duration::from_secs(5));
    // A plans folder that is a link.
    let elsewhere = tempfile::tempdir().unwrap();
    enter(&main, "moved");
    present(&main, "moved", "# Moved", 1);
    std::fs::rename(main.join("plans"), elsewhere.path().join("plans")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path().join("plans"), main.join("plans")).unwrap();
    assert!(unusable(home.path(), SESSION).contains("kept no copy"));
    // A log that is a FIFO is an error, not passed over for another agent's.
    let sub = agent(home.path(), "agent-2");
    mkfifo(sub.join("wire.jsonl"));
    let started = std::time::Instant::now();
    assert!(parse(&payload(TOOL, SESSION), Some(home.path())).is_err());
    assert!(started.elapsed() < Duration::from_secs(5));
    // A session folder that is a link to another's is not followed.
    let other = tempfile::tempdir().unwrap();
    let linked = "session_linked";
    let theirs = other.path().join("agents/main");
    std::fs::create_dir_all(theirs.join("plans")).unwrap();
    enter(&theirs, "p");
    present(&theirs, "p", "# P", 1);
    std::os::unix::fs::symlink(
        other.path(),
        home.path()
            .join("sessions/wd_proj_d1fe66d34029")
            .join(linked),
    )
    .unwrap();
    assert!(unusable(home.path(), linked).contains("No plan was found"));
    // A sessions folder that is a link (to another disk, say) is not followed, and the error
    // says so rather than that there is no plan.
    let moved = tempfile::tempdir().unwrap();
    let linked_home = tempfile::tempdir().unwrap();
    let main = agent(moved.path(), "main");
    enter(&main, "p");
    present(&main, "p", "# P", 1);
    std::os::unix::fs::symlink(
        moved.path().join("sessions"),
        linked_home.path().join("sessions"),
    )
    .unwrap();
    let err = parse(&payload(TOOL, SESSION), Some(linked_home.path()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("is a symbolic link"), "{err}");
}

#[test]
fn a_deny_carries_its_reason_and_exits_2_an_allow_exits_0() {
    let denied = answer(&Answer::Revise("Measure first".into()));
    let value: Value = serde_json::from_str(&denied).unwrap();
    assert_eq!(value["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    assert_eq!(value["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(value["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .contains("Measure first"));
    assert_eq!(exit_status(&denied), 2);
    let allowed = answer(&Answer::Approve(Default::default()));
    assert_eq!(
        serde_json::from_str::<Value>(&allowed).unwrap()["hookSpecificOutput"]
            ["permissionDecision"],
        "allow"
    );
    assert_eq!(exit_status(&allowed), 0);
    assert_eq!(exit_status(&failure(&SourceError::Stopped)), 2);
}

#[test]
fn the_timeout_is_the_shortest_of_the_config_tomls_plan_hooks() {
    let home = tempfile::tempdir().unwrap();
    let env = |name: &str| match name {
        "KIMI_CODE_HOME" => Some(home.path().as_os_str().to_owned()),
        _ => None,
    };
    assert_eq!(hook_timeout(env), DEFAULT_TIMEOUT, "no config");
    let config = r#"
default_plan_mode = true

[[hooks]]
event = "PreToolUse"
matcher = "^ExitPlanMode$"
command = "'/opt/Plan Desk/plandesk' hook kimi-code"
timeout = 600

[[hooks]]
event = "PreToolUse"
command = "/usr/bin/plandesk --data-dir /d hook kimi-code"
timeout = 120

[[hooks]]
event = "PostToolUse"
command = "/usr/bin/plandesk record kimi-code"
timeout = 5

[[hooks]]
event = "PreToolUse"
command = "other-tool hook claude-code"
timeout = 1
"#;
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    assert_eq!(hook_timeout(env), Duration::from_secs(120));
    let float = config.replace("timeout = 120\n", "timeout = 45.0\n");
    std::fs::write(home.path().join("config.toml"), float).unwrap();
    assert_eq!(
        hook_timeout(env),
        Duration::from_secs(45),
        "a whole float, as Kimi Code reads it"
    );
    let unset = config.replace("timeout = 120\n", "");
    std::fs::write(home.path().join("config.toml"), unset).unwrap();
    assert_eq!(
        hook_timeout(env),
        DEFAULT_TIMEOUT,
        "an entry without one: 30 s"
    );
    std::fs::write(home.path().join("config.toml"), "not = [toml").unwrap();
    assert_eq!(hook_timeout(env), DEFAULT_TIMEOUT);
}

#[test]
fn after_tool_hooks_record_files_commands_and_the_end_of_a_turn() {
    let home = Path::new("/home/u/.kimi-code");
    let event = |event: &str, tool: &str, input: Value, extra: Value| {
        let mut payload = json!({
            "hook_event_name": event, "session_id": SESSION, "cwd": "/w/proj",
            "client_type": "kimi_code_cli", "tool_name": tool, "tool_input": input,
            "tool_call_id": "call_2",
        });
        payload
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        report(&payload.to_string(), Some(home)).unwrap()
    };
    let wrote = event(
        "PostToolUse",
        "Write",
        json!({"path": "/w/proj/src/b.rs", "content": "b"}),
        json!({"tool_output": "Wrote 1 bytes to /w/proj/src/b.rs"}),
    )
    .unwrap();
    let work = wrote.work.unwrap();
    assert_eq!(work.kind, crate::store::WorkKind::File);
    assert_eq!(work.path.as_deref(), Some("/w/proj/src/b.rs"));
    assert!(!wrote.answered);
    let plan_file = event("PostToolUse", "Write",
        json!({"path": "/home/u/.kimi-code/sessions/wd/s/agents/main/plans/p.md", "content": "# P"}),
        json!({})).unwrap();
    assert_eq!(plan_file.work, None, "a plan file is no work");
    let ran = event(
        "PostToolUse",
        "Bash",
        json!({"command": "cargo test"}),
        json!({"tool_output": "ok"}),
    )
    .unwrap()
    .work
    .unwrap();
    assert_eq!(
        (ran.command.as_deref(), ran.exit_code),
        (Some("cargo test"), Some(0))
    );
    let failed = event("PostToolUseFailure", "Bash", json!({"command": "exit 3"}),
        json!({"error": {"code": "internal", "message": "oops\nCommand failed with exit code: 3.", "retryable": false}}))
        .unwrap().work.unwrap();
    assert_eq!(failed.exit_code, Some(3));
    let approved = event(
        "PostToolUse",
        "ExitPlanMode",
        json!({}),
        json!({"tool_output": "Exited plan mode."}),
    )
    .unwrap();
    assert!(approved.answered && approved.work.is_none());
    let stop = event("Stop", "", json!(null), json!({"stop_hook_active": false})).unwrap();
    assert!(stop.answered);
    assert_eq!(stop.work.unwrap().kind, crate::store::WorkKind::Finished);
    assert_eq!(event("SessionStart", "", json!(null), json!({})), None);
}
