//! The tasks of MCP 2025-11-25 for `submit_plan`: a client that asks for one (`tools/call` with
//! a `task` param) is answered at once with a task it polls (`tasks/get`), whose result it
//! fetches (`tasks/result`, which waits until a person decided) and which it may list
//! (`tasks/list`) or cancel (`tasks/cancel`). rmcp implements only the later form of tasks
//! (SEP-2663), so these requests are answered here, before rmcp sees them, on both transports;
//! `initialize` and `tools/list` answers are completed here with what rmcp's types cannot say
//! (the `tasks` capability and the tool's `execution.taskSupport`).
//!
//! A task's plan is abandoned, as a call's is when its client gives up, when the task is
//! cancelled, when its ttl runs out (result fetched or not: after it nobody can fetch one), when
//! its client's session ends (stdin closes; `DELETE /mcp`), when its client over HTTP falls
//! silent (see `liveness`) and when the server stops. A task
//! belongs to its client (over HTTP: the token and the session id); to anyone else it does not
//! exist. Task ids are 122 random bits; each client has at most [`MAX_TASKS`].
//!
//! Here are the protocol's pieces: recognising a request, its errors and responses, and what
//! rmcp's answers lack. The tasks themselves and their lifecycle are in `table`; how
//! `PlanServer` answers each request (and starts `submit_plan` as a task) in `requests`.

mod liveness;
mod requests;
mod table;

pub(crate) use self::requests::TaskReply;
pub(crate) use self::table::{Tasks, Work};

use std::time::Duration;

use serde_json::{json, Value};

/// The protocol version whose tasks these are.
pub(crate) const TASKS_VERSION: &str = "2025-11-25";
/// Tasks one client (a stdio server's client; a token over HTTP) may hold at once, finished or
/// not: enough for an agent with several plans in flight.
pub(crate) const MAX_TASKS: usize = 32;
/// How often clients are asked to poll unless `PLANDESK_MCP_POLL_MS` says otherwise.
const POLL_EVERY: Duration = Duration::from_secs(5);
const MIN_POLL_EVERY: Duration = Duration::from_millis(100);
/// A client over HTTP silent for this many poll intervals (and at least [`MIN_SILENCE`]) is
/// taken to be gone, unless `PLANDESK_MCP_TASK_IDLE_MS` sets the limit.
const SILENCE_POLLS: u32 = 6;
const MIN_SILENCE: Duration = Duration::from_secs(30);

const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
const IMMEDIATE_RESPONSE: &str = "io.modelcontextprotocol/model-immediate-response";
/// What a host may hand its model while the task waits.
const IMMEDIATE_TEXT: &str = "Your plan was submitted to a person for review in Plandesk. \
     Their decision will be this task's result; do not submit the plan again meanwhile.";

/// JSON-RPC error codes.
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;

/// Whom a task belongs to: the token over HTTP (`Caller::token_key`; "stdio" for `plandesk
/// mcp`), and the client's session. The limit on tasks counts per `principal`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Owner {
    pub principal: String,
    pub session: Option<String>,
}

/// A request of the tasks extension, recognised in a client's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskMethod {
    /// `tools/call` with a `task` param.
    Call,
    Get,
    Result,
    List,
    Cancel,
}

impl TaskMethod {
    /// The tasks request `message` is, if it is one (a request with an id).
    pub(crate) fn of(message: &Value) -> Option<Self> {
        let id = message.get("id")?;
        if !(id.is_string() || id.is_number()) {
            return None;
        }
        let method = match message.get("method")?.as_str()? {
            "tools/call" => {
                let task = message.get("params")?.get("task")?;
                return (!task.is_null()).then_some(Self::Call);
            }
            "tasks/get" => Self::Get,
            "tasks/result" => Self::Result,
            "tasks/list" => Self::List,
            "tasks/cancel" => Self::Cancel,
            _ => return None,
        };
        Some(method)
    }
}

/// A JSON-RPC error, as a task request is refused.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        Self {
            code: INVALID_PARAMS,
            message: message.into(),
        }
    }

    fn not_found() -> Self {
        Self::invalid_params("Failed to retrieve task: Task not found (or it has expired)")
    }
}

/// The JSON-RPC response to request `id`.
pub(crate) fn response(id: &Value, answer: Result<Value, RpcError>) -> Value {
    match answer {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(err) => json!({"jsonrpc": "2.0", "id": id,
                           "error": {"code": err.code, "message": err.message}}),
    }
}

/// `initialize`'s result as the client should have it: with the `tasks` capability if the
/// client declared tasks of its own and the version agreed is [`TASKS_VERSION`].
pub(crate) fn complete_initialize(result: &mut Value, client_declared: bool) {
    if !client_declared || result["protocolVersion"] != TASKS_VERSION {
        return;
    }
    if let Some(capabilities) = result
        .get_mut("capabilities")
        .and_then(Value::as_object_mut)
    {
        capabilities.insert(
            "tasks".into(),
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        );
    }
}

/// Whether an `initialize` request's client declares tasks of its own.
pub(crate) fn declares_tasks(initialize: &Value) -> bool {
    initialize["params"]["capabilities"]["tasks"].is_object()
}

/// `tools/list`'s result at [`TASKS_VERSION`]: `submit_plan` may be called as a task (a client
/// uses it only where the server declared the capability); `report_progress` answers at once.
pub(crate) fn complete_tools(result: &mut Value) {
    if let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) {
        for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
            if tool.get("name").and_then(Value::as_str) == Some(crate::tool::submit_plan::TOOL_ID) {
                tool.insert("execution".into(), json!({"taskSupport": "optional"}));
            }
        }
    }
}

/// How often clients are asked to poll: `PLANDESK_MCP_POLL_MS` (at least 100), else 5 s.
pub(crate) fn poll_every() -> Duration {
    env_ms("PLANDESK_MCP_POLL_MS").map_or(POLL_EVERY, |set| set.max(MIN_POLL_EVERY))
}

/// `plandesk serve`'s poll interval and silence limit (see `liveness`): the limit is six poll
/// intervals, at least 30 s; where `PLANDESK_MCP_TASK_IDLE_MS` sets it (for tests), the poll
/// interval is cut to a sixth of it if longer, so a client that polls as told is never silent
/// that long.
pub(crate) fn http_timing() -> (Duration, Duration) {
    let poll = poll_every();
    match env_ms("PLANDESK_MCP_TASK_IDLE_MS") {
        Some(limit) => {
            let limit = limit.max(MIN_POLL_EVERY * SILENCE_POLLS);
            (poll.min(limit / SILENCE_POLLS), limit)
        }
        None => (poll, (poll * SILENCE_POLLS).max(MIN_SILENCE)),
    }
}

/// A duration of milliseconds from the environment.
fn env_ms(name: &str) -> Option<Duration> {
    std::env::var(name)
        .ok()
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
}

/// `30 s`, `1.5 s`: a limit as a client's developer reads it.
fn seconds(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_requests_are_recognised() {
        let call = |params: Value| json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        assert_eq!(
            TaskMethod::of(&call(json!({"name": "submit_plan", "task": {}}))),
            Some(TaskMethod::Call)
        );
        assert_eq!(TaskMethod::of(&call(json!({"name": "submit_plan"}))), None);
        assert_eq!(
            TaskMethod::of(&call(json!({"name": "submit_plan", "task": null}))),
            None
        );
        assert_eq!(
            TaskMethod::of(
                &json!({"jsonrpc": "2.0", "id": "a", "method": "tasks/result", "params": {}})
            ),
            Some(TaskMethod::Result)
        );
        assert_eq!(
            TaskMethod::of(&json!({"jsonrpc": "2.0", "method": "tasks/get", "params": {}})),
            None,
            "a notification is no request"
        );
        assert_eq!(
            TaskMethod::of(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
            None
        );
    }

    #[test]
    fn initialize_and_tools_list_say_what_rmcp_cannot() {
        let mut result = json!({"protocolVersion": TASKS_VERSION, "capabilities": {"tools": {}}});
        complete_initialize(&mut result, false);
        assert!(
            result["capabilities"].get("tasks").is_none(),
            "the client declared none"
        );
        complete_initialize(&mut result, true);
        assert_eq!(
            result["capabilities"]["tasks"]["requests"]["tools"]["call"],
            json!({})
        );
        let mut later = json!({"protocolVersion": "2026-07-28", "capabilities": {}});
        complete_initialize(&mut later, true);
        assert!(
            later["capabilities"].get("tasks").is_none(),
            "another version's tasks differ"
        );
        let mut tools = json!({"tools": [{"name": "submit_plan"}]});
        complete_tools(&mut tools);
        assert_eq!(tools["tools"][0]["execution"]["taskSupport"], "optional");
    }

    #[test]
    fn limits_read_as_seconds() {
        assert_eq!(seconds(MIN_SILENCE), "30 s");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(seconds(POLL_EVERY * SILENCE_POLLS), "30 s");
    }
}
