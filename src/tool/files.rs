//! The workspace tools: read, list and write files, every path held inside the workspace.

use std::fs;

use serde_json::{json, Value};

use super::{Tool, ToolContext, ToolOutcome};
use crate::workspace::{Workspace, WorkspaceError};

/// Folders a listing never descends into: build output and VCS data, not what a plan is about.
const SKIPPED_DIRS: &[&str] = &[".git", "target", "node_modules", ".venv", "__pycache__"];
/// Most entries one listing returns.
const MAX_LIST_ENTRIES: usize = 500;
/// Most entries one listing reads, in all its folders: a folder of millions is cut, not read
/// whole before the cut.
const MAX_READ_ENTRIES: usize = 20_000;

fn path_arg(args: &Value) -> &str {
    args.get("path").and_then(Value::as_str).unwrap_or("")
}

fn failed(tool: &str, err: &WorkspaceError) -> ToolOutcome {
    ToolOutcome::Failed(format!("{tool}: {err}"))
}

/// `read_file {path}`: a UTF-8 file of at most 1 MiB.
#[derive(Debug, Default)]
pub struct ReadFile;

impl Tool for ReadFile {
    fn name(&self) -> &'static str {
        "read_file"
    }

    fn reads_only(&self) -> bool {
        true
    }

    fn description(&self) -> String {
        "Read a UTF-8 text file from the workspace. `path` is relative to the workspace root."
            .into()
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "File path relative to the workspace root"}},
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn execute(&self, ctx: &ToolContext<'_>, args: &Value) -> ToolOutcome {
        let path = path_arg(args);
        let content = ctx
            .workspace
            .resolve_existing(path)
            .and_then(|resolved| ctx.workspace.read_text(&resolved, path));
        match content {
            Ok(content) => ToolOutcome::Value(json!({"path": path, "content": content})),
            Err(err) => failed(self.name(), &err),
        }
    }
}

/// `list_files {path?}`: every file and folder below a folder, sorted, build output skipped.
#[derive(Debug, Default)]
pub struct ListFiles;

impl Tool for ListFiles {
    fn name(&self) -> &'static str {
        "list_files"
    }

    fn reads_only(&self) -> bool {
        true
    }

    fn description(&self) -> String {
        format!(
            "List the files below a folder of the workspace (default: the root), recursively, \
             sorted, at most {MAX_LIST_ENTRIES} entries. Skips {}.",
            SKIPPED_DIRS.join(", ")
        )
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Folder relative to the workspace root; default the root"}},
            "additionalProperties": false
        })
    }

    fn execute(&self, ctx: &ToolContext<'_>, args: &Value) -> ToolOutcome {
        let path = match path_arg(args) {
            "" => ".",
            p => p,
        };
        match list(ctx.workspace, path, MAX_READ_ENTRIES) {
            Ok((entries, truncated)) => ToolOutcome::Value(
                json!({"path": path, "entries": entries, "truncated": truncated}),
            ),
            Err(err) => failed(self.name(), &err),
        }
    }
}

/// The entries under `path` (at most [`MAX_LIST_ENTRIES`]), reading at most `budget` entries
/// in all its folders; whether the listing was cut.
fn list(
    workspace: &Workspace,
    path: &str,
    mut budget: usize,
) -> Result<(Vec<Value>, bool), WorkspaceError> {
    let start = workspace.resolve_existing(path)?;
    if !start.is_dir() {
        return Err(WorkspaceError::NotADir {
            path: path.to_owned(),
        });
    }
    let mut entries = Vec::new();
    let mut stack = vec![start];
    let mut truncated = false;
    while let Some(dir) = stack.pop() {
        let io_err = |source| WorkspaceError::Io {
            path: workspace.display(&dir),
            source,
        };
        let mut children = Vec::new();
        for child in fs::read_dir(&dir).map_err(io_err)? {
            if budget == 0 {
                truncated = true;
                break;
            }
            budget -= 1;
            children.extend(child.ok());
        }
        children.sort_by_key(|e| e.file_name());
        for child in children.iter().rev() {
            let name = child.file_name().to_string_lossy().into_owned();
            let Ok(kind) = child.file_type() else {
                continue;
            };
            if kind.is_dir() && !SKIPPED_DIRS.contains(&name.as_str()) {
                stack.push(child.path());
            }
        }
        for child in children {
            let name = child.file_name().to_string_lossy().into_owned();
            let Ok(kind) = child.file_type() else {
                continue;
            };
            if kind.is_dir() && SKIPPED_DIRS.contains(&name.as_str()) {
                continue;
            }
            if entries.len() == MAX_LIST_ENTRIES {
                truncated = true;
                break;
            }
            let (kind_name, size) = if kind.is_symlink() {
                ("symlink", None)
            } else if kind.is_dir() {
                ("dir", None)
            } else {
                ("file", child.metadata().ok().map(|m| m.len()))
            };
            let mut entry = json!({"path": workspace.display(&child.path()), "kind": kind_name});
            if let Some(size) = size {
                entry["size"] = json!(size);
            }
            entries.push(entry);
        }
        if truncated {
            break;
        }
    }
    entries.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    Ok((entries, truncated))
}

/// Where `write_file` may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteScope {
    /// Plan mode: only into the plans folder, no approval needed.
    PlansOnly,
    /// Build mode: anywhere in the workspace, each write approved unless the run auto-approves.
    Workspace,
}

/// `write_file {path, content}`: creates folders as needed, replaces the file.
#[derive(Debug)]
pub struct WriteFile {
    pub scope: WriteScope,
}

impl Tool for WriteFile {
    fn name(&self) -> &'static str {
        "write_file"
    }

    fn description(&self) -> String {
        match self.scope {
            WriteScope::PlansOnly => {
                "Write a UTF-8 text file. In plan mode only files inside the plans \
                 folder may be written: use it to write your plan before submitting it."
                    .into()
            }
            WriteScope::Workspace => {
                "Write a UTF-8 text file in the workspace, creating folders as \
                 needed. `path` is relative to the workspace root."
                    .into()
            }
        }
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to the workspace root"},
                "content": {"type": "string", "description": "The whole new content of the file"}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    fn requires_approval(&self, ctx: &ToolContext<'_>) -> bool {
        self.scope == WriteScope::Workspace && !ctx.auto_approve
    }

    fn execute(&self, ctx: &ToolContext<'_>, args: &Value) -> ToolOutcome {
        let path = path_arg(args);
        let content = args.get("content").and_then(Value::as_str).unwrap_or("");
        // Neither write follows a symbolic link (see `Workspace::write_file`), so a link
        // planted in the workspace cannot carry a write outside it or out of the plans folder.
        let written = match self.scope {
            WriteScope::PlansOnly => ctx.workspace.write_plan_file(path, content.as_bytes()),
            WriteScope::Workspace => ctx.workspace.write_file(path, content.as_bytes()),
        };
        match written {
            Ok(()) => ToolOutcome::Value(json!({"path": path, "bytesWritten": content.len()})),
            Err(
                err @ (WorkspaceError::OutsidePlans { .. } | WorkspaceError::PlansDirLink { .. }),
            ) => ToolOutcome::Failed(format!(
                "write_file: {err}; in plan mode only the plans folder can be written"
            )),
            Err(err) => failed(self.name(), &err),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a panic is the failure report

    use super::*;

    /// A listing stops reading at its budget and says it was cut, however many entries the
    /// folder holds; under the budget, it reads them all.
    #[test]
    fn a_listing_reads_at_most_its_budget() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..120 {
            fs::write(dir.path().join(format!("f{n:03}")), "").unwrap();
        }
        let workspace = Workspace::open(dir.path(), None).unwrap();
        let (entries, truncated) = list(&workspace, ".", 50).unwrap();
        assert_eq!((entries.len(), truncated), (50, true));
        let (entries, truncated) = list(&workspace, ".", MAX_READ_ENTRIES).unwrap();
        assert_eq!((entries.len(), truncated), (120, false));
        assert_eq!(entries[0]["path"], "f000");
    }
}
