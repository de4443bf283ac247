//! A client of the 2025-11-25 protocol over raw HTTP, for the tests that need to see each
//! message: the pre-2026 SDKs' way of calling, cancelling and using tasks.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

/// A client of the 2025-11-25 protocol over raw HTTP, message by message, as the pre-2026
/// SDKs (TypeScript's 1.x among them) speak it: `initialize`, then each request a POST whose
/// event stream is its answer, and a cancellation a POST of its own.
pub(super) struct LegacyClient {
    pub http: reqwest::Client,
    pub url: String,
    pub token: String,
    pub session: Option<String>,
}

pub(super) const LEGACY_VERSION: &str = "2025-11-25";

impl LegacyClient {
    pub async fn connect(base: &str, token: &str) -> Self {
        Self::connect_declaring(base, token, json!({})).await.0
    }

    /// A client that declares `capabilities`; with `initialize`'s result.
    pub async fn connect_declaring(base: &str, token: &str, capabilities: Value) -> (Self, Value) {
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
    pub async fn request(&self, id: u64, method: &str, params: Value) -> Value {
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
    pub async fn submit_task(&self, id: u64, path: &str, plan: &str) -> Value {
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

    pub async fn post(&self, body: Value) -> reqwest::Response {
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
    pub async fn call(&self, id: u64, path: &str, plan: &str) -> reqwest::Response {
        let response = self
            .post(
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "submit_plan", "arguments": {"path": path, "plan": plan}}}),
            )
            .await;
        assert_eq!(response.status(), 200);
        response
    }

    pub async fn cancel(&self, id: u64) -> reqwest::Response {
        self.post(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": id, "reason": "Request timed out"}}),
        )
        .await
    }
}

/// Every JSON-RPC message of an event stream (or of a JSON body), read to its end.
pub(super) async fn sse_messages(mut response: reqwest::Response) -> Vec<Value> {
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
pub(super) async fn until_pending_count(fx: &Fixture, count: usize) -> Vec<Value> {
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

/// The JSON-RPC error of an answer: its code, and its message.
pub(super) fn rpc_error(answer: &Value) -> (i64, String) {
    let error = &answer["error"];
    assert!(error.is_object(), "not an error: {answer}");
    (
        error["code"].as_i64().unwrap(),
        error["message"].as_str().unwrap().to_owned(),
    )
}
