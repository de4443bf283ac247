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
    assert!(
        err.contains("already decided: rejected by "),
        "the revision seen was decided: what, by whom and when: {err}"
    );
    // A revision that was replaced undecided (here: one never submitted) is stale.
    let err = fx.refused(&["approve", &run, "--revision", &"0".repeat(12)]);
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
fn letting_plandesks_own_run_edit_without_asking_is_refused_and_changes_nothing() {
    let (fx, run) = revised_fixture();
    let before = (fx.listing(&["pending"]), fx.listing(&["history"]));
    let err = fx.refused(&["approve", &run, "--accept-edits"]);
    assert!(
        err.contains("only an approval of a Claude Code plan can let it edit files without asking")
            && err.contains("is Plandesk's own"),
        "{err}"
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
    assert!(
        err.contains(&format!("`plandesk resume {run}` continues it")),
        "the refusal names the command that carries the run on: {err}"
    );
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
    assert!(err.contains("already decided: approved by "), "{err}");
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

/// Issue 33 #8: an approval and a rejection at once. Exactly one is recorded; the other is told
/// what was decided, by whom and when (it was often told the run "is running, not waiting for a
/// decision"), and on PostgreSQL the same.
#[test]
fn the_loser_of_a_decision_race_is_told_what_was_decided_by_whom() {
    for round in 0..5 {
        let (fx, run) = revised_fixture();
        // Both decide the revision they saw, as the app does.
        let sha = fx.listing(&["pending"])[0]["revision"]["sha256"]
            .as_str()
            .unwrap()[..12]
            .to_owned();
        let mut approve = fx.command(&["approve", &run, "--revision", &sha]);
        approve.env("USER", "ana");
        let mut reject = fx.command(&["reject", &run, "--revision", &sha, "--feedback", "smaller"]);
        reject.env("USER", "ben");
        let approve = std::thread::spawn(move || approve.output().unwrap());
        let reject = std::thread::spawn(move || reject.output().unwrap());
        let (approved, rejected) = (approve.join().unwrap(), reject.join().unwrap());
        assert_ne!(
            approved.status.success(),
            rejected.status.success(),
            "round {round}: exactly one decision wins"
        );
        let (loser, winner) = if approved.status.success() {
            (rejected, "approved by ana")
        } else {
            (approved, "rejected by ben")
        };
        let err = String::from_utf8_lossy(&loser.stderr);
        assert!(
            err.contains(&format!("already decided: {winner} at ")),
            "round {round}: the loser hears what was decided, by whom and when: {err}"
        );
        let history = fx.listing(&["history"]);
        let first = history
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["sha256"].as_str().unwrap().starts_with(&sha))
            .unwrap();
        assert_eq!(
            first["decision"]["decidedBy"].as_str(),
            Some(winner.rsplit(' ').next().unwrap()),
            "round {round}: the revision has the winner's decision: {first}"
        );
    }
}
