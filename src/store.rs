//! The store: one SQLite file (WAL, synchronous=FULL) shared by every process using the same data
//! directory. Runs, versioned snapshots, an append-only message log, plan revisions, decisions,
//! pending items and an append-only event log. Every write is one transaction, committed before
//! the caller acknowledges anything, so a crash at any point loses no plan and no decision.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::clock::Millis;
use crate::run::{CallStatus, Phase, RunState, SCHEMA_VERSION};
use crate::tool::submit_plan::TOOL_ID as SUBMIT_PLAN;

pub const DB_FILE: &str = "plandesk.db";
pub const DATA_DIR_ENV: &str = "PLANDESK_DATA_DIR";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the store in {dir}: {source}")]
    Open {
        dir: PathBuf,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("store query failed ({context}): {source}")]
    Sql {
        context: &'static str,
        source: rusqlite::Error,
    },
    #[error("snapshot of run {run_id} is unreadable: {message}")]
    Corrupt { run_id: String, message: String },
    #[error("no run matches `{0}`")]
    UnknownRun(String),
    #[error("`{prefix}` matches several runs ({candidates}); give more characters")]
    AmbiguousRun { prefix: String, candidates: String },
    #[error("no plan revision {0}")]
    UnknownRevision(i64),
    #[error(
        "tool call {tool_call_id} of run {run_id} was already decided ({action} at {decided_at})"
    )]
    AlreadyDecided {
        run_id: String,
        tool_call_id: String,
        action: String,
        decided_at: Millis,
    },
    #[error("nothing with tool call id {tool_call_id} is pending in run {run_id}")]
    NotPending {
        run_id: String,
        tool_call_id: String,
    },
    #[error(
        "the plan changed since it was shown: you decided on revision {given}, but revision {pending_no} \
         ({pending_sha}) of {path} is pending now; review it and decide again"
    )]
    StaleRevision {
        given: String,
        pending_no: i64,
        pending_sha: String,
        path: String,
    },
    #[error("the store cannot keep run {run_id}: {message}")]
    Invalid { run_id: String, message: String },
}

fn sql(context: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError {
    move |source| StoreError::Sql { context, source }
}

/// Where the store lives: `--data-dir`, else `PLANDESK_DATA_DIR`, else the user's data folder.
pub fn default_data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(DATA_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    dirs::data_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("plandesk")
}

/// A submitted plan, never overwritten.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanRevision {
    pub id: i64,
    pub run_id: String,
    pub tool_call_id: String,
    pub path: String,
    pub title: String,
    pub body: String,
    pub sha256: String,
    pub revision_no: i64,
    pub submitted_at: Millis,
    pub decision: Option<DecisionRecord>,
}

impl PlanRevision {
    /// The plan as its file read: the title as a heading, then the body. What diffs compare.
    pub fn markdown(&self) -> String {
        if self.title.is_empty() {
            self.body.clone()
        } else {
            format!("# {}\n\n{}", self.title, self.body)
        }
    }
}

/// A person's decision on a pending tool call, as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRecord {
    pub id: i64,
    pub run_id: String,
    pub tool_call_id: String,
    pub revision_id: Option<i64>,
    pub action: String,
    pub feedback: Option<String>,
    pub resume_data: Value,
    pub decided_at: Millis,
}

/// What a decision is about to record.
#[derive(Debug, Clone)]
pub struct NewDecision<'a> {
    pub run_id: &'a str,
    pub tool_call_id: &'a str,
    pub action: &'a str,
    pub feedback: Option<&'a str>,
    pub resume_data: &'a Value,
    /// When set, the pending plan's sha256 must start with this, or the decision is refused.
    pub expect_sha: Option<&'a str>,
    pub at: Millis,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PendingKind {
    /// A plan submitted with `submit_plan`.
    Plan,
    /// An approval-gated tool call.
    Approval,
    /// Another tool that suspended for the host.
    Suspended,
}

impl PendingKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PendingKind::Plan => "plan",
            PendingKind::Approval => "approval",
            PendingKind::Suspended => "suspended",
        }
    }

    fn parse(text: &str) -> Self {
        match text {
            "plan" => PendingKind::Plan,
            "approval" => PendingKind::Approval,
            _ => PendingKind::Suspended,
        }
    }
}

/// Something waiting for a person: a plan or an approval-gated tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingItem {
    pub run_id: String,
    pub tool_call_id: String,
    pub kind: PendingKind,
    pub tool_name: String,
    pub args: Value,
    pub since: Millis,
    pub prompt: String,
    pub workspace: String,
    pub revision: Option<PlanRevision>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    pub id: String,
    pub prompt: String,
    pub model: String,
    pub mode: String,
    pub status: String,
    pub workspace: String,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub owner_pid: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub id: i64,
    pub run_id: String,
    pub at: Millis,
    pub kind: String,
    pub data: Value,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    prompt TEXT NOT NULL,
    model TEXT NOT NULL,
    mode TEXT NOT NULL,
    status TEXT NOT NULL,
    workspace TEXT NOT NULL,
    owner_pid INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS run_snapshots (
    run_id TEXT NOT NULL REFERENCES runs(id),
    version INTEGER NOT NULL,
    schema_version INTEGER NOT NULL,
    message_count INTEGER NOT NULL,
    state TEXT NOT NULL,
    saved_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, version)
);
CREATE TABLE IF NOT EXISTS messages (
    run_id TEXT NOT NULL REFERENCES runs(id),
    seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS plan_revisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id),
    tool_call_id TEXT NOT NULL,
    path TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    revision_no INTEGER NOT NULL,
    submitted_at INTEGER NOT NULL,
    UNIQUE (run_id, tool_call_id)
);
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id),
    tool_call_id TEXT NOT NULL,
    revision_id INTEGER REFERENCES plan_revisions(id),
    action TEXT NOT NULL,
    feedback TEXT,
    resume_data TEXT NOT NULL,
    decided_at INTEGER NOT NULL,
    UNIQUE (run_id, tool_call_id)
);
CREATE TABLE IF NOT EXISTS pending (
    run_id TEXT NOT NULL REFERENCES runs(id),
    tool_call_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    args TEXT NOT NULL,
    revision_id INTEGER REFERENCES plan_revisions(id),
    since INTEGER NOT NULL,
    PRIMARY KEY (run_id, tool_call_id)
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_run ON events(run_id, id);
CREATE INDEX IF NOT EXISTS revisions_by_run ON plan_revisions(run_id, path);
";

/// The SHA-256 of a plan as a person sees it (title and body), in hex.
pub fn plan_sha256(title: &str, body: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(title.as_bytes());
    hasher.update(b"\n");
    hasher.update(body.as_bytes());
    hex::encode(hasher.finalize())
}

#[derive(Debug)]
pub struct Store {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the store in `dir`.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        let open_err = |source: Box<dyn std::error::Error + Send + Sync>| StoreError::Open {
            dir: dir.to_owned(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(|e| open_err(Box::new(e)))?;
        let path = dir.join(DB_FILE);
        let conn = Connection::open(&path).map_err(|e| open_err(Box::new(e)))?;
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(|e| open_err(Box::new(e)))?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;",
        )
        .map_err(|e| open_err(Box::new(e)))?;
        conn.execute_batch(SCHEMA)
            .map_err(|e| open_err(Box::new(e)))?;
        Ok(Self {
            conn: Mutex::new(conn),
            path,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves SQLite consistent (transactions roll back).
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a new run with its first snapshot.
    pub fn create_run(&self, state: &RunState, prompt: &str, at: Millis) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql("begin"))?;
        tx.execute(
            "INSERT INTO runs (id, prompt, model, mode, status, workspace, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
            params![
                state.run_id,
                prompt,
                state.model,
                state.mode,
                state.phase.status().as_str(),
                state.workspace.display().to_string(),
                at
            ],
        )
        .map_err(sql("insert run"))?;
        save_in(
            &tx,
            state,
            at,
            Some(("run-started", serde_json::json!({"prompt": prompt}))),
        )?;
        tx.commit().map_err(sql("commit run"))
    }

    /// Persists `state` as a new snapshot version, with its new messages, the plan revisions and
    /// pending items it implies, and `event`, all in one transaction.
    pub fn save(
        &self,
        state: &RunState,
        at: Millis,
        event: Option<(&str, Value)>,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql("begin"))?;
        save_in(&tx, state, at, event)?;
        tx.commit().map_err(sql("commit snapshot"))
    }

    /// Marks which process drives a run now (`None` when it stops).
    pub fn set_owner(&self, run_id: &str, pid: Option<u32>) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "UPDATE runs SET owner_pid = ?2 WHERE id = ?1",
                params![run_id, pid],
            )
            .map_err(sql("set owner"))?;
        Ok(())
    }

    /// Loads the newest snapshot of a run with its conversation.
    pub fn load(&self, run_id: &str) -> Result<RunState, StoreError> {
        let conn = self.conn();
        let row: Option<(String, i64, u32)> = conn
            .query_row(
                "SELECT state, message_count, schema_version FROM run_snapshots WHERE run_id = ?1
                 ORDER BY version DESC LIMIT 1",
                [run_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(sql("load snapshot"))?;
        let (json, count, schema) = row.ok_or_else(|| StoreError::UnknownRun(run_id.to_owned()))?;
        let corrupt = |message: String| StoreError::Corrupt {
            run_id: run_id.to_owned(),
            message,
        };
        if schema != SCHEMA_VERSION {
            return Err(corrupt(format!(
                "schema version {schema}, this build reads {SCHEMA_VERSION}"
            )));
        }
        let mut state: RunState =
            serde_json::from_str(&json).map_err(|e| corrupt(e.to_string()))?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT message FROM messages WHERE run_id = ?1 AND seq < ?2 ORDER BY seq",
            )
            .map_err(sql("load messages"))?;
        let rows = stmt
            .query_map(params![run_id, count], |r| r.get::<_, String>(0))
            .map_err(sql("load messages"))?;
        for row in rows {
            let text = row.map_err(sql("load messages"))?;
            state
                .messages
                .push(serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?);
        }
        if state.messages.len() != usize::try_from(count).unwrap_or(usize::MAX) {
            return Err(corrupt(format!(
                "{count} messages expected, {} stored",
                state.messages.len()
            )));
        }
        Ok(state)
    }

    /// Records a decision on a pending tool call, atomically: refused if the call is not pending
    /// (unknown, or already decided) or if the plan changed from the one the person saw.
    pub fn record_decision(&self, d: &NewDecision<'_>) -> Result<DecisionRecord, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql("begin"))?;
        let pending: Option<Option<i64>> = tx
            .query_row(
                "SELECT revision_id FROM pending WHERE run_id = ?1 AND tool_call_id = ?2",
                params![d.run_id, d.tool_call_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql("find pending"))?;
        let Some(revision_id) = pending else {
            if let Some(existing) = decision_in(&tx, d.run_id, d.tool_call_id)? {
                return Err(StoreError::AlreadyDecided {
                    run_id: d.run_id.to_owned(),
                    tool_call_id: d.tool_call_id.to_owned(),
                    action: existing.action,
                    decided_at: existing.decided_at,
                });
            }
            return Err(StoreError::NotPending {
                run_id: d.run_id.to_owned(),
                tool_call_id: d.tool_call_id.to_owned(),
            });
        };
        if let (Some(expect), Some(revision_id)) = (d.expect_sha, revision_id) {
            let revision = revision_in(&tx, revision_id)?;
            let expect = expect.to_ascii_lowercase();
            if expect.is_empty() || !revision.sha256.starts_with(&expect) {
                return Err(StoreError::StaleRevision {
                    given: expect,
                    pending_no: revision.revision_no,
                    pending_sha: revision.sha256[..12].to_owned(),
                    path: revision.path,
                });
            }
        }
        tx.execute(
            "INSERT INTO decisions (run_id, tool_call_id, revision_id, action, feedback, resume_data, decided_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![d.run_id, d.tool_call_id, revision_id, d.action, d.feedback, d.resume_data.to_string(), d.at],
        )
        .map_err(sql("insert decision"))?;
        tx.execute(
            "DELETE FROM pending WHERE run_id = ?1 AND tool_call_id = ?2",
            params![d.run_id, d.tool_call_id],
        )
        .map_err(sql("clear pending"))?;
        let data = serde_json::json!({"toolCallId": d.tool_call_id, "action": d.action, "feedback": d.feedback, "revisionId": revision_id});
        insert_event(&tx, d.run_id, d.at, "decided", &data)?;
        let record =
            decision_in(&tx, d.run_id, d.tool_call_id)?.ok_or_else(|| StoreError::Invalid {
                run_id: d.run_id.to_owned(),
                message: "decision vanished inside its own transaction".into(),
            })?;
        tx.commit().map_err(sql("commit decision"))?;
        Ok(record)
    }

    pub fn decision(
        &self,
        run_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<DecisionRecord>, StoreError> {
        decision_in(&self.conn(), run_id, tool_call_id)
    }

    /// The full id of the run `prefix` names (an exact id or a unique prefix).
    pub fn resolve_run(&self, prefix: &str) -> Result<String, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT id FROM runs WHERE id = ?1 OR (length(?1) >= 4 AND substr(id, 1, length(?1)) = ?1) ORDER BY id = ?1 DESC LIMIT 6")
            .map_err(sql("resolve run"))?;
        let ids: Vec<String> = stmt
            .query_map([prefix], |r| r.get(0))
            .map_err(sql("resolve run"))?
            .collect::<Result<_, _>>()
            .map_err(sql("resolve run"))?;
        match ids.as_slice() {
            [] => Err(StoreError::UnknownRun(prefix.to_owned())),
            [first, ..] if first == prefix => Ok(first.clone()),
            [only] => Ok(only.clone()),
            many => Err(StoreError::AmbiguousRun {
                prefix: prefix.to_owned(),
                candidates: many.join(", "),
            }),
        }
    }

    /// Every run, most recently active first.
    pub fn runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!("{RUN_COLUMNS} ORDER BY updated_at DESC, id"))
            .map_err(sql("list runs"))?;
        let rows = stmt.query_map([], run_row).map_err(sql("list runs"))?;
        rows.collect::<Result<_, _>>().map_err(sql("list runs"))
    }

    /// One run, by its full id.
    pub fn run(&self, run_id: &str) -> Result<RunSummary, StoreError> {
        self.conn()
            .query_row(&format!("{RUN_COLUMNS} WHERE id = ?1"), [run_id], run_row)
            .optional()
            .map_err(sql("load run"))?
            .ok_or_else(|| StoreError::UnknownRun(run_id.to_owned()))
    }

    /// Everything waiting for a person, newest first. With `run_id`, that run's only, in the
    /// order its calls were made.
    pub fn pending(&self, run_id: Option<&str>) -> Result<Vec<PendingItem>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT p.run_id, p.tool_call_id, p.kind, p.tool_name, p.args, p.revision_id, p.since,
                        r.prompt, r.workspace
                 FROM pending p JOIN runs r ON r.id = p.run_id
                 WHERE ?1 IS NULL OR p.run_id = ?1
                 ORDER BY CASE WHEN ?1 IS NULL THEN -p.since ELSE p.rowid END, p.rowid DESC",
            )
            .map_err(sql("list pending"))?;
        let rows: Vec<(PendingItem, Option<i64>)> = stmt
            .query_map([run_id], |r| {
                let kind: String = r.get(2)?;
                let args: String = r.get(4)?;
                Ok((
                    PendingItem {
                        run_id: r.get(0)?,
                        tool_call_id: r.get(1)?,
                        kind: PendingKind::parse(&kind),
                        tool_name: r.get(3)?,
                        args: serde_json::from_str(&args).unwrap_or(Value::String(args)),
                        since: r.get(6)?,
                        prompt: r.get(7)?,
                        workspace: r.get(8)?,
                        revision: None,
                    },
                    r.get(5)?,
                ))
            })
            .map_err(sql("list pending"))?
            .collect::<Result<_, _>>()
            .map_err(sql("list pending"))?;
        rows.into_iter()
            .map(|(mut item, revision_id)| {
                if let Some(id) = revision_id {
                    item.revision = Some(revision_in(&conn, id)?);
                }
                Ok(item)
            })
            .collect()
    }

    /// Every plan revision (of one run, or of all), oldest first, each with its decision.
    pub fn revisions(&self, run_id: Option<&str>) -> Result<Vec<PlanRevision>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT id FROM plan_revisions WHERE ?1 IS NULL OR run_id = ?1 ORDER BY id")
            .map_err(sql("list revisions"))?;
        let ids: Vec<i64> = stmt
            .query_map([run_id], |r| r.get(0))
            .map_err(sql("list revisions"))?
            .collect::<Result<_, _>>()
            .map_err(sql("list revisions"))?;
        ids.into_iter().map(|id| revision_in(&conn, id)).collect()
    }

    pub fn revision(&self, id: i64) -> Result<PlanRevision, StoreError> {
        revision_in(&self.conn(), id)
    }

    /// A run's event log, oldest first.
    pub fn events(&self, run_id: &str) -> Result<Vec<Event>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT id, run_id, at, kind, data FROM events WHERE run_id = ?1 ORDER BY id")
            .map_err(sql("list events"))?;
        let rows = stmt
            .query_map([run_id], |r| {
                let data: String = r.get(4)?;
                Ok(Event {
                    id: r.get(0)?,
                    run_id: r.get(1)?,
                    at: r.get(2)?,
                    kind: r.get(3)?,
                    data: serde_json::from_str(&data).unwrap_or(Value::Null),
                })
            })
            .map_err(sql("list events"))?;
        rows.collect::<Result<_, _>>().map_err(sql("list events"))
    }

    /// SQLite's `data_version`: changes whenever another connection (this process's engine, or
    /// another process) commits. Cheap enough to poll.
    pub fn data_version(&self) -> Result<i64, StoreError> {
        self.conn()
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(sql("read data_version"))
    }

    /// A saved setting (never a secret: keys live in the OS keyring).
    pub fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.conn()
            .query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .optional()
            .map_err(sql("read a setting"))
    }

    /// Saves a setting; `None` removes it.
    pub fn set_setting(
        &self,
        key: &str,
        value: Option<&str>,
        at: Millis,
    ) -> Result<(), StoreError> {
        let conn = self.conn();
        match value {
            Some(value) => conn.execute(
                "INSERT INTO settings (key, value, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                rusqlite::params![key, value, at],
            ),
            None => conn.execute("DELETE FROM settings WHERE key = ?1", [key]),
        }
        .map(drop)
        .map_err(sql("save a setting"))
    }

    /// How many snapshot versions a run has (they are never overwritten).
    pub fn snapshot_count(&self, run_id: &str) -> Result<i64, StoreError> {
        self.conn()
            .query_row(
                "SELECT COUNT(*) FROM run_snapshots WHERE run_id = ?1",
                [run_id],
                |r| r.get(0),
            )
            .map_err(sql("count snapshots"))
    }
}

fn save_in(
    tx: &Connection,
    state: &RunState,
    at: Millis,
    event: Option<(&str, Value)>,
) -> Result<(), StoreError> {
    let run_id = state.run_id.as_str();
    let stored: i64 = tx
        .query_row(
            "SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE run_id = ?1",
            [run_id],
            |r| r.get(0),
        )
        .map_err(sql("count messages"))?;
    let stored = usize::try_from(stored).unwrap_or(0);
    if stored > state.messages.len() {
        return Err(StoreError::Invalid {
            run_id: run_id.to_owned(),
            message: format!(
                "{stored} messages are stored but the state has {}",
                state.messages.len()
            ),
        });
    }
    {
        let mut insert = tx
            .prepare_cached("INSERT INTO messages (run_id, seq, message) VALUES (?1, ?2, ?3)")
            .map_err(sql("append message"))?;
        for (seq, message) in state.messages.iter().enumerate().skip(stored) {
            let json = serde_json::to_string(message).map_err(|e| StoreError::Invalid {
                run_id: run_id.to_owned(),
                message: e.to_string(),
            })?;
            insert
                .execute(params![run_id, seq as i64, json])
                .map_err(sql("append message"))?;
        }
    }
    let json = serde_json::to_string(state).map_err(|e| StoreError::Invalid {
        run_id: run_id.to_owned(),
        message: e.to_string(),
    })?;
    tx.execute(
        "INSERT INTO run_snapshots (run_id, version, schema_version, message_count, state, saved_at)
         VALUES (?1, (SELECT COALESCE(MAX(version), 0) + 1 FROM run_snapshots WHERE run_id = ?1), ?2, ?3, ?4, ?5)",
        params![run_id, state.schema_version, state.messages.len() as i64, json, at],
    )
    .map_err(sql("insert snapshot"))?;
    tx.execute(
        "UPDATE runs SET status = ?2, mode = ?3, updated_at = ?4 WHERE id = ?1",
        params![run_id, state.phase.status().as_str(), state.mode, at],
    )
    .map_err(sql("update run"))?;
    sync_pending(tx, state, at)?;
    if let Some((kind, data)) = event {
        insert_event(tx, run_id, at, kind, &data)?;
    }
    Ok(())
}

/// Makes the pending table and plan revisions match the state: each suspended `submit_plan`
/// call has a revision, each pending call without a decision a pending row.
fn sync_pending(tx: &Connection, state: &RunState, at: Millis) -> Result<(), StoreError> {
    let run_id = state.run_id.as_str();
    let Phase::Suspended { step } = &state.phase else {
        tx.execute("DELETE FROM pending WHERE run_id = ?1", [run_id])
            .map_err(sql("clear pending"))?;
        return Ok(());
    };
    let mut keep = Vec::new();
    for call in step.calls.iter().filter(|c| c.status.is_pending()) {
        let id = call.call.tool_call_id.as_str();
        if decision_in(tx, run_id, id)?.is_some() {
            continue;
        }
        let (kind, revision_id) = match &call.status {
            CallStatus::Suspended { suspend_payload } if call.call.tool_name == SUBMIT_PLAN => (
                PendingKind::Plan,
                Some(insert_revision(tx, run_id, id, suspend_payload, at)?),
            ),
            CallStatus::Suspended { .. } => (PendingKind::Suspended, None),
            _ => (PendingKind::Approval, None),
        };
        tx.execute(
            "INSERT OR IGNORE INTO pending (run_id, tool_call_id, kind, tool_name, args, revision_id, since)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![run_id, id, kind.as_str(), call.call.tool_name, call.call.args.to_string(), revision_id, at],
        )
        .map_err(sql("insert pending"))?;
        keep.push(id.to_owned());
    }
    let keep = serde_json::to_string(&keep).unwrap_or_else(|_| "[]".into());
    tx.execute(
        "DELETE FROM pending WHERE run_id = ?1 AND tool_call_id NOT IN (SELECT value FROM json_each(?2))",
        params![run_id, keep],
    )
    .map_err(sql("prune pending"))?;
    Ok(())
}

fn insert_revision(
    tx: &Connection,
    run_id: &str,
    call_id: &str,
    payload: &Value,
    at: Millis,
) -> Result<i64, StoreError> {
    let existing: Option<i64> = tx
        .query_row(
            "SELECT id FROM plan_revisions WHERE run_id = ?1 AND tool_call_id = ?2",
            params![run_id, call_id],
            |r| r.get(0),
        )
        .optional()
        .map_err(sql("find revision"))?;
    if let Some(id) = existing {
        return Ok(id);
    }
    let field = |key: &str| {
        payload
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (path, title, body) = (field("path"), field("title"), field("plan"));
    tx.execute(
        "INSERT INTO plan_revisions (run_id, tool_call_id, path, title, body, sha256, revision_no, submitted_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6,
                 (SELECT COUNT(*) + 1 FROM plan_revisions WHERE run_id = ?1 AND path = ?3), ?7)",
        params![run_id, call_id, path, title, body, plan_sha256(&title, &body), at],
    )
    .map_err(sql("insert revision"))?;
    let id = tx.last_insert_rowid();
    insert_event(
        tx,
        run_id,
        at,
        "plan-submitted",
        &serde_json::json!({"revisionId": id, "toolCallId": call_id, "path": path}),
    )?;
    Ok(id)
}

fn insert_event(
    tx: &Connection,
    run_id: &str,
    at: Millis,
    kind: &str,
    data: &Value,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO events (run_id, at, kind, data) VALUES (?1, ?2, ?3, ?4)",
        params![run_id, at, kind, data.to_string()],
    )
    .map_err(sql("append event"))?;
    Ok(())
}

fn decision_in(
    conn: &Connection,
    run_id: &str,
    tool_call_id: &str,
) -> Result<Option<DecisionRecord>, StoreError> {
    conn.query_row(
        "SELECT id, run_id, tool_call_id, revision_id, action, feedback, resume_data, decided_at
         FROM decisions WHERE run_id = ?1 AND tool_call_id = ?2",
        params![run_id, tool_call_id],
        decision_row,
    )
    .optional()
    .map_err(sql("find decision"))
}

const RUN_COLUMNS: &str = "SELECT id, prompt, model, mode, status, workspace, created_at, updated_at, owner_pid FROM runs";

fn run_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunSummary> {
    Ok(RunSummary {
        id: r.get(0)?,
        prompt: r.get(1)?,
        model: r.get(2)?,
        mode: r.get(3)?,
        status: r.get(4)?,
        workspace: r.get(5)?,
        created_at: r.get(6)?,
        updated_at: r.get(7)?,
        owner_pid: r.get(8)?,
    })
}

fn decision_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<DecisionRecord> {
    let data: String = r.get(6)?;
    Ok(DecisionRecord {
        id: r.get(0)?,
        run_id: r.get(1)?,
        tool_call_id: r.get(2)?,
        revision_id: r.get(3)?,
        action: r.get(4)?,
        feedback: r.get(5)?,
        resume_data: serde_json::from_str(&data).unwrap_or(Value::Null),
        decided_at: r.get(7)?,
    })
}

fn revision_in(conn: &Connection, id: i64) -> Result<PlanRevision, StoreError> {
    let revision = conn
        .query_row(
            "SELECT id, run_id, tool_call_id, path, title, body, sha256, revision_no, submitted_at
             FROM plan_revisions WHERE id = ?1",
            [id],
            |r| {
                Ok(PlanRevision {
                    id: r.get(0)?,
                    run_id: r.get(1)?,
                    tool_call_id: r.get(2)?,
                    path: r.get(3)?,
                    title: r.get(4)?,
                    body: r.get(5)?,
                    sha256: r.get(6)?,
                    revision_no: r.get(7)?,
                    submitted_at: r.get(8)?,
                    decision: None,
                })
            },
        )
        .optional()
        .map_err(sql("load revision"))?
        .ok_or(StoreError::UnknownRevision(id))?;
    let decision = decision_in(conn, &revision.run_id, &revision.tool_call_id)?;
    Ok(PlanRevision {
        decision,
        ..revision
    })
}
