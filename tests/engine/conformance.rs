//! The store's contract, checked on both backends: each test below runs once on a SQLite file
//! and once on a fresh database of a real PostgreSQL server (see `pg.rs`), through the `Store`
//! trait only, so the two cannot drift apart.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use plandesk::config::StoreLocation;
use plandesk::store::*;
use serde_json::{json, Value};

static ACTOR: std::sync::LazyLock<Actor> = std::sync::LazyLock::new(|| Actor {
    name: "ana".into(),
    process: "test".into(),
});

/// Each test, once per backend.
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let dir = tempfile::tempdir().unwrap();
                    let location = plandesk::config::StoreLocation::Sqlite(dir.path().to_owned());
                    super::$name(location).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let location =
                        plandesk::config::StoreLocation::postgres(crate::pg::database());
                    super::$name(location).await;
                }
            )*
        }
    };
}

on_both_stores!(
    commits_follow_each_other_and_a_stale_one_is_refused,
    the_latest_run_is_the_most_recently_active,
    a_claim_is_held_until_released_by_its_holder_or_expired,
    racing_reviewers_record_exactly_one_decision,
    a_decision_is_bound_to_the_revision_seen,
    revisions_list_with_their_decisions_and_are_found_by_hash_and_words,
    a_listing_is_read_a_page_at_a_time_whatever_its_filter,
    comments_are_resolved_and_reopened_and_the_audit_chain_holds,
    outside_sessions_open_items_with_waiters,
    settings_round_trip,
    another_connections_commit_is_heard,
    a_store_opened_twice_is_migrated_once,
    tokens_are_created_found_by_hash_and_revoked,
    a_plan_too_big_for_a_word_index_is_kept_and_found,
    a_decided_plan_is_stored_once_and_read_whole,
);

fn commit<'a>(
    run_id: &'a str,
    expect_version: i64,
    message_count: i64,
    new_messages: &'a [String],
    open: &'a [OpenItem],
) -> Commit<'a> {
    Commit {
        run_id,
        expect_version,
        schema_version: 1,
        state: "{}",
        status: if open.is_empty() {
            RunStatus::Running
        } else {
            RunStatus::Suspended
        },
        mode: "plan",
        message_count,
        new_messages,
        open,
        event: None,
        at: 1_000 + expect_version,
        by: &ACTOR,
        derived: false,
    }
}

fn plan(body: &str) -> PlanText {
    use sha2::{Digest, Sha256};
    PlanText {
        path: "plans/p.md".into(),
        title: body
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("# ")
            .into(),
        body: body.into(),
        sha256: hex::encode(Sha256::digest(body.as_bytes())),
    }
}

fn plan_item(call: &str, body: &str) -> OpenItem {
    OpenItem {
        tool_call_id: call.into(),
        kind: ItemKind::Plan,
        tool_name: "submit_plan".into(),
        args: json!({"path": "plans/p.md"}),
        plan: Some(plan(body)),
    }
}

async fn store_with_run(location: &StoreLocation, id: &str) -> Arc<dyn Store> {
    let store = location.open().await.unwrap();
    create_run(&*store, id).await;
    store
}

/// Creates run `id` (its snapshot version 1, at 1_000).
async fn create_run(store: &dyn Store, id: &str) {
    let run = NewRun {
        id,
        prompt: "make it faster",
        model: "demo",
        workspace: "/ws",
        source: &Source::engine(),
    };
    let first = vec![json!({"role": "user", "content": "make it faster"}).to_string()];
    store
        .create_run(&run, &commit(id, 0, 1, &first, &[]))
        .await
        .unwrap();
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

/// Opens `items` on run `r` (its snapshot version 1 -> 2).
async fn open_items(store: &dyn Store, items: &[OpenItem]) {
    store.commit(&commit("r", 1, 1, &[], items)).await.unwrap();
}

fn decision<'a>(call: &'a str, action: Action, expect_sha: Option<&'a str>) -> NewDecision<'a> {
    static DATA: std::sync::LazyLock<serde_json::Value> =
        std::sync::LazyLock::new(|| json!({"approved": true}));
    NewDecision {
        run_id: "r",
        tool_call_id: call,
        action,
        feedback: None,
        resume_data: &DATA,
        expect_sha,
        at: 5_000,
        by: &ACTOR,
        answer: Some("ok"),
        answer_without_plan: None,
        mode_after: None,
    }
}

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
    assert_eq!(store.snapshot_count("r").await.unwrap(), 2);
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

async fn revisions_list_with_their_decisions_and_are_found_by_hash_and_words(
    location: StoreLocation,
) {
    let store = store_with_run(&location, "r").await;
    let bodies = [
        "# Crème brûlée service\n\nAdd a retry loop to the HTTP client.\n",
        "# Cache\n\nThe client retries; add a loop.\n",
        "# Élan\n\nNothing to see.\n",
    ];
    let items: Vec<OpenItem> = bodies
        .iter()
        .enumerate()
        .map(|(i, body)| plan_item(&format!("c{i}"), body))
        .collect();
    open_items(&*store, &items).await;
    store
        .record_decision(&decision("c0", Action::Rejected, None))
        .await
        .unwrap();
    let all = store.revisions(Some("r")).await.unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(
        all.iter().map(|r| r.revision_no).collect::<Vec<_>>(),
        [1, 2, 3],
        "numbered per plan file"
    );
    assert_eq!(
        all[0].decision.as_ref().map(|d| d.action),
        Some(Action::Rejected)
    );
    assert!(!all[0].open && all[1].open && all[2].open);
    assert_eq!(all[1].prompt, "make it faster");
    assert_eq!(store.revision(all[2].id).await.unwrap(), all[2]);
    assert!(matches!(
        store.revision(999_999).await.unwrap_err(),
        StoreError::UnknownRevision(999_999)
    ));
    let by_sha = store.revisions_by_sha(&all[1].sha256[..6]).await.unwrap();
    assert_eq!(by_sha, vec![all[1].clone()]);
    assert!(store.revisions_by_sha("zzzz").await.unwrap().is_empty());

    let search = |words: &[&str]| {
        let store = store.clone();
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        async move {
            store
                .search_revisions(None, &words)
                .await
                .unwrap()
                .iter()
                .map(|r| r.tool_call_id.clone())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        search(&["retry", "lo"]).await,
        ["c0"],
        "words in a row, last a prefix"
    );
    assert_eq!(search(&["retr"]).await, ["c0", "c1"]);
    assert_eq!(
        search(&["creme", "BRULEE"]).await,
        ["c0"],
        "accents and case ignored"
    );
    assert_eq!(search(&["élan"]).await, ["c2"], "the title counts");
    assert!(search(&["loop", "retry"]).await.is_empty(), "order matters");
    assert!(
        search(&["etry"]).await.is_empty(),
        "a word's start, not its middle"
    );
    assert!(search(&["\"'*:&|!()"]).await.is_empty(), "no search syntax");
    assert_eq!(
        store
            .search_revisions(Some("other"), &["retry".to_string()])
            .await
            .unwrap(),
        vec![]
    );
    // A listing is the same revisions without their bodies, and without their decisions'
    // resume data (an engine run's echoes the whole plan).
    assert_eq!(
        all[0].decision.as_ref().map(|d| &d.resume_data),
        Some(&json!({"approved": true}))
    );
    let listed_form = |r: &RevisionRow| RevisionRow {
        body: String::new(),
        decision: r.decision.clone().map(|d| DecisionRow {
            resume_data: serde_json::Value::Null,
            ..d
        }),
        ..r.clone()
    };
    let of_run = Listing {
        run_id: Some("r"),
        ..Listing::default()
    };
    let listed = store.revision_list(&of_run).await.unwrap();
    assert_eq!(
        listed,
        all.iter().rev().map(listed_form).collect::<Vec<_>>()
    );
    let words = vec!["retr".to_string()];
    let searched = Listing {
        words: &words,
        ..Listing::default()
    };
    let listed = store.revision_list(&searched).await.unwrap();
    assert_eq!(
        listed,
        all[..2].iter().rev().map(listed_form).collect::<Vec<_>>()
    );
    let other_run = Listing {
        run_id: Some("other"),
        ..searched
    };
    assert_eq!(store.revision_list(&other_run).await.unwrap(), vec![]);
}

/// Every page of `listing`, `limit` at a time, each starting after the last one's end, put
/// together.
async fn every_page(store: &dyn Store, listing: Listing<'_>, limit: usize) -> Vec<RevisionRow> {
    let mut all: Vec<RevisionRow> = Vec::new();
    loop {
        let page = store
            .revision_list(&Listing {
                before: all.last().map(|r| r.id),
                limit: Some(limit),
                ..listing
            })
            .await
            .unwrap();
        assert!(page.len() <= limit, "{} on a page of {limit}", page.len());
        let last = page.len() < limit;
        all.extend(page);
        if last {
            return all;
        }
    }
}

/// A listing read a page at a time (newest first, the next page after the last one's end) is
/// the whole listing, whatever it is filtered by: a state, words (PostgreSQL reads the words'
/// candidates in batches and keeps those that have them in a row), a run. A page is full while
/// there are more.
async fn a_listing_is_read_a_page_at_a_time_whatever_its_filter(location: StoreLocation) {
    let store = store_with_run(&location, "r").await;
    // 450 plans: a third say "retry loop", the rest have both words but not in a row (so
    // that PostgreSQL's index finds candidates that are not hits, more than a batch of them).
    let items: Vec<OpenItem> = (0..450)
        .map(|i| {
            let words = if i % 3 == 0 {
                "a retry loop"
            } else {
                "loop, then retry"
            };
            plan_item(
                &format!("c{i}"),
                &format!("# Plan {i}\n\nAdd {words} to part {i}.\n"),
            )
        })
        .collect();
    open_items(&*store, &items).await;
    // Every action on some; then some of the undecided closed (superseded), the rest open.
    for (i, item) in items.iter().enumerate().filter(|(i, _)| i % 5 != 0) {
        let action = Action::ALL[i % Action::ALL.len()];
        store
            .record_decision(&decision(&item.tool_call_id, action, None))
            .await
            .unwrap();
    }
    let still_open: Vec<OpenItem> = items.iter().step_by(10).cloned().collect();
    store
        .commit(&commit("r", 2, 1, &[], &still_open))
        .await
        .unwrap();

    let whole = store.revision_list(&Listing::default()).await.unwrap();
    assert_eq!(whole.len(), 450);
    assert!(whole.windows(2).all(|w| w[0].id > w[1].id), "newest first");
    assert_eq!(every_page(&*store, Listing::default(), 7).await, whole);
    assert_eq!(every_page(&*store, Listing::default(), 450).await, whole);

    let mut kinds: Vec<States> = Action::ALL
        .iter()
        .map(|&action| States {
            actions: vec![action],
            ..States::default()
        })
        .collect();
    kinds.push(States {
        undecided_open: true,
        ..States::default()
    });
    kinds.push(States {
        undecided_closed: true,
        ..States::default()
    });
    kinds.push(States {
        actions: vec![Action::Rejected, Action::Declined],
        undecided_closed: true,
        ..States::default()
    });
    kinds.push(States::default());
    for states in &kinds {
        let expected: Vec<RevisionRow> = whole
            .iter()
            .filter(|r| match &r.decision {
                Some(d) => states.actions.contains(&d.action),
                None if r.open => states.undecided_open,
                None => states.undecided_closed,
            })
            .cloned()
            .collect();
        assert!(
            !expected.is_empty() || *states == States::default(),
            "{states:?} has revisions to list"
        );
        let listing = Listing {
            states: Some(states),
            ..Listing::default()
        };
        assert_eq!(
            store.revision_list(&listing).await.unwrap(),
            expected,
            "{states:?}"
        );
        assert_eq!(
            every_page(&*store, listing, 7).await,
            expected,
            "{states:?}"
        );
    }

    let words = vec!["retry".to_string(), "lo".to_string()];
    let searched = Listing {
        words: &words,
        ..Listing::default()
    };
    let hits: Vec<RevisionRow> = whole
        .iter()
        .filter(|r| r.tool_call_id[1..].parse::<usize>().unwrap() % 3 == 0)
        .cloned()
        .collect();
    assert_eq!(hits.len(), 150);
    assert_eq!(store.revision_list(&searched).await.unwrap(), hits);
    assert_eq!(every_page(&*store, searched, 7).await, hits);
    // Pages with more hits than PostgreSQL's batch of 200 candidates holds.
    assert_eq!(every_page(&*store, searched, 100).await, hits);
    let approved = States {
        actions: vec![Action::Approved],
        ..States::default()
    };
    let approved_hits = Listing {
        states: Some(&approved),
        ..searched
    };
    let expected: Vec<RevisionRow> = hits
        .iter()
        .filter(|r| {
            r.decision
                .as_ref()
                .is_some_and(|d| d.action == Action::Approved)
        })
        .cloned()
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(every_page(&*store, approved_hits, 4).await, expected);
    // A page sparser than PostgreSQL's batch of candidates: fewer than 10 in each 200.
    let open = States {
        undecided_open: true,
        ..States::default()
    };
    let open_hits = Listing {
        states: Some(&open),
        ..searched
    };
    let expected: Vec<RevisionRow> = hits.iter().filter(|r| r.open).cloned().collect();
    assert_eq!(expected.len(), 15);
    assert_eq!(every_page(&*store, open_hits, 10).await, expected);
    let elsewhere = Listing {
        run_id: Some("other"),
        ..Listing::default()
    };
    assert!(every_page(&*store, elsewhere, 7).await.is_empty());
    let here = Listing {
        run_id: Some("r"),
        ..Listing::default()
    };
    assert_eq!(every_page(&*store, here, 7).await, whole);
}

async fn comments_are_resolved_and_reopened_and_the_audit_chain_holds(location: StoreLocation) {
    let store = store_with_run(&location, "r").await;
    open_items(&*store, &[plan_item("c1", "# A\n\nline two\nline three\n")]).await;
    let revision = store.revisions(Some("r")).await.unwrap().remove(0);
    let comment = store
        .add_comment(&NewComment {
            run_id: "r",
            revision_id: revision.id,
            revision_sha: &revision.sha256,
            line_start: 3,
            line_end: 4,
            quote: "line two\nline three",
            body: "Say which lines",
            by: &ACTOR,
            at: 3_000,
        })
        .await
        .unwrap();
    assert_eq!((comment.line_start, comment.line_end), (3, 4));
    let resolved = store
        .set_comment_resolved(comment.id, true, &ACTOR, 3_100)
        .await
        .unwrap();
    assert_eq!(resolved.resolved_by.as_deref(), Some("ana"));
    // Resolving again changes nothing (and writes no audit entry).
    store
        .set_comment_resolved(comment.id, true, &ACTOR, 3_200)
        .await
        .unwrap();
    let reopened = store
        .set_comment_resolved(comment.id, false, &ACTOR, 3_300)
        .await
        .unwrap();
    assert_eq!(reopened.resolved_at, None);
    assert_eq!(store.comments("r").await.unwrap(), vec![reopened]);
    assert!(matches!(
        store
            .set_comment_resolved(999, true, &ACTOR, 1)
            .await
            .unwrap_err(),
        StoreError::UnknownComment(999)
    ));
    store
        .append_audit(&NewAudit {
            run_id: "r",
            kind: AuditKind::Answered,
            revision_sha: None,
            data: json!({"text": "ünïcode \"quoted\""}),
            by: &ACTOR,
            at: 4_000,
        })
        .await
        .unwrap();
    let trail = store.audit(None).await.unwrap();
    assert_eq!(
        trail.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(),
        [
            "submitted",
            "commented",
            "comment-resolved",
            "comment-reopened",
            "answered"
        ]
    );
    let mut prev = String::new();
    for entry in &trail {
        assert_eq!(
            entry.prev_hash, prev,
            "entry {} links to the one before",
            entry.id
        );
        assert_eq!(
            entry.expected_hash(),
            entry.hash,
            "entry {} hashes its fields",
            entry.id
        );
        prev = entry.hash.clone();
    }
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
    let run = store.session_run(&new("run-a"), 10).await.unwrap();
    assert_eq!(run, "run-a");
    assert_eq!(
        store.session_run(&new("run-b"), 11).await.unwrap(),
        "run-a",
        "one run per session"
    );
    let waiter = Lease {
        holder: "host/1/abc",
        until: 100,
        now: 20,
    };
    let item = store
        .open_item(
            "run-a",
            &plan_item("t1", "# Refactor\n\nSplit it.\n"),
            &waiter,
            &ACTOR,
        )
        .await
        .unwrap();
    assert_eq!(item.revision.as_ref().map(|r| r.revision_no), Some(1));
    assert_eq!(
        store.run("run-a").await.unwrap().status,
        RunStatus::Suspended
    );
    let err = store
        .open_item(
            "run-a",
            &plan_item("t1", "# Refactor\n\nSplit it.\n"),
            &waiter,
            &ACTOR,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Invalid { .. }), "{err}");
    let renewed = Lease {
        until: 200,
        ..waiter
    };
    assert!(store.renew_waiter("run-a", "t1", &renewed).await.unwrap());
    let other = Lease {
        holder: "host/2/def",
        ..renewed
    };
    assert!(!store.renew_waiter("run-a", "t1", &other).await.unwrap());
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
    store.record_decision(&abandoned).await.unwrap();
    assert_eq!(store.run("run-a").await.unwrap().status, RunStatus::Running);
    let err = store
        .open_item("run-a", &plan_item("t1", "# Again\n"), &waiter, &ACTOR)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::AlreadyDecided { .. }), "{err}");
}

/// A decision's resume data as its row holds it, read past the store: what was written.
async fn stored_resume_data(location: &StoreLocation, run_id: &str, call: &str) -> Value {
    let sql = "SELECT resume_data FROM decisions WHERE run_id = $1 AND tool_call_id = $2";
    let text: String = match location {
        StoreLocation::Sqlite(dir) => rusqlite::Connection::open(dir.join(DB_FILE))
            .unwrap()
            .query_row(&sql.replace('$', "?"), [run_id, call], |r| r.get(0))
            .unwrap(),
        StoreLocation::Postgres { url, .. } => {
            let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client
                .query_one(sql, &[&run_id, &call])
                .await
                .unwrap()
                .get(0)
        }
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

async fn settings_round_trip(location: StoreLocation) {
    let store = location.open().await.unwrap();
    assert_eq!(store.setting("model").await.unwrap(), None);
    store.set_setting("model", Some("demo"), 1).await.unwrap();
    store
        .set_setting("model", Some("ollama:llama3"), 2)
        .await
        .unwrap();
    assert_eq!(
        store.setting("model").await.unwrap().as_deref(),
        Some("ollama:llama3")
    );
    store.set_setting("model", None, 3).await.unwrap();
    assert_eq!(store.setting("model").await.unwrap(), None);
}

async fn another_connections_commit_is_heard(location: StoreLocation) {
    let watcher = location.open().await.unwrap();
    let mut changes = watcher.changes();
    // The first yield is "look now"; then only commits wake the stream.
    tokio::time::timeout(Duration::from_secs(5), changes.next())
        .await
        .expect("a stream yields at once")
        .unwrap();
    // Let the watcher settle (SQLite polls; PostgreSQL subscribes).
    tokio::time::sleep(Duration::from_millis(600)).await;
    while tokio::time::timeout(Duration::from_millis(50), changes.next())
        .await
        .is_ok()
    {}
    let writer = location.open().await.unwrap();
    writer.set_setting("k", Some("v"), 1).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), changes.next())
        .await
        .expect("another connection's commit is heard within seconds")
        .unwrap();
}

async fn a_store_opened_twice_is_migrated_once(location: StoreLocation) {
    let (a, b) = tokio::join!(location.open(), location.open());
    let (a, b) = (a.unwrap(), b.unwrap());
    a.set_setting("k", Some("a"), 1).await.unwrap();
    assert_eq!(b.setting("k").await.unwrap().as_deref(), Some("a"));
    drop((a, b));
    let again = location.open().await.unwrap();
    assert_eq!(again.setting("k").await.unwrap().as_deref(), Some("a"));
}

async fn tokens_are_created_found_by_hash_and_revoked(location: StoreLocation) {
    let store = location.open().await.unwrap();
    let new = |name, sha256, at| NewToken {
        name,
        sha256,
        by: &ACTOR,
        at,
    };
    let made = store.create_token(&new("ci", "aa11", 1)).await.unwrap();
    assert_eq!((made.name.as_str(), made.revoked_at), ("ci", None));
    let err = store.create_token(&new("ci", "bb22", 2)).await.unwrap_err();
    assert!(matches!(err, StoreError::TokenExists(_)), "{err}");
    assert_eq!(store.active_token("aa11").await.unwrap(), Some(made));
    assert_eq!(
        store.active_token("aa1").await.unwrap(),
        None,
        "exact hashes only"
    );
    let revoked = store.revoke_token("ci", &ACTOR, 3).await.unwrap();
    assert_eq!(revoked.revoked_at, Some(3));
    assert_eq!(store.active_token("aa11").await.unwrap(), None);
    let err = store.revoke_token("ci", &ACTOR, 4).await.unwrap_err();
    assert!(matches!(err, StoreError::UnknownToken(_)), "{err}");
    // The name is free again; the revoked one stays listed.
    store.create_token(&new("ci", "cc33", 5)).await.unwrap();
    let listed = store.tokens().await.unwrap();
    assert_eq!(
        listed.iter().map(|t| t.revoked_at).collect::<Vec<_>>(),
        [Some(3), None]
    );
    let kinds: Vec<String> = store
        .audit(None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds, ["token-created", "token-revoked", "token-created"]);
}

/// A hostile plan: a megabyte of distinct words and one word longer than any index keeps. It is
/// stored like any other, and a search still finds what is in it (PostgreSQL's tsvector, which
/// has a size limit, indexes part of it and the rest is read word by word).
async fn a_plan_too_big_for_a_word_index_is_kept_and_found(location: StoreLocation) {
    let store = store_with_run(&location, "r").await;
    let long_word = "x".repeat(5_000);
    let mut body = String::from("# Junk\n\n");
    for i in 0..110_000 {
        body.push_str(&format!("w{i:x} "));
    }
    body.push_str(&format!("needle {long_word} end\n"));
    open_items(&*store, &[plan_item("c1", &body)]).await;
    let search = |words: &[&str]| {
        let store = store.clone();
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        async move { store.search_revisions(None, &words).await.unwrap().len() }
    };
    assert_eq!(search(&["w1ad00"]).await, 1, "a word far into the plan");
    assert_eq!(search(&["needle", &long_word, "end"]).await, 1);
    assert_eq!(search(&["needle", "end"]).await, 0, "words in a row only");
    assert_eq!(store.revisions(None).await.unwrap()[0].body, body);
}

/// What only the PostgreSQL store has: a server that may be away, a URL that may hold a
/// password, a schema other processes may have moved on.
mod postgres_only {
    use super::*;

    use crate::pg::sql_on;

    #[tokio::test]
    async fn a_database_written_by_a_newer_plandesk_is_refused() {
        let url = crate::pg::database();
        let location = StoreLocation::postgres(url.clone());
        drop(location.open().await.unwrap());
        assert!(
            sql_on(&url, "UPDATE plandesk_schema SET version = version + 1")
                .status
                .success()
        );
        let err = location.open().await.unwrap_err();
        assert!(matches!(err, StoreError::Newer { .. }), "{err}");
        assert!(err.to_string().contains("newer Plandesk"), "{err}");
    }

    #[tokio::test]
    async fn the_audit_trail_cannot_be_changed_even_with_sql() {
        let url = crate::pg::database();
        let store = store_with_run(&StoreLocation::postgres(url.clone()), "r").await;
        open_items(&*store, &[plan_item("c1", "# A\n")]).await;
        for sql in [
            "UPDATE audit SET actor = 'mallory'",
            "DELETE FROM audit",
            "TRUNCATE audit",
        ] {
            let out = sql_on(&url, sql);
            assert!(!out.status.success(), "{sql} was allowed");
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("append-only"),
                "{sql}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert_eq!(store.audit(None).await.unwrap()[0].actor, "agent");
    }

    #[tokio::test]
    async fn a_server_without_tls_is_refused_when_the_url_requires_it() {
        // The test server speaks no TLS: `prefer` (the default) connects in the clear, `require`
        // never does.
        let url = crate::pg::database();
        let err = StoreLocation::postgres(format!("{url}?sslmode=require"))
            .open()
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot open the store"), "{err}");
        assert!(err.to_lowercase().contains("tls"), "{err}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connections_cut_by_the_server_are_made_again() {
        let url = crate::pg::database();
        let watcher = StoreLocation::postgres(url.clone()).open().await.unwrap();
        let mut changes = watcher.changes();
        changes.next().await.unwrap();
        watcher.set_setting("k", Some("before"), 1).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        while tokio::time::timeout(Duration::from_millis(50), changes.next())
            .await
            .is_ok()
        {}
        // The server (a restart, an admin, a failover) ends every connection to the database.
        let db = url.rsplit('/').next().unwrap();
        let out = sql_on(
            &url,
            &format!(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = '{db}' AND pid <> pg_backend_pid()"
            ),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Queries work again at once, and the watcher hears commits again.
        assert_eq!(
            watcher.setting("k").await.unwrap().as_deref(),
            Some("before")
        );
        let writer = StoreLocation::postgres(url).open().await.unwrap();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        while tokio::time::timeout(Duration::from_millis(50), changes.next())
            .await
            .is_ok()
        {}
        writer.set_setting("k", Some("after"), 2).await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), changes.next())
            .await
            .expect("the watcher listens again after losing its connection")
            .unwrap();
    }

    #[tokio::test]
    async fn settings_are_each_persons_own() {
        let url = crate::pg::database();
        let ana = StoreLocation::choose(Some(&url), std::path::Path::new("/home/ana/.plandesk"))
            .unwrap()
            .open()
            .await
            .unwrap();
        let ben = StoreLocation::choose(Some(&url), std::path::Path::new("/home/ben/.plandesk"))
            .unwrap()
            .open()
            .await
            .unwrap();
        ana.set_setting("reviewer_name", Some("Ana"), 1)
            .await
            .unwrap();
        assert_eq!(ben.setting("reviewer_name").await.unwrap(), None);
        ben.set_setting("reviewer_name", Some("Ben"), 2)
            .await
            .unwrap();
        assert_eq!(
            ana.setting("reviewer_name").await.unwrap().as_deref(),
            Some("Ana")
        );
    }

    #[tokio::test]
    async fn an_unreachable_server_is_one_clear_error_without_the_password() {
        // Port 9 (discard): nothing listens on loopback.
        let location = StoreLocation::postgres("postgres://ana:s3cret-pass@127.0.0.1:9/team");
        let err = location.open().await.unwrap_err().to_string();
        assert!(err.contains("postgres://ana@127.0.0.1:9/team"), "{err}");
        assert!(!err.contains("s3cret-pass"), "the password leaked: {err}");
        assert!(format!("{location:?}").find("s3cret").is_none());
        let err = StoreLocation::postgres("postgres://ana:s3cret-pass@[::1")
            .open()
            .await
            .unwrap_err()
            .to_string();
        assert!(!err.contains("s3cret-pass"), "the password leaked: {err}");
        let err = StoreLocation::choose(
            Some("mysql://ana:s3cret-pass@db/team"),
            std::path::Path::new("/d"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("PostgreSQL URL"), "{err}");
        assert!(!err.contains("s3cret-pass"), "the password leaked: {err}");
    }
}

/// The same moves on both stores leave the same records: every audit entry (so the same hash
/// chain, byte for byte), every event, revision and comment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_stores_record_the_same_moves_identically() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = same_moves(StoreLocation::Sqlite(dir.path().to_owned())).await;
    let postgres = same_moves(StoreLocation::postgres(crate::pg::database())).await;
    assert_eq!(sqlite.0, postgres.0, "audit trails differ");
    assert_eq!(sqlite.1, postgres.1, "event logs differ");
    assert_eq!(sqlite.2, postgres.2, "revisions differ");
    assert_eq!(sqlite.3, postgres.3, "comments differ");
}

async fn same_moves(
    location: StoreLocation,
) -> (
    Vec<AuditRow>,
    Vec<EventRow>,
    Vec<RevisionRow>,
    Vec<CommentRow>,
) {
    let store = store_with_run(&location, "r").await;
    open_items(
        &*store,
        &[
            plan_item("c1", "# Cache\n\nAdd a cache.\n"),
            plan_item("c2", "# Index\n\nAdd an index.\n"),
        ],
    )
    .await;
    let first = store.revisions(Some("r")).await.unwrap().remove(0);
    let comment = store
        .add_comment(&NewComment {
            run_id: "r",
            revision_id: first.id,
            revision_sha: &first.sha256,
            line_start: 3,
            line_end: 3,
            quote: "Add a cache.",
            body: "Which cache?",
            by: &ACTOR,
            at: 2_000,
        })
        .await
        .unwrap();
    store
        .set_comment_resolved(comment.id, true, &ACTOR, 2_100)
        .await
        .unwrap();
    let edited = plan("# Cache\n\nAdd an LRU cache.\n");
    store
        .edit_plan(&NewEdit {
            run_id: "r",
            tool_call_id: "c1",
            expect_sha: &first.sha256,
            plan: &edited,
            by: &ACTOR,
            at: 2_200,
        })
        .await
        .unwrap();
    store
        .record_decision(&decision("c1", Action::Approved, Some(&edited.sha256)))
        .await
        .unwrap();
    store
        .record_decision(&NewDecision {
            feedback: Some("Too broad"),
            ..decision("c2", Action::Rejected, None)
        })
        .await
        .unwrap();
    store
        .commit(&Commit {
            mode: "build",
            ..commit("r", 2, 1, &[], &[])
        })
        .await
        .unwrap();
    store
        .create_token(&NewToken {
            name: "ci",
            sha256: "ab",
            by: &ACTOR,
            at: 3_000,
        })
        .await
        .unwrap();
    let mut events = store.events("r").await.unwrap();
    // Event ids are the stores' own counters; what they say must match.
    for event in &mut events {
        event.id = 0;
    }
    (
        store.audit(None).await.unwrap(),
        events,
        store.revisions(None).await.unwrap(),
        store.comments("r").await.unwrap(),
    )
}
