//! Issue 33 #1: a hook answers its agent "not approved" within its deadline whatever its payload
//! names or does: a transcript, plan file or settings file that is a FIFO (which blocked the
//! hook forever, and Codex lets a plan through when its Stop hook times out), a link to one, a
//! device, a folder, a file too large, or standard input that never ends.

use std::io::{Read, Write};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::{json, Value};

use crate::support::*;

/// The deadline every hook here runs with.
const DEADLINE: &str = "2s";
/// What a debug binary's start and exit may add to it on a loaded machine.
const SLACK: Duration = Duration::from_secs(3);

/// A hook's answer and how long it took to give it.
struct Answered {
    out: Value,
    took: Duration,
}

/// Runs `plandesk hook AGENT --deadline 2s` with `payload` on its standard input, closed after
/// it unless `hold_stdin`; fails if it has not exited 0 within the deadline and slack.
fn run_hook(
    fx: &Fixture,
    agent: &str,
    payload: &[u8],
    env: &[(&str, PathBuf)],
    hold_stdin: bool,
) -> Answered {
    let mut cmd = fx.command(&["hook", agent, "--deadline", DEADLINE]);
    // Gemini CLI's own settings are looked for under this home, not this machine's.
    cmd.env("GEMINI_CLI_HOME", fx.root.join("gemini-home"));
    for (name, value) in env {
        cmd.env(name, value);
    }
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // A payload the hook stops reading (it refuses one too large) may fill the pipe.
    let _ = stdin.write_all(payload);
    let held = hold_stdin.then_some(stdin);
    let limit = Duration::from_secs(2) + SLACK;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let (out, err) = drain(&mut child);
            panic!(
                "`hook {agent}` did not answer within {limit:?} (its deadline is {DEADLINE}); \
                 stdout {out:?}, stderr {err:?}"
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    drop(held);
    let (out, err) = drain(&mut child);
    assert!(
        status.success(),
        "a hook always exits 0 (non-zero is approval for some agents): {err}"
    );
    let out = if out.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    };
    Answered { out, took }
}

fn drain(child: &mut Child) -> (String, String) {
    let mut out = String::new();
    let mut err = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut out);
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    (out, err)
}

/// Panics unless `out` is the agent's explicit "not approved".
fn assert_not_approved(agent: &str, out: &Value, case: &str) {
    let denied = match agent {
        "claude-code" => out["hookSpecificOutput"]["decision"]["behavior"] == "deny",
        "codex" => out["decision"] == "block",
        "gemini" => out["decision"] == "deny",
        other => panic!("no such agent {other}"),
    };
    assert!(
        denied,
        "{agent}, {case}: the answer must be an explicit \"not approved\", got {out}"
    );
}

/// What a file an agent names may be.
#[derive(Debug, Clone, Copy)]
enum Shape {
    Fifo,
    LinkToFifo,
    Device,
    Folder,
    Missing,
    TooLarge,
    Plan,
    LinkToPlan,
}

/// Makes `path` the given shape; a plan file holds `plan`.
fn make(path: &Path, shape: Shape, plan: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let fifo = |at: &Path| {
        assert!(Command::new("mkfifo").arg(at).status().unwrap().success());
    };
    match shape {
        Shape::Fifo => fifo(path),
        Shape::LinkToFifo => {
            let target = path.with_extension("fifo");
            fifo(&target);
            symlink(&target, path).unwrap();
        }
        Shape::Device => symlink("/dev/zero", path).unwrap(),
        Shape::Folder => std::fs::create_dir_all(path).unwrap(),
        Shape::Missing => {}
        Shape::TooLarge => std::fs::write(path, "x".repeat(1024 * 1024 + 1)).unwrap(),
        Shape::Plan => std::fs::write(path, plan).unwrap(),
        Shape::LinkToPlan => {
            let target = path.with_extension("real");
            std::fs::write(&target, plan).unwrap();
            symlink(&target, path).unwrap();
        }
    }
}

/// A Codex session file line holding `plan` as the turn's plan.
fn codex_plan_line(plan: &str) -> String {
    json!({"type": "event_msg", "payload": {"type": "item_completed", "turn_id": "T1",
           "item": {"type": "Plan", "text": plan}}})
    .to_string()
}

/// The payload `agent` sends when its file (transcript, plan file, settings) is `shape`, and
/// the environment it runs the hook with.
fn payload(fx: &Fixture, agent: &str, shape: Shape) -> (Value, Vec<(&'static str, PathBuf)>) {
    let plan = "# Bounded\n\nEvery read has a deadline.\n";
    match agent {
        "claude-code" => {
            let transcript = fx.root.join("claude/t.jsonl");
            let line = json!({"type": "assistant", "message": {"content": [
                {"type": "tool_use", "name": "ExitPlanMode", "input": {"plan": plan}}]}});
            make(&transcript, shape, &format!("{line}\n"));
            let payload = json!({
                "session_id": "s1", "cwd": fx.workspace, "permission_mode": "plan",
                "hook_event_name": "PermissionRequest", "tool_name": "ExitPlanMode",
                "tool_input": {}, "transcript_path": transcript});
            (payload, Vec::new())
        }
        "codex" => {
            let transcript = fx.root.join("codex/rollout.jsonl");
            make(&transcript, shape, &format!("{}\n", codex_plan_line(plan)));
            let payload = json!({
                "session_id": "s1", "turn_id": "T1", "transcript_path": transcript,
                "cwd": fx.workspace, "hook_event_name": "Stop", "model": "m",
                "permission_mode": "default", "stop_hook_active": false,
                "last_assistant_message": format!("<proposed_plan>{plan}</proposed_plan>")});
            (payload, Vec::new())
        }
        "gemini" => {
            let plans = fx.root.join("gemini-plans");
            make(&plans.join("plan.md"), shape, plan);
            let project = fx.root.join("gemini-project");
            make(
                &project.join(".gemini/settings.json"),
                shape,
                r#"{"hooks": {}}"#,
            );
            let payload = json!({
                "session_id": "s1", "transcript_path": "/t", "cwd": fx.workspace,
                "hook_event_name": "BeforeTool", "timestamp": "t",
                "tool_name": "exit_plan_mode", "tool_input": {"plan_filename": "plan.md"}});
            let env = vec![("GEMINI_PLANS_DIR", plans), ("GEMINI_PROJECT_DIR", project)];
            (payload, env)
        }
        other => panic!("no such agent {other}"),
    }
}

/// The exact defect: Claude Code's and Codex's transcripts as FIFOs blocked the hook forever.
#[test]
fn a_transcript_that_is_a_fifo_is_answered_in_time() {
    for agent in ["claude-code", "codex"] {
        let fx = Fixture::new(json!([]));
        let (payload, env) = payload(&fx, agent, Shape::Fifo);
        let answered = run_hook(&fx, agent, payload.to_string().as_bytes(), &env, false);
        assert_not_approved(agent, &answered.out, "FIFO transcript");
    }
}

/// A Claude Code plan file named by the payload, as a FIFO.
#[test]
fn a_plan_file_that_is_a_fifo_is_answered_at_once() {
    let fx = Fixture::new(json!([]));
    let fifo = fx.root.join("plan.md");
    make(&fifo, Shape::Fifo, "");
    let payload = json!({
        "session_id": "s1", "cwd": fx.workspace, "hook_event_name": "PermissionRequest",
        "tool_name": "ExitPlanMode", "tool_input": {"planFilePath": fifo}});
    let answered = run_hook(
        &fx,
        "claude-code",
        payload.to_string().as_bytes(),
        &[],
        false,
    );
    assert_not_approved("claude-code", &answered.out, "FIFO plan file");
    let message = answered.out["hookSpecificOutput"]["decision"]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.contains("named pipe (FIFO)"),
        "the agent hears what is wrong: {message}"
    );
    assert!(
        answered.took < Duration::from_secs(2),
        "refused at once, not at the deadline: {:?}",
        answered.took
    );
}

/// An agent that never closes the hook's standard input: only the watchdog can answer.
#[test]
fn standard_input_that_never_ends_is_answered_at_the_deadline() {
    for agent in ["claude-code", "codex", "gemini"] {
        let fx = Fixture::new(json!([]));
        let answered = run_hook(&fx, agent, b"{\"session_id\": ", &[], true);
        assert_not_approved(agent, &answered.out, "stdin held open");
        assert!(
            answered.took >= Duration::from_secs(2),
            "{agent}: answered at its deadline, not before: {:?}",
            answered.took
        );
    }
}

fn shapes() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Fifo),
        Just(Shape::LinkToFifo),
        Just(Shape::Device),
        Just(Shape::Folder),
        Just(Shape::Missing),
        Just(Shape::TooLarge),
        Just(Shape::Plan),
        Just(Shape::LinkToPlan),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(12),
        max_shrink_iters: 8,
        ..ProptestConfig::default()
    })]

    /// Whatever the agent, whatever its file is and however it sends the payload, the hook
    /// answers within its deadline, and never "approved" (nobody decides here: a plan that
    /// could be read waits and expires).
    #[test]
    fn prop_a_hook_answers_not_approved_within_its_deadline(
        agent in prop_oneof![Just("claude-code"), Just("codex"), Just("gemini")],
        shape in shapes(),
        hold_stdin in any::<bool>(),
        cut in any::<bool>(),
    ) {
        let fx = Fixture::new(json!([]));
        let (payload, env) = payload(&fx, agent, shape);
        let mut bytes = payload.to_string().into_bytes();
        if cut {
            bytes.truncate(bytes.len() / 2);
        }
        let answered = run_hook(&fx, agent, &bytes, &env, hold_stdin);
        let case = format!("{shape:?}, stdin held {hold_stdin}, payload cut {cut}");
        assert_not_approved(agent, &answered.out, &case);
    }
}
