//! The inbox as a window lists it: every plan and approval waiting for a person, long
//! arguments as previews (a run's detail has them whole).

use std::sync::Arc;

use futures::stream::{FusedStream, StreamExt};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{watch, Notify};

use super::preview_value;
use crate::review::{Review, ReviewError, ReviewItem};
use crate::store::Source;
use crate::vocabulary::ItemKind;

/// One entry of the inbox: a pending plan or approval.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxItem {
    pub run_id: String,
    pub tool_call_id: String,
    /// `plan`, `approval`, `suspended`.
    pub kind: ItemKind,
    pub tool_name: String,
    pub args: Value,
    /// The whole arguments' length in bytes when `args` is a [`super::preview`] (in the
    /// inbox's list; the run's detail, which a review is drawn from, has them whole).
    pub args_full_bytes: Option<usize>,
    pub since: i64,
    pub prompt: String,
    pub workspace: String,
    pub source: Source,
    /// Whether a note given with an approval reaches the agent's model (the window says so on
    /// its Approve button).
    pub notes_reach_agent: bool,
    pub title: Option<String>,
    pub path: Option<String>,
    pub revision_id: Option<i64>,
    pub revision_no: Option<i64>,
    pub sha256: Option<String>,
}

/// An item with its arguments whole, as a review is drawn from (a run's detail); a list of
/// items uses [`InboxItem::listed`].
impl From<&ReviewItem> for InboxItem {
    fn from(item: &ReviewItem) -> Self {
        Self::with_args(item, item.args.clone(), None)
    }
}

impl InboxItem {
    /// An item for the inbox's list: long arguments as a [`super::preview`] (a pending
    /// approval of a 200 KB write would otherwise go whole to the window with every change to
    /// the inbox).
    pub fn listed(item: &ReviewItem) -> Self {
        let (args, full) = preview_value(&item.args);
        Self::with_args(item, args, full)
    }

    fn with_args(item: &ReviewItem, args: Value, args_full_bytes: Option<usize>) -> Self {
        let revision = item.revision.as_ref();
        Self {
            run_id: item.run_id.clone(),
            tool_call_id: item.tool_call_id.clone(),
            kind: item.kind,
            tool_name: item.tool_name.clone(),
            args,
            args_full_bytes,
            since: item.since,
            prompt: item.prompt.clone(),
            workspace: item.workspace.clone(),
            source: item.source.clone(),
            notes_reach_agent: item.source.kind.hears_approval_notes(),
            title: revision.map(|r| r.title.clone()),
            path: revision.map(|r| r.path.clone()),
            revision_id: revision.map(|r| r.id),
            revision_no: revision.map(|r| r.revision_no),
            sha256: revision.map(|r| r.sha256.clone()),
        }
    }
}

/// The inbox as a list shows it (abandoned plans closed first, as [`Review::inbox`] does).
pub async fn inbox(review: &Review) -> Result<Vec<InboxItem>, ReviewError> {
    Ok(review
        .inbox()
        .await?
        .iter()
        .map(InboxItem::listed)
        .collect())
}

/// The inbox as read at one moment, and as the window's event carries it (JSON).
#[derive(Debug, Clone, Default)]
pub struct InboxSnapshot {
    pub items: Vec<InboxItem>,
    pub json: String,
    /// How many changes to the store its reader had seen when it read (a follower that sees
    /// this move knows the store changed, though the inbox may be the same: work reported,
    /// a run moved on).
    pub changes: u64,
}

/// What a follower of the inbox receives ([`InboxFeed::follow`]): `None` until the inbox is
/// read for it, then each read, sent again at every change to the store (so that a follower
/// also checks what it must then, such as its session) and every [`REREAD`] (an agent that
/// stopped waiting changes nothing until the inbox closes its plan as abandoned).
pub type InboxReceiver = watch::Receiver<Option<Arc<InboxSnapshot>>>;

/// How often [`follow_inbox`] reads the inbox with no change.
pub const REREAD: std::time::Duration = std::time::Duration::from_secs(10);

/// Waits for the next change to the store (and 20 ms more, so that changes that come together
/// are read once) or [`REREAD`], whichever is first; `true` for a change. A store whose changes
/// cannot be followed (`changes` ended) is read on the timer alone.
pub async fn change_or_reread(changes: &mut (impl FusedStream<Item = ()> + Unpin)) -> bool {
    tokio::select! {
        Some(()) = changes.next() => {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            true
        }
        () = tokio::time::sleep(REREAD) => false,
    }
}

/// The one reader of the inbox of a whole process, for any number of followers (see
/// [`follow_inbox`]). It reads only while someone follows: a server holding thousands of
/// waiting agents and no open page reads nothing at each submission.
#[derive(Debug, Clone)]
pub struct InboxFeed {
    reads: Arc<watch::Sender<Option<Arc<InboxSnapshot>>>>,
    followed: Arc<Notify>,
}

impl InboxFeed {
    /// Follows the inbox from now on: the reader reads it at once for the new follower, and
    /// the receiver holds `None` until then (never a read from before anyone followed).
    pub fn follow(&self) -> InboxReceiver {
        let receiver = self.reads.subscribe();
        self.followed.notify_one();
        receiver
    }
}

/// One reader of the inbox for any number of followers ([`InboxFeed`]): one subscription to the
/// store's changes and, while anyone follows, one read per change, however many follow. The
/// reader ends once every [`InboxFeed`] is gone.
pub fn follow_inbox(engine: crate::engine::Engine) -> InboxFeed {
    let feed = InboxFeed {
        reads: Arc::new(watch::channel(None).0),
        followed: Arc::default(),
    };
    let reads = Arc::downgrade(&feed.reads);
    let followed = feed.followed.clone();
    tokio::spawn(async move {
        let mut changes = engine.changes().fuse();
        let mut seen = 0;
        loop {
            let Some(tx) = reads.upgrade() else { return };
            if tx.receiver_count() == 0 {
                // Nobody follows: nothing is read, and the last read is not kept to go stale.
                tx.send_replace(None);
                drop(tx);
                tokio::select! {
                    () = followed.notified() => {}
                    // To end once the feed is gone.
                    () = tokio::time::sleep(REREAD) => {}
                }
                continue;
            }
            drop(tx);
            let read = inbox(engine.review()).await;
            let Some(tx) = reads.upgrade() else { return };
            match read {
                Ok(items) => {
                    let json = serde_json::to_string(&items).unwrap_or_default();
                    let changes = seen;
                    tx.send_replace(Some(Arc::new(InboxSnapshot {
                        items,
                        json,
                        changes,
                    })));
                }
                Err(err) => eprintln!("plandesk: cannot read the inbox: {err}"),
            }
            drop(tx);
            tokio::select! {
                changed = change_or_reread(&mut changes) => seen += u64::from(changed),
                // A new follower: read for it now.
                () = followed.notified() => {}
            }
        }
    });
    feed
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::vocabulary::SourceKind;
    use serde_json::json;

    use super::*;

    fn approval(args: Value) -> ReviewItem {
        ReviewItem {
            run_id: "run-1".into(),
            tool_call_id: "call-1".into(),
            kind: ItemKind::Approval,
            tool_name: "write_file".into(),
            args,
            since: 7,
            prompt: "Add a cache".into(),
            workspace: "/ws".into(),
            source: Source::engine(),
            revision: None,
        }
    }

    #[test]
    fn a_listed_item_has_long_arguments_as_a_preview_and_a_detail_has_them_whole() {
        let args = json!({"path": "big.md", "content": "x".repeat(50_000)});
        let item = approval(args.clone());
        let listed = InboxItem::listed(&item);
        assert_eq!(listed.args, preview_value(&args).0);
        assert_eq!(
            listed.args_full_bytes,
            Some(serde_json::to_string(&args).unwrap().len()),
            "the list says how long the arguments are"
        );
        let whole = InboxItem::from(&item);
        assert_eq!(
            (whole.args, whole.args_full_bytes),
            (args, None),
            "a review is drawn from the whole"
        );
        let wire = serde_json::to_value(&listed).unwrap();
        assert_eq!(
            (&wire["runId"], &wire["kind"], &wire["revisionId"]),
            (&json!("run-1"), &json!("approval"), &json!(null)),
            "the window reads camelCase, and an approval has no revision"
        );
    }

    #[test]
    fn an_item_says_whether_an_approval_note_reaches_its_agent() {
        let mut item = approval(json!({}));
        let wire = |item: &ReviewItem| serde_json::to_value(InboxItem::from(item)).unwrap();
        assert_eq!(
            wire(&item)["notesReachAgent"],
            json!(true),
            "Plandesk's own run"
        );
        item.source = Source {
            kind: SourceKind::Copilot,
            session: Some("s".into()),
        };
        assert_eq!(wire(&item)["notesReachAgent"], json!(false), "Copilot CLI");
    }
}
