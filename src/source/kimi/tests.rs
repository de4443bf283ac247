//! Kimi Code's hook on real files: the session's plan file found (and nothing followed to
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

/// A Kimi Code home with the session's `plans` folder made; returns that folder.
fn plans(home: &Path, agent: &str) -> PathBuf {
    let dir = home
        .join("sessions/wd_proj_d1fe66d34029")
        .join(SESSION)
        .join("agents")
        .join(agent)
        .join("plans");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn set_mtime(path: &Path, secs_ago: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
        .unwrap();
}

#[test]
fn the_plan_is_the_sessions_newest_plan_file() {
    let home = tempfile::tempdir().unwrap();
    let dir = plans(home.path(), "main");
    std::fs::write(dir.join("old-hero-slug.md"), "# Old\n\nfirst plan mode").unwrap();
    set_mtime(&dir.join("old-hero-slug.md"), 60);
    std::fs::write(dir.join("new-hero-slug.md"), "# Cache\n\n1. Add a cache").unwrap();
    std::fs::write(dir.join("notes.txt"), "not a plan").unwrap();
    let Call::Review(plan) = parse(&payload(TOOL, SESSION), Some(home.path())).unwrap() else {
        panic!("a plan to review");
    };
    assert_eq!(plan.text, "# Cache\n\n1. Add a cache");
    assert_eq!(plan.source.kind, SourceKind::KimiCode);
    assert_eq!(plan.source.session.as_deref(), Some(SESSION));
    assert_eq!(plan.cwd, "/w/proj");
    assert_eq!(plan.prompt, "Kimi Code session in /w/proj");
    assert!(plan.path.ends_with("agents/main/plans/new-hero-slug.md"));
    // Another tool is let through; another event is refused.
    assert!(matches!(
        parse(&payload("Bash", SESSION), Some(home.path())).unwrap(),
        Call::NotOurs
    ));
    let stop = payload(TOOL, SESSION).replace("PreToolUse", "PostToolUse");
    assert!(parse(&stop, Some(home.path())).is_err());
}

#[test]
fn no_plan_written_is_denied_with_what_to_do() {
    let home = tempfile::tempdir().unwrap();
    let unwritten = |home: &Path| match parse(&payload(TOOL, SESSION), Some(home)).unwrap() {
        Call::Unusable(why) => why,
        other => panic!("{other:?}"),
    };
    assert!(unwritten(home.path()).contains("No plan file was found"));
    let dir = plans(home.path(), "main");
    assert!(unwritten(home.path()).contains("No plan file was found"));
    std::fs::write(dir.join("hero.md"), "  \n").unwrap();
    assert!(unwritten(home.path()).contains("in the plan file"));
}

/// Nothing a session or its files name is followed: a session id that climbs out, a session
/// folder or plan that is a link, a FIFO where the plan should be (it would block).
#[test]
fn the_worst_session_and_plan_files_are_refused_without_blocking() {
    let home = tempfile::tempdir().unwrap();
    for session in ["../../etc", "", ".", "a/b", "x\0y"] {
        assert!(
            parse(&payload(TOOL, session), Some(home.path())).is_err(),
            "{session:?}"
        );
    }
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.md"), "# Secret").unwrap();
    let dir = plans(home.path(), "main");
    std::os::unix::fs::symlink(outside.path().join("secret.md"), dir.join("link.md")).unwrap();
    assert!(matches!(
        parse(&payload(TOOL, SESSION), Some(home.path())).unwrap(),
        Call::Unusable(_)
    ));
    // A FIFO is the newest "plan": refused, not read.
    let fifo = dir.join("fifo.md");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let started = std::time::Instant::now();
    assert!(matches!(
        parse(&payload(TOOL, SESSION), Some(home.path())).unwrap(),
        Call::Unusable(_)
    ));
    assert!(started.elapsed() < Duration::from_secs(5));
    // A session folder that is a link to another's is not followed.
    let other = tempfile::tempdir().unwrap();
    let linked = "session_linked";
    std::fs::create_dir_all(other.path().join("agents/main/plans")).unwrap();
    std::fs::write(other.path().join("agents/main/plans/p.md"), "# P").unwrap();
    std::os::unix::fs::symlink(
        other.path(),
        home.path()
            .join("sessions/wd_proj_d1fe66d34029")
            .join(linked),
    )
    .unwrap();
    assert!(matches!(
        parse(&payload(TOOL, linked), Some(home.path())).unwrap(),
        Call::Unusable(_)
    ));
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
