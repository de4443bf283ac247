//! `./x torture [RUNS]`: crash safety under fire. Hundreds of scripted runs, each driven by a
//! chain of `plandesk` processes that are killed (SIGKILL, or an abort at a named crash point)
//! at random moments, sometimes two at once on one run. Every run must still be recovered and
//! finished, with its plan approved exactly once, the store must pass SQLite's integrity
//! check, and its audit trail `audit --verify` (chain, plans, the record of its end). Prints
//! runs / kills / recovered / lost, and the seed to replay it. With `PLANDESK_STORE=postgres://…`
//! every process works on that PostgreSQL database instead.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test driver: a panic is the report

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Most processes one run may take before it counts as lost.
const MAX_ATTEMPTS: usize = 60;
const CRASH_POINTS: [&str; 3] = ["after-model-call", "after-suspend", "after-decision"];

/// xorshift64*: reproducible from the printed seed, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

struct Torture {
    bin: PathBuf,
    data: PathBuf,
    script: PathBuf,
    rng: Rng,
    kills: usize,
    crashes: usize,
    refusals: usize,
}

impl Torture {
    fn command(&self, workspace: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--data-dir")
            .arg(&self.data)
            .args(args)
            .current_dir(workspace)
            .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent")
            .env("OLLAMA_HOST", "127.0.0.1:9")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("PLANDESK_CRASH_AT")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }

    /// Runs `args`, maybe crashing it at a named point, maybe killing it after a random delay.
    fn attack(&mut self, workspace: &Path, args: &[&str]) {
        let mut cmd = self.command(workspace, args);
        if self.rng.chance(15) {
            let point = CRASH_POINTS[self.rng.below(CRASH_POINTS.len() as u64) as usize];
            cmd.env("PLANDESK_CRASH_AT", point);
            self.crashes += 1;
        }
        let child = cmd.spawn().unwrap();
        if self.rng.chance(50) {
            let delay = Duration::from_micros(self.rng.below(25_000));
            self.kill_after(child, delay);
        } else {
            wait(child);
        }
    }

    fn kill_after(&mut self, mut child: Child, delay: Duration) {
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            self.kills += 1;
        }
        child.wait().unwrap();
    }

    fn status(&self, workspace: &Path, run: &str) -> (String, Vec<Value>) {
        let out = self
            .command(workspace, &["--json", "runs"])
            .stdout(Stdio::piped())
            .output()
            .unwrap();
        let runs: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let status = runs
            .as_array()
            .and_then(|all| all.iter().find(|r| r["id"] == run))
            .and_then(|r| r["status"].as_str())
            .unwrap_or("missing")
            .to_owned();
        let out = self
            .command(workspace, &["--json", "pending"])
            .stdout(Stdio::piped())
            .output()
            .unwrap();
        let pending: Vec<Value> = serde_json::from_slice::<Value>(&out.stdout)
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter(|p| p["runId"] == run)
            .collect();
        (status, pending)
    }

    /// Starts one run and drives it to the end through killed processes; `true` if it finished.
    fn one_run(&mut self, index: usize, root: &Path) -> bool {
        let workspace = root.join(format!("ws-{index}"));
        std::fs::create_dir_all(&workspace).unwrap();
        let marker = format!("torture-{index}-{}", self.rng.next());
        let model = format!("scripted:{}", self.script.display());
        self.attack(&workspace, &["run", "--model", &model, &marker]);
        for _ in 0..MAX_ATTEMPTS {
            if let Some(run) = self.find_run(&workspace, &marker) {
                return self.drive(&workspace, &run);
            }
            // Killed before the run was stored: nothing to recover, start it again.
            self.attack(&workspace, &["run", "--model", &model, &marker]);
        }
        false
    }

    fn find_run(&self, workspace: &Path, marker: &str) -> Option<String> {
        let out = self
            .command(workspace, &["--json", "runs"])
            .stdout(Stdio::piped())
            .output()
            .unwrap();
        let runs: Value = serde_json::from_slice(&out.stdout).ok()?;
        runs.as_array()?
            .iter()
            .find(|r| r["prompt"] == marker)
            .and_then(|r| r["id"].as_str())
            .map(str::to_owned)
    }

    fn drive(&mut self, workspace: &Path, run: &str) -> bool {
        for _ in 0..MAX_ATTEMPTS {
            let (status, pending) = self.status(workspace, run);
            let args: Vec<String> = match status.as_str() {
                "finished" => return true,
                "suspended" if !pending.is_empty() => {
                    let sha = pending[0]["revision"]["sha256"].as_str().unwrap_or("");
                    let mut args = vec!["approve".to_owned(), run.to_owned()];
                    if sha.len() >= 8 {
                        args.extend(["--revision".to_owned(), sha[..12].to_owned()]);
                    }
                    args
                }
                // Decided but not applied, interrupted mid-step, or a failed model call.
                _ => vec!["resume".to_owned(), run.to_owned()],
            };
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            if self.rng.chance(10) {
                // Two processes at once on one run: the claim lets one through.
                let rival = self.command(workspace, &args).spawn().unwrap();
                self.attack(workspace, &args);
                let out = rival.wait_with_output().unwrap();
                if !out.status.success() {
                    self.refusals += 1;
                }
            } else {
                self.attack(workspace, &args);
            }
        }
        false
    }
}

fn wait(mut child: Child) {
    child.wait().unwrap();
}

/// The store after the torture: its own integrity check (SQLite's; a PostgreSQL server checks
/// itself), the approvals recorded and the runs finished, read through the store as every
/// process reads it (`PLANDESK_STORE` puts the whole torture on PostgreSQL).
fn check_store(data: &Path) -> (String, i64, i64) {
    let location = plandesk::config::StoreLocation::choose(None, data).unwrap();
    let integrity = match &location {
        plandesk::config::StoreLocation::Sqlite(dir) => {
            let conn = rusqlite::Connection::open(dir.join("plandesk.db")).unwrap();
            conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .unwrap()
        }
        plandesk::config::StoreLocation::Postgres { .. } => "ok (PostgreSQL)".to_owned(),
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = location.open().await.unwrap();
        let approvals = store
            .audit(None)
            .await
            .unwrap()
            .iter()
            .filter(|e| e.kind == "decided" && e.data["action"] == "approved")
            .count() as i64;
        let finished = store
            .runs()
            .await
            .unwrap()
            .iter()
            .filter(|r| r.status == plandesk::RunStatus::Finished)
            .count() as i64;
        (integrity, approvals, finished)
    })
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let seed: u64 = std::env::var("TORTURE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/debug/plandesk");
    assert!(
        bin.exists(),
        "build the CLI first: cargo build (looked for {})",
        bin.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let plan = ".plandesk/plans/torture.md";
    // Long enough that its messages are stored compressed (`store::conversation`).
    let text: String = std::iter::once("# Torture\n\n".to_owned())
        .chain((1..=60).map(|n| format!("{n}. Survive step {n}, whatever kills the process\n")))
        .collect();
    std::fs::write(
        &script,
        json!({"turns": [
            {"text": "Planning.", "toolCalls": [
                {"toolCallId": "w", "toolName": "write_file",
                 "args": {"path": plan, "content": text}},
                {"toolCallId": "s", "toolName": "submit_plan", "args": {"path": plan}}]},
            {"toolCalls": [{"toolCallId": "l", "toolName": "list_files", "args": {}}]},
            {"text": "All done."}
        ]})
        .to_string(),
    )
    .unwrap();
    let mut torture = Torture {
        bin,
        data: dir.path().join("data"),
        script,
        rng: Rng(seed),
        kills: 0,
        crashes: 0,
        refusals: 0,
    };
    let began = Instant::now();
    let mut lost = Vec::new();
    for index in 0..runs {
        if !torture.one_run(index, dir.path()) {
            lost.push(index);
        }
    }
    let recovered = runs - lost.len();
    let (integrity, approvals, finished) = check_store(&torture.data);
    // The audit trail, its plans and the record of its end outside the store, after every
    // kill: none may be left broken, cut, or unreadable.
    let verified = torture
        .command(dir.path(), &["audit", "--verify"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let audit = String::from_utf8_lossy(&verified.stdout).trim().to_owned();
    println!(
        "torture: {runs} runs, {} SIGKILLs, {} crash-point aborts, {} rival processes refused; \
         recovered {recovered}, lost {}; {finished} finished runs with {approvals} approvals; \
         integrity_check: {integrity}; audit: {audit}; {:.1} s; seed {seed}",
        torture.kills,
        torture.crashes,
        torture.refusals,
        lost.len(),
        began.elapsed().as_secs_f64()
    );
    let ok = lost.is_empty()
        && integrity.starts_with("ok")
        && approvals == finished
        && verified.status.success();
    if !ok {
        eprintln!("torture: FAILED (lost runs: {lost:?}); replay with TORTURE_SEED={seed}");
        std::process::exit(1);
    }
}
