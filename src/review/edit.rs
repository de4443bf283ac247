//! A reviewer's edit: the plan as they want it becomes a revision of their own, the open item
//! waits on it, and it is written back to the plan file, but only over the very plan the agent
//! submitted (a plan path comes from the agent and is not trusted to name any other file).
//! Approving an edited plan tells the agent the reviewer changed it, with the diff.

use super::{markdown_sha256, plan_sha256, PlanFile, Review, ReviewError, Revision};
use crate::plan::unified;
use crate::store::{NewEdit, PlanText};
use crate::tool::submit_plan::split_plan;
use crate::vocabulary::SourceKind;
use crate::workspace::{Workspace, MAX_FILE_BYTES};

/// What became of an edit.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Edited {
    pub revision: Revision,
    /// Whether the plan file now holds the edit.
    pub written: bool,
    /// Why the plan file was left as it was, if it was.
    pub not_written: Option<String>,
}

/// How a reviewer changed the plan an agent submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditSummary {
    pub by: String,
    /// Unified diff from the agent's plan to the reviewer's.
    pub diff: String,
}

impl PlanFile {
    /// The hash of the plan the file holds now, read inside its root (bounded, through no
    /// link out of it), and that root.
    fn plan_sha256(&self) -> Result<(Workspace, String), String> {
        let workspace = Workspace::open(&self.root, None).map_err(|e| e.to_string())?;
        let current = workspace
            .resolve_existing(&self.name)
            .and_then(|resolved| workspace.read_text(&resolved, &self.name))
            .map_err(|e| e.to_string())?;
        Ok((workspace, markdown_sha256(&current)))
    }

    /// Whether the file holds the plan whose hash is `sha`.
    pub fn holds(&self, sha: &str) -> bool {
        self.plan_sha256().is_ok_and(|(_, found)| found == sha)
    }
}

impl Review {
    /// Records `text` as the reviewer's revision of the open revision `revision_id`, and writes
    /// it to the plan file.
    pub async fn edit(&self, revision_id: i64, text: &str) -> Result<Edited, ReviewError> {
        let edited = self.revision_by_id(revision_id).await?;
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(ReviewError::BadEdit(format!(
                "the plan is {} bytes; a plan may be at most {MAX_FILE_BYTES}",
                text.len()
            )));
        }
        let split = split_plan(text);
        if split.plan.trim().is_empty() && split.title.is_empty() {
            return Err(ReviewError::BadEdit("the edited plan is empty".into()));
        }
        let sha = plan_sha256(&split.title, &split.plan);
        if sha == edited.sha256 {
            return Err(ReviewError::BadEdit(format!(
                "the plan is the same as revision {}: nothing to save",
                edited.id
            )));
        }
        let by = self.actor().await;
        let plan = PlanText {
            path: edited.path.clone(),
            title: split.title,
            body: split.plan,
            sha256: sha,
        };
        let row = self
            .store
            .edit_plan(&NewEdit {
                run_id: &edited.run_id,
                tool_call_id: &edited.tool_call_id,
                expect_sha: &edited.sha256,
                plan: &plan,
                by: &by,
                at: self.clock.now(),
            })
            .await?;
        let revision = Revision::from(row);
        let written = self.write_back(&edited, &revision).await;
        Ok(Edited {
            revision,
            written: written.is_ok(),
            not_written: written.err(),
        })
    }

    /// Writes an edit over the plan file, if the file still holds the plan that was edited.
    /// Only a file Plandesk was given to write: our own run's plan in its workspace, or the
    /// file an outside agent's source named when it submitted (in the agent's workspace or plans
    /// folder, never one received over the network).
    async fn write_back(&self, edited: &Revision, edit: &Revision) -> Result<(), String> {
        let run = self
            .store
            .run(&edited.run_id)
            .await
            .map_err(|e| e.to_string())?;
        let file = if run.source.kind == SourceKind::Engine {
            PlanFile {
                root: run.workspace.clone().into(),
                name: edited.path.clone(),
            }
        } else {
            let items = self
                .store
                .open_items(Some(&edited.run_id))
                .await
                .map_err(|e| e.to_string())?;
            let file = items
                .iter()
                .find(|item| item.tool_call_id == edited.tool_call_id)
                .and_then(|item| PlanFile::from_args(&item.args));
            file.ok_or_else(|| {
                "the edit is kept in Plandesk only: this plan has no file on this machine that \
                 Plandesk may write (when you approve, the agent is given your version, or told \
                 to present it)"
                    .to_owned()
            })?
        };
        let (workspace, found) = file
            .plan_sha256()
            .map_err(|e| format!("the plan file was not rewritten: {e}"))?;
        if found != edited.sha256 {
            return Err(format!(
                "the plan file {} was not rewritten: it no longer holds revision {}",
                edited.path, edited.id
            ));
        }
        let mut text = edit.markdown();
        text.push('\n');
        workspace
            .write_file(&file.name, text.as_bytes())
            .map_err(|e| format!("the plan file was not rewritten: {e}"))
    }

    /// If `revision` is a reviewer's edit, who made it and the diff from the agent's own plan
    /// (the first revision of the same call).
    pub async fn edit_summary(
        &self,
        revision: &Revision,
    ) -> Result<Option<EditSummary>, ReviewError> {
        let Some(by) = revision.author.clone() else {
            return Ok(None);
        };
        let original = self
            .revisions(Some(&revision.run_id))
            .await?
            .into_iter()
            .find(|r| r.tool_call_id == revision.tool_call_id && r.author.is_none());
        let Some(original) = original else {
            return Ok(None);
        };
        // As the files read, each ending with a newline (no "No newline at end of file").
        let diff = unified(
            &format!("{}\n", original.markdown()),
            &format!("{}\n", revision.markdown()),
            &format!("{} (agent)", revision.path),
            &format!("{} (reviewer)", revision.path),
        );
        Ok(Some(EditSummary { by, diff }))
    }
}
