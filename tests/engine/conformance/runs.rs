//! Runs: commits in order, the latest run, claims on a run, and outside sessions' items.

use super::*;

on_both_stores!(
    commits_follow_each_other_and_a_stale_one_is_refused,
    the_latest_run_is_the_most_recently_active,
    a_claim_is_held_until_released_by_its_holder_or_expired,
    outside_sessions_open_items_with_waiters,
    an_outside_session_stands_as_its_agent_last_reported,
    a_session_reviewed_before_it_followed_its_agent_is_set_as_it_reported,
    a_conversation_reads_back_whole_whoever_wrote_each_part,
);

async fn commits_follow_each_other_and_a_stale_one_is_refused(location: StoreLocation) {
    let store = store_with_run(&location, "r").await;
    let more = vec![json!({"role": "assistant", "content": "ok"}).to_string()];
    store.commit(&commit("r", 1, 2, &more, &[])).await.unwrap();
    // A second writer that loaded version 1 too is refused, and nothing of it is kept.
    let err = store
        .commit(&commit("r", 1, 2, &[], &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Conflict {
                expected: 1,
                found: 2,
                ..
            }
        ),
        "{err}"
    );
    // Messages must continue where the stored ones end.
    let err = store
        .commit(&commit("r", 2, 5, &more, &[]))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Invalid { .. }), "{err}");
    let loaded = store.load("r").await.unwrap();
    assert_eq!((loaded.version, loaded.messages.len()), (2, 2));
    assert_eq!(loaded.messages[1], more[0]);
    assert_eq!(
        store.snapshot_count("r").await.unwrap(),
        1,
        "a snapshot replaces the one it supersedes"
    );
    assert!(matches!(
        store.load("nope").await.unwrap_err(),
        StoreError::UnknownRun(_)
    ));
    assert_eq!(store.resolve_run("r").await.unwrap(), "r");
    assert_eq!(store.runs().await.unwrap().len(), 1);
    // A derived commit (what durable decisions imply; see durability.rs) is one like any
    // other, only its wait for the disk may be skipped.
    store
        .commit(&Commit {
            derived: true,
            ..commit("r", 2, 2, &[], &[])
        })
        .await
        .unwrap();
    assert_eq!(store.load("r").await.unwrap().version, 3);
    assert_eq!(
        store
            .commit(&commit("r", 2, 2, &[], &[]))
            .await
            .unwrap_err()
            .to_string(),
        store
            .commit(&Commit {
                derived: true,
                ..commit("r", 2, 2, &[], &[])
            })
            .await
            .unwrap_err()
            .to_string(),
        "refused alike"
    );
}

async fn the_latest_run_is_the_most_recently_active(location: StoreLocation) {
    let store = location.open().await.unwrap();
    assert!(store.latest_run().await.unwrap().is_none(), "no run yet");
    let latest = async || {
        let latest = store.latest_run().await.unwrap().unwrap();
        let runs = store.runs().await.unwrap();
        assert_eq!(latest.id, runs[0].id, "the first of the listing");
        latest.id
    };
    create_run(&*store, "b").await;
    create_run(&*store, "a").await;
    // Both created at 1_000: the listing's tie is broken by id.
    assert_eq!(latest().await, "a");
    store.commit(&commit("b", 1, 1, &[], &[])).await.unwrap();
    assert_eq!(latest().await, "b");
    store.commit(&commit("a", 1, 1, &[], &[])).await.unwrap();
    store.commit(&commit("a", 2, 1, &[], &[])).await.unwrap();
    assert_eq!(latest().await, "a");
}

async fn a_claim_is_held_until_released_by_its_holder_or_expired(location: StoreLocation) {
    let store = store_with_run(&location, "r").await;
    let lease = |holder, until, now| Lease { holder, until, now };
    assert_eq!(
        store.claim("r", &lease("a", 100, 0)).await.unwrap(),
        ClaimOutcome::Claimed
    );
    assert_eq!(
        store.claim("r", &lease("b", 100, 50)).await.unwrap(),
        ClaimOutcome::Held {
            holder: "a".into(),
            until: 100
        }
    );
    store.release("r", "b").await.unwrap();
    assert!(
        store.run("r").await.unwrap().holder.is_some(),
        "only the holder can release"
    );
    assert!(!store
        .take_over("r", "b", &lease("c", 200, 60))
        .await
        .unwrap());
    assert!(store
        .take_over("r", "a", &lease("c", 200, 60))
        .await
        .unwrap());
    assert!(!store.renew("r", &lease("a", 300, 70)).await.unwrap());
    assert_eq!(
        store.claim("r", &lease("d", 400, 201)).await.unwrap(),
        ClaimOutcome::Claimed,
        "an expired lease is claimed"
    );
    store.release("r", "d").await.unwrap();
    assert_eq!(store.run("r").await.unwrap().holder, None);
}

async fn outside_sessions_open_items_with_waiters(location: StoreLocation) {
    let store = location.open().await.unwrap();
    let source = Source {
        kind: SourceKind::ClaudeCode,
        session: Some("s-1".into()),
    };
    let new = |id| NewRun {
        id,
        prompt: "refactor",
        model: "claude",
        workspace: "/ws",
        source: &source,
    };
    let waiter = Lease {
        holder: "host/1/abc",
        until: 100,
        now: 20,
    };
    let item = store
        .open_item(
            &new("run-a"),
            &plan_item("t1", "# Refactor\n\nSplit it.\n"),
            &waiter,
            &ACTOR,
        )
        .await
        .unwrap();
    assert_eq!(item.run_id, "run-a");
    assert_eq!(item.revision.as_ref().map(|r| r.revision_no), Some(1));
    assert_eq!(
        store.run("run-a").await.unwrap().status,
        RunStatus::Suspended
    );
    let err = store
        .open_item(
            &new("run-b"),
            &plan_item("t1", "# Refactor\n\nSplit it.\n"),
            &waiter,
            &ACTOR,
        )
        .await
        .unwrap_err();
    // One run per session: the same session's item is found open on run-a.
    assert!(matches!(err, StoreError::Invalid { .. }), "{err}");
    // Renewed by its holder's name, with holders of nothing open beside it.
    let renewed = store
        .renew_waiters(&["host/1/abc", "host/9/gone", "it's \"quoted\""], 200)
        .await
        .unwrap();
    assert_eq!(renewed, 1);
    assert_eq!(store.renew_waiters(&["host/2/def"], 300).await.unwrap(), 0);
    assert_eq!(store.renew_waiters(&[], 300).await.unwrap(), 0);
    assert_eq!(
        store.waited_items().await.unwrap(),
        vec![WaitedItem {
            run_id: "run-a".into(),
            tool_call_id: "t1".into(),
            waiter: Some(("host/1/abc".into(), 200)),
        }]
    );
    let abandoned = NewDecision {
        run_id: "run-a",
        ..decision("t1", Action::Abandoned, None)
    };
    let before = store.newest_decision().await.unwrap();
    let recorded = store.record_decision(&abandoned).await.unwrap();
    // What a waiting process reads to learn which items were decided.
    assert!(recorded.id > before);
    assert_eq!(store.newest_decision().await.unwrap(), recorded.id);
    assert_eq!(
        store.decided_after(before, 10).await.unwrap(),
        vec![Decided {
            id: recorded.id,
            run_id: "run-a".into(),
            tool_call_id: "t1".into(),
        }]
    );
    assert_eq!(store.decided_after(recorded.id, 10).await.unwrap(), vec![]);
    assert_eq!(store.run("run-a").await.unwrap().status, RunStatus::Running);
    let err = store
        .open_item(
            &new("run-c"),
            &plan_item("t1", "# Again\n"),
            &waiter,
            &ACTOR,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::AlreadyDecided { .. }), "{err}");
}

/// A message of `n` as a model writes it while revising a plan: mostly what it wrote before.
fn revised(n: usize) -> String {
    let plan: String = (0..80)
        .map(|step| format!("{step}. Move table {step}, check it (revision {})\n", n / 2))
        .collect();
    json!({"role": "assistant", "n": n, "content": plan, "note": "é ✓ 漢字"}).to_string()
}

/// Long messages are stored against those before them: each store that appends or reads
/// must see the same conversation, also one that opened the store later (it knows nothing of
/// what came before) and one whose tail of it is stale (another wrote since).
async fn a_conversation_reads_back_whole_whoever_wrote_each_part(location: StoreLocation) {
    let first = store_with_run(&location, "r").await;
    let mut all = vec![json!({"role": "user", "content": "make it faster"}).to_string()];
    let batch = |from: usize| (from..from + 3).map(revised).collect::<Vec<_>>();
    let (one, two, three) = (batch(1), batch(4), batch(7));
    first.commit(&commit("r", 1, 4, &one, &[])).await.unwrap();
    all.extend(one);
    // Another process: it never saw the conversation.
    let second = location.open().await.unwrap();
    second.commit(&commit("r", 2, 7, &two, &[])).await.unwrap();
    all.extend(two);
    // The first again: what it kept of the conversation is three messages behind.
    first
        .commit(&commit("r", 3, 10, &three, &[]))
        .await
        .unwrap();
    all.extend(three);
    for store in [&first, &second, &location.open().await.unwrap()] {
        let loaded = store.load("r").await.unwrap();
        assert_eq!(loaded.messages, all);
        assert_eq!(loaded.version, 4);
    }
}

/// Once approved, an outside session says what its agent last reported: working after a file or
/// a command, finished when it said so, waiting on the person again with its next plan.
async fn an_outside_session_stands_as_its_agent_last_reported(location: StoreLocation) {
    let store = location.open().await.unwrap();
    let source = Source {
        kind: SourceKind::ClaudeCode,
        session: Some("s-9".into()),
    };
    let new = NewRun {
        id: "run-s",
        prompt: "add a cache",
        model: "claude",
        workspace: "/ws",
        source: &source,
    };
    let waiter = Lease {
        holder: "host/1/abc",
        until: 100_000,
        now: 20,
    };
    let first = plan_item("t1", "# Cache\n\n1. Bound it\n");
    store
        .open_item(&new, &first, &waiter, &ACTOR)
        .await
        .unwrap();
    let approved = NewDecision {
        run_id: "run-s",
        ..decision("t1", Action::Approved, None)
    };
    store.record_decision(&approved).await.unwrap();
    let status = || async { store.run("run-s").await.unwrap().status };
    assert_eq!(status().await, RunStatus::Running);
    let report = |at, work| NewWork {
        of: WorkOf::Session {
            kind: SourceKind::ClaudeCode,
            session: "s-9",
        },
        at,
        work,
    };
    let finished = || Work::of_kind(WorkKind::Finished, json!({}));
    store
        .record_work(&report(6_000, finished()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        status().await,
        RunStatus::Finished,
        "its agent said it was done"
    );
    assert_eq!(store.run("run-s").await.unwrap().updated_at, 6_000);
    store
        .record_work(&report(7_000, Work::file("src/cache.rs", json!({}))))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status().await, RunStatus::Running, "it works again");
    store
        .record_work(&report(7_500, Work::file("src/lib.rs", json!({}))))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        store.run("run-s").await.unwrap().updated_at,
        7_000,
        "a report that changes nothing of it leaves its row as it is"
    );
    store
        .record_work(&report(8_000, finished()))
        .await
        .unwrap()
        .unwrap();
    let next = plan_item("t2", "# Cache, part two\n\n1. Evict\n");
    store.open_item(&new, &next, &waiter, &ACTOR).await.unwrap();
    assert_eq!(status().await, RunStatus::Suspended);
    // Its work now belongs to no approved plan: nothing is recorded, and the plan still waits.
    assert!(store
        .record_work(&report(9_000, finished()))
        .await
        .unwrap()
        .is_none());
    assert_eq!(status().await, RunStatus::Suspended);
}

/// A session approved before its status followed its agent stood "running": the migration sets
/// the one whose agent last said, on the plan approved, that it finished; not one working
/// since, one whose newer plan was rejected, nor one with a plan open.
async fn a_session_reviewed_before_it_followed_its_agent_is_set_as_it_reported(
    location: StoreLocation,
) {
    let store = location.open().await.unwrap();
    let waiter = Lease {
        holder: "host/1/abc",
        until: 100_000,
        now: 20,
    };
    let sessions = [
        ("done", WorkKind::Finished, None),
        ("working", WorkKind::File, None),
        ("revised", WorkKind::Finished, Some(Action::Rejected)),
        ("asking", WorkKind::Finished, Some(Action::Approved)),
    ];
    for (session, last, next) in sessions {
        let source = Source {
            kind: SourceKind::Codex,
            session: Some(session.into()),
        };
        let new = NewRun {
            id: session,
            prompt: "add a cache",
            model: "codex",
            workspace: "/ws",
            source: &source,
        };
        let first = plan_item("t1", "# Cache\n\n1. Bound it\n");
        store
            .open_item(&new, &first, &waiter, &ACTOR)
            .await
            .unwrap();
        let approved = NewDecision {
            run_id: session,
            ..decision("t1", Action::Approved, None)
        };
        store.record_decision(&approved).await.unwrap();
        for (at, kind) in [
            (6_000, WorkKind::Finished),
            (6_500, WorkKind::Command),
            (7_000, last),
        ] {
            let work = NewWork {
                of: WorkOf::Run(session),
                at,
                work: Work::of_kind(kind, json!({})),
            };
            store.record_work(&work).await.unwrap().unwrap();
        }
        if let Some(action) = next {
            let second = plan_item("t2", "# Cache, again\n\n1. Evict\n");
            store
                .open_item(&new, &second, &waiter, &ACTOR)
                .await
                .unwrap();
            // "asking" keeps its second plan open.
            if action == Action::Rejected {
                let rejected = NewDecision {
                    run_id: session,
                    ..decision("t2", action, None)
                };
                store.record_decision(&rejected).await.unwrap();
            }
        }
    }
    // As an older Plandesk left them.
    raw(&location, "UPDATE runs SET status = 'running'").unwrap();
    let (folder, file) = match location {
        StoreLocation::Sqlite(_) => ("sqlite", "0019_sessions-as-reported.sql"),
        StoreLocation::Postgres { .. } => ("postgres", "0010_sessions-as-reported.sql"),
    };
    let path = format!("{}/migrations/{folder}/{file}", env!("CARGO_MANIFEST_DIR"));
    raw(&location, &std::fs::read_to_string(path).unwrap()).unwrap();
    let status = async |id| store.run(id).await.unwrap().status;
    assert_eq!(status("done").await, RunStatus::Finished);
    for session in ["working", "revised", "asking"] {
        assert_eq!(status(session).await, RunStatus::Running, "{session}");
    }
}
