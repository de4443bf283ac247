//! Benchmarks (not timed tests): `cargo bench --bench engine`.
//! - scripted runs of 1,000 and 10,000 steps through the engine and a real SQLite store, each in
//!   a process of its own, taking turns: time per step (and the ratio of the two, within each
//!   turn), peak memory, and against one fsync measured in the same turn
//! - rendering and diffing a ~200 KB plan
//! - decoding a provider's stream over real HTTP: a 200 KB plan as ~50,000 tool-argument deltas
//! - approving a 200 KB plan as the app does (record the decision, then continue the run): time
//!   to the decision being durable, and to the first chunk of the resumed run
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::time::{Duration, Instant};

use plandesk::{Engine, StartOptions};
use serde_json::json;

/// Set in a child process of this benchmark: run one scripted run of this many steps, print its
/// figures as one JSON line, and exit. Each run has a process of its own, so its peak memory is
/// its own (VmHWM only grows) and not the previous run's.
const STEPS_ENV: &str = "PLANDESK_BENCH_STEPS";

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// One scripted run of `steps` model calls (each reads a file) through the engine and a real
/// SQLite store, in this process: prints `{"perStepMs", "peakMiB", "beforeMiB", "storeMiB"}`.
fn scripted_run(steps: usize) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(workspace.join("src")).unwrap();
    std::fs::write(
        workspace.join("src/lib.rs"),
        "pub fn answer() -> u32 { 42 }\n".repeat(20),
    )
    .unwrap();
    // Written a turn at a time: the whole script as one JSON value would be this process's peak.
    let script = dir.path().join("script.json");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&script).unwrap());
    write!(out, "{{\"turns\": [").unwrap();
    for i in 0..steps - 1 {
        let turn = json!({"text": format!("Step {i}: reading the library again."),
               "toolCalls": [{"toolCallId": format!("c{i}"), "toolName": "read_file", "args": {"path": "src/lib.rs"}}]});
        write!(out, "{turn},").unwrap();
    }
    write!(out, "{}]}}", json!({"text": "Done."})).unwrap();
    out.into_inner().unwrap().sync_all().unwrap();

    let engine = Engine::open(&dir.path().join("data")).unwrap();
    let mut options = StartOptions::new(&workspace, format!("scripted:{}", script.display()));
    options.max_steps = steps as u32 + 1;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let before = peak_rss_kib().unwrap_or(0);
    let started = Instant::now();
    let report = runtime
        .block_on(engine.start("Read the library again and again", &options, &mut |_c| {}))
        .unwrap();
    let wall = started.elapsed();
    let peak = peak_rss_kib().unwrap_or(0);
    assert_eq!(
        report.status,
        plandesk::RunStatus::Finished,
        "the run must complete: {report:?}"
    );
    let store = engine.store_location();
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let store_bytes = size(std::path::Path::new(&store))
        + size(&std::path::Path::new(&store).with_extension("db-wal"));
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "{}",
        json!({
            "perStepMs": wall.as_secs_f64() * 1000.0 / steps as f64,
            "peakMiB": mib(peak),
            "beforeMiB": mib(before),
            "storeMiB": store_bytes as f64 / (1024.0 * 1024.0),
        })
    );
}

/// One scripted run of `steps` steps in a child process: its time per step (ms) and its peak
/// memory (MiB, the whole process's peak RSS).
fn scripted_run_apart(steps: usize) -> (f64, f64) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env(STEPS_ENV, steps.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the {steps}-step run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout);
    let figures: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    (
        figures["perStepMs"].as_f64().unwrap(),
        figures["peakMiB"].as_f64().unwrap(),
    )
}

/// The disk's floor for a commit, where the runs' stores are: appending 4 KiB to a file and
/// waiting for it to reach the disk (as a commit appends to SQLite's journal and syncs it),
/// the median of 100 (ms).
fn fsync_ms() -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let mut file = std::fs::File::create(dir.path().join("journal")).unwrap();
    let page = [0x5a_u8; 4096];
    let mut samples: Vec<f64> = (0..100)
        .map(|_| {
            let started = Instant::now();
            file.write_all(&page).unwrap();
            file.sync_data().unwrap();
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// How many 10,000-step runs the ratio is measured on; each has four 1,000-step runs around it.
const LONG_RUNS: usize = 5;

/// The 1,000- and 10,000-step runs taking turns: each 10,000-step run between two 1,000-step
/// runs before it and two after. Whatever the machine does over the minutes this takes (a
/// disk slowing down, a neighbour's build) falls on both alike, and the ratio of the two
/// per-step costs is taken within each turn: the long run against the median of its four
/// neighbours. Records each length's per-step time and peak memory, and the turns' ratios.
fn scripted_runs_in_turns() {
    let (mut short, mut short_peak) = (Vec::new(), Vec::new());
    let (mut long, mut long_peak) = (Vec::new(), Vec::new());
    let mut ratios = Vec::new();
    let (mut fsyncs, mut over_fsync) = (Vec::new(), Vec::new());
    for _ in 0..LONG_RUNS {
        let mut around = Vec::new();
        for at in 0..5 {
            let steps = if at == 2 { 10_000 } else { 1_000 };
            let (per_step, peak) = scripted_run_apart(steps);
            if long.is_empty() && (at == 0 || at == 2) {
                println!("{steps}-step scripted run, first: {per_step:.3} ms per step, peak {peak:.1} MiB");
            }
            if steps == 10_000 {
                long.push(per_step);
                long_peak.push(peak);
            } else {
                around.push(per_step);
                short.push(per_step);
                short_peak.push(peak);
            }
        }
        around.sort_by(f64::total_cmp);
        ratios.push(long[long.len() - 1] / ((around[1] + around[2]) / 2.0));
        // In the same turn: a step's cost against the disk's floor.
        let fsync = fsync_ms();
        fsyncs.push(fsync);
        over_fsync.push(long[long.len() - 1] / fsync);
    }
    let runs = |steps: &str, n: usize| format!("{steps}-step scripted run, per step ({n} runs)");
    let peaks = |steps: &str, n: usize| format!("{steps}-step scripted run, peak RSS ({n} runs)");
    let n = short.len();
    summary(&runs("1000", n), short, "ms");
    summary(&peaks("1000", n), short_peak, "MiB");
    summary(&runs("10000", LONG_RUNS), long, "ms");
    summary(&peaks("10000", LONG_RUNS), long_peak, "MiB");
    summary("per-step cost, 10,000-step / 1,000-step run", ratios, "x");
    summary(
        &format!("fsync: 4 KiB appended and synced, median of 100 ({LONG_RUNS} turns)"),
        fsyncs,
        "ms",
    );
    summary(
        "per-step cost of a 10,000-step run / one fsync, same turn",
        over_fsync,
        "x",
    );
}

/// Median and p95 of `samples`, printed and recorded; returns the median.
fn summary(label: &str, mut samples: Vec<f64>, unit: &str) -> f64 {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    let (median, p95) = (at(0.5), at(0.95));
    println!("{label}: median {median:.2} {unit}, p95 {p95:.2} {unit}");
    record(label, median, p95, unit);
    median
}

/// A realistic ~200 KB plan: sections of prose, numbered steps, task lists, tables and code.
fn big_plan(variant: usize) -> String {
    let mut plan = String::from("# Migrate the storage layer\n\n");
    let mut section = 0;
    while plan.len() < 200 * 1024 {
        section += 1;
        plan.push_str(&format!("## Part {section}: module {section}\n\n"));
        plan.push_str("The module keeps its public API; the internals move to the new store with **no downtime** and a `feature flag`.\n\n");
        for step in 1..=8 {
            let word = if variant == 1 && step == 3 {
                "carefully"
            } else {
                "quickly"
            };
            plan.push_str(&format!(
                "{step}. Move table {section}.{step} {word}, then verify row counts match\n"
            ));
        }
        plan.push_str(
            "\n- [ ] backfill\n- [x] schema\n\n| table | rows | owner |\n|---|---|---|\n",
        );
        plan.push_str(&format!(
            "| t{section} | {} | team-{} |\n\n",
            section * 1000,
            section % 7
        ));
        plan.push_str("```rust\nfn migrate(conn: &Connection) -> Result<()> { Ok(()) }\n```\n\n");
    }
    plan
}

/// Every figure so far, for `target/bench/engine.json`: name, median, p95, unit.
static FIGURES: std::sync::Mutex<Vec<serde_json::Value>> = std::sync::Mutex::new(Vec::new());

fn record(name: &str, median: f64, p95: f64, unit: &str) {
    FIGURES
        .lock()
        .unwrap()
        .push(json!({"name": name, "median": median, "p95": p95, "unit": unit}));
}

fn time<T>(label: &str, iterations: u32, mut f: impl FnMut() -> T) -> Duration {
    let samples = (0..iterations)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(f());
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    Duration::from_secs_f64(summary(label, samples, "ms") / 1000.0)
}

/// A 200 KB plan written with one tool call whose arguments arrive four characters at a time,
/// served over HTTP on 127.0.0.1 in `provider`'s wire format, decoded by that provider's model.
fn provider_stream(provider: &str, plan: &str) {
    use futures::StreamExt;
    use std::io::{Read, Write};

    let args = json!({"path": ".plandesk/plans/big.md", "content": plan}).to_string();
    let pieces: Vec<String> = args
        .chars()
        .collect::<Vec<_>>()
        .chunks(4)
        .map(|c| c.iter().collect())
        .collect();
    let mut body = String::new();
    let event = |body: &mut String, name: &str, data: serde_json::Value| {
        if provider == "anthropic" {
            body.push_str(&format!("event: {name}\n"));
        }
        body.push_str(&format!("data: {data}\n\n"));
    };
    if provider == "anthropic" {
        event(
            &mut body,
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 10}}}),
        );
        event(
            &mut body,
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {}}}),
        );
        for p in &pieces {
            event(
                &mut body,
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": p}}),
            );
        }
        event(
            &mut body,
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        );
        event(
            &mut body,
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": pieces.len()}}),
        );
        event(&mut body, "message_stop", json!({"type": "message_stop"}));
    } else {
        event(
            &mut body,
            "",
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "write_file", "arguments": ""}}]}}]}),
        );
        for p in &pieces {
            event(
                &mut body,
                "",
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": p}}]}}]}),
            );
        }
        event(
            &mut body,
            "",
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        );
        body.push_str("data: [DONE]\n\n");
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = body.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let mut conn = conn.unwrap();
            let mut buf = [0u8; 65536];
            let mut seen = Vec::new();
            // Read the head and the body (Content-Length) before answering.
            loop {
                let n = conn.read(&mut buf).unwrap();
                seen.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&seen);
                if let Some(end) = text.find("\r\n\r\n") {
                    let length: usize = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap())
                        })
                        .unwrap_or(0);
                    if seen.len() >= end + 4 + length {
                        break;
                    }
                }
            }
            let head = format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", served.len());
            conn.write_all(head.as_bytes()).unwrap();
            conn.write_all(served.as_bytes()).unwrap();
        }
    });
    std::env::set_var("ANTHROPIC_API_KEY", "bench");
    let spec = format!("{provider}:bench@http://127.0.0.1:{port}/v1");
    let model = plandesk::model::from_spec(&spec, std::path::Path::new(".")).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let request = plandesk::model::ModelRequest {
        run_id: "bench",
        system: "",
        plans_dir: ".plandesk/plans",
        messages: &[],
        turns: 0,
        tools: &[],
    };
    let each = time(
        &format!(
            "{provider}: decode {} KiB stream, {} deltas, over HTTP",
            body.len() / 1024,
            pieces.len()
        ),
        5,
        || {
            runtime.block_on(async {
                let mut events = model.stream(request);
                let mut n = 0usize;
                while let Some(e) = events.next().await {
                    e.unwrap();
                    n += 1;
                }
                n
            })
        },
    );
    println!(
        "  {:.0} deltas/s, {:.1} MiB/s of wire data",
        pieces.len() as f64 / each.as_secs_f64(),
        body.len() as f64 / 1048576.0 / each.as_secs_f64()
    );
}

/// The app's approve path, engine side: `decide_and_tell` until the decision is durable (when
/// the app answers the click) and until the resumed run's first chunk, each round a run
/// suspended on a ~200 KB plan. On a fresh store per round (20 rounds), and on one store in
/// use (40 rounds, approved after a person's reading time): there, the store's write-ahead
/// log fills up over the rounds, and the click must not be the one that pays for moving it
/// into the database.
fn approve_to_first_chunk(label: &str, rounds: usize, one_store: bool) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let plan = big_plan(0);
    let (mut recorded, mut first) = (Vec::new(), Vec::new());
    let shared = tempfile::tempdir().unwrap();
    let shared_engine = one_store.then(|| Engine::open(&shared.path().join("data")).unwrap());
    for round in 0..rounds {
        let fresh = tempfile::tempdir().unwrap();
        let dir = if one_store {
            shared.path()
        } else {
            fresh.path()
        };
        let workspace = dir.join(format!("ws{round}"));
        std::fs::create_dir_all(&workspace).unwrap();
        let path = ".plandesk/plans/big.md";
        let script = dir.join(format!("script{round}.json"));
        let turns = json!({"turns": [
            {"toolCalls": [
                {"toolCallId": "w", "toolName": "write_file", "args": {"path": path, "content": plan}},
                {"toolCallId": "s", "toolName": "submit_plan", "args": {"path": path}}]},
            {"text": "Approved; starting."}
        ]});
        std::fs::write(&script, turns.to_string()).unwrap();
        let engine = match &shared_engine {
            Some(engine) => engine.clone(),
            None => Engine::open(&dir.join("data")).unwrap(),
        };
        let options = StartOptions::new(&workspace, format!("scripted:{}", script.display()));
        let report = runtime
            .block_on(engine.start("Migrate the store", &options, &mut |_| {}))
            .unwrap();
        assert_eq!(report.status, plandesk::RunStatus::Suspended);
        if one_store {
            // A person reads the plan before approving it.
            std::thread::sleep(Duration::from_millis(400));
        }
        let verdict = plandesk::Verdict {
            approve: true,
            feedback: None,
            note: None,
            tool_call_id: Some("s".into()),
            ..Default::default()
        };
        let clicked = Instant::now();
        let (mut recorded_at, mut first_chunk) = (None, None);
        runtime
            .block_on(engine.decide_and_tell(
                &report.run_id,
                &verdict,
                &mut || {
                    recorded_at.get_or_insert_with(|| clicked.elapsed());
                },
                &mut |_| {
                    first_chunk.get_or_insert_with(|| clicked.elapsed());
                },
            ))
            .unwrap();
        recorded.push(recorded_at.expect("the decision is recorded"));
        first.push(first_chunk.expect("the resumed run streams"));
        // A fresh store's engine is closed here, with its round, before its folder goes.
        drop(engine);
    }
    let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
    let worst = first.iter().map(ms).fold(0.0, f64::max);
    summary(
        &format!("approve: decision recorded (200 KB plan{label})"),
        recorded.iter().map(ms).collect(),
        "ms",
    );
    summary(
        &format!("approve: first resumed chunk (200 KB plan{label})"),
        first.iter().map(ms).collect(),
        "ms",
    );
    println!("  slowest first chunk: {worst:.2} ms");
}

fn main() {
    if let Ok(steps) = std::env::var(STEPS_ENV) {
        scripted_run(steps.parse().unwrap());
        return;
    }
    // `cargo bench --bench engine -- approve`: only the groups whose name holds a word given.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let wanted = |group: &str| only.is_empty() || only.iter().any(|w| group.contains(w.as_str()));
    if wanted("steps") {
        scripted_runs_in_turns();
    }
    if wanted("approve") {
        approve_to_first_chunk("", 20, false);
        approve_to_first_chunk(", one store in use", 40, true);
    }
    let (a, b) = (big_plan(0), big_plan(1));
    if wanted("render diff") {
        println!("plan size: {} KiB", a.len() / 1024);
        time("render 200 KB plan (comrak + ammonia)", 20, || {
            plandesk::plan::render_html(&a)
        });
        time("side-by-side diff of two 200 KB revisions", 20, || {
            plandesk::plan::side_by_side(&a, &b)
        });
        time("side-by-side diff, identical 200 KB revisions", 20, || {
            plandesk::plan::side_by_side(&a, &a)
        });
    }
    if wanted("provider") {
        provider_stream("openai", &a);
        provider_stream("anthropic", &a);
    }
    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    std::fs::create_dir_all(&target).unwrap();
    let file = target.join("engine.json");
    let mut figures = FIGURES.lock().unwrap().clone();
    if !only.is_empty() {
        // Some groups only: the file keeps the other groups' figures from the last run.
        let earlier: Vec<serde_json::Value> = std::fs::read(&file)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        let measured: Vec<serde_json::Value> = figures.iter().map(|f| f["name"].clone()).collect();
        let kept = earlier
            .into_iter()
            .filter(|f| !measured.contains(&f["name"]));
        figures = kept.chain(figures).collect();
    }
    std::fs::write(&file, serde_json::to_string_pretty(&figures).unwrap()).unwrap();
    println!("written to {}", file.display());
}
