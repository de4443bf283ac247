//! Reviewing like a colleague, through the real binary against the scripted model: line
//! comments compiled into the feedback the model reads, followed to the next revision as
//! addressed or not, resolved and reopened; a reviewer's own version of the plan, written back
//! and approved with its diff; every step in the audit trail.

use serde_json::{json, Value};

use crate::support::*;

const APPROVED: &str = "Plan approved. Proceed with implementation following the approved plan.";
const REVISED: &str =
    "# Add a cache\n\nUse a TTL cache in front of the store.\n\n1. Measure\n2. Cache\n";

/// A run whose plan is rejected once and revised (the script writes `REVISED`, then submits).
fn revising_run() -> (Fixture, String) {
    let fx = Fixture::new(json!([
        {"toolCalls": [submit("call-1", PLAN)]},
        {"text": "Revising.", "toolCalls": [
            {"toolCallId": "call-2", "toolName": "write_file", "args": {"path": PLAN, "content": REVISED}},
            submit("call-3", PLAN)
        ]},
        text("Building.")
    ]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (run, _) = fx.start(&[]);
    (fx, run)
}

fn pending_revision(fx: &Fixture) -> Value {
    fx.listing(&["pending"])[0]["revision"].clone()
}

#[test]
fn comments_are_sent_quoted_and_followed_to_the_next_revision() {
    let (fx, run) = revising_run();
    let first = pending_revision(&fx)["id"].to_string();
    let ttl = fx.listing(&[
        "comment", &first, "--lines", "3", "Use", "a", "TTL,", "not", "LRU",
    ]);
    assert_eq!(ttl["state"], "open");
    assert_eq!(ttl["quote"], "Use an LRU cache in front of the store.");
    let steps = fx.listing(&[
        "comment",
        &first,
        "--lines",
        "5-6",
        "Measure what, exactly?",
    ]);
    assert_eq!(steps["lines"], json!({"start": 5, "end": 6}));
    let human = String::from_utf8(fx.ok(&["comments", &first]).stdout).unwrap();
    assert!(human.contains("> 5 | 1. Measure"), "{human}");

    fx.stream(&["reject", &run, "--feedback", "Keep it small."]);
    let calls = fx.model_calls();
    let result = &tool_message(&calls[1], "call-1")["result"];
    let feedback = result["submittedPlan"]["feedback"].as_str().unwrap();
    assert_eq!(
        feedback,
        format!(
            "Comments on lines of {PLAN}:\n\n\
             Line 3:\n> 3 | Use an LRU cache in front of the store.\nUse a TTL, not LRU\n\n\
             Lines 5-6:\n> 5 | 1. Measure\n> 6 | 2. Cache\nMeasure what, exactly?\n\n\
             Overall: Keep it small."
        ),
        "each comment quotes its lines with their numbers, then the overall note"
    );
    assert!(result["content"]
        .as_str()
        .unwrap()
        .contains(&format!("User feedback: {feedback}")));

    // Revision 2 changed line 3 and kept lines 5-6.
    let second = pending_revision(&fx);
    assert_eq!(second["revisionNo"], 2);
    let shown = fx.listing(&["comments", &second["id"].to_string()]);
    let states: Vec<(&str, Value)> = shown
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["state"].as_str().unwrap(), c["now"].clone()))
        .collect();
    assert_eq!(
        states,
        [
            ("addressed", json!({"start": 3, "end": 3})),
            ("not-addressed", json!({"start": 5, "end": 6}))
        ]
    );
    let steps_id = steps["id"].to_string();
    assert_eq!(fx.listing(&["resolve", &steps_id])["state"], "resolved");
    let shown = fx.listing(&["comments", &second["id"].to_string()]);
    assert_eq!(shown[1]["state"], "resolved");
    assert!(shown[1]["resolvedBy"].as_str().is_some());
    fx.listing(&["resolve", &steps_id, "--reopen"]);
    let shown = fx.listing(&["comments", &second["id"].to_string()]);
    assert_eq!(shown[1]["state"], "not-addressed", "reopened");

    // The first revision's comments are not sent again with the second.
    fx.stream(&["reject", &run, "--feedback", "Still no."]);
    let calls = fx.model_calls();
    assert_eq!(
        tool_message(&calls[2], "call-3")["result"]["submittedPlan"]["feedback"],
        "Still no."
    );

    let audit = fx.stream(&["audit", &run]);
    let kinds: Vec<&str> = audit.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "commented").count(),
        2,
        "{kinds:?}"
    );
    assert!(kinds.contains(&"comment-resolved") && kinds.contains(&"comment-reopened"));
    assert_eq!(
        String::from_utf8(fx.ok(&["audit", "--verify"]).stdout)
            .unwrap()
            .lines()
            .count(),
        1
    );
}

#[test]
fn open_comments_alone_are_the_feedback() {
    let (fx, run) = revising_run();
    let first = pending_revision(&fx)["id"].to_string();
    fx.ok(&["comment", &first, "--lines", "3", "TTL"]);
    let resumed = fx.stream(&["reject", &run]);
    let content = resumed[0]["payload"]["result"]["content"].as_str().unwrap();
    assert!(
        content.contains("User feedback: Comments on lines of")
            && content.contains("> 3 | Use an LRU"),
        "comments without --feedback are sent, and the model revises: {content}"
    );
    assert_eq!(pending_revision(&fx)["revisionNo"], 2);
}

#[test]
fn comments_name_real_lines_and_say_something() {
    let (fx, _run) = revising_run();
    let first = pending_revision(&fx)["id"].to_string();
    for (lines, expected) in [
        ("0", "lines 0-0: revision 1 has lines 1-6"),
        ("5-7", "lines 5-7: revision 1 has lines 1-6"),
        ("4-3", "lines 4-3: revision 1 has lines 1-6"),
        ("two", "lines two: give a line number or a range"),
    ] {
        let err = fx.refused(&["comment", &first, "--lines", lines, "x"]);
        assert!(err.contains(expected), "{lines}: {err}");
    }
    let err = fx.refused(&["comment", &first, "--lines", "3", "   "]);
    assert!(err.contains("the comment is empty"), "{err}");
    let long = "x".repeat(8_001);
    let err = fx.refused(&["comment", &first, "--lines", "3", &long]);
    assert!(err.contains("longer than 8000 characters"), "{err}");
    let err = fx.refused(&["resolve", "999"]);
    assert!(err.contains("no comment 999"), "{err}");
}

#[test]
fn an_edited_plan_is_approved_with_its_diff() {
    let fx = Fixture::new(json!([{"toolCalls": [submit("call-1", PLAN)]}, text("Building.")]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (run, _) = fx.start(&[]);
    let original = pending_revision(&fx);
    let edited = fx.edit(
        &original["id"],
        b"# Add a cache\n\nUse an LRU cache in front of the store.\n\n1. Measure p99 first\n2. Cache\n",
    );
    assert_eq!(edited["revision"]["revisionNo"], 2);
    assert!(edited["revision"]["author"].as_str().is_some(), "{edited}");
    assert_eq!(edited["written"], true);
    let on_disk = std::fs::read_to_string(fx.workspace.join(PLAN)).unwrap();
    assert!(
        on_disk.contains("Measure p99 first"),
        "written back: {on_disk}"
    );
    let history = fx.listing(&["history", &run]);
    assert_eq!(
        (history[0]["status"].as_str(), history[1]["status"].as_str()),
        (Some("superseded"), Some("pending"))
    );

    // The revision seen before the edit can no longer be approved.
    let sha = original["sha256"].as_str().unwrap();
    let err = fx.refused(&["approve", &run, "--revision", &sha[..12]]);
    assert!(err.contains("the plan changed since it was shown"), "{err}");

    let new_sha = edited["revision"]["sha256"].as_str().unwrap();
    let resumed = fx.stream(&[
        "approve",
        &run,
        "--revision",
        &new_sha[..12],
        "--note",
        "Thanks",
    ]);
    let result = &resumed[0]["payload"]["result"];
    let content = result["content"].as_str().unwrap();
    assert!(content.starts_with(APPROVED), "{content}");
    assert!(
        content.contains("changed the plan before approving it"),
        "{content}"
    );
    assert!(
        content.contains("-1. Measure\n+1. Measure p99 first"),
        "the unified diff: {content}"
    );
    assert!(content.ends_with("Reviewer notes: Thanks"), "{content}");
    assert_eq!(
        result["submittedPlan"]["plan"],
        "Use an LRU cache in front of the store.\n\n1. Measure p99 first\n2. Cache"
    );
    let calls = fx.model_calls();
    assert_eq!(
        calls[1]["tools"],
        json!(["read_file", "list_files", "write_file"]),
        "build mode"
    );
    assert_eq!(
        tool_message(&calls[1], "call-1")["result"]["content"],
        content
    );
    let kinds: Vec<String> = fx
        .stream(&["audit", &run])
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["submitted", "edited", "decided", "mode-switched"]);
}

#[test]
fn edits_are_refused_when_they_change_nothing_or_come_too_late() {
    let fx = Fixture::new(json!([{"toolCalls": [submit("call-1", PLAN)]}, text("ok")]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (run, _) = fx.start(&[]);
    let id = pending_revision(&fx)["id"].to_string();
    let same = fx.write("same.md", PLAN_TEXT.as_bytes());
    let err = fx.refused(&["edit", &id, "--file", same.to_str().unwrap()]);
    assert!(err.contains("nothing to save"), "{err}");
    let empty = fx.write("empty.md", b"\n\n");
    let err = fx.refused(&["edit", &id, "--file", empty.to_str().unwrap()]);
    assert!(err.contains("empty"), "{err}");
    let huge = fx.write("huge.md", &vec![b'a'; 1024 * 1024 + 1]);
    let err = fx.refused(&["edit", &id, "--file", huge.to_str().unwrap()]);
    assert!(err.contains("larger than a plan may be"), "{err}");
    let binary = fx.write("bin.md", &[0xff, 0xfe, 0x00]);
    let err = fx.refused(&["edit", &id, "--file", binary.to_str().unwrap()]);
    assert!(err.contains("not UTF-8"), "{err}");

    // The agent's file changed meanwhile: the edit counts, the file is left alone.
    fx.write(PLAN, b"# Something else\n");
    let mine = fx.write("mine.md", b"# Add a cache\n\nMine.\n");
    let edited = fx.listing(&["edit", &id, "--file", mine.to_str().unwrap()]);
    assert!(
        edited["notWritten"]
            .as_str()
            .unwrap()
            .contains("no longer holds revision"),
        "{edited}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.workspace.join(PLAN)).unwrap(),
        "# Something else\n"
    );

    fx.stream(&["approve", &run]);
    let err = fx.refused(&["edit", &id, "--file", mine.to_str().unwrap()]);
    assert!(
        err.contains("already decided") || err.contains("changed since"),
        "{err}"
    );
}

#[test]
fn history_search_finds_text_in_titles_and_plans_through_the_index() {
    let (fx, run) = revising_run();
    fx.stream(&["reject", &run, "--feedback", "TTL"]);
    let found = |query: &str| -> Vec<i64> {
        fx.listing(&["history", "--search", query])
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["revisionNo"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(found("ttl"), [2], "case ignored");
    assert_eq!(found("LRU"), [1]);
    assert_eq!(found("cach"), [1, 2], "a word's start finds it");
    assert_eq!(found("in front of the"), [1, 2], "words in a row");
    assert_eq!(found("ttl cache in fr"), [2]);
    assert_eq!(found("cache store"), Vec::<i64>::new(), "not in a row");
    assert_eq!(found("Add a cache"), [1, 2], "titles too");
    // A person's text is never FTS5 syntax.
    for odd in [
        "\"",
        "*",
        "NEAR(cache",
        "cache OR",
        "-lru",
        "title:cache",
        "^x",
    ] {
        fx.listing(&["history", &format!("--search={odd}")]);
    }
    assert_eq!(found("\"ttl\""), [2]);
}
