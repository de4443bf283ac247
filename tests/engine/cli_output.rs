//! What a person sees without --json, and the listing commands' ids.

use serde_json::json;

use crate::support::*;

fn stdout(fx: &Fixture, args: &[&str]) -> String {
    String::from_utf8(fx.ok(args).stdout).unwrap()
}

#[test]
fn a_pending_plan_is_printed_with_the_next_commands() {
    let fx = Fixture::new(json!([{"text": "Plan ready.", "toolCalls": [submit("c1", PLAN)]}]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let model = format!("scripted:{}", fx.script.display());
    let out = stdout(&fx, &["run", "--model", &model, "Add a cache"]);
    let run = fx.listing(&["runs"])[0]["id"].as_str().unwrap().to_owned();
    let sha = fx.listing(&["pending"])[0]["revision"]["sha256"]
        .as_str()
        .unwrap()[..12]
        .to_owned();
    assert!(out.contains("PLAN  Add a cache"), "{out}");
    assert!(
        out.contains("1. Measure\n2. Cache"),
        "the plan body is printed whole: {out}"
    );
    assert!(
        out.contains(&format!("plandesk approve {run} --revision {sha}")),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "plandesk reject {run} --revision {sha} --feedback"
        )),
        "{out}"
    );

    let pending = stdout(&fx, &["pending"]);
    assert!(
        pending.contains(&run) && pending.contains("Add a cache"),
        "{pending}"
    );
    let history = stdout(&fx, &["history"]);
    assert!(
        history.contains(&sha) && history.contains("pending"),
        "{history}"
    );
    let shown = stdout(&fx, &["show", &sha]);
    assert!(
        shown.starts_with("Add a cache\n"),
        "show accepts a sha prefix: {shown}"
    );
    assert!(shown.contains("decision: pending"), "{shown}");
}

#[test]
fn custom_plans_folder_is_honoured() {
    let fx = Fixture::new(json!([
        {"toolCalls": [submit("c1", "docs/plans/p.md")]},
        {"toolCalls": [submit("c2", PLAN)]},
        text("ok")
    ]));
    fx.write("docs/plans/p.md", b"# Custom\n\nBody\n");
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (run, chunks) = fx.start(&["--plans-dir", "docs/plans"]);
    assert_eq!(
        chunks.last().unwrap()["payload"]["suspendPayload"]["title"],
        "Custom"
    );
    let rejected = fx.stream(&["reject", &run, "--feedback", "again"]);
    let result = &of_type(&rejected, "tool-result")[1]["payload"]["result"];
    assert_eq!(
        result["isError"], true,
        "the default folder is not the plans folder now: {result}"
    );
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("`docs/plans/`"),
        "{result}"
    );
}

#[test]
fn list_and_read_results_are_what_the_model_sees() {
    let fx = Fixture::new(json!([
        {"toolCalls": [
            {"toolCallId": "l", "toolName": "list_files", "args": {}},
            {"toolCallId": "big", "toolName": "read_file", "args": {"path": "big.txt"}}
        ]},
        text("ok")
    ]));
    fx.write("big.txt", &vec![b'x'; 2 * 1024 * 1024]);
    fx.write("target/debug/junk", b"build output");
    let (_, chunks) = fx.start(&[]);
    let listing = &of_type(&chunks, "tool-result")[0]["payload"]["result"];
    let paths: Vec<&str> = listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(
        paths.contains(&"src/lib.rs") && paths.contains(&"big.txt"),
        "{paths:?}"
    );
    assert!(
        !paths.iter().any(|p| p.starts_with("target")),
        "build output is skipped: {paths:?}"
    );
    let error = &of_type(&chunks, "tool-error")[0]["payload"]["error"];
    assert!(
        error
            .as_str()
            .unwrap()
            .contains("2097152 bytes; the limit is 1048576"),
        "{error}"
    );
    let call = &fx.model_calls()[1];
    assert_eq!(
        tool_message(call, "l")["result"],
        *listing,
        "the model sees the whole listing"
    );
}

/// `plandesk completions SHELL` prints a script generated from the command line's definitions:
/// it names the commands, and bash accepts its syntax.
#[test]
fn completions_name_the_commands_and_bash_reads_them() {
    let fx = Fixture::new(json!([]));
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout(&fx, &["completions", shell]);
        for command in ["approve", "pending", "history", "install", "completions"] {
            assert!(script.contains(command), "{shell} completes `{command}`");
        }
        assert!(
            script.contains("build"),
            "{shell} completes --mode's choices"
        );
        // Only bash's and zsh's generators complete the choices of positional arguments.
        if matches!(shell, "bash" | "zsh") {
            for choice in ["claude-code", "anthropic"] {
                assert!(script.contains(choice), "{shell} completes {choice}");
            }
        }
    }
    let bash = fx.root.join("plandesk.bash");
    std::fs::write(&bash, stdout(&fx, &["completions", "bash"])).unwrap();
    let checked = std::process::Command::new("bash")
        .arg("-n")
        .arg(&bash)
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "bash -n refuses the script: {}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let refused = fx.command(&["completions", "tcsh"]).output().unwrap();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("[possible values: bash, "),
        "clap's own error: {err}"
    );
}
