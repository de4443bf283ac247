//! After Approve: `progress` (what the agent did, held against the plan it was approved for) and
//! `mark` (a step done or not applicable by hand).

use std::process::ExitCode;

use anyhow::{bail, Result};
use plandesk::desktop;
use plandesk::review::{Progress, Revision, RevisionStatus, StepState};
use plandesk::text::{short, terminal_safe};
use plandesk::Engine;

use super::choices::StepMark;
use super::print::table::Table;

/// The approved revision `key` names: a revision (which must be approved), or a run's newest
/// approved one.
async fn approved(engine: &Engine, key: &str) -> Result<Revision> {
    let target = desktop::plan_target(engine, key).await?;
    let review = engine.review();
    let revision = match target.revision_id {
        Some(id) => review.revision_by_id(id).await?,
        None => match review.approved(&target.run_id).await? {
            Some(revision) => revision,
            None => bail!(
                "run {} has no approved plan yet; its work is held against the plan you approve",
                target.run_id
            ),
        },
    };
    if revision.status != RevisionStatus::Approved {
        bail!(
            "revision {} is {}, not approved; work is held against an approved plan",
            revision.id,
            revision.status.as_str()
        );
    }
    Ok(revision)
}

/// `plandesk progress RUN|REVISION`
pub async fn progress(engine: &Engine, key: &str, json: bool) -> Result<ExitCode> {
    let revision = approved(engine, key).await?;
    let progress = engine.review().progress(&revision).await?;
    if json {
        super::print::json_line(&progress)?;
    } else {
        print(&progress);
    }
    Ok(ExitCode::SUCCESS)
}

/// `plandesk progress RUN|REVISION --diff PATH`
pub async fn diff(engine: &Engine, key: &str, path: &str, json: bool) -> Result<ExitCode> {
    let revision = approved(engine, key).await?;
    let Some(diff) = engine.review().file_diff(&revision, path).await? else {
        bail!(
            "no diff is known for {}: the workspace is no git repository and the agent reported \
             none",
            terminal_safe(&short(path, 200))
        );
    };
    if json {
        super::print::json_line(&diff)?;
    } else {
        for line in diff.text.lines() {
            println!("{}", terminal_safe(line));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `plandesk mark RUN|REVISION STEP done|n/a|clear`
pub async fn mark(
    engine: &Engine,
    key: &str,
    step: usize,
    mark: StepMark,
    json: bool,
) -> Result<ExitCode> {
    let revision = approved(engine, key).await?;
    let progress = engine
        .review()
        .mark_step(&revision, step, mark.into())
        .await?;
    if json {
        super::print::json_line(&progress)?;
    } else {
        print(&progress);
    }
    Ok(ExitCode::SUCCESS)
}

fn print(progress: &Progress) {
    let approved = progress
        .approved_at
        .map(|at| format!(", approved {}", plandesk::clock::utc(at)))
        .unwrap_or_default();
    println!(
        "{} (revision {} of run {}{approved})",
        terminal_safe(&short(&progress.title, 100)),
        progress.revision_no,
        &progress.run_id
    );
    let working = if progress.finished {
        "the agent says it is finished"
    } else {
        "the agent is still working (or has not said it finished)"
    };
    println!("{}; {working}.", progress.summary);
    if progress.work().next().is_some() {
        let mut table = Table::new(&["", "STEP", "STATE", "SHOWN BY"]);
        for step in progress.work() {
            let state = match (step.state, step.by_hand) {
                (StepState::Done, false) => "done",
                (StepState::Done, true) => "done (by hand)",
                (StepState::NotApplicable, _) => "not applicable",
                (StepState::NotDoneYet, _) => "not done yet",
            };
            let shown: Vec<&str> = step
                .changed
                .iter()
                .chain(&step.ran)
                .map(String::as_str)
                .collect();
            table.row([
                step.number.to_string(),
                short(&step.text, 60),
                state.to_owned(),
                short(&shown.join(", "), 60),
            ]);
        }
        println!();
        for line in table.lines("") {
            println!("{line}");
        }
    }
    let context = progress.steps.len() - progress.work().count();
    if context > 0 {
        println!("\n{}", not_counted(context));
    }
    let unplanned: Vec<_> = progress.unplanned().collect();
    if !unplanned.is_empty() {
        println!("\nChanged outside the plan:");
        for file in unplanned {
            let outside = if file.outside {
                " (outside the workspace)"
            } else {
                ""
            };
            let lines = match (file.added, file.removed) {
                (Some(added), removed) => format!(" (+{added} -{})", removed.unwrap_or(0)),
                _ => String::new(),
            };
            println!(
                "  {}{lines}{outside}",
                terminal_safe(&short(&file.path, 200))
            );
        }
    }
    if let Some(err) = &progress.git_error {
        println!(
            "\nThe workspace's own changes are not shown: {}.",
            terminal_safe(err)
        );
    }
}

/// What is said of the `n` list items under headings such as Context or Risks.
fn not_counted(n: usize) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("Not counted as steps: {n} list item{s} under headings such as Context or Risks.")
}
