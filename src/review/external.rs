//! Plans from outside agents (Claude Code, Codex, Gemini CLI, any MCP client): each agent
//! session is a run of its own, each plan an item on it, consecutive plans of one file one
//! thread. The agent's hook submits, then waits here until a person decides, keeping a lease
//! on its item; an item whose waiter is gone is closed as abandoned, and one left past its
//! deadline is answered with a denial (fail closed, never open).

use std::time::Duration;

use serde_json::{json, Value};

use super::{plan_sha256, Decision, Review, ReviewError, ReviewItem, ACCEPT_EDITS};
use crate::audit::NewAudit;
use crate::clock::Millis;
use crate::lease::{self, LEASE};
use crate::store::{Actor, Lease, NewDecision, NewRun, OpenItem, PlanText, Source, StoreError};
use crate::tool::submit_plan::split_plan;
use crate::vocabulary::{Action, AuditKind, ItemKind};

/// A plan an outside agent hands in.
#[derive(Debug, Clone)]
pub struct ExternalPlan {
    pub source: Source,
    /// The agent's working directory.
    pub cwd: String,
    /// What the session is about, for the inbox (the user's request, or a description).
    pub prompt: String,
    /// The agent's own name for the step (`ExitPlanMode`, `exit_plan_mode`, `submit_plan`).
    pub tool_name: String,
    /// The plan's file (or a name for it): consecutive plans with one path are one thread.
    pub path: String,
    /// The plan as the agent will act on it.
    pub text: String,
    /// The agent's own id for this plan, when it has one: a plan already submitted under it is
    /// refused (`AlreadyDecided`), so a repeated hook call is not a new revision.
    pub item_id: Option<String>,
    /// Who sent it, when the sender is known (the name of the token `plandesk serve` let it
    /// in with); the audit trail says `agent` otherwise.
    pub submitter: Option<String>,
    /// The plan's file on this machine, where a reviewer's edit may be written back; `None`
    /// when there is none Plandesk may write (a plan received over the network, or one the agent
    /// keeps elsewhere than its workspace and its plans folder).
    pub file: Option<PlanFile>,
}

/// A plan file an edit may be written over: `name`, a relative path inside `root`, the folder
/// the agent works in (its workspace or its own plans folder). The edit is written through
/// [`Workspace`](crate::workspace::Workspace) (no link followed out of `root`) and only while
/// the file still holds the plan submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanFile {
    pub root: std::path::PathBuf,
    pub name: String,
}

impl PlanFile {
    /// The file at absolute `path`, if it lies inside one of `roots` (compared part by part,
    /// with no `.` or `..` in either): the first such root, and the path inside it.
    pub fn inside(path: &std::path::Path, roots: &[std::path::PathBuf]) -> Option<Self> {
        use std::path::Component;
        let plain = |p: &std::path::Path| {
            p.is_absolute()
                && p.components()
                    .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
        };
        if !plain(path) {
            return None;
        }
        roots.iter().filter(|root| plain(root)).find_map(|root| {
            let name = path.strip_prefix(root).ok()?.to_str()?;
            (!name.is_empty()).then(|| PlanFile {
                root: root.clone(),
                name: name.to_owned(),
            })
        })
    }

    /// As kept with the open item.
    fn to_json(&self) -> Value {
        json!({"root": self.root.display().to_string(), "name": self.name})
    }

    /// As read back from an open item's arguments (`None`: the item has none).
    pub(crate) fn from_args(args: &Value) -> Option<Self> {
        let file = args.get("planFile")?;
        Some(PlanFile {
            root: std::path::PathBuf::from(file.get("root")?.as_str()?),
            name: file.get("name")?.as_str()?.to_owned(),
        })
    }
}

/// A submitted plan whose agent waits for the decision.
#[derive(Debug)]
pub struct Waiting {
    pub item: ReviewItem,
    waiter: String,
}

impl Waiting {
    pub fn run_id(&self) -> &str {
        &self.item.run_id
    }

    pub fn tool_call_id(&self) -> &str {
        &self.item.tool_call_id
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        // No longer counted as live in this process: a sweep may close the item at once.
        lease::let_go(&self.waiter);
    }
}

/// What happens while a waiter waits, for its host to act on (a reminder notification).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitEvent {
    /// The deadline is near and nobody has decided.
    Reminder { left: Duration },
}

impl Review {
    /// Records an outside agent's plan as a new item of its session's run, held by this
    /// process until decided.
    pub async fn submit(&self, plan: &ExternalPlan) -> Result<Waiting, ReviewError> {
        let now = self.clock.now();
        let new_id = uuid::Uuid::new_v4().simple().to_string();
        let run = NewRun {
            id: &new_id[..16],
            prompt: &plan.prompt,
            model: plan.source.kind.as_str(),
            workspace: &plan.cwd,
            source: &plan.source,
        };
        let split = split_plan(&plan.text);
        let tool_call_id = plan.item_id.clone().unwrap_or_else(|| {
            format!("plan-{}", &uuid::Uuid::new_v4().simple().to_string()[..12])
        });
        let item = OpenItem {
            tool_call_id,
            kind: ItemKind::Plan,
            tool_name: plan.tool_name.clone(),
            args: match &plan.file {
                Some(file) => json!({"path": plan.path, "planFile": file.to_json()}),
                None => json!({"path": plan.path}),
            },
            plan: Some(PlanText {
                sha256: plan_sha256(&split.title, &split.plan),
                path: plan.path.clone(),
                title: split.title,
                body: split.plan,
            }),
        };
        let waiter = lease::new_holder();
        let held = Lease {
            holder: &waiter,
            until: now + LEASE,
            now,
        };
        let submitter = Actor {
            name: plan.submitter.clone().unwrap_or_else(|| "agent".into()),
            process: self.actor.process.clone(),
        };
        match self.store.open_item(&run, &item, &held, &submitter).await {
            Ok(row) => Ok(Waiting {
                item: row.into(),
                waiter,
            }),
            Err(err) => {
                lease::let_go(&waiter);
                Err(err.into())
            }
        }
    }

    /// Waits until the item is decided, its lease renewed meanwhile: woken by this process's
    /// one waker when its item is decided, it reads the store only then. With a `deadline` (ms
    /// since the epoch), an undecided item is then closed as expired and that is the decision;
    /// `on_event` hears of the reminder `remind_before` the deadline.
    pub async fn wait(
        &self,
        waiting: &Waiting,
        deadline: Option<Millis>,
        remind_before: Duration,
        on_event: &mut (dyn FnMut(WaitEvent) + Send),
    ) -> Result<Decision, ReviewError> {
        let (run_id, call_id) = (waiting.run_id(), waiting.tool_call_id());
        let registered = self
            .waiters
            .register(&self.store, &self.clock, run_id, call_id, &waiting.waiter)
            .await?;
        let remind_before = remind_before.as_millis() as Millis;
        let mut reminded = false;
        let mut look = true;
        loop {
            if look {
                if let Some(decision) = self.decision(run_id, call_id).await? {
                    return Ok(decision);
                }
            }
            // Until the deadline, or the reminder before it.
            let mut sleep = None;
            if let Some(deadline) = deadline {
                let left = deadline - self.clock.now();
                if left <= 0 {
                    match self.close(run_id, call_id, Action::Expired).await {
                        Ok(decision) => return Ok(decision),
                        // Decided at the last moment: that decision stands.
                        Err(ReviewError::Store(StoreError::AlreadyDecided { .. })) => {
                            look = true;
                            continue;
                        }
                        Err(err) => return Err(err),
                    }
                }
                if !reminded && left <= remind_before {
                    reminded = true;
                    on_event(WaitEvent::Reminder {
                        left: Duration::from_millis(left as u64),
                    });
                }
                let until = if reminded { left } else { left - remind_before };
                sleep = Some(Duration::from_millis(until.max(1) as u64));
            }
            let timer = async {
                match sleep {
                    Some(sleep) => tokio::time::sleep(sleep).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = registered.woken() => look = true,
                () = timer => look = false,
            }
        }
    }

    /// Records what the agent was answered, word for word, in the audit trail.
    pub async fn record_answer(&self, waiting: &Waiting, text: &str) -> Result<(), ReviewError> {
        let sha = waiting.item.revision.as_ref().map(|r| r.sha256.as_str());
        self.store
            .append_audit(&NewAudit {
                run_id: waiting.run_id(),
                kind: AuditKind::Answered,
                revision_sha: sha,
                data: json!({"toolCallId": waiting.tool_call_id(), "answer": text}),
                by: &self.actor,
                at: self.clock.now(),
            })
            .await?;
        Ok(())
    }

    /// The agent stopped waiting (its hook was told to stop): the item is closed as abandoned.
    pub async fn abandon(&self, waiting: &Waiting) -> Result<(), ReviewError> {
        match self
            .close(waiting.run_id(), waiting.tool_call_id(), Action::Abandoned)
            .await
        {
            Ok(_) | Err(ReviewError::Store(StoreError::AlreadyDecided { .. })) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// Closes the open items of outside sessions whose waiter is gone, as abandoned.
    pub(super) async fn sweep_abandoned(&self) -> Result<(), ReviewError> {
        let now = self.clock.now();
        for item in self.store.waited_items().await? {
            if lease::is_held(item.waiter.as_ref(), now) {
                continue;
            }
            match self
                .close(&item.run_id, &item.tool_call_id, Action::Abandoned)
                .await
            {
                Ok(_)
                | Err(ReviewError::Store(
                    StoreError::AlreadyDecided { .. } | StoreError::NotPending { .. },
                )) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// An outside agent's session went on without Plandesk's answer (its own dialog answered
    /// the plan): each of the session's open items is closed as answered in the agent, so it
    /// leaves the inbox and a decision on it here is refused. How many were.
    pub async fn answered_in_agent(&self, source: &Source) -> Result<usize, ReviewError> {
        let mut closed = 0;
        for item in self.store.open_items(None).await? {
            if item.source != *source {
                continue;
            }
            let by = source.kind.agent_name();
            match self
                .close_by(
                    &item.run_id,
                    &item.tool_call_id,
                    Action::AnsweredInAgent,
                    by,
                )
                .await
            {
                Ok(_) => closed += 1,
                Err(ReviewError::Store(
                    StoreError::AlreadyDecided { .. } | StoreError::NotPending { .. },
                )) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(closed)
    }

    async fn close(
        &self,
        run_id: &str,
        tool_call_id: &str,
        action: Action,
    ) -> Result<Decision, ReviewError> {
        // Nobody decided: Plandesk closes it, in the waiting (or sweeping) process.
        self.close_by(run_id, tool_call_id, action, "plandesk")
            .await
    }

    /// Closes an item undecided by a person: `by` (Plandesk, or the agent) closed it.
    async fn close_by(
        &self,
        run_id: &str,
        tool_call_id: &str,
        action: Action,
        by: &str,
    ) -> Result<Decision, ReviewError> {
        let data: Value = json!({"action": action});
        let by = Actor {
            name: by.into(),
            process: self.actor.process.clone(),
        };
        let row = self
            .store
            .record_decision(&NewDecision {
                run_id,
                tool_call_id,
                action,
                feedback: None,
                resume_data: &data,
                expect_sha: None,
                at: self.clock.now(),
                by: &by,
                answer: None,
                answer_without_plan: None,
                mode_after: None,
            })
            .await?;
        Ok(row.into())
    }

    /// Records a decision on an outside agent's item (a person's, through a host). `text` is
    /// the feedback of a rejection, or the notes of an approval; `accept_edits`, with an
    /// approval, lets the agent edit files without asking from then on (Claude Code's).
    pub async fn decide_external(
        &self,
        run_id: &str,
        tool_call_id: &str,
        approve: bool,
        text: Option<&str>,
        expect_sha: Option<&str>,
        accept_edits: bool,
    ) -> Result<Decision, ReviewError> {
        let text = text.map(str::trim).filter(|f| !f.is_empty());
        // Open line comments go with the feedback, quoting their lines.
        let compiled = if approve {
            None
        } else {
            match self.open_revision(run_id, tool_call_id).await? {
                Some(revision) => self.compiled_feedback(&revision, text).await?,
                None => None,
            }
        };
        let text = compiled.as_deref().or(text);
        let action = if approve {
            Action::Approved
        } else {
            Action::Rejected
        };
        let mut data = json!({"action": action});
        if let Some(text) = text {
            data[if approve { "notes" } else { "feedback" }] = json!(text);
        }
        if approve && accept_edits {
            data[ACCEPT_EDITS] = json!(true);
        }
        let by = self.actor().await;
        let row = self
            .record(&NewDecision {
                run_id,
                tool_call_id,
                action,
                feedback: text,
                resume_data: &data,
                expect_sha,
                at: self.clock.now(),
                by: &by,
                // The agent's own answer is recorded by its hook when it gives it.
                answer: None,
                answer_without_plan: None,
                mode_after: None,
            })
            .await?;
        Ok(row.into())
    }
}
