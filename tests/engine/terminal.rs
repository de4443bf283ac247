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
        "# Safe plan\u{1b}]0;owned\u{7}\n\nStep one\r\u{1b}[1A\u{1b}[2KApproved by admin\n\u{202e}txt.exe\n"
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
    for args in [&["pending"][..], &["show", "1"], &["history"]] {
        assert_inert(&human(&fx, args), args[0]);
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
