//! Decisions that must be refused, and must change nothing when they are.

use serde_json::json;

use crate::support::*;

fn revised_fixture() -> (Fixture, String) {
    let fx = Fixture::new(json!([
        {"toolCalls": [submit("c1", PLAN)]},
        {"toolCalls": [
            {"toolCallId": "w", "toolName": "write_file", "args": {"path": PLAN, "content": "# Add a cache\n\nRevised.\n"}},
            submit("c2", PLAN)
        ]},
        text("ok")
    ]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (run, _) = fx.start(&[]);
    (fx, run)
}

#[test]
fn decision_on_a_stale_revision_is_refused_and_changes_nothing() {
    let (fx, run) = revised_fixture();
    let first_sha = fx.listing(&["pending"])[0]["revision"]["sha256"]
        .as_str()
        .unwrap()
        .to_owned();
    fx.stream(&["reject", &run, "--feedback", "shorter"]);
    let before = (fx.listing(&["pending"]), fx.listing(&["history"]));
    let err = fx.refused(&["approve", &run, "--revision", &first_sha[..12]]);
    assert!(err.contains("the plan changed since it was shown"), "{err}");
    assert!(
        err.contains("revision 2"),
        "names the pending revision: {err}"
    );
    assert_eq!(
        (fx.listing(&["pending"]), fx.listing(&["history"])),
        before,
        "a refused decision changes nothing"
    );
}

#[test]
fn second_decision_on_the_same_suspension_is_refused() {
    let (fx, run) = revised_fixture();
    fx.stream(&["reject", &run, "--feedback", "shorter"]);
    let before = fx.listing(&["history"]);
    let err = fx.refused(&["approve", &run, "--tool-call-id", "c1"]);
    assert!(err.contains("already decided: rejected by "), "{err}");
    assert_eq!(fx.listing(&["history"]), before);
    let err = fx.refused(&[
        "resume",
        &run,
        "--tool-call-id",
        "c1",
        "--data",
        r#"{"action":"approved"}"#,
    ]);
    assert!(err.contains("already decided"), "{err}");
}

#[test]
fn decisions_for_unknown_runs_and_calls_are_refused() {
    let (fx, run) = revised_fixture();
    let err = fx.refused(&["approve", "no-such-run"]);
    assert!(err.contains("no run matches `no-such-run`"), "{err}");
    let err = fx.refused(&["approve", &run, "--tool-call-id", "nope"]);
    assert!(
        err.contains("nothing with tool call id nope is pending"),
        "{err}"
    );
    let err = fx.refused(&["resume", &run, "--data", "{not json"]);
    assert!(err.contains("--data is not valid JSON"), "{err}");
    assert_eq!(
        fx.listing(&["pending"]).as_array().unwrap().len(),
        1,
        "still pending after the refusals"
    );
}

#[test]
fn a_finished_run_takes_no_decision_and_a_suspended_run_takes_no_message() {
    let (fx, run) = revised_fixture();
    let err = fx.refused(&["send", &run, "hello"]);
    assert!(err.contains("waiting for a decision on c1"), "{err}");
    fx.stream(&["reject", &run, "--feedback", "x"]);
    fx.stream(&["approve", &run]);
    let err = fx.refused(&["approve", &run]);
    assert!(
        err.contains("is finished, not waiting for a decision"),
        "{err}"
    );
}

#[test]
fn bad_arguments_exit_non_zero_with_one_line() {
    let fx = Fixture::new(json!([]));
    let err = fx.refused(&["run", "--model", "gpt-imaginary", "x"]);
    assert!(err.contains("unknown model `gpt-imaginary`"), "{err}");
    let err = fx.refused(&["run", "--model", "scripted:/does/not/exist.json", "x"]);
    assert!(
        err.contains("scripted model file /does/not/exist.json"),
        "{err}"
    );
    let err = fx.refused(&["run", "--workspace", "/does/not/exist", "x"]);
    assert!(err.contains("/does/not/exist"), "{err}");
    let err = fx.refused(&["show", "999"]);
    assert!(err.contains("no plan revision 999"), "{err}");
    assert!(!fx
        .command(&["run", "--max-steps", "0", "x"])
        .output()
        .unwrap()
        .status
        .success());
}

/// Issue 8 #11: a one-character `--revision` matched any plan; a sha prefix needs 8 hex digits,
/// and an all-digit key names a revision number unless it is long enough to be ambiguous.
#[test]
fn revision_keys_must_name_one_revision_unambiguously() {
    let (fx, run) = revised_fixture();
    let before = fx.listing(&["pending"]);
    let sha = before[0]["revision"]["sha256"].as_str().unwrap().to_owned();
    for short in [&sha[..1], &sha[..4], &sha[..7], "zzzzzzzz"] {
        let err = fx.refused(&["approve", &run, "--revision", short]);
        assert!(
            err.contains("at least 8 hex digits"),
            "`{short}` is refused with what to give: {err}"
        );
    }
    assert_eq!(fx.listing(&["pending"]), before, "nothing was decided");
    fx.ok(&["approve", &run, "--revision", &sha[..8]]);

    assert_eq!(
        fx.listing(&["show", "1"])["id"],
        1,
        "a short number is a revision number"
    );
    assert_eq!(fx.listing(&["show", "#1"])["id"], 1);
    assert_eq!(fx.listing(&["show", &sha[..8]])["sha256"], sha);
    let err = fx.refused(&["show", "abc"]);
    assert!(err.contains("at least 8 hex digits"), "{err}");
    // Eight digits and more could be a number or the start of a hash: found when it is one of
    // them (here neither), never guessed.
    let err = fx.refused(&["show", "12345678"]);
    assert!(err.contains("no plan revision 12345678"), "{err}");
}
