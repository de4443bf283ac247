//! The JSON-RPC requests of the tasks extension, as `PlanServer` answers them: a
//! task-augmented `tools/call` starts `submit_plan` as a task of the table (see `table`), and
//! `tasks/get`, `tasks/list`, `tasks/result` and `tasks/cancel` are answered from it.

use futures::future::BoxFuture;
use rmcp::model::JsonObject;
use serde_json::{json, Value};

use super::{response, Owner, RpcError, TaskMethod, Work};
use crate::source::mcp::{failed, result_of, PlanServer};
use crate::token::Caller;
use crate::tool::submit_plan::TOOL_ID;

impl PlanServer {
    /// The answer to `message` if it is a request of the tasks extension (see `tasks`): a
    /// task-augmented `tools/call` or a `tasks/*` request, from `owner` (sent with the token
    /// `caller` over HTTP). The caller must have checked that the client speaks
    /// [`TASKS_VERSION`](super::TASKS_VERSION).
    pub(crate) fn task_reply(
        &self,
        message: &Value,
        owner: Owner,
        caller: Option<Caller>,
    ) -> Option<TaskReply> {
        let method = TaskMethod::of(message)?;
        let id = message["id"].clone();
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let tasks = self.tasks.clone();
        let response: BoxFuture<'static, Value> = match method {
            TaskMethod::Call => {
                let answer = self.start_task(owner, caller, &params);
                Box::pin(std::future::ready(response(&id, answer)))
            }
            TaskMethod::Get => Box::pin(std::future::ready(response(
                &id,
                tasks.get(&owner, &params["taskId"]),
            ))),
            TaskMethod::List => Box::pin(std::future::ready(response(
                &id,
                tasks.list(&owner, &params),
            ))),
            TaskMethod::Result => {
                Box::pin(
                    async move { response(&id, tasks.result(&owner, &params["taskId"]).await) },
                )
            }
            TaskMethod::Cancel => {
                Box::pin(
                    async move { response(&id, tasks.cancel(&owner, &params["taskId"]).await) },
                )
            }
        };
        Some(TaskReply { method, response })
    }

    /// `submit_plan` as a task: checked like a call, then started; its `CreateTaskResult`.
    fn start_task(
        &self,
        owner: Owner,
        caller: Option<Caller>,
        params: &Value,
    ) -> Result<Value, RpcError> {
        if params["name"] != TOOL_ID {
            return Err(RpcError::invalid_params(format!(
                "unknown tool `{}`; this server has `{TOOL_ID}`",
                crate::text::short(params["name"].as_str().unwrap_or_default(), 100)
            )));
        }
        let args = match params.get("arguments") {
            None | Some(Value::Null) => Value::Object(JsonObject::new()),
            Some(args @ Value::Object(_)) => args.clone(),
            Some(_) => return Err(RpcError::invalid_params("`arguments` must be an object")),
        };
        let server = self.clone();
        let work: Work = Box::new(move |stop| {
            Box::pin(async move {
                let mut stopped = server.stopped.clone();
                let stop = async move {
                    tokio::select! {
                        () = stop => {}
                        _ = stopped.wait_for(|stop| *stop) => {}
                    }
                };
                // A task's client polls: it has no call to keep alive with progress.
                let never = std::future::pending();
                let value = server.submit_plan(args, caller.as_ref(), stop, never).await;
                serde_json::to_value(result_of(&value)).unwrap_or_else(|err| {
                    json!({"content": [{"type": "text", "text": failed(&err.to_string()).to_string()}],
                           "isError": true})
                })
            })
        });
        self.tasks.create(owner, &params["task"], work)
    }
}

/// A request of the tasks extension and its answer (a whole JSON-RPC response), which for
/// `tasks/result` may take hours.
pub(crate) struct TaskReply {
    pub method: TaskMethod,
    pub response: BoxFuture<'static, Value>,
}

impl std::fmt::Debug for TaskReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskReply")
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}
