//! After Approve: what the agent did, held against the plan it was approved for. Each step of
//! the approved revision (see `plan::steps`) is *done* once a file it names changed or a command
//! it names ran (or a person marked it), else *not done yet*; each changed file is *planned*
//! (a step names it) or *unplanned*; and the agent's own "finished" says whether it still works.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Review, ReviewError, Revision};
use crate::clock::Millis;
use crate::plan::steps::{self, Step};
use crate::store::{NewWork, Work, WorkKind, WorkRow};
use crate::workspace::git;

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepState {
    Done,
    NotDoneYet,
    /// A person said it does not apply.
    NotApplicable,
}

/// A mark a person sets on a step by hand (`Clear` takes it back).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepMark {
    Done,
    NotApplicable,
    Clear,
}

impl StepMark {
    /// Its word in the record and the audit trail.
    pub fn as_str(self) -> &'static str {
        match self {
            StepMark::Done => "done",
            StepMark::NotApplicable => "not-applicable",
            StepMark::Clear => "clear",
        }
    }
}

/// A step with its state and what shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepProgress {
    /// Its number, from 1, as `plandesk mark` takes it.
    pub number: usize,
    pub line: usize,
    pub text: String,
    pub state: StepState,
    /// A person set the state by hand.
    pub by_hand: bool,
    /// Files it names (that exist in the workspace or were changed), workspace-relative.
    pub files: Vec<String>,
    /// Commands it names.
    pub commands: Vec<String>,
    /// The changed files and the commands run that make it done.
    pub changed: Vec<String>,
    pub ran: Vec<String>,
    /// Under a heading of no work to do ("Context", "Risks": [`Step::context`]): not counted.
    pub context: bool,
}

/// A file a step names or the agent changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileProgress {
    /// Relative to the workspace; absolute when it is outside it (`outside`).
    pub path: String,
    /// A step names it.
    pub planned: bool,
    pub changed: bool,
    pub outside: bool,
    /// Lines added and removed since the plan was submitted, as git counts them (a git
    /// workspace only).
    pub added: Option<u64>,
    pub removed: Option<u64>,
}

/// A command the agent ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandRun {
    pub command: String,
    pub exit_code: Option<i64>,
    pub planned: bool,
    pub at: Millis,
}

/// Where a file's diff comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DiffSource {
    /// The workspace's repository, against the state when the plan was submitted.
    Git,
    /// The agent's own report of each change (its after-tool hook).
    Agent,
}

/// One changed file's diff, unified.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileDiff {
    pub path: String,
    pub from: DiffSource,
    pub text: String,
}

/// The work after an approval, against the approved plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    pub run_id: String,
    pub revision_id: i64,
    pub revision_no: i64,
    pub title: String,
    pub approved_at: Option<Millis>,
    pub steps: Vec<StepProgress>,
    pub files: Vec<FileProgress>,
    pub commands: Vec<CommandRun>,
    /// The agent said it finished, and did nothing after.
    pub finished: bool,
    /// Its newest record (any kind).
    pub last_at: Option<Millis>,
    /// "5 of 6 steps done, 2 files outside the plan".
    pub summary: String,
    /// Why the workspace's own changes (git) are not shown, when they are not.
    pub git_error: Option<String>,
    /// It is the plan its run's agent works on now (the run's newest revision): only its steps
    /// are marked by hand, and only its work is recorded.
    pub current: bool,
}

impl Progress {
    /// The steps that are work to do (not [`StepProgress::context`]).
    pub fn work(&self) -> impl Iterator<Item = &StepProgress> {
        counted(&self.steps)
    }

    pub fn done(&self) -> usize {
        self.work()
            .filter(|s| s.state != StepState::NotDoneYet)
            .count()
    }

    pub fn unplanned(&self) -> impl Iterator<Item = &FileProgress> {
        self.files.iter().filter(|f| f.changed && !f.planned)
    }
}

/// Those of `steps` that are work to do: what only a Context or Risks item names ("Leave
/// `src/auth.rs` alone") is no planned work, and changed, it is outside the plan.
fn counted(steps: &[StepProgress]) -> impl Iterator<Item = &StepProgress> {
    steps.iter().filter(|s| !s.context)
}

/// Whether a changed file is the path a step names (the same, or the step names its end).
fn is_named(named: &str, changed: &str) -> bool {
    changed == named
        || changed
            .strip_suffix(named)
            .is_some_and(|head| head.ends_with('/'))
}

/// Whether a command run is one a step names: one of its `&&`, `;` or `|` parts is that
/// command, or it with more arguments.
fn is_run(named: &str, ran: &str) -> bool {
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let whole = words(ran);
    // A compound command a step names, run as written (or with more after it).
    if whole == named || whole.starts_with(&format!("{named} ")) {
        return true;
    }
    ran.split(['&', ';', '|'])
        .map(words)
        .any(|part| part == named || part.starts_with(&format!("{named} ")))
}

/// A recorded path as the run's `workspace` sees it: an absolute one below it, relative; any
/// other absolute one outside it; a relative one as recorded (`outside` as recorded).
fn against(workspace: &Path, path: &str, outside: bool) -> (String, bool) {
    let named = Path::new(path);
    if !named.is_absolute() {
        return (path.to_owned(), outside);
    }
    match named.strip_prefix(workspace) {
        Ok(inside) if !inside.as_os_str().is_empty() => {
            (inside.to_string_lossy().into_owned(), false)
        }
        _ => (path.to_owned(), true),
    }
}

/// The workspace's git state kept when the revision was submitted, if it was.
fn baseline_of(work: &[WorkRow]) -> Option<git::Baseline> {
    work.iter()
        .rev()
        .find(|w| w.kind == WorkKind::Baseline)
        .and_then(|w| serde_json::from_value(w.data.clone()).ok())
}

/// Whether `path` (relative, as a plan names it) is something in `workspace`: looked at, never
/// followed through a link, never read.
fn in_workspace(workspace: &Path, path: &str) -> bool {
    let relative = Path::new(path);
    relative.is_relative()
        && relative
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
        && workspace.join(relative).symlink_metadata().is_ok()
}

/// Holds the records `work`, and the workspace's own changes since the plan was submitted
/// (`git`, when it is a repository), against the steps of `revision` (in `workspace`).
pub fn hold(
    revision: &Revision,
    workspace: &Path,
    approved_at: Option<Millis>,
    work: &[WorkRow],
    git: &[git::Change],
) -> Progress {
    let plan_steps = steps::steps(&revision.markdown());
    let mut changed: Vec<(String, bool)> = Vec::new();
    let mut commands = Vec::new();
    let mut marks: Vec<Option<(StepState, bool)>> = vec![None; plan_steps.len()];
    let mut finished = false;
    for record in work {
        match record.kind {
            WorkKind::File => {
                finished = false;
                if let Some(path) = record.path.as_deref() {
                    let (path, outside) = against(workspace, path, record.data["outside"] == true);
                    if !changed.iter().any(|(p, _)| *p == path) {
                        changed.push((path, outside));
                    }
                }
            }
            WorkKind::Command => {
                finished = false;
                if let Some(command) = record.command.as_deref() {
                    commands.push(CommandRun {
                        command: command.to_owned(),
                        exit_code: record.exit_code,
                        planned: false,
                        at: record.at,
                    });
                }
            }
            WorkKind::Finished => finished = true,
            WorkKind::Baseline => {}
            WorkKind::Marked => {
                let step = record.data["step"].as_u64().unwrap_or(0) as usize;
                let state = match record.data["mark"].as_str() {
                    Some("done") => Some((StepState::Done, true)),
                    Some("not-applicable") => Some((StepState::NotApplicable, true)),
                    _ => None,
                };
                if let Some(slot) = step.checked_sub(1).and_then(|i| marks.get_mut(i)) {
                    *slot = state;
                }
            }
        }
    }
    // What changed outside any tool call the agent reported (a person's edit, a tool Plandesk
    // does not hear of) shows in the repository.
    for change in git {
        if !changed.iter().any(|(p, _)| *p == change.path) {
            changed.push((change.path.clone(), false));
        }
    }
    let lines = |path: &str| {
        git.iter()
            .find(|c| c.path == path)
            .map_or((None, None), |c| (c.added, c.removed))
    };
    let steps: Vec<StepProgress> = plan_steps
        .iter()
        .zip(&marks)
        .enumerate()
        .map(|(i, (step, mark))| step_progress(i + 1, step, *mark, workspace, &changed, &commands))
        .collect();
    for command in &mut commands {
        command.planned = counted(&steps).any(|s| s.ran.contains(&command.command));
    }
    let mut files: Vec<FileProgress> = Vec::new();
    for named in counted(&steps).flat_map(|s| &s.files) {
        if !files.iter().any(|f| &f.path == named) {
            files.push(FileProgress {
                path: named.clone(),
                planned: true,
                changed: false,
                outside: false,
                added: None,
                removed: None,
            });
        }
    }
    for (path, outside) in &changed {
        let planned = counted(&steps).any(|s| s.changed.iter().any(|c| c == path));
        let (added, removed) = lines(path);
        match files.iter_mut().find(|f| f.path == *path) {
            Some(file) => {
                file.changed = true;
                (file.added, file.removed) = (added, removed);
            }
            None => {
                // A step naming the file's end names it: one entry, under the changed path.
                files.retain(|f| !(planned && !f.changed && is_named(&f.path, path)));
                files.push(FileProgress {
                    path: (*path).to_owned(),
                    planned,
                    changed: true,
                    outside: *outside,
                    added,
                    removed,
                });
            }
        }
    }
    let mut progress = Progress {
        run_id: revision.run_id.clone(),
        revision_id: revision.id,
        revision_no: revision.revision_no,
        title: revision.title.clone(),
        approved_at,
        steps,
        files,
        commands,
        finished,
        last_at: work.last().map(|w| w.at),
        summary: String::new(),
        git_error: None,
        current: false,
    };
    let unplanned = progress.unplanned().count();
    progress.summary = format!(
        "{} of {} steps done, {}",
        progress.done(),
        progress.work().count(),
        match unplanned {
            0 => "no file outside the plan".to_owned(),
            1 => "1 file outside the plan".to_owned(),
            n => format!("{n} files outside the plan"),
        }
    );
    progress
}

fn step_progress(
    number: usize,
    step: &Step,
    mark: Option<(StepState, bool)>,
    workspace: &Path,
    changed: &[(String, bool)],
    commands: &[CommandRun],
) -> StepProgress {
    // A file outside the workspace is nothing a step names, whatever its name ends with.
    let touched: Vec<String> = changed
        .iter()
        .filter(|(path, outside)| !outside && step.paths.iter().any(|named| is_named(named, path)))
        .map(|(path, _)| path.clone())
        .collect();
    let files = step
        .paths
        .iter()
        .filter(|named| {
            in_workspace(workspace, named)
                || changed
                    .iter()
                    .any(|(p, outside)| !outside && is_named(named, p))
        })
        .cloned()
        .collect();
    let mut ran: Vec<String> = commands
        .iter()
        .filter(|c| step.commands.iter().any(|named| is_run(named, &c.command)))
        .map(|c| c.command.clone())
        .collect();
    ran.dedup();
    let (state, by_hand) = match mark {
        Some(mark) => mark,
        None if !touched.is_empty() || !ran.is_empty() => (StepState::Done, false),
        None => (StepState::NotDoneYet, false),
    };
    StepProgress {
        number,
        line: step.line,
        text: step.text.clone(),
        state,
        by_hand,
        files,
        commands: step.commands.clone(),
        changed: touched,
        ran,
        context: step.context,
    }
}

impl Review {
    /// Records what an agent did after its plan was approved (see [`crate::store::Store::record_work`]).
    pub async fn record_work(&self, work: &NewWork<'_>) -> Result<Option<WorkRow>, ReviewError> {
        Ok(self.store.record_work(work).await?)
    }

    /// The records of `kind` after record `after`, oldest first, at most `limit`.
    pub async fn work_after(
        &self,
        kind: WorkKind,
        after: i64,
        limit: i64,
    ) -> Result<Vec<WorkRow>, ReviewError> {
        Ok(self.store.work_after(kind, after, limit).await?)
    }

    /// The run's newest revision, if it is approved (the plan its agent works on).
    pub async fn approved(&self, run_id: &str) -> Result<Option<Revision>, ReviewError> {
        match self.store.approved_revision(run_id).await? {
            Some(id) => Ok(Some(self.revision_by_id(id).await?)),
            None => Ok(None),
        }
    }

    /// The work after `revision`'s approval, held against its steps.
    pub async fn progress(&self, revision: &Revision) -> Result<Progress, ReviewError> {
        let run = self.store.run(&revision.run_id).await?;
        let work = self.store.work(revision.id).await?;
        let approved_at = revision
            .decision
            .as_ref()
            .filter(|d| d.action == crate::vocabulary::Action::Approved)
            .map(|d| d.decided_at);
        let workspace = std::path::PathBuf::from(&run.workspace);
        let base = baseline_of(&work);
        let (changes, git_error) = match base {
            Some(base) => {
                let dir = workspace.clone();
                match tokio::task::spawn_blocking(move || git::changes_since(&dir, &base)).await {
                    Ok(Ok(changes)) => (changes, None),
                    Ok(Err(err)) => (Vec::new(), Some(err.to_string())),
                    Err(err) => (Vec::new(), Some(format!("git could not be asked: {err}"))),
                }
            }
            None => (Vec::new(), None),
        };
        let mut progress = hold(revision, &workspace, approved_at, &work, &changes);
        progress.git_error = git_error;
        progress.current =
            self.store.approved_revision(&revision.run_id).await? == Some(revision.id);
        Ok(progress)
    }

    /// One changed file's diff since the approval: from git when the workspace is a
    /// repository (its baseline kept), else as the agent reported its changes (Claude Code's
    /// and Gemini CLI's hooks do), oldest first. `None` when neither knows it.
    pub async fn file_diff(
        &self,
        revision: &Revision,
        path: &str,
    ) -> Result<Option<FileDiff>, ReviewError> {
        let run = self.store.run(&revision.run_id).await?;
        let work = self.store.work(revision.id).await?;
        let base = baseline_of(&work);
        if let Some(base) = base {
            let (dir, named) = (std::path::PathBuf::from(&run.workspace), path.to_owned());
            let read = tokio::task::spawn_blocking(move || git::file_diff(&dir, &base, &named));
            if let Ok(Ok(text)) = read.await {
                if !text.is_empty() {
                    return Ok(Some(FileDiff {
                        path: path.to_owned(),
                        from: DiffSource::Git,
                        text,
                    }));
                }
            }
        }
        let workspace = Path::new(&run.workspace);
        let reported: Vec<&str> = work
            .iter()
            .filter(|w| w.kind == WorkKind::File)
            .filter(|w| {
                w.path
                    .as_deref()
                    .is_some_and(|p| against(workspace, p, w.data["outside"] == true).0 == path)
            })
            .filter_map(|w| w.data["diff"].as_str())
            .collect();
        Ok((!reported.is_empty()).then(|| FileDiff {
            path: path.to_owned(),
            from: DiffSource::Agent,
            text: reported.join(""),
        }))
    }

    /// Records the workspace's git state for a revision just submitted, so that its changes
    /// after the approval can be read against it. Nothing for a folder that is no repository;
    /// a git that fails is said on stderr (the review goes on).
    pub async fn record_baseline(&self, revision_id: i64, workspace: &Path) {
        let dir = workspace.to_owned();
        let base = match tokio::task::spawn_blocking(move || git::baseline(&dir)).await {
            Ok(Ok(base)) => base,
            Ok(Err(git::GitError::NotARepository | git::GitError::NotInstalled)) => return,
            Ok(Err(err)) => {
                eprintln!("plandesk: the workspace's changes will not be shown: {err}");
                return;
            }
            Err(_) => return,
        };
        let work = NewWork {
            of: crate::store::WorkOf::Revision(revision_id),
            at: self.clock.now(),
            work: Work::of_kind(
                WorkKind::Baseline,
                serde_json::to_value(&base).unwrap_or_default(),
            ),
        };
        if let Err(err) = self.store.record_work(&work).await {
            eprintln!("plandesk: cannot record the workspace's state: {err}");
        }
    }

    /// Marks step `number` of an approved revision done or not applicable by hand (or clears
    /// the mark), in the audit trail too.
    pub async fn mark_step(
        &self,
        revision: &Revision,
        number: usize,
        mark: StepMark,
    ) -> Result<Progress, ReviewError> {
        let steps = steps::steps(&revision.markdown());
        let count = steps.len();
        if number == 0 || number > count {
            return Err(ReviewError::BadMark(format!(
                "revision {} has {count} steps; give a number from 1 to {count}",
                revision.id
            )));
        }
        if steps[number - 1].context {
            return Err(ReviewError::BadMark(format!(
                "step {number} of revision {} is under a heading such as Context or Risks: it \
                 is not counted, so it is not marked",
                revision.id
            )));
        }
        let word = mark.as_str();
        let by = self.actor().await;
        let recorded = self
            .store
            .mark_step(
                &NewWork {
                    of: crate::store::WorkOf::Run(&revision.run_id),
                    at: self.clock.now(),
                    work: Work::of_kind(
                        WorkKind::Marked,
                        json!({"step": number, "mark": word, "by": by.name}),
                    ),
                },
                (revision.id, &revision.sha256),
                &by,
            )
            .await?;
        if recorded.is_none() {
            return Err(ReviewError::BadMark(format!(
                "revision {} is not its run's approved plan; only that one's steps are marked",
                revision.id
            )));
        }
        self.progress(revision).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_commands_are_matched_by_their_ends_and_parts() {
        assert!(is_named("cache.rs", "src/cache.rs"));
        assert!(is_named("src/cache.rs", "src/cache.rs"));
        assert!(!is_named("ache.rs", "src/cache.rs"));
        assert!(is_run("cargo test", "cd core && cargo  test --all"));
        assert!(!is_run("cargo test", "cargo testify"));
        assert!(is_run(
            "cargo fmt && cargo clippy",
            "cargo fmt && cargo clippy"
        ));
        assert!(!in_workspace(Path::new("/"), "../etc"));
        assert!(!in_workspace(Path::new("/"), "/etc/passwd"));
    }
}
