//! Agents waiting in one process share its one waker: each is woken by its own plan's
//! decision, made by another process (another handle on the store), in whatever order the
//! plans are decided, and never by another's.

use std::sync::Arc;
use std::time::Duration;

use plandesk::clock::{RandomIds, SystemClock};
use plandesk::review::{ExternalPlan, Review};
use plandesk::store::{Actor, Source};
use plandesk::vocabulary::{Action, SourceKind};
use plandesk::Engine;

use crate::support::*;

const AGENTS: usize = 12;

async fn review_on(fx: &Fixture, process: &str) -> Review {
    let store = fx.store.open().await.unwrap();
    Engine::new(
        store,
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        plandesk::mode::builtin(),
    )
    .with_actor(Actor {
        name: process.into(),
        process: process.into(),
    })
    .review()
    .clone()
}

fn plan(index: usize) -> ExternalPlan {
    ExternalPlan {
        source: Source {
            kind: SourceKind::ClaudeCode,
            session: Some(format!("session-{index}")),
        },
        cwd: "/home/u/proj".into(),
        prompt: format!("Task {index}"),
        tool_name: "ExitPlanMode".into(),
        path: format!("plan-{index}.md"),
        text: format!("# Plan {index}\n\nStep {index}.\n"),
        item_id: None,
        submitter: None,
        file: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_waiter_is_woken_by_its_own_decision_from_another_process() {
    let fx = Fixture::new(serde_json::json!([]));
    let agents = review_on(&fx, "agents").await;
    let person = review_on(&fx, "person").await;
    let mut waits = Vec::new();
    for index in 0..AGENTS {
        let waiting = agents.submit(&plan(index)).await.unwrap();
        let agents = agents.clone();
        waits.push(tokio::spawn(async move {
            let decision = agents
                .wait(&waiting, None, Duration::ZERO, &mut |_| {})
                .await
                .unwrap();
            (index, decision)
        }));
    }
    // Decided out of order, every other one rejected with its own feedback.
    let inbox = person.inbox().await.unwrap();
    assert_eq!(inbox.len(), AGENTS);
    for item in inbox.iter().rev().step_by(2).chain(inbox.iter().step_by(2)) {
        let title = &item.revision.as_ref().unwrap().title;
        let index: usize = title.strip_prefix("Plan ").unwrap().parse().unwrap();
        let feedback = format!("Not plan {index} like this");
        let approve = index.is_multiple_of(2);
        person
            .decide_external(
                &item.run_id,
                &item.tool_call_id,
                approve,
                (!approve).then_some(feedback.as_str()),
                None,
                false,
            )
            .await
            .unwrap();
    }
    for wait in waits {
        let (index, decision) = tokio::time::timeout(Duration::from_secs(30), wait)
            .await
            .expect("every waiter is woken")
            .unwrap();
        if index.is_multiple_of(2) {
            assert_eq!(decision.action, Action::Approved, "plan {index}");
        } else {
            assert_eq!(decision.action, Action::Rejected, "plan {index}");
            let expected = format!("Not plan {index} like this");
            assert_eq!(decision.feedback.as_deref(), Some(expected.as_str()));
        }
    }
}

/// `serve`'s one reader of the inbox (for open pages and webhooks) reads only while someone
/// follows it: thousands of agents waiting on a server nobody watches cost no read of the
/// inbox at each submission, and a follower never starts from a read made before it came.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_is_read_only_while_someone_follows_it() {
    let fx = Fixture::new(serde_json::json!([]));
    let engine = Engine::open_at(&fx.store, "serve").await.unwrap();
    let agents = review_on(&fx, "agents").await;
    let feed = plandesk::view::follow_inbox(engine);
    // Agents that wait (a plan nobody waits on leaves the inbox as abandoned).
    let submit = |index: usize| {
        let agents = agents.clone();
        async move {
            let waiting = agents.submit(&plan(index)).await.unwrap();
            tokio::spawn(async move {
                let _ = agents
                    .wait(&waiting, None, Duration::ZERO, &mut |_| {})
                    .await;
            });
        }
    };
    submit(0).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let titles = |reads: &plandesk::view::InboxReceiver| {
        reads.borrow().as_ref().map(|snapshot| {
            let mut titles: Vec<_> = snapshot
                .items
                .iter()
                .filter_map(|i| i.title.clone())
                .collect();
            titles.sort();
            titles
        })
    };
    // A new follower: no read from before it came (none yet, or one the reader, quicker
    // than this thread, already made for it: holding every plan submitted so far), then one
    // at once.
    let follow = |submitted: usize| {
        let (feed, titles) = (&feed, &titles);
        async move {
            let mut reads = feed.follow();
            let first = titles(&reads);
            assert!(
                first.as_ref().is_none_or(|t| t.len() == submitted),
                "a read from before this follower: {first:?}"
            );
            if first.is_none() {
                tokio::time::timeout(Duration::from_secs(10), reads.changed())
                    .await
                    .expect("a follower gets a read at once")
                    .unwrap();
            }
            reads
        }
    };
    let reads = follow(1).await;
    assert_eq!(titles(&reads), Some(vec!["Plan 0".to_owned()]));
    // Each change is read for a follower.
    let mut reads = reads;
    submit(1).await;
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while titles(&reads).is_some_and(|t| t.len() < 2) {
        assert!(std::time::Instant::now() < until, "the change was read");
        let _ = tokio::time::timeout(Duration::from_secs(1), reads.changed()).await;
    }
    drop(reads);
    // Followed by nobody, a change is not read, and the last read is not kept (`follow`).
    submit(2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let reads = follow(3).await;
    assert_eq!(
        titles(&reads),
        Some(vec![
            "Plan 0".to_owned(),
            "Plan 1".to_owned(),
            "Plan 2".to_owned()
        ])
    );
}
