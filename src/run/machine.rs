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
    /// Several calls wait, and the decision named none of them.
    #[error(
        "several calls wait for a decision in run {run_id} ({calls}); name one with \
         --tool-call-id or --revision"
    )]
    SeveralOpen { run_id: String, calls: String },
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
mod tests;
