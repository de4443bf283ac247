//! Which writes wait for the disk: a decision always does before it is acknowledged; what the
//! run records after it only does once it holds something new (a model's turn, a tool's run).
//! The moves that only answer decided calls are derived: a crash of the machine that loses one
//! leaves the run as `crash.rs` shows it after an abort right after the decision, to be
//! carried on from its decisions again.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::stream::BoxStream;
use plandesk::audit::*;
use plandesk::clock::{Millis, SequentialIds, SteppingClock};
use plandesk::store::*;
use plandesk::vocabulary::*;
use plandesk::{Engine, SqliteStore};
use serde_json::json;

use crate::support::*;

/// What a commit was: its event (if any), its status and whether it was derived.
type Seen = (Option<EventKind>, RunStatus, bool);

/// A store that notes every commit and decision on the way to a real SQLite store.
#[derive(Debug)]
struct Noting {
    store: SqliteStore,
    seen: Mutex<Vec<Seen>>,
    decisions: Mutex<usize>,
}

impl Noting {
    /// What was written since the last call.
    fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

/// The store's trait: `commit` and `record_decision` noted, every other method handed on.
macro_rules! noting_store {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        #[async_trait]
        impl Store for Noting {
            fn location(&self) -> String {
                self.store.location()
            }

            fn changes(&self) -> BoxStream<'static, ()> {
                self.store.changes()
            }

            async fn commit(&self, commit: &Commit<'_>) -> Result<(), StoreError> {
                let kind = commit.event.as_ref().map(|(kind, _)| *kind);
                self.seen
                    .lock()
                    .unwrap()
                    .push((kind, commit.status, commit.derived));
                let trail = self.store.audit(Some(commit.run_id)).await?.len();
                self.store.commit(commit).await?;
                // The trail is never left to a commit the machine may lose (an approval's
                // switch to build is recorded with the decision).
                if commit.derived {
                    let after = self.store.audit(Some(commit.run_id)).await?.len();
                    assert_eq!(after, trail, "a derived commit appended to the audit trail");
                }
                Ok(())
            }

            async fn record_decision(
                &self,
                decision: &NewDecision<'_>,
            ) -> Result<DecisionRow, StoreError> {
                *self.decisions.lock().unwrap() += 1;
                self.store.record_decision(decision).await
            }

            $(async fn $name(&self, $($arg: $ty),*) -> Result<$out, StoreError> {
                self.store.$name($($arg),*).await
            })*
        }
    };
}

noting_store! {
    create_run(run: &NewRun<'_>, first: &Commit<'_>) -> ();
    load(run_id: &str) -> StoredRun;
    claim(run_id: &str, claim: &Lease<'_>) -> ClaimOutcome;
    take_over(run_id: &str, holder: &str, claim: &Lease<'_>) -> bool;
    renew(run_id: &str, claim: &Lease<'_>) -> bool;
    release(run_id: &str, holder: &str) -> ();
    run(run_id: &str) -> RunRow;
    runs() -> Vec<RunRow>;
    latest_run() -> Option<RunRow>;
    resolve_run(prefix: &str) -> String;
    open_item(run: &NewRun<'_>, item: &OpenItem, waiter: &Lease<'_>, by: &Actor) -> ItemRow;
    append_audit(entry: &NewAudit<'_>) -> ();
    audit(run_id: Option<&str>) -> Vec<AuditRow>;
    renew_waiters(holders: &[&str], until: Millis) -> u64;
    waited_items() -> Vec<WaitedItem>;
    decision(run_id: &str, tool_call_id: &str) -> Option<DecisionRow>;
    newest_decision() -> i64;
    decided_after(after: i64, limit: i64) -> Vec<Decided>;
    open_items(run_id: Option<&str>) -> Vec<ItemRow>;
    revisions(run_id: Option<&str>) -> Vec<RevisionRow>;
    revision(id: i64) -> RevisionRow;
    revision_list(listing: &Listing<'_>) -> Vec<RevisionRow>;
    search_revisions(run_id: Option<&str>, words: &[String]) -> Vec<RevisionRow>;
    revisions_by_sha(prefix: &str) -> Vec<RevisionRow>;
    add_comment(comment: &NewComment<'_>) -> CommentRow;
    comments(run_id: &str) -> Vec<CommentRow>;
    set_comment_resolved(id: i64, resolved: bool, by: &Actor, at: Millis) -> CommentRow;
    edit_plan(edit: &NewEdit<'_>) -> RevisionRow;
    events(run_id: &str) -> Vec<EventRow>;
    snapshot_count(run_id: &str) -> i64;
    setting(key: &str) -> Option<String>;
    set_setting(key: &str, value: Option<&str>, at: Millis) -> ();
    create_token(token: &NewToken<'_>) -> TokenRow;
    tokens() -> Vec<TokenRow>;
    revoke_token(kind: TokenKind, which: TokenKey<'_>, by: &Actor, at: Millis) -> Option<TokenRow>;
    active_token(kind: TokenKind, sha256: &str, now: Millis) -> Option<TokenRow>;
    redeem_pairing(pairing_sha256: &str, session: &NewToken<'_>) -> Option<TokenRow>;
    record_work(work: &NewWork<'_>) -> Option<WorkRow>;
    mark_step(mark: &NewWork<'_>, revision: (i64, &str), by: &Actor) -> Option<WorkRow>;
    work(revision_id: i64) -> Vec<WorkRow>;
    work_after(kind: WorkKind, after: i64, limit: i64) -> Vec<WorkRow>;
    approved_revision(run_id: &str) -> Option<i64>;
}

/// An engine over a noting store in `fx`'s data folder.
fn noting(fx: &Fixture) -> (Engine, Arc<Noting>) {
    let store = Arc::new(Noting {
        store: SqliteStore::open(&fx.root.join("data")).unwrap(),
        seen: Mutex::default(),
        decisions: Mutex::default(),
    });
    let engine = Engine::new(
        store.clone(),
        Arc::new(SteppingClock::starting_at(1_700_000_000_000)),
        Arc::new(SequentialIds::default()),
        plandesk::mode::builtin(),
    );
    (engine, store)
}

/// An engine over a noting store, and a run of `fx`'s script started in `mode`, suspended.
async fn suspended(fx: &Fixture, mode: &str) -> (Engine, Arc<Noting>, String) {
    let (engine, store) = noting(fx);
    let mut options = fx.options();
    options.mode = Some(mode.into());
    let report = engine
        .start("Add a cache", &options, &mut |_| {})
        .await
        .unwrap();
    assert_eq!(report.status, RunStatus::Suspended);
    assert!(
        store.take().iter().all(|(_, _, derived)| !derived),
        "a run's own moves wait for the disk"
    );
    (engine, store, report.run_id)
}

#[tokio::test]
async fn an_approved_plan_is_answered_without_waiting_for_the_disk_again() {
    let fx = Fixture::new(json!([{"toolCalls": [submit("c1", PLAN)]}, text("Building.")]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (engine, store, run) = suspended(&fx, "plan").await;
    engine
        .decide(&run, &verdict(true, None), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(*store.decisions.lock().unwrap(), 1);
    let trail = store.audit(Some(&run)).await.unwrap();
    let kinds: Vec<&str> = trail.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["submitted", "decided", "mode-switched"]);
    assert_eq!(
        store.take(),
        [
            // The plan's result, derived from the decision.
            (None, RunStatus::Running, true),
            // The model's turn: new.
            (Some(EventKind::Finished), RunStatus::Finished, false),
        ]
    );
}

#[tokio::test]
async fn a_rejection_is_answered_derived_and_the_revision_is_not() {
    let fx = Fixture::new(json!([
        {"toolCalls": [submit("c1", PLAN)]},
        {"toolCalls": [submit("c2", PLAN)]},
    ]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (engine, store, run) = suspended(&fx, "plan").await;
    engine
        .decide(&run, &verdict(false, Some("Measure first")), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(
        store.take(),
        [
            (None, RunStatus::Running, true),
            // The model's next turn and the revised plan it submits.
            (None, RunStatus::Running, false),
            (Some(EventKind::Suspended), RunStatus::Suspended, false),
        ]
    );
    // Without feedback the run waits for a message: that wait follows from the decision too.
    engine
        .decide(&run, &verdict(false, None), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(
        store.take(),
        [(Some(EventKind::Waiting), RunStatus::Waiting, true)]
    );
}

#[tokio::test]
async fn an_approved_tool_runs_and_waits_for_the_disk() {
    let fx = Fixture::new(json!([
        {"toolCalls": [{"toolCallId": "w", "toolName": "write_file",
                        "args": {"path": "src/new.rs", "content": "fn new() {}\n"}}]},
        text("Written."),
    ]));
    let (engine, store, run) = suspended(&fx, "build").await;
    engine
        .decide(&run, &verdict(true, None), &mut |_| {})
        .await
        .unwrap();
    assert!(fx.workspace.join("src/new.rs").exists(), "the tool ran");
    let seen = store.take();
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|(_, _, derived)| !derived),
        "a tool that ran is new: {seen:?}"
    );
}

/// A step whose calls only read is saved once, at its end, with the model's turn that asked
/// for them; a step that does more saves the model's turn before its calls run.
#[tokio::test]
async fn a_step_that_only_reads_waits_for_the_disk_once() {
    let list = |id: &str| json!({"toolCallId": id, "toolName": "list_files", "args": {}});
    let read = json!({"toolCallId": "r", "toolName": "read_file", "args": {"path": "src/lib.rs"}});
    let fx = Fixture::new(json!([
        {"toolCalls": [read, list("l1")]},
        {"toolCalls": [list("l2"), submit("c1", PLAN)]},
    ]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let (engine, store) = noting(&fx);
    let mut options = fx.options();
    options.mode = Some("plan".into());
    let report = engine
        .start("Add a cache", &options, &mut |_| {})
        .await
        .unwrap();
    assert_eq!(report.status, RunStatus::Suspended);
    assert_eq!(
        store.take(),
        [
            // The first step: the model's turn and what its reads found, in one commit.
            (None, RunStatus::Running, false),
            // The second step's turn, on disk before its plan is submitted.
            (None, RunStatus::Running, false),
            (Some(EventKind::Suspended), RunStatus::Suspended, false),
        ]
    );
    let messages = store.load(&report.run_id).await.unwrap().messages;
    let roles: Vec<String> = messages
        .iter()
        .map(|m| serde_json::from_str::<serde_json::Value>(m).unwrap()["role"].to_string())
        .collect();
    assert_eq!(
        roles,
        [
            r#""user""#,
            r#""assistant""#,
            r#""tool""#,
            r#""tool""#,
            r#""assistant""#
        ],
        "nothing of the first step is lost by saving it once"
    );
    assert!(messages[2].contains("pub fn answer()"), "{}", messages[2]);
}
