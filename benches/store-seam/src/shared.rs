// Shared by every variant: schema, seed, statement texts,
// the decision's parameters and the summary printer. Statement texts use `$N` placeholders
// (PostgreSQL style): SQLite takes `$1` as a parameter *name*; see `placeholders` checks.

#![allow(dead_code)]
pub use std::time::Duration;

/// The tables a decision touches, as Plandesk's SQLite store has them after migration 11
/// (migrations/sqlite/0001 to 0011), FTS left out (only plan inserts fire its trigger).
pub const SCHEMA: &str = "
CREATE TABLE runs (
    id TEXT PRIMARY KEY, prompt TEXT NOT NULL, model TEXT NOT NULL, mode TEXT NOT NULL,
    status TEXT NOT NULL, workspace TEXT NOT NULL, owner_pid INTEGER,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    source TEXT NOT NULL DEFAULT 'engine', session TEXT, holder TEXT, lease_until INTEGER
);
CREATE TABLE plan_revisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL REFERENCES runs(id),
    tool_call_id TEXT NOT NULL, path TEXT NOT NULL, title TEXT NOT NULL, body TEXT NOT NULL,
    sha256 TEXT NOT NULL, revision_no INTEGER NOT NULL, submitted_at INTEGER NOT NULL, author TEXT
);
CREATE INDEX revisions_by_run ON plan_revisions(run_id, path);
CREATE INDEX revisions_by_sha ON plan_revisions(sha256);
CREATE INDEX revisions_by_call ON plan_revisions(run_id, tool_call_id);
CREATE INDEX revisions_listing ON plan_revisions(
    id, run_id, tool_call_id, path, title, sha256, revision_no, submitted_at, author);
CREATE TABLE decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL REFERENCES runs(id),
    tool_call_id TEXT NOT NULL, revision_id INTEGER REFERENCES plan_revisions(id),
    action TEXT NOT NULL, feedback TEXT, resume_data TEXT NOT NULL, decided_at INTEGER NOT NULL,
    decided_by TEXT, plan_from_revision INTEGER NOT NULL DEFAULT 0,
    UNIQUE (run_id, tool_call_id)
);
CREATE INDEX decisions_listing ON decisions(
    run_id, tool_call_id, revision_id, id, action, feedback, decided_at, decided_by);
CREATE TABLE pending (
    run_id TEXT NOT NULL REFERENCES runs(id), tool_call_id TEXT NOT NULL, kind TEXT NOT NULL,
    tool_name TEXT NOT NULL, args TEXT NOT NULL, revision_id INTEGER REFERENCES plan_revisions(id),
    since INTEGER NOT NULL, waiter TEXT, waiter_until INTEGER,
    PRIMARY KEY (run_id, tool_call_id)
);
CREATE INDEX pending_by_since ON pending(since);
CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, at INTEGER NOT NULL,
    kind TEXT NOT NULL, data TEXT NOT NULL
);
CREATE INDEX events_by_run ON events(run_id, id);
CREATE TABLE audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, actor TEXT NOT NULL,
    process TEXT NOT NULL, run_id TEXT NOT NULL, kind TEXT NOT NULL, revision_sha TEXT,
    data TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL
);
CREATE INDEX audit_by_run ON audit(run_id, id);
CREATE TRIGGER audit_is_append_only_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
CREATE TRIGGER audit_is_append_only_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
";

pub const RUNS: usize = 20;

/// A plan of ~2 KB (Plandesk's plans are a page or more).
pub fn body() -> String {
    "- step: change the thing carefully, then test it and say what changed\n".repeat(30)
}

/// `n` open items (one plan revision each) spread over `RUNS` runs, in pure SQL so that every
/// driver seeds the same rows with the same text.
pub fn seed_sql(n: usize) -> String {
    let body = body();
    format!(
        "INSERT INTO runs (id, prompt, model, mode, status, workspace, created_at, updated_at, source, session)
WITH RECURSIVE k(x) AS (SELECT 0 UNION ALL SELECT x+1 FROM k WHERE x < {last_run})
SELECT 'run-'||x, 'Refactor the store so every behaviour is written once, run '||x, 'model', 'plan',
       'suspended', '/home/user/project-'||x, 1700000000000, 1700000000000, 'claude', 'session-'||x FROM k;
INSERT INTO plan_revisions (run_id, tool_call_id, path, title, body, sha256, revision_no, submitted_at)
WITH RECURSIVE k(x) AS (SELECT 0 UNION ALL SELECT x+1 FROM k WHERE x < {last})
SELECT 'run-'||(x % {RUNS}), 'call-'||x, 'plans/plan-'||x||'.md', 'Plan number '||x, '{body}',
       printf('%064x', x), 1, 1700000000000 + x FROM k;
INSERT INTO pending (run_id, tool_call_id, kind, tool_name, args, revision_id, since)
SELECT run_id, tool_call_id, 'plan', 'ExitPlanMode', '{{\"plan\":\"see the revision\",\"n\":1}}', id, submitted_at
FROM plan_revisions ORDER BY id;",
        last_run = RUNS - 1,
        last = n - 1,
    )
}

// The decision write, statement by statement, as src/store/sqlite/decisions.rs `record` runs
// it (plus audit::append and the anchor's `since` read in `commit`).
pub const Q_OPEN: &str = "SELECT p.revision_id, v.sha256, v.revision_no, v.path
     FROM pending p LEFT JOIN plan_revisions v ON v.id = p.revision_id
     WHERE p.run_id = $1 AND p.tool_call_id = $2";
pub const Q_SAME_PLAN: &str = "SELECT body = $2 FROM plan_revisions WHERE id = $1";
pub const Q_INSERT_DECISION: &str =
    "INSERT INTO decisions (run_id, tool_call_id, revision_id, action, feedback, resume_data,
                        decided_at, decided_by, plan_from_revision)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
pub const Q_CLOSE: &str = "DELETE FROM pending WHERE run_id = $1 AND tool_call_id = $2";
pub const Q_EVENT: &str = "INSERT INTO events (run_id, at, kind, data) VALUES ($1, $2, $3, $4)";
pub const Q_AUDIT_LAST: &str = "SELECT id, hash FROM audit ORDER BY id DESC LIMIT 1";
pub const Q_AUDIT_INSERT: &str =
    "INSERT INTO audit (id, at, actor, process, run_id, kind, revision_sha, data, prev_hash, hash)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
pub const Q_SETTLE: &str = "UPDATE runs SET updated_at = $2, status = CASE WHEN EXISTS
         (SELECT 1 FROM pending WHERE run_id = $1) THEN 'suspended' ELSE 'running' END
     WHERE id = $1 AND source != 'engine'";
pub const Q_AUDIT_SINCE: &str = "SELECT id, hash FROM audit WHERE id >= $1 ORDER BY id";

/// The inbox: src/store/sqlite/items.rs `open` (all runs).
pub const Q_INBOX: &str = "SELECT p.run_id, p.tool_call_id, p.kind, p.tool_name, p.args, p.since,
            r.prompt, r.workspace, r.source, r.session,
            v.id AS rev_id, v.tool_call_id AS rev_tool_call_id, v.path, v.title, v.body, v.sha256, v.revision_no,
            v.submitted_at, v.author
     FROM pending p JOIN runs r ON r.id = p.run_id
     LEFT JOIN plan_revisions v ON v.id = p.revision_id
     WHERE $1 IS NULL OR p.run_id = $1
     ORDER BY CASE WHEN $1 IS NULL THEN -p.since ELSE p.rowid END, p.rowid DESC";

/// The item the `i`th decision decides.
pub fn item(i: usize) -> (String, String) {
    (format!("run-{}", i % RUNS), format!("call-{i}"))
}

pub const AT: i64 = 1_760_000_000_000;

/// Stands in for the audit entry's SHA-256 (same length of text; the hashing is the same CPU
/// work whichever driver runs the SQL, so it is kept out of the dependency set).
pub fn chain_hash(prev: &str, id: i64, data: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut out = String::with_capacity(64);
    for salt in 0..4u8 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (salt, prev, id, data).hash(&mut h);
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out
}

pub fn event_data(call: &str, revision_id: i64) -> String {
    format!("{{\"toolCallId\":\"{call}\",\"action\":\"approve\",\"feedback\":null,\"revisionId\":{revision_id}}}")
}

pub fn audit_data(call: &str) -> String {
    format!("{{\"toolCallId\":\"{call}\",\"action\":\"approve\",\"feedback\":null,\"planFromRevision\":true}}")
}

pub struct Summary {
    pub name: String,
    pub samples: Vec<Duration>,
    pub rows: usize,
}

pub fn print_header() {
    println!(
        "| {:<58} | {:>5} | {:>9} | {:>9} | {:>9} | {:>9} | {:>12} |",
        "variant", "n", "p50 µs", "p95 µs", "p99 µs", "mean µs", "rows/s"
    );
    println!(
        "|{:-<60}|{:->7}|{:->11}|{:->11}|{:->11}|{:->11}|{:->14}|",
        "", "", "", "", "", "", ""
    );
}

pub fn report(s: Summary) {
    let mut v = s.samples;
    v.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let pct = |p: f64| us(v[((v.len() as f64 - 1.0) * p).round() as usize]);
    let total: Duration = v.iter().sum();
    let mean = us(total) / v.len() as f64;
    let rows = if s.rows > 0 {
        format!("{:.0}", (s.rows * v.len()) as f64 / total.as_secs_f64())
    } else {
        "-".into()
    };
    println!(
        "| {:<58} | {:>5} | {:>9.1} | {:>9.1} | {:>9.1} | {:>9.1} | {:>12} |",
        s.name,
        v.len(),
        pct(0.50),
        pct(0.95),
        pct(0.99),
        mean,
        rows
    );
}

pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `SPIKE_SYNC=OFF` isolates the drivers' own overhead from the fsync at commit.
pub fn sync_mode() -> String {
    std::env::var("SPIKE_SYNC").unwrap_or_else(|_| "FULL".into())
}

/// An inbox row, flat (Plandesk nests the revision; the columns read are the same). With the
/// `sqlx` feature, sqlx derives its mapping by column name (hence the `AS rev_*` aliases).
#[derive(Debug)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct Item {
    pub run_id: String,
    pub tool_call_id: String,
    pub kind: String,
    pub tool_name: String,
    pub args: String,
    pub since: i64,
    pub prompt: String,
    pub workspace: String,
    pub source: String,
    pub session: Option<String>,
    pub rev_id: Option<i64>,
    pub rev_tool_call_id: Option<String>,
    pub path: Option<String>,
    pub title: Option<String>,
    pub body: Option<String>,
    pub sha256: Option<String>,
    pub revision_no: Option<i64>,
    pub submitted_at: Option<i64>,
    pub author: Option<String>,
}
