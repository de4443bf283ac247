//! A decision belongs to one call of one step: tool call ids a model repeats (within a step, or
//! in a later step) are made unique before anything runs or is shown.

use serde_json::json;

use crate::support::*;

fn write(id: &str, path: &str, content: &str) -> serde_json::Value {
    json!({"toolCallId": id, "toolName": "write_file", "args": {"path": path, "content": content}})
}

#[test]
fn two_calls_with_one_id_are_two_items_decided_one_at_a_time() {
    let fx = Fixture::new(json!([
        {"toolCalls": [write("dup", "a.txt", "A\n"), write("dup", "Makefile", "all:\n\trm -rf /\n")]},
        text("done")
    ]));
    let (run, first) = fx.start(&["--mode", "build"]);
    let ids: Vec<&str> = of_type(&first, "tool-call")
        .iter()
        .map(|c| c["payload"]["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["dup", "dup-2"], "the second call gets its own id");
    let pending = fx.listing(&["pending"]);
    let shown: Vec<&str> = pending
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["args"]["path"].as_str().unwrap())
        .collect();
    assert_eq!(shown.len(), 2, "both writes wait for a person: {pending}");
    assert!(shown.contains(&"a.txt") && shown.contains(&"Makefile"));

    fx.stream(&["approve", &run, "--tool-call-id", "dup"]);
    assert!(fx.workspace.join("a.txt").exists());
    assert!(
        !fx.workspace.join("Makefile").exists(),
        "approving one call never runs the other"
    );
    fx.stream(&[
        "reject",
        &run,
        "--tool-call-id",
        "dup-2",
        "--feedback",
        "no",
    ]);
    assert!(!fx.workspace.join("Makefile").exists());
}

#[test]
fn a_plan_resubmitted_with_a_reused_id_is_a_new_revision_with_its_own_decision() {
    let fx = Fixture::new(json!([
        {"toolCalls": [submit("call_0", PLAN)]},
        {"toolCalls": [submit("call_0", PLAN)]},
        text("done")
    ]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (run, _) = fx.start(&[]);
    fx.write(PLAN, b"# Add a cache\n\nRevised: a bounded LRU cache.\n");
    let second = fx.stream(&["reject", &run, "--feedback", "bound it"]);
    let suspended = of_type(&second, "tool-call-suspended");
    assert_eq!(
        suspended.len(),
        1,
        "the resubmission waits again: {second:?}"
    );
    assert_eq!(suspended[0]["payload"]["toolCallId"], "call_0-2");
    let history = fx.listing(&["history", &run]);
    let rows = history.as_array().unwrap();
    assert_eq!(rows.len(), 2, "a new revision: {history}");
    assert_eq!(rows[0]["status"], "rejected");
    assert_eq!(
        rows[1]["status"], "pending",
        "the old decision does not apply to it"
    );
    let done = fx.stream(&["approve", &run]);
    assert_eq!(*types(&done).last().unwrap(), "finish");
    let calls = fx.model_calls();
    let last = calls.last().unwrap();
    assert_eq!(
        tool_message(last, "call_0-2")["result"]["content"],
        "Plan approved. Proceed with implementation following the approved plan."
    );
}

#[test]
fn an_id_or_a_tool_name_of_any_size_or_character_is_stored_shown_and_sent_back_as_a_short_token() {
    // An escape sequence, an invisible character, and far more than any real id or name.
    let id = format!("\u{1b}]0;owned\u{7}{}", "i".repeat(10_000));
    let name = format!("submit_plan\u{200b}{}", "x".repeat(100_000));
    let fx = Fixture::new(json!([
        {"toolCalls": [{"toolCallId": id, "toolName": name, "args": {"path": PLAN}}]},
        text("done")
    ]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (_, chunks) = fx.start(&[]);
    let call = &of_type(&chunks, "tool-call")[0]["payload"];
    let (shown_id, shown_name) = (
        call["toolCallId"].as_str().unwrap(),
        call["toolName"].as_str().unwrap(),
    );
    let token = |s: &str| {
        s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
    };
    assert!(shown_id.len() <= 64 && token(shown_id), "{shown_id}");
    assert!(shown_id.starts_with("__0_owned_i"), "{shown_id}");
    assert_eq!(shown_name, format!("submit_plan_{}", "x".repeat(52)));
    assert!(
        of_type(&chunks, "tool-call-suspended").is_empty(),
        "a name that had to change names no tool: nothing waits for a person"
    );
    assert_eq!(*types(&chunks).last().unwrap(), "finish");
    // The model is told, and what goes back to it is the token, not what it sent.
    let calls = fx.model_calls();
    let told = tool_message(calls.last().unwrap(), shown_id).to_string();
    assert!(told.contains("does not exist"), "{told}");
    assert!(told.contains(shown_name), "{told}");
    let sent_back = calls.last().unwrap().to_string();
    assert!(!sent_back.contains('\u{1b}') && !sent_back.contains('\u{200b}'));
    assert!(!sent_back.contains(&"x".repeat(60)) && !sent_back.contains(&"i".repeat(100)));
}
