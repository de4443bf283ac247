//! A decision: the row it is stored as, what recording one takes, its resume data stored with
//! its plan once (in the decided revision) and read back whole, and the check that it was made
//! on the revision that waits.

use serde::Serialize;
use serde_json::Value;

use crate::actor::Actor;
use crate::audit::ANSWER_PLAN_IS_REVISION;
use crate::clock::Millis;
use crate::store::StoreError;
use crate::vocabulary::Action;

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
    /// the revision by its hash. [`crate::audit::answer_with_plan`] rebuilds the exact text.
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
