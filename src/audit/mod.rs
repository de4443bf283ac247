//! The audit trail, apart from where it is stored: its entries and their hash chain (each
//! entry carries the SHA-256 of the entry before it and of its own fields, so an entry changed
//! or taken from between others shows), and its head recorded outside the database
//! (`anchor`), which shows entries cut from its end. The store appends [`AuditEntry`]s; the
//! hash is made here, once. The review core checks a trail (`review::audit`).

mod anchor;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::actor::Actor;
use crate::clock::Millis;
use crate::vocabulary::AuditKind;

pub use anchor::{Advance, AnchorError, AuditAnchor, AuditHead};

/// One entry of the audit trail (read back from an export too: the same fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRow {
    pub id: i64,
    pub at: Millis,
    pub actor: String,
    pub process: String,
    pub run_id: String,
    pub kind: String,
    pub revision_sha: Option<String>,
    pub data: Value,
    pub prev_hash: String,
    pub hash: String,
}

impl AuditRow {
    /// The hash this entry must carry: SHA-256 over the previous entry's hash and this entry's
    /// fields, each length-prefixed (so no two different entries hash alike).
    pub fn expected_hash(&self) -> String {
        audit_hash(
            &self.prev_hash,
            self.id,
            self.at,
            &self.actor,
            &self.process,
            &self.run_id,
            &self.kind,
            self.revision_sha.as_deref(),
            &self.data,
        )
    }
}

/// What an audit entry says, before a store numbers it and chains it to the one before. Both
/// stores append these (each in its own dialect); the hash is made here, once.
#[derive(Debug)]
pub(crate) struct AuditEntry<'a> {
    pub at: Millis,
    pub actor: &'a str,
    pub process: &'a str,
    pub run_id: &'a str,
    pub kind: AuditKind,
    pub revision_sha: Option<&'a str>,
    pub data: Value,
}

impl<'a> AuditEntry<'a> {
    /// The entry of a run's switch from mode `before` to `to` by `by`; `None` when it is none
    /// (the same mode, or a run's first, which is set rather than switched).
    pub(crate) fn mode_switch(
        run_id: &'a str,
        before: &str,
        to: &str,
        at: Millis,
        by: &'a Actor,
    ) -> Option<Self> {
        (!before.is_empty() && before != to).then(|| AuditEntry {
            at,
            actor: &by.name,
            process: &by.process,
            run_id,
            kind: AuditKind::ModeSwitched,
            revision_sha: None,
            data: serde_json::json!({"from": before, "to": to}),
        })
    }

    /// The hash this entry carries as entry `id`, after the entry whose hash is `prev`.
    pub(crate) fn hash(&self, prev: &str, id: i64) -> String {
        audit_hash(
            prev,
            id,
            self.at,
            self.actor,
            self.process,
            self.run_id,
            self.kind.as_str(),
            self.revision_sha,
            &self.data,
        )
    }
}

/// The hash of an audit entry (see [`AuditRow::expected_hash`]); the first entry's `prev` is
/// the empty string.
#[allow(clippy::too_many_arguments)]
pub fn audit_hash(
    prev: &str,
    id: i64,
    at: Millis,
    actor: &str,
    process: &str,
    run_id: &str,
    kind: &str,
    revision_sha: Option<&str>,
    data: &Value,
) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let data = data.to_string();
    let id = id.to_string();
    let at = at.to_string();
    let fields = [
        prev,
        id.as_str(),
        at.as_str(),
        actor,
        process,
        run_id,
        kind,
        revision_sha.unwrap_or("-"),
        data.as_str(),
    ];
    for field in fields {
        hasher.update((field.len() as u64).to_le_bytes());
        hasher.update(field.as_bytes());
    }
    hex::encode(hasher.finalize())
}

/// An audit entry to append.
#[derive(Debug, Clone)]
pub struct NewAudit<'a> {
    pub run_id: &'a str,
    pub kind: AuditKind,
    pub revision_sha: Option<&'a str>,
    pub data: Value,
    pub by: &'a Actor,
    pub at: Millis,
}

impl NewAudit<'_> {
    /// The entry it appends: `by` is the actor and the process.
    pub(crate) fn entry(&self) -> AuditEntry<'_> {
        AuditEntry {
            at: self.at,
            actor: &self.by.name,
            process: &self.by.process,
            run_id: self.run_id,
            kind: self.kind,
            revision_sha: self.revision_sha,
            data: self.data.clone(),
        }
    }
}

/// What an audit entry's data says the agent was answered, word for word: its `answer`, with
/// the body of the revision it names put back as the `submittedPlan.plan` when it says
/// `"answerPlan": "revision"` (see [`NewDecision::answer_without_plan`]). `None` if the entry
/// records no answer, or names a plan without being given one. The caller gives the body of the
/// revision whose hash is the entry's `revision_sha` (`Review::verify_audit` checks that each
/// such revision still hashes to it).
pub fn answer_with_plan(data: &Value, revision_body: Option<&str>) -> Option<String> {
    let answer = data.get("answer")?.as_str()?;
    if data.get("answerPlan").and_then(Value::as_str) != Some(ANSWER_PLAN_IS_REVISION) {
        return Some(answer.to_owned());
    }
    let mut answer: Value = serde_json::from_str(answer).ok()?;
    *answer.get_mut("submittedPlan")?.get_mut("plan")? = Value::from(revision_body?);
    Some(answer.to_string())
}

/// The value of an audit entry's `answerPlan` when its answer's plan is its revision's body.
pub const ANSWER_PLAN_IS_REVISION: &str = "revision";
