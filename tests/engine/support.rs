#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

/// A session bus address nothing listens on: no keyring.
pub const NO_BUS: &str = "unix:path=/nonexistent/plandesk-test-bus";
/// Where no Ollama answers (port 9 is discard; nothing listens on loopback).
pub const CLOSED_PORT: &str = "127.0.0.1:9";

pub const PLAN: &str = ".plandesk/plans/feature.md";
pub const PLAN_TEXT: &str =
    "# Add a cache\n\nUse an LRU cache in front of the store.\n\n1. Measure\n2. Cache\n";

/// A workspace, a data directory and a scripted model file, in one temp folder.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub workspace: PathBuf,
    pub data: PathBuf,
    /// The store every command of this fixture uses: the SQLite file in `data`, or, when
    /// `PLANDESK_TEST_STORE=postgres`, a fresh database on the test PostgreSQL server (so the
    /// whole suite can run on either backend).
    pub store: plandesk::config::StoreLocation,
    pub script: PathBuf,
    pub log: PathBuf,
}

impl Fixture {
    pub fn new(turns: Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_owned();
        let workspace = root.join("ws");
        std::fs::create_dir_all(workspace.join(".plandesk/plans")).unwrap();
        std::fs::create_dir_all(workspace.join("src")).unwrap();
        std::fs::write(
            workspace.join("src/lib.rs"),
            "pub fn answer() -> u32 { 42 }\n",
        )
        .unwrap();
        let data = root.join("data");
        let script = root.join("script.json");
        std::fs::write(&script, json!({"turns": turns}).to_string()).unwrap();
        let log = root.join("model.log");
        let store = if on_postgres() {
            plandesk::config::StoreLocation::postgres(crate::pg::database())
        } else {
            plandesk::config::StoreLocation::Sqlite(data.clone())
        };
        Self {
            _dir: dir,
            root,
            workspace,
            data,
            store,
            script,
            log,
        }
    }

    /// Every byte this fixture's store keeps on disk: the files of the data folder, and the
    /// database's dump on PostgreSQL; and, as the store reads it back, each engine run's
    /// conversation (long messages are kept compressed: a text in one would not show in the
    /// bytes on disk).
    pub fn stored(&self) -> Vec<(String, Vec<u8>)> {
        let mut stored = self.stored_bytes();
        if stored.is_empty() {
            return stored; // nothing was ever stored: opening the store would make one
        }
        let conversations = block_on(async {
            let store = self.store.open().await.unwrap();
            let mut conversations = Vec::new();
            for run in store.runs().await.unwrap() {
                match store.load(&run.id).await {
                    Ok(loaded) => conversations.push((
                        format!("the conversation of run {}", run.id),
                        loaded.messages.join("\n").into_bytes(),
                    )),
                    // An outside agent's session has no snapshot and no conversation.
                    Err(plandesk::store::StoreError::UnknownRun(_)) => {}
                    Err(err) => panic!("run {} cannot be read: {err}", run.id),
                }
            }
            conversations
        });
        stored.extend(conversations);
        stored
    }

    fn stored_bytes(&self) -> Vec<(String, Vec<u8>)> {
        let mut stored = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&self.data) {
            for entry in entries {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    continue; // the store's wake folder: sockets, no data
                }
                stored.push((path.display().to_string(), std::fs::read(&path).unwrap()));
            }
        }
        if let plandesk::config::StoreLocation::Postgres { url, .. } = &self.store {
            stored.push((url.clone(), crate::pg::dump(url)));
        }
        stored
    }

    /// `plandesk edit REVISION --file mine.md`, `text` being the reviewer's version of the
    /// plan revision `id`: its JSON answer.
    pub fn edit(&self, id: &Value, text: &[u8]) -> Value {
        let mine = self.write("mine.md", text);
        self.listing(&["edit", &id.to_string(), "--file", mine.to_str().unwrap()])
    }

    pub fn write(&self, rel: &str, content: &[u8]) -> PathBuf {
        let path = self.workspace.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_plandesk"));
        cmd.args(["--data-dir", self.data.to_str().unwrap()])
            .args(args)
            .current_dir(&self.workspace)
            .env("PLANDESK_SCRIPTED_LOG", &self.log)
            .env_remove("PLANDESK_CRASH_AT")
            .env_remove("PLANDESK_DATA_DIR")
            .env_remove("PLANDESK_STORE");
        if let plandesk::config::StoreLocation::Postgres { url, .. } = &self.store {
            cmd.env("PLANDESK_STORE", url);
        }
        // Tests never see this machine's provider settings or its keyring.
        for var in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "OPENAI_BASE_URL",
            "ANTHROPIC_BASE_URL",
            "OLLAMA_HOST",
            "PLANDESK_HTTP_IDLE_TIMEOUT_MS",
            "PLANDESK_HTTP_MAX_STREAM_BYTES",
            "PLANDESK_HTTP_MAX_STREAM_MS",
            "PLANDESK_ALLOW_INSECURE_HTTP",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("DBUS_SESSION_BUS_ADDRESS", NO_BUS)
            .env("OLLAMA_HOST", CLOSED_PORT)
            // A hook left behind by a failing test gives up in a minute instead of waiting on.
            .env("PLANDESK_HOOK_DEADLINE", "60s");
        cmd
    }

    /// Runs `plandesk ARGS`, expecting success.
    pub fn ok(&self, args: &[&str]) -> Output {
        let out = self.command(args).output().unwrap();
        assert!(
            out.status.success(),
            "plandesk {args:?} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Runs `plandesk ARGS`, expecting a refusal; returns stderr.
    pub fn refused(&self, args: &[&str]) -> String {
        let out = self.command(args).output().unwrap();
        assert!(
            !out.status.success(),
            "plandesk {args:?} should have been refused: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "one clear line on stderr, got: {stderr}"
        );
        stderr
    }

    /// `plandesk --json ARGS` as a chunk list.
    pub fn stream(&self, args: &[&str]) -> Vec<Value> {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        chunks(&self.ok(&full).stdout)
    }

    /// Options for an engine run of this fixture's scripted model in its workspace.
    pub fn options(&self) -> plandesk::StartOptions {
        plandesk::StartOptions::new(
            &self.workspace,
            format!("scripted:{}", self.script.display()),
        )
    }

    /// Starts a scripted run in plan mode; returns its id and chunks.
    pub fn start(&self, extra: &[&str]) -> (String, Vec<Value>) {
        let model = format!("scripted:{}", self.script.display());
        let mut args = vec!["run", "--model", model.as_str()];
        args.extend_from_slice(extra);
        args.push("Add a cache to the store");
        let chunks = self.stream(&args);
        let run_id = chunks[0]["runId"].as_str().unwrap().to_owned();
        (run_id, chunks)
    }

    pub fn listing(&self, args: &[&str]) -> Value {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        serde_json::from_slice(&self.ok(&full).stdout).unwrap()
    }

    /// Every model call so far: `{"messages": [...]}` per line.
    pub fn model_calls(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

pub fn chunks(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a chunk: {l}: {e}")))
        .collect()
}

pub fn types(chunks: &[Value]) -> Vec<&str> {
    chunks.iter().map(|c| c["type"].as_str().unwrap()).collect()
}

pub fn of_type<'a>(chunks: &'a [Value], kind: &str) -> Vec<&'a Value> {
    chunks.iter().filter(|c| c["type"] == kind).collect()
}

pub fn submit(id: &str, path: &str) -> Value {
    json!({"toolCallId": id, "toolName": "submit_plan", "args": {"path": path}})
}

pub fn text(t: &str) -> Value {
    json!({"text": t})
}

/// The tool message the model saw for `tool_call_id` in its last call.
pub fn tool_message<'a>(call: &'a Value, tool_call_id: &str) -> &'a Value {
    call["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool" && m["toolCallId"] == tool_call_id)
        .unwrap_or_else(|| panic!("no tool message for {tool_call_id} in {call}"))
}

pub fn exists(path: &Path) -> bool {
    path.exists()
}

/// Starts `cmd` with `input` on its standard input (closed after it, as an agent closes its
/// hook's), and its standard output and error piped.
pub fn spawn_with_input(mut cmd: Command, input: &[u8]) -> std::process::Child {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command may answer and exit before it reads all of its input.
    if let Err(err) = child.stdin.take().unwrap().write_all(input) {
        assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe, "{err}");
    }
    child
}

/// Runs a future to completion on a runtime of its own (for sync tests reading the store).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// A run's event log, read straight from a store.
pub fn events(
    store: &plandesk::config::StoreLocation,
    run_id: &str,
) -> Vec<plandesk::store::EventRow> {
    block_on(async { store.open().await.unwrap().events(run_id).await.unwrap() })
}

/// Whether this run of the suite puts every fixture's store on PostgreSQL.
pub fn on_postgres() -> bool {
    std::env::var("PLANDESK_TEST_STORE").is_ok_and(|s| s == "postgres")
}

/// For a test of the SQLite file itself: says so and returns `true` when the suite runs on
/// PostgreSQL (where that file does not exist).
pub fn sqlite_only(test: &str) -> bool {
    if on_postgres() {
        eprintln!("{test}: about the SQLite file; not run on PostgreSQL");
    }
    on_postgres()
}

/// Waits (up to 20 s) until a plan is pending; returns the newest.
pub async fn until_pending(fx: &Fixture) -> Value {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let pending = fx.listing(&["pending"]);
        if pending[0]["runId"].is_string() {
            return pending[0].clone();
        }
        assert!(std::time::Instant::now() < until, "no plan became pending");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Waits (up to 30 s) until the `index`th revision of the history has `status`.
pub async fn until_status(fx: &Fixture, index: usize, status: &str) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let history = fx.listing(&["history"]);
        if history[index]["status"] == status {
            return;
        }
        assert!(
            std::time::Instant::now() < until,
            "revision {index} stayed {history}, never {status}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The store for tests that go through the `Store` trait alone (so that they run on every
/// backend): a fresh database on the test PostgreSQL server when the suite runs there
/// (`PLANDESK_TEST_STORE=postgres`), else SQLite in `dir`.
pub async fn test_store(dir: &Path) -> std::sync::Arc<dyn plandesk::Store> {
    let location = if on_postgres() {
        plandesk::config::StoreLocation::postgres(crate::pg::database())
    } else {
        plandesk::config::StoreLocation::Sqlite(dir.to_owned())
    };
    location.open().await.unwrap()
}

/// A person's verdict on the plan pending first: approve, or reject with `feedback`.
pub fn verdict(approve: bool, feedback: Option<&str>) -> plandesk::Verdict {
    plandesk::Verdict {
        approve,
        feedback: feedback.map(str::to_owned),
        ..plandesk::Verdict::default()
    }
}

/// A client of its own on `url` (its connection driven by a task of the current runtime).
pub async fn pg_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// Runs `sql` on the fixture's store past Plandesk, as someone with write access to the
/// database (and none to the data folder) would.
pub fn raw_sql(fx: &Fixture, sql: &str) {
    use plandesk::config::StoreLocation;
    match &fx.store {
        StoreLocation::Sqlite(dir) => rusqlite::Connection::open(dir.join("plandesk.db"))
            .unwrap()
            .execute_batch(sql)
            .unwrap(),
        StoreLocation::Postgres { url, .. } => block_on(async {
            let client = crate::support::pg_client(url).await;
            client.batch_execute(sql).await.unwrap();
        }),
    }
}
