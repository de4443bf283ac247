//! The core loop: submit, suspend, approve or reject, resume.

use serde_json::json;

use crate::support::*;

const APPROVED: &str = "Plan approved. Proceed with implementation following the approved plan.";

#[test]
fn approve_resumes_in_build_mode_with_the_contract_result() {
    let fx =
        Fixture::new(json!([{"toolCalls": [submit("call-1", PLAN)]}, text("Implementing now.")]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (run, first) = fx.start(&[]);
    assert_eq!(
        types(&first),
        ["start", "step-start", "tool-call", "tool-call-suspended"],
        "a new run that suspends ends right after tool-call-suspended"
    );
    assert_eq!(first[0]["payload"]["id"], "plandesk");
    assert_eq!(first[0]["from"], "AGENT");
    let suspended = &first[3]["payload"];
    assert_eq!(
        suspended["suspendPayload"],
        json!({"toolId": "submit_plan", "path": PLAN, "title": "Add a cache", "plan": "Use an LRU cache in front of the store.\n\n1. Measure\n2. Cache"})
    );
    let schema: serde_json::Value =
        serde_json::from_str(suspended["resumeSchema"].as_str().unwrap()).unwrap();
    assert_eq!(
        schema["properties"]["action"]["enum"],
        json!(["approved", "rejected"])
    );

    let pending = fx.listing(&["pending"]);
    assert_eq!(pending.as_array().unwrap().len(), 1);
    let sha = pending[0]["revision"]["sha256"]
        .as_str()
        .unwrap()
        .to_owned();

    let resumed = fx.stream(&["approve", &run, "--revision", &sha[..10]]);
    assert_eq!(
        types(&resumed),
        [
            "tool-result",
            "step-finish",
            "step-start",
            "text-start",
            "text-delta",
            "text-delta",
            "text-end",
            "step-finish",
            "finish"
        ],
        "a resumed stream has no start"
    );
    assert_eq!(
        resumed[0]["payload"]["result"],
        json!({"toolId": "submit_plan", "content": APPROVED, "isError": false,
               "submittedPlan": {"title": "Add a cache", "path": PLAN, "plan": "Use an LRU cache in front of the store.\n\n1. Measure\n2. Cache"}})
    );
    assert_eq!(
        resumed[1]["payload"]["stepResult"],
        json!({"reason": "tool-calls", "isContinued": true})
    );
    assert_eq!(
        resumed[7]["payload"]["stepResult"],
        json!({"reason": "stop", "isContinued": false})
    );
    assert_eq!(resumed[8]["payload"]["output"]["text"], "Implementing now.");

    let calls = fx.model_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[0]["tools"],
        json!(["read_file", "list_files", "write_file", "submit_plan"])
    );
    assert_eq!(
        calls[1]["tools"],
        json!(["read_file", "list_files", "write_file"]),
        "approval switches to build mode before the model is called again"
    );
    assert_eq!(
        tool_message(&calls[1], "call-1")["result"],
        resumed[0]["payload"]["result"],
        "the model sees the whole result object"
    );
    let runs = fx.listing(&["runs"]);
    assert_eq!(
        (runs[0]["status"].as_str(), runs[0]["mode"].as_str()),
        (Some("finished"), Some("build"))
    );
    assert_eq!(fx.listing(&["pending"]), json!([]));
}

#[test]
fn approval_notes_follow_the_contract_text() {
    let fx = Fixture::new(json!([{"toolCalls": [submit("call-1", PLAN)]}, text("ok")]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (run, _) = fx.start(&[]);
    let resumed = fx.stream(&["approve", &run, "--note", "Skip the metrics step"]);
    let content = format!("{APPROVED}\n\nReviewer notes: Skip the metrics step");
    assert_eq!(resumed[0]["payload"]["result"]["content"], content);
    let calls = fx.model_calls();
    assert_eq!(
        tool_message(&calls[1], "call-1")["result"]["content"],
        content,
        "the model reads the notes after the approval"
    );
    let audit = fx.stream(&["audit", &run]);
    let decided = audit.iter().find(|e| e["kind"] == "decided").unwrap();
    let answer: serde_json::Value =
        serde_json::from_str(decided["data"]["answer"].as_str().unwrap()).unwrap();
    assert_eq!(answer["content"], content, "the audit has the exact text");

    // A blank note is no note: the result stays exactly the contract's text.
    let fx = Fixture::new(json!([{"toolCalls": [submit("call-1", PLAN)]}, text("ok")]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (run, _) = fx.start(&[]);
    let resumed = fx.stream(&["approve", &run, "--note", "  "]);
    assert_eq!(resumed[0]["payload"]["result"]["content"], APPROVED);
}

#[test]
fn reject_with_feedback_gets_a_revised_submission() {
    let fx = Fixture::new(json!([
        {"toolCalls": [submit("call-1", PLAN)]},
        {"text": "Revising.", "toolCalls": [
            {"toolCallId": "call-2", "toolName": "write_file", "args": {"path": PLAN, "content": "# Add a cache\n\nUse a TTL cache.\n"}},
            submit("call-3", PLAN)
        ]},
        text("ok")
    ]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (run, _) = fx.start(&[]);
    let resumed = fx.stream(&["reject", &run, "--feedback", "Use a TTL, not LRU"]);
    assert_eq!(
        types(&resumed),
        [
            "tool-result",
            "step-finish",
            "step-start",
            "text-start",
            "text-delta",
            "text-end",
            "tool-call",
            "tool-call",
            "tool-call-suspended"
        ]
    );
    let result = &resumed[0]["payload"]["result"];
    assert_eq!(
        result["content"],
        "Plan was not approved. The user wants revisions.\n\nUser feedback: Use a TTL, not LRU\n\nPlease revise the plan based on the feedback and submit again with submit_plan."
    );
    assert_eq!(result["submittedPlan"]["feedback"], "Use a TTL, not LRU");
    assert_eq!(result["isError"], false);
    assert_eq!(
        resumed[8]["payload"]["suspendPayload"]["plan"],
        "Use a TTL cache."
    );
    let calls = fx.model_calls();
    assert_eq!(tool_message(&calls[1], "call-1")["result"], *result);

    let history = fx.listing(&["history", &run]);
    let revs = history.as_array().unwrap();
    assert_eq!(revs.len(), 2, "history is never overwritten");
    assert_eq!(
        (
            revs[0]["revisionNo"].as_i64(),
            revs[1]["revisionNo"].as_i64()
        ),
        (Some(1), Some(2))
    );
    assert_eq!(revs[0]["decision"]["action"], "rejected");
    assert_eq!(revs[0]["decision"]["feedback"], "Use a TTL, not LRU");
    assert!(revs[1]["decision"].is_null());
    assert_eq!(
        revs[0]["body"], "Use an LRU cache in front of the store.\n\n1. Measure\n2. Cache",
        "the first revision keeps its own text"
    );

    let diff = fx.listing(&[
        "diff",
        &revs[0]["id"].to_string(),
        &revs[1]["id"].to_string(),
    ]);
    assert!(diff["diff"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["kind"] != "equal"));
}

#[test]
fn reject_without_feedback_stops_until_the_next_message() {
    let fx = Fixture::new(
        json!([{"toolCalls": [submit("call-1", PLAN)]}, {"toolCalls": [submit("call-2", PLAN)]}]),
    );
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (run, _) = fx.start(&[]);
    let resumed = fx.stream(&["reject", &run]);
    assert_eq!(
        types(&resumed),
        ["tool-result", "step-finish", "finish"],
        "(ours) the model is not called again"
    );
    assert_eq!(
        resumed[0]["payload"]["result"]["content"],
        "Plan was not approved. The user will send revision instructions in their next message. Stop now and wait for the user to provide feedback before revising the plan."
    );
    assert!(
        resumed[0]["payload"]["result"]["submittedPlan"]
            .get("feedback")
            .is_none(),
        "absent fields are left out, not null"
    );
    assert_eq!(resumed[1]["payload"]["stepResult"]["isContinued"], false);
    assert_eq!(fx.model_calls().len(), 1);
    assert_eq!(fx.listing(&["runs"])[0]["status"], "waiting");

    let next = fx.stream(&["send", &run, "Split", "it", "in", "two"]);
    assert_eq!(
        types(&next),
        ["step-start", "tool-call", "tool-call-suspended"]
    );
    let calls = fx.model_calls();
    let last = calls[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last, json!({"role": "user", "content": "Split it in two"}));
    assert_eq!(
        calls[1]["messages"][0],
        json!({"role": "user", "content": "Add a cache to the store"}),
        "the run keeps its whole history"
    );
}

#[test]
fn invalid_resume_data_is_a_validation_result_and_the_loop_goes_on() {
    let fx = Fixture::new(json!([{"toolCalls": [submit("call-1", PLAN)]}, text("I see.")]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (run, _) = fx.start(&[]);
    let resumed = fx.stream(&["resume", &run, "--data", r#"{"action":"maybe"}"#]);
    assert_eq!(
        types(&resumed)[..3],
        ["tool-result", "step-finish", "step-start"],
        "no re-suspension"
    );
    let result = &resumed[0]["payload"]["result"];
    assert_eq!(result["error"], true);
    let message = result["message"].as_str().unwrap();
    assert!(
        message.starts_with("Tool resume data validation failed for submit_plan"),
        "{message}"
    );
    assert!(
        message.contains(
            "action: Invalid enum value. Expected 'approved' | 'rejected', received 'maybe'"
        ),
        "{message}"
    );
    assert_eq!(*types(&resumed).last().unwrap(), "finish");
    assert_eq!(
        fx.listing(&["history", &run])[0]["decision"]["action"],
        "invalid",
        "the decision is still recorded"
    );
}

#[test]
fn invalid_tool_input_is_a_validation_result() {
    let fx = Fixture::new(
        json!([{"toolCalls": [{"toolCallId": "c", "toolName": "submit_plan", "args": {"file": "x.md"}}]}, text("ok")]),
    );
    let (_, chunks) = fx.start(&[]);
    assert!(of_type(&chunks, "tool-call-suspended").is_empty());
    let result = &of_type(&chunks, "tool-result")[0]["payload"]["result"];
    let message = result["message"].as_str().unwrap();
    assert!(message.contains("- path: Required"), "{message}");
    assert!(message.contains("- file: Unrecognized key"), "{message}");
}

#[test]
fn submit_plan_outside_a_run_returns_the_fallback() {
    let fx = Fixture::new(json!([]));
    let workspace = plandesk::workspace::Workspace::open(&fx.workspace, None).unwrap();
    let outcome = plandesk::tool::execute_standalone(
        &plandesk::tool::SubmitPlan,
        &workspace,
        &json!({"path": PLAN}),
    );
    assert_eq!(
        outcome,
        plandesk::tool::ToolOutcome::Value(
            json!({"content": format!("[Plan submitted for review]\n\nPath: {PLAN}"), "isError": false})
        )
    );
}

#[test]
fn exhausted_script_ends_with_an_error_chunk_and_a_failed_run() {
    let fx = Fixture::new(json!([]));
    let model = format!("scripted:{}", fx.script.display());
    let out = fx
        .command(&["--json", "run", "--model", &model, "go"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let chunks = chunks(&out.stdout);
    assert_eq!(types(&chunks), ["start", "step-start", "error"]);
    assert_eq!(
        chunks[2]["payload"]["error"]["code"],
        "model-script-exhausted"
    );
    assert_eq!(fx.listing(&["runs"])[0]["status"], "failed");
}

#[test]
fn max_steps_bounds_a_stream() {
    let read = json!({"toolCalls": [{"toolName": "read_file", "args": {"path": "src/lib.rs"}}]});
    let fx = Fixture::new(json!([read.clone(), read.clone(), read]));
    let (_, chunks) = fx.start(&["--max-steps", "2"]);
    assert_eq!(of_type(&chunks, "step-start").len(), 2);
    let finish = of_type(&chunks, "finish");
    assert_eq!(finish[0]["payload"]["stepResult"]["reason"], "tool-calls");
    assert_eq!(fx.model_calls().len(), 2);
    let read_result = &of_type(&chunks, "tool-result")[0]["payload"]["result"];
    assert_eq!(read_result["content"], "pub fn answer() -> u32 { 42 }\n");
}

#[test]
fn demo_model_plans_revises_and_finishes_offline() {
    let fx = Fixture::new(json!([]));
    let first = fx.stream(&[
        "run",
        "--model",
        "demo",
        "Fix the crash when the config file is empty",
    ]);
    let run = first[0]["runId"].as_str().unwrap().to_owned();
    assert_eq!(*types(&first).last().unwrap(), "tool-call-suspended");
    let plan = first.last().unwrap()["payload"]["suspendPayload"].clone();
    assert_eq!(plan["title"], "Fix the crash when the config file is empty");
    assert_eq!(
        plan["path"],
        ".plandesk/plans/fix-the-crash-when-the-config.md"
    );
    let body = plan["plan"].as_str().unwrap();
    for part in [
        "## Context",
        "`src/lib.rs`",
        "## Steps",
        "1. **Reproduce**",
        "## Risks",
        "## Tests",
    ] {
        assert!(body.contains(part), "demo plan lacks {part}:\n{body}");
    }
    let revised = fx.stream(&["reject", &run, "--feedback", "Also cover a missing file"]);
    let body2 = revised.last().unwrap()["payload"]["suspendPayload"]["plan"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        body2.contains("Also cover a missing file"),
        "feedback visibly changes the plan:\n{body2}"
    );
    assert_eq!(
        revised.last().unwrap()["payload"]["suspendPayload"]["path"],
        plan["path"],
        "the same file is revised"
    );
    let done = fx.stream(&["approve", &run]);
    assert_eq!(*types(&done).last().unwrap(), "finish");
    let text = done
        .iter()
        .filter(|c| c["type"] == "text-delta")
        .map(|c| c["payload"]["text"].as_str().unwrap())
        .collect::<String>();
    assert!(text.contains("approved"), "{text}");
    let history = fx.listing(&["history", &run]);
    assert_eq!(history.as_array().unwrap().len(), 2);
}
