//! The store, written once: [`SqlStore`] runs each behaviour (`runs`, `items`, `revisions`,
//! `comments`, `log`, `work`) on a [`Backend`]'s connections, one transaction per write. A
//! backend says how to connect, lock, commit and wait for the disk, and how to keep a call off
//! the async workers; the SQL is the same on both.

use std::borrow::Cow;
use std::future::Future;

use async_trait::async_trait;
use futures::stream::BoxStream;

use super::sql::{Conn, Tx};
use super::*;
use crate::audit::{AuditAnchor, AuditRow, NewAudit};
use crate::vocabulary::TokenKind;

/// How long a write may take to reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// On disk when it returns.
    Durable,
    /// A run's lease or an item's waiter: a claim, a take-over, a renewal. What a lease is for
    /// dies with the machine, and what it leaves behind expires or is taken over; each backend
    /// says whether such a write waits for the disk.
    Lease,
    /// A run given back: as [`Write::Lease`], and lost in a crash it leaves a lease that expires.
    Release,
    /// A commit whose every change follows from decisions already durable ([`Commit::derived`]):
    /// lost in a crash, it is made again when the run is continued.
    Derived,
}

/// What differs between the databases, beyond the SQL's few dialect phrases.
pub trait Backend: Send + Sync + std::fmt::Debug + 'static {
    type Conn: Conn;
    /// Where the store is, for messages (never with a password).
    fn location(&self) -> String;
    /// Runs a store call where it blocks no async worker: each of a call's statements is
    /// awaited inside `work`.
    fn run<T: Send>(&self, work: impl Future<Output = T> + Send) -> impl Future<Output = T> + Send;
    /// A connection to read with.
    fn read(
        &self,
        context: &'static str,
    ) -> impl Future<Output = Result<Self::Conn, StoreError>> + Send;
    /// A connection in a new transaction holding the store's write lock (one writer at a time,
    /// so a decision's check and its record never interleave with another's).
    fn begin(
        &self,
        context: &'static str,
        write: Write,
    ) -> impl Future<Output = Result<Self::Conn, StoreError>> + Send;
    /// Commits the transaction `begin` started, announcing the change.
    fn commit(
        &self,
        conn: Self::Conn,
        context: &'static str,
        write: Write,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Rolls the transaction back.
    fn rollback(&self, conn: Self::Conn) -> impl Future<Output = ()> + Send;
    /// Yields whenever anything in the store may have changed, from this process or another.
    fn changes(&self) -> BoxStream<'static, ()>;
    /// Waits, without a thread, for this process's turn to make a write (`write`) or a read,
    /// where the backend takes a thread for each call at once (SQLite): a burst of calls then
    /// queues here rather than holding a thread each while it waits for the lock.
    fn turn(
        &self,
        _write: bool,
    ) -> impl Future<Output = Option<tokio::sync::SemaphorePermit<'_>>> + Send {
        async { None }
    }
}

/// A stream of the changes `changed` announces: its first item at once (whatever is there
/// now), then one for each announcement (one for all those a slow stream missed).
pub(super) fn changes_of(changed: &tokio::sync::broadcast::Sender<()>) -> BoxStream<'static, ()> {
    use futures::StreamExt;
    use tokio::sync::broadcast::error::RecvError;
    let receiver = changed.subscribe();
    let announced = futures::stream::unfold(receiver, |mut receiver| async move {
        match receiver.recv().await {
            Ok(()) | Err(RecvError::Lagged(_)) => Some(((), receiver)),
            Err(RecvError::Closed) => None,
        }
    });
    Box::pin(futures::stream::once(async {}).chain(announced))
}

/// Tells every stream that the store changed; `false` once the store is gone.
pub(super) fn announce(changed: &std::sync::Weak<tokio::sync::broadcast::Sender<()>>) -> bool {
    match changed.upgrade() {
        Some(sender) => {
            // No stream listening right now is fine.
            let _ = sender.send(());
            true
        }
        None => false,
    }
}

/// The store over a backend (see [`super::SqliteStore`], [`super::PostgresStore`]).
#[derive(Debug)]
pub struct SqlStore<B> {
    pub(super) backend: B,
    /// The record of the audit trail's head outside the database, if one is kept.
    pub(super) anchor: Option<AuditAnchor>,
    /// Whose settings these are, on a store shared by a team (see `StoreLocation::Postgres`).
    pub(super) personal: Option<String>,
    /// The ends of the conversations this store wrote or read last (see `conversation`).
    pub(super) tails: conversation::Tails,
}

/// Runs `$work` (with `$tx`, a write transaction) as one store write, committed if it succeeds.
macro_rules! write {
    ($store:expr, $context:literal, $write:expr, |$tx:ident| $work:expr) => {{
        let store = $store;
        let _turn = store.backend.turn(true).await;
        store
            .backend
            .run(async {
                let mut $tx = Tx::new(store.backend.begin($context, $write).await?);
                let done = $work.await;
                store.finish($tx, $context, $write, done).await
            })
            .await
    }};
    ($store:expr, $context:literal, |$tx:ident| $work:expr) => {
        write!($store, $context, Write::Durable, |$tx| $work)
    };
}

/// Runs `$work` with `$tx`, a connection to read with.
macro_rules! read {
    ($store:expr, $context:literal, |$tx:ident| $work:expr) => {{
        let store = $store;
        let _turn = store.backend.turn(false).await;
        store
            .backend
            .run(async {
                let mut $tx = Tx::new(store.backend.read($context).await?);
                $work.await
            })
            .await
    }};
}

impl<B: Backend> SqlStore<B> {
    /// Commits a write whose work is `done`, or rolls it back if that failed. What the record
    /// of the trail's head moves to is read under the write lock, so that no other appender
    /// comes between; it is written once the entries are committed.
    async fn finish<T>(
        &self,
        mut tx: Tx<B::Conn>,
        context: &'static str,
        write: Write,
        done: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let value = match done {
            Ok(value) => value,
            Err(err) => {
                self.backend.rollback(tx.conn).await;
                return Err(err);
            }
        };
        // When the record is at or past the entry this transaction appended after, what it
        // appended is the trail from the record on; else that is read. A read that fails here
        // fails the write: on PostgreSQL it has aborted the transaction, whose COMMIT would
        // then roll back without a word.
        let head = match &self.anchor {
            Some(anchor) if !tx.trail.is_empty() => match anchor.first_needed() {
                // A record that cannot be read is not moved: no entry is read back for it (the
                // writer finds it so again, and says so once).
                None => Some((anchor, Vec::new())),
                Some(first) if tx.trail[0].0 <= first => {
                    let trail = std::mem::take(&mut tx.trail);
                    Some((
                        anchor,
                        trail.into_iter().filter(|(id, _)| *id >= first).collect(),
                    ))
                }
                Some(first) => match log::since(&mut tx, first).await {
                    Ok(entries) => Some((anchor, entries)),
                    Err(err) => {
                        self.backend.rollback(tx.conn).await;
                        return Err(err);
                    }
                },
            },
            _ => None,
        };
        self.backend.commit(tx.conn, context, write).await?;
        if let Some((anchor, entries)) = head {
            anchor.advance_later(entries);
        }
        Ok(value)
    }

    /// A setting's key in the table: on a shared store, this person's own.
    fn setting_key<'k>(&self, key: &'k str) -> Cow<'k, str> {
        match &self.personal {
            Some(personal) => Cow::Owned(format!("{personal}/{key}")),
            None => Cow::Borrowed(key),
        }
    }
}

#[async_trait]
impl<B: Backend> Store for SqlStore<B> {
    fn location(&self) -> String {
        self.backend.location()
    }

    async fn create_run(&self, run: &NewRun<'_>, first: &Commit<'_>) -> Result<(), StoreError> {
        let tail = write!(self, "create run", |tx| async {
            runs::insert(&mut tx, run, first.at).await?;
            runs::commit(&mut tx, &self.tails, first).await
        })?;
        self.tails.keep(first.run_id, tail);
        Ok(())
    }

    async fn commit(&self, commit: &Commit<'_>) -> Result<(), StoreError> {
        let write = if commit.derived {
            Write::Derived
        } else {
            Write::Durable
        };
        let tail = write!(self, "commit snapshot", write, |tx| runs::commit(
            &mut tx,
            &self.tails,
            commit
        ))?;
        self.tails.keep(commit.run_id, tail);
        Ok(())
    }

    async fn load(&self, run_id: &str) -> Result<StoredRun, StoreError> {
        let (run, tail) = read!(self, "load snapshot", |tx| runs::load(&mut tx, run_id))?;
        self.tails.keep(run_id, tail);
        Ok(run)
    }

    async fn snapshot_version(&self, run_id: &str) -> Result<i64, StoreError> {
        read!(self, "snapshot version", |tx| runs::snapshot_version(
            &mut tx, run_id
        ))
    }

    async fn claim(&self, run_id: &str, lease: &Lease<'_>) -> Result<ClaimOutcome, StoreError> {
        write!(self, "claim run", Write::Lease, |tx| runs::claim(
            &mut tx, run_id, lease
        ))
    }

    async fn take_over(
        &self,
        run_id: &str,
        holder: &str,
        lease: &Lease<'_>,
    ) -> Result<bool, StoreError> {
        write!(self, "take over run", Write::Lease, |tx| runs::take_over(
            &mut tx, run_id, holder, lease
        ))
    }

    async fn renew(&self, run_id: &str, lease: &Lease<'_>) -> Result<bool, StoreError> {
        write!(self, "renew lease", Write::Lease, |tx| runs::renew(
            &mut tx, run_id, lease
        ))
    }

    async fn release(&self, run_id: &str, holder: &str) -> Result<(), StoreError> {
        write!(self, "release run", Write::Release, |tx| runs::release(
            &mut tx, run_id, holder
        ))
    }

    async fn run(&self, run_id: &str) -> Result<RunRow, StoreError> {
        read!(self, "load run", |tx| runs::one(&mut tx, run_id))
    }

    async fn runs(&self) -> Result<Vec<RunRow>, StoreError> {
        read!(self, "list runs", |tx| runs::all(&mut tx))
    }

    async fn latest_run(&self) -> Result<Option<RunRow>, StoreError> {
        read!(self, "load the latest run", |tx| runs::latest(&mut tx))
    }

    async fn resolve_run(&self, prefix: &str) -> Result<String, StoreError> {
        read!(self, "resolve run", |tx| runs::resolve(&mut tx, prefix))
    }

    async fn open_item(
        &self,
        run: &NewRun<'_>,
        item: &OpenItem,
        waiter: &Lease<'_>,
        by: &Actor,
    ) -> Result<ItemRow, StoreError> {
        write!(self, "open item", |tx| async {
            let run_id = runs::session(&mut tx, run, waiter.now).await?;
            items::open_one(&mut tx, &run_id, item, waiter, by).await
        })
    }

    async fn append_audit(&self, entry: &NewAudit<'_>) -> Result<(), StoreError> {
        write!(self, "append to the audit trail", |tx| log::append(
            &mut tx,
            entry.entry()
        ))
    }

    async fn audit(&self, run_id: Option<&str>) -> Result<Vec<AuditRow>, StoreError> {
        read!(self, "read the audit trail", |tx| log::audit(
            &mut tx, run_id
        ))
    }

    fn audit_anchor(&self) -> Option<&AuditAnchor> {
        self.anchor.as_ref()
    }

    async fn renew_waiters(&self, holders: &[&str], until: Millis) -> Result<u64, StoreError> {
        write!(self, "renew waiters", Write::Lease, |tx| {
            items::renew_waiters(&mut tx, holders, until)
        })
    }

    async fn waited_items(&self) -> Result<Vec<WaitedItem>, StoreError> {
        read!(self, "list waited items", |tx| items::waited(&mut tx))
    }

    async fn record_decision(&self, d: &NewDecision<'_>) -> Result<DecisionRow, StoreError> {
        write!(self, "record decision", |tx| items::decide(&mut tx, d))
    }

    async fn decision(
        &self,
        run_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<DecisionRow>, StoreError> {
        read!(self, "find decision", |tx| items::decision(
            &mut tx,
            run_id,
            tool_call_id
        ))
    }

    async fn newest_decision(&self) -> Result<i64, StoreError> {
        read!(self, "newest decision", |tx| items::newest_decision(
            &mut tx
        ))
    }

    async fn decided_after(&self, after: i64, limit: i64) -> Result<Vec<Decided>, StoreError> {
        read!(self, "decisions after", |tx| items::decided_after(
            &mut tx, after, limit
        ))
    }

    async fn open_items(&self, run_id: Option<&str>) -> Result<Vec<ItemRow>, StoreError> {
        read!(self, "list open items", |tx| items::open(&mut tx, run_id))
    }

    async fn revisions(&self, run_id: Option<&str>) -> Result<Vec<RevisionRow>, StoreError> {
        read!(self, "list revisions", |tx| revisions::of_run(
            &mut tx, run_id
        ))
    }

    async fn revision(&self, id: i64) -> Result<RevisionRow, StoreError> {
        read!(self, "load revision", |tx| revisions::one(&mut tx, id))
    }

    async fn revision_list(&self, listing: &Listing<'_>) -> Result<Vec<RevisionRow>, StoreError> {
        read!(self, "list revisions", |tx| revisions::list(
            &mut tx, listing
        ))
    }

    async fn search_revisions(
        &self,
        run_id: Option<&str>,
        words: &[String],
    ) -> Result<Vec<RevisionRow>, StoreError> {
        read!(self, "search revisions", |tx| revisions::search(
            &mut tx, run_id, words
        ))
    }

    async fn revisions_by_sha(&self, prefix: &str) -> Result<Vec<RevisionRow>, StoreError> {
        read!(self, "find revisions by hash", |tx| revisions::by_sha(
            &mut tx, prefix
        ))
    }

    async fn add_comment(&self, comment: &NewComment<'_>) -> Result<CommentRow, StoreError> {
        write!(self, "add comment", |tx| comments::add_comment(
            &mut tx, comment
        ))
    }

    async fn comments(&self, run_id: &str) -> Result<Vec<CommentRow>, StoreError> {
        read!(self, "list comments", |tx| comments::comments(
            &mut tx, run_id
        ))
    }

    async fn set_comment_resolved(
        &self,
        id: i64,
        resolved: bool,
        by: &Actor,
        at: Millis,
    ) -> Result<CommentRow, StoreError> {
        write!(self, "resolve comment", |tx| comments::set_resolved(
            &mut tx, id, resolved, by, at
        ))
    }

    async fn edit_plan(&self, edit: &NewEdit<'_>) -> Result<RevisionRow, StoreError> {
        write!(self, "edit plan", |tx| revisions::edit(&mut tx, edit))
    }

    async fn events(&self, run_id: &str) -> Result<Vec<EventRow>, StoreError> {
        read!(self, "list events", |tx| log::events(&mut tx, run_id))
    }

    async fn snapshot_count(&self, run_id: &str) -> Result<i64, StoreError> {
        read!(self, "count snapshots", |tx| runs::snapshot_count(
            &mut tx, run_id
        ))
    }

    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        let key = self.setting_key(key);
        read!(self, "read a setting", |tx| log::setting(&mut tx, &key))
    }

    async fn set_setting(
        &self,
        key: &str,
        value: Option<&str>,
        at: Millis,
    ) -> Result<(), StoreError> {
        let key = self.setting_key(key);
        write!(self, "save a setting", |tx| log::set_setting(
            &mut tx, &key, value, at
        ))
    }

    fn changes(&self) -> BoxStream<'static, ()> {
        self.backend.changes()
    }

    async fn create_token(&self, token: &NewToken<'_>) -> Result<TokenRow, StoreError> {
        write!(self, "create a token", |tx| log::create_token(
            &mut tx, token
        ))
    }

    async fn tokens(&self) -> Result<Vec<TokenRow>, StoreError> {
        read!(self, "list tokens", |tx| log::tokens(&mut tx))
    }

    async fn revoke_token(
        &self,
        kind: TokenKind,
        which: TokenKey<'_>,
        by: &Actor,
        at: Millis,
    ) -> Result<Option<TokenRow>, StoreError> {
        write!(self, "revoke a token", |tx| log::revoke_token(
            &mut tx, kind, which, by, at
        ))
    }

    async fn active_token(
        &self,
        kind: TokenKind,
        sha256: &str,
        now: Millis,
    ) -> Result<Option<TokenRow>, StoreError> {
        read!(self, "look up a token", |tx| log::active_token(
            &mut tx, kind, sha256, now
        ))
    }

    async fn redeem_pairing(
        &self,
        pairing_sha256: &str,
        session: &NewToken<'_>,
    ) -> Result<Option<TokenRow>, StoreError> {
        write!(self, "sign in by pairing", |tx| log::redeem_pairing(
            &mut tx,
            pairing_sha256,
            session
        ))
    }

    async fn record_work(&self, new: &NewWork<'_>) -> Result<Option<WorkRow>, StoreError> {
        write!(self, "record work", |tx| work::record(&mut tx, new, None))
    }

    async fn mark_step(
        &self,
        mark: &NewWork<'_>,
        revision: (i64, &str),
        by: &Actor,
    ) -> Result<Option<WorkRow>, StoreError> {
        write!(self, "mark a step", |tx| work::mark(
            &mut tx, mark, revision, by
        ))
    }

    async fn work(&self, revision_id: i64) -> Result<Vec<WorkRow>, StoreError> {
        read!(self, "list work", |tx| work::of_revision(
            &mut tx,
            revision_id
        ))
    }

    async fn work_after(
        &self,
        kind: WorkKind,
        after: i64,
        limit: i64,
    ) -> Result<Vec<WorkRow>, StoreError> {
        read!(self, "list recent work", |tx| work::after(
            &mut tx, kind, after, limit
        ))
    }

    async fn approved_revision(&self, run_id: &str) -> Result<Option<i64>, StoreError> {
        read!(self, "find the approved revision", |tx| {
            work::approved_revision(&mut tx, run_id)
        })
    }
}
