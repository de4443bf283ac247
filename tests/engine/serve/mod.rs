//! `plandesk serve` through real HTTP on 127.0.0.1: tokens made with the CLI, requests without
//! a valid one refused before anything is recorded, rmcp's own streamable HTTP client calling
//! `submit_plan`, and Claude Code's http hook payloads, each decided from another process.
//! This module is the harness (a server process, tokens, clients); the tests are in
//! `auth` (tokens, refusals, OAuth discovery), `calls` (`submit_plan` as a call), `tasks`
//! (`submit_plan` as a 2025-11-25 task), `hooks` (Claude Code's http hook), `revoked` (a
//! token revoked while its plans wait) and `web` (the web review's sessions and checks);
//! `legacy` is a raw-HTTP client of the 2025-11-25 protocol.

mod auth;
mod calls;
mod hooks;
mod legacy;
mod nearby;
mod revoked;
mod tasks;
mod web;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::Duration;

use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Value};

use crate::mcp::Client;
use crate::support::*;

/// A `plandesk serve` process on a free loopback port.
pub struct Server {
    child: Child,
    pub base: String,
    /// What it wrote to stderr after its first line.
    stderr: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
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
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = stderr.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                kept.lock().unwrap().push(line);
            }
        });
        Self {
            child,
            base: format!("http://{address}"),
            stderr,
        }
    }

    /// What it wrote to stderr so far, after the line saying where it serves.
    pub fn stderr(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
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

const APPROVED: &str = "Plan approved. Proceed with implementation following the approved plan.";

/// Approves the pending plan once it has waited `wait`.
async fn decide_after(fx: &Fixture, wait: Duration) {
    let run = until_pending(fx).await["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    tokio::time::sleep(wait).await;
    fx.ok(&["approve", &run]);
}
