//! The store's contract, checked on both backends: each test below runs once on a SQLite file
//! and once on a fresh database of a real PostgreSQL server (see `pg.rs`), through the `Store`
//! trait only, so the two cannot drift apart.

use std::sync::Arc;

use plandesk::audit::*;
use plandesk::config::StoreLocation;
use plandesk::store::*;
use plandesk::vocabulary::*;
use serde_json::json;

static ACTOR: std::sync::LazyLock<Actor> = std::sync::LazyLock::new(|| Actor {
    name: "ana".into(),
    process: "test".into(),
});

/// Each test, once per backend.
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let dir = tempfile::tempdir().unwrap();
                    let location = plandesk::config::StoreLocation::Sqlite(dir.path().to_owned());
                    super::$name(location).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let location =
                        plandesk::config::StoreLocation::postgres(crate::pg::database());
                    super::$name(location).await;
                }
            )*
        }
    };
}

mod comments;
mod connections;
mod decisions;
mod identical;
mod postgres_only;
mod revisions;
mod runs;
mod settings;

fn commit<'a>(
    run_id: &'a str,
    expect_version: i64,
    message_count: i64,
    new_messages: &'a [String],
    open: &'a [OpenItem],
) -> Commit<'a> {
    Commit {
        run_id,
        expect_version,
        schema_version: 1,
        state: "{}",
        status: if open.is_empty() {
            RunStatus::Running
        } else {
            RunStatus::Suspended
        },
        mode: "plan",
        message_count,
        new_messages,
        open,
        event: None,
        at: 1_000 + expect_version,
        by: &ACTOR,
        derived: false,
    }
}

fn plan(body: &str) -> PlanText {
    use sha2::{Digest, Sha256};
    PlanText {
        path: "plans/p.md".into(),
        title: body
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("# ")
            .into(),
        body: body.into(),
        sha256: hex::encode(Sha256::digest(body.as_bytes())),
    }
}

fn plan_item(call: &str, body: &str) -> OpenItem {
    OpenItem {
        tool_call_id: call.into(),
        kind: ItemKind::Plan,
        tool_name: "submit_plan".into(),
        args: json!({"path": "plans/p.md"}),
        plan: Some(plan(body)),
    }
}

async fn store_with_run(location: &StoreLocation, id: &str) -> Arc<dyn Store> {
    let store = location.open().await.unwrap();
    create_run(&*store, id).await;
    store
}

/// Creates run `id` (its snapshot version 1, at 1_000).
async fn create_run(store: &dyn Store, id: &str) {
    let run = NewRun {
        id,
        prompt: "make it faster",
        model: "demo",
        workspace: "/ws",
        source: &Source::engine(),
    };
    let first = vec![json!({"role": "user", "content": "make it faster"}).to_string()];
    store
        .create_run(&run, &commit(id, 0, 1, &first, &[]))
        .await
        .unwrap();
}

/// Opens `items` on run `r` (its snapshot version 1 -> 2).
async fn open_items(store: &dyn Store, items: &[OpenItem]) {
    store.commit(&commit("r", 1, 1, &[], items)).await.unwrap();
}

fn decision<'a>(call: &'a str, action: Action, expect_sha: Option<&'a str>) -> NewDecision<'a> {
    static DATA: std::sync::LazyLock<serde_json::Value> =
        std::sync::LazyLock::new(|| json!({"approved": true}));
    NewDecision {
        run_id: "r",
        tool_call_id: call,
        action,
        feedback: None,
        resume_data: &DATA,
        expect_sha,
        at: 5_000,
        by: &ACTOR,
        answer: Some("ok"),
        answer_without_plan: None,
        mode_after: None,
    }
}

/// Runs `sql` on the store's database directly, as someone with its file or its server in
/// hand could; `Err` holds what the database answered.
fn raw(location: &StoreLocation, sql: &str) -> Result<(), String> {
    match location {
        StoreLocation::Sqlite(dir) => rusqlite::Connection::open(dir.join("plandesk.db"))
            .unwrap()
            .execute_batch(sql)
            .map_err(|e| e.to_string()),
        StoreLocation::Postgres { url, .. } => {
            let out = crate::pg::sql_on(url, sql);
            match out.status.success() {
                true => Ok(()),
                false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
            }
        }
    }
}
