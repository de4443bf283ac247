//! What the store keeps and hands back: plain rows and the small vocabularies (statuses, kinds,
//! actions) they use, each an enum that is a string only in the database and on the wire.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{StoreError, ANSWER_PLAN_IS_REVISION};
pub use crate::actor::{os_account, Actor};
use crate::clock::Millis;

/// Declares a string-backed enum: `as_str` for the database, `parse` for reading it back, and
/// serde with the same names.
macro_rules! vocabulary {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The value a stored string names, if any.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }
    };
}

vocabulary! {
    /// A run's status as listings show it.
    RunStatus {
        Running = "running",
        Suspended = "suspended",
        /// Waiting for the user's next message after a rejection without feedback.
        Waiting = "waiting",
        Finished = "finished",
        Failed = "failed",
    }
}

vocabulary! {
    /// What an open review item asks of a person.
    ItemKind {
        /// A plan submitted with `submit_plan` (or by an outside agent).
        Plan = "plan",
        /// An approval-gated tool call.
        Approval = "approval",
        /// Another tool that suspended for the host.
        Suspended = "suspended",
    }
}

vocabulary! {
    /// What a person (or the rules) decided on an item.
    Action {
        Approved = "approved",
        Rejected = "rejected",
        /// An approval-gated tool call that was declined.
        Declined = "declined",
        /// Resume data that did not fit the tool's schema: recorded, answered with an error.
        Invalid = "invalid",
        /// The outside agent stopped waiting (its hook was killed or gave up).
        Abandoned = "abandoned",
        /// No decision was made before the source's deadline: answered as a denial.
        Expired = "expired",
        /// The agent went on without Plandesk's answer (its own dialog answered the plan).
        AnsweredInAgent = "answered-in-agent",
    }
}

vocabulary! {
    /// Where a run's plans come from.
    SourceKind {
        /// A run of Plandesk's own engine.
        Engine = "engine",
        ClaudeCode = "claude-code",
        Codex = "codex",
        Gemini = "gemini",
        /// Factory's Droid CLI.
        Droid = "droid",
        QwenCode = "qwen-code",
        /// GitHub Copilot CLI.
        Copilot = "copilot",
        /// OpenCode, through Plandesk's plugin.
        OpenCode = "opencode",
        /// Kilo CLI (OpenCode's fork), through the same plugin.
        Kilo = "kilo",
        /// Pi, through Plandesk's extension.
        Pi = "pi",
        /// Any MCP client calling `plandesk mcp`'s `submit_plan`.
        Mcp = "mcp",
    }
}

vocabulary! {
    /// The kinds of entries in a run's append-only event log.
    EventKind {
        RunStarted = "run-started",
        PlanSubmitted = "plan-submitted",
        Suspended = "suspended",
        Decided = "decided",
        Finished = "finished",
        Waiting = "waiting",
        MaxSteps = "max-steps",
        Failed = "failed",
        Retry = "retry",
        Message = "message",
    }
}

vocabulary! {
    /// The kinds of entries in the audit trail.
    AuditKind {
        /// A plan (revision) was submitted for review.
        Submitted = "submitted",
        /// A decision was recorded, with the exact text the agent was answered (a plan in it
        /// that is the decided revision's named by the entry's revision hash: `answerPlan`).
        Decided = "decided",
        Commented = "commented",
        CommentResolved = "comment-resolved",
        CommentReopened = "comment-reopened",
        /// A reviewer changed the plan: a revision of their own.
        Edited = "edited",
        /// A run switched mode (plan -> build on approval).
        ModeSwitched = "mode-switched",
        /// An outside agent's hook gave the decision to its agent: the exact text it received.
        Answered = "answered",
        /// A bearer token for `plandesk serve` was created (its name; never the secret).
        TokenCreated = "token-created",
        /// A bearer token was revoked: requests carrying it are refused from then on.
        TokenRevoked = "token-revoked",
        /// A person marked a step of an approved plan done or not applicable by hand.
        StepMarked = "step-marked",
    }
}

vocabulary! {
    /// What a token of `plandesk serve` lets its holder do.
    TokenKind {
        /// An agent's: submit plans (`Authorization: Bearer pdt_…`).
        Agent = "agent",
        /// A one-time sign-in link of `plandesk pair`: exchanged once, within minutes, for a
        /// session.
        Pairing = "pairing",
        /// A reviewer's browser session (a cookie): read the inbox and decide.
        Session = "session",
    }
}

impl TokenKind {
    /// What a person calls one.
    pub fn noun(self) -> &'static str {
        match self {
            TokenKind::Agent => "token",
            TokenKind::Pairing => "sign-in link",
            TokenKind::Session => "session",
        }
    }

    pub(crate) fn noun_capitalised(self) -> &'static str {
        match self {
            TokenKind::Agent => "A token",
            TokenKind::Pairing => "A sign-in link",
            TokenKind::Session => "A session",
        }
    }

    /// The command that lists them.
    pub fn list_command(self) -> &'static str {
        match self {
            TokenKind::Agent => "plandesk token list",
            TokenKind::Pairing | TokenKind::Session => "plandesk session list",
        }
    }
}

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
}

/// A decision as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRow {
    pub id: i64,
    pub run_id: String,
    pub tool_call_id: String,
    pub revision_id: Option<i64>,
    pub action: Action,
    pub feedback: Option<String>,
    /// Whole: a plan stored with its revision instead (see
    /// [`NewDecision::answer_without_plan`]) is put back.
    pub resume_data: Value,
    pub decided_at: Millis,
    /// Who decided (`Actor::name`); `None` for decisions stored before this was recorded.
    pub decided_by: Option<String>,
}

/// What a decision is about to record.
#[derive(Debug, Clone)]
pub struct NewDecision<'a> {
    pub run_id: &'a str,
    pub tool_call_id: &'a str,
    pub action: Action,
    pub feedback: Option<&'a str>,
    pub resume_data: &'a Value,
    /// When set, the open plan's sha256 must start with this, or the decision is refused.
    pub expect_sha: Option<&'a str>,
    pub at: Millis,
    /// Who decides (for the audit trail).
    pub by: &'a Actor,
    /// The exact text the agent is answered with, for the audit trail.
    pub answer: Option<&'a str>,
    /// For a plan's answer: the same text with its `submittedPlan.plan` null. When the resume
    /// data's `plan` is the decided revision's body, the plan is stored once, with the
    /// revision: the decision keeps its resume data with `plan` null (every read puts it
    /// back), and the audit entry keeps this text, says `"answerPlan": "revision"`, and names
    /// the revision by its hash. [`answer_with_plan`] rebuilds the exact text.
    pub answer_without_plan: Option<&'a str>,
    /// The run's mode once the decision is applied, when applying it switches the mode (an
    /// approved plan). The switch (the run's mode and its audit entry) is recorded with the
    /// decision, as durable as it is; the commit that applies the decision finds it made.
    pub mode_after: Option<&'a str>,
}

/// A decision's resume data as read back: its stored text, parsed (a row altered into invalid
/// JSON is kept as its text), with `plan` put back when the decision was stored without it
/// ([`NewDecision::stored_resume_data`]): the decided revision's body, read with it.
pub(crate) fn resume_data_as_read(stored: String, plan: Option<String>) -> Value {
    let mut data = serde_json::from_str(&stored).unwrap_or(Value::String(stored));
    if let (Some(plan), Some(fields)) = (plan, data.as_object_mut()) {
        fields.insert("plan".to_owned(), Value::String(plan));
    }
    data
}

impl NewDecision<'_> {
    /// The resume data's `plan`, if it has one: stored once, with the decided revision, when it
    /// is that revision's body (the store compares them).
    pub fn plan(&self) -> Option<&str> {
        self.resume_data.get("plan").and_then(Value::as_str)
    }

    /// The resume data as stored: whole, or with `plan` null when `plan_from_revision` (the
    /// decided revision's body is the plan).
    pub fn stored_resume_data(&self, plan_from_revision: bool) -> String {
        match self.resume_data.as_object() {
            Some(fields) if plan_from_revision => {
                // Not cloned: the plan is the one long value it holds.
                let stored: std::collections::BTreeMap<&str, &Value> = fields
                    .iter()
                    .map(|(key, value)| {
                        (
                            key.as_str(),
                            if key == "plan" { &Value::Null } else { value },
                        )
                    })
                    .collect();
                serde_json::to_string(&stored).unwrap_or_else(|_| self.resume_data.to_string())
            }
            _ => self.resume_data.to_string(),
        }
    }

    /// The audit entry's data: the call, the action and its feedback, and the answer (without
    /// its plan, named as the revision's, when `plan_from_revision` and it has such a form).
    pub fn audit_data(&self, plan_from_revision: bool) -> Value {
        let mut data = serde_json::json!({
            "toolCallId": self.tool_call_id,
            "action": self.action,
            "feedback": self.feedback,
        });
        match self.answer_without_plan.filter(|_| plan_from_revision) {
            Some(answer) => {
                data["answer"] = Value::from(answer);
                data["answerPlan"] = Value::from(ANSWER_PLAN_IS_REVISION);
            }
            None => data["answer"] = Value::from(self.answer),
        }
        data
    }

    /// The row this decision becomes once inserted as `id`, on the plan revision `revision_id`,
    /// built from what was written rather than read (and its resume data parsed) back.
    pub fn stored_as(&self, id: i64, revision_id: Option<i64>) -> DecisionRow {
        DecisionRow {
            id,
            run_id: self.run_id.to_owned(),
            tool_call_id: self.tool_call_id.to_owned(),
            revision_id,
            action: self.action,
            feedback: self.feedback.map(str::to_owned),
            resume_data: self.resume_data.clone(),
            decided_at: self.at,
            decided_by: Some(self.by.name.clone()),
        }
    }
}

/// The plan revision an open item waits on, as a decision or an edit checks it: which one it
/// is, without its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingPlan {
    pub id: i64,
    pub sha256: String,
    pub revision_no: i64,
    pub path: String,
}

impl WaitingPlan {
    /// Refuses a decision made on another revision: `expect` must be the start of this one's
    /// sha256 (any case).
    pub fn check_seen(&self, expect: &str) -> Result<(), StoreError> {
        let expect = expect.to_ascii_lowercase();
        if expect.is_empty() || !self.sha256.starts_with(&expect) {
            return Err(StoreError::StaleRevision {
                given: expect,
                pending_no: self.revision_no,
                pending_sha: self.sha256.chars().take(12).collect(),
                path: self.path.clone(),
            });
        }
        Ok(())
    }
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
