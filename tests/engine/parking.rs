//! A run's next move in the process whose stream stopped on it (most often a decision on the
//! plan it just submitted) starts from the state that stream left, not read again; unless
//! another process moved the run since, and then it starts from the store. (Every test that
//! decides in the process that suspended the run also checks, in debug builds, that the state
//! kept is the state stored.)

use plandesk::vocabulary::Action;
use plandesk::{Engine, RunStatus};
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn a_decision_after_another_process_moved_the_run_starts_from_the_store() {
    let fx = Fixture::new(json!([
        {"toolCalls": [submit("c1", PLAN)]},
        {"toolCalls": [submit("c2", PLAN)]},
        text("Building."),
    ]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let here = Engine::open_at(&fx.store, "app").await.unwrap();
    let options = fx.options();
    let run = here
        .start("Add a cache", &options, &mut |_| {})
        .await
        .unwrap()
        .run_id;
    // Another process sends the plan back; the run submits its revision there.
    let elsewhere = Engine::open_at(&fx.store, "cli").await.unwrap();
    let revised = elsewhere
        .decide(&run, &verdict(false, Some("Measure first")), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(revised.status, RunStatus::Suspended);
    // Here, the run stopped on the first plan: the approval is of the revision pending now.
    let done = here
        .decide(&run, &verdict(true, None), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(done.status, RunStatus::Finished);
    let review = here.review();
    let first = review.decision(&run, "c1").await.unwrap().unwrap();
    let second = review.decision(&run, "c2").await.unwrap().unwrap();
    assert_eq!(
        (first.action, second.action),
        (Action::Rejected, Action::Approved)
    );
    // The other process's kept state is older than the run now too: a message there goes on
    // from where the run finished.
    let after = elsewhere.send(&run, "Thanks", &mut |_| {}).await;
    assert!(after.is_ok(), "{after:?}");
}

#[tokio::test]
async fn a_look_at_a_run_leaves_its_state_parked_for_the_decision_on_it() {
    let fx = Fixture::new(json!([
        {"toolCalls": [submit("c1", PLAN)]},
        text("Building."),
    ]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let engine = Engine::open_at(&fx.store, "app").await.unwrap();
    let options = fx.options();
    let run = engine
        .start("Add a cache", &options, &mut |_| {})
        .await
        .unwrap()
        .run_id;
    assert_eq!(engine.parked_run().as_deref(), Some(run.as_str()));
    // The window reads the run's detail when its stream ends on the plan, and when it is
    // opened: neither takes the state from the decision that follows.
    for _ in 0..2 {
        let detail = engine.run_detail(&run).await.unwrap();
        assert_eq!(detail.open.len(), 1);
        assert_eq!(engine.parked_run().as_deref(), Some(run.as_str()));
    }
    // A look at another run parks that one: the run a person looks at is the one they act on.
    let other = Fixture::new(json!([{"toolCalls": [submit("d1", PLAN)]}]));
    other.write(PLAN, PLAN_TEXT.as_bytes());
    let elsewhere = other.options();
    let second = engine
        .start("Add an index", &elsewhere, &mut |_| {})
        .await
        .unwrap()
        .run_id;
    assert_eq!(engine.parked_run().as_deref(), Some(second.as_str()));
    engine.run_detail(&run).await.unwrap();
    assert_eq!(engine.parked_run().as_deref(), Some(run.as_str()));
    let done = engine
        .decide(&run, &verdict(true, None), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(done.status, RunStatus::Finished);
    // Its finished state is parked now; the other run's decision reads its state from the store.
    assert_eq!(engine.parked_run().as_deref(), Some(run.as_str()));
    let declined = engine
        .decide(&second, &verdict(false, Some("Not yet")), &mut |_| {})
        .await;
    assert!(declined.is_ok(), "{declined:?}");
}
