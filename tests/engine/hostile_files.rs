//! Hostile workspaces (issue 8 #1, #4, #5): links that would carry a write out of the plans
//! folder or the workspace, a FIFO where a plan should be, and a plan too deeply nested to
//! render. Each runs the real `plandesk` binary, under a hang detector where a hang was the bug.

use std::os::unix::fs::symlink;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

/// Runs `cmd`, failing the test (and killing the process) if it takes longer than `limit`.
fn output_within(mut cmd: Command, limit: Duration) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("plandesk hung: still running after {limit:?}");
        }
    }
}

fn script(fx: &Fixture, turns: Value) {
    std::fs::write(&fx.script, json!({ "turns": turns }).to_string()).unwrap();
}

fn write_call(id: &str, path: &str) -> Value {
    json!({"toolCallId": id, "toolName": "write_file", "args": {"path": path, "content": "escaped\n"}})
}

fn tool_error<'a>(chunks: &'a [Value], id: &str) -> &'a str {
    chunks
        .iter()
        .find(|c| c["type"] == "tool-error" && c["payload"]["toolCallId"] == id)
        .unwrap_or_else(|| panic!("no tool-error for {id}: {chunks:?}"))["payload"]["error"]
        .as_str()
        .unwrap()
}

fn submit_result<'a>(chunks: &'a [Value], id: &str) -> &'a Value {
    &chunks
        .iter()
        .find(|c| c["type"] == "tool-result" && c["payload"]["toolCallId"] == id)
        .unwrap_or_else(|| panic!("no tool-result for {id}: {chunks:?}"))["payload"]["result"]
}

/// Issue 8 #1: with `.plandesk/plans -> ..`, a plan-mode `write_file` of
/// `.plandesk/plans/x.txt` landed in the workspace root with no approval, and a plan read
/// through the link reached a person.
#[test]
fn a_linked_plans_folder_is_refused_for_writes_and_plans() {
    let fx = Fixture::new(json!([]));
    std::fs::remove_dir(fx.workspace.join(".plandesk/plans")).unwrap();
    symlink("..", fx.workspace.join(".plandesk/plans")).unwrap();
    fx.write("sneaky.md", b"# Sneaky\n\nRead through the link.\n");
    script(
        &fx,
        json!([
            {"toolCalls": [write_call("w", ".plandesk/plans/x.txt")]},
            {"toolCalls": [submit("s", ".plandesk/plans/sneaky.md")]},
            text("ok")
        ]),
    );
    let (_, chunks) = fx.start(&[]);
    let error = tool_error(&chunks, "w");
    assert!(
        error.contains("symbolic link") && error.contains("only the plans folder can be written"),
        "{error}"
    );
    assert!(
        !fx.workspace.join("x.txt").exists(),
        "the write must not land in the workspace root"
    );
    let result = submit_result(&chunks, "s");
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("symbolic link"),
        "{result}"
    );
    assert!(of_type(&chunks, "tool-call-suspended").is_empty());
    assert_eq!(
        fx.listing(&["pending"]),
        json!([]),
        "nothing reached a person"
    );
}

/// Build mode writes anywhere in the workspace, but never through a link, even one that points
/// inside it.
#[test]
fn build_mode_writes_never_follow_links() {
    let fx = Fixture::new(json!([]));
    let outside = fx.root.join("outside");
    std::fs::create_dir(&outside).unwrap();
    symlink(&outside, fx.workspace.join("out")).unwrap();
    symlink("src", fx.workspace.join("inner")).unwrap();
    symlink("src/lib.rs", fx.workspace.join("lib-link.rs")).unwrap();
    script(
        &fx,
        json!([
            {"toolCalls": [write_call("a", "out/x.txt"), write_call("b", "inner/new.rs"), write_call("c", "lib-link.rs")]},
            text("ok")
        ]),
    );
    let (_, chunks) = fx.start(&["--mode", "build", "--auto-approve"]);
    for id in ["a", "b", "c"] {
        let error = tool_error(&chunks, id);
        assert!(error.contains("is a symbolic link"), "{id}: {error}");
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(!fx.workspace.join("src/new.rs").exists());
    assert_eq!(
        std::fs::read_to_string(fx.workspace.join("src/lib.rs")).unwrap(),
        "pub fn answer() -> u32 { 42 }\n"
    );
}

/// Issue 8 #4: a FIFO as the plan file hung the run forever.
#[test]
fn a_fifo_plan_file_is_answered_within_seconds() {
    let fx = Fixture::new(json!([]));
    let fifo = fx.workspace.join(".plandesk/plans/pipe.md");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    script(
        &fx,
        json!([
            {"toolCalls": [submit("s", ".plandesk/plans/pipe.md"), {"toolCallId": "r", "toolName": "read_file", "args": {"path": ".plandesk/plans/pipe.md"}}]},
            {"toolCalls": [write_call("w", ".plandesk/plans/pipe.md")]},
            text("ok")
        ]),
    );
    let model = format!("scripted:{}", fx.script.display());
    let out = output_within(
        fx.command(&["--json", "run", "--model", &model, "Plan it"]),
        Duration::from_secs(30),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let chunks = chunks(&out.stdout);
    let result = submit_result(&chunks, "s");
    assert_eq!(result["isError"], true, "{result}");
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains("is a named pipe (FIFO), not a regular file"),
        "the model hears what is wrong: {content}"
    );
    assert!(tool_error(&chunks, "r").contains("FIFO"));
    assert!(tool_error(&chunks, "w").contains("FIFO"));
    assert_eq!(fx.listing(&["pending"]), json!([]));
}

/// Issue 8 #5: a plan of `# T` and 50,000 `>` aborted `plandesk show --html` with a stack
/// overflow.
#[test]
fn a_deeply_nested_plan_is_shown_as_source() {
    let fx = Fixture::new(json!([{"toolCalls": [submit("c", PLAN)]}]));
    let plan = format!("# T\n\n{}\n", ">".repeat(50_000));
    fx.write(PLAN, plan.as_bytes());
    fx.start(&[]);
    let out = output_within(
        fx.command(&["show", "1", "--html"]),
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "show --html failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let html = String::from_utf8(out.stdout).unwrap();
    assert!(
        html.contains("This plan is too deeply nested to render; here is its source."),
        "{}",
        &html[..html.len().min(400)]
    );
    assert!(
        html.contains("&gt;&gt;&gt;"),
        "the source is shown, escaped"
    );
    let out = output_within(
        fx.command(&["--json", "show", "1"]),
        Duration::from_secs(60),
    );
    assert!(out.status.success());
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(shown["html"]
        .as_str()
        .unwrap()
        .contains("too deeply nested"));
}
