//! `plandesk mcp`: an MCP server over stdio (rmcp) whose one tool, `submit_plan`, is our
//! engine's contract exactly: input `{path}` relative to the workspace, the same file checks,
//! and, once a person decides, the same result object and texts. The call blocks until then;
//! a client that goes away (cancels the call, closes stdin, or kills the server) leaves the
//! plan closed as abandoned, never pending forever.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::watch;

use super::{review_plan, stop_requested, Answer, SourceError, WaitSettings, EXPIRED_TEXT};
use crate::engine::Engine;
use crate::review::ExternalPlan;
use crate::store::{Source, SourceKind};
use crate::tool::submit_plan::{split_plan, SubmitPlan, TOOL_ID};
use crate::tool::{schema, Tool as _, ToolContext, ToolOutcome};
use crate::workspace::Workspace;

/// How the server was started.
#[derive(Debug, Clone)]
pub struct McpOptions {
    pub workspace: PathBuf,
    pub plans_dir: Option<String>,
    pub wait: WaitSettings,
}

#[derive(Clone)]
struct PlanServer {
    engine: Engine,
    options: Arc<McpOptions>,
    /// This server's session: its plans are revisions of one thread per file.
    session: String,
    /// Flips to `true` the moment stdin reaches its end (the client went away).
    disconnected: watch::Receiver<bool>,
}

impl std::fmt::Debug for PlanServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanServer")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

/// Serves MCP on stdin/stdout until the client closes stdin.
pub async fn serve(engine: Engine, options: McpOptions) -> Result<(), String> {
    // Checked before the handshake, so a wrong folder is one clear line, not a broken session.
    Workspace::open(&options.workspace, options.plans_dir.as_deref()).map_err(|e| e.to_string())?;
    let (tx, rx) = watch::channel(false);
    let server = PlanServer {
        engine,
        options: Arc::new(options),
        session: uuid::Uuid::new_v4().simple().to_string(),
        disconnected: rx,
    };
    let (stdin, stdout) = rmcp::transport::stdio();
    let stdin = EofWatch {
        inner: stdin,
        eof: tx,
    };
    let running = server
        .serve((stdin, stdout))
        .await
        .map_err(|e| format!("the MCP handshake failed: {e}"))?;
    running
        .waiting()
        .await
        .map_err(|e| format!("the MCP session ended with an error: {e}"))?;
    Ok(())
}

/// Stdin that tells the server at once when it ends (rmcp itself only cancels running calls a
/// few seconds later, after clients have usually killed the server).
struct EofWatch<R> {
    inner: R,
    eof: watch::Sender<bool>,
}

impl<R: AsyncRead + Unpin> AsyncRead for EofWatch<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(poll, Poll::Ready(Ok(()))) && buf.filled().len() == before {
            let _ = self.eof.send(true);
        }
        poll
    }
}

fn tool() -> Tool {
    let tool = SubmitPlan;
    let Value::Object(schema) = tool.input_schema() else {
        return Tool::new(TOOL_ID, tool.description(), Arc::new(JsonObject::new()));
    };
    Tool::new(TOOL_ID, tool.description(), Arc::new(schema))
}

/// A result object as the model sees it: one text block holding the JSON.
fn result_of(value: &Value) -> CallToolResult {
    let content = vec![ContentBlock::text(value.to_string())];
    if value["isError"] == true {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

impl PlanServer {
    /// The tool's whole behaviour: check the file as the engine does, hand the plan to a person,
    /// and answer with the contract's result object.
    async fn submit_plan(&self, args: Value, context: &RequestContext<RoleServer>) -> Value {
        let workspace =
            match Workspace::open(&self.options.workspace, self.options.plans_dir.as_deref()) {
                Ok(workspace) => workspace,
                Err(err) => return failed(&err.to_string()),
            };
        let tool = SubmitPlan;
        let violations = schema::validate(&tool.input_schema(), &args);
        if !violations.is_empty() {
            return schema::validation_error(TOOL_ID, "input", &args, &violations);
        }
        let checked = {
            let (workspace, args) = (workspace.clone(), args.clone());
            tokio::task::spawn_blocking(move || SubmitPlan.execute(&standalone(&workspace), &args))
                .await
        };
        let payload = match checked {
            Ok(ToolOutcome::Suspend { payload }) => payload,
            Ok(ToolOutcome::Value(result)) => return result,
            Ok(ToolOutcome::Failed(message)) => return failed(&message),
            Err(join) => return failed(&join.to_string()),
        };
        let field = |key: &str| payload[key].as_str().unwrap_or_default().to_owned();
        let (path, title, body) = (field("path"), field("title"), field("plan"));
        let text = if title.is_empty() {
            body.clone()
        } else {
            format!("# {title}\n\n{body}")
        };
        let plan = ExternalPlan {
            source: Source {
                kind: SourceKind::Mcp,
                session: Some(self.session.clone()),
            },
            cwd: workspace.root().display().to_string(),
            prompt: format!("MCP client in {}", workspace.root().display()),
            tool_name: TOOL_ID.into(),
            path: path.clone(),
            text,
            item_id: None,
        };
        let mut disconnected = self.disconnected.clone();
        let stop = async move {
            tokio::select! {
                () = context.ct.cancelled() => {}
                _ = disconnected.wait_for(|gone| *gone) => {}
                () = stop_requested() => {}
            }
        };
        let answer = match review_plan(&self.engine, plan, &self.options.wait, stop).await {
            Ok(answer) => answer,
            Err(err) => return failed(&err.to_string()),
        };
        let mut data = json!({"path": path, "title": title, "plan": body});
        match answer {
            Answer::Approve(approval) => {
                data["action"] = json!("approved");
                if let Some(notes) = approval.notes {
                    data["notes"] = json!(notes);
                }
                if let Some(edit) = approval.edit {
                    let edited = split_plan(&edit.markdown);
                    data["title"] = json!(edited.title);
                    data["plan"] = json!(edited.plan);
                    data["edit"] = json!({"by": edit.by, "diff": edit.diff});
                }
            }
            Answer::Revise(feedback) => {
                data["action"] = json!("rejected");
                data["feedback"] = json!(feedback);
            }
            Answer::Wait => data["action"] = json!("rejected"),
            Answer::Expired => {
                return json!({"toolId": TOOL_ID, "content": EXPIRED_TEXT, "isError": false,
                              "submittedPlan": {"title": title, "path": path, "plan": body}})
            }
            Answer::Abandoned => return failed(&SourceError::Stopped.to_string()),
        }
        match tool.resume(&standalone(&workspace), &args, &data) {
            ToolOutcome::Value(result) => result,
            ToolOutcome::Failed(message) => failed(&message),
            ToolOutcome::Suspend { .. } => failed("the plan was suspended twice"),
        }
    }
}

/// What `submit_plan` sees of its call here: the workspace, and a person to wait for.
fn standalone(workspace: &Workspace) -> ToolContext<'_> {
    ToolContext {
        workspace,
        run_id: "",
        tool_call_id: "",
        can_suspend: true,
        auto_approve: false,
    }
}

/// The contract's "unexpected failure" result.
fn failed(message: &str) -> Value {
    json!({"toolId": TOOL_ID, "content": format!("Failed to submit plan: {message}"), "isError": true})
}

impl ServerHandler for PlanServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("plandesk", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![tool()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == TOOL_ID).then(tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL_ID {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{}`; this server has `{TOOL_ID}`",
                    request.name
                ),
                None,
            ));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let result = self.submit_plan(args, &context).await;
        Ok(result_of(&result).into())
    }
}
