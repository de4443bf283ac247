//! Several suspending calls in one step, resumed by id and without.

use serde_json::json;

use crate::support::*;

const PLAN_B: &str = ".plandesk/plans/other.md";

fn two_plans() -> Fixture {
    let fx = Fixture::new(
        json!([{"toolCalls": [submit("a", PLAN), submit("b", PLAN_B)]}, text("Both settled.")]),
    );
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    fx.write(PLAN_B, b"# Other\n\nSecond plan.\n");
    fx
}

#[test]
fn two_suspensions_resolve_one_at_a_time_without_ids() {
    let fx = two_plans();
    let (run, first) = fx.start(&[]);
    assert_eq!(
        types(&first),
        [
            "start",
            "step-start",
            "tool-call",
            "tool-call",
            "tool-call-suspended"
        ]
    );
    assert_eq!(
        first[4]["payload"]["toolCallId"], "a",
        "the earliest call suspends first"
    );
    assert_eq!(
        fx.listing(&["pending"]).as_array().unwrap().len(),
        2,
        "the inbox shows every pending plan"
    );

    let second = fx.stream(&["approve", &run]);
    assert_eq!(types(&second), ["tool-call-suspended"]);
    assert_eq!(second[0]["payload"]["toolCallId"], "b");
    assert_eq!(
        fx.model_calls().len(),
        1,
        "no tool result reaches the model while one is pending"
    );

    let last = fx.stream(&["reject", &run, "--feedback", "not this one"]);
    assert_eq!(
        types(&last)[..4],
        ["tool-result", "tool-result", "step-finish", "step-start"]
    );
    assert_eq!(last[0]["payload"]["toolCallId"], "a");
    assert_eq!(last[1]["payload"]["toolCallId"], "b");
    let call = &fx.model_calls()[1];
    assert_eq!(
        tool_message(call, "a")["result"]["content"],
        "Plan approved. Proceed with implementation following the approved plan."
    );
    assert!(tool_message(call, "b")["result"]["content"]
        .as_str()
        .unwrap()
        .contains("User feedback: not this one"));
}

#[test]
fn two_suspensions_resolve_by_explicit_id_in_any_order() {
    let fx = two_plans();
    let (run, _) = fx.start(&[]);
    let after_b = fx.stream(&[
        "resume",
        &run,
        "--tool-call-id",
        "b",
        "--data",
        r#"{"action":"approved"}"#,
    ]);
    assert_eq!(types(&after_b), ["tool-call-suspended"]);
    assert_eq!(
        after_b[0]["payload"]["toolCallId"], "a",
        "the remaining call is announced again"
    );
    let after_a = fx.stream(&["approve", &run, "--tool-call-id", "a"]);
    assert_eq!(types(&after_a)[..2], ["tool-result", "tool-result"]);
    assert_eq!(*types(&after_a).last().unwrap(), "finish");
}
