//! Agents waiting for a person (not a timed test): `cargo bench --bench wait` (`./x bench wait`).
//! On SQLite and on PostgreSQL (a server of its own in a temporary folder, as the tests start
//! one), with the release `plandesk` binary:
//! - **decision → answer**: 50 agents wait, over HTTP (Claude Code's http hook on
//!   `plandesk serve`), as command hooks (`plandesk hook claude-code`, one process each) and
//!   over MCP stdio (`plandesk mcp`, one process each); this process decides their plans one
//!   at a time, 20 ms apart, through the review core. The figure is the time from the
//!   decision's commit (its call returned) to the agent's answer arriving: p50, p95, max.
//! - **many waiting on one `serve`** (`WAIT_MANY`, default 5,000): that many http hook
//!   requests, sent on their own connections by 50 senders at once; how fast the server
//!   records them (plans per second, until the last is pending), what it holds while they all
//!   wait (RSS, threads, PostgreSQL connections), then every plan approved and every agent
//!   checked to be answered once, with an approval.
//!
//! Printed, and written to `target/bench/wait.json`. `WAIT_STORES=sqlite|postgres` measures one
//! store; `WAIT_MANY_ONLY=1` the many agents alone; `WAIT_PLAN_BYTES=N` sends plans of about N
//! bytes (default: a few lines).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/engine/pg.rs"]
#[allow(dead_code)]
mod pg;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use plandesk::clock::{RandomIds, SystemClock};
use plandesk::config::StoreLocation;
use plandesk::review::{Review, ReviewItem};
use plandesk::store::Actor;
use plandesk::{Engine, Store};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BIN: &str = env!("CARGO_BIN_EXE_plandesk");
/// Agents waiting while decisions are timed.
const AGENTS: usize = 50;
/// Between two timed decisions.
const SPACING: Duration = Duration::from_millis(20);
/// Senders submitting at once to one `serve`.
const SENDERS: usize = 50;
/// Anything that takes longer than this has failed.
const BOUND: Duration = Duration::from_secs(600);

/// Where the agents' plans are stored.
struct Target {
    name: &'static str,
    data: tempfile::TempDir,
    url: Option<String>,
}

impl Target {
    fn new(name: &'static str) -> Self {
        let url = (name == "postgres").then(pg::database);
        Self {
            name,
            data: tempfile::tempdir().unwrap(),
            url,
        }
    }

    /// `plandesk ARGS` on this store.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.arg("--data-dir")
            .arg(self.data.path())
            .args(args)
            .env_remove("PLANDESK_DATA_DIR")
            .env_remove("PLANDESK_STORE")
            .current_dir(self.data.path());
        if let Some(url) = &self.url {
            // Named, so that its connections can be counted.
            cmd.env(
                "PLANDESK_STORE",
                format!("{url}?application_name=plandesk-agent"),
            );
        }
        cmd
    }

    async fn review(&self) -> Review {
        let location = match &self.url {
            Some(url) => StoreLocation::postgres(url.clone()),
            None => StoreLocation::Sqlite(self.data.path().to_owned()),
        };
        let store: Arc<dyn Store> = location.open().await.unwrap();
        Engine::new(
            store,
            Arc::new(SystemClock),
            Arc::new(RandomIds),
            plandesk::mode::builtin(),
        )
        .with_actor(Actor {
            name: "bench".into(),
            process: "bench".into(),
        })
        .review()
        .clone()
    }

    /// How many connections `plandesk` processes hold to the database.
    fn pg_connections(&self) -> Option<usize> {
        let url = self.url.as_ref()?;
        let out = pg::sql_on(
            url,
            "COPY (SELECT count(*) FROM pg_stat_activity \
             WHERE application_name = 'plandesk-agent') TO STDOUT",
        );
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    }
}

/// A `plandesk serve` on a free loopback port, with a token.
struct Serve {
    child: Child,
    address: String,
    token: String,
}

impl Serve {
    fn start(target: &Target) -> Self {
        let out = target
            .command(&["token", "create", "bench"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        let mut child = target
            .command(&["serve", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let address = first
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split(": ").next())
            .unwrap_or_else(|| panic!("no address in {first:?}"))
            .to_owned();
        std::thread::spawn(move || lines.map_while(Result::ok).for_each(|l| eprintln!("{l}")));
        Self {
            child,
            address,
            token,
        }
    }

    /// `(RSS in MB, threads)` of the server process now.
    fn usage(&self) -> (f64, usize) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let field = |name: &str| -> u64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap()
        };
        (field("VmRSS:") as f64 / 1024.0, field("Threads:") as usize)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Claude Code's `PermissionRequest` for plan `index`.
fn hook_payload(index: usize) -> Value {
    json!({
        "session_id": format!("bench-{index}"), "transcript_path": "/nonexistent/t.jsonl",
        "cwd": "/home/u/proj", "permission_mode": "plan",
        "hook_event_name": "PermissionRequest", "tool_name": "ExitPlanMode",
        "tool_input": {"plan": plan_text(index)},
    })
}

/// A plan of `WAIT_PLAN_BYTES` (default: a few lines), numbered steps after its title.
fn plan_text(index: usize) -> String {
    let mut plan = format!("# Plan {index}\n\n1. Change module {index}.\n2. Run its tests.\n");
    let bytes: usize = std::env::var("WAIT_PLAN_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut step = 3;
    while plan.len() < bytes {
        plan.push_str(&format!(
            "{step}. Move the handler of step {step} behind the module's interface and check \
             that its callers still pass their tests.\n"
        ));
        step += 1;
    }
    plan
}

/// The plan index an inbox item's title names.
fn index_of(item: &ReviewItem) -> usize {
    let title = &item.revision.as_ref().unwrap().title;
    title.strip_prefix("Plan ").unwrap().parse().unwrap()
}

/// When each agent's answer arrived, and what it was.
type Answers = Arc<Mutex<HashMap<usize, (Instant, String)>>>;

/// Sends Claude Code's hook request for plan `index` on a connection of its own; returns once
/// it is written, and records the answer when it arrives (a connection refused or reset, as
/// `error: …`).
async fn send_hook(address: &str, token: &str, index: usize, answers: Answers) {
    let body = hook_payload(index).to_string();
    let request = format!(
        "POST /hooks/claude HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let failed = move |answers: &Answers, err: std::io::Error| {
        let answer = (Instant::now(), format!("error: {err}"));
        answers.lock().unwrap().insert(index, answer);
    };
    let mut stream = match tokio::net::TcpStream::connect(address).await {
        Ok(stream) => stream,
        Err(err) => return failed(&answers, err),
    };
    if let Err(err) = stream.write_all(request.as_bytes()).await {
        return failed(&answers, err);
    }
    tokio::spawn(async move {
        let mut response = Vec::new();
        match stream.read_to_end(&mut response).await {
            Ok(_) => {
                let text = String::from_utf8_lossy(&response).into_owned();
                answers
                    .lock()
                    .unwrap()
                    .insert(index, (Instant::now(), text));
            }
            Err(err) => failed(&answers, err),
        }
    });
}

/// Waits until `count` plans are pending, less those whose agent was answered before anyone
/// decided (refused, or its connection failed); returns them.
async fn pending(
    review: &Review,
    count: usize,
    every: Duration,
    answers: &Answers,
) -> Vec<ReviewItem> {
    let until = Instant::now() + BOUND;
    loop {
        let inbox = review.inbox().await.unwrap();
        if inbox.len() + answers.lock().unwrap().len() >= count {
            return inbox;
        }
        assert!(Instant::now() < until, "{} of {count} pending", inbox.len());
        tokio::time::sleep(every).await;
    }
}

/// How many agents were answered so far, and the first answer of each kind (its first
/// bytes), to see why.
fn answered(answers: &Answers) -> (usize, Vec<String>) {
    let answers = answers.lock().unwrap();
    let mut kinds: Vec<String> = answers
        .values()
        .map(|(_, a)| a.chars().take(300).collect())
        .collect();
    kinds.sort();
    kinds.dedup_by(|a, b| a.get(..40) == b.get(..40));
    (answers.len(), kinds)
}

async fn approve(review: &Review, item: &ReviewItem) -> Instant {
    let sha = &item.revision.as_ref().unwrap().sha256;
    review
        .decide_external(
            &item.run_id,
            &item.tool_call_id,
            true,
            None,
            Some(sha),
            false,
        )
        .await
        .unwrap();
    Instant::now()
}

/// Milliseconds from each decision to its answer: p50, p95, max.
fn spread(decided: &HashMap<usize, Instant>, answers: &Answers) -> Value {
    let answers = answers.lock().unwrap();
    let mut ms: Vec<f64> = decided
        .iter()
        .map(|(index, at)| {
            let (answered, _) = answers
                .get(index)
                .unwrap_or_else(|| panic!("agent {index} was not answered"));
            answered.saturating_duration_since(*at).as_secs_f64() * 1000.0
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    json!({"agents": ms.len(), "p50_ms": at(0.5), "p95_ms": at(0.95), "max_ms": at(1.0)})
}

/// How the agents reach Plandesk.
#[derive(Debug, Clone, Copy)]
enum Way {
    Http,
    Hook,
    Mcp,
}

/// Starts agent `index` as a process of its own (a command hook or an MCP client), with a
/// thread recording its answer.
fn start_process(target: &Target, way: Way, index: usize, answers: Answers) -> Child {
    let args: &[&str] = match way {
        Way::Hook => &["hook", "claude-code"],
        Way::Mcp => &["mcp"],
        Way::Http => unreachable!(),
    };
    // The MCP server reads the plan from its file in the workspace's plans folder.
    let workspace = target.data.path().join(format!("workspace-{index}"));
    let plans = workspace.join(".plandesk/plans");
    std::fs::create_dir_all(&plans).unwrap();
    std::fs::write(plans.join("bench.md"), plan_text(index)).unwrap();
    let mut child = target
        .command(args)
        .current_dir(&workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let messages = match way {
        Way::Hook => vec![hook_payload(index)],
        _ => vec![
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "submit_plan",
                "arguments": {"path": ".plandesk/plans/bench.md"}}}),
        ],
    };
    for message in messages {
        writeln!(stdin, "{message}").unwrap();
    }
    // A hook reads its input to the end; an MCP server ends with its input.
    let stdin = matches!(way, Way::Mcp).then_some(stdin);
    std::thread::spawn(move || {
        let answer = match way {
            Way::Hook => {
                let mut text = String::new();
                let _ = BufReader::new(stdout).read_to_string(&mut text);
                text
            }
            _ => BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .find(|l| l.contains("\"id\":2"))
                .unwrap_or_default(),
        };
        let at = Instant::now();
        answers.lock().unwrap().insert(index, (at, answer));
        drop(stdin);
    });
    child
}

/// 50 agents wait `way`; each plan approved alone, 20 ms apart.
async fn decision_to_answer(target: &Target, way: Way) -> Value {
    let review = target.review().await;
    let answers: Answers = Arc::default();
    let serve = matches!(way, Way::Http).then(|| Serve::start(target));
    let mut children = Vec::new();
    for index in 0..AGENTS {
        match &serve {
            Some(serve) => send_hook(&serve.address, &serve.token, index, answers.clone()).await,
            None => children.push(start_process(target, way, index, answers.clone())),
        }
    }
    let items = pending(&review, AGENTS, Duration::from_millis(20), &answers).await;
    // Every waiter settled in its wait.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut decided = HashMap::new();
    for item in &items {
        decided.insert(index_of(item), approve(&review, item).await);
        tokio::time::sleep(SPACING).await;
    }
    let until = Instant::now() + Duration::from_secs(30);
    while answers.lock().unwrap().len() < AGENTS && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for mut child in children {
        let _ = child.wait();
    }
    for (index, (_, answer)) in answers.lock().unwrap().iter() {
        assert!(
            answer.contains("allow") || answer.contains("approved"),
            "agent {index} was answered with an approval: {answer}"
        );
    }
    let figure = spread(&decided, &answers);
    println!("{} {way:?}: decision → answer {figure}", target.name);
    figure
}

/// `many` agents waiting on one `serve`.
async fn many_waiting(target: &Target, many: usize) -> Value {
    let review = target.review().await;
    let serve = Arc::new(Serve::start(target));
    let answers: Answers = Arc::default();
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let senders: Vec<_> = (0..SENDERS)
        .map(|_| {
            let (serve, answers, next) = (serve.clone(), answers.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= many {
                        return;
                    }
                    send_hook(&serve.address, &serve.token, index, answers.clone()).await;
                }
            })
        })
        .collect();
    for sender in senders {
        sender.await.unwrap();
    }
    // The inbox read now and then (it competes with the server for the store).
    let items = pending(&review, many, Duration::from_millis(200), &answers).await;
    let rate = items.len() as f64 / started.elapsed().as_secs_f64();
    // Answered before anyone decided: refused, or the connection failed.
    let (refused, why) = answered(&answers);
    if refused > 0 {
        println!(
            "{}: {refused} of {many} answered before a decision: {why:#?}",
            target.name
        );
    }
    // What it holds once they have all settled to wait.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss, threads) = serve.usage();
    let connections = target.pg_connections();
    // Threads a burst of calls started go once idle for 10 s (tokio's blocking pool).
    tokio::time::sleep(Duration::from_secs(12)).await;
    let (rss_later, threads_later) = serve.usage();
    // Decided by 8 reviewers at once.
    let items = Arc::new(Mutex::new(items));
    let reviewers: Vec<_> = (0..8)
        .map(|_| {
            let (review, items) = (review.clone(), items.clone());
            tokio::spawn(async move {
                loop {
                    let Some(item) = items.lock().unwrap().pop() else {
                        return;
                    };
                    approve(&review, &item).await;
                }
            })
        })
        .collect();
    for reviewer in reviewers {
        reviewer.await.unwrap();
    }
    let until = Instant::now() + BOUND;
    while answers.lock().unwrap().len() < many {
        assert!(
            Instant::now() < until,
            "{} of {many} answered",
            answers.lock().unwrap().len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let approved = answers
        .lock()
        .unwrap()
        .values()
        .filter(|(_, text)| text.starts_with("HTTP/1.1 200") && text.contains("\"allow\""))
        .count();
    let (trail, check) = review.checked_audit().await.unwrap();
    assert!(check.broken.is_none(), "the audit trail holds");
    let answered = trail.iter().filter(|row| row.kind == "answered").count();
    assert_eq!(
        (approved, answered),
        (many - refused, many - refused),
        "every agent let in answered once, with an approval, and that answer recorded"
    );
    let figure = json!({
        "agents": many, "refused": refused, "submitted_per_s": rate, "rss_mb": rss,
        "threads": threads, "pg_connections": connections, "rss_mb_12s_later": rss_later,
        "threads_12s_later": threads_later,
    });
    println!("{}: {many} waiting on one serve {figure}", target.name);
    figure
}

fn main() {
    let many: usize = std::env::var("WAIT_MANY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let stores: Vec<&'static str> = match std::env::var("WAIT_STORES") {
        Ok(v) if v == "sqlite" => vec!["sqlite"],
        Ok(v) if v == "postgres" => vec!["postgres"],
        _ => vec!["sqlite", "postgres"],
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut report = serde_json::Map::new();
    for name in stores {
        let figures = runtime.block_on(async {
            let mut latency = serde_json::Map::new();
            // `WAIT_MANY_ONLY=1`: the many agents alone.
            let ways = match std::env::var_os("WAIT_MANY_ONLY") {
                Some(_) => vec![],
                None => vec![Way::Http, Way::Hook, Way::Mcp],
            };
            for way in ways {
                let target = Target::new(name);
                let figure = decision_to_answer(&target, way).await;
                latency.insert(format!("{way:?}").to_lowercase(), figure);
            }
            let target = Target::new(name);
            json!({"decision_to_answer": latency, "many": many_waiting(&target, many).await})
        });
        report.insert(name.into(), figures);
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    std::fs::create_dir_all(&dir).unwrap();
    let text = serde_json::to_string_pretty(&Value::Object(report)).unwrap();
    std::fs::write(dir.join("wait.json"), &text).unwrap();
    println!("{text}");
}
