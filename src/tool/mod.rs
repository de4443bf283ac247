//! Tools a model can call. A tool either answers at once, fails, or suspends the run until a
//! person (the host) resumes it with resume data.

pub mod files;
pub mod schema;
pub mod submit_plan;

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::workspace::Workspace;

pub use files::{ListFiles, ReadFile, WriteFile, WriteScope};
pub use submit_plan::SubmitPlan;

/// What a tool call came to.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// The result object the model sees (a `tool-result` chunk).
    Value(Value),
    /// The tool failed (a `tool-error` chunk); the text names what failed and on which input.
    Failed(String),
    /// The run must wait for the host: `payload` is shown to the person, and the tool expects
    /// resume data matching `resume_schema`.
    Suspend { payload: Value },
}

/// What a tool may look at while it runs.
#[derive(Debug, Clone, Copy)]
pub struct ToolContext<'a> {
    pub workspace: &'a Workspace,
    pub run_id: &'a str,
    pub tool_call_id: &'a str,
    /// False when the tool is executed outside an agent run, where nothing can be suspended.
    pub can_suspend: bool,
    /// The run was started with auto-approve: gated tools run without asking.
    pub auto_approve: bool,
}

pub trait Tool: Send + Sync + fmt::Debug {
    fn name(&self) -> &'static str;
    fn description(&self) -> String;
    /// JSON-Schema of the arguments; arguments are checked against it before `execute`.
    fn input_schema(&self) -> Value;
    /// JSON-Schema of the resume data, for tools that suspend.
    fn resume_schema(&self) -> Option<Value> {
        None
    }
    /// Whether this call must be approved by a person before it runs.
    fn requires_approval(&self, _ctx: &ToolContext<'_>) -> bool {
        false
    }
    /// Whether a call of this tool only reads: it changes nothing, in the workspace or
    /// elsewhere, never suspends and is never held for approval. A step whose calls all only
    /// read is saved once, at its end, with the model's turn that asked for them.
    fn reads_only(&self) -> bool {
        false
    }
    fn execute(&self, ctx: &ToolContext<'_>, args: &Value) -> ToolOutcome;
    /// Continues a suspended call with the host's (already schema-checked) resume data. The
    /// outcome must follow from `resume_data` alone, with no effect outside the run: the
    /// engine records it without waiting for the disk, since a decision recorded durably
    /// gives the same outcome again.
    fn resume(&self, _ctx: &ToolContext<'_>, _args: &Value, resume_data: &Value) -> ToolOutcome {
        ToolOutcome::Failed(format!(
            "{} cannot be resumed (resume data {resume_data})",
            self.name()
        ))
    }
}

/// The JSON-Schema of approval resume data: `{approved, reason?}`.
pub fn approval_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "approved": {"type": "boolean"},
            "reason": {"type": "string"}
        },
        "required": ["approved"],
        "additionalProperties": false
    })
}

/// What the model is told when a person declines a tool call without saying why.
pub const DEFAULT_DECLINE_REASON: &str = "Tool call was not approved by the user";

/// A named set of tools, in the order the model is shown them.
#[derive(Debug, Clone, Default)]
pub struct ToolSet(Vec<Arc<dyn Tool>>);

impl ToolSet {
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        Self(tools)
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.0.iter().find(|t| t.name() == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.0.iter()
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|t| t.name()).collect()
    }

    /// Adds `others`, replacing tools of the same name.
    pub fn merged(&self, others: &ToolSet) -> ToolSet {
        let mut tools: Vec<Arc<dyn Tool>> = self
            .0
            .iter()
            .filter(|t| others.get(t.name()).is_none())
            .cloned()
            .collect();
        tools.extend(others.0.iter().cloned());
        ToolSet(tools)
    }
}

/// Runs a tool outside any agent run (no suspension available): arguments are checked first.
pub fn execute_standalone(tool: &dyn Tool, workspace: &Workspace, args: &Value) -> ToolOutcome {
    let ctx = ToolContext {
        workspace,
        run_id: "",
        tool_call_id: "",
        can_suspend: false,
        auto_approve: false,
    };
    let violations = schema::validate(&tool.input_schema(), args);
    if !violations.is_empty() {
        return ToolOutcome::Value(schema::validation_error(
            tool.name(),
            "input",
            args,
            &violations,
        ));
    }
    tool.execute(&ctx, args)
}
