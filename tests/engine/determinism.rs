//! The library API: a run started on a background task streams the same bytes every time when
//! the clock and ids are fixed.

use std::sync::Arc;

use futures::StreamExt;
use plandesk::clock::{SequentialIds, SteppingClock};
use plandesk::{Engine, SqliteStore};
use serde_json::json;

use crate::support::*;

async fn run_once(fx: &Fixture, data: &str) -> (Vec<String>, String) {
    let store = SqliteStore::open(&fx.root.join(data)).unwrap();
    let engine = Engine::new(
        Arc::new(store),
        Arc::new(SteppingClock::starting_at(1_700_000_000_000)),
        Arc::new(SequentialIds::default()),
        plandesk::mode::builtin(),
    );
    let options = fx.options();
    let mut stream = engine.stream("Add a cache".into(), options);
    let run_id = stream.run_id.clone();
    let mut lines = Vec::new();
    while let Some(chunk) = stream.next().await {
        lines.push(serde_json::to_string(&chunk).unwrap());
    }
    let report = stream.report().await.unwrap();
    assert_eq!(report.run_id, run_id);
    assert_eq!(report.status, plandesk::RunStatus::Suspended);
    assert_eq!(
        report.pending.unwrap().revision.unwrap().title,
        "Add a cache"
    );
    (lines, run_id)
}

#[tokio::test]
async fn fixed_clock_and_ids_give_identical_streams() {
    let fx =
        Fixture::new(json!([{"text": "Here is the plan.", "toolCalls": [submit("c1", PLAN)]}]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (first, run_id) = run_once(&fx, "data-a").await;
    let (second, _) = run_once(&fx, "data-b").await;
    assert_eq!(run_id, "run-1");
    assert_eq!(first, second, "same inputs, same bytes");
    assert!(first[0].contains(r#""messageId":"msg-2""#), "{}", first[0]);
}
