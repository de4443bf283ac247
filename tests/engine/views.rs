//! What a window shows, read through `plandesk::view` over a real engine and store: the end of
//! a run's stream handing over its review, the history a page at a time, a tool call read
//! whole, the app's settings as stored.

use plandesk::view::{self, Settings};
use plandesk::{Engine, RunStatus};
use serde_json::json;

use crate::support::*;

/// A run that writes a long plan and stops on it, in an engine of its own.
async fn stopped_on_a_long_plan() -> (Fixture, Engine, plandesk::Report) {
    let plan: String = (0..400)
        .map(|i| format!("## Step {i}\n\nMove table `t{i}`, then check its row count.\n\n"))
        .collect();
    let fx = Fixture::new(json!([
        {"toolCalls": [
            {"toolCallId": "write", "toolName": "write_file", "args": {"path": PLAN, "content": plan}},
            submit("plan", PLAN),
        ]},
        text("Building."),
    ]));
    let engine = Engine::open_at(&fx.store, "app").await.unwrap();
    let report = engine
        .start("Migrate the store", &fx.options(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(report.status, RunStatus::Suspended);
    (fx, engine, report)
}

#[tokio::test]
async fn a_stream_that_stops_on_a_plan_hands_its_review_over_with_the_first_screen() {
    let (_fx, engine, report) = stopped_on_a_long_plan().await;
    let run_id = report.run_id.clone();
    let elsewhere = view::run_end(&engine, report.clone(), false).await;
    assert!(
        elsewhere.review.is_none() && elsewhere.revision_id.is_some(),
        "another run on screen: the plan is named, nothing read for it"
    );
    let end = view::run_end(&engine, report, true).await;
    let handed = end.review.expect("the review, handed over");
    let detail = view::run_detail(&engine, &run_id).await.unwrap();
    assert_eq!(
        serde_json::to_value(&handed.detail).unwrap(),
        serde_json::to_value(&detail).unwrap(),
        "the run as its view reads it"
    );
    assert_eq!(detail.pending[0].revision_id, end.revision_id);
    let id = end.revision_id.unwrap();
    let whole = view::revision(engine.review(), id, view::FIRST_BYTES)
        .await
        .unwrap();
    assert!(whole.page_bytes.len() > 20, "{:?}", whole.page_bytes);
    let mut first = 0;
    let mut bytes = 0;
    while bytes < view::FIRST_SCREEN_BYTES {
        bytes += whole.page_bytes[first];
        first += 1;
    }
    assert_eq!(
        handed.revision.pages,
        whole.pages[..first],
        "the pages a first screen fills, as `revision` sends them"
    );
    assert_eq!(handed.revision.page_bytes, whole.page_bytes);
    let rest = view::revision_pages(engine.review(), id, whole.pages.len())
        .await
        .unwrap();
    let source = view::revision_source(engine.review(), id).await.unwrap();
    assert_eq!(
        whole.pages.concat() + &rest.concat(),
        plandesk::plan::render(&source.markdown).html,
        "the first pages and the rest are the whole plan, rendered"
    );

    // Approved: the run goes on and finishes, with no plan to hand over.
    let report = engine
        .decide(&run_id, &verdict(true, None), &mut |_| {})
        .await
        .unwrap();
    let end = view::run_end(&engine, report, true).await;
    assert!(end.review.is_none() && end.revision_id.is_none(), "{end:?}");
}

#[tokio::test]
async fn a_tool_call_is_read_whole_and_an_unknown_one_is_refused() {
    let (_fx, engine, report) = stopped_on_a_long_plan().await;
    let detail = view::run_detail(&engine, &report.run_id).await.unwrap();
    let write = serde_json::to_value(&detail.transcript).unwrap()[1].clone();
    assert_eq!(write["toolCallId"], "write");
    assert!(
        write["fullBytes"].is_number(),
        "the long write is a preview in the transcript: {write}"
    );
    let full = view::tool_call(&engine, &report.run_id, "write")
        .await
        .unwrap();
    assert_eq!(
        full.args.text().len(),
        write["fullBytes"].as_u64().unwrap() as usize,
        "whole, as long as the preview said"
    );
    let unknown = view::tool_call(&engine, &report.run_id, "nope")
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), "unknown-tool-call");
    assert_eq!(
        unknown.to_string(),
        format!("run {} has no tool call \"nope\"", report.run_id)
    );
}

#[tokio::test]
async fn the_history_comes_a_page_at_a_time_newest_first() {
    let fx = Fixture::new(json!([
        {"toolCalls": [submit("c1", PLAN)]},
        {"toolCalls": [submit("c2", PLAN)]},
        {"toolCalls": [submit("c3", PLAN)]},
        text("Building."),
    ]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let engine = Engine::open_at(&fx.store, "app").await.unwrap();
    let run = engine
        .start("Add a cache", &fx.options(), &mut |_| {})
        .await
        .unwrap()
        .run_id;
    for _ in 0..2 {
        engine
            .decide(&run, &verdict(false, Some("Again")), &mut |_| {})
            .await
            .unwrap();
    }
    let filter = plandesk::review::HistoryFilter::default();
    let review = engine.review();
    let first = view::history(review, &filter, None, 2).await.unwrap();
    let numbers = |page: &view::HistoryPage| -> Vec<i64> {
        page.revisions.iter().map(|r| r.revision_no).collect()
    };
    assert_eq!((numbers(&first), first.more), (vec![3, 2], true));
    let before = first.revisions.last().map(|r| r.id);
    let last = view::history(review, &filter, before, 2).await.unwrap();
    assert_eq!(
        (numbers(&last), last.more),
        (vec![1], false),
        "the older ones, and nothing after them"
    );
    for limit in [0, view::MAX_HISTORY_PAGE + 1] {
        let refused = view::history(review, &filter, None, limit)
            .await
            .unwrap_err();
        assert_eq!(refused.code(), "invalid-input", "{limit}");
        assert_eq!(
            refused.to_string(),
            format!("A page of the history holds 1 to 1000 revisions, not {limit}.")
        );
    }
}

#[tokio::test]
async fn settings_read_back_as_saved_and_a_bad_name_is_refused() {
    let fx = Fixture::new(json!([]));
    let engine = Engine::open_at(&fx.store, "app").await.unwrap();
    assert_eq!(
        Settings::load(&engine).await.unwrap(),
        Settings::default(),
        "nothing saved: the defaults"
    );
    assert_eq!(Settings::saved_start_at_login(&engine).await.unwrap(), None);
    let chosen = Settings {
        notifications: false,
        notification_titles: false,
        start_at_login: true,
        reviewer_name: "  Ada  ".into(),
        team_store: String::new(),
    };
    chosen.save_preferences(&engine).await.unwrap();
    Settings::save_start_at_login(&engine, true).await.unwrap();
    assert_eq!(
        Settings::load(&engine).await.unwrap(),
        Settings {
            reviewer_name: "Ada".into(),
            ..chosen.clone()
        },
        "read back as saved, the name trimmed"
    );
    assert_eq!(
        engine.review().actor().await.name,
        "Ada",
        "the audit trail names the reviewer saved"
    );
    for name in ["x".repeat(101), "Ada\nLovelace".into()] {
        let refused = Settings {
            reviewer_name: name.clone(),
            notifications: true,
            notification_titles: true,
            ..chosen.clone()
        }
        .save_preferences(&engine)
        .await
        .unwrap_err();
        assert_eq!(refused.code(), "invalid-input", "{name:?}");
    }
    assert_eq!(
        Settings::load(&engine).await.unwrap(),
        Settings {
            reviewer_name: "Ada".into(),
            ..chosen.clone()
        },
        "a refused name leaves every setting as it was, the flags sent with it too"
    );
    let blank = Settings {
        reviewer_name: " ".into(),
        ..chosen
    };
    blank.save_preferences(&engine).await.unwrap();
    assert_eq!(
        engine
            .setting(plandesk::review::REVIEWER_SETTING)
            .await
            .unwrap(),
        None,
        "a blank name is removed: the OS user again"
    );
}
