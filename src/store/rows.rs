//! What the store keeps and hands back: plain rows, in the words of `crate::vocabulary`.
//! A decision's rows are in `decision`; the others are here.

mod decision;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(crate) use decision::resume_data_as_read;
pub use decision::{DecisionRow, NewDecision, WaitingPlan};

pub use crate::actor::{os_account, Actor};
use crate::clock::Millis;
use crate::vocabulary::{Action, EventKind, ItemKind, RunStatus, SourceKind, TokenKind};

/// A plan's source: an engine run, or an outside agent's session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    pub kind: SourceKind,
    /// The outside agent's own session id; `None` for engine runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

impl Source {
    pub fn engine() -> Self {
        Self {
            kind: SourceKind::Engine,
            session: None,
        }
    }
}

/// What a new run is created with.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    pub id: &'a str,
    pub prompt: &'a str,
    pub model: &'a str,
    pub workspace: &'a str,
    pub source: &'a Source,
}

/// One move of a run, committed as a whole: a snapshot, the messages appended since the last
/// commit, the items that are open after it, and an event for the log.
#[derive(Debug, Clone)]
pub struct Commit<'a> {
    pub run_id: &'a str,
    /// The snapshot version this one replaces (0 for a new run).
    pub expect_version: i64,
    pub schema_version: u32,
    /// The run's state as JSON (without its messages).
    pub state: &'a str,
    pub status: RunStatus,
    pub mode: &'a str,
    /// How many messages the conversation has after this commit.
    pub message_count: i64,
    /// The messages (JSON) from `message_count - new_messages.len()` on.
    pub new_messages: &'a [String],
    /// Every item of this run that waits for a person after this commit; others are closed.
    /// An item that already has a decision is never reopened.
    pub open: &'a [OpenItem],
    pub event: Option<(EventKind, Value)>,
    pub at: Millis,
    /// The process making the move (for the audit trail: submissions, mode switches).
    pub by: &'a Actor,
    /// Everything this move records follows from what is durable already: decisions, applied
    /// by answering their calls (a plan's result, a denial), not by running a tool. It may be
    /// committed without waiting for the disk (atomic, on disk in order with the next durable
    /// write, kept when a process is killed). A crash of the machine (or of a PostgreSQL
    /// server) before that write loses it: the run is then interrupted after its decisions,
    /// and continuing it (Continue, `plandesk resume`) applies them again, to the same result.
    /// Nothing the audit trail holds is left to such a commit.
    pub derived: bool,
}

/// Something that waits for a person.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenItem {
    pub tool_call_id: String,
    pub kind: ItemKind,
    pub tool_name: String,
    pub args: Value,
    /// For plans: the revision to record (once) for this item.
    pub plan: Option<PlanText>,
}

/// A plan as a person sees it, and the hash that identifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanText {
    pub path: String,
    pub title: String,
    pub body: String,
    pub sha256: String,
}

/// A run's newest snapshot and its conversation, as stored.
#[derive(Debug, Clone)]
pub struct StoredRun {
    pub version: i64,
    pub schema_version: u32,
    pub state: String,
    pub messages: Vec<String>,
}

/// Who holds a run, and until when.
#[derive(Debug, Clone, Copy)]
pub struct Lease<'a> {
    pub holder: &'a str,
    pub until: Millis,
    pub now: Millis,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    Claimed,
    /// Another holder's lease runs until `until`.
    Held {
        holder: String,
        until: Millis,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRow {
    pub id: String,
    pub prompt: String,
    pub model: String,
    pub mode: String,
    pub status: RunStatus,
    pub workspace: String,
    pub source: Source,
    pub created_at: Millis,
    pub updated_at: Millis,
    /// The driver holding the run, while its lease runs.
    #[serde(skip)]
    pub holder: Option<(String, Millis)>,
    /// An item of it is open: a plan or a call waits for a person's decision.
    pub waits_on_person: bool,
}

/// A submitted plan, never overwritten.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionRow {
    pub id: i64,
    pub run_id: String,
    pub tool_call_id: String,
    pub path: String,
    pub title: String,
    pub body: String,
    pub sha256: String,
    pub revision_no: i64,
    pub submitted_at: Millis,
    /// The prompt of the run (or session) it belongs to.
    pub prompt: String,
    /// Whether its item is still open with this revision (a reviewer's edit replaces it).
    pub open: bool,
    pub decision: Option<DecisionRow>,
    /// The reviewer who wrote it by editing the plan; `None`: the agent did.
    pub author: Option<String>,
}

/// What a listing of revisions reads (see [`Store::revision_list`]): which revisions, and which
/// page of them, newest first.
///
/// [`Store::revision_list`]: super::Store::revision_list
#[derive(Debug, Clone, Copy, Default)]
pub struct Listing<'a> {
    /// One run's revisions; `None`: every run's.
    pub run_id: Option<&'a str>,
    /// Words a revision's title or plan has in a row, the last one possibly the start of a
    /// word (case and accents ignored); none: every revision.
    pub words: &'a [String],
    /// Only revisions in one of these states; `None`: in any.
    pub states: Option<&'a States>,
    /// Only revisions older than this one (by id): the page after one that ended on it.
    pub before: Option<i64>,
    /// At most this many; `None`: all.
    pub limit: Option<usize>,
}

/// The states a listing keeps, in the store's terms (the review core says which status each
/// is): decided with one of `actions`, or undecided and still open, or undecided and closed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct States {
    pub actions: Vec<Action>,
    pub undecided_open: bool,
    pub undecided_closed: bool,
}

impl States {
    /// The SQL condition on a listing's row, whose decision is joined as `d` and open item as
    /// `p` (outer joins). Only the vocabulary's own words are written into it.
    pub(crate) fn condition(&self) -> String {
        let mut any = Vec::new();
        if !self.actions.is_empty() {
            let actions: Vec<String> = self
                .actions
                .iter()
                .map(|a| format!("'{}'", a.as_str()))
                .collect();
            any.push(format!("d.action IN ({})", actions.join(", ")));
        }
        if self.undecided_open {
            any.push("(d.id IS NULL AND p.run_id IS NOT NULL)".to_owned());
        }
        if self.undecided_closed {
            any.push("(d.id IS NULL AND p.run_id IS NULL)".to_owned());
        }
        if any.is_empty() {
            "FALSE".to_owned()
        } else {
            format!("({})", any.join(" OR "))
        }
    }
}

/// An open review item with its run's context.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemRow {
    pub run_id: String,
    pub tool_call_id: String,
    pub kind: ItemKind,
    pub tool_name: String,
    pub args: Value,
    pub since: Millis,
    pub prompt: String,
    pub workspace: String,
    pub source: Source,
    pub revision: Option<RevisionRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventRow {
    pub id: i64,
    pub run_id: String,
    pub at: Millis,
    pub kind: String,
    pub data: Value,
}

/// An outside session's open item and who waits on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitedItem {
    pub run_id: String,
    pub tool_call_id: String,
    pub waiter: Option<(String, Millis)>,
}

/// Which item a decision decided (`id`: the decision's, in the order of commits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    pub id: i64,
    pub run_id: String,
    pub tool_call_id: String,
}

/// A reviewer's comment on lines of one revision.
#[derive(Debug, Clone, PartialEq)]
pub struct CommentRow {
    pub id: i64,
    pub run_id: String,
    pub revision_id: i64,
    /// The lines commented on, 1-based and inclusive, in the revision's plan text.
    pub line_start: i64,
    pub line_end: i64,
    /// Those lines' text when the comment was made.
    pub quote: String,
    pub body: String,
    pub author: String,
    pub created_at: Millis,
    pub resolved_by: Option<String>,
    pub resolved_at: Option<Millis>,
}

/// A comment to record (with its audit entry, in one transaction).
#[derive(Debug, Clone)]
pub struct NewComment<'a> {
    pub run_id: &'a str,
    pub revision_id: i64,
    pub revision_sha: &'a str,
    pub line_start: i64,
    pub line_end: i64,
    pub quote: &'a str,
    pub body: &'a str,
    pub by: &'a Actor,
    pub at: Millis,
}

/// A reviewer's edit of an open plan: a revision of their own that the item then waits on.
#[derive(Debug, Clone)]
pub struct NewEdit<'a> {
    pub run_id: &'a str,
    pub tool_call_id: &'a str,
    /// The revision the reviewer edited (sha256 or a prefix): refused if another is open now.
    pub expect_sha: &'a str,
    pub plan: &'a PlanText,
    pub by: &'a Actor,
    pub at: Millis,
}

/// A bearer token of `plandesk serve`, as listed: its name and dates, never its secret or hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenRow {
    /// Which token it is, for good: a revoked token's name may be given to a new one.
    #[serde(skip)]
    pub id: i64,
    pub kind: TokenKind,
    pub name: String,
    pub created_at: Millis,
    /// Who created it (`Actor::name`).
    pub created_by: String,
    /// When it was revoked; `None` while it is active.
    pub revoked_at: Option<Millis>,
    /// When it stops being accepted; `None` for never (agents' tokens).
    pub expires_at: Option<Millis>,
}

impl TokenRow {
    /// Whether it is accepted at `now`: not revoked, not expired.
    pub fn is_active(&self, now: Millis) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|until| until > now)
    }
}

/// Which token: by its name (among the active ones of its kind) or by its secret's SHA-256.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKey<'a> {
    Name(&'a str),
    Sha256(&'a str),
}

/// A token to record: its name and the SHA-256 (hex) of its secret; the secret itself is
/// never stored.
#[derive(Debug, Clone)]
pub struct NewToken<'a> {
    pub kind: TokenKind,
    pub name: &'a str,
    pub sha256: &'a str,
    pub by: &'a Actor,
    pub at: Millis,
    /// When it stops being accepted, if ever.
    pub expires_at: Option<Millis>,
}
