//! Decisions: racing reviewers, the revision a decision is bound to, and the plan it echoes.

use serde_json::Value;

use super::*;

on_both_stores!(
    racing_reviewers_record_exactly_one_decision,
    a_decision_is_bound_to_the_revision_seen,
    a_decided_plan_is_stored_once_and_read_whole,
    what_was_decided_cannot_be_rewritten_with_sql,
);

async fn racing_reviewers_record_exactly_one_decision(location: StoreLocation) {
    let store = store_with_run(&location, "r").await;
    let items: Vec<OpenItem> = (0..5)
        .map(|i| plan_item(&format!("call-{i}"), &format!("# Plan {i}\n\nStep {i}.\n")))
        .collect();
    open_items(&*store, &items).await;
    // Each plan, decided by four reviewers at once, each on a connection of their own.
    let mut racers = Vec::new();
    for call in 0..5 {
        for reviewer in 0..4 {
            let store = location.open().await.unwrap();
            racers.push(tokio::spawn(async move {
                let call = format!("call-{call}");
                let action = if reviewer % 2 == 0 {
                    Action::Approved
                } else {
                    Action::Rejected
                };
                let actor = Actor {
                    name: format!("reviewer-{reviewer}"),
                    process: "app".into(),
                };
                let made = decision(&call, action, None);
                let outcome = store
                    .record_decision(&NewDecision { by: &actor, ..made })
                    .await;
                (call, actor.name, outcome)
            }));
        }
    }
    let mut winners = std::collections::HashMap::new();
    let mut losers = Vec::new();
    for racer in racers {
        match racer.await.unwrap() {
            (call, who, Ok(made)) => {
                assert_eq!(made.decided_by.as_deref(), Some(who.as_str()));
                assert!(
                    winners.insert(call, (who, made.action)).is_none(),
                    "two winners"
                );
            }
            (call, _, Err(err @ StoreError::AlreadyDecided { .. })) => losers.push((call, err)),
            (_, _, Err(other)) => panic!("a racer failed otherwise: {other}"),
        }
    }
    let won = winners.len();
    assert_eq!(losers.len(), 15);
    // Each loser is told who decided, and what.
    for (call, err) in losers {
        let (winner, action) = &winners[&call];
        let StoreError::AlreadyDecided {
            decided_by,
            action: first,
            ..
        } = &err
        else {
            unreachable!()
        };
        assert_eq!(
            (decided_by.as_deref(), first),
            (Some(winner.as_str()), action)
        );
        assert!(
            err.to_string()
                .contains(&format!("{action} by {winner} at ")),
            "{err}"
        );
    }
    assert_eq!(won, 5, "one winner per plan");
    assert!(store.open_items(None).await.unwrap().is_empty());
    let decided = store
        .audit(Some("r"))
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "decided")
        .count();
    assert_eq!(decided, 5, "one audit entry per decision");
    for call in 0..5 {
        assert!(store
            .decision("r", &format!("call-{call}"))
            .await
            .unwrap()
            .is_some());
    }
}

async fn a_decision_is_bound_to_the_revision_seen(location: StoreLocation) {
    let store = store_with_run(&location, "r").await;
    let item = plan_item("c1", "# Cache\n\nAdd a cache.\n");
    let seen = item.plan.clone().unwrap().sha256;
    open_items(&*store, std::slice::from_ref(&item)).await;
    // A reviewer edits the plan: a decision on the agent's revision is now stale.
    let edited = plan("# Cache\n\nAdd an LRU cache.\n");
    let edit = NewEdit {
        run_id: "r",
        tool_call_id: "c1",
        expect_sha: &seen[..12],
        plan: &edited,
        by: &ACTOR,
        at: 2_000,
    };
    let revision = store.edit_plan(&edit).await.unwrap();
    assert_eq!(revision.author.as_deref(), Some("ana"));
    assert!(revision.open);
    assert_eq!(revision.revision_no, 2);
    let err = store.edit_plan(&edit).await.unwrap_err();
    assert!(matches!(err, StoreError::StaleRevision { .. }), "{err}");
    let err = store
        .record_decision(&decision("c1", Action::Approved, Some(&seen)))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::StaleRevision { pending_no: 2, .. }),
        "{err}"
    );
    let made = store
        .record_decision(&decision("c1", Action::Approved, Some(&edited.sha256[..8])))
        .await
        .unwrap();
    assert_eq!(made.revision_id, Some(revision.id));
    // What the record answers is what is stored (it is not read back), and the audit trail
    // names the revision decided: the edit.
    assert_eq!(
        store.decision("r", "c1").await.unwrap().as_ref(),
        Some(&made)
    );
    let trail = store.audit(Some("r")).await.unwrap();
    let entry = trail.last().unwrap();
    assert_eq!(
        (entry.kind.as_str(), entry.revision_sha.as_deref()),
        ("decided", Some(edited.sha256.as_str()))
    );
    let err = store
        .record_decision(&decision("c1", Action::Rejected, None))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::AlreadyDecided {
                action: Action::Approved,
                ..
            }
        ),
        "{err}"
    );
    let err = store
        .record_decision(&decision("c9", Action::Rejected, None))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotPending { .. }), "{err}");
    // A decided item is never reopened by a later commit that still lists it.
    store
        .commit(&commit("r", 2, 1, &[], &[item]))
        .await
        .unwrap();
    assert!(store.open_items(Some("r")).await.unwrap().is_empty());
}

/// A decision's resume data as its row holds it, read past the store: what was written.
async fn stored_resume_data(location: &StoreLocation, run_id: &str, call: &str) -> Value {
    let sql = "SELECT resume_data FROM decisions WHERE run_id = $1 AND tool_call_id = $2";
    let text: String = match location {
        StoreLocation::Sqlite(dir) => rusqlite::Connection::open(dir.join(DB_FILE))
            .unwrap()
            .query_row(&sql.replace('$', "?"), [run_id, call], |r| r.get(0))
            .unwrap(),
        StoreLocation::Postgres { url, .. } => crate::support::pg_client(url)
            .await
            .query_one(sql, &[&run_id, &call])
            .await
            .unwrap()
            .get(0),
    };
    serde_json::from_str(&text).unwrap()
}

/// A plan's decision as the engine records it: resume data echoing the plan, and the answer
/// with and without it.
async fn decide_plan(
    store: &dyn Store,
    call: &str,
    data: &Value,
) -> (DecisionRow, String, Option<String>) {
    use plandesk::tool::{submit_plan, ToolOutcome};
    let text = |data: &Value| match submit_plan::result_for(data) {
        ToolOutcome::Value(result) => result.to_string(),
        other => panic!("a plan's decision has a result: {other:?}"),
    };
    let answer = text(data);
    let without = submit_plan::without_plan(data).map(|without| text(&without));
    let action = if data["action"] == "approved" {
        Action::Approved
    } else {
        Action::Rejected
    };
    let made = store
        .record_decision(&NewDecision {
            resume_data: data,
            feedback: data["feedback"].as_str(),
            answer: Some(&answer),
            answer_without_plan: without.as_deref(),
            ..decision(call, action, None)
        })
        .await
        .unwrap();
    (made, answer, without)
}

/// The plan a decision's resume data echoes is written once, with its revision, when it is
/// that revision's body; every read but a listing's has it whole, and the audit trail names
/// it by the revision's hash, from which the exact answer is rebuilt. A plan that is not the
/// decided revision's (the reviewer edited it since) is kept whole in both.
async fn a_decided_plan_is_stored_once_and_read_whole(location: StoreLocation) {
    let store = store_with_run(&location, "r").await;
    let (first, second) = (
        "# Cache\n\nAdd a \"cache\".\n",
        "# Index\n\nAdd an index.\n",
    );
    open_items(&*store, &[plan_item("c1", first), plan_item("c2", second)]).await;
    let edited = plan("# Index\n\nAdd two indexes.\n");
    store
        .edit_plan(&NewEdit {
            run_id: "r",
            tool_call_id: "c2",
            expect_sha: &plan(second).sha256,
            plan: &edited,
            by: &ACTOR,
            at: 2_000,
        })
        .await
        .unwrap();
    let approved = json!({"action": "approved", "path": "plans/p.md", "title": "Cache",
                          "plan": first, "notes": "Ship it"});
    let (made, answer, without) = decide_plan(&*store, "c1", &approved).await;
    assert_eq!(
        made.resume_data, approved,
        "what was recorded, as it was given"
    );
    // The plan the agent submitted, rejected after the reviewer edited it: not the decided
    // revision's body.
    let rejected = json!({"action": "rejected", "path": "plans/p.md", "title": "Index",
                          "plan": second, "feedback": "Why two?"});
    let (_, answer_2, _) = decide_plan(&*store, "c2", &rejected).await;

    let mut stored = approved.clone();
    stored["plan"] = Value::Null;
    assert_eq!(
        stored_resume_data(&location, "r", "c1").await,
        stored,
        "stored once"
    );
    assert_eq!(stored_resume_data(&location, "r", "c2").await, rejected);
    for (call, data) in [("c1", &approved), ("c2", &rejected)] {
        let read = store.decision("r", call).await.unwrap().unwrap();
        assert_eq!(&read.resume_data, data, "{call}: read back whole");
    }
    let decided: Vec<_> = store
        .revisions(Some("r"))
        .await
        .unwrap()
        .into_iter()
        .filter_map(|r| Some((r.body, r.decision?.resume_data)))
        .collect();
    assert_eq!(
        decided,
        [
            (first.to_owned(), approved.clone()),
            (edited.body.clone(), rejected.clone())
        ],
        "the history has it whole"
    );
    let of_run = Listing {
        run_id: Some("r"),
        ..Listing::default()
    };
    let listed: Vec<Value> = store
        .revision_list(&of_run)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|r| Some(r.decision?.resume_data))
        .collect();
    assert_eq!(listed, [Value::Null, Value::Null], "a listing has none");

    let trail = store.audit(Some("r")).await.unwrap();
    let entries: Vec<&AuditRow> = trail.iter().filter(|e| e.kind == "decided").collect();
    let [once, whole] = entries[..] else {
        panic!("two decisions: {trail:?}")
    };
    assert_eq!(once.data["answerPlan"], ANSWER_PLAN_IS_REVISION);
    assert_eq!(once.data["answer"].as_str(), without.as_deref());
    assert!(!once.data.to_string().contains("Add a"), "{once:?}");
    assert_eq!(
        once.revision_sha.as_deref(),
        Some(plan(first).sha256.as_str())
    );
    assert_eq!(
        answer_with_plan(&once.data, Some(first)),
        Some(answer.clone())
    );
    assert_eq!(
        answer_with_plan(&once.data, None),
        None,
        "the plan is needed"
    );
    assert_eq!(whole.data.get("answerPlan"), None);
    assert_eq!(answer_with_plan(&whole.data, None), Some(answer_2));
    let check = plandesk::review::check_chain(&store.audit(None).await.unwrap());
    assert_eq!(check.broken, None);
}

/// A plan, its decision and the work after it are kept as written: the database itself refuses
/// to change or remove them, whoever asks (a bug in Plandesk, a hand with SQL).
async fn what_was_decided_cannot_be_rewritten_with_sql(location: StoreLocation) {
    let store = store_with_run(&location, "r").await;
    let plans = [
        plan_item("c1", "# Plan\n\nStep one.\n"),
        plan_item("c2", "# Plan\n\nStep two.\n"),
    ];
    open_items(&*store, &plans).await;
    for (call, action) in [("c1", Action::Rejected), ("c2", Action::Approved)] {
        store
            .record_decision(&decision(call, action, None))
            .await
            .unwrap();
    }
    let work = NewWork {
        of: WorkOf::Run("r"),
        at: 2_000,
        work: Work::file("src/lib.rs", json!({})),
    };
    assert!(store.record_work(&work).await.unwrap().is_some());
    let mut statements = vec![
        "UPDATE decisions SET action = 'approved' WHERE tool_call_id = 'c1'",
        "DELETE FROM decisions WHERE tool_call_id = 'c1'",
        "UPDATE plan_revisions SET body = 'Also drop the tests.'",
        "DELETE FROM plan_revisions WHERE tool_call_id = 'c1'",
        "UPDATE work SET path = 'elsewhere'",
        "DELETE FROM work",
    ];
    if matches!(location, StoreLocation::Postgres { .. }) {
        statements.extend(["TRUNCATE decisions", "TRUNCATE work"]);
    }
    for sql in statements {
        let refused = raw(&location, sql).expect_err(sql);
        assert!(refused.contains("append-only"), "{sql}: {refused}");
    }
    let rejected = store.decision("r", "c1").await.unwrap().unwrap();
    assert_eq!(rejected.action, Action::Rejected);
}
