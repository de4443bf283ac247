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
    assert_eq!(entries[4]["data"], json!({"from": "plan", "to": "build"}));
    let human = String::from_utf8(fx.ok(&["audit"]).stdout).unwrap();
    assert!(
        human.contains("Ada Lovelace") && human.contains("rejected"),
        "{human}"
    );
    let verified = String::from_utf8(fx.ok(&["audit", "--verify"]).stdout).unwrap();
    assert!(verified.contains("5 entries, chain intact"), "{verified}");
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
}
