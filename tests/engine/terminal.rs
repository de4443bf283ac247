//! What the CLI prints for people cannot spoof the terminal: control characters and escape
//! sequences from a model or a plan are shown as visible escapes, what a person approves is
//! shown whole, and ids pasted into suggested commands are quoted.

use serde_json::json;

use crate::support::*;

/// Raw bytes a terminal would act on: ESC, CR, BEL, backspace, CSI.
fn assert_inert(out: &str, what: &str) {
    for (c, name) in [
        ('\u{1b}', "ESC"),
        ('\r', "CR"),
        ('\u{7}', "BEL"),
        ('\u{8}', "BS"),
        ('\u{9b}', "CSI"),
        ('\u{202e}', "RLO"),
    ] {
        assert!(!out.contains(c), "{what} printed a raw {name}: {out:?}");
    }
}

fn human(fx: &Fixture, args: &[&str]) -> String {
    let out = fx.ok(args);
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn plans_and_model_text_cannot_spoof_the_terminal() {
    let fx = Fixture::new(json!([{
        "text": "Done.\r\u{1b}[2K\u{1b}[32mAll tests passed\u{7}",
        "toolCalls": [submit("c1", PLAN)]
    }]));
    fx.write(
        PLAN,
        "# Safe plan\u{1b}]0;owned\u{7} \u{202e}txt.exe\n\nStep one\r\u{1b}[1A\u{1b}[2KApproved by admin\n\u{202e}txt.exe\n"
            .as_bytes(),
    );
    let model = format!("scripted:{}", fx.script.display());
    let run_out = human(&fx, &["run", "--model", &model, "Add a cache"]);
    assert_inert(&run_out, "run");
    assert!(
        run_out.contains("\\x1b[2K"),
        "escapes are visible: {run_out}"
    );
    assert!(run_out.contains("\\r"), "{run_out}");
    for args in [
        &["pending"][..],
        &["show", "1"],
        &["show", "1", "--html"],
        &["history"],
    ] {
        assert_inert(&human(&fx, args), args[0]);
    }
    // The same for scripts: JSON whose strings keep every character, escaped.
    for args in [
        &["--json", "pending"][..],
        &["--json", "show", "1"],
        &["--json", "history"],
    ] {
        let out = fx.ok(args);
        let text = String::from_utf8(out.stdout).unwrap();
        assert_inert(&text, args[1]);
        assert!(text.contains("\\u202etxt.exe"), "{text}");
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(value.to_string().contains("\u{202e}txt.exe"), "{value}");
    }
}

#[test]
fn a_write_approval_shows_all_of_what_is_approved_and_a_safe_id() {
    let content: String = (1..=60).map(|n| format!("line {n}\n")).collect();
    let fx = Fixture::new(json!([
        {"toolCalls": [{"toolCallId": "w; rm -rf ~", "toolName": "write_file",
                        "args": {"path": "src/new.rs", "content": content}}]},
        text("ok")
    ]));
    let model = format!("scripted:{}", fx.script.display());
    let out = human(
        &fx,
        &["run", "--mode", "build", "--model", &model, "Write it"],
    );
    for n in [1, 20, 21, 59, 60] {
        assert!(
            out.contains(&format!("│ line {n}\n")),
            "line {n} of what is approved is shown: {out}"
        );
    }
    // The model's id is made a token before anything shows it (`shell_quote`, unit-tested,
    // still quotes whatever else a suggested command names).
    assert!(
        out.contains("--tool-call-id w__rm_-rf__\n"),
        "a suggested command names the call by its token: {out}"
    );
}

/// Issue 33 #9: `plandesk edit` printed the plan path an agent sent raw, in the line saying why
/// the plan file was not rewritten; so did a refused command's error.
#[test]
fn an_agents_plan_path_cannot_spoof_the_terminal_in_edit_or_errors() {
    let fx = Fixture::new(json!([]));
    let name = "plan\u{1b}]0;owned\u{7}\u{1b}[2K.md";
    let file = fx.workspace.join(name);
    std::fs::write(&file, "# P\n\n1. Step\n").unwrap();
    let payload = json!({
        "session_id": "s1", "cwd": fx.workspace, "permission_mode": "plan",
        "hook_event_name": "PermissionRequest", "tool_name": "ExitPlanMode",
        "tool_input": {"plan": "# P\n\n1. Step\n", "planFilePath": file}});
    let mut hook = spawn_with_input(
        fx.command(&["hook", "claude-code", "--deadline", "60s"]),
        payload.to_string().as_bytes(),
    );
    let item = block_on(until_pending(&fx));
    // The file changed since: the edit is not written, and the line saying so names it.
    std::fs::write(&file, "# P\n\n1. Another step\n").unwrap();
    let mine = fx.root.join("mine.md");
    std::fs::write(&mine, "# P\n\n1. Step, smaller\n").unwrap();
    let id = item["revision"]["id"].to_string();
    let out = human(&fx, &["edit", &id, "--file", mine.to_str().unwrap()]);
    assert!(out.contains("was not rewritten"), "{out}");
    assert_inert(&out, "plandesk edit");
    // An error naming a path with escapes in it.
    let missing = fx.root.join("gone\u{1b}[2K\u{7}.md");
    let refused = fx.refused(&["edit", &id, "--file", missing.to_str().unwrap()]);
    assert!(refused.contains("gone"), "{refused}");
    assert_inert(&refused, "a refused command");
    fx.ok(&["reject", item["runId"].as_str().unwrap()]);
    hook.wait().unwrap();
}
