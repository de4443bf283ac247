//! Outside agents' hooks through the real binary: a plan lands in the inbox with its source,
//! the hook blocks until a person decides from another process, and answers in the agent's own
//! format; consecutive plans of one session are revisions of one thread; a hook that is
//! stopped, killed or past its deadline never leaves a plan pending, and never approves.
//! This module holds the hook's harness (a hook process, its answer, the inbox waited on); the
//! tests are in `claude_code` (a plan's review from submission to answer), `formats` (the other
//! agents, each in its own format), `kimi` (Kimi Code's plan file, held to what was approved)
//! and `fail_closed` (a hook stopped, killed, past its deadline
//! or without a store).

mod claude_code;
mod fail_closed;
mod formats;
mod kimi;

use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

/// Starts `plandesk hook AGENT` with `payload` on stdin.
fn hook(fx: &Fixture, agent: &str, payload: &Value, extra: &[&str]) -> Child {
    let mut args = vec!["hook", agent];
    args.extend_from_slice(extra);
    spawn_with_input(fx.command(&args), payload.to_string().as_bytes())
}

/// The hook's answer: its stdout as JSON (`Null` for no output), after it exits 0.
fn answer(child: Child) -> Value {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "a hook always exits 0 with an explicit answer: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }
}

/// Waits until `pending` holds `count` items; returns them.
fn wait_pending(fx: &Fixture, count: usize) -> Vec<Value> {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let pending = fx.listing(&["pending"]);
        let items = pending.as_array().unwrap().clone();
        if items.len() == count {
            return items;
        }
        assert!(
            Instant::now() < until,
            "waited for {count} pending: {pending}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn claude_payload(plan: &str) -> Value {
    json!({
        "session_id": "cc-session-1", "transcript_path": "/nonexistent/t.jsonl",
        "cwd": "/home/u/proj", "permission_mode": "plan",
        "hook_event_name": "PermissionRequest", "tool_name": "ExitPlanMode",
        "tool_input": {"plan": plan, "planFilePath": "/home/u/.claude/plans/brave-otter.md"}
    })
}
