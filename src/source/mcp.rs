//! `submit_plan` over MCP, for two transports sharing one handler. `plandesk mcp` (stdio,
//! rmcp): the tool is our engine's contract exactly: input `{path}` relative to the workspace,
//! the same file checks, and, once a person decides, the same result object and texts.
//! `plandesk serve` (streamable HTTP): the agent is on another machine whose files Plandesk
//! cannot read, so the input is `{path, plan}`: the plan's markdown itself, and a relative path
//! that names it (plans with one path are revisions of one thread); the results are the same.
//! Either way the call blocks until a person decides; a client that goes away (cancels the
//! call, closes stdin or its connection, or kills the server) leaves the plan closed as
//! abandoned, never pending forever. The result object is also the call's structured content,
//! described by the tool's output schema; the descriptions are written for MCP hosts, which
//! write files with tools of their own. A 2025-11-25 client may instead call the tool as a
//! task it polls (see `tasks`): on both transports those requests are answered before rmcp.

mod report;
mod stdio;
mod tasks;
mod tool;

pub(crate) use self::tasks::{
    complete_initialize, complete_tools, declares_tasks, Owner, TaskMethod, TaskReply, Tasks,
    TASKS_VERSION,
};
use self::tool::{inline_schema, tool, workspace_description, INLINE_DESCRIPTION, MAX_INLINE_PATH};

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Value};
use tokio::sync::watch;

use super::{review_plan, stop_requested, Answer, SourceError, WaitSettings, EXPIRED_TEXT};
use crate::engine::Engine;
use crate::review::{ExternalPlan, PlanFile};
use crate::store::{Actor, Source};
use crate::token::Caller;
use crate::tool::submit_plan::{result_for, split_plan, SubmitPlan, TOOL_ID};
use crate::tool::{schema, Tool as _, ToolContext, ToolOutcome};
use crate::vocabulary::SourceKind;
use crate::workspace::{Workspace, MAX_FILE_BYTES};

/// How the server was started.
#[derive(Debug, Clone)]
pub struct McpOptions {
    pub workspace: PathBuf,
    pub plans_dir: Option<String>,
    pub wait: WaitSettings,
}

/// Where `submit_plan` finds the plan.
#[derive(Debug, Clone)]
enum PlanInput {
    /// `plandesk mcp`: a file in the workspace's plans folder, by path.
    Workspace(McpOptions),
    /// `plandesk serve`: the markdown in the call; the caller is the token its request carried.
    Inline(WaitSettings),
}

/// The MCP server behind both transports. Cheap to clone (rmcp's HTTP service makes one per
/// request).
#[derive(Clone)]
pub(crate) struct PlanServer {
    engine: Engine,
    input: Arc<PlanInput>,
    /// `submit_plan` as hosts see it (its description names this server's plans folder).
    tool: Arc<Tool>,
    /// This server's session (stdio): its plans are revisions of one thread per file.
    session: String,
    /// Flips to `true` when every waiting call must stop: stdin reached its end (the client
    /// went away), or the server is shutting down.
    stopped: watch::Receiver<bool>,
    /// How often a waiting call that carries a progress token reports progress.
    progress_every: Duration,
    /// The calls made as tasks (2025-11-25), with their results.
    tasks: Arc<Tasks>,
}

impl std::fmt::Debug for PlanServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanServer")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl PlanServer {
    /// The server `plandesk serve` puts behind `/mcp`.
    pub(crate) fn inline(
        engine: Engine,
        wait: WaitSettings,
        stopped: watch::Receiver<bool>,
    ) -> Self {
        Self {
            engine,
            tool: Arc::new(tool(INLINE_DESCRIPTION.to_owned(), inline_schema())),
            input: Arc::new(PlanInput::Inline(wait)),
            session: String::new(),
            stopped,
            progress_every: progress_every(),
            tasks: {
                // Over HTTP a client that vanished says nothing: its silence is the sign.
                let (poll_every, silence) = tasks::http_timing();
                Tasks::new(poll_every, Some(silence))
            },
        }
    }

    /// This server's tasks.
    pub(crate) fn tasks(&self) -> &Arc<Tasks> {
        &self.tasks
    }
}

/// Serves MCP on stdin/stdout until the client closes stdin.
pub async fn serve(engine: Engine, options: McpOptions) -> Result<(), String> {
    // Checked before the handshake, so a wrong folder is one clear line, not a broken session.
    let workspace = Workspace::open(&options.workspace, options.plans_dir.as_deref())
        .map_err(|e| e.to_string())?;
    let (tx, rx) = watch::channel(false);
    let tx = Arc::new(tx);
    let signalled = tx.clone();
    tokio::spawn(async move {
        stop_requested().await;
        let _ = signalled.send(true);
    });
    let session = uuid::Uuid::new_v4().simple().to_string();
    let server = PlanServer {
        engine,
        tool: Arc::new(tool(
            workspace_description(&workspace),
            SubmitPlan.input_schema(),
        )),
        input: Arc::new(PlanInput::Workspace(options)),
        session: session.clone(),
        stopped: rx,
        progress_every: progress_every(),
        // On stdio a client that goes away closes stdin: that is noticed at once.
        tasks: Tasks::new(tasks::poll_every(), None),
    };
    stdio::serve(server, session, tx).await
}

/// A result object as the model sees it: one text block holding the JSON, and the same
/// object as structured content where it is the contract's (see [`output_schema`]). A
/// validation error (`error: true`) is an error result too.
fn result_of(value: &Value) -> CallToolResult {
    let is_error = value["isError"] == true || value["error"] == true;
    if value.get("toolId").is_some() {
        let mut result = CallToolResult::structured(value.clone());
        result.is_error = Some(is_error);
        return result;
    }
    let content = vec![ContentBlock::text(value.to_string())];
    if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// A plan ready to be put in front of a person, and who sent it.
struct Submitted {
    engine: Engine,
    wait: WaitSettings,
    plan: ExternalPlan,
    title: String,
    body: String,
}

/// A `submit_plan` result with `isError: true` telling the model what to fix.
fn refused(content: String) -> Value {
    json!({"toolId": TOOL_ID, "content": content, "isError": true})
}

/// Checks the remote tool's `path`: a relative name of normal parts, ending in `.md`.
fn check_inline_path(path: &str) -> Result<(), String> {
    let fix = "Give a short relative name ending in `.md`, such as `plans/add-cache.md`, and \
               submit again.";
    if path.trim().is_empty() {
        return Err(format!("No plan path was given. {fix}"));
    }
    let shown = crate::text::short(path, 80);
    if path.len() > MAX_INLINE_PATH {
        return Err(format!(
            "Plan path `{shown}` is longer than {MAX_INLINE_PATH} bytes. {fix}"
        ));
    }
    if path.chars().any(|c| c.is_control() || c == '\\') {
        return Err(format!(
            "Plan path `{shown}` has a control character or a backslash. {fix}"
        ));
    }
    let normal = Path::new(path)
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    if !normal {
        return Err(format!(
            "Plan path `{shown}` is not a plain relative path (no `/` at the start, no `.` or `..`). {fix}"
        ));
    }
    if !Path::new(path)
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("md"))
    {
        return Err(format!("Plan path `{shown}` does not end in `.md`. {fix}"));
    }
    Ok(())
}

impl PlanServer {
    /// The plan a call hands in, checked (the file's or the call's), and who sent it; or the
    /// result to answer at once.
    async fn submitted(&self, args: &Value, caller: Option<&Caller>) -> Result<Submitted, Value> {
        let tool_schema = self.tool.input_schema.clone();
        let violations = schema::validate(&Value::Object((*tool_schema).clone()), args);
        if !violations.is_empty() {
            return Err(schema::validation_error(
                TOOL_ID,
                "input",
                args,
                &violations,
            ));
        }
        match &*self.input {
            PlanInput::Workspace(options) => self.plan_from_file(options, args).await,
            PlanInput::Inline(wait) => self.plan_from_call(wait, args, caller),
        }
    }

    /// `plandesk mcp`: the file, checked as the engine checks it.
    async fn plan_from_file(&self, options: &McpOptions, args: &Value) -> Result<Submitted, Value> {
        let workspace = Workspace::open(&options.workspace, options.plans_dir.as_deref())
            .map_err(|err| failed(&err.to_string()))?;
        let checked = {
            let (workspace, args) = (workspace.clone(), args.clone());
            tokio::task::spawn_blocking(move || SubmitPlan.execute(&standalone(&workspace), &args))
                .await
        };
        let payload = match checked {
            Ok(ToolOutcome::Suspend { payload }) => payload,
            Ok(ToolOutcome::Value(result)) => return Err(for_hosts(result)),
            Ok(ToolOutcome::Failed(message)) => return Err(failed(&message)),
            Err(join) => return Err(failed(&join.to_string())),
        };
        let field = |key: &str| payload[key].as_str().unwrap_or_default().to_owned();
        let (path, title, body) = (field("path"), field("title"), field("plan"));
        let root = workspace.root().display().to_string();
        // Checked by `submit_plan` to lie in the workspace's plans folder.
        let file = PlanFile {
            root: workspace.root().to_owned(),
            name: path.clone(),
        };
        Ok(with_text(Submitted {
            engine: self.engine.clone(),
            wait: options.wait.clone(),
            plan: ExternalPlan {
                source: Source {
                    kind: SourceKind::Mcp,
                    session: Some(self.session.clone()),
                },
                prompt: format!("MCP client in {root}"),
                cwd: root,
                tool_name: TOOL_ID.into(),
                path,
                text: String::new(),
                item_id: None,
                submitter: None,
                file: Some(file),
            },
            title,
            body,
        }))
    }

    /// `plandesk serve`: the plan in the call, sent with the token the request was let in with.
    /// Plans sent with one token are one session: give each agent its own token.
    fn plan_from_call(
        &self,
        wait: &WaitSettings,
        args: &Value,
        caller: Option<&Caller>,
    ) -> Result<Submitted, Value> {
        let caller = caller.ok_or_else(|| failed("the request carries no authenticated token"))?;
        let path = args["path"].as_str().unwrap_or_default();
        let text = args["plan"].as_str().unwrap_or_default();
        check_inline_path(path).map_err(refused)?;
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(refused(format!(
                "The plan is {} bytes; plans may be at most {MAX_FILE_BYTES} bytes (1 MiB). \
                 Shorten the plan and submit again.",
                text.len()
            )));
        }
        if text.trim().is_empty() {
            return Err(refused(
                "The plan is empty. Pass the whole plan as Markdown in `plan` and submit again."
                    .into(),
            ));
        }
        let split = split_plan(text);
        let engine = self.engine.clone().with_actor(Actor {
            name: caller.name.clone(),
            process: "serve:mcp".into(),
        });
        Ok(with_text(Submitted {
            engine,
            wait: wait.clone(),
            plan: ExternalPlan {
                source: Source {
                    kind: SourceKind::Mcp,
                    session: Some(format!("serve:{}", caller.session_owner())),
                },
                cwd: format!("(remote: {})", caller.name),
                prompt: format!("MCP client `{}` over HTTP", caller.name),
                tool_name: TOOL_ID.into(),
                path: path.to_owned(),
                text: String::new(),
                item_id: None,
                submitter: Some(caller.name.clone()),
                // Sent over the network: its file, if any, is on the agent's machine.
                file: None,
            },
            title: split.title,
            body: split.plan,
        }))
    }

    /// The tool's whole behaviour: check the plan, hand it to a person, and answer with the
    /// contract's result object. `caller` is the token an HTTP request came with; when `stop`
    /// resolves the client has gone and the plan is closed as abandoned; `progress` runs
    /// meanwhile.
    async fn submit_plan(
        &self,
        args: Value,
        caller: Option<&Caller>,
        stop: impl std::future::Future<Output = ()>,
        progress: impl std::future::Future<Output = std::convert::Infallible>,
    ) -> Value {
        let Submitted {
            engine,
            wait,
            plan,
            title,
            body,
        } = match self.submitted(&args, caller).await {
            Ok(submitted) => submitted,
            Err(result) => return result,
        };
        let path = plan.path.clone();
        let answer = tokio::select! {
            answer = review_plan(&engine, plan, &wait, stop) => answer,
            never = progress => match never {},
        };
        let answer = match answer {
            Ok(answer) => answer,
            Err(err) => return failed(&err.to_string()),
        };
        if let Some(caller) = caller {
            // Revoked while the plan waited (before `serve` ended the call): no answer goes out.
            if !self
                .engine
                .tokens()
                .is_active(caller)
                .await
                .unwrap_or(false)
            {
                return failed(&SourceError::Revoked.to_string());
            }
        }
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
        match result_for(&data) {
            ToolOutcome::Value(result) => result,
            ToolOutcome::Failed(message) => failed(&message),
            ToolOutcome::Suspend { .. } => failed("the plan was suspended twice"),
        }
    }
}

/// The engine's refusal as an MCP host should read it: the engine tells its model to write
/// with its `write_file` tool, which hosts do not have (they write with their own).
fn for_hosts(mut result: Value) -> Value {
    if let Some(content) = result["content"].as_str() {
        let content = content.replace(" with write_file", "");
        result["content"] = Value::String(content);
    }
    result
}

/// How often a waiting call reports progress unless `PLANDESK_MCP_PROGRESS_MS` says otherwise:
/// well inside the TypeScript SDK's default 60 s request timeout, which a client that sets
/// `resetTimeoutOnProgress` restarts on each report.
const PROGRESS_EVERY: Duration = Duration::from_secs(15);
/// The shortest interval the variable may set (tests use a few hundred milliseconds).
const MIN_PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// The progress interval: `PLANDESK_MCP_PROGRESS_MS` (milliseconds, at least 100), else 15 s.
fn progress_every() -> Duration {
    std::env::var("PLANDESK_MCP_PROGRESS_MS")
        .ok()
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .map_or(PROGRESS_EVERY, |ms| {
            Duration::from_millis(ms).max(MIN_PROGRESS_EVERY)
        })
}

/// While a call waits for a person, reports progress every `every` if the call carries a
/// progress token (at once too: over streamable HTTP at 2026-07-28 the answer's event stream,
/// and its keep-alives, start with the first message). `progress` is the seconds waited, so it
/// only grows. Never returns; the caller stops it by dropping it.
async fn report_progress(
    context: &RequestContext<RoleServer>,
    every: Duration,
) -> std::convert::Infallible {
    let Some(token) = context.meta.get_progress_token() else {
        return std::future::pending().await;
    };
    let started = tokio::time::Instant::now();
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let waited = started.elapsed();
        let message = format!(
            "Waiting for a person to review the plan ({} so far)",
            waited_text(waited)
        );
        let params = ProgressNotificationParam::new(token.clone(), waited.as_secs_f64())
            .with_message(message);
        // A client that cannot be told is gone; its cancellation closes the plan.
        let _ = context.peer.notify_progress(params).await;
    }
}

/// `45 s`, `12 min`, `3 h 05 min`.
fn waited_text(waited: Duration) -> String {
    let secs = waited.as_secs();
    match secs {
        0..=59 => format!("{secs} s"),
        60..=3599 => format!("{} min", secs / 60),
        _ => format!("{} h {:02} min", secs / 3600, secs % 3600 / 60),
    }
}

/// The plan's text as the review core takes it: the title heading, then the body.
fn with_text(mut submitted: Submitted) -> Submitted {
    submitted.plan.text = if submitted.title.is_empty() {
        submitted.body.clone()
    } else {
        format!("# {}\n\n{}", submitted.title, submitted.body)
    };
    submitted
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
        Ok(ListToolsResult::with_all_items(vec![
            (*self.tool).clone(),
            report::report_tool(),
        ]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        match name {
            TOOL_ID => Some((*self.tool).clone()),
            report::REPORT_ID => Some(report::report_tool()),
            _ => None,
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL_ID && request.name != report::REPORT_ID {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{}`; this server has `{TOOL_ID}` and `{}`",
                    request.name,
                    report::REPORT_ID
                ),
                None,
            ));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let caller = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .cloned();
        if request.name == report::REPORT_ID {
            return Ok(self.report(&args, caller.as_ref()).await.into());
        }
        let (ct, mut stopped) = (context.ct.clone(), self.stopped.clone());
        let stop = async move {
            tokio::select! {
                () = ct.cancelled() => {}
                _ = stopped.wait_for(|stop| *stop) => {}
            }
        };
        let progress = report_progress(&context, self.progress_every);
        let result = self
            .submit_plan(args, caller.as_ref(), stop, progress)
            .await;
        Ok(result_of(&result).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_waited_reads_as_a_person_would_say_it() {
        let say = |secs| waited_text(Duration::from_secs(secs));
        assert_eq!(say(0), "0 s");
        assert_eq!(say(59), "59 s");
        assert_eq!(say(60), "1 min");
        assert_eq!(say(3599), "59 min");
        assert_eq!(say(3600 * 3 + 5 * 60 + 7), "3 h 05 min");
    }
}
