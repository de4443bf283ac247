//! The store: rows and migrations, behind a trait so that a team can point every process at one
//! shared database instead of the embedded SQLite file. It holds runs, each with its newest
//! snapshot, an append-only message log, plan revisions, decisions, open review items, settings
//! and an append-only event log. It knows no run, mode or tool rules: what is pending is
//! decided above it and handed in with each commit.

mod comments;
mod conversation;
mod db;
mod items;
mod log;
#[macro_use]
mod migration;
pub mod postgres;
mod revisions;
mod rows;
mod runs;
mod sql;
pub mod sqlite;
pub mod words;
mod work;

use std::path::PathBuf;

use async_trait::async_trait;
use futures::stream::BoxStream;

use crate::audit::{AuditAnchor, AuditRow, NewAudit};
use crate::clock::Millis;
use crate::vocabulary::{Action, TokenKind};

pub use db::SqlStore;
pub use postgres::PostgresStore;
pub use rows::*;
pub use sqlite::SqliteStore;
pub use work::{NewWork, Work, WorkKind, WorkOf, WorkRow};

pub const DB_FILE: &str = "plandesk.db";
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the store {path}: {message}")]
    Open { path: PathBuf, message: String },
    #[error("the store {path} is not a Plandesk database or is damaged ({message}); move it aside to start a new one")]
    Damaged { path: PathBuf, message: String },
    #[error(
        "the store {path} cannot be written ({message}); Plandesk needs to write to it: check the \
         permissions of the file and its folder"
    )]
    ReadOnly { path: PathBuf, message: String },
    #[error(
        "the store {path} was written by a newer Plandesk (schema version {found}; this one knows \
         up to {known}); update Plandesk to use it"
    )]
    Newer {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("the store could not be upgraded to schema version {version} ({name}): {message}")]
    Migration {
        version: i64,
        name: &'static str,
        message: String,
    },
    #[error("store query failed ({context}): {message}")]
    Query {
        context: &'static str,
        message: String,
    },
    #[error("snapshot of run {run_id} is unreadable: {message}")]
    Corrupt { run_id: String, message: String },
    #[error("no run matches `{0}`")]
    UnknownRun(String),
    #[error("`{prefix}` matches several runs ({candidates}); give more characters")]
    AmbiguousRun { prefix: String, candidates: String },
    #[error("no plan revision {0}")]
    UnknownRevision(i64),
    #[error("no comment {0}")]
    UnknownComment(i64),
    #[error(
        "tool call {tool_call_id} of run {run_id} was already decided: {action}{} at {}",
        decided_by.as_deref().map(|who| format!(" by {who}")).unwrap_or_default(),
        crate::clock::utc(*decided_at)
    )]
    AlreadyDecided {
        run_id: String,
        tool_call_id: String,
        action: Action,
        decided_at: Millis,
        /// Who decided (not known for decisions stored before it was recorded).
        decided_by: Option<String>,
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
    #[error(
        "run {run_id} was changed by another process (snapshot {found} is newer than the {expected} \
         this one continued from); this process stops driving it"
    )]
    Conflict {
        run_id: String,
        expected: i64,
        found: i64,
    },
    #[error("the store cannot keep run {run_id}: {message}")]
    Invalid { run_id: String, message: String },
    #[error(
        "{kind} named `{name}` is already active; revoke it first or choose another name",
        kind = .0.noun_capitalised(),
        name = .1
    )]
    TokenExists(TokenKind, String),
    #[error(
        "no active {kind} is named `{name}` (`{list}` shows them)",
        kind = .0.noun(),
        name = .1,
        list = .0.list_command()
    )]
    UnknownToken(TokenKind, String),
}

impl StoreError {
    /// A stable code for hosts to branch on (IPC, the CLI), shared by every layer that passes a
    /// store error on.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::StaleRevision { .. } => "stale-revision",
            StoreError::AlreadyDecided { .. } => "already-decided",
            StoreError::NotPending { .. } => "not-pending",
            StoreError::UnknownRun(_) | StoreError::AmbiguousRun { .. } => "unknown-run",
            StoreError::UnknownRevision(_) => "unknown-revision",
            StoreError::UnknownComment(_) => "unknown-comment",
            StoreError::Conflict { .. } => "busy",
            StoreError::Newer { .. } => "store-newer",
            StoreError::Damaged { .. } | StoreError::ReadOnly { .. } => "store-file",
            StoreError::TokenExists(..) => "token-exists",
            // What it was given cannot be kept (an item without a plan to edit, too many
            // records): the caller's to change, not the store failing.
            StoreError::Invalid { .. } => "invalid",
            StoreError::UnknownToken(..) => "unknown-token",
            _ => "store",
        }
    }

    /// The refusal of a second decision: what the first one was, who made it and when.
    pub fn already_decided(run_id: &str, tool_call_id: &str, first: &DecisionRow) -> Self {
        Self::AlreadyDecided {
            run_id: run_id.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
            action: first.action,
            decided_at: first.decided_at,
            decided_by: first.decided_by.clone(),
        }
    }
}

/// The rows and operations every backend provides. Each write is one transaction, committed
/// before it returns, so a crash at any point loses no plan and no decision.
#[async_trait]
pub trait Store: Send + Sync + std::fmt::Debug {
    /// Where the store is, for messages (a file path or a database URL without its password).
    fn location(&self) -> String;

    /// Records a new run together with its first snapshot.
    async fn create_run(&self, run: &NewRun<'_>, first: &Commit<'_>) -> Result<(), StoreError>;
    /// Appends a snapshot (refused with `Conflict` unless the newest one is
    /// `commit.expect_version`), its new messages, the run's open review items and an event.
    /// On disk when it returns, unless [`Commit::derived`]: it may skip the wait for the disk.
    async fn commit(&self, commit: &Commit<'_>) -> Result<(), StoreError>;
    /// The newest snapshot of a run with its whole conversation.
    async fn load(&self, run_id: &str) -> Result<StoredRun, StoreError>;
    /// The version of a run's newest snapshot ([`Store::load`]'s, without reading it).
    async fn snapshot_version(&self, run_id: &str) -> Result<i64, StoreError> {
        Ok(self.load(run_id).await?.version)
    }

    /// Takes a run for one driver: atomic, refused while another live holder's lease runs.
    ///
    /// A lease write (claim, take-over, renewal, release, a waiter's renewal) may be committed
    /// without waiting for the disk: it is atomic and survives a killed process, but a crash of
    /// the machine may lose it, which a lease allows (its holder is gone with the machine, and
    /// what is left expires or is taken over). Each store says which of its lease writes skip
    /// the wait; so may a commit marked [`Commit::derived`]. Every other write is on disk when
    /// it returns.
    async fn claim(&self, run_id: &str, claim: &Lease<'_>) -> Result<ClaimOutcome, StoreError>;
    /// Takes over a run from `holder` (whose process is known to be gone): compare-and-swap.
    async fn take_over(
        &self,
        run_id: &str,
        holder: &str,
        claim: &Lease<'_>,
    ) -> Result<bool, StoreError>;
    /// Extends a held lease; `false` if this holder no longer holds the run.
    async fn renew(&self, run_id: &str, claim: &Lease<'_>) -> Result<bool, StoreError>;
    /// Gives a run back; only its holder can.
    async fn release(&self, run_id: &str, holder: &str) -> Result<(), StoreError>;

    async fn run(&self, run_id: &str) -> Result<RunRow, StoreError>;
    /// Every run, most recently active first.
    async fn runs(&self) -> Result<Vec<RunRow>, StoreError>;
    /// The most recently active run (the first of `runs`), if there is one.
    async fn latest_run(&self) -> Result<Option<RunRow>, StoreError>;
    /// The full id of the run `prefix` names (an exact id or a unique prefix of 4+ characters).
    async fn resolve_run(&self, prefix: &str) -> Result<String, StoreError>;

    /// Opens one more item on the run of an outside agent's session (found by its source and
    /// session, else created with `run.id`; its other items stay as they are), recording its
    /// plan's revision, with `waiter` holding it; `by` submitted it (the audit trail's actor
    /// for the submission). One transaction: a run is never left without its first item.
    async fn open_item(
        &self,
        run: &NewRun<'_>,
        item: &OpenItem,
        waiter: &Lease<'_>,
        by: &Actor,
    ) -> Result<ItemRow, StoreError>;
    /// Appends an entry to the audit trail (chained to the one before).
    async fn append_audit(&self, entry: &NewAudit<'_>) -> Result<(), StoreError>;
    /// The audit trail (of one run, or all), oldest first.
    async fn audit(&self, run_id: Option<&str>) -> Result<Vec<AuditRow>, StoreError>;
    /// Where this store's audit head is recorded outside it (moved forward by every write that
    /// appends an entry); `None` if it keeps no such record.
    fn audit_anchor(&self) -> Option<&AuditAnchor> {
        None
    }
    /// Extends the leases of the waiters `holders` name (each on its open item) to `until`, in
    /// one write: how many items were renewed (one closed meanwhile is not).
    async fn renew_waiters(&self, holders: &[&str], until: Millis) -> Result<u64, StoreError>;
    /// Open items of outside sessions, each with its waiter and lease.
    async fn waited_items(&self) -> Result<Vec<WaitedItem>, StoreError>;

    /// Records a decision on an open item, atomically: refused if the item is not open (unknown
    /// or already decided) or, with `expect_sha`, if the open plan is not that revision.
    async fn record_decision(&self, decision: &NewDecision<'_>) -> Result<DecisionRow, StoreError>;
    async fn decision(
        &self,
        run_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<DecisionRow>, StoreError>;
    /// The newest decision's id (0 if there is none).
    async fn newest_decision(&self) -> Result<i64, StoreError>;
    /// Which items the decisions after decision `after` decided (ids follow the order of
    /// commits), oldest first, at most `limit`: how a process learns, in one read, which of
    /// its waiters have their answer.
    async fn decided_after(&self, after: i64, limit: i64) -> Result<Vec<Decided>, StoreError>;
    /// Open review items (of one run, in call order; else all, newest first).
    async fn open_items(&self, run_id: Option<&str>) -> Result<Vec<ItemRow>, StoreError>;
    /// Plan revisions (of one run, or all), oldest first, each with its decision: one query.
    async fn revisions(&self, run_id: Option<&str>) -> Result<Vec<RevisionRow>, StoreError>;
    async fn revision(&self, id: i64) -> Result<RevisionRow, StoreError>;
    /// What a listing shows, newest first, a page at a time if asked (see [`Listing`]): the
    /// revisions [`Store::revisions`] or, with words, [`Store::search_revisions`] finds, but
    /// without the plans' bodies (each `body` is empty; [`Store::revision`] loads one whole)
    /// and without the decisions' resume data (null; an engine run's echoes the whole plan), so
    /// a list of thousands stays fast. One query for a page.
    async fn revision_list(&self, listing: &Listing<'_>) -> Result<Vec<RevisionRow>, StoreError>;
    /// Revisions (of one run, or all) whose title or body has `words` in a row (the last one may
    /// be the start of a word; case and accents ignored), oldest first.
    async fn search_revisions(
        &self,
        run_id: Option<&str>,
        words: &[String],
    ) -> Result<Vec<RevisionRow>, StoreError>;
    /// Revisions whose sha256 starts with `prefix` (lowercase hex).
    async fn revisions_by_sha(&self, prefix: &str) -> Result<Vec<RevisionRow>, StoreError>;

    /// Records a comment on lines of a revision.
    async fn add_comment(&self, comment: &NewComment<'_>) -> Result<CommentRow, StoreError>;
    /// A run's comments, oldest first.
    async fn comments(&self, run_id: &str) -> Result<Vec<CommentRow>, StoreError>;
    /// Resolves a comment, or reopens it (`resolved` false).
    async fn set_comment_resolved(
        &self,
        id: i64,
        resolved: bool,
        by: &Actor,
        at: Millis,
    ) -> Result<CommentRow, StoreError>;
    /// Records a reviewer's edit of an open plan as a new revision the item waits on: refused
    /// unless the item is open on the revision the reviewer edited.
    async fn edit_plan(&self, edit: &NewEdit<'_>) -> Result<RevisionRow, StoreError>;

    /// A run's event log, oldest first.
    async fn events(&self, run_id: &str) -> Result<Vec<EventRow>, StoreError>;
    /// How many snapshot versions a run has (they are never overwritten).
    async fn snapshot_count(&self, run_id: &str) -> Result<i64, StoreError>;

    /// A saved setting (never a secret: keys live in the OS keyring).
    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError>;
    /// Saves a setting; `None` removes it.
    async fn set_setting(
        &self,
        key: &str,
        value: Option<&str>,
        at: Millis,
    ) -> Result<(), StoreError>;

    /// Yields whenever anything in the store may have changed, from this process or any other.
    fn changes(&self) -> BoxStream<'static, ()>;

    /// Records a token of `plandesk serve` (with its audit entry): refused with `TokenExists`
    /// while an active token of its kind has that name.
    async fn create_token(&self, token: &NewToken<'_>) -> Result<TokenRow, StoreError>;
    /// Every token of every kind, active and revoked, oldest first.
    async fn tokens(&self) -> Result<Vec<TokenRow>, StoreError>;
    /// Revokes the active token of `kind` that `which` names (with its audit entry); `None`
    /// if there is none.
    async fn revoke_token(
        &self,
        kind: TokenKind,
        which: TokenKey<'_>,
        by: &Actor,
        at: Millis,
    ) -> Result<Option<TokenRow>, StoreError>;
    /// The active token of `kind` whose secret hashes to `sha256` (exact match) and that has
    /// not expired at `now`, if any.
    async fn active_token(
        &self,
        kind: TokenKind,
        sha256: &str,
        now: Millis,
    ) -> Result<Option<TokenRow>, StoreError>;
    /// Exchanges the pairing whose secret hashes to `pairing_sha256`, if it is active and
    /// unexpired at `session.at`, for the session `session` named as the pairing was (its
    /// `name` is not used) and made by that reviewer (in `session.by`'s process), in one
    /// transaction: a link is used once however many open it at once. `None` if there is no
    /// such pairing.
    async fn redeem_pairing(
        &self,
        pairing_sha256: &str,
        session: &NewToken<'_>,
    ) -> Result<Option<TokenRow>, StoreError>;

    /// Records what an agent did after its plan was approved, held against the run's newest
    /// approved revision; `None` (nothing recorded) if the run is unknown or has none.
    async fn record_work(&self, work: &NewWork<'_>) -> Result<Option<WorkRow>, StoreError>;
    /// Records a person's mark on a step of `revision` (id, sha256) with its audit entry;
    /// `None` (nothing recorded) unless it is its run's newest revision, approved.
    async fn mark_step(
        &self,
        mark: &NewWork<'_>,
        revision: (i64, &str),
        by: &Actor,
    ) -> Result<Option<WorkRow>, StoreError>;
    /// The work held against a revision, oldest first.
    async fn work(&self, revision_id: i64) -> Result<Vec<WorkRow>, StoreError>;
    /// The records of `kind` after record `after` (ids follow the order of commits), oldest
    /// first, at most `limit`.
    async fn work_after(
        &self,
        kind: WorkKind,
        after: i64,
        limit: i64,
    ) -> Result<Vec<WorkRow>, StoreError>;
    /// A run's newest revision, if it is approved (the plan its agent works on).
    async fn approved_revision(&self, run_id: &str) -> Result<Option<i64>, StoreError>;
}
