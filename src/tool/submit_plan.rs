//! `submit_plan`: the model hands a plan file to a person and the run waits for their decision.
//! The contract (payloads, result texts) is Mastra's `submitPlanTool`, word for word; the file
//! checks before anything reaches a person are ours.

use std::path::Path;

use serde_json::{json, Map, Value};

use super::{Tool, ToolContext, ToolOutcome};
use crate::workspace::WorkspaceError;

pub const TOOL_ID: &str = "submit_plan";

pub const APPROVED_TEXT: &str =
    "Plan approved. Proceed with implementation following the approved plan.";
pub const REJECTED_NO_FEEDBACK_TEXT: &str = "Plan was not approved. The user will send revision \
     instructions in their next message. Stop now and wait for the user to provide feedback before \
     revising the plan.";

pub fn rejected_with_feedback_text(feedback: &str) -> String {
    format!(
        "Plan was not approved. The user wants revisions.\n\nUser feedback: {feedback}\n\n\
         Please revise the plan based on the feedback and submit again with submit_plan."
    )
}

/// What approval notes add to the text an agent reads (ours).
fn notes_text(notes: &str) -> String {
    format!("\n\nReviewer notes: {}", notes.trim())
}

/// " (NAME)" after "The reviewer", where the reviewer's name is known.
fn reviewer_named(by: &str) -> String {
    match by.trim() {
        "" | "unknown" => String::new(),
        name => format!(" ({name})"),
    }
}

/// What the approval of a plan a reviewer edited adds (ours): that they changed it, and how.
fn edited_text(by: &str, diff: &str) -> String {
    format!(
        "\n\nThe reviewer{} changed the plan before approving it: the approved plan is their \
         version, which the plan file holds too. Their changes:\n\n```diff\n{}\n```",
        reviewer_named(by),
        diff.trim_end()
    )
}

/// What an agent that cannot be handed a reviewer's edit (`markdown`, by `by`) reads when the
/// edit is approved (ours): its own plan is not approved; the reviewer's is, once it presents
/// that one, with their notes.
pub fn present_edit_text(by: &str, markdown: &str, notes: Option<&str>) -> String {
    format!(
        "The reviewer{} changed your plan and approved only their version; yours is not \
         approved. Present their version for review as it stands, then carry it out:\n\n\
         {markdown}{}",
        reviewer_named(by),
        approval_addendum(None, notes)
    )
}

/// What follows the contract's approval text (ours): the reviewer's edit (who, and the diff),
/// then their notes. Empty without either, so a plain approval stays exactly the contract's.
pub fn approval_addendum(edit: Option<(&str, &str)>, notes: Option<&str>) -> String {
    let mut text = String::new();
    if let Some((by, diff)) = edit {
        text.push_str(&edited_text(by, diff));
    }
    if let Some(notes) = notes.map(str::trim).filter(|n| !n.is_empty()) {
        text.push_str(&notes_text(notes));
    }
    text
}

/// A plan file split into its title and body, as the host shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanText {
    pub title: String,
    pub plan: String,
}

/// Splits a plan file: if its first non-blank line is `# Title`, that is the title and the rest
/// (leading newlines removed) the plan; otherwise there is no title and the whole text is the plan.
/// Trailing whitespace is trimmed either way.
pub fn split_plan(text: &str) -> PlanText {
    let first_nonblank = text.lines().find(|l| !l.trim().is_empty());
    if let Some(line) = first_nonblank.filter(|l| l.starts_with("# ")) {
        // `line` borrows `text`: everything after it is the plan.
        let offset = line.as_ptr() as usize - text.as_ptr() as usize + line.len();
        let rest = text[offset..].trim_start_matches(['\n', '\r']).trim_end();
        return PlanText {
            title: line[2..].trim().to_owned(),
            plan: rest.to_owned(),
        };
    }
    PlanText {
        title: String::new(),
        plan: text.trim_end().to_owned(),
    }
}

/// The `submit_plan` tool.
#[derive(Debug, Default)]
pub struct SubmitPlan;

fn result(content: impl Into<String>, is_error: bool) -> ToolOutcome {
    ToolOutcome::Value(json!({"toolId": TOOL_ID, "content": content.into(), "isError": is_error}))
}

fn problem_text(err: &WorkspaceError, plans_dir: &str, path: &str) -> Option<String> {
    let fix = format!(
        "Write the plan as a Markdown file inside `{plans_dir}/` with write_file, then call \
         submit_plan with that path."
    );
    Some(match err {
        WorkspaceError::NotFound { .. } => format!("Plan file not found: `{path}`. {fix}"),
        WorkspaceError::Empty => format!("No plan file path was given. {fix}"),
        WorkspaceError::Absolute { .. } | WorkspaceError::Escapes { .. } | WorkspaceError::OutsidePlans { .. } => {
            format!("Plan file `{path}` is outside the plans folder `{plans_dir}/`. {fix}")
        }
        WorkspaceError::NotAFile { .. } => format!("Plan path `{path}` is not a file. {fix}"),
        WorkspaceError::NotRegular { kind, .. } => format!(
            "Plan path `{path}` is a {kind}, not a regular file; it was not read. {fix}"
        ),
        WorkspaceError::PlansDirLink { link, .. } => format!(
            "The plans folder `{plans_dir}/` goes through the symbolic link `{link}`, so plans \
             cannot be read from it. Ask the user to replace the link with a real folder."
        ),
        WorkspaceError::Symlink { link, .. } => format!(
            "Plan file `{path}` changed while it was read (`{link}` became a symbolic link). \
             Write the plan again and submit it."
        ),
        WorkspaceError::TooLarge { size, limit, .. } => format!(
            "Plan file `{path}` is {size} bytes; plans may be at most {limit} bytes (1 MiB). \
             Shorten the plan, keep it in the same file, and submit again."
        ),
        WorkspaceError::NotUtf8 { .. } => format!(
            "Plan file `{path}` is not UTF-8 text. Write the plan as plain Markdown text and submit again."
        ),
        _ => return None,
    })
}

impl SubmitPlan {
    /// The plan file, read only if the plans folder is a real folder (no link on the way to
    /// it), the file resolves inside it, and it is a regular file (a FIFO would hang the run).
    fn read_plan(&self, ctx: &ToolContext<'_>, path: &str) -> Result<PlanText, WorkspaceError> {
        let workspace = ctx.workspace;
        workspace.check_plans_dir()?;
        let resolved = workspace.resolve_existing(path)?;
        workspace.require_in_plans(&resolved, path)?;
        Ok(split_plan(&workspace.read_text(&resolved, path)?))
    }
}

impl Tool for SubmitPlan {
    fn name(&self) -> &'static str {
        TOOL_ID
    }

    fn description(&self) -> String {
        "Submit your implementation plan to the user for review. First write the complete plan as a \
         Markdown file in the plans folder with write_file (start it with a `# Title` line), then \
         call this tool with only the file's path. The run pauses until the user approves or \
         rejects the plan. If they ask for changes, revise the same file and submit its path again."
            .into()
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the plan file, relative to the workspace root"}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn resume_schema(&self) -> Option<Value> {
        Some(json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["approved", "rejected"]},
                "feedback": {"type": "string"},
                "notes": {"type": "string"},
                "edit": {
                    "type": "object",
                    "properties": {"by": {"type": "string"}, "diff": {"type": "string"}}
                },
                "path": {"type": "string"},
                "title": {"type": "string"},
                "plan": {"type": "string"}
            },
            "required": ["action"],
            "additionalProperties": false
        }))
    }

    fn execute(&self, ctx: &ToolContext<'_>, args: &Value) -> ToolOutcome {
        let path = args.get("path").and_then(Value::as_str).unwrap_or("");
        if !ctx.can_suspend {
            return ToolOutcome::Value(json!({
                "content": format!("[Plan submitted for review]\n\nPath: {path}"),
                "isError": false
            }));
        }
        if !Path::new(path)
            .extension()
            .is_some_and(|ext| ext.eq_ignore_ascii_case("md"))
        {
            return result(
                format!(
                    "Plan file `{path}` is not a Markdown file: its name must end in `.md`. Write \
                     the plan to a `.md` file inside `{}/` and submit that path.",
                    ctx.workspace.plans_dir()
                ),
                true,
            );
        }
        match self.read_plan(ctx, path) {
            Ok(PlanText { title, plan }) => ToolOutcome::Suspend {
                payload: json!({"toolId": TOOL_ID, "path": path, "title": title, "plan": plan}),
            },
            Err(err) => match problem_text(&err, ctx.workspace.plans_dir(), path) {
                Some(text) => result(text, true),
                None => result(format!("Failed to submit plan: {err}"), true),
            },
        }
    }

    fn resume(&self, _ctx: &ToolContext<'_>, _args: &Value, data: &Value) -> ToolOutcome {
        result_for(data)
    }
}

/// What the model gets for a person's decision (`data`: the schema-checked resume data): the
/// contract's result object. Pure, so the exact text can be recorded when the decision is.
pub fn result_for(data: &Value) -> ToolOutcome {
    let mut submitted = Map::new();
    for key in ["title", "path", "plan"] {
        if let Some(value) = data.get(key) {
            submitted.insert(key.to_owned(), value.clone());
        }
    }
    let feedback = data
        .get("feedback")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or("");
    let content = match data.get("action").and_then(Value::as_str) {
        // Ours: a reviewer's edit and approval notes follow the contract's text; without them
        // it is exact.
        Some("approved") => {
            let edit = data.get("edit");
            let edit = edit
                .and_then(|e| e.get("by"))
                .and_then(Value::as_str)
                .zip(edit.and_then(|e| e.get("diff")).and_then(Value::as_str));
            let notes = data.get("notes").and_then(Value::as_str);
            format!("{APPROVED_TEXT}{}", approval_addendum(edit, notes))
        }
        Some("rejected") if !feedback.is_empty() => {
            submitted.insert("feedback".to_owned(), json!(feedback));
            rejected_with_feedback_text(feedback)
        }
        Some("rejected") => REJECTED_NO_FEEDBACK_TEXT.to_owned(),
        other => {
            return result(
                format!("Failed to submit plan: unknown action {other:?}"),
                true,
            )
        }
    };
    ToolOutcome::Value(json!({
        "toolId": TOOL_ID,
        "content": content,
        "isError": false,
        "submittedPlan": submitted,
    }))
}

/// The resume data with its `plan` null, if it has one as text (not cloned): what a store
/// keeps when the plan is the decided revision's body, and what the answer to it says then.
pub fn without_plan(data: &Value) -> Option<Value> {
    let fields = data.as_object()?;
    fields.get("plan")?.as_str()?;
    let without = fields
        .iter()
        .map(|(key, value)| {
            let value = if key == "plan" {
                Value::Null
            } else {
                value.clone()
            };
            (key.clone(), value)
        })
        .collect();
    Some(Value::Object(without))
}

/// Whether a `submit_plan` result asks the run to stop and wait for the user's next message.
pub fn waits_for_user(result: &Value) -> bool {
    result.get("content").and_then(Value::as_str) == Some(REJECTED_NO_FEEDBACK_TEXT)
}

/// Whether a `submit_plan` result is an approval (with or without an edit and notes after the
/// contract's text).
pub fn is_approval(result: &Value) -> bool {
    result
        .get("content")
        .and_then(Value::as_str)
        .is_some_and(|c| c.starts_with(APPROVED_TEXT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_is_first_nonblank_heading_line() {
        let p = split_plan("\n\n# My plan  \n\n\nStep one\n\n  ");
        assert_eq!(
            p,
            PlanText {
                title: "My plan".into(),
                plan: "Step one".into()
            }
        );
    }

    #[test]
    fn no_heading_means_no_title_and_whole_text() {
        let p = split_plan("Intro\n# Later heading\n\n");
        assert_eq!(
            p,
            PlanText {
                title: String::new(),
                plan: "Intro\n# Later heading".into()
            }
        );
        let p = split_plan("## Sub\nbody");
        assert_eq!(p.title, "", "only a level-one `# ` heading is a title");
    }

    #[test]
    fn heading_only_gives_empty_plan() {
        assert_eq!(
            split_plan("# T"),
            PlanText {
                title: "T".into(),
                plan: String::new()
            }
        );
    }

    proptest::proptest! {
        #![proptest_config(crate::text::testing::proptest_config(256))]

        /// Any text: no panic; the title is one trimmed line from a `# ` heading; the plan is
        /// a piece of the text with no trailing whitespace.
        #[test]
        fn prop_split_plan_any_text(
            text in proptest::prelude::any::<String>(),
            heading in proptest::prelude::any::<bool>(),
        ) {
            let text = if heading { format!("# {text}") } else { text };
            let PlanText { title, plan } = split_plan(&text);
            proptest::prop_assert!(!title.contains('\n'), "{title:?}");
            proptest::prop_assert_eq!(title.trim(), title.as_str());
            proptest::prop_assert!(text.contains(plan.as_str()));
            proptest::prop_assert_eq!(plan.trim_end(), plan.as_str());
            if !title.is_empty() {
                let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                proptest::prop_assert!(first.starts_with("# "), "{first:?}");
            }
        }
    }
}
