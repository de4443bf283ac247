//! Outside agents as plan sources: Claude Code, Codex and Gemini CLI through their hooks, any
//! MCP client through `plandesk mcp`. Each translates its agent's protocol into an
//! [`ExternalPlan`] for the review core and the decision back into its agent's answer; they
//! share how a plan is submitted and waited on (here), and fail closed: any failure of ours is
//! answered as "not approved", never let through.

pub mod after;
pub mod claude;
pub mod codex;
pub mod copilot;
pub mod deadline;
pub mod gemini;
pub mod held;
mod input;
pub mod install;
pub mod kimi;
pub mod mcp;
mod notify;
pub mod opencode;
pub mod pi;
pub mod presence;
pub mod script;
pub mod serve;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::engine::Engine;
use crate::review::{Decision, ExternalPlan, PlanFile, ReviewError, WaitEvent};
use crate::tool::submit_plan::{
    approval_addendum, present_edit_text, rejected_with_feedback_text, REJECTED_NO_FEEDBACK_TEXT,
};
use crate::vocabulary::{Action, SourceKind};
pub(crate) use input::{
    check_event, first_user_request, first_user_request_in, hook_input, read_plan_file,
    read_settings_file, read_tail,
};
pub use input::{read_stdin, MAX_HOOK_INPUT};

/// What the agent is told when nobody decided before the deadline.
pub const EXPIRED_TEXT: &str = "No decision was made on this plan in time, so it is not \
     approved. Stop now and wait for the user's instructions.";

/// Why `plan`, which an agent's plan tool `tool` presents, cannot be reviewed: empty, or over
/// the size Plandesk takes; the model reads it, told where the whole plan goes (`place`: "in
/// `plan`", the tool's argument, or "in the plan file"). `None`: it can be.
pub(crate) fn unusable_plan(plan: &str, tool: &str, place: &str) -> Option<String> {
    let max = crate::workspace::MAX_FILE_BYTES;
    if plan.trim().is_empty() {
        return Some(format!(
            "The plan is empty. Call {tool} again with the complete plan {place}."
        ));
    }
    (plan.len() as u64 > max).then(|| {
        format!(
            "The plan is {} bytes; Plandesk takes plans of at most {max}. Shorten it and call \
             {tool} again.",
            plan.len()
        )
    })
}

/// An agent's folder: `$VAR` when set (not empty), else `SUB` in the home folder. `env` reads
/// the environment.
pub(crate) fn agent_dir(
    env: &impl Fn(&str) -> Option<OsString>,
    var: &str,
    sub: &str,
) -> Option<PathBuf> {
    let path = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    path(var).or_else(|| path("HOME").map(|home| home.join(sub)))
}

/// Where a reviewer's edit of a plan may be written back to its file: the agent's own plans
/// folder (`plans`), and the session's workspace `cwd` unless that is `/` or the home folder
/// (too wide: any file there could be named).
pub(crate) fn plan_roots(cwd: &str, plans: Option<PathBuf>) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let workspace = PathBuf::from(cwd);
    let too_wide = workspace.parent().is_none() || Some(&workspace) == home.as_ref();
    plans
        .into_iter()
        .chain((!too_wide).then_some(workspace))
        .collect()
}

/// What the inbox says a plan is about: the request the person typed (`request`, on one line,
/// at most 200 characters), else "AGENT session in CWD".
pub(crate) fn plan_prompt(request: Option<&str>, agent: &str, cwd: &str) -> String {
    request
        .map(|request| crate::text::short(request, 200))
        .filter(|request| !request.is_empty())
        .unwrap_or_else(|| format!("{agent} session in {}", crate::text::short(cwd, 200)))
}

/// The contract's rejection text, for agents that revise without calling `submit_plan`.
fn revise_text(feedback: &str) -> String {
    rejected_with_feedback_text(feedback).replace(
        "submit again with submit_plan.",
        "present it for review again.",
    )
}

/// What a hook call (or a plugin's, or an extension's) asks of Plandesk.
#[derive(Debug)]
pub enum Call {
    /// A plan to review.
    Review(Box<ExternalPlan>),
    /// Not the agent's plan tool: say nothing, and the agent goes on as it would.
    NotOurs,
    /// No plan Plandesk can take (none written, empty, too large, not where it may be): deny,
    /// telling the model what to do.
    Unusable(String),
}

/// An approval as an agent gets it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Approval {
    /// The reviewer's notes.
    pub notes: Option<String>,
    /// The plan as the reviewer changed it, if they did.
    pub edit: Option<EditedPlan>,
    /// The agent may edit files without asking from now on (only Claude Code's approvals say
    /// so; see `Verdict::accept_edits`).
    pub accept_edits: bool,
}

/// A plan a reviewer changed before approving it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditedPlan {
    /// The whole plan as approved (title heading and body).
    pub markdown: String,
    pub by: String,
    /// Unified diff from the agent's plan.
    pub diff: String,
}

impl Approval {
    /// What follows the plan or the approval text for the agent: the edit, then the notes.
    pub fn addendum(&self) -> String {
        approval_addendum(
            self.edit.as_ref().map(|e| (e.by.as_str(), e.diff.as_str())),
            self.notes.as_deref(),
        )
    }
}

/// A decision as every agent's answer is built from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Approved, with the reviewer's notes and edit if any.
    Approve(Approval),
    /// Rejected with feedback: the agent revises and submits again.
    Revise(String),
    /// Rejected without feedback: the agent stops and waits for the user.
    Wait,
    /// Nobody decided in time: not approved.
    Expired,
    /// The agent stopped waiting; nobody listens for an answer.
    Abandoned,
}

impl Answer {
    pub fn of(decision: &Decision) -> Self {
        match decision.action {
            Action::Approved => Answer::Approve(Approval {
                notes: decision
                    .feedback
                    .as_deref()
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned),
                edit: None,
                accept_edits: decision.resume_data.get(crate::review::ACCEPT_EDITS)
                    == Some(&serde_json::Value::Bool(true)),
            }),
            Action::Rejected | Action::Declined => match decision.feedback.as_deref() {
                Some(f) if !f.trim().is_empty() => Answer::Revise(f.trim().to_owned()),
                _ => Answer::Wait,
            },
            Action::Expired | Action::Invalid => Answer::Expired,
            // The agent took its own answer and no longer reads this one.
            Action::Abandoned | Action::AnsweredInAgent => Answer::Abandoned,
        }
    }

    /// What the model reads when the plan is not approved (the contract's texts). A plan
    /// closed while its agent still waits (its wait seen as given up, or answered in the
    /// agent) is not approved either.
    pub fn denial(&self) -> Option<String> {
        match self {
            Answer::Approve(_) => None,
            Answer::Abandoned => Some(NOT_REVIEWED_TEXT.to_owned()),
            Answer::Revise(feedback) => Some(revise_text(feedback)),
            Answer::Wait => Some(REJECTED_NO_FEEDBACK_TEXT.to_owned()),
            Answer::Expired => Some(EXPIRED_TEXT.to_owned()),
        }
    }
}

/// What an agent reads of a plan closed without a decision while it waited.
const NOT_REVIEWED_TEXT: &str = "The plan was not reviewed: the review was stopped.";

/// Why a hook could not get a decision; answered to the agent as "not approved".
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("the hook's input is not what {agent} sends: {message}")]
    Input {
        agent: &'static str,
        message: String,
    },
    #[error("no plan found: {0}")]
    NoPlan(String),
    #[error(transparent)]
    Review(#[from] ReviewError),
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    #[error("told to stop while waiting for a decision")]
    Stopped,
    #[error(
        "the token this request came with was revoked while the plan waited; it is not approved"
    )]
    Revoked,
    #[error(
        "this token already has {0} requests waiting at the server, the most one token may \
         have; decide some, or give this agent a token of its own"
    )]
    Busy(usize),
    #[error("no answer within the hook's deadline of {0:?}")]
    Deadline(Duration),
    #[error("internal failure: {0}")]
    Internal(String),
}

impl SourceError {
    /// What the agent's model reads: the plan is not approved, and why.
    pub fn denial(&self) -> String {
        format!(
            "Plandesk could not put this plan in front of the user ({self}), so it is not \
             approved. Stop now and tell the user."
        )
    }
}

/// How a hook waits.
#[derive(Debug, Clone)]
pub struct WaitSettings {
    /// The store's folder: where the app's presence is looked for.
    pub data_dir: PathBuf,
    /// Past this, an undecided plan is answered as not approved.
    pub deadline: Option<Duration>,
    /// Whether this process shows a desktop notification itself when no app runs to tell the
    /// person: a hook or `plandesk mcp` on the person's computer does; `plandesk serve`, a
    /// server agents reach over the network, does not (one per plan would pile up there).
    pub desktop: bool,
}

impl WaitSettings {
    /// A reminder goes out this long before the deadline.
    fn remind_before(&self) -> Duration {
        self.deadline
            .map_or(Duration::ZERO, |d| (d / 4).min(Duration::from_secs(300)))
    }
}

/// Submits an outside agent's plan and waits for a person's decision: the one path every
/// hook and the MCP server share. If no app is running to tell the person, this process
/// shows the desktop notification itself; if it is told to stop, the plan is closed as
/// abandoned.
pub async fn review_plan(
    engine: &Engine,
    mut plan: ExternalPlan,
    settings: &WaitSettings,
    stop: impl std::future::Future<Output = ()>,
) -> Result<Answer, SourceError> {
    let review = engine.review();
    // Every store call boxed but the wait: what waits holds the size of the wait alone.
    let waiting = Box::pin(review.submit(&plan)).await?;
    // Stored now: not held again while the agent waits (a server holds thousands).
    drop(std::mem::take(&mut plan.text));
    // The workspace's git state now, what its changes after an approval are read against: on
    // this machine only (a plan over HTTP names a folder of another).
    // Taken beside the wait; awaited before the agent is answered (and may change files).
    let mut baseline = None;
    if let (None, Some(revision)) = (&plan.submitter, &waiting.item.revision) {
        let (review, id, cwd) = (review.clone(), revision.id, PathBuf::from(&plan.cwd));
        if cwd.is_absolute() {
            baseline = Some(tokio::spawn(async move {
                review.record_baseline(id, &cwd).await
            }));
        }
    }
    let title = waiting
        .item
        .revision
        .as_ref()
        .map(|r| r.title.clone())
        .unwrap_or_default();
    let agent = plan.source.kind.agent_name();
    // Told here only when no app runs to tell the person (and this is their computer).
    if settings.desktop && !presence::app_running(&settings.data_dir) {
        notify::plan_waiting(
            &settings.data_dir,
            agent,
            &title,
            &plan.cwd,
            waiting.run_id(),
        );
    }
    let deadline = settings
        .deadline
        .map(|d| engine.now_millis() + d.as_millis() as i64);
    let (data_dir, desktop) = (settings.data_dir.clone(), settings.desktop);
    let run_id = waiting.run_id().to_owned();
    let reminder_title = title.clone();
    let mut on_event = move |event: WaitEvent| match event {
        WaitEvent::Reminder { left } => {
            if desktop && !presence::app_running(&data_dir) {
                notify::reminder(&data_dir, agent, &reminder_title, left, &run_id);
            }
        }
    };
    let decided = tokio::select! {
        decided = review.wait(&waiting, deadline, settings.remind_before(), &mut on_event) => decided?,
        () = stop => {
            Box::pin(review.abandon(&waiting)).await?;
            return Err(SourceError::Stopped);
        }
    };
    if let Some(baseline) = baseline {
        let _ = baseline.await;
    }
    let mut answer = Answer::of(&decided);
    if let (Answer::Approve(approval), Some(id)) = (&mut answer, decided.revision_id) {
        let revision = Box::pin(review.revision_by_id(id)).await?;
        match Box::pin(review.edit_summary(&revision)).await? {
            Some(edit) => {
                let markdown = revision.markdown();
                if edit_reaches(plan.source.kind, plan.file.as_ref(), &revision.sha256) {
                    approval.edit = Some(EditedPlan {
                        markdown,
                        by: edit.by,
                        diff: edit.diff,
                    });
                } else {
                    let notes = approval.notes.as_deref();
                    answer = Answer::Revise(present_edit_text(&edit.by, &markdown, notes));
                }
            }
            // An agent that reads its plan file once approved goes on with what it holds
            // then: changed while the person reviewed it, that is not what they approved.
            None if reads_file_once_approved(plan.source.kind)
                && !file_holds(&plan, &revision.sha256) =>
            {
                answer = Answer::Revise(changed_file_text(&plan.path));
            }
            None => {}
        }
    }
    let text = match &answer {
        Answer::Approve(approval) => format!(
            "approved: the agent proceeds with the plan{}{}",
            if approval.accept_edits {
                ", editing files without asking"
            } else {
                ""
            },
            approval.addendum()
        ),
        // Each source says this its own way (Claude Code: nothing, its own dialog asks).
        Answer::Abandoned => String::new(),
        other => other.denial().unwrap_or_default(),
    };
    Box::pin(review.record_answer(&waiting, &text)).await?;
    Ok(answer)
}

/// Whether an approval hands an agent of `kind` a reviewer's edit of its plan: in the answer
/// (Claude Code's plan handed back, an MCP result, the message of Pi's extension), or in its
/// plan file `file`, which the agents of [`reads_file_once_approved`] read, if that holds the
/// approved revision (`sha`). Codex, Factory Droid, Qwen Code and Copilot CLI go on with the
/// plan as they wrote it, which the person did not approve (Copilot's model is told only
/// "Plan approved!": its plan file is never written).
fn edit_reaches(kind: SourceKind, file: Option<&PlanFile>, sha: &str) -> bool {
    match kind {
        SourceKind::Engine | SourceKind::ClaudeCode | SourceKind::Mcp | SourceKind::Pi => true,
        // Copilot's model is never handed the file, whatever it holds.
        SourceKind::Copilot => false,
        kind if reads_file_once_approved(kind) => file.is_some_and(|file| file.holds(sha)),
        _ => false,
    }
}

/// Whether an agent of `kind` reads its plan file again once the plan is approved: to go on
/// with what it holds then (Gemini CLI, OpenCode, Kimi Code; Kilo CLI's building session), or
/// to show it as the plan approved (Copilot CLI's own "Plan Ready for Review" menu, and the
/// approval it records). An approval reaches it only while the file holds the approved plan.
fn reads_file_once_approved(kind: SourceKind) -> bool {
    matches!(
        kind,
        SourceKind::Gemini
            | SourceKind::OpenCode
            | SourceKind::Kilo
            | SourceKind::KimiCode
            | SourceKind::Copilot
    )
}

/// Whether the plan file an agent reads once approved holds the plan whose hash is `sha`:
/// through its [`PlanFile`] (read inside the root an edit may be written to), or, where it lies
/// outside every such root, read as any file an agent names. One that cannot be read does not.
fn file_holds(plan: &ExternalPlan, sha: &str) -> bool {
    match &plan.file {
        Some(file) => file.holds(sha),
        None => read_plan_file(std::path::Path::new(&plan.path))
            .is_ok_and(|text| crate::review::markdown_sha256(&text) == sha),
    }
}

/// What an agent reads when its plan file changed while the person reviewed it.
fn changed_file_text(path: &str) -> String {
    format!(
        "The plan file {path} was changed while the user reviewed the plan: what they approved \
         is not what it holds now, so it is not approved. Present the plan in the file for \
         review again."
    )
}

/// Resolves when the process is asked to stop (SIGTERM, SIGINT, SIGHUP): an agent that gives
/// up on its hook kills it.
pub async fn stop_requested() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let kinds = [
            SignalKind::terminate(),
            SignalKind::interrupt(),
            SignalKind::hangup(),
        ];
        let mut streams: Vec<_> = kinds.into_iter().filter_map(|k| signal(k).ok()).collect();
        if streams.is_empty() {
            return std::future::pending().await;
        }
        let waits = streams.iter_mut().map(|s| Box::pin(s.recv()));
        futures::future::select_all(waits).await;
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_agents_are_asked_to_present_a_revised_plan_again() {
        let text = Answer::Revise("Bound it".into()).denial().unwrap();
        assert!(text.contains("User feedback: Bound it"), "{text}");
        assert!(text.ends_with("present it for review again."), "{text}");
        assert_eq!(
            Answer::Wait.denial().as_deref(),
            Some(REJECTED_NO_FEEDBACK_TEXT)
        );
        assert_eq!(Answer::Approve(Approval::default()).denial(), None);
    }

    /// `SourceKind::hears_approval_notes`, which the window's Approve button says, is what each
    /// agent's answer to an approval with a note carries.
    #[test]
    fn an_approval_note_reaches_the_agents_that_say_it_does_and_no_other() {
        const NOTE: &str = "Mind the cache size";
        let approve = Answer::Approve(Approval {
            notes: Some(NOTE.into()),
            ..Approval::default()
        });
        let claude_code = claude::parse(
            &serde_json::json!({
                "session_id": "s1", "cwd": "/w", "hook_event_name": "PermissionRequest",
                "tool_name": "ExitPlanMode", "tool_input": {"plan": "# P\n\n1. Do it"},
            })
            .to_string(),
        )
        .unwrap()
        .unwrap();
        for &kind in SourceKind::ALL {
            let answered = match kind {
                SourceKind::ClaudeCode => claude::answer(&claude_code, &approve),
                SourceKind::Codex => codex::answer(&approve),
                SourceKind::Gemini => Some(gemini::answer(&approve)),
                SourceKind::Droid => held::answer(held::Agent::Droid, &approve),
                SourceKind::QwenCode => held::answer(held::Agent::QwenCode, &approve),
                SourceKind::KimiCode => Some(kimi::answer(&approve)),
                SourceKind::Copilot => Some(copilot::answer(&approve)),
                SourceKind::OpenCode | SourceKind::Kilo => Some(opencode::answer(&approve)),
                SourceKind::Pi => Some(pi::answer(&approve)),
                // Their notes are in the tool's result: the engine's and the MCP server's
                // tests read them there.
                SourceKind::Engine | SourceKind::Mcp => {
                    assert!(kind.hears_approval_notes());
                    continue;
                }
            };
            assert_eq!(
                answered.unwrap_or_default().contains(NOTE),
                kind.hears_approval_notes(),
                "{kind}"
            );
        }
    }

    /// Copilot CLI's model never reads its plan file once approved: an edit does not reach it
    /// even through a file that holds the edit.
    #[test]
    fn an_edit_reaches_copilot_cli_never_and_a_plan_file_reader_through_its_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("plan.md"), "# Cache\n\n1. Bound it\n").unwrap();
        let sha = crate::review::markdown_sha256("# Cache\n\n1. Bound it\n");
        let file = PlanFile {
            root: dir.path().into(),
            name: "plan.md".into(),
        };
        assert!(edit_reaches(SourceKind::Gemini, Some(&file), &sha));
        assert!(!edit_reaches(SourceKind::Copilot, Some(&file), &sha));
        assert!(!edit_reaches(SourceKind::Gemini, Some(&file), "another"));
    }
}
