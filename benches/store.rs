//! The store after months of use (not a timed test): `cargo bench --bench store`. Builds a
//! store of 10,000 plan revisions across 1,000 agent sessions, 200 of them pending, through
//! the review core as agents and reviewers would (half the decisions stored as the engine's
//! own runs store theirs, echoing the plan); then measures what a person waits on: the inbox,
//! the history list as the window reads it (a page of 100: the first, one halfway down, one of
//! a status), the whole listing at once (and, for scripts, the history with every plan), a
//! full-text search, and the diff of two 5,000-line revisions. Medians and p95 over 20 rounds,
//! printed and written to `target/bench/store.json`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use plandesk::clock::{Clock, SystemClock};
use plandesk::review::{ExternalPlan, HistoryFilter, Page, Review, RevisionStatus};
use plandesk::store::{NewDecision, Source};
use plandesk::tool::{submit_plan, ToolOutcome};
use plandesk::vocabulary::{Action, SourceKind};
use plandesk::Engine;
use serde_json::json;

const SESSIONS: usize = 1000;
const REVISIONS_PER_SESSION: usize = 10;
const PENDING: usize = 200;
const ROUNDS: usize = 20;

/// A plan of a few KB, different per session and revision; `needle` appears in one in 500.
fn plan(session: usize, revision: usize) -> String {
    let mut text = format!("# Session {session}: migrate module {session}\n\n");
    for step in 1..=40 {
        text.push_str(&format!(
            "{step}. Move table {session}.{step} to the new store, revision {revision}, then check row counts\n"
        ));
    }
    if (session * REVISIONS_PER_SESSION + revision) % 500 == 7 {
        text.push_str("\nMind the quarantined xylophone cache.\n");
    }
    text
}

/// Records a decision the way the engine records one on `submit_plan`: the resume data echoes
/// the plan's path, title and text, and the audit trail keeps the tool result the model reads.
async fn decide_as_engine(
    review: &Review,
    run_id: &str,
    tool_call_id: &str,
    approve: bool,
    feedback: Option<&str>,
) {
    let revision = review
        .open_revision(run_id, tool_call_id)
        .await
        .unwrap()
        .expect("the item waits on a plan");
    let action = if approve {
        Action::Approved
    } else {
        Action::Rejected
    };
    let mut data = json!({"action": action, "path": revision.path, "title": revision.title,
                          "plan": revision.body});
    if let Some(feedback) = feedback {
        data["feedback"] = json!(feedback);
    }
    let ToolOutcome::Value(answer) = submit_plan::result_for(&data) else {
        panic!("a plan's decision has a result");
    };
    let answer = answer.to_string();
    let answer_without_plan = submit_plan::without_plan(&data).and_then(|without| {
        match submit_plan::result_for(&without) {
            ToolOutcome::Value(answer) => Some(answer.to_string()),
            _ => None,
        }
    });
    review
        .record(&NewDecision {
            run_id,
            tool_call_id,
            action,
            feedback,
            resume_data: &data,
            expect_sha: None,
            at: SystemClock.now(),
            by: &review.actor().await,
            answer: Some(&answer),
            answer_without_plan: answer_without_plan.as_deref(),
            mode_after: None,
        })
        .await
        .unwrap();
}

struct Figure {
    name: &'static str,
    samples: Vec<f64>,
}

impl Figure {
    fn stats(&self) -> (f64, f64) {
        let mut sorted = self.samples.clone();
        sorted.sort_by(f64::total_cmp);
        let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
        (at(0.5), at(0.95))
    }
}

fn measure<T>(name: &'static str, mut f: impl FnMut() -> T) -> Figure {
    let mut samples = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        std::hint::black_box(f());
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let figure = Figure { name, samples };
    let (median, p95) = figure.stats();
    println!("{name}: median {median:.2} ms, p95 {p95:.2} ms ({ROUNDS} rounds)");
    figure
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open_as(&dir.path().join("data"), "bench").unwrap();
    let review = engine.review().clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let built = Instant::now();
    let submit = |session: usize, revision: usize| {
        let review = review.clone();
        async move {
            review
                .submit(&ExternalPlan {
                    source: Source {
                        kind: SourceKind::ClaudeCode,
                        session: Some(format!("session-{session}")),
                    },
                    cwd: format!("/home/u/project-{}", session % 37),
                    prompt: format!("Migrate module {session}"),
                    tool_name: "ExitPlanMode".into(),
                    path: format!("/home/u/.claude/plans/plan-{session}.md"),
                    text: plan(session, revision),
                    item_id: None,
                    submitter: None,
                    file: None,
                })
                .await
                .unwrap()
        }
    };
    // The open plans' hooks must still be waiting when the inbox is read (a plan whose hook is
    // gone is closed as abandoned): they are submitted last and kept.
    let waiting = runtime.block_on(async {
        for session in 0..SESSIONS {
            for revision in 0..REVISIONS_PER_SESSION {
                let last = revision + 1 == REVISIONS_PER_SESSION;
                if last && session >= SESSIONS - PENDING {
                    continue;
                }
                let submitted = submit(session, revision).await;
                let (run_id, call) = (submitted.run_id(), &submitted.item.tool_call_id);
                let feedback = (!last).then_some("Smaller steps, please");
                if session % 2 == 0 {
                    review
                        .decide_external(run_id, call, last, feedback, None, false)
                        .await
                        .unwrap();
                } else {
                    // As an engine run's decision is stored: its resume data and its answer
                    // echo the whole plan back, which a listing must not read.
                    decide_as_engine(&review, run_id, call, last, feedback).await;
                }
            }
        }
        let mut waiting = Vec::new();
        for session in SESSIONS - PENDING..SESSIONS {
            waiting.push(submit(session, REVISIONS_PER_SESSION - 1).await);
        }
        waiting
    });
    println!(
        "built {} revisions across {SESSIONS} sessions ({PENDING} pending) in {:.1} s",
        SESSIONS * REVISIONS_PER_SESSION,
        built.elapsed().as_secs_f64()
    );

    let mut figures = Vec::new();
    figures.push(measure("inbox (200 pending)", || {
        let inbox = runtime.block_on(review.inbox()).unwrap();
        assert_eq!(inbox.len(), PENDING);
        inbox
    }));
    // Every revision whole, as `plandesk history --json` prints it (not what the app lists).
    figures.push(measure("history with plans (10,000 revisions)", || {
        let all = runtime
            .block_on(review.history(&HistoryFilter::default()))
            .unwrap();
        assert_eq!(all.len(), SESSIONS * REVISIONS_PER_SESSION);
        all
    }));
    // The list as the window reads it: a page of 100 (the first, one deep in the history, one
    // of a status) at a time, each revision without its plan.
    let listed = |filter: &HistoryFilter, before: Option<i64>| {
        let page = Page { before, limit: 100 };
        let listed = runtime
            .block_on(review.listing(filter, Some(page)))
            .unwrap();
        assert_eq!(listed.len(), 100);
        listed
    };
    let everything = HistoryFilter::default();
    figures.push(measure(
        "history listing, as the window opens it (first 100 of 10,000)",
        || listed(&everything, None),
    ));
    let middle = i64::try_from(SESSIONS * REVISIONS_PER_SESSION / 2).unwrap();
    figures.push(measure(
        "history listing, a page halfway down (100 before #5,000)",
        || listed(&everything, Some(middle)),
    ));
    let approved = HistoryFilter {
        status: Some(RevisionStatus::Approved),
        ..HistoryFilter::default()
    };
    figures.push(measure(
        "history listing, approved only (first 100 of 800)",
        || listed(&approved, None),
    ));
    figures.push(measure(
        "history listing, all 10,000 at once (no bodies)",
        || {
            let all = runtime.block_on(review.listing(&everything, None)).unwrap();
            assert_eq!(all.len(), SESSIONS * REVISIONS_PER_SESSION);
            all
        },
    ));
    figures.push(measure("full-text search (10,000 revisions)", || {
        let filter = HistoryFilter {
            query: Some("xylophone".into()),
            ..HistoryFilter::default()
        };
        let found = runtime.block_on(review.history(&filter)).unwrap();
        assert_eq!(found.len(), SESSIONS * REVISIONS_PER_SESSION / 500);
        found
    }));
    let big = |variant: usize| {
        (1..=5000)
            .map(|i| {
                if variant == 1 && i % 10 == 3 {
                    format!("{i}. Move table {i} carefully, then verify the counts\n")
                } else {
                    format!("{i}. Move table {i} quickly, then verify the counts\n")
                }
            })
            .collect::<String>()
    };
    let (a, b) = (big(0), big(1));
    figures.push(measure("diff of two 5,000-line revisions", || {
        plandesk::plan::side_by_side(&a, &b)
    }));

    drop(waiting);
    let out: Vec<_> = figures
        .iter()
        .map(|f| {
            let (median, p95) = f.stats();
            json!({"name": f.name, "median": median, "p95": p95, "unit": "ms", "rounds": ROUNDS})
        })
        .collect();
    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    std::fs::create_dir_all(&target).unwrap();
    let file = target.join("store.json");
    std::fs::write(&file, serde_json::to_string_pretty(&out).unwrap()).unwrap();
    println!("written to {}", file.display());
}
