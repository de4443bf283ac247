//! Load, bounded and on loopback only: 50 agents submit plans to one `plandesk serve` over
//! HTTP (Claude Code's hook endpoint and MCP, mixed) while 5 reviewers race each other to
//! decide them through the review core, for a fixed count of plans. Every agent must be
//! answered once per plan with the decision recorded for it, every plan decided exactly once,
//! and a reviewer who loses a race told so (`AlreadyDecided`). Prints throughput and the p95
//! of submit-to-answer latency.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use plandesk::clock::{RandomIds, SystemClock};
use plandesk::review::{Review, ReviewError};
use plandesk::source::serve::{serve, ServeOptions};
use plandesk::source::WaitSettings;
use plandesk::store::{Actor, StoreError};
use plandesk::vocabulary::Action;
use plandesk::{Engine, Store};
use serde_json::{json, Value};

use crate::mcp::submit;
use crate::serve::{hook_payload, mcp_client};
use crate::support::test_store;

const AGENTS: usize = 50;
const REVIEWERS: usize = 5;
const PLANS: usize = 500;
/// The whole run gives up past this (it takes a few seconds).
const BOUND: Duration = Duration::from_secs(120);

fn engine(store: &Arc<dyn Store>, actor: &str) -> Engine {
    Engine::new(
        store.clone(),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        plandesk::mode::builtin(),
    )
    .with_actor(Actor {
        name: actor.into(),
        process: "load".into(),
    })
}

/// What one agent was answered for one plan.
#[derive(Debug)]
struct Answered {
    title: String,
    approved: bool,
    latency: Duration,
}

async fn agent(index: usize, base: String, token: String) -> Vec<Answered> {
    let mut answers = Vec::new();
    let by_mcp = index.is_multiple_of(5);
    let client = if by_mcp {
        Some(mcp_client(&base, &token).await)
    } else {
        None
    };
    let http = reqwest::Client::new();
    for k in 0..PLANS / AGENTS {
        let title = format!("Plan {index}-{k}");
        let plan = format!("# {title}\n\nAgent {index}, plan {k}.");
        let started = Instant::now();
        let approved = match &client {
            Some(client) => {
                let (result, is_error) =
                    submit(client, json!({"path": "plans/load.md", "plan": plan})).await;
                assert!(!is_error, "{result}");
                let content = result["content"].as_str().unwrap();
                assert!(
                    content.starts_with("Plan approved.") || content.contains("User feedback:"),
                    "an answer from a person: {result}"
                );
                content.starts_with("Plan approved.")
            }
            None => {
                let payload = hook_payload(&format!("agent-{index}"), json!({"plan": plan}));
                let response = http
                    .post(format!("{base}/hooks/claude"))
                    .bearer_auth(&token)
                    .header("content-type", "application/json")
                    .body(payload.to_string())
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 200);
                let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
                let decision = &body["hookSpecificOutput"]["decision"];
                match decision["behavior"].as_str() {
                    Some("allow") => true,
                    Some("deny") => {
                        let message = decision["message"].as_str().unwrap();
                        assert!(message.contains("User feedback:"), "{body}");
                        false
                    }
                    _ => panic!("not an answer: {body}"),
                }
            }
        };
        answers.push(Answered {
            title,
            approved,
            latency: started.elapsed(),
        });
    }
    if let Some(client) = client {
        client.cancel().await.unwrap();
    }
    answers
}

/// Decisions a reviewer made, and the races it lost.
#[derive(Debug, Default)]
struct Decided {
    won: Vec<(String, String, bool)>,
    lost: usize,
}

async fn reviewer(index: usize, review: Review, decided: Arc<AtomicUsize>) -> Decided {
    let mut mine = Decided::default();
    while decided.load(Ordering::SeqCst) < PLANS {
        let items = review.inbox().await.unwrap();
        // Every reviewer goes for one of the two oldest plans: many decisions are races.
        let Some(item) = items.iter().rev().nth(index % 2).or(items.last()) else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let approve = (index + mine.won.len()).is_multiple_of(2);
        let feedback = format!("Reviewer {index} wants changes");
        let text = (!approve).then_some(feedback.as_str());
        match review
            .decide_external(&item.run_id, &item.tool_call_id, approve, text, None, false)
            .await
        {
            Ok(_) => {
                decided.fetch_add(1, Ordering::SeqCst);
                mine.won
                    .push((item.run_id.clone(), item.tool_call_id.clone(), approve));
            }
            Err(ReviewError::Store(StoreError::AlreadyDecided { .. })) => mine.lost += 1,
            Err(err) => panic!("reviewer {index}: {err}"),
        }
    }
    mine
}

fn p95(mut latencies: Vec<Duration>) -> Duration {
    latencies.sort();
    latencies[(latencies.len() * 95).div_ceil(100) - 1]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_agents_and_five_reviewers_lose_and_double_no_decision() {
    let dir = tempfile::tempdir().unwrap();
    // The app's presence: no desktop notification is tried for each plan.
    let _app = plandesk::source::presence::hold(dir.path()).unwrap();
    let store = test_store(dir.path()).await;
    let server_engine = engine(&store, "serve");
    let mut tokens = Vec::new();
    for i in 0..AGENTS {
        let (_, secret) = server_engine
            .tokens()
            .create(&format!("agent-{i}"))
            .await
            .unwrap();
        tokens.push(secret.expose().to_owned());
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let wait = WaitSettings {
        data_dir: dir.path().to_owned(),
        deadline: Some(BOUND),
        desktop: false,
    };
    let options = ServeOptions {
        mcp_wait: wait.clone(),
        hook_wait: wait,
        max_connections: None,
        max_per_token: None,
        trusted_proxies: Vec::new(),
        public_url: None,
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(server_engine, listener, options, async {
        let _ = stopped.await;
    }));

    let started = Instant::now();
    let decided = Arc::new(AtomicUsize::new(0));
    let reviewers: Vec<_> = (0..REVIEWERS)
        .map(|r| {
            let review = engine(&store, &format!("reviewer-{r}")).review().clone();
            tokio::spawn(reviewer(r, review, decided.clone()))
        })
        .collect();
    let agents: Vec<_> = tokens
        .into_iter()
        .enumerate()
        .map(|(i, token)| tokio::spawn(agent(i, base.clone(), token)))
        .collect();
    let (answers, decisions) = tokio::time::timeout(BOUND, async {
        let answers = futures::future::try_join_all(agents).await.unwrap();
        let decisions = futures::future::try_join_all(reviewers).await.unwrap();
        (answers, decisions)
    })
    .await
    .expect("the load finished in time");
    let elapsed = started.elapsed();
    let _ = stop.send(());
    server.await.unwrap();

    // Every agent was answered once per plan.
    for (i, mine) in answers.iter().enumerate() {
        assert_eq!(mine.len(), PLANS / AGENTS, "agent {i}");
    }
    let answers: Vec<&Answered> = answers.iter().flatten().collect();
    let titles: BTreeSet<&str> = answers.iter().map(|a| a.title.as_str()).collect();
    assert_eq!(titles.len(), PLANS, "one answer per plan");

    // Every plan decided exactly once: the reviewers' wins are the plans, none twice.
    let won: Vec<&(String, String, bool)> = decisions.iter().flat_map(|d| &d.won).collect();
    let lost: usize = decisions.iter().map(|d| d.lost).sum();
    let keys: BTreeSet<(&str, &str)> = won
        .iter()
        .map(|(r, c, _)| (r.as_str(), c.as_str()))
        .collect();
    assert_eq!(won.len(), PLANS, "as many decisions recorded as plans");
    assert_eq!(keys.len(), PLANS, "no plan was decided twice");

    // The store agrees, and each agent was told the decision recorded for its plan.
    let review = engine(&store, "check").review().clone();
    let revisions = review.revisions(None).await.unwrap();
    assert_eq!(revisions.len(), PLANS);
    let approved_by_key: BTreeMap<(&str, &str), bool> = won
        .iter()
        .map(|(r, c, approve)| ((r.as_str(), c.as_str()), *approve))
        .collect();
    let told: BTreeMap<&str, bool> = answers
        .iter()
        .map(|a| (a.title.as_str(), a.approved))
        .collect();
    for revision in &revisions {
        let decision = revision
            .decision
            .as_ref()
            .unwrap_or_else(|| panic!("{} undecided", revision.title));
        let approve = approved_by_key[&(revision.run_id.as_str(), revision.tool_call_id.as_str())];
        let action = if approve {
            Action::Approved
        } else {
            Action::Rejected
        };
        assert_eq!(decision.action, action, "{}", revision.title);
        assert_eq!(
            told[revision.title.as_str()],
            approve,
            "{} was answered as decided",
            revision.title
        );
    }
    assert!(
        review.inbox().await.unwrap().is_empty(),
        "nothing left open"
    );
    let check = review.verify_audit().await.unwrap();
    assert_eq!(check.broken, None, "the audit trail's chain holds");

    let latency = p95(answers.iter().map(|a| a.latency).collect());
    println!(
        "serve load: {PLANS} plans from {AGENTS} agents, {REVIEWERS} reviewers: {:.1} s, \
         {:.1} plans/s, p95 submit-to-answer {} ms, {lost} races lost (AlreadyDecided)",
        elapsed.as_secs_f64(),
        PLANS as f64 / elapsed.as_secs_f64(),
        latency.as_millis()
    );
}
