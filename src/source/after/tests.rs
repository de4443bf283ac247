//! The after-tool hooks' payloads as the real CLIs send them, and the paths they name.

use super::*;

fn payload(event: &str, tool: &str, input: Value, response: Value) -> String {
    json!({"session_id": "s1", "transcript_path": "/t.jsonl", "cwd": "/home/u/proj",
           "hook_event_name": event, "tool_name": tool, "tool_input": input,
           "tool_response": response})
    .to_string()
}

#[test]
fn files_commands_and_the_end_of_a_turn_are_reported() {
    let write = claude(&payload(
        "PostToolUse",
        "Write",
        json!({"file_path": "/home/u/proj/src/a.rs", "content": "x"}),
        json!({}),
    ))
    .unwrap()
    .unwrap()
    .work
    .unwrap();
    assert_eq!(write.kind, WorkKind::File);
    // Kept absolute: progress reads it against the run's workspace.
    assert_eq!(write.path.as_deref(), Some("/home/u/proj/src/a.rs"));
    assert_eq!(write.data["outside"], false);
    let edit = claude(&payload(
        "PostToolUse",
        "Edit",
        json!({"file_path": "/home/u/proj/src/a.rs"}),
        json!({"structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1,
                                    "newLines": 1, "lines": ["-a", "+b"]}]}),
    ))
    .unwrap()
    .unwrap()
    .work
    .unwrap();
    assert_eq!(edit.data["diff"], "@@ -1,1 +1,1 @@\n-a\n+b\n");
    let bash = claude(&payload(
        "PostToolUse",
        "Bash",
        json!({"command": " cargo test "}),
        json!({"stdout": "", "interrupted": false}),
    ))
    .unwrap()
    .unwrap()
    .work
    .unwrap();
    assert_eq!(
        (bash.command.as_deref(), bash.exit_code),
        (Some("cargo test"), Some(0))
    );
    let mut failed: Value = serde_json::from_str(&payload(
        "PostToolUseFailure",
        "Bash",
        json!({"command": "exit 3"}),
        Value::Null,
    ))
    .unwrap();
    failed["error"] = json!("Exit code 3\noops");
    let failed = claude(&failed.to_string()).unwrap().unwrap().work.unwrap();
    assert_eq!(failed.exit_code, Some(3));
    // The plan's own tool gone on: nothing to record, but the session is heard from.
    let plan = claude(&payload(
        "PostToolUse",
        "ExitPlanMode",
        json!({}),
        json!({"plan": "x"}),
    ))
    .unwrap()
    .unwrap();
    assert_eq!(plan.work, None);
    assert!(plan.answered);
    assert!(!failed_answered(), "another tool answers nothing");
    assert_eq!(plan.source.session.as_deref(), Some("s1"));
    let stop = claude(
        &json!({"session_id": "s1", "cwd": "/p", "hook_event_name": "Stop",
                              "stop_hook_active": false})
        .to_string(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(stop.work.unwrap().kind, WorkKind::Finished);
    assert!(stop.answered);
    let read = claude(&payload(
        "PostToolUse",
        "Read",
        json!({"file_path": "/x"}),
        json!({}),
    ));
    assert_eq!(read.unwrap().unwrap().work, None);
    let other = claude(&payload("SessionStart", "", json!({}), json!({})));
    assert_eq!(other.unwrap(), None);
    assert!(claude("{not json").is_err());
}

fn failed_answered() -> bool {
    claude(&payload(
        "PostToolUse",
        "Bash",
        json!({"command": "ls"}),
        json!({}),
    ))
    .unwrap()
    .unwrap()
    .answered
}

#[test]
fn gemini_and_codex_report_files_commands_and_their_turns_end() {
    let gemini_payload = |event: &str, tool: &str, input: Value, response: Value| {
        json!({"session_id": "g1", "transcript_path": "/t", "cwd": "/w", "timestamp": "x",
               "hook_event_name": event, "tool_name": tool, "tool_input": input,
               "tool_response": response})
        .to_string()
    };
    let written = gemini(&gemini_payload(
        "AfterTool",
        "write_file",
        json!({"file_path": "src/rel.txt", "content": "x"}),
        json!({"llmContent": "ok", "returnDisplay": {"filePath": "/w/src/rel.txt", "isNewFile": true}}),
    ))
    .unwrap()
    .unwrap();
    assert_eq!(
        written.work.unwrap().path.as_deref(),
        Some("/w/src/rel.txt")
    );
    let shell = |content: &str| {
        gemini(&gemini_payload(
            "AfterTool",
            "run_shell_command",
            json!({"command": "make"}),
            json!({"llmContent": content, "returnDisplay": ""}),
        ))
        .unwrap()
        .unwrap()
        .work
        .unwrap()
        .exit_code
    };
    assert_eq!(
        shell("<untrusted_context>\nOutput: ok\nProcess Group PGID: 1\n"),
        Some(0)
    );
    assert_eq!(
        shell("Output: failing\nExit Code: 3\nProcess Group PGID: 1"),
        Some(3)
    );
    let refused = gemini(&gemini_payload(
        "AfterTool",
        "replace",
        json!({"file_path": "a"}),
        json!({"error": {"message": "no match", "type": "edit_no_occurrence_found"}}),
    ));
    assert_eq!(
        refused.unwrap().unwrap().work,
        None,
        "a failed edit changed nothing"
    );
    let end = gemini(&gemini_payload("AfterAgent", "", json!({}), json!({})))
        .unwrap()
        .unwrap();
    assert!(end.answered);
    assert_eq!(end.work.unwrap().kind, WorkKind::Finished);

    let patch = "*** Begin Patch\n*** Add File: src/new.txt\n+hello\n*** Update File: src/fetch.js\n\
                 *** Move to: src/get.js\n@@\n-a\n+b\n*** Delete File: ../../etc/x\n*** End Patch\n";
    let codex_payload = json!({"session_id": "c1", "turn_id": "t", "cwd": "/w",
        "hook_event_name": "PostToolUse", "tool_name": "apply_patch",
        "tool_input": {"command": patch}, "tool_response": "Exit code: 0"})
    .to_string();
    let files: Vec<(String, Value)> = codex(&codex_payload)
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|r| {
            let work = r.work.unwrap();
            (work.path.unwrap(), work.data["outside"].clone())
        })
        .collect();
    assert_eq!(
        files,
        [
            ("/w/src/new.txt".into(), json!(false)),
            ("/w/src/fetch.js".into(), json!(false)),
            ("/w/src/get.js".into(), json!(false)),
            ("/etc/x".into(), json!(true)),
        ]
    );
}

#[test]
fn paths_outside_the_workspace_are_kept_as_such_and_never_resolved() {
    let file = workspace_path;
    assert_eq!(
        file("/home/u/proj", "/home/u/proj/../other/x.rs"),
        Some(("/home/u/other/x.rs".into(), true))
    );
    assert_eq!(
        file("/home/u/proj", "/etc/passwd"),
        Some(("/etc/passwd".into(), true))
    );
    assert_eq!(
        file("/home/u/proj", "lib/./b.rs"),
        Some(("lib/b.rs".into(), false))
    );
    assert_eq!(file("/home/u/proj", "a\u{1b}[2J.rs"), None);
    assert_eq!(file("/home/u/proj", &"a".repeat(MAX_PATH + 1)), None);
    assert_eq!(
        file("/home/u/proj", "/home/u/proj"),
        Some(("/home/u/proj".into(), true))
    );
}

#[test]
fn qwen_code_reports_files_commands_its_own_dialogs_answer_and_its_turns_end() {
    let report = |event: &str, tool: &str, input: Value, extra: Value| {
        let mut payload: Value =
            serde_json::from_str(&payload(event, tool, input, json!({}))).unwrap();
        for (key, value) in extra.as_object().unwrap() {
            payload[key] = value.clone();
        }
        qwen(&payload.to_string()).unwrap().unwrap()
    };
    let edited = report(
        "PostToolUse",
        "edit",
        json!({"file_path": "/home/u/proj/src/fetch.js", "old_string": "a", "new_string": "b"}),
        json!({"tool_response": {"llmContent": "updated", "returnDisplay": {
            "fileDiff": "Index: fetch.js\n-a\n+b\n", "filePath": "/home/u/proj/src/fetch.js"}}}),
    );
    assert_eq!(edited.source.kind, SourceKind::QwenCode);
    assert!(!edited.answered);
    let work = edited.work.unwrap();
    assert_eq!(work.path.as_deref(), Some("/home/u/proj/src/fetch.js"));
    assert!(work.data["diff"].as_str().unwrap().contains("+b"));
    let ran = report(
        "PostToolUse",
        "run_shell_command",
        json!({"command": "echo cached"}),
        json!({"tool_response": {"llmContent": "Command: echo cached\nOutput: cached\nExit Code: 0\n"}}),
    );
    assert_eq!(ran.work.unwrap().exit_code, Some(0));
    let failed = report(
        "PostToolUseFailure",
        "run_shell_command",
        json!({"command": "exit 3"}),
        json!({"error": "Command: exit 3\nOutput: \nExit Code: 3\nSignal: (none)", "is_interrupt": false}),
    );
    assert_eq!(failed.work.unwrap().exit_code, Some(3));
    let approved_there = report(
        "PostToolUse",
        "exit_plan_mode",
        json!({"plan": "# P"}),
        json!({"tool_response": {"llmContent": "User approved. You can now start coding."}}),
    );
    assert!(approved_there.answered, "approved in Qwen Code's dialog");
    assert_eq!(approved_there.work, None);
    let end = report("Stop", "", json!({}), json!({"stop_hook_active": false}));
    assert!(end.answered);
    assert_eq!(end.work.unwrap().kind, WorkKind::Finished);
    let other =
        json!({"session_id": "s", "cwd": "/", "hook_event_name": "SessionEnd", "reason": "x"});
    assert!(qwen(&other.to_string()).unwrap().is_none());
}

#[test]
fn droid_reports_files_commands_its_own_dialogs_answer_and_its_turns_end() {
    let report = |event: &str, tool: &str, input: Value, response: Value| {
        droid(&payload(event, tool, input, response))
            .unwrap()
            .unwrap()
    };
    let created = report(
        "PostToolUse",
        "Create",
        json!({"file_path": "src/cache.js", "content": "x"}),
        json!("{\"success\":true,\"file_path\":\"/home/u/proj/src/cache.js\"}"),
    );
    assert_eq!(created.source.kind, SourceKind::Droid);
    assert_eq!(
        created.work.unwrap().path.as_deref(),
        Some("/home/u/proj/src/cache.js")
    );
    let relative = report(
        "PostToolUse",
        "Edit",
        json!({"file_path": "src/fetch.js", "old_str": "a", "new_str": "b"}),
        json!("not json"),
    );
    assert_eq!(
        relative.work.unwrap().path.as_deref(),
        Some("/home/u/proj/src/fetch.js"),
        "the path the model wrote, read against the workspace"
    );
    let ran = |output: &str| {
        report(
            "PostToolUse",
            "Execute",
            json!({"command": "make test", "riskLevel": "low"}),
            json!(output),
        )
        .work
        .unwrap()
        .exit_code
    };
    assert_eq!(ran("ok\nerr\n\n\n[Process exited with code 0]"), Some(0));
    assert_eq!(ran("x\n[Process exited with code 7]\n"), Some(7));
    assert_eq!(ran("no status line"), None);
    let approved_there = report(
        "PostToolUse",
        "ExitSpecMode",
        json!({"title": "T", "plan": "p"}),
        json!("{\"approved\":true}"),
    );
    assert!(approved_there.answered);
    assert_eq!(approved_there.work, None);
    let end = report("Stop", "", json!({}), json!(null));
    assert!(end.answered);
    let other = json!({"session_id": "s", "cwd": "/", "hook_event_name": "SessionEnd"});
    assert!(droid(&other.to_string()).unwrap().is_none());
}

#[test]
fn copilot_reports_files_commands_its_own_menus_answer_and_its_turns_end() {
    let used = |tool: &str, args: Value, text: &str| {
        let payload = json!({"sessionId": "7720", "timestamp": 1, "cwd": "/w", "toolName": tool,
            "toolArgs": args, "toolResult": {"resultType": "success", "textResultForLlm": text}});
        copilot(&payload.to_string()).unwrap().unwrap()
    };
    let created = used(
        "create",
        json!({"path": "/w/src/cache.js", "file_text": "x"}),
        "Created file",
    );
    assert_eq!(created.source.kind, SourceKind::Copilot);
    assert_eq!(created.source.session.as_deref(), Some("7720"));
    assert_eq!(
        created.work.unwrap().path.as_deref(),
        Some("/w/src/cache.js")
    );
    let ran = |text: &str| {
        used("bash", json!({"command": "ls x", "description": "d"}), text)
            .work
            .unwrap()
            .exit_code
    };
    assert_eq!(
        ran("cached\n<shellId: 0 completed with exit code 0>"),
        Some(0)
    );
    assert_eq!(
        ran("ls: no\n<shellId: 1 completed with exit code 2>\n"),
        Some(2)
    );
    assert_eq!(ran("still running"), None);
    let approved_there = used("exit_plan_mode", json!({"summary": "s"}), "Plan approved!");
    assert!(approved_there.answered);
    assert_eq!(approved_there.work, None);
    let stop = json!({"sessionId": "7720", "cwd": "/w", "transcriptPath": "/t",
                      "stopReason": "end_turn", "stop_hook_active": false});
    let end = copilot(&stop.to_string()).unwrap().unwrap();
    assert!(end.answered);
    assert_eq!(end.work.unwrap().kind, WorkKind::Finished);
    let failed = json!({"sessionId": "7720", "cwd": "/w", "toolName": "view",
                        "toolArgs": {"path": "/w/x"}, "error": "Path does not exist"});
    assert!(copilot(&failed.to_string()).unwrap().is_none());
    assert!(copilot("{}").is_err());
}

#[test]
fn opencodes_plugin_reports_files_commands_and_the_idle_session() {
    let reports = |payload: Value| plugin(&payload.to_string(), SourceKind::OpenCode).unwrap();
    let report = |payload: Value| reports(payload).map(|mut r| r.remove(0));
    let wrote = report(json!({"session_id": "ses_1", "cwd": "/w", "tool": "write",
        "args": {"filePath": "/w/src/cache.js", "content": "x"}, "output": ""}))
    .unwrap();
    let patched: Vec<String> = reports(json!({"session_id": "ses_1", "cwd": "/w", "tool": "apply_patch",
        "args": {"patchText": "*** Begin Patch\n*** Add File: src/a.js\n+x\n*** Update File: src/b.js\n@@\n-a\n+b\n*** End Patch"}}))
    .unwrap()
    .into_iter()
    .map(|r| r.work.unwrap().path.unwrap())
    .collect();
    assert_eq!(patched, ["/w/src/a.js", "/w/src/b.js"]);
    assert_eq!(wrote.source.kind, SourceKind::OpenCode);
    assert_eq!(wrote.work.unwrap().path.as_deref(), Some("/w/src/cache.js"));
    let ran = report(json!({"session_id": "ses_1", "cwd": "/w", "tool": "bash",
        "args": {"command": "npm test"}, "output": "ok", "exit_code": 1}))
    .unwrap();
    assert_eq!(ran.work.unwrap().exit_code, Some(1));
    let idle = report(json!({"session_id": "ses_1", "cwd": "/w", "event": "idle"})).unwrap();
    assert!(idle.answered);
    assert_eq!(idle.work.unwrap().kind, WorkKind::Finished);
    assert!(report(json!({"session_id": "s", "cwd": "/w", "tool": "read", "args": {}})).is_none());
    assert!(plugin("{}", SourceKind::OpenCode).is_err());
    let kilo = plugin(
        &json!({"session_id": "ses_2", "cwd": "/w", "event": "idle"}).to_string(),
        SourceKind::Kilo,
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        kilo[0].source.kind,
        SourceKind::Kilo,
        "Kilo CLI runs the same plugin"
    );
}
