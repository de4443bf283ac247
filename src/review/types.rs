//! What the review core hands to hosts: revisions with the status a person sees, open items,
//! comparisons. Serialised (camelCase) as the CLI's `--json` and the app's IPC both show them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::Millis;
use crate::plan::render::{Fallback, HiddenContent};
use crate::plan::SideBySide;
use crate::store::{DecisionRow, ItemRow, RevisionRow, Source, States};
use crate::vocabulary::{Action, ItemKind};

/// Where a revision stands, by one rule for every host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RevisionStatus {
    /// Its item is open: a person has yet to decide.
    Pending,
    Approved,
    Rejected,
    /// Never decided and no longer open (the run moved on), or answered with invalid data.
    Superseded,
    /// The outside agent stopped waiting before anyone decided.
    Abandoned,
    /// Nobody decided before the source's deadline; the agent was answered with a denial.
    Expired,
    /// Answered in the agent itself (its own dialog), so not decided here.
    AnsweredInAgent,
}

impl RevisionStatus {
    pub const ALL: &'static [RevisionStatus] = &[
        RevisionStatus::Pending,
        RevisionStatus::Approved,
        RevisionStatus::Rejected,
        RevisionStatus::Superseded,
        RevisionStatus::Abandoned,
        RevisionStatus::Expired,
        RevisionStatus::AnsweredInAgent,
    ];

    /// The rule: a decision says approved or rejected; without one, an open item is pending and
    /// a closed one superseded.
    pub fn of(open: bool, decision: Option<Action>) -> Self {
        match decision {
            Some(Action::Approved) => RevisionStatus::Approved,
            Some(Action::Rejected | Action::Declined) => RevisionStatus::Rejected,
            Some(Action::Invalid) => RevisionStatus::Superseded,
            Some(Action::Abandoned) => RevisionStatus::Abandoned,
            Some(Action::Expired) => RevisionStatus::Expired,
            Some(Action::AnsweredInAgent) => RevisionStatus::AnsweredInAgent,
            None if open => RevisionStatus::Pending,
            None => RevisionStatus::Superseded,
        }
    }

    /// The states the store keeps for this status, by [`RevisionStatus::of`] itself: the
    /// decisions' actions it gives this status to, and whether it gives it to an undecided
    /// revision that is open, or closed.
    pub fn states(self) -> States {
        States {
            actions: Action::ALL
                .iter()
                .copied()
                .filter(|&a| {
                    [true, false]
                        .iter()
                        .any(|&open| Self::of(open, Some(a)) == self)
                })
                .collect(),
            undecided_open: Self::of(true, None) == self,
            undecided_closed: Self::of(false, None) == self,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RevisionStatus::Pending => "pending",
            RevisionStatus::Approved => "approved",
            RevisionStatus::Rejected => "rejected",
            RevisionStatus::Superseded => "superseded",
            RevisionStatus::Abandoned => "abandoned",
            RevisionStatus::Expired => "expired",
            RevisionStatus::AnsweredInAgent => "answered-in-agent",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|s| s.as_str() == text)
    }
}

/// The key of an outside agent's approval in its decision's data: the agent may edit files
/// without asking from then on (see `Verdict::accept_edits`).
pub const ACCEPT_EDITS: &str = "acceptEdits";

/// A decision as people see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub id: i64,
    pub run_id: String,
    pub tool_call_id: String,
    pub revision_id: Option<i64>,
    pub action: Action,
    pub feedback: Option<String>,
    /// What the agent was answered with (for engine runs: the tool's resume data). Null in
    /// listings ([`crate::review::Review::listing`]), which leave it out.
    pub resume_data: Value,
    pub decided_at: Millis,
    /// Who decided, when known.
    pub decided_by: Option<String>,
}

impl From<DecisionRow> for Decision {
    fn from(row: DecisionRow) -> Self {
        Self {
            id: row.id,
            run_id: row.run_id,
            tool_call_id: row.tool_call_id,
            revision_id: row.revision_id,
            action: row.action,
            feedback: row.feedback,
            resume_data: row.resume_data,
            decided_at: row.decided_at,
            decided_by: row.decided_by,
        }
    }
}

/// A plan as its file reads: the title as a heading (if it has one), then the body.
pub fn plan_markdown(title: &str, body: &str) -> String {
    if title.is_empty() {
        body.to_owned()
    } else {
        format!("# {title}\n\n{body}")
    }
}

/// One submitted plan, never overwritten, with where it stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    pub id: i64,
    pub run_id: String,
    pub tool_call_id: String,
    pub path: String,
    pub title: String,
    pub body: String,
    pub sha256: String,
    pub revision_no: i64,
    pub submitted_at: Millis,
    pub prompt: String,
    pub status: RevisionStatus,
    pub decision: Option<Decision>,
    /// The reviewer who wrote this revision by editing the agent's plan; `None`: the agent.
    pub author: Option<String>,
}

impl Revision {
    /// The plan as its file read: the title as a heading, then the body. What a person reads,
    /// what diffs compare and what the hash covers.
    pub fn markdown(&self) -> String {
        plan_markdown(&self.title, &self.body)
    }

    /// Whether two revisions are of one plan (same run, same file): only those compare.
    pub fn same_thread(&self, other: &Revision) -> bool {
        self.run_id == other.run_id && self.path == other.path
    }
}

impl From<RevisionRow> for Revision {
    fn from(row: RevisionRow) -> Self {
        Self {
            status: RevisionStatus::of(row.open, row.decision.as_ref().map(|d| d.action)),
            id: row.id,
            run_id: row.run_id,
            tool_call_id: row.tool_call_id,
            path: row.path,
            title: row.title,
            body: row.body,
            sha256: row.sha256,
            revision_no: row.revision_no,
            submitted_at: row.submitted_at,
            prompt: row.prompt,
            decision: row.decision.map(Decision::from),
            author: row.author,
        }
    }
}

/// Something waiting for a person: a plan, an approval-gated tool call, or another suspension.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewItem {
    pub run_id: String,
    pub tool_call_id: String,
    pub kind: ItemKind,
    pub tool_name: String,
    pub args: Value,
    pub since: Millis,
    pub prompt: String,
    pub workspace: String,
    pub source: Source,
    pub revision: Option<Revision>,
}

impl From<ItemRow> for ReviewItem {
    fn from(row: ItemRow) -> Self {
        Self {
            run_id: row.run_id,
            tool_call_id: row.tool_call_id,
            kind: row.kind,
            tool_name: row.tool_name,
            args: row.args,
            since: row.since,
            prompt: row.prompt,
            workspace: row.workspace,
            source: row.source,
            revision: row.revision.map(Revision::from),
        }
    }
}

/// Which revisions a history listing shows.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryFilter {
    pub run_id: Option<String>,
    pub status: Option<RevisionStatus>,
    /// Case-insensitive text searched in titles and bodies.
    pub query: Option<String>,
}

/// A page of a listing: the revisions older than `before` (by id; from the newest when
/// `None`), at most `limit` of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub before: Option<i64>,
    pub limit: usize,
}

/// A revision as a person reviews it: rendered, beside its exact source, with what the
/// rendering would hide and its thread's length.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionView {
    #[serde(flatten)]
    pub revision: Revision,
    /// Sanitised HTML of the whole plan (title heading and body), or its source when it could
    /// not be rendered (see `fallback`).
    pub html: String,
    /// Exactly the text the agent acts on.
    pub markdown: String,
    /// `markdown` as HTML for a source view, every invisible character marked.
    pub source_html: String,
    /// Why the plan is shown as source instead of rendered, if it is.
    pub fallback: Option<Fallback>,
    /// What the agent receives that the rendered view hides or changes (line numbers count the
    /// lines of `markdown`). A host flags the plan and offers the source view when not empty.
    pub hidden: Vec<HiddenContent>,
    pub hidden_omitted: usize,
    pub revisions_in_thread: i64,
}

/// The decision taken on one revision, which led to the next.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackStep {
    pub revision_no: i64,
    pub action: Action,
    pub feedback: Option<String>,
}

/// Two revisions of one plan side by side, older on the left.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    pub left: Revision,
    pub right: Revision,
    pub diff: SideBySide,
    /// The decisions between the two revisions, oldest first.
    pub between: Vec<FeedbackStep>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The states the store is asked for are exactly those [`RevisionStatus::of`] gives each
    /// status: every decision and every undecided revision (open or closed) has one status, and
    /// a decision's does not depend on whether its item is open (the store's condition on an
    /// action does not look).
    #[test]
    fn each_status_asks_the_store_for_exactly_its_states() {
        let statuses: Vec<RevisionStatus> = Action::ALL
            .iter()
            .map(|&a| RevisionStatus::of(false, Some(a)))
            .chain([true, false].map(|open| RevisionStatus::of(open, None)))
            .collect();
        for &action in Action::ALL {
            assert_eq!(
                RevisionStatus::of(true, Some(action)),
                RevisionStatus::of(false, Some(action))
            );
            let asking: Vec<_> = statuses
                .iter()
                .filter(|s| s.states().actions.contains(&action))
                .collect();
            assert!(
                asking
                    .iter()
                    .all(|&&s| s == RevisionStatus::of(false, Some(action))),
                "{action}: {asking:?}"
            );
            assert!(!asking.is_empty(), "{action}");
        }
        for open in [true, false] {
            let status = RevisionStatus::of(open, None);
            assert_eq!(status.states().undecided_open, open);
            assert_eq!(status.states().undecided_closed, !open);
        }
        assert_eq!(
            RevisionStatus::Rejected.states(),
            States {
                actions: vec![Action::Rejected, Action::Declined],
                undecided_open: false,
                undecided_closed: false,
            }
        );
        assert_eq!(
            RevisionStatus::Superseded.states(),
            States {
                actions: vec![Action::Invalid],
                undecided_open: false,
                undecided_closed: true,
            }
        );
    }
}
