//! The run's state machine: each step's next move, and call ids kept apart.

use std::collections::HashSet;

use serde_json::json;

use super::*;

fn state() -> RunState {
    RunState {
        schema_version: SCHEMA_VERSION,
        run_id: "r".into(),
        agent_id: "a".into(),
        model: "demo".into(),
        workspace: "/ws".into(),
        plans_dir: ".plandesk/plans".into(),
        mode: "plan".into(),
        auto_approve: false,
        max_steps: 2,
        steps_this_stream: 0,
        usage: Usage::default(),
        phase: Phase::CallModel,
        messages: vec![Message::user("do it")],
        stored: Stored::default(),
    }
}

fn call(id: &str) -> ToolCall {
    ToolCall {
        tool_call_id: id.into(),
        tool_name: "t".into(),
        args: json!({}),
    }
}

fn turn(ids: &[&str]) -> Turn {
    Turn {
        text: "thinking".into(),
        tool_calls: ids.iter().map(|id| call(id)).collect(),
        usage: None,
        reason: "tool-calls".into(),
    }
}

fn done() -> CallStatus {
    CallStatus::Done {
        outcome: Outcome::Result(json!({"ok": true})),
    }
}

fn suspended() -> CallStatus {
    CallStatus::Suspended {
        suspend_payload: json!({}),
    }
}

#[test]
fn an_answer_without_tools_finishes_the_run() {
    let mut s = state();
    assert_eq!(s.next_step(), NextStep::CallModel);
    s.record_turn("m1".into(), turn(&[]));
    assert_eq!(
        s.phase,
        Phase::Waiting {
            reason: WaitReason::Finished
        }
    );
    assert_eq!(s.next_step(), NextStep::Stop);
    assert_eq!(s.phase.status(), RunStatus::Finished);
}

#[test]
fn tools_run_in_order_then_the_step_finishes_and_the_model_is_called_again() {
    let mut s = state();
    s.record_turn("m1".into(), turn(&["a", "b"]));
    assert_eq!(s.next_step(), NextStep::RunTool(0));
    s.settle_call(0, done());
    assert_eq!(s.next_step(), NextStep::RunTool(1));
    s.settle_call(1, done());
    assert_eq!(s.next_step(), NextStep::FinishStep);
    let end = s.finish_step(false).unwrap();
    assert_eq!(end.wait, None);
    assert_eq!(end.text, "thinking");
    assert_eq!(s.phase, Phase::CallModel);
    let tool_messages = s
        .messages
        .iter()
        .filter(|m| matches!(m, Message::Tool { .. }))
        .count();
    assert_eq!(tool_messages, 2, "every result joins the conversation");
}

#[test]
fn max_steps_stops_the_stream_and_a_new_stream_counts_again() {
    let mut s = state();
    for step in 0..2 {
        s.record_turn(format!("m{step}"), turn(&["x"]));
        s.settle_call(0, done());
        s.finish_step(false);
    }
    assert_eq!(
        s.phase,
        Phase::Waiting {
            reason: WaitReason::MaxSteps
        }
    );
    assert_eq!(s.phase.status(), RunStatus::Finished);
    s.accept_message("go on").unwrap();
    assert_eq!(s.steps_this_stream, 0);
    assert_eq!(s.phase, Phase::CallModel);
}

#[test]
fn a_pending_call_suspends_the_step_and_refuses_messages() {
    let mut s = state();
    s.record_turn("m1".into(), turn(&["plan", "read"]));
    s.settle_call(0, suspended());
    s.settle_call(1, done());
    assert_eq!(s.next_step(), NextStep::Suspend);
    s.suspend();
    assert_eq!(s.phase.status(), RunStatus::Suspended);
    assert_eq!(s.next_step(), NextStep::Stop);
    assert_eq!(
        s.accept_message("hi").unwrap_err(),
        RunError::DecisionPending {
            run_id: "r".into(),
            tool_call_id: "plan".into()
        }
    );
    assert_eq!(s.open_calls().len(), 1);
}

#[test]
fn decisions_target_the_named_or_earliest_undecided_call() {
    let mut s = state();
    s.record_turn("m1".into(), turn(&["p1", "p2"]));
    s.settle_call(0, suspended());
    s.settle_call(1, CallStatus::AwaitingApproval);
    s.suspend();
    let none = |_: &str| false;
    assert_eq!(s.target_call(None, &none).unwrap().call.tool_call_id, "p1");
    let first_decided = |id: &str| id == "p1";
    assert_eq!(
        s.target_call(None, &first_decided)
            .unwrap()
            .call
            .tool_call_id,
        "p2"
    );
    assert_eq!(
        s.target_call(Some("p2"), &none).unwrap().call.tool_call_id,
        "p2"
    );
    assert!(matches!(
        s.target_call(Some("nope"), &none),
        Err(RunError::NoOpenCall { .. })
    ));
    let all = |_: &str| true;
    assert!(
        matches!(s.target_call(None, &all), Err(RunError::NoOpenCall { tool_call_id, .. }) if tool_call_id == "p1"),
        "all decided but not applied: the first is named"
    );
}

#[test]
fn resolving_every_open_call_resumes_the_step() {
    let mut s = state();
    s.record_turn("m1".into(), turn(&["p1", "p2"]));
    s.settle_call(0, suspended());
    s.settle_call(1, suspended());
    s.suspend();
    s.resolve_call("p1", done());
    s.resume_step();
    assert_eq!(s.phase.status(), RunStatus::Suspended, "p2 still waits");
    s.resolve_call("p2", done());
    s.resume_step();
    assert_eq!(s.next_step(), NextStep::FinishStep);
}

#[test]
fn a_rejection_without_feedback_makes_the_run_wait_for_the_user() {
    let mut s = state();
    s.record_turn("m1".into(), turn(&["p"]));
    s.settle_call(0, done());
    let end = s.finish_step(true).unwrap();
    assert_eq!(end.wait, Some(WaitReason::Feedback));
    assert_eq!(s.phase.status(), RunStatus::Waiting);
    s.accept_message("make it smaller").unwrap();
    assert_eq!(s.next_step(), NextStep::CallModel);
}

#[test]
fn continuing_retries_a_failure_and_refuses_a_waiting_run() {
    let mut s = state();
    s.fail(ChunkError {
        code: "model-timeout".into(),
        message: "slow".into(),
    });
    assert_eq!(s.phase.status(), RunStatus::Failed);
    s.prepare_continue().unwrap();
    assert_eq!(s.phase, Phase::CallModel);
    s.record_turn("m".into(), turn(&[]));
    assert!(matches!(
        s.prepare_continue(),
        Err(RunError::NothingToContinue { .. })
    ));
}

#[test]
fn a_message_to_a_run_mid_step_says_it_was_interrupted() {
    let mut s = state();
    s.record_turn("m".into(), turn(&["a"]));
    assert!(matches!(
        s.accept_message("hello"),
        Err(RunError::Interrupted { .. })
    ));
}

#[test]
fn reused_ids_are_made_unique() {
    let mut used: HashSet<String> = ["call_0", "call_0-2"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(unique_call_id("call_1", |id| used.contains(id)), "call_1");
    assert_eq!(unique_call_id("call_0", |id| used.contains(id)), "call_0-3");
    used.insert("call".into());
    assert_eq!(unique_call_id("", |id| used.contains(id)), "call-2");
}

#[test]
fn used_ids_span_every_step() {
    let mut s = state();
    let mut used = CallIds::default();
    s.record_turn("m1".into(), turn(&["a"]));
    used.catch_up(&s.messages);
    assert!(used.contains("a") && !used.contains("b"));
    s.settle_call(0, done());
    s.finish_step(false);
    s.record_turn("m2".into(), turn(&["b"]));
    used.catch_up(&s.messages);
    assert!(used.contains("a") && used.contains("b"));
    assert!(!used.contains("c"));
    assert_eq!(used.turns(), 2);
    // Another conversation, shorter: looked at anew.
    used.catch_up(&state().messages);
    assert!(!used.contains("a"));
    assert_eq!(used.turns(), 0);
}
