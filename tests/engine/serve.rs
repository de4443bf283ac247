//! `plandesk serve` through real HTTP on 127.0.0.1: tokens made with the CLI, requests without
//! a valid one refused before anything is recorded, rmcp's own streamable HTTP client calling
//! `submit_plan`, and Claude Code's http hook payloads, each decided from another process.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use rmcp::service::PeerRequestOptions;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Value};

use crate::mcp::{
    assert_tool_metadata, assert_undecidable, status_of, submit, submit_cancellable,
    submit_while_progress_resets_the_timeout, until_titled, Client, Heard,
};
use crate::support::*;

/// A `plandesk serve` process on a free loopback port.
pub struct Server {
    child: Child,
    pub base: String,
}

impl Server {
    pub fn start(fx: &Fixture, extra: &[&str]) -> Self {
        Self::start_with_env(fx, extra, &[])
    }

    pub fn start_with_env(fx: &Fixture, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let mut args = vec!["serve", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let mut child = fx
            .command(&args)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let address = first
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split(": ").next())
            .unwrap_or_else(|| panic!("no address in {first:?}"))
            .to_owned();
        // Keep reading stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Self {
            child,
            base: format!("http://{address}"),
        }
    }

    /// SIGTERM, then waits for the process to end.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn create_token(fx: &Fixture, name: &str) -> String {
    let out = fx.ok(&["token", "create", name]);
    let secret = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(secret.starts_with("pdt_"), "{secret}");
    secret
}

/// A Claude Code `PermissionRequest` payload for `ExitPlanMode`, as the CLI sends it.
pub fn hook_payload(session: &str, tool_input: Value) -> Value {
    json!({
        "session_id": session, "transcript_path": "/home/u/.claude/projects/p/s.jsonl",
        "cwd": "/home/u/proj", "permission_mode": "plan",
        "hook_event_name": "PermissionRequest", "tool_name": "ExitPlanMode",
        "tool_input": tool_input,
    })
}

async fn post_hook(base: &str, token: Option<&str>, body: &Value) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("{base}/hooks/claude"))
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

async fn json_of(response: reqwest::Response) -> Value {
    let text = response.text().await.unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

pub async fn mcp_client(base: &str, token: &str) -> Client {
    mcp_client_as(base, token, ()).await
}

pub async fn mcp_client_as<H: rmcp::ClientHandler>(
    base: &str,
    token: &str,
    handler: H,
) -> rmcp::service::RunningService<rmcp::RoleClient, H> {
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"))
        .auth_header(token.to_owned());
    let transport = StreamableHttpClientTransport::from_config(config);
    handler.serve(transport).await.unwrap()
}

/// Waits for one pending plan, then decides it with `plandesk DECIDE RUN ...`.
async fn decide_when_pending(fx: &Fixture, decide: &[&str]) -> Value {
    let item = until_pending(fx).await;
    let mut args: Vec<&str> = decide.to_vec();
    let run = item["runId"].as_str().unwrap().to_owned();
    args.insert(1, &run);
    fx.ok(&args);
    item
}

#[test]
fn tokens_are_created_listed_and_revoked_and_only_hashes_are_kept() {
    let fx = Fixture::new(json!([]));
    let secret = create_token(&fx, "laptop");
    assert_eq!(secret.len(), 4 + 64, "pdt_ and 32 bytes in hex");
    assert_ne!(create_token(&fx, "ci"), secret, "each secret is new");
    let err = fx.refused(&["token", "create", "laptop"]);
    assert!(err.contains("already active"), "{err}");
    let err = fx.refused(&["token", "create", "no/slash"]);
    assert!(err.contains("not a token name"), "{err}");
    let err = fx.refused(&["token", "revoke", "nobody"]);
    assert!(err.contains("no active token is named `nobody`"), "{err}");
    fx.ok(&["token", "revoke", "laptop"]);
    let listed = fx.listing(&["token", "list"]);
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
    assert_eq!(listed[0]["name"], "laptop");
    assert!(
        listed[0]["revokedAt"].is_i64(),
        "revoked stays listed: {listed}"
    );
    assert!(listed[1]["revokedAt"].is_null());
    let text = listed.to_string();
    assert!(
        !text.contains(&secret[4..20]) && !text.contains("sha"),
        "no secret or hash is listed: {text}"
    );
    // A revoked name can be given to a new token.
    create_token(&fx, "laptop");
    for (place, bytes) in fx.stored() {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&secret),
            "the secret itself is never stored ({place})"
        );
    }
    assert_eq!(
        audit_kinds(&fx),
        [
            "token-created",
            "token-created",
            "token-revoked",
            "token-created"
        ],
        "creating and revoking are in the audit trail"
    );
}

#[tokio::test]
async fn the_store_finds_only_active_tokens_by_the_hash_of_their_secret() {
    use plandesk::store::StoreError;
    use plandesk::token::{TokenError, Tokens};
    let dir = tempfile::tempdir().unwrap();
    let actor = plandesk::store::Actor {
        name: "admin".into(),
        process: "test".into(),
    };
    let tokens = Tokens::new(
        test_store(dir.path()).await,
        std::sync::Arc::new(plandesk::clock::SystemClock),
        actor,
    );
    let (row, first) = tokens.create("laptop").await.unwrap();
    assert_eq!(
        (row.name.as_str(), row.created_by.as_str()),
        ("laptop", "admin")
    );
    let bearer = |secret: &str| format!("Bearer {secret}");
    let found = tokens.authenticate(&bearer(first.expose())).await.unwrap();
    assert_eq!(found.map(|t| t.name).as_deref(), Some("laptop"));
    let wrong = format!("pdt_{}", "f".repeat(64));
    assert_eq!(tokens.authenticate(&bearer(&wrong)).await.unwrap(), None);
    assert!(matches!(
        tokens.create("laptop").await,
        Err(TokenError::Store(StoreError::TokenExists(name))) if name == "laptop"
    ));
    tokens.revoke("laptop").await.unwrap();
    assert_eq!(
        tokens.authenticate(&bearer(first.expose())).await.unwrap(),
        None,
        "a revoked token is refused"
    );
    assert!(matches!(
        tokens.revoke("laptop").await,
        Err(TokenError::Store(StoreError::UnknownToken(_)))
    ));
    let (_, second) = tokens.create("laptop").await.unwrap();
    assert_eq!(
        tokens.authenticate(&bearer(first.expose())).await.unwrap(),
        None
    );
    assert!(tokens
        .authenticate(&bearer(second.expose()))
        .await
        .unwrap()
        .is_some());
    let listed = tokens.list().await.unwrap();
    assert_eq!(listed.len(), 2, "the revoked one stays listed");
    assert!(listed[0].revoked_at.is_some() && listed[1].revoked_at.is_none());
}

/// The audit trail's entries, oldest first.
fn audit_entries(fx: &Fixture) -> Vec<Value> {
    String::from_utf8(fx.ok(&["--json", "audit"]).stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn audit_kinds(fx: &Fixture) -> Vec<String> {
    audit_entries(fx)
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_an_active_token_are_refused_and_nothing_is_recorded() {
    let fx = Fixture::new(json!([]));
    let good = create_token(&fx, "laptop");
    let revoked = create_token(&fx, "old");
    fx.ok(&["token", "revoke", "old"]);
    let server = Server::start(&fx, &[]);
    let payload = hook_payload("s1", json!({"plan": "# Sneaky\n\nDo it"}));
    let wrong = format!("pdt_{}", "0".repeat(64));
    let client = reqwest::Client::new();
    for (what, auth) in [
        ("no token", None),
        ("not bearer", Some(format!("Basic {good}"))),
        ("a wrong token", Some(format!("Bearer {wrong}"))),
        ("a revoked token", Some(format!("Bearer {revoked}"))),
        ("junk", Some("Bearer pdt_!!".to_owned())),
    ] {
        for path in ["/hooks/claude", "/mcp"] {
            let mut request = client
                .post(format!("{}{path}", server.base))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(payload.to_string());
            if let Some(auth) = &auth {
                request = request.header("authorization", auth);
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 401, "{what} on {path}");
            assert_eq!(
                response.headers()["www-authenticate"],
                "Bearer realm=\"plandesk\"",
                "{what} on {path}"
            );
            let body: Value = json_of(response).await;
            assert_eq!(body["error"], "unauthorized");
        }
    }
    // Two Authorization headers are not one token.
    let response = client
        .post(format!("{}/hooks/claude", server.base))
        .header("authorization", format!("Bearer {good}"))
        .header("authorization", format!("Bearer {wrong}"))
        .body(payload.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(fx.listing(&["pending"]), json!([]), "no item was opened");
    assert_eq!(
        fx.listing(&["history"]),
        json!([]),
        "no revision was recorded"
    );
    assert_eq!(fx.listing(&["runs"]), json!([]), "no run was recorded");
    assert_eq!(
        audit_kinds(&fx),
        ["token-created", "token-created", "token-revoked"],
        "only the tokens' own entries"
    );
    // The same request with the good token gets in (and is answered when the server stops).
    let response = client
        .get(format!("{}/nowhere", server.base))
        .bearer_auth(&good)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404, "authenticated, then routed");
    assert!(server.stop().success());
}

const APPROVED: &str = "Plan approved. Proceed with implementation following the approved plan.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_over_http_gets_the_contract_and_is_recorded_as_its_token() {
    let fx = Fixture::new(json!([]));
    let token = create_token(&fx, "build-box");
    let server = Server::start(&fx, &[]);
    let client = mcp_client(&server.base, &token).await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "submit_plan");
    assert_eq!(
        tools[0].input_schema["required"],
        json!(["path", "plan"]),
        "the plan travels in the call"
    );
    assert_tool_metadata(&tools[0]);

    // Checked before a person sees it.
    let (escape, is_error) = submit(&client, json!({"path": "../x.md", "plan": "# P"})).await;
    assert!(is_error);
    assert!(
        escape["content"]
            .as_str()
            .unwrap()
            .contains("not a plain relative path"),
        "{escape}"
    );
    let (absolute, _) = submit(&client, json!({"path": "/etc/x.md", "plan": "# P"})).await;
    assert!(absolute["content"]
        .as_str()
        .unwrap()
        .contains("not a plain relative path"));
    let (not_md, _) = submit(&client, json!({"path": "plan.txt", "plan": "# P"})).await;
    assert!(not_md["content"]
        .as_str()
        .unwrap()
        .contains("does not end in `.md`"));
    let (empty, _) = submit(&client, json!({"path": "p.md", "plan": " \n"})).await;
    assert!(empty["content"]
        .as_str()
        .unwrap()
        .contains("The plan is empty"));
    let big = "a".repeat(1024 * 1024 + 1);
    let (large, _) = submit(&client, json!({"path": "p.md", "plan": big})).await;
    assert!(
        large["content"]
            .as_str()
            .unwrap()
            .contains("at most 1048576 bytes"),
        "{large}"
    );
    let (invalid, is_error) = submit(&client, json!({"path": "p.md"})).await;
    assert!(invalid.get("validationErrors").is_some(), "{invalid}");
    assert!(is_error, "a call with the wrong arguments failed");
    assert_eq!(
        fx.listing(&["history"]),
        json!([]),
        "none of those was recorded"
    );

    let path = "plans/cache.md";
    let ((rejected, is_error), item) = tokio::join!(
        submit(&client, json!({"path": path, "plan": PLAN_TEXT})),
        decide_when_pending(&fx, &["reject", "--feedback", "Measure first"])
    );
    assert!(!is_error);
    assert_eq!(item["source"]["kind"], "mcp");
    assert_eq!(
        rejected,
        json!({"toolId": "submit_plan", "isError": false,
               "content": "Plan was not approved. The user wants revisions.\n\nUser feedback: Measure first\n\nPlease revise the plan based on the feedback and submit again with submit_plan.",
               "submittedPlan": {"title": "Add a cache", "path": path,
                                 "plan": "Use an LRU cache in front of the store.\n\n1. Measure\n2. Cache",
                                 "feedback": "Measure first"}})
    );
    let ((approved, _), _) = tokio::join!(
        submit(
            &client,
            json!({"path": path, "plan": "# Add a cache\n\nMeasure, then cache.\n"})
        ),
        decide_when_pending(&fx, &["approve"])
    );
    assert_eq!(approved["content"], APPROVED);
    assert_eq!(approved["submittedPlan"]["plan"], "Measure, then cache.");
    let history = fx.listing(&["history"]);
    assert_eq!(
        history[1]["revisionNo"], 2,
        "one thread per path: {history}"
    );
    assert_eq!(history[1]["status"], "approved");

    let entries = audit_entries(&fx);
    let submitted: Vec<&Value> = entries
        .iter()
        .filter(|e| e["kind"] == "submitted")
        .collect();
    assert_eq!(submitted.len(), 2);
    for entry in submitted {
        assert_eq!(entry["actor"], "build-box", "the token's name: {entry}");
        assert_eq!(entry["process"], "serve:mcp");
    }
    let answered = entries.iter().find(|e| e["kind"] == "answered").unwrap();
    assert_eq!(answered["actor"], "build-box");

    // A client that goes away leaves its plan abandoned.
    let call = tokio::spawn(async move {
        let _ = submit(&client, json!({"path": path, "plan": "# Third\n\nGo"})).await;
    });
    until_pending(&fx).await;
    call.abort();
    until_status(&fx, 2, "abandoned").await;
    assert!(server.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_codes_http_hook_gets_the_command_hooks_answers() {
    let fx = Fixture::new(json!([]));
    let token = create_token(&fx, "laptop");
    let server = Server::start(&fx, &[]);
    let plan = "# Add a cache\n\nUse an LRU cache.";
    let payload = hook_payload(
        "sess-1",
        json!({"plan": plan, "planFilePath": "/home/u/.claude/plans/brave-otter.md"}),
    );
    let (response, item) = tokio::join!(
        post_hook(&server.base, Some(&token), &payload),
        decide_when_pending(&fx, &["reject", "--feedback", "Measure first"])
    );
    assert_eq!(item["source"]["kind"], "claude-code");
    assert_eq!(response.status(), 200);
    let body: Value = json_of(response).await;
    assert_eq!(
        body,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {
            "behavior": "deny",
            "message": "Plan was not approved. The user wants revisions.\n\nUser feedback: Measure first\n\nPlease revise the plan based on the feedback and present it for review again."
        }}}),
        "what `plandesk hook claude-code` prints"
    );
    let (response, _) = tokio::join!(
        post_hook(&server.base, Some(&token), &payload),
        decide_when_pending(&fx, &["approve"])
    );
    let body: Value = json_of(response).await;
    assert_eq!(
        body["hookSpecificOutput"]["decision"],
        json!({"behavior": "allow", "updatedInput": {"plan": plan,
               "planFilePath": "/home/u/.claude/plans/brave-otter.md"}}),
        "an allow echoes the input"
    );
    let history = fx.listing(&["history"]);
    assert_eq!(history[1]["revisionNo"], 2, "one thread: {history}");

    // Another tool is not ours: an empty 200, Claude Code asks as usual.
    let mut other = payload.clone();
    other["tool_name"] = json!("Bash");
    let response = post_hook(&server.base, Some(&token), &other).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "");

    // No plan in the payload: refused (deny, stop) without opening the transcript it names,
    // here a FIFO that would block whoever opened it.
    let fifo = fx.root.join("transcript.jsonl");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut empty = hook_payload("sess-2", json!({"planFilePath": fifo}));
    empty["transcript_path"] = json!(fifo);
    let started = Instant::now();
    let response = post_hook(&server.base, Some(&token), &empty).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "nothing waited on the FIFO"
    );
    let body: Value = json_of(response).await;
    let decision = &body["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "deny", "{body}");
    assert_eq!(decision["interrupt"], true);
    assert!(
        decision["message"]
            .as_str()
            .unwrap()
            .contains("tool_input.plan"),
        "{body}"
    );

    // Too large a body is refused from its declared length, before any of it is read.
    let response = {
        use std::io::{Read, Write};
        let address = server.base.trim_start_matches("http://").to_owned();
        let token = token.clone();
        tokio::task::spawn_blocking(move || {
            let mut stream = std::net::TcpStream::connect(address).unwrap();
            write!(
                stream,
                "POST /hooks/claude HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                5 * 1024 * 1024
            )
            .unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut head = [0u8; 12];
            stream.read_exact(&mut head).unwrap();
            String::from_utf8_lossy(&head).into_owned()
        })
        .await
        .unwrap()
    };
    assert_eq!(response, "HTTP/1.1 413");
    assert_eq!(fx.listing(&["history"]).as_array().unwrap().len(), 2);

    // Told to stop while a plan waits: it is closed as abandoned and the agent told no.
    let waiting = {
        let base = server.base.clone();
        let token = token.clone();
        let payload = hook_payload("sess-3", json!({"plan": "# Wait\n\nfor me"}));
        tokio::spawn(async move { post_hook(&base, Some(&token), &payload).await })
    };
    until_pending(&fx).await;
    let status = tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap();
    assert!(status.success());
    let body: Value = json_of(waiting.await.unwrap()).await;
    assert_eq!(body["hookSpecificOutput"]["decision"]["behavior"], "deny");
    let history = fx.listing(&["history"]);
    assert_eq!(history[2]["status"], "abandoned", "{history}");
}

/// A client of the 2025-11-25 protocol over raw HTTP, message by message, as the pre-2026
/// SDKs (TypeScript's 1.x among them) speak it: `initialize`, then each request a POST whose
/// event stream is its answer, and a cancellation a POST of its own.
struct LegacyClient {
    http: reqwest::Client,
    url: String,
    token: String,
    session: Option<String>,
}

const LEGACY_VERSION: &str = "2025-11-25";

impl LegacyClient {
    async fn connect(base: &str, token: &str) -> Self {
        Self::connect_declaring(base, token, json!({})).await.0
    }

    /// A client that declares `capabilities`; with `initialize`'s result.
    async fn connect_declaring(base: &str, token: &str, capabilities: Value) -> (Self, Value) {
        let mut client = Self {
            http: reqwest::Client::new(),
            url: format!("{base}/mcp"),
            token: token.to_owned(),
            session: None,
        };
        let response = client
            .post(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": LEGACY_VERSION, "capabilities": capabilities,
                "clientInfo": {"name": "legacy-test", "version": "1"}}}),
            )
            .await;
        assert_eq!(response.status(), 200);
        client.session = response
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        let messages = sse_messages(response).await;
        assert_eq!(
            messages[0]["result"]["protocolVersion"], LEGACY_VERSION,
            "the server speaks the client's version: {messages:?}"
        );
        let initialized = client
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(initialized.status(), 202);
        (client, messages[0]["result"].clone())
    }

    /// Request `id` with `method` and `params`; its one answer.
    async fn request(&self, id: u64, method: &str, params: Value) -> Value {
        let response = self
            .post(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        assert_eq!(response.status(), 200);
        let messages = sse_messages(response).await;
        messages
            .into_iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {method}"))
    }

    /// `submit_plan` as a task (request `id`); the task created.
    async fn submit_task(&self, id: u64, path: &str, plan: &str) -> Value {
        let created = self
            .request(
                id,
                "tools/call",
                json!({"name": "submit_plan", "arguments": {"path": path, "plan": plan},
                       "task": {"ttl": 600_000}}),
            )
            .await;
        assert_eq!(created["result"]["task"]["status"], "working", "{created}");
        created["result"]["task"].clone()
    }

    async fn post(&self, body: Value) -> reqwest::Response {
        let mut request = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", LEGACY_VERSION)
            .body(body.to_string());
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        request.send().await.unwrap()
    }

    /// Starts `submit_plan` as request `id`; the response is its event stream.
    async fn call(&self, id: u64, path: &str, plan: &str) -> reqwest::Response {
        let response = self
            .post(
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "submit_plan", "arguments": {"path": path, "plan": plan}}}),
            )
            .await;
        assert_eq!(response.status(), 200);
        response
    }

    async fn cancel(&self, id: u64) -> reqwest::Response {
        self.post(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": id, "reason": "Request timed out"}}),
        )
        .await
    }
}

/// Every JSON-RPC message of an event stream (or of a JSON body), read to its end.
async fn sse_messages(mut response: reqwest::Response) -> Vec<Value> {
    let json = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("application/json"));
    let mut text = String::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        // One answer per request: the stream is read until it ends or carries it.
        if !json && text.contains("\"result\"") && text.ends_with("\n\n") {
            break;
        }
    }
    if json {
        return vec![serde_json::from_str(&text).unwrap()];
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .filter(|data| !data.is_empty())
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

/// Waits (up to 20 s) until `count` plans are pending; returns them, newest first.
async fn until_pending_count(fx: &Fixture, count: usize) -> Vec<Value> {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let pending = fx.listing(&["pending"]);
        if pending.as_array().unwrap().len() == count {
            return pending.as_array().unwrap().clone();
        }
        assert!(Instant::now() < until, "never {count} pending: {pending}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_clients_cancellation_abandons_its_own_waiting_call_at_once() {
    let fx = Fixture::new(json!([]));
    let token = create_token(&fx, "laptop");
    let server = Server::start(&fx, &[]);
    // Two clients on one token, each numbering its requests from the start: their ids meet.
    let (first, second) = tokio::join!(
        LegacyClient::connect(&server.base, &token),
        LegacyClient::connect(&server.base, &token)
    );
    assert!(
        first.session.is_some() && first.session != second.session,
        "each client gets a session id of its own, so a cancellation names one client's call: \
         {:?} {:?}",
        first.session,
        second.session
    );
    let first_call = first.call(7, "plans/one.md", "# One\n\nFirst plan").await;
    until_pending_count(&fx, 1).await;
    let second_call = second.call(7, "plans/two.md", "# Two\n\nSecond plan").await;
    until_pending_count(&fx, 2).await;
    let first_stream = tokio::spawn(sse_messages(first_call));

    let cancelled = first.cancel(7).await;
    assert_eq!(cancelled.status(), 202, "a notification is accepted");
    let took = until_titled(&fx, "One", "abandoned", Duration::from_secs(5)).await;
    eprintln!("cancelled call abandoned after {took:?}");
    let messages = tokio::time::timeout(Duration::from_secs(5), first_stream)
        .await
        .expect("the cancelled call's event stream ends")
        .unwrap();
    assert!(
        messages.iter().all(|m| m.get("result").is_none()),
        "no answer to a cancelled request: {messages:?}"
    );
    assert_eq!(
        status_of(&fx, "Two"),
        "pending",
        "the other client's call with the same id waits on"
    );
    let pending = fx.listing(&["pending"]);
    assert_eq!(pending.as_array().unwrap().len(), 1, "{pending}");
    assert_eq!(
        pending[0]["revision"]["title"], "Two",
        "a person is asked only about Two"
    );

    // A cancellation of a call that is not the sender's, or of no call, changes nothing.
    let stranger = create_token(&fx, "stranger");
    let other = LegacyClient::connect(&server.base, &stranger).await;
    assert_eq!(other.cancel(7).await.status(), 202);
    assert_eq!(first.cancel(7).await.status(), 202);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(status_of(&fx, "Two"), "pending");

    // A client that closes its session (DELETE) waits for none of its calls any more.
    let closing = LegacyClient::connect(&server.base, &token).await;
    let closing_call = closing
        .call(1, "plans/three.md", "# Three\n\nThird plan")
        .await;
    until_pending_count(&fx, 2).await;
    let mut delete = closing
        .http
        .delete(&closing.url)
        .bearer_auth(&token)
        .header("mcp-protocol-version", LEGACY_VERSION);
    if let Some(session) = &closing.session {
        delete = delete.header("mcp-session-id", session);
    }
    let deleted = delete.send().await.unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    until_titled(&fx, "Three", "abandoned", Duration::from_secs(5)).await;
    let messages = sse_messages(closing_call).await;
    assert!(
        messages.iter().all(|m| m.get("result").is_none()),
        "{messages:?}"
    );

    let (answer, _) = tokio::join!(
        sse_messages(second_call),
        decide_when_pending(&fx, &["approve"])
    );
    let result = answer
        .iter()
        .find(|m| m["id"] == 7)
        .unwrap_or_else(|| panic!("no answer: {answer:?}"));
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    let object: Value = serde_json::from_str(text).unwrap();
    assert_eq!(object["content"], APPROVED, "{object}");
    assert!(server.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_event_stream_abandons_its_call_at_once() {
    let fx = Fixture::new(json!([]));
    let token = create_token(&fx, "laptop");
    let server = Server::start(&fx, &[]);
    let client = LegacyClient::connect(&server.base, &token).await;
    let call = client.call(3, "plans/gone.md", "# Gone\n\nA plan").await;
    until_pending(&fx).await;
    // The client closes its connection (it quit, or its process died) without a word.
    drop(call);
    drop(client);
    let took = until_titled(&fx, "Gone", "abandoned", Duration::from_secs(5)).await;
    eprintln!("dropped stream's call abandoned after {took:?}");
    assert_eq!(fx.listing(&["pending"]), json!([]), "nobody is asked");
    assert!(server.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_discovery_finds_nothing_and_a_401_says_what_to_send() {
    let fx = Fixture::new(json!([]));
    let server = Server::start(&fx, &[]);
    let client = reqwest::Client::new();
    // Where MCP clients look for an OAuth server after a 401: a 401 there too would send them
    // into a login that cannot work; a 404 says there is none.
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-authorization-server/mcp",
        "/.well-known/openid-configuration",
        // Where clients go when discovery finds nothing.
        "/register",
        "/authorize",
        "/token",
    ] {
        let response = client
            .get(format!("{}{path}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{path}");
        let body: Value = json_of(response).await;
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("Authorization: Bearer pdt_"),
            "{path}: {body}"
        );
    }
    let response = client
        .post(format!("{}/mcp", server.base))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let challenge = response.headers()["www-authenticate"].to_str().unwrap();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(
        !challenge.contains("resource_metadata"),
        "no OAuth metadata is offered: {challenge}"
    );
    let body: Value = json_of(response).await;
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("Authorization: Bearer pdt_…")
            && message.contains("plandesk token create"),
        "the refusal says what to send and how to get it: {message}"
    );
    assert_eq!(fx.listing(&["runs"]), json!([]), "nothing was recorded");
    assert!(server.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_client_that_gives_up_leaves_its_plan_abandoned_at_once_and_undecidable() {
    let fx = Fixture::new(json!([]));
    let token = create_token(&fx, "laptop");
    let server = Server::start(&fx, &[]);
    let client = mcp_client(&server.base, &token).await;
    let plan = |title: &str| json!({"path": "plans/p.md", "plan": format!("# {title}\n\nA plan")});

    let call =
        submit_cancellable(&client, plan("Cancelled"), PeerRequestOptions::no_options()).await;
    let run = until_pending(&fx).await["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    call.cancel(Some("the user pressed Esc".into()))
        .await
        .unwrap();
    let took = until_titled(&fx, "Cancelled", "abandoned", Duration::from_secs(5)).await;
    eprintln!("http: cancelled call abandoned after {took:?}");
    assert_undecidable(&fx, &run, "Cancelled");

    let call = submit_cancellable(
        &client,
        plan("Timed out"),
        PeerRequestOptions::with_timeout(Duration::from_secs(2)),
    )
    .await;
    let outcome = call.await_response().await;
    assert!(
        matches!(outcome, Err(rmcp::ServiceError::Timeout { .. })),
        "{outcome:?}"
    );
    let took = until_titled(&fx, "Timed out", "abandoned", Duration::from_secs(5)).await;
    eprintln!("http: timed-out call abandoned after {took:?}");
    assert_undecidable(&fx, &run, "Timed out");

    let ((approved, _), _) = tokio::join!(
        submit(&client, plan("Approved")),
        decide_when_pending(&fx, &["approve"])
    );
    assert_eq!(approved["content"], APPROVED);

    let call = submit_cancellable(&client, plan("Closed"), PeerRequestOptions::no_options()).await;
    until_pending(&fx).await;
    drop(call);
    client.cancel().await.unwrap();
    let took = until_titled(&fx, "Closed", "abandoned", Duration::from_secs(5)).await;
    eprintln!("http: closed client's call abandoned after {took:?}");
    assert_undecidable(&fx, &run, "Closed");
    assert_eq!(status_of(&fx, "Approved"), "approved");
    assert!(server.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_call_over_http_reports_progress_so_a_client_timeout_can_be_reset() {
    let fx = Fixture::new(json!([]));
    let token = create_token(&fx, "laptop");
    let server = Server::start_with_env(&fx, &[], &[("PLANDESK_MCP_PROGRESS_MS", "300")]);
    let heard = Heard::default();
    let client = mcp_client_as(&server.base, &token, heard.clone()).await;
    let args = json!({"path": "plans/p.md", "plan": "# Progress\n\nA plan"});
    submit_while_progress_resets_the_timeout(&fx, &client, args, &heard).await;

    // A 2025-11-25 client's call carries its token in `_meta`; its event stream carries the
    // progress, and a call without a token gets none.
    let legacy = LegacyClient::connect(&server.base, &token).await;
    let with_token = legacy
        .post(
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "submit_plan", "_meta": {"progressToken": "p-5"},
            "arguments": {"path": "plans/q.md", "plan": "# Legacy\n\nA plan"}}}),
        )
        .await;
    let (messages, _) = tokio::join!(
        sse_messages(with_token),
        decide_after(&fx, Duration::from_secs(1))
    );
    let progress: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(progress.len() >= 2, "{messages:?}");
    assert!(progress
        .iter()
        .all(|p| p["params"]["progressToken"] == "p-5"));
    let without_token = legacy.call(6, "plans/r.md", "# Quiet\n\nA plan").await;
    let (messages, _) = tokio::join!(
        sse_messages(without_token),
        decide_after(&fx, Duration::from_secs(1))
    );
    assert!(
        messages.iter().all(|m| m.get("method").is_none()),
        "no token, no progress: {messages:?}"
    );
    assert!(server.stop().success());
}

/// Approves the pending plan once it has waited `wait`.
async fn decide_after(fx: &Fixture, wait: Duration) {
    let run = until_pending(fx).await["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    tokio::time::sleep(wait).await;
    fx.ok(&["approve", &run]);
}

/// The JSON-RPC error of an answer: its code, and its message.
fn rpc_error(answer: &Value) -> (i64, String) {
    let error = &answer["error"];
    assert!(error.is_object(), "not an error: {answer}");
    (
        error["code"].as_i64().unwrap(),
        error["message"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_over_http_is_its_clients_alone_and_its_plan_never_outlives_it() {
    let fx = Fixture::new(json!([]));
    let token = create_token(&fx, "laptop");
    let server = Server::start(&fx, &[]);
    let declares = json!({"tasks": {"list": {}, "cancel": {}}});

    // Tasks are declared to a client that declares them, and to no other.
    let (_, plain) = LegacyClient::connect_declaring(&server.base, &token, json!({})).await;
    assert!(plain["capabilities"].get("tasks").is_none(), "{plain}");
    let (client, init) =
        LegacyClient::connect_declaring(&server.base, &token, declares.clone()).await;
    assert_eq!(
        init["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        "{init}"
    );
    let tools = client.request(1, "tools/list", json!({})).await;
    assert_eq!(
        tools["result"]["tools"][0]["execution"],
        json!({"taskSupport": "optional"})
    );

    // The task is created at once, while the plan waits for a person.
    let task = client
        .submit_task(2, "plans/one.md", "# One\n\nA plan")
        .await;
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "{task}");
    assert_eq!(task["ttl"], 600_000);
    assert!(task["pollInterval"].as_u64().unwrap() > 0, "{task}");
    until_pending(&fx).await;

    // Another token, or another client of this token, finds no such task.
    let stranger = create_token(&fx, "stranger");
    let (other_token, _) =
        LegacyClient::connect_declaring(&server.base, &stranger, declares.clone()).await;
    let (other_client, _) =
        LegacyClient::connect_declaring(&server.base, &token, declares.clone()).await;
    for other in [&other_token, &other_client] {
        for method in ["tasks/get", "tasks/cancel", "tasks/result"] {
            let answer = other.request(3, method, json!({"taskId": id})).await;
            let (code, message) = rpc_error(&answer);
            assert_eq!(code, -32602, "{method}: {answer}");
            assert!(message.contains("not found"), "{method}: {message}");
        }
        let listed = other.request(4, "tasks/list", json!({})).await;
        assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    }
    assert_eq!(status_of(&fx, "One"), "pending");
    let listed = client.request(5, "tasks/list", json!({})).await;
    assert_eq!(listed["result"]["tasks"][0]["taskId"], id.as_str());

    // Bad requests are refused, each with what is wrong.
    for (params, wrong) in [
        (
            json!({"taskId": "0123456789abcdef0123456789abcdef"}),
            "not found",
        ),
        (json!({"taskId": 7}), "must be a string"),
        (json!({}), "must be a string"),
    ] {
        let answer = client.request(6, "tasks/get", params).await;
        let (code, message) = rpc_error(&answer);
        assert_eq!(code, -32602);
        assert!(message.contains(wrong), "{message}");
    }
    for params in [
        json!({"name": "submit_plan", "arguments": {"path": "plans/x.md", "plan": "# X"}, "task": "soon"}),
        json!({"name": "nope", "arguments": {}, "task": {}}),
        json!({"name": "submit_plan", "arguments": [], "task": {}}),
    ] {
        let answer = client.request(7, "tools/call", params.clone()).await;
        assert_eq!(rpc_error(&answer).0, -32602, "{params}: {answer}");
    }
    let answer = client
        .request(8, "tasks/list", json!({"cursor": "abc"}))
        .await;
    assert_eq!(rpc_error(&answer).0, -32602);
    assert_eq!(
        fx.listing(&["pending"]).as_array().unwrap().len(),
        1,
        "nothing refused reached a person"
    );

    // tasks/result waits for the person; its answer is the tool's result.
    let result = client
        .post(json!({"jsonrpc": "2.0", "id": 9, "method": "tasks/result",
                     "params": {"taskId": id}}))
        .await;
    assert!(result.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let waiting = tokio::spawn(sse_messages(result));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "tasks/result waits for a decision");
    decide_when_pending(&fx, &["approve", "--note", "Go"]).await;
    let answer = waiting.await.unwrap();
    let answer = answer.iter().find(|m| m["id"] == 9).unwrap();
    let object: Value =
        serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        object["content"],
        format!("{APPROVED}\n\nReviewer notes: Go")
    );
    assert_eq!(answer["result"]["structuredContent"], object);
    assert_eq!(
        answer["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    let got = client.request(10, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");

    // Cancelled: abandoned before the answer; then refused as terminal.
    let task = client
        .submit_task(11, "plans/two.md", "# Two\n\nA plan")
        .await;
    until_pending(&fx).await;
    let cancelled = client
        .request(12, "tasks/cancel", json!({"taskId": task["taskId"]}))
        .await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_eq!(
        status_of(&fx, "Two"),
        "abandoned",
        "abandoned before the answer"
    );
    let two = fx
        .listing(&["history"])
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["title"] == "Two")
        .unwrap()["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_undecidable(&fx, &two, "Two");
    let again = client
        .request(13, "tasks/cancel", json!({"taskId": task["taskId"]}))
        .await;
    assert_eq!(rpc_error(&again).0, -32602);

    // A client that ends its session (DELETE) leaves no task waiting.
    client
        .submit_task(14, "plans/three.md", "# Three\n\nA plan")
        .await;
    until_pending(&fx).await;
    let deleted = client
        .http
        .delete(&client.url)
        .bearer_auth(&token)
        .header("mcp-protocol-version", LEGACY_VERSION)
        .header("mcp-session-id", client.session.as_deref().unwrap())
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let took = until_titled(&fx, "Three", "abandoned", Duration::from_secs(5)).await;
    eprintln!("a task of an ended session abandoned after {took:?}");

    // And a server that stops leaves none either.
    other_token
        .submit_task(15, "plans/four.md", "# Four\n\nA plan")
        .await;
    until_pending(&fx).await;
    assert!(server.stop().success());
    assert_eq!(status_of(&fx, "Four"), "abandoned");
    assert_eq!(fx.listing(&["pending"]), json!([]));
}
