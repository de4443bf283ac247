//! The history: revisions compared and searched, statuses as the CLI has them, the audit view.

use super::*;

#[test]
fn reject_with_feedback_then_compare_and_search_history() {
    let fx = fixture();
    let item = fx.ok("inbox", json!({}))[0].clone();
    fx.ok(
        "decide",
        json!({"request": {"runId": item["runId"], "toolCallId": item["toolCallId"], "approve": false,
                           "feedback": "Also log to a file", "revision": item["sha256"]}, "onEvent": channel()}),
    );
    let inbox = fx.wait_inbox("revision 2", |i| i[0]["revisionNo"] == 2);
    let second = &inbox[0];
    let comparison = fx.ok(
        "compare",
        json!({"left": second["revisionId"], "right": item["revisionId"]}),
    );
    assert_eq!(comparison["left"]["revisionNo"], 1, "ordered oldest first");
    assert_eq!(
        comparison["between"],
        json!([{"revisionNo": 1, "action": "rejected", "feedback": "Also log to a file"}])
    );
    assert!(comparison["diff"]["added"].as_u64().unwrap() > 0);
    let thread = fx.ok("plan_thread", json!({"id": second["revisionId"]}));
    let statuses: Vec<&str> = thread
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["rejected", "pending"]);
    for id in [&item["revisionId"], &second["revisionId"]] {
        let revision = fx.ok("revision", json!({"id": id}));
        assert_eq!(revision["revisionsInThread"], 2, "{id}: its thread so far");
    }
    let rejected = fx.ok("history", json!({"filter": {"status": "rejected"}}));
    assert_eq!(rejected["revisions"].as_array().unwrap().len(), 1);
    assert_eq!(rejected["revisions"][0]["feedback"], "Also log to a file");
    assert_eq!(rejected["more"], false);
    let found = fx.ok("history", json!({"filter": {"query": "LOG TO A FILE"}}));
    assert_eq!(
        found["revisions"].as_array().unwrap().len(),
        1,
        "search is case-insensitive over plan text: only revision 2 mentions it"
    );
    let none = fx.ok("history", json!({"filter": {"query": "no such words"}}));
    assert_eq!(none, json!({"revisions": [], "more": false}));
    // A page at a time, newest first, each after the last one's end.
    let first = fx.ok("history", json!({"filter": {"status": "all"}, "limit": 1}));
    assert_eq!(first["revisions"][0]["id"], second["revisionId"]);
    assert_eq!(first["more"], true);
    let next = fx.ok(
        "history",
        json!({"filter": {}, "before": second["revisionId"], "limit": 1}),
    );
    assert_eq!(next["revisions"][0]["id"], item["revisionId"]);
    assert_eq!(next["more"], false);
}

/// Issue 9: the CLI and the app once disagreed about an undecided old revision. Both now read
/// statuses from the review core: every revision shows the same status in the CLI's history
/// (`Review::revisions`, what `plandesk history` prints) and in the app's history, thread and
/// revision views.
#[test]
fn the_cli_and_the_app_show_the_same_status_for_every_revision() {
    let fx = fixture();
    let item = fx.ok("inbox", json!({}))[0].clone();
    fx.ok(
        "decide",
        json!({"request": {"runId": item["runId"], "toolCallId": item["toolCallId"], "approve": false,
                           "feedback": "Also log to a file"}, "onEvent": channel()}),
    );
    let inbox = fx.wait_inbox("revision 2", |i| i[0]["revisionNo"] == 2);
    // Resume data that fits no schema: recorded as invalid, the revision superseded.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let engine = Engine::open(&fx.data).unwrap();
    let run_id = inbox[0]["runId"].as_str().unwrap().to_owned();
    let _ = runtime.block_on(engine.resume(&run_id, None, json!({"action": "maybe"}), &mut |_| {}));
    let cli: Vec<(i64, String)> = runtime
        .block_on(engine.review().revisions(None))
        .unwrap()
        .into_iter()
        .map(|r| (r.id, r.status.as_str().to_owned()))
        .collect();
    let statuses: Vec<&str> = cli.iter().map(|(_, s)| s.as_str()).collect();
    assert!(
        statuses.contains(&"rejected") && statuses.contains(&"superseded"),
        "{statuses:?}"
    );
    let history = fx.ok("history", json!({}))["revisions"].clone();
    for (id, status) in &cli {
        // Filtered by its status (in the store's query), the history lists it, and only the
        // revisions of that status.
        let of_status = fx.ok("history", json!({"filter": {"status": status}}));
        let ids: Vec<i64> = of_status["revisions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_i64().unwrap())
            .collect();
        let expected: Vec<i64> = cli
            .iter()
            .rev()
            .filter(|(_, s)| s == status)
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(ids, expected, "history of status {status}");
        let in_history = history
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == *id)
            .unwrap();
        assert_eq!(in_history["status"], *status, "history, revision {id}");
        assert_eq!(
            fx.ok("revision", json!({"id": id}))["status"],
            *status,
            "revision {id}"
        );
        let thread = fx.ok("plan_thread", json!({"id": id}));
        let mine = thread
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == *id)
            .unwrap();
        assert_eq!(mine["status"], *status, "plan thread, revision {id}");
    }
}
/// The audit view says what its check found: the trail checked to its newest entry, then,
/// with the record of its head outside the database two entries further (as the two newest
/// entries deleted from the database leave it), cut.
#[test]
fn the_audit_view_says_when_the_newest_entries_were_removed() {
    let fx = fixture();
    let view = fx.ok("audit", json!({"runId": null}));
    let check = &view["check"];
    assert_eq!(check["holds"], true, "{check}");
    assert!(
        check["summary"]
            .as_str()
            .unwrap()
            .contains("None was changed or removed"),
        "the whole trail, checked to its end: {check}"
    );
    let entries = view["entries"].as_array().unwrap().len();
    let anchor = plandesk::audit::AuditAnchor::local(&fx.data);
    std::fs::write(
        anchor.path(),
        json!({"entries": entries + 2, "hash": "of an entry deleted since"}).to_string(),
    )
    .unwrap();
    let check = fx.ok("audit", json!({"runId": null}))["check"].clone();
    assert_eq!(check["holds"], false, "a cut trail does not hold: {check}");
    let said = check["summary"].as_str().unwrap();
    assert!(
        said.contains("2 newest entries were removed") && !said.contains("changed or removed"),
        "the view says the trail was cut, and how much: {said}"
    );
}
