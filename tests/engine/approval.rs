//! Approval-gated tools: approve runs the tool, decline never does.

use serde_json::json;

use crate::support::*;

fn write_turn() -> serde_json::Value {
    json!({"toolCalls": [{"toolCallId": "w", "toolName": "write_file", "args": {"path": "src/new.rs", "content": "fn new() {}\n"}}]})
}

#[test]
fn declined_tool_never_runs_and_the_model_hears_why() {
    let fx = Fixture::new(json!([write_turn(), text("Understood.")]));
    let (run, first) = fx.start(&["--mode", "build"]);
    assert_eq!(
        types(&first),
        ["start", "step-start", "tool-call", "tool-call-approval"]
    );
    assert_eq!(first[3]["payload"]["args"]["path"], "src/new.rs");
    assert_eq!(fx.listing(&["pending"])[0]["kind"], "approval");

    let declined = fx.stream(&["reject", &run, "--feedback", "Not that file"]);
    assert_eq!(
        types(&declined)[..3],
        ["tool-output-denied", "step-finish", "step-start"]
    );
    assert_eq!(declined[0]["payload"]["reason"], "Not that file");
    assert!(
        !fx.workspace.join("src/new.rs").exists(),
        "a declined write must not touch the workspace"
    );
    let message = tool_message(&fx.model_calls()[1], "w").clone();
    assert_eq!(message["result"]["error"], "Not that file");
}

#[test]
fn decline_without_reason_uses_the_default_reason() {
    let fx = Fixture::new(json!([write_turn(), text("Understood.")]));
    let (run, _) = fx.start(&["--mode", "build"]);
    let declined = fx.stream(&["reject", &run]);
    assert_eq!(
        declined[0]["payload"]["reason"],
        "Tool call was not approved by the user"
    );
    assert!(!fx.workspace.join("src/new.rs").exists());
}

#[test]
fn approved_tool_runs() {
    let fx = Fixture::new(json!([write_turn(), text("Done.")]));
    let (run, _) = fx.start(&["--mode", "build"]);
    let approved = fx.stream(&["approve", &run]);
    assert_eq!(types(&approved)[0], "tool-result");
    assert_eq!(
        std::fs::read_to_string(fx.workspace.join("src/new.rs")).unwrap(),
        "fn new() {}\n"
    );
}

#[test]
fn auto_approve_skips_the_question() {
    let fx = Fixture::new(json!([write_turn(), text("Done.")]));
    let (_, chunks) = fx.start(&["--mode", "build", "--auto-approve"]);
    assert!(of_type(&chunks, "tool-call-approval").is_empty());
    assert!(fx.workspace.join("src/new.rs").exists());
}

#[test]
fn plan_mode_writes_only_into_the_plans_folder() {
    let fx = Fixture::new(json!([
        {"toolCalls": [
            {"toolCallId": "x", "toolName": "write_file", "args": {"path": "src/lib.rs", "content": "oops"}},
            {"toolCallId": "y", "toolName": "write_file", "args": {"path": ".plandesk/plans/p.md", "content": "# P\n"}}
        ]},
        text("ok")
    ]));
    let (_, chunks) = fx.start(&[]);
    let error = &of_type(&chunks, "tool-error")[0]["payload"];
    assert_eq!(error["toolCallId"], "x");
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("outside the plans folder"),
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.workspace.join("src/lib.rs")).unwrap(),
        "pub fn answer() -> u32 { 42 }\n"
    );
    assert!(fx.workspace.join(".plandesk/plans/p.md").exists());
}
