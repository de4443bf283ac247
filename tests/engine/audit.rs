//! The audit trail: every submission, decision and mode switch, who (the reviewer) and from
//! which process, with the exact text the model received; append-only and hash-chained, so
//! `audit --verify` names the entry someone changed.

use serde_json::{json, Value};

use crate::support::*;

const APPROVED: &str = "Plan approved. Proceed with implementation following the approved plan.";

fn jsonl(fx: &Fixture, args: &[&str]) -> Vec<Value> {
    let mut full = vec!["--json"];
    full.extend_from_slice(args);
    String::from_utf8(fx.ok(&full).stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn audited_run() -> (Fixture, String) {
    let fx = Fixture::new(json!([
        {"toolCalls": [submit("c1", PLAN)]},
        {"toolCalls": [submit("c2", PLAN)]},
        text("Building.")
    ]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (run, _) = fx.start(&[]);
    fx.write(PLAN, b"# Add a cache\n\nMeasure first.\n");
    let mut reject = fx.command(&["reject", &run, "--feedback", "Measure first"]);
    assert!(reject
        .env("PLANDESK_REVIEWER", "Ada Lovelace")
        .status()
        .unwrap()
        .success());
    let mut approve = fx.command(&["approve", &run]);
    assert!(approve
        .env("PLANDESK_REVIEWER", "Ada Lovelace")
        .status()
        .unwrap()
        .success());
    (fx, run)
}

#[test]
fn every_submission_decision_and_mode_switch_is_in_the_trail() {
    let (fx, run) = audited_run();
    let entries = jsonl(&fx, &["audit", &run]);
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "submitted",
            "decided",
            "submitted",
            "decided",
            "mode-switched"
        ],
        "{entries:?}"
    );
    let rejected = &entries[1];
    assert_eq!(rejected["actor"], "Ada Lovelace", "who decided");
    assert_eq!(rejected["process"], "cli", "from which process");
    assert_eq!(rejected["data"]["action"], "rejected");
    let answer: Value = serde_json::from_str(rejected["data"]["answer"].as_str().unwrap()).unwrap();
    assert!(
        answer["content"]
            .as_str()
            .unwrap()
            .contains("User feedback: Measure first"),
        "the exact text the model received: {answer}"
    );
    assert_eq!(
        rejected["revisionSha"], entries[0]["revisionSha"],
        "a decision names the revision it was made on"
    );
    let approved: Value =
        serde_json::from_str(entries[3]["data"]["answer"].as_str().unwrap()).unwrap();
    assert_eq!(approved["content"], APPROVED);
    // The approved plan is the revision's: the entry names it rather than holding it again,
    // and the exact answer is rebuilt from the revision, as the model received it.
    assert_eq!(entries[3]["data"]["answerPlan"], "revision");
    assert_eq!(approved["submittedPlan"]["plan"], Value::Null);
    let history = fx.listing(&["history", &run]);
    let revision = history
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["sha256"] == entries[3]["revisionSha"])
        .unwrap();
    let rebuilt =
        plandesk::store::answer_with_plan(&entries[3]["data"], revision["body"].as_str()).unwrap();
    let calls = fx.model_calls();
    let received = &tool_message(calls.last().unwrap(), "c2")["result"];
    assert_eq!(serde_json::from_str::<Value>(&rebuilt).unwrap(), *received);
    // So does the rejection's, on the first revision.
    assert_eq!(entries[1]["data"]["answerPlan"], "revision");
    assert_eq!(entries[4]["data"], json!({"from": "plan", "to": "build"}));
    let human = String::from_utf8(fx.ok(&["audit"]).stdout).unwrap();
    assert!(
        human.contains("Ada Lovelace") && human.contains("rejected"),
        "{human}"
    );
    let verified = String::from_utf8(fx.ok(&["audit", "--verify"]).stdout).unwrap();
    assert!(verified.contains("5 entries, chain intact"), "{verified}");
}

/// Resume data that does not fit is answered with a validation error: the decision is
/// recorded as invalid (not as the approval it claims to be), the trail keeps that answer
/// whole, and the run does not switch mode.
#[test]
fn an_invalid_decision_keeps_its_answer_whole() {
    let fx = Fixture::new(json!([{"toolCalls": [submit("c1", PLAN)]}, text("Hm.")]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (run, _) = fx.start(&[]);
    let data = json!({"action": "approved", "plan": PLAN_TEXT, "extra": true}).to_string();
    fx.stream(&["resume", &run, "--data", &data]);
    let entries = jsonl(&fx, &["audit", &run]);
    let decided = entries.iter().find(|e| e["kind"] == "decided").unwrap();
    assert_eq!(decided["data"].get("answerPlan"), None, "{decided}");
    assert_eq!(decided["data"]["action"], "invalid");
    let answer: Value = serde_json::from_str(decided["data"]["answer"].as_str().unwrap()).unwrap();
    let calls = fx.model_calls();
    let received = &tool_message(calls.last().unwrap(), "c1")["result"];
    assert_eq!(answer, *received, "the exact text the model received");
    assert!(
        entries.iter().all(|e| e["kind"] != "mode-switched"),
        "{entries:?}"
    );
    assert_eq!(fx.listing(&["runs"])[0]["mode"], "plan");
}

#[test]
fn tampering_with_one_entry_is_found_and_named() {
    if sqlite_only("tampering_with_one_entry_is_found_and_named") {
        return;
    }
    let (fx, _) = audited_run();
    let db = rusqlite::Connection::open(fx.data.join("plandesk.db")).unwrap();
    let refused = db.execute("UPDATE audit SET actor = 'Mallory' WHERE id = 2", []);
    assert!(refused.is_err(), "the trail is append-only");
    // Someone with the file in hand drops the guard and rewrites who decided.
    db.execute_batch("DROP TRIGGER audit_is_append_only_update;")
        .unwrap();
    db.execute("UPDATE audit SET actor = 'Mallory' WHERE id = 2", [])
        .unwrap();
    let out = fx.command(&["audit", "--verify"]).output().unwrap();
    assert!(!out.status.success(), "verification fails");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("broken at entry #2") && said.contains("changed"),
        "{said}"
    );

    let (fx, _) = audited_run();
    let db = rusqlite::Connection::open(fx.data.join("plandesk.db")).unwrap();
    db.execute_batch("DROP TRIGGER audit_is_append_only_delete; DELETE FROM audit WHERE id = 3;")
        .unwrap();
    let said =
        String::from_utf8_lossy(&fx.command(&["audit", "--verify"]).output().unwrap().stdout)
            .into_owned();
    assert!(said.contains("entry 3 is missing"), "{said}");

    // The plan an answer names is kept with its revision, outside the chain: changing it is
    // found all the same, at the decision that named it.
    let (fx, _) = audited_run();
    let db = rusqlite::Connection::open(fx.data.join("plandesk.db")).unwrap();
    db.execute(
        "UPDATE plan_revisions SET body = body || 'Also drop the tests.' WHERE id = 2",
        [],
    )
    .unwrap();
    let out = fx.command(&["audit", "--verify"]).output().unwrap();
    assert!(!out.status.success(), "verification fails");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("broken at entry #4") && said.contains("the plan its answer names"),
        "{said}"
    );
}
