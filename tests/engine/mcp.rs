//! `plandesk mcp` driven by a real MCP client (rmcp's, over the server's stdin/stdout): the
//! `submit_plan` tool has exactly the engine's contract, blocks until a person decides from
//! another process, and answers with the same result objects and texts.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam, ServerResult,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

use crate::support::*;

const APPROVED: &str = "Plan approved. Proceed with implementation following the approved plan.";

/// An MCP client, over stdio here or over HTTP (`serve.rs`).
pub type Client = rmcp::service::RunningService<rmcp::RoleClient, ()>;

async fn connect(fx: &Fixture) -> Client {
    connect_as(fx, (), &[]).await
}

/// `plandesk mcp` with `env` set, and a client that handles what the server sends with
/// `handler`.
async fn connect_as<H: rmcp::ClientHandler>(
    fx: &Fixture,
    handler: H,
    env: &[(&str, &str)],
) -> RunningService<RoleClient, H> {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_plandesk"));
    let std_cmd = fx.command(&["mcp", "--workspace", fx.workspace.to_str().unwrap()]);
    cmd.args(std_cmd.get_args());
    for (key, value) in std_cmd.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd.envs(env.iter().copied());
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    handler.serve(transport).await.unwrap()
}

/// A client that keeps the progress notifications it hears.
#[derive(Debug, Clone, Default)]
pub struct Heard(pub Arc<Mutex<Vec<ProgressNotificationParam>>>);

impl rmcp::ClientHandler for Heard {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push(params);
    }
}

/// The result object of a `submit_plan` answer.
pub fn result_object(answer: ServerResult) -> Value {
    let ServerResult::CallToolResult(result) = answer else {
        panic!("not a tool result: {answer:?}")
    };
    serde_json::from_str(&result.content[0].as_text().unwrap().text).unwrap()
}

/// Submits a plan with a client that gives up after 1 s without progress, while the person
/// takes 3 s: the call is answered only if the server reports progress while it waits.
pub async fn submit_while_progress_resets_the_timeout(
    fx: &Fixture,
    client: &Peer<RoleClient>,
    args: Value,
    heard: &Heard,
) {
    let options =
        PeerRequestOptions::with_timeout(Duration::from_secs(1)).reset_timeout_on_progress();
    let call = submit_cancellable(client, args, options).await;
    let decide = async {
        let run = until_pending(fx).await["runId"]
            .as_str()
            .unwrap()
            .to_owned();
        tokio::time::sleep(Duration::from_secs(3)).await;
        fx.ok(&["approve", &run]);
    };
    let (answer, ()) = tokio::join!(call.await_response(), decide);
    let answer = answer.unwrap_or_else(|e| panic!("the call outlived its 1 s timeout: {e}"));
    assert_eq!(result_object(answer)["content"], APPROVED);
    let heard = heard.0.lock().unwrap().clone();
    assert!(
        heard.len() >= 5,
        "progress every 300 ms through a 3 s wait: {heard:?}"
    );
    assert!(
        heard.windows(2).all(|w| w[0].progress < w[1].progress),
        "progress only grows: {heard:?}"
    );
    assert!(
        heard.iter().all(|p| p
            .message
            .as_deref()
            .is_some_and(|m| m.contains("Waiting for a person"))),
        "{heard:?}"
    );
}

/// Calls `submit_plan` and returns the result object the model would read, and whether it is
/// an error.
pub async fn submit(client: &Client, args: Value) -> (Value, bool) {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new("submit_plan").with_arguments(args))
        .await
        .unwrap();
    let text = result.content[0].as_text().unwrap().text.clone();
    let object: Value = serde_json::from_str(&text).unwrap();
    if object.get("toolId").is_some() {
        assert_eq!(
            result.structured_content.as_ref(),
            Some(&object),
            "structuredContent is the result object the text carries"
        );
    } else {
        assert!(
            result.is_error == Some(true) && result.structured_content.is_none(),
            "an object outside the output schema is an error, and not structured: {object}"
        );
    }
    assert!(
        !text.contains("write_file"),
        "MCP hosts have no write_file: {text}"
    );
    (object, result.is_error == Some(true))
}

/// What every host is told about `submit_plan` beyond its description and input schema.
pub fn assert_tool_metadata(tool: &rmcp::model::Tool) {
    assert_eq!(tool.title.as_deref(), Some("Submit plan for review"));
    let annotations = serde_json::to_value(tool.annotations.as_ref().unwrap()).unwrap();
    assert_eq!(
        annotations,
        json!({"title": "Submit plan for review", "readOnlyHint": false,
               "destructiveHint": false, "idempotentHint": false, "openWorldHint": false}),
        "it records a plan (not read-only), adds and never destroys, asks anew each call, \
         and reaches nothing outside Plandesk"
    );
    let output = Value::Object((**tool.output_schema.as_ref().unwrap()).clone());
    assert_eq!(output["required"], json!(["toolId", "content", "isError"]));
    assert_eq!(
        output["properties"]["submittedPlan"]["required"],
        json!(["title", "path", "plan"])
    );
    let description = tool.description.as_deref().unwrap();
    assert!(
        !description.contains("write_file"),
        "MCP hosts have no write_file: {description}"
    );
    assert!(
        description.contains("hours") && description.contains("person"),
        "the host learns the call waits for a person, maybe hours: {description}"
    );
}

/// Waits (on a blocking thread) for one pending plan, then runs `decide` with its run id.
pub async fn decide_when_pending(fx: &Fixture, decide: &[&str]) {
    let pending = until_pending(fx).await;
    assert_eq!(pending["source"]["kind"], "mcp");
    let run = pending["runId"].as_str().unwrap().to_owned();
    let mut args: Vec<&str> = decide.to_vec();
    args.insert(1, &run);
    fx.ok(&args);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_gets_the_engine_contract_and_waits_for_the_decision() {
    let fx = Fixture::new(json!([]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let client = connect(&fx).await;

    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0].name, "submit_plan");
    assert_eq!(tools[1].name, "report_progress");
    assert_tool_metadata(&tools[0]);
    let description = tools[0].description.as_deref().unwrap();
    let root = fx.workspace.canonicalize().unwrap();
    assert!(
        description.contains("`.plandesk/plans/`")
            && description.contains(&format!("`{}`", root.display())),
        "names the plans folder and the workspace a path is relative to: {description}"
    );
    assert_eq!(
        Value::Object((*tools[0].input_schema).clone()),
        json!({"type": "object", "properties": {"path": {"type": "string",
               "description": "Path of the plan file, relative to the workspace root"}},
               "required": ["path"], "additionalProperties": false}),
        "exactly the engine's input schema"
    );

    // The same file checks, answered at once.
    let (missing, is_error) = submit(&client, json!({"path": ".plandesk/plans/none.md"})).await;
    assert!(is_error);
    assert_eq!(missing["toolId"], "submit_plan");
    assert!(missing["content"]
        .as_str()
        .unwrap()
        .starts_with("Plan file not found"));
    let (outside, _) = submit(&client, json!({"path": "../etc/passwd.md"})).await;
    assert!(outside["content"]
        .as_str()
        .unwrap()
        .contains("outside the plans folder"));
    let (invalid, is_error) = submit(&client, json!({"path": PLAN, "extra": 1})).await;
    assert!(invalid.get("validationErrors").is_some(), "{invalid}");
    assert!(is_error, "a call with the wrong arguments failed");

    // Rejected with feedback: the contract's text.
    let ((rejected, is_error), ()) = tokio::join!(
        submit(&client, json!({"path": PLAN})),
        decide_when_pending(&fx, &["reject", "--feedback", "Measure first"])
    );
    assert!(!is_error);
    assert_eq!(
        rejected,
        json!({"toolId": "submit_plan", "isError": false,
               "content": "Plan was not approved. The user wants revisions.\n\nUser feedback: Measure first\n\nPlease revise the plan based on the feedback and submit again with submit_plan.",
               "submittedPlan": {"title": "Add a cache", "path": PLAN,
                                 "plan": "Use an LRU cache in front of the store.\n\n1. Measure\n2. Cache",
                                 "feedback": "Measure first"}})
    );

    // The revision is revision 2 of the same thread; approved: the contract's approval.
    fx.write(PLAN, b"# Add a cache\n\nMeasure, then use an LRU cache.\n");
    let ((approved, _), ()) = tokio::join!(
        submit(&client, json!({"path": PLAN})),
        decide_when_pending(&fx, &["approve"])
    );
    assert_eq!(approved["content"], APPROVED);
    assert_eq!(
        approved["submittedPlan"]["plan"],
        "Measure, then use an LRU cache."
    );
    let history = fx.listing(&["history"]);
    assert_eq!(history[1]["revisionNo"], 2, "{history}");
    assert_eq!(history[1]["status"], "approved");

    // Rejected without feedback: stop and wait.
    let ((waiting, _), ()) = tokio::join!(
        submit(&client, json!({"path": PLAN})),
        decide_when_pending(&fx, &["reject"])
    );
    assert!(waiting["content"]
        .as_str()
        .unwrap()
        .starts_with("Plan was not approved. The user will send revision instructions"));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_leaves_its_plan_abandoned() {
    let fx = Fixture::new(json!([]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let client = connect(&fx).await;
    let call = tokio::spawn(async move {
        let Value::Object(args) = json!({"path": PLAN}) else {
            unreachable!()
        };
        let _ = client
            .call_tool(CallToolRequestParams::new("submit_plan").with_arguments(args))
            .await;
        client
    });
    until_pending(&fx).await;
    call.abort();
    until_status(&fx, 0, "abandoned").await;
    assert_eq!(fx.listing(&["pending"]), json!([]));
}

/// `submit_plan` as a request the client may give up on (cancel, or time out with `options`).
pub async fn submit_cancellable(
    client: &Peer<RoleClient>,
    args: Value,
    options: PeerRequestOptions,
) -> rmcp::service::RequestHandle<rmcp::RoleClient> {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("submit_plan").with_arguments(args),
    ));
    client
        .send_cancellable_request(request, options)
        .await
        .unwrap()
}

/// The status of the history's revision titled `title`, if it is there yet.
pub fn status_if_there(fx: &Fixture, title: &str) -> Option<Value> {
    let history = fx.listing(&["history"]);
    let revisions = history.as_array().unwrap();
    let revision = revisions.iter().find(|r| r["title"] == title)?;
    Some(revision["status"].clone())
}

/// The status of the history's revision titled `title`.
pub fn status_of(fx: &Fixture, title: &str) -> Value {
    status_if_there(fx, title).unwrap_or_else(|| panic!("no revision {title}"))
}

/// Waits (up to `within`) until the revision titled `title` is there with `status` (a task's
/// plan is recorded after the task is answered); returns how long.
pub async fn until_titled(fx: &Fixture, title: &str, status: &str, within: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let now = status_if_there(fx, title);
        if now.as_ref().is_some_and(|s| s == status) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < within,
            "{title} stayed {now:?} for {within:?}, never {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A plan nobody waits for any more: nobody is asked, and a decision on it is refused,
/// saying why.
pub fn assert_undecidable(fx: &Fixture, run: &str, title: &str) {
    let pending = fx.listing(&["pending"]);
    assert!(
        pending
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["revision"]["title"] != title),
        "{title} is not put to a person: {pending}"
    );
    for decide in [
        vec!["approve", run],
        vec!["reject", run, "--feedback", "Too late"],
    ] {
        let refusal = fx.refused(&decide);
        assert!(
            refusal.contains("abandoned"),
            "`plandesk {}` on {title} says it was abandoned: {refusal}",
            decide[0]
        );
        assert!(
            !refusal.contains("plandesk resume"),
            "an outside agent's plan has nothing to resume: {refusal}"
        );
    }
    assert_eq!(
        status_of(fx, title),
        "abandoned",
        "the refusal changed nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_gives_up_leaves_its_plan_abandoned_at_once_and_undecidable() {
    let fx = Fixture::new(json!([]));
    let client = connect(&fx).await;

    // Cancelled (the user pressed Esc in the agent).
    fx.write(PLAN, b"# Cancelled\n\nA plan\n");
    let call = submit_cancellable(
        &client,
        json!({"path": PLAN}),
        PeerRequestOptions::no_options(),
    )
    .await;
    let run = until_pending(&fx).await["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    call.cancel(Some("the user pressed Esc".into()))
        .await
        .unwrap();
    let took = until_titled(&fx, "Cancelled", "abandoned", Duration::from_secs(5)).await;
    eprintln!("stdio: cancelled call abandoned after {took:?}");
    assert_undecidable(&fx, &run, "Cancelled");

    // Timed out by the client.
    fx.write(PLAN, b"# Timed out\n\nA plan\n");
    let call = submit_cancellable(
        &client,
        json!({"path": PLAN}),
        PeerRequestOptions::with_timeout(Duration::from_secs(2)),
    )
    .await;
    let outcome = call.await_response().await;
    assert!(
        matches!(outcome, Err(rmcp::ServiceError::Timeout { .. })),
        "{outcome:?}"
    );
    let took = until_titled(&fx, "Timed out", "abandoned", Duration::from_secs(5)).await;
    eprintln!("stdio: timed-out call abandoned after {took:?}");
    assert_undecidable(&fx, &run, "Timed out");

    // The session goes on: the next plan is put to a person and answered.
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let ((approved, _), ()) = tokio::join!(
        submit(&client, json!({"path": PLAN})),
        decide_when_pending(&fx, &["approve"])
    );
    assert_eq!(approved["content"], APPROVED);

    // Stdin closed (the client quit).
    fx.write(PLAN, b"# Closed\n\nA plan\n");
    let call = submit_cancellable(
        &client,
        json!({"path": PLAN}),
        PeerRequestOptions::no_options(),
    )
    .await;
    until_pending(&fx).await;
    drop(call);
    client.cancel().await.unwrap();
    let took = until_titled(&fx, "Closed", "abandoned", Duration::from_secs(5)).await;
    eprintln!("stdio: closed client's call abandoned after {took:?}");
    assert_undecidable(&fx, &run, "Closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_call_reports_progress_so_a_client_timeout_can_be_reset() {
    let fx = Fixture::new(json!([]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    let heard = Heard::default();
    let client = connect_as(&fx, heard.clone(), &[("PLANDESK_MCP_PROGRESS_MS", "300")]).await;
    submit_while_progress_resets_the_timeout(&fx, &client, json!({"path": PLAN}), &heard).await;
    client.cancel().await.unwrap();
}

/// Calls `report_progress` with `args`; its text and whether it is an error.
pub async fn report(client: &Client, args: Value) -> (String, bool) {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new("report_progress").with_arguments(args))
        .await
        .unwrap();
    let text = result.content[0].as_text().unwrap().text.clone();
    (text, result.is_error == Some(true))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_reports_its_work_after_the_approval_with_report_progress() {
    let fx = Fixture::new(json!([]));
    fx.write(
        PLAN,
        b"# Add a cache\n\n1. Add `src/cache.rs`.\n2. Run `cargo test`.\n3. Update the docs.\n",
    );
    let client = connect(&fx).await;
    let (text, is_error) = report(&client, json!({"files": ["src/early.rs"]})).await;
    assert!(!is_error);
    assert!(
        text.starts_with("Nothing recorded: no plan of yours is approved yet"),
        "{text}"
    );
    let ((approved, _), _) = tokio::join!(
        submit(&client, json!({"path": PLAN})),
        decide_when_pending(&fx, &["approve"])
    );
    assert!(approved["content"]
        .as_str()
        .unwrap()
        .starts_with("Plan approved"));
    let (text, is_error) = report(
        &client,
        json!({"files": ["src/cache.rs", "./src/extra.rs", "/etc/hosts"],
               "commands": [{"command": "cargo test", "exitCode": 0}], "finished": true}),
    )
    .await;
    assert!(!is_error, "{text}");
    assert_eq!(text, "Recorded 5 of 5 against the approved plan.");
    // Worst input: refused whole, nothing recorded.
    let (text, is_error) = report(
        &client,
        json!({"files": vec!["x"; 201], "commands": [{"command": 7}], "extra": true}),
    )
    .await;
    assert!(is_error, "{text}");
    let run = fx.listing(&["runs"])[0]["id"].as_str().unwrap().to_owned();
    let progress = fx.listing(&["progress", &run]);
    assert_eq!(
        progress["summary"], "2 of 3 steps done, 2 files outside the plan",
        "{progress}"
    );
    assert_eq!(progress["finished"], true);
    let outside: Vec<&Value> = progress["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["outside"] == true)
        .collect();
    assert_eq!(outside.len(), 1);
    assert_eq!(outside[0]["path"], "/etc/hosts");
    client.cancel().await.unwrap();
}
