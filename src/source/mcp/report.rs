//! `report_progress`: after its plan was approved, an MCP client says what it did (files it
//! created or changed, commands it ran, that it finished), and Plandesk holds it against the
//! approved plan, as it does Claude Code's after-tool hooks. It answers at once; a report
//! before any approval records nothing and says so. Bounded like every input: a few hundred
//! files and commands per call, paths kept as names (never opened).

use super::tool::object;
use super::*;
use crate::source::after;
use crate::store::{NewWork, Work, WorkKind, WorkOf};

pub(super) const REPORT_ID: &str = "report_progress";
/// The most files and commands one report takes.
const MAX_FILES: usize = 200;
const MAX_COMMANDS: usize = 50;

const DESCRIPTION: &str = "After your plan was approved (submit_plan said so), tell Plandesk \
     what you did, so the person who approved it sees how far the plan got: the files you \
     created or changed (`files`, paths relative to the workspace), the commands you ran with \
     their exit codes (`commands`), and `finished: true` once the plan's work is done. Call it \
     after each step or at the end; it answers at once. Nothing is recorded before an approval.";

pub(super) fn report_tool() -> Tool {
    let annotations = ToolAnnotations::with_title("Report progress on the approved plan")
        .read_only(false)
        .destructive(false)
        .idempotent(false)
        .open_world(false);
    Tool::new(REPORT_ID, DESCRIPTION, Arc::new(object(report_schema())))
        .with_title("Report progress on the approved plan")
        .with_annotations(annotations)
}

fn report_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "files": {
                "type": "array", "maxItems": MAX_FILES,
                "items": {"type": "string", "minLength": 1, "maxLength": 4096},
                "description": "Files you created or changed, relative to the workspace"
            },
            "commands": {
                "type": "array", "maxItems": MAX_COMMANDS,
                "items": {
                    "type": "object",
                    "properties": {
                        "command": {"type": "string", "minLength": 1, "maxLength": 2000},
                        "exitCode": {"type": "integer"}
                    },
                    "required": ["command"],
                    "additionalProperties": false
                },
                "description": "Commands you ran, each with its exit code"
            },
            "finished": {"type": "boolean", "description": "true once the approved plan's work is done"}
        },
        "additionalProperties": false
    })
}

impl PlanServer {
    /// Records a report of the session `caller` (over HTTP) or this server's (stdio).
    pub(super) async fn report(&self, args: &Value, caller: Option<&Caller>) -> CallToolResult {
        let violations = schema::validate(&report_schema(), args);
        if !violations.is_empty() {
            let refused = schema::validation_error(REPORT_ID, "input", args, &violations);
            return text_result(refused.to_string(), true);
        }
        let (session, cwd) = match (&*self.input, caller) {
            (PlanInput::Workspace(options), _) => (
                self.session.clone(),
                options.workspace.display().to_string(),
            ),
            // Over HTTP the workspace is on the client's machine: its paths are only names.
            (PlanInput::Inline(_), Some(caller)) => {
                (format!("serve:{}", caller.session_owner()), String::new())
            }
            (PlanInput::Inline(_), None) => {
                return text_result("the request carries no authenticated token".into(), true)
            }
        };
        let of = WorkOf::Session {
            kind: SourceKind::Mcp,
            session: &session,
        };
        let mut records: Vec<Work> = Vec::new();
        for named in args["files"].as_array().into_iter().flatten() {
            // Relative to the workspace as given: its paths are the client's names for its files.
            if let Some((path, outside)) =
                named.as_str().and_then(|n| after::workspace_path(&cwd, n))
            {
                let data = json!({"tool": REPORT_ID, "outside": outside});
                records.push(Work::file(path, data));
            }
        }
        for command in args["commands"].as_array().into_iter().flatten() {
            let text = command["command"].as_str().unwrap_or_default().trim();
            if text.is_empty() || text.chars().any(char::is_control) {
                continue;
            }
            let exit = command["exitCode"].as_i64();
            records.push(after::command_work(text, exit, REPORT_ID));
        }
        if args["finished"] == true {
            records.push(Work::of_kind(
                WorkKind::Finished,
                json!({"tool": REPORT_ID}),
            ));
        }
        let review = self.engine.review();
        let mut recorded = 0;
        for work in &records {
            let work = NewWork {
                of,
                at: self.engine.now_millis(),
                work: work.clone(),
            };
            match review.record_work(&work).await {
                Ok(Some(_)) => recorded += 1,
                Ok(None) => {
                    return text_result(
                        "Nothing recorded: no plan of yours is approved yet. Submit your plan \
                         with submit_plan and wait for the approval first."
                            .into(),
                        false,
                    )
                }
                Err(err) => return text_result(format!("Nothing more recorded: {err}"), true),
            }
        }
        text_result(
            format!(
                "Recorded {recorded} of {} against the approved plan.",
                records.len()
            ),
            false,
        )
    }
}

fn text_result(text: String, is_error: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(text)];
    if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}
