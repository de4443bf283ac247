//! `submit_plan` as MCP hosts see it: its title, descriptions written for them (the call waits
//! for a person, possibly hours), its input schemas (a file in the workspace, or the plan in the
//! call) and the schema of its structured result.

use super::*;

/// What hosts show for the tool.
pub(super) const TITLE: &str = "Submit plan for review";

/// The local tool's description, for MCP hosts: they write files with tools of their own
/// (the engine's description names its `write_file`), so it says where the file goes, how its
/// path is judged, and that the call waits for a person.
pub(super) fn workspace_description(workspace: &Workspace) -> String {
    let plans = workspace.plans_dir();
    let root = workspace.root().display();
    format!(
        "Submit your implementation plan to a person for review in Plandesk, and wait for \
         their decision. First write the complete plan as a Markdown file in the plans folder \
         `{plans}/` of the workspace `{root}`, starting with a `# Title` line (UTF-8, at most \
         1 MiB, a name ending in `.md`). Then call this tool with only that file's path, \
         relative to the workspace, such as `{plans}/add-cache.md`. The path is judged as \
         given, after symbolic links are followed: an absolute path, one that leads outside \
         the plans folder, a missing file or one not ending in `.md` is refused at once, with \
         what to fix. The call then waits until the person approves or rejects the plan, \
         which may take minutes or hours; do not call it again meanwhile. If they ask for \
         changes, revise the same file and submit its path again (one path is one plan, each \
         submission a revision of it); if the result says to stop, stop and wait for the user."
    )
}

/// The remote tool's description: the plan travels in the call.
pub(super) const INLINE_DESCRIPTION: &str =
    "Submit your implementation plan to a person for review in \
     Plandesk, and wait for their decision. Pass the complete plan as Markdown in `plan` \
     (start it with a `# Title` line; at most 1 MiB) and a short relative name for it in \
     `path`, ending in `.md`, such as `plans/add-cache.md`: plans submitted with one `path` are \
     revisions of one plan. Plandesk reads no file on your machine; only what you pass is \
     reviewed. The call waits until the person approves or rejects the plan, which may take \
     minutes or hours; do not call it again meanwhile. If they ask for changes, revise the \
     plan and submit it again with the same `path`; if the result says to stop, stop and wait \
     for the user.";

/// The longest `path` the remote tool takes.
pub(super) const MAX_INLINE_PATH: usize = 256;

pub(super) fn tool(description: String, input_schema: Value) -> Tool {
    let annotations = ToolAnnotations::with_title(TITLE)
        // It records a plan and asks a person: not read-only. It only adds (a revision, a
        // decision), never destroys; each call asks anew (not idempotent); and it reaches
        // nothing outside Plandesk's own inbox (a closed world).
        .read_only(false)
        .destructive(false)
        .idempotent(false)
        .open_world(false);
    Tool::new(TOOL_ID, description, Arc::new(object(input_schema)))
        .with_title(TITLE)
        .with_raw_output_schema(Arc::new(object(output_schema())))
        .with_annotations(annotations)
}

pub(super) fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    }
}

/// The contract's result object, which every answer but a validation error is (that one is
/// an error result, whose structured content clients do not check).
pub(super) fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "toolId": {"type": "string", "enum": [TOOL_ID]},
            "content": {"type": "string", "description": "What to do next: proceed with the approved plan, revise it with the user's feedback, stop and wait for the user, or what to fix before submitting again"},
            "isError": {"type": "boolean", "description": "true when the plan was not put to the user; fix what `content` says"},
            "submittedPlan": {
                "type": "object",
                "description": "The plan as decided (a reviewer may have edited it before approving)",
                "properties": {
                    "title": {"type": "string"},
                    "path": {"type": "string"},
                    "plan": {"type": "string"},
                    "feedback": {"type": "string", "description": "The user's feedback, when they asked for changes"}
                },
                "required": ["title", "path", "plan"]
            }
        },
        "required": ["toolId", "content", "isError"]
    })
}

pub(super) fn inline_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "A relative name for the plan (e.g. `plans/add-cache.md`); keep it across revisions"},
            "plan": {"type": "string", "description": "The whole plan, as Markdown"}
        },
        "required": ["path", "plan"],
        "additionalProperties": false
    })
}
