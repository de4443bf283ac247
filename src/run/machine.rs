//! The run's transitions: each takes the state where it is and says (or does) what comes next,
//! with no I/O. The engine drives them: it calls the model, runs tools, persists every move
//! before announcing it, and emits chunks.

use std::collections::HashSet;

use super::*;
use crate::message::CalledTool;

/// The tool call ids a conversation has used, and the model's turns in it, kept up as it
/// grows: a run's loop asks once per new call and once per model call, and reading the whole
/// conversation each time made a long run quadratic.
#[derive(Debug, Default)]
pub struct CallIds {
    seen: usize,
    ids: HashSet<String>,
    turns: usize,
}

impl CallIds {
    /// Takes in the messages added since the last look (all of them, if `messages` is not the
    /// conversation looked at before: it is shorter).
    pub fn catch_up(&mut self, messages: &[Message]) {
        if messages.len() < self.seen {
            *self = Self::default();
        }
        for message in &messages[self.seen..] {
            if let Message::Assistant { tool_calls, .. } = message {
                self.ids
                    .extend(tool_calls.iter().map(|c| c.tool_call_id.clone()));
                self.turns += 1;
            }
        }
        self.seen = messages.len();
    }

    /// Whether the conversation has used `id`.
    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    /// How many turns the model has had in the conversation (its messages).
    pub fn turns(&self) -> usize {
        self.turns
    }
}

/// What the driver does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    CallModel,
    /// Run the step's call at this index (the first not yet run).
    RunTool(usize),
    /// Every call has run and some wait for a person: suspend the step.
    Suspend,
    /// Every call is done: report the results and decide whether the loop goes on.
    FinishStep,
    /// Suspended, waiting or failed: the stream ends here.
    Stop,
}

/// The model's answer to one call, folded from its events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    /// The stop reason, normalised (`stop`, `tool-calls`, `length`, ...).
    pub reason: String,
}

/// A step that just finished, for the chunks that report it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepEnd {
    pub step: Step,
    /// The text of the step's model answer.
    pub text: String,
    /// `None`: the loop goes on (the model is called again).
    pub wait: Option<WaitReason>,
}

/// Why a run refuses what it was asked to do where it stands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    #[error("run {run_id} is {status}, not waiting for a decision")]
    NotSuspended { run_id: String, status: String },
    #[error(
        "run {run_id} is waiting for a decision on {tool_call_id}; approve or reject it first"
    )]
    DecisionPending {
        run_id: String,
        tool_call_id: String,
    },
    /// No open call has that id (it was decided already, or never existed).
    #[error("nothing with tool call id {tool_call_id} is pending in run {run_id}")]
    NoOpenCall {
        run_id: String,
        tool_call_id: String,
    },
    #[error("run {run_id} was interrupted while it ran")]
    Interrupted { run_id: String },
    #[error("run {run_id} has nothing to continue: it is {status}")]
    NothingToContinue { run_id: String, status: String },
}

impl RunState {
    pub fn next_step(&self) -> NextStep {
        match &self.phase {
            Phase::CallModel => NextStep::CallModel,
            Phase::RunTools { step } => {
                match step
                    .calls
                    .iter()
                    .position(|c| c.status == CallStatus::NotRun)
                {
                    Some(index) => NextStep::RunTool(index),
                    None if step.first_pending().is_some() => NextStep::Suspend,
                    None => NextStep::FinishStep,
                }
            }
            Phase::Suspended { .. } | Phase::Waiting { .. } | Phase::Failed { .. } => {
                NextStep::Stop
            }
        }
    }

    /// A new stream (a resume, a message, a retry) gets `max_steps` model calls of its own.
    pub fn begin_stream(&mut self) {
        self.steps_this_stream = 0;
    }

    /// The model answered: with tool calls the step runs them, without it the run is finished.
    pub fn record_turn(&mut self, message_id: String, turn: Turn) {
        self.steps_this_stream += 1;
        if let Some(usage) = turn.usage {
            self.usage.add(usage);
        }
        self.messages.push(Message::Assistant {
            content: turn.text,
            tool_calls: turn.tool_calls.iter().map(CalledTool::from).collect(),
        });
        self.phase = if turn.tool_calls.is_empty() {
            Phase::Waiting {
                reason: WaitReason::Finished,
            }
        } else {
            Phase::RunTools {
                step: Step {
                    message_id,
                    mode: self.mode.clone(),
                    calls: turn
                        .tool_calls
                        .into_iter()
                        .map(|call| CallState {
                            call,
                            status: CallStatus::NotRun,
                        })
                        .collect(),
                },
            }
        };
    }

    /// The model call failed: the next message or a retry calls it again.
    pub fn fail(&mut self, error: ChunkError) {
        self.phase = Phase::Failed { error };
    }

    /// Records what the step's call at `index` came to.
    pub fn settle_call(&mut self, index: usize, status: CallStatus) {
        if let Phase::RunTools { step } = &mut self.phase {
            if let Some(call) = step.calls.get_mut(index) {
                call.status = status;
            }
        }
    }

    /// Every call has run and at least one waits for a person.
    pub fn suspend(&mut self) {
        if let Phase::RunTools { step } = &self.phase {
            if step.first_pending().is_some() {
                let step = step.clone();
                self.phase = Phase::Suspended { step };
            }
        }
    }

    /// Every call is done: the results join the conversation, and the run goes on to the model,
    /// or waits (for the user's feedback after a rejection without it, or after `max_steps`).
    pub fn finish_step(&mut self, wait_for_user: bool) -> Option<StepEnd> {
        let Phase::RunTools { step } = &self.phase else {
            return None;
        };
        let step = step.clone();
        for entry in &step.calls {
            if let CallStatus::Done { outcome } = &entry.status {
                self.messages.push(Message::Tool {
                    tool_call_id: entry.call.tool_call_id.clone(),
                    tool_name: entry.call.tool_name.clone(),
                    result: outcome.for_model(),
                });
            }
        }
        let wait = if wait_for_user {
            Some(WaitReason::Feedback)
        } else if self.steps_this_stream >= self.max_steps {
            Some(WaitReason::MaxSteps)
        } else {
            None
        };
        self.phase = match wait {
            Some(reason) => Phase::Waiting { reason },
            None => Phase::CallModel,
        };
        let text = self
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::Assistant { content, .. } => Some(content.clone()),
                _ => None,
            })
            .unwrap_or_default();
        Some(StepEnd { step, text, wait })
    }

    /// The open calls of a suspended step, in call order.
    pub fn open_calls(&self) -> Vec<&CallState> {
        match &self.phase {
            Phase::Suspended { step } => step
                .calls
                .iter()
                .filter(|c| c.status.is_pending())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The open call a decision is for: the one named, else the earliest not yet `decided`.
    pub fn target_call(
        &self,
        tool_call_id: Option<&str>,
        decided: &dyn Fn(&str) -> bool,
    ) -> Result<&CallState, RunError> {
        let run_id = self.run_id.clone();
        let Phase::Suspended { .. } = &self.phase else {
            return Err(RunError::NotSuspended {
                run_id,
                status: self.phase.status().to_string(),
            });
        };
        let open = self.open_calls();
        let found = match tool_call_id {
            Some(id) => open.iter().find(|c| c.call.tool_call_id == id),
            None => open.iter().find(|c| !decided(&c.call.tool_call_id)),
        };
        match (found, tool_call_id, open.first()) {
            (Some(call), _, _) => Ok(call),
            (None, Some(id), _) => Err(RunError::NoOpenCall {
                run_id,
                tool_call_id: id.to_owned(),
            }),
            // All decided, but the process that decided died before applying them.
            (None, None, Some(first)) => Err(RunError::NoOpenCall {
                run_id,
                tool_call_id: first.call.tool_call_id.clone(),
            }),
            (None, None, None) => Err(RunError::NotSuspended {
                run_id,
                status: "already decided".into(),
            }),
        }
    }

    /// Refuses anything but a decision while a step waits for one.
    pub fn require_no_open_step(&self) -> Result<(), RunError> {
        match &self.phase {
            Phase::Suspended { step } => Err(RunError::DecisionPending {
                run_id: self.run_id.clone(),
                tool_call_id: step
                    .first_pending()
                    .map(|c| c.call.tool_call_id.clone())
                    .unwrap_or_default(),
            }),
            _ => Ok(()),
        }
    }

    /// A decided call of the suspended step came to `status`.
    pub fn resolve_call(&mut self, tool_call_id: &str, status: CallStatus) {
        if let Phase::Suspended { step } = &mut self.phase {
            if let Some(call) = step
                .calls
                .iter_mut()
                .find(|c| c.call.tool_call_id == tool_call_id && c.status.is_pending())
            {
                call.status = status;
            }
        }
    }

    /// After decisions were applied: with nothing left open, the step runs on.
    pub fn resume_step(&mut self) {
        if let Phase::Suspended { step } = &self.phase {
            if step.first_pending().is_none() {
                let step = step.clone();
                self.phase = Phase::RunTools { step };
            }
        }
    }

    /// The user's next message; only a run that waits or failed takes one.
    pub fn accept_message(&mut self, text: &str) -> Result<(), RunError> {
        self.require_no_open_step()?;
        if let Phase::CallModel | Phase::RunTools { .. } = self.phase {
            return Err(RunError::Interrupted {
                run_id: self.run_id.clone(),
            });
        }
        self.messages.push(Message::user(text));
        self.begin_stream();
        self.phase = Phase::CallModel;
        Ok(())
    }

    /// How a stopped run carries on: a failed model call is made again; an interrupted run goes
    /// on from where it was. A waiting run has nothing to continue.
    pub fn prepare_continue(&mut self) -> Result<(), RunError> {
        self.begin_stream();
        match &self.phase {
            Phase::Failed { .. } => {
                self.phase = Phase::CallModel;
                Ok(())
            }
            Phase::CallModel | Phase::RunTools { .. } | Phase::Suspended { .. } => Ok(()),
            Phase::Waiting { .. } => Err(RunError::NothingToContinue {
                run_id: self.run_id.clone(),
                status: self.phase.status().to_string(),
            }),
        }
    }
}

/// A tool call id not used before in the run: the model's own, or it with a `-N` suffix. Models
/// reuse ids (some decoders number them afresh each answer), and a decision must belong to one
/// call of one step.
pub fn unique_call_id(id: &str, used: impl Fn(&str) -> bool) -> String {
    let base = if id.is_empty() { "call" } else { id };
    if !id.is_empty() && !used(base) {
        return base.to_owned();
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|candidate| !used(candidate))
        .unwrap_or_else(|| base.to_owned())
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use serde_json::json;

    use super::*;

    fn state() -> RunState {
        RunState {
            schema_version: SCHEMA_VERSION,
            run_id: "r".into(),
            agent_id: "a".into(),
            model: "demo".into(),
            workspace: "/ws".into(),
            plans_dir: ".plandesk/plans".into(),
            mode: "plan".into(),
            auto_approve: false,
            max_steps: 2,
            steps_this_stream: 0,
            usage: Usage::default(),
            phase: Phase::CallModel,
            messages: vec![Message::user("do it")],
            stored: Stored::default(),
        }
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            tool_call_id: id.into(),
            tool_name: "t".into(),
            args: json!({}),
        }
    }

    fn turn(ids: &[&str]) -> Turn {
        Turn {
            text: "thinking".into(),
            tool_calls: ids.iter().map(|id| call(id)).collect(),
            usage: None,
            reason: "tool-calls".into(),
        }
    }

    fn done() -> CallStatus {
        CallStatus::Done {
            outcome: Outcome::Result(json!({"ok": true})),
        }
    }

    fn suspended() -> CallStatus {
        CallStatus::Suspended {
            suspend_payload: json!({}),
        }
    }

    #[test]
    fn an_answer_without_tools_finishes_the_run() {
        let mut s = state();
        assert_eq!(s.next_step(), NextStep::CallModel);
        s.record_turn("m1".into(), turn(&[]));
        assert_eq!(
            s.phase,
            Phase::Waiting {
                reason: WaitReason::Finished
            }
        );
        assert_eq!(s.next_step(), NextStep::Stop);
        assert_eq!(s.phase.status(), RunStatus::Finished);
    }

    #[test]
    fn tools_run_in_order_then_the_step_finishes_and_the_model_is_called_again() {
        let mut s = state();
        s.record_turn("m1".into(), turn(&["a", "b"]));
        assert_eq!(s.next_step(), NextStep::RunTool(0));
        s.settle_call(0, done());
        assert_eq!(s.next_step(), NextStep::RunTool(1));
        s.settle_call(1, done());
        assert_eq!(s.next_step(), NextStep::FinishStep);
        let end = s.finish_step(false).unwrap();
        assert_eq!(end.wait, None);
        assert_eq!(end.text, "thinking");
        assert_eq!(s.phase, Phase::CallModel);
        let tool_messages = s
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool { .. }))
            .count();
        assert_eq!(tool_messages, 2, "every result joins the conversation");
    }

    #[test]
    fn max_steps_stops_the_stream_and_a_new_stream_counts_again() {
        let mut s = state();
        for step in 0..2 {
            s.record_turn(format!("m{step}"), turn(&["x"]));
            s.settle_call(0, done());
            s.finish_step(false);
        }
        assert_eq!(
            s.phase,
            Phase::Waiting {
                reason: WaitReason::MaxSteps
            }
        );
        assert_eq!(s.phase.status(), RunStatus::Finished);
        s.accept_message("go on").unwrap();
        assert_eq!(s.steps_this_stream, 0);
        assert_eq!(s.phase, Phase::CallModel);
    }

    #[test]
    fn a_pending_call_suspends_the_step_and_refuses_messages() {
        let mut s = state();
        s.record_turn("m1".into(), turn(&["plan", "read"]));
        s.settle_call(0, suspended());
        s.settle_call(1, done());
        assert_eq!(s.next_step(), NextStep::Suspend);
        s.suspend();
        assert_eq!(s.phase.status(), RunStatus::Suspended);
        assert_eq!(s.next_step(), NextStep::Stop);
        assert_eq!(
            s.accept_message("hi").unwrap_err(),
            RunError::DecisionPending {
                run_id: "r".into(),
                tool_call_id: "plan".into()
            }
        );
        assert_eq!(s.open_calls().len(), 1);
    }

    #[test]
    fn decisions_target_the_named_or_earliest_undecided_call() {
        let mut s = state();
        s.record_turn("m1".into(), turn(&["p1", "p2"]));
        s.settle_call(0, suspended());
        s.settle_call(1, CallStatus::AwaitingApproval);
        s.suspend();
        let none = |_: &str| false;
        assert_eq!(s.target_call(None, &none).unwrap().call.tool_call_id, "p1");
        let first_decided = |id: &str| id == "p1";
        assert_eq!(
            s.target_call(None, &first_decided)
                .unwrap()
                .call
                .tool_call_id,
            "p2"
        );
        assert_eq!(
            s.target_call(Some("p2"), &none).unwrap().call.tool_call_id,
            "p2"
        );
        assert!(matches!(
            s.target_call(Some("nope"), &none),
            Err(RunError::NoOpenCall { .. })
        ));
        let all = |_: &str| true;
        assert!(
            matches!(s.target_call(None, &all), Err(RunError::NoOpenCall { tool_call_id, .. }) if tool_call_id == "p1"),
            "all decided but not applied: the first is named"
        );
    }

    #[test]
    fn resolving_every_open_call_resumes_the_step() {
        let mut s = state();
        s.record_turn("m1".into(), turn(&["p1", "p2"]));
        s.settle_call(0, suspended());
        s.settle_call(1, suspended());
        s.suspend();
        s.resolve_call("p1", done());
        s.resume_step();
        assert_eq!(s.phase.status(), RunStatus::Suspended, "p2 still waits");
        s.resolve_call("p2", done());
        s.resume_step();
        assert_eq!(s.next_step(), NextStep::FinishStep);
    }

    #[test]
    fn a_rejection_without_feedback_makes_the_run_wait_for_the_user() {
        let mut s = state();
        s.record_turn("m1".into(), turn(&["p"]));
        s.settle_call(0, done());
        let end = s.finish_step(true).unwrap();
        assert_eq!(end.wait, Some(WaitReason::Feedback));
        assert_eq!(s.phase.status(), RunStatus::Waiting);
        s.accept_message("make it smaller").unwrap();
        assert_eq!(s.next_step(), NextStep::CallModel);
    }

    #[test]
    fn continuing_retries_a_failure_and_refuses_a_waiting_run() {
        let mut s = state();
        s.fail(ChunkError {
            code: "model-timeout".into(),
            message: "slow".into(),
        });
        assert_eq!(s.phase.status(), RunStatus::Failed);
        s.prepare_continue().unwrap();
        assert_eq!(s.phase, Phase::CallModel);
        s.record_turn("m".into(), turn(&[]));
        assert!(matches!(
            s.prepare_continue(),
            Err(RunError::NothingToContinue { .. })
        ));
    }

    #[test]
    fn a_message_to_a_run_mid_step_says_it_was_interrupted() {
        let mut s = state();
        s.record_turn("m".into(), turn(&["a"]));
        assert!(matches!(
            s.accept_message("hello"),
            Err(RunError::Interrupted { .. })
        ));
    }

    #[test]
    fn reused_ids_are_made_unique() {
        let mut used: HashSet<String> = ["call_0", "call_0-2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(unique_call_id("call_1", |id| used.contains(id)), "call_1");
        assert_eq!(unique_call_id("call_0", |id| used.contains(id)), "call_0-3");
        used.insert("call".into());
        assert_eq!(unique_call_id("", |id| used.contains(id)), "call-2");
    }

    #[test]
    fn used_ids_span_every_step() {
        let mut s = state();
        let mut used = CallIds::default();
        s.record_turn("m1".into(), turn(&["a"]));
        used.catch_up(&s.messages);
        assert!(used.contains("a") && !used.contains("b"));
        s.settle_call(0, done());
        s.finish_step(false);
        s.record_turn("m2".into(), turn(&["b"]));
        used.catch_up(&s.messages);
        assert!(used.contains("a") && used.contains("b"));
        assert!(!used.contains("c"));
        assert_eq!(used.turns(), 2);
        // Another conversation, shorter: looked at anew.
        used.catch_up(&state().messages);
        assert!(!used.contains("a"));
        assert_eq!(used.turns(), 0);
    }
}
