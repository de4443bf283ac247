//! The store's size on disk against what people wrote (not a timed test): `cargo bench --bench
//! size`. Drives 1,000 engine runs through ten plan revisions each, as a person would: the
//! model writes a plan of ~2.5 KB into the workspace and submits it, the person rejects it with
//! feedback, the model revises it, ten times; then measures the store's files against the
//! plans' own text, with each table's share (from SQLite's `dbstat`, where the `sqlite3` shell
//! has it), on SQLite and on a PostgreSQL of its own (its tables' sizes, with their indexes and
//! out-of-line values). `SIZE_RUNS=N` drives fewer runs, `SIZE_STORES=sqlite|postgres` one
//! store. Printed and written to `target/bench/size.json`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/engine/pg.rs"]
#[allow(dead_code)]
mod pg;

use std::path::Path;
use std::time::Instant;

use plandesk::config::StoreLocation;
use plandesk::{Engine, RunStatus, StartOptions, Verdict};
use serde_json::json;

const REVISIONS: usize = 10;
const PLAN_PATH: &str = ".plandesk/plans/plan.md";

/// Prose to cut plans from: the project's own documents (plans are prose and lists about code;
/// made-up repetitive text would compress, and dedupe, far better than real plans do).
const PROSE: &str = concat!(
    include_str!("../docs/architecture.md"),
    include_str!("../docs/contract.md"),
    include_str!("../docs/store.md"),
    include_str!("../README.md"),
);

/// Revision `revision` of run `run`'s plan: ~2.5 KB of prose, each run's from elsewhere in
/// [`PROSE`]; each revision keeps the last one's text and answers the feedback on it, as a
/// model revises a plan.
fn plan(run: usize, revision: usize) -> String {
    let lines: Vec<&str> = PROSE.lines().collect();
    let mut at = (run * 7919) % (lines.len() - 120);
    let mut text = format!("# Move module {run} to the new store\n\n");
    while text.len() < 2300 {
        text.push_str(lines[at]);
        text.push('\n');
        at += 1;
    }
    for round in 0..revision {
        text.push_str(&format!(
            "- Round {round}: step {} now checks the rows it moved and rolls back on failure.\n",
            round + 1
        ));
    }
    text
}

fn feedback(revision: usize) -> String {
    format!(
        "Not yet: step {} must say how the rows are checked, and what happens on failure.",
        revision + 1
    )
}

/// Drives `runs` runs through [`REVISIONS`] rejected revisions each on `engine`, in folders
/// under `dir`: the bytes of the plans and of the feedback.
async fn drive(engine: &Engine, dir: &Path, runs: usize) -> (u64, u64) {
    let (mut plan_bytes, mut feedback_bytes) = (0u64, 0u64);
    for run in 0..runs {
        let workspace = dir.join(format!("ws{run}"));
        std::fs::create_dir_all(&workspace).unwrap();
        let mut turns: Vec<_> = (0..REVISIONS)
            .map(|revision| {
                let text = plan(run, revision);
                plan_bytes += text.len() as u64;
                json!({"text": format!("Revision {revision} of the plan."), "toolCalls": [
                    {"toolCallId": format!("w{revision}"), "toolName": "write_file",
                     "args": {"path": PLAN_PATH, "content": text}},
                    {"toolCallId": format!("s{revision}"), "toolName": "submit_plan",
                     "args": {"path": PLAN_PATH}}]})
            })
            .collect();
        turns.push(json!({"text": "Understood; I will stop here."}));
        let script = dir.join(format!("script{run}.json"));
        std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
        let options = StartOptions::new(&workspace, format!("scripted:{}", script.display()));
        let mut report = engine
            .start(&format!("Move module {run}"), &options, &mut |_| {})
            .await
            .unwrap();
        for revision in 0..REVISIONS {
            assert_eq!(report.status, RunStatus::Suspended, "{report:?}");
            let feedback = feedback(revision);
            feedback_bytes += feedback.len() as u64;
            let verdict = Verdict {
                approve: false,
                feedback: Some(feedback),
                note: None,
                tool_call_id: Some(format!("s{revision}")),
                ..Default::default()
            };
            report = engine
                .decide(&report.run_id, &verdict, &mut |_| {})
                .await
                .unwrap();
        }
        assert_eq!(report.status, RunStatus::Finished, "{report:?}");
        std::fs::remove_file(&script).unwrap();
        std::fs::remove_dir_all(&workspace).unwrap();
    }
    (plan_bytes, feedback_bytes)
}

/// Bytes of a SQLite store's files (the database and what its journal holds).
fn sqlite_bytes(location: &str) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .map(|suffix| {
            let mut name = Path::new(location).as_os_str().to_owned();
            name.push(suffix);
            std::fs::metadata(Path::new(&name))
                .map(|m| m.len())
                .unwrap_or(0)
        })
        .sum()
}

/// Each table's (and index's) bytes in a SQLite store, largest first, if the `sqlite3` shell
/// can say.
fn sqlite_tables(location: &str) -> Vec<(String, u64)> {
    let out = std::process::Command::new("sqlite3")
        .args([
            "-readonly",
            location,
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC",
        ])
        .output();
    let Ok(out) = out else {
        return Vec::new();
    };
    rows(&out.stdout)
}

/// Each table's bytes (with its indexes and what PostgreSQL keeps out of line) in the store's
/// PostgreSQL database, largest first.
fn postgres_tables(url: &str) -> Vec<(String, u64)> {
    let out = pg::sql_on(
        url,
        "SELECT relname, pg_total_relation_size(oid) FROM pg_class
         WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace ORDER BY 2 DESC",
    );
    rows(&out.stdout)
}

fn rows(out: &[u8]) -> Vec<(String, u64)> {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(|line| {
            let (name, bytes) = line.rsplit_once('|')?;
            Some((name.trim().to_owned(), bytes.trim().parse().ok()?))
        })
        .collect()
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Drives the runs on one store (`postgres`: a database of its own on a server of the
/// benchmark's own) and measures it: its figures as JSON.
fn measure(store: &str, runs: usize) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let url = (store == "postgres").then(pg::database);
    let location = match &url {
        Some(url) => StoreLocation::postgres(url.clone()),
        None => StoreLocation::Sqlite(dir.path().join("data")),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let engine = runtime
        .block_on(Engine::open_at(&location, "bench"))
        .unwrap();
    let file = engine.store_location();
    let empty = match &url {
        Some(url) => postgres_tables(url).iter().map(|(_, b)| b).sum(),
        None => 0,
    };
    let started = Instant::now();
    let (plan_bytes, feedback_bytes) = runtime.block_on(drive(&engine, dir.path(), runs));
    let driven = started.elapsed();
    drop(engine);
    let tables = match &url {
        Some(url) => postgres_tables(url),
        None => sqlite_tables(&file),
    };
    let bytes = match &url {
        Some(_) => tables.iter().map(|(_, b)| b).sum::<u64>() - empty,
        None => sqlite_bytes(&file),
    };
    if std::env::var_os("SIZE_KEEP").is_some() && url.is_none() {
        println!("kept: {file}");
        let _ = dir.keep();
    }
    let ratio = bytes as f64 / plan_bytes as f64;
    println!(
        "{store}: {runs} runs × {REVISIONS} revisions, each rejected with feedback ({:.1} s)",
        driven.as_secs_f64()
    );
    println!(
        "{store}: plans' text {:.2} MiB, feedback {:.2} MiB; store {:.2} MiB: {ratio:.2}× the plans",
        mib(plan_bytes),
        mib(feedback_bytes),
        mib(bytes)
    );
    for (name, bytes) in tables.iter().filter(|(_, b)| *b >= 64 * 1024) {
        println!("  {name}: {:.2} MiB", mib(*bytes));
    }
    json!({
        "runs": runs,
        "revisionsPerRun": REVISIONS,
        "planMiB": mib(plan_bytes),
        "feedbackMiB": mib(feedback_bytes),
        "storeMiB": mib(bytes),
        "storeOverPlans": ratio,
        "drivenSeconds": driven.as_secs_f64(),
        "tablesMiB": tables.iter().map(|(n, b)| (n.clone(), json!(mib(*b)))).collect::<serde_json::Map<_, _>>(),
    })
}

fn main() {
    let runs: usize = std::env::var("SIZE_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let stores = std::env::var("SIZE_STORES").unwrap_or_else(|_| "sqlite,postgres".into());
    let mut out = serde_json::Map::new();
    for store in stores.split(',') {
        out.insert(store.to_owned(), measure(store, runs));
    }
    std::fs::create_dir_all("target/bench").unwrap();
    std::fs::write(
        "target/bench/size.json",
        format!("{:#}\n", serde_json::Value::Object(out)),
    )
    .unwrap();
}
