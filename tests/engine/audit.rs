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
        plandesk::audit::answer_with_plan(&entries[3]["data"], revision["body"].as_str()).unwrap();
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

    // An entry that names no plan hashes its revision as "-": naming the plan "-" instead
    // leaves the chain whole, but no plan of that hash is kept, and that is found.
    let (fx, _) = audited_run();
    let db = rusqlite::Connection::open(fx.data.join("plandesk.db")).unwrap();
    let id: i64 = db
        .query_row(
            "SELECT id FROM audit WHERE revision_sha IS NULL ORDER BY id LIMIT 1",
            [],
            |row| row.get(0),
        )
        .unwrap();
    db.execute_batch("DROP TRIGGER audit_is_append_only_update;")
        .unwrap();
    db.execute("UPDATE audit SET revision_sha = '-' WHERE id = ?1", [id])
        .unwrap();
    let out = fx.command(&["audit", "--verify"]).output().unwrap();
    assert!(!out.status.success(), "verification fails");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("broken at entry #{id}")) && said.contains("(revision -)"),
        "{said}"
    );

    // The plans are kept with their revisions, outside the chain: changing one is found all
    // the same, at the first entry naming it (its submission), the approved one as well as a
    // rejected one.
    for (id, entry) in [(2, 3), (1, 1)] {
        let (fx, _) = audited_run();
        let db = rusqlite::Connection::open(fx.data.join("plandesk.db")).unwrap();
        db.execute_batch("DROP TRIGGER plan_revisions_are_append_only_update;")
            .unwrap();
        db.execute(
            "UPDATE plan_revisions SET body = body || 'Also drop the tests.' WHERE id = ?1",
            [id],
        )
        .unwrap();
        let out = fx.command(&["audit", "--verify"]).output().unwrap();
        assert!(!out.status.success(), "verification fails");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            said.contains(&format!("broken at entry #{entry}"))
                && said.contains("the plan it names"),
            "{said}"
        );
    }
}

/// Drops the trigger that keeps entries from being deleted, and deletes those after `keep`.
fn delete_newest_entries(fx: &Fixture, keep: i64) {
    let drop = if on_postgres() {
        "DROP TRIGGER audit_is_append_only ON audit;"
    } else {
        "DROP TRIGGER audit_is_append_only_delete;"
    };
    raw_sql(fx, &format!("{drop} DELETE FROM audit WHERE id > {keep};"));
}

/// `plandesk audit --verify ARGS`: whether it passed, and what it said.
fn verify(fx: &Fixture, args: &[&str]) -> (bool, String) {
    let mut full = vec!["audit", "--verify"];
    full.extend_from_slice(args);
    let out = fx.command(&full).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.success(), said)
}

/// The files in the data folder that record the audit trail's head.
fn anchors(fx: &Fixture) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(&fx.data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("audit-head") && name.ends_with(".json")
        })
        .collect()
}

/// The newest entries of the trail deleted with the append-only guard dropped leave a chain
/// that holds, link by link: only the head kept outside the database shows it was cut.
#[test]
fn removing_the_newest_entries_is_found() {
    let (fx, _) = audited_run();
    let (held, said) = verify(&fx, &[]);
    assert!(held, "the whole trail holds: {said}");
    delete_newest_entries(&fx, 3);
    let (held, said) = verify(&fx, &[]);
    assert!(!held, "a trail cut short must fail verification: {said}");
    assert!(
        said.contains("2 newest entries were removed"),
        "it must say how many of the newest entries are gone: {said}"
    );
    assert!(
        !said.contains("changed or removed") && !said.contains("chain intact"),
        "a cut trail must not be called whole: {said}"
    );
    let json: Value = serde_json::from_slice(
        &fx.command(&["--json", "audit", "--verify"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(json["holds"], false, "{json}");
    assert_eq!(json["head"]["state"], "cut", "{json}");
    assert_eq!(json["head"]["removed"], 2, "{json}");
    // Checking again does not move the record back to the cut trail's end.
    let (held, said) = verify(&fx, &[]);
    assert!(
        !held && said.contains("2 newest entries were removed"),
        "{said}"
    );
}

/// `plandesk audit` names a comment resolved by its lines and words (and the id `resolve`
/// takes), as the entry that recorded it has them, made safe for a terminal.
#[test]
fn the_trail_names_a_resolved_comment_by_its_lines_and_words() {
    let (fx, run) = audited_run();
    let made = fx.ok(&[
        "--json",
        "comment",
        "#2",
        "--lines",
        "1",
        "Looks\u{1b}[31m fine",
    ]);
    let id = serde_json::from_slice::<Value>(&made.stdout).unwrap()["id"]
        .as_i64()
        .unwrap();
    fx.ok(&["resolve", &id.to_string()]);
    let human = String::from_utf8(fx.ok(&["audit", &run]).stdout).unwrap();
    assert!(
        human.contains(&format!("comment #{id} on line 1: \"Looks")),
        "{human}"
    );
    assert!(!human.contains('\u{1b}'), "{human}");
}

/// Deleting the newest entries and writing others in their place (the hash is not secret:
/// anyone can chain entries) is found too: the entry where the recorded head was is another.
#[test]
fn replacing_the_newest_entries_is_found() {
    let (fx, run) = audited_run();
    delete_newest_entries(&fx, 3);
    // A new entry takes the place of entry 4, chained right, and one more takes entry 5's.
    fx.ok(&["comment", "#2", "--lines", "1", "Looks fine"]);
    fx.ok(&["comment", "#2", "--lines", "1", "Still fine"]);
    let entries = jsonl(&fx, &["audit", &run]);
    assert_eq!(entries.len(), 5, "{entries:?}");
    let (held, said) = verify(&fx, &[]);
    assert!(!held, "a replaced head must fail verification: {said}");
    assert!(
        said.contains("entry #5") && said.contains("replaced"),
        "it must name the entry that is not the recorded one: {said}"
    );
}

/// Where there is nothing outside the database to check the end against, verification says
/// so, and does not claim that no entry was removed; from then on the end is recorded.
#[test]
fn without_a_record_of_the_head_verification_says_what_it_could_not_check() {
    let (fx, _) = audited_run();
    let recorded = anchors(&fx);
    assert_eq!(
        recorded.len(),
        1,
        "appending records the head in the data folder: {recorded:?}"
    );
    std::fs::remove_file(&recorded[0]).unwrap();
    let (held, said) = verify(&fx, &[]);
    assert!(held, "the chain itself holds: {said}");
    assert!(
        said.contains("cannot be told") && !said.contains("changed or removed"),
        "without a record it must say the end was not checked: {said}"
    );
    // That check recorded the end it saw: a later cut is found.
    let (held, said) = verify(&fx, &[]);
    assert!(held, "{said}");
    delete_newest_entries(&fx, 4);
    let (held, said) = verify(&fx, &[]);
    assert!(
        !held && said.contains("newest entry was removed"),
        "one entry cut after the head was recorded: {said}"
    );
    if on_postgres() {
        // A team store is appended to from other machines: the record here vouches only for
        // what this machine wrote or checked.
        let (_, said) = {
            let fx = audited_run().0;
            verify(&fx, &[])
        };
        assert!(
            said.contains("other machines"),
            "a team store's check must say what it cannot vouch for: {said}"
        );
    }
}

/// An export starts with the trail's head (how many entries, the newest one's hash): checking
/// the file finds entries cut from its end, and a file without its head line is not called
/// whole.
#[test]
fn an_export_carries_the_head_and_a_cut_export_is_found() {
    let (fx, _) = audited_run();
    let export = fx.root.join("trail.jsonl");
    fx.ok(&["audit", "--export", export.to_str().unwrap()]);
    let text = std::fs::read_to_string(&export).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let parsed: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(parsed.len(), 6, "the head line and the 5 entries: {text}");
    assert_eq!(parsed[0]["head"]["entries"], 5, "{}", parsed[0]);
    assert_eq!(
        parsed[0]["head"]["hash"], parsed[5]["hash"],
        "the head names the newest entry by its hash"
    );
    let (held, said) = verify(&fx, &["--file", export.to_str().unwrap()]);
    assert!(
        held && said.contains("5 entries"),
        "the export holds: {said}"
    );

    let cut = fx.root.join("cut.jsonl");
    std::fs::write(&cut, lines[..4].join("\n") + "\n").unwrap();
    let (held, said) = verify(&fx, &["--file", cut.to_str().unwrap()]);
    assert!(!held, "an export cut short must fail verification: {said}");
    assert!(
        said.contains("2 newest entries were removed"),
        "it must say how many are missing from its end: {said}"
    );

    let headless = fx.root.join("headless.jsonl");
    std::fs::write(&headless, lines[1..].join("\n") + "\n").unwrap();
    let (held, said) = verify(&fx, &["--file", headless.to_str().unwrap()]);
    assert!(
        !held && said.contains("no head line") && !said.contains("changed or removed"),
        "an export without its head cannot be vouched for: {said}"
    );

    let changed = fx.root.join("changed.jsonl");
    std::fs::write(&changed, text.replace("Ada Lovelace", "Mallory")).unwrap();
    let (held, said) = verify(&fx, &["--file", changed.to_str().unwrap()]);
    assert!(
        !held && said.contains("broken at entry #2"),
        "an entry changed in the file is named: {said}"
    );
}

/// Processes appending at once, each with its own store: the record of the head ends at the
/// newest entry, whatever order they recorded theirs in (it only moves forward).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appenders_racing_leave_the_record_at_the_newest_entry() {
    use plandesk::audit::{AuditHead, NewAudit};
    use plandesk::config::StoreLocation;
    use plandesk::store::Actor;
    use plandesk::vocabulary::AuditKind;
    let dir = tempfile::tempdir().unwrap();
    let location = if on_postgres() {
        StoreLocation::choose(Some(&crate::pg::database()), dir.path()).unwrap()
    } else {
        StoreLocation::Sqlite(dir.path().to_owned())
    };
    let appenders: Vec<_> = (0..4)
        .map(|appender| {
            let location = location.clone();
            tokio::spawn(async move {
                let store = location.open().await.unwrap();
                let by = Actor {
                    name: "ana".into(),
                    process: format!("appender-{appender}"),
                };
                for n in 0..20 {
                    let entry = NewAudit {
                        run_id: "",
                        kind: AuditKind::Commented,
                        revision_sha: None,
                        data: json!({"appender": appender, "n": n}),
                        by: &by,
                        at: n,
                    };
                    store.append_audit(&entry).await.unwrap();
                }
            })
        })
        .collect();
    for appender in appenders {
        appender.await.unwrap();
    }
    let store = location.open().await.unwrap();
    let trail = store.audit(None).await.unwrap();
    assert_eq!(trail.len(), 80);
    let anchor = store
        .audit_anchor()
        .expect("a store opened on a data folder records its head there");
    assert_eq!(
        anchor.read().unwrap(),
        Some(AuditHead {
            entries: 80,
            hash: trail[79].hash.clone()
        }),
        "the record names the newest entry, not an older one an appender recorded late"
    );
}
