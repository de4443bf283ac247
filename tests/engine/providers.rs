//! OpenAI-compatible and Anthropic providers against a real HTTP server on 127.0.0.1 replaying
//! streams in each provider's documented wire format. Each test runs the real `plandesk` binary
//! and checks both sides: the chunks a host sees and the exact requests the server received.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::http_server::{fixture, Part, Recorded, ReplayServer, Reply};
use crate::support::{chunks, types, Fixture};

const KEY: &str = "sk-test-5ecret-0123456789abcdef";
const PROMPT: &str = "Add a greeting function";
const PLAN_PATH: &str = ".plandesk/plans/greeting.md";

/// One provider's wire format, as these tests need to know it.
pub struct Wire {
    name: &'static str,
    key_env: &'static str,
    base_env: &'static str,
    path: &'static str,
}

pub const OPENAI: Wire = Wire {
    name: "openai",
    key_env: "OPENAI_API_KEY",
    base_env: "OPENAI_BASE_URL",
    path: "/v1/chat/completions",
};

pub const ANTHROPIC: Wire = Wire {
    name: "anthropic",
    key_env: "ANTHROPIC_API_KEY",
    base_env: "ANTHROPIC_BASE_URL",
    path: "/v1/messages",
};

impl Wire {
    fn spec(&self, server: &ReplayServer) -> String {
        format!("{}:test-model@{}/v1", self.name, server.url())
    }

    fn fixture(&self, name: &str) -> String {
        fixture(self.name, name)
    }

    /// `plandesk ARGS` with this provider's key in the environment.
    fn command(&self, fx: &Fixture, args: &[&str]) -> Command {
        let mut cmd = fx.command(args);
        cmd.env(self.key_env, KEY);
        cmd
    }

    /// `plandesk --json run --model SPEC PROMPT`.
    fn run(&self, fx: &Fixture, server: &ReplayServer) -> Output {
        let spec = self.spec(server);
        self.command(fx, &["--json", "run", "--model", &spec, PROMPT])
            .output()
            .unwrap()
    }

    fn assert_headers(&self, request: &Recorded) {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, self.path, "the provider's endpoint");
        match self.name {
            "openai" => assert_eq!(
                request.headers.get("authorization").map(String::as_str),
                Some(format!("Bearer {KEY}").as_str()),
                "OpenAI authenticates with a bearer token"
            ),
            _ => {
                assert_eq!(
                    request.headers.get("x-api-key").map(String::as_str),
                    Some(KEY)
                );
                assert_eq!(
                    request.headers.get("anthropic-version").map(String::as_str),
                    Some("2023-06-01")
                );
                assert!(!request.headers.contains_key("authorization"));
            }
        }
    }

    /// The conversation part of a request body, without the system prompt.
    fn conversation(&self, body: &Value) -> Vec<Value> {
        let messages = body["messages"].as_array().unwrap().clone();
        match self.name {
            "openai" => {
                assert_eq!(messages[0]["role"], "system", "system prompt first");
                messages[1..].to_vec()
            }
            _ => messages,
        }
    }

    fn system(&self, body: &Value) -> String {
        match self.name {
            "openai" => body["messages"][0]["content"].as_str().unwrap().to_owned(),
            _ => body["system"].as_str().unwrap().to_owned(),
        }
    }

    fn tool_names(&self, body: &Value) -> Vec<String> {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| match self.name {
                "openai" => t["function"]["name"].as_str().unwrap().to_owned(),
                _ => t["name"].as_str().unwrap().to_owned(),
            })
            .collect()
    }

    /// The first request of a new run: the model, streaming on, the person's prompt, and the
    /// plan mode's tools with `submit_plan`'s schema exactly as documented.
    fn assert_first_request(&self, body: &Value) {
        assert_eq!(body["model"], "test-model");
        assert_eq!(body["stream"], true);
        assert!(
            self.system(body)
                .contains("Plans go in the `.plandesk/plans/` folder"),
            "the system prompt carries the agent's instructions"
        );
        assert_eq!(
            self.tool_names(body),
            ["read_file", "list_files", "write_file", "submit_plan"],
            "plan mode's tools"
        );
        let submit = &body["tools"][3];
        let schema = json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Path of the plan file, relative to the workspace root"}},
            "required": ["path"],
            "additionalProperties": false
        });
        match self.name {
            "openai" => {
                assert_eq!(body["stream_options"], json!({"include_usage": true}));
                assert_eq!(submit["type"], "function");
                assert_eq!(submit["function"]["parameters"], schema);
                assert!(submit["function"]["description"].as_str().unwrap().len() > 40);
                assert_eq!(
                    self.conversation(body),
                    [json!({"role": "user", "content": PROMPT})]
                );
            }
            _ => {
                assert_eq!(body["max_tokens"], 8192);
                assert_eq!(submit["input_schema"], schema);
                assert!(submit["description"].as_str().unwrap().len() > 40);
                assert_eq!(
                    self.conversation(body),
                    [json!({"role": "user", "content": [{"type": "text", "text": PROMPT}]})]
                );
            }
        }
    }

    /// The assistant turn and tool results the model is sent back, in this wire's shape.
    fn expected_tool_round(
        &self,
        text: &str,
        calls: &[(&str, &str, Value)],
        results: &[(&str, &Value)],
    ) -> Vec<Value> {
        match self.name {
            "openai" => {
                let tool_calls: Vec<Value> = calls
                    .iter()
                    .map(|(id, name, args)| {
                        json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
                    })
                    .collect();
                let content = if text.is_empty() {
                    Value::Null
                } else {
                    json!(text)
                };
                let mut out = vec![
                    json!({"role": "user", "content": PROMPT}),
                    json!({"role": "assistant", "content": content, "tool_calls": tool_calls}),
                ];
                out.extend(results.iter().map(|(id, result)| {
                    json!({"role": "tool", "tool_call_id": id, "content": result.to_string()})
                }));
                out
            }
            _ => {
                let mut blocks: Vec<Value> = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                blocks.extend(calls.iter().map(|(id, name, args)| {
                    json!({"type": "tool_use", "id": id, "name": name, "input": args})
                }));
                let results: Vec<Value> = results
                    .iter()
                    .map(|(id, result)| {
                        json!({"type": "tool_result", "tool_use_id": id, "content": result.to_string()})
                    })
                    .collect();
                vec![
                    json!({"role": "user", "content": [{"type": "text", "text": PROMPT}]}),
                    json!({"role": "assistant", "content": blocks}),
                    json!({"role": "user", "content": results}),
                ]
            }
        }
    }

    /// Tool call ids in this wire's fixtures.
    fn id(&self, short: &str) -> String {
        match self.name {
            "openai" => format!("call_{short}"),
            _ => format!("toolu_{short}"),
        }
    }
}

/// Tool call arguments in the model-facing normal form: arguments re-serialised by the run
/// (OpenAI's `arguments` strings are compared as parsed JSON, so key order does not matter).
fn normalise(mut messages: Vec<Value>) -> Vec<Value> {
    for message in &mut messages {
        if let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) {
            for call in calls {
                let args = &mut call["function"]["arguments"];
                *args = serde_json::from_str(args.as_str().unwrap()).unwrap();
            }
        }
    }
    messages
}

fn of_type<'a>(chunks: &'a [Value], kind: &str) -> Vec<&'a Value> {
    chunks.iter().filter(|c| c["type"] == kind).collect()
}

fn result_of<'a>(chunks: &'a [Value], id: &str) -> &'a Value {
    &chunks
        .iter()
        .find(|c| c["type"] == "tool-result" && c["payload"]["toolCallId"] == id)
        .unwrap_or_else(|| panic!("no tool-result for {id}"))["payload"]["result"]
}

fn text(chunks: &[Value]) -> String {
    of_type(chunks, "text-delta")
        .iter()
        .map(|c| c["payload"]["text"].as_str().unwrap())
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "plandesk failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(out)
    );
}

/// A failed model call: exit 1, the stream ends with one `error` chunk.
fn failed_with(out: &Output, code: &str) -> (Vec<Value>, String) {
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed run exits 1: {}",
        stderr(out)
    );
    let chunks = chunks(&out.stdout);
    let last = chunks.last().unwrap();
    assert_eq!(last["type"], "error", "{chunks:?}");
    assert_eq!(last["payload"]["error"]["code"], code, "{last}");
    let message = last["payload"]["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    (chunks, message)
}

fn assert_no_key_anywhere(fx: &Fixture, outputs: &[&Output]) {
    for out in outputs {
        for stream in [&out.stdout, &out.stderr] {
            assert!(
                !String::from_utf8_lossy(stream).contains(KEY),
                "the key leaked into output"
            );
        }
    }
    for (place, bytes) in fx.stored() {
        assert!(
            !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
            "the key reached {place}"
        );
    }
}

fn plain_text(wire: &Wire) {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    server.push(Reply::sse(&wire.fixture("text")));
    let out = wire.run(&fx, &server);
    assert_ok(&out);
    let chunks = chunks(&out.stdout);
    assert_eq!(
        types(&chunks),
        [
            "start",
            "step-start",
            "text-start",
            "text-delta",
            "text-delta",
            "text-delta",
            "text-end",
            "step-finish",
            "finish"
        ]
    );
    assert_eq!(text(&chunks), "Hello there — I’ll plan first.");
    let finish = chunks.last().unwrap();
    assert_eq!(finish["payload"]["stepResult"]["reason"], "stop");
    assert_eq!(
        finish["payload"]["usage"],
        json!({"inputTokens": 120, "outputTokens": 9}),
        "usage as the server reported it"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    wire.assert_headers(&requests[0]);
    wire.assert_first_request(&requests[0].body);
    assert_no_key_anywhere(&fx, &[&out]);
}

fn one_tool_call(wire: &Wire) {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    server
        .push(Reply::sse(&wire.fixture("tool_call")))
        .push(Reply::sse(&wire.fixture("text")));
    let out = wire.run(&fx, &server);
    assert_ok(&out);
    let chunks = chunks(&out.stdout);
    let id = wire.id("read1");
    let calls = of_type(&chunks, "tool-call");
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0]["payload"],
        json!({"toolCallId": id, "toolName": "read_file", "args": {"path": "src/lib.rs"}}),
        "arguments assembled from their fragments"
    );
    let result = result_of(&chunks, &id);
    assert!(
        result.to_string().contains("pub fn answer() -> u32 { 42 }"),
        "read_file ran: {result}"
    );
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        2,
        "the model is called again with the result"
    );
    let said = if wire.name == "openai" {
        ""
    } else {
        "Reading the library first."
    };
    assert_eq!(
        normalise(wire.conversation(&requests[1].body)),
        normalise(wire.expected_tool_round(
            said,
            &[(&id, "read_file", json!({"path": "src/lib.rs"}))],
            &[(&id, result)]
        ))
    );
}

fn two_parallel_calls(wire: &Wire) {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    server
        .push(Reply::sse(&wire.fixture("parallel")))
        .push(Reply::sse(&wire.fixture("text")));
    let out = wire.run(&fx, &server);
    assert_ok(&out);
    let chunks = chunks(&out.stdout);
    let (a, b) = (wire.id("a"), wire.id("b"));
    let calls: Vec<&Value> = of_type(&chunks, "tool-call")
        .iter()
        .map(|c| &c["payload"])
        .collect();
    assert_eq!(
        calls,
        [
            &json!({"toolCallId": a, "toolName": "read_file", "args": {"path": "src/lib.rs"}}),
            &json!({"toolCallId": b, "toolName": "list_files", "args": {"path": "."}}),
        ]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        normalise(wire.conversation(&requests[1].body)),
        normalise(wire.expected_tool_round(
            "",
            &[
                (&a, "read_file", json!({"path": "src/lib.rs"})),
                (&b, "list_files", json!({"path": "."}))
            ],
            &[(&a, result_of(&chunks, &a)), (&b, result_of(&chunks, &b))]
        )),
        "both calls in one assistant turn, both results back in order"
    );
}

fn submit_plan_suspends_and_resumes(wire: &Wire) {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    server.push(Reply::sse(&wire.fixture("submit_plan")));
    // The base URL comes from the environment when the run starts...
    let start = wire
        .command(
            &fx,
            &[
                "--json",
                "run",
                "--model",
                &format!("{}:test-model", wire.name),
                PROMPT,
            ],
        )
        .env(wire.base_env, format!("{}/v1", server.url()))
        .output()
        .unwrap();
    assert_ok(&start);
    let first = chunks(&start.stdout);
    assert_eq!(
        types(&first)[first.len() - 3..],
        ["tool-call", "tool-call", "tool-call-suspended"],
        "the run suspends on submit_plan"
    );
    let run_id = first[0]["runId"].as_str().unwrap().to_owned();
    let runs: Value = serde_json::from_slice(&fx.ok(&["--json", "runs"]).stdout).unwrap();
    assert_eq!(
        runs[0]["model"],
        format!("{}:test-model@{}/v1", wire.name, server.url()),
        "the run records the model and where it lives"
    );
    assert!(fx.workspace.join(PLAN_PATH).exists(), "write_file ran");

    // ...and a resume in a new process, with the environment gone, goes to the same server.
    server.push(Reply::sse(&wire.fixture("after_approval")));
    let approve = wire
        .command(&fx, &["--json", "approve", &run_id])
        .output()
        .unwrap();
    assert_ok(&approve);
    let resumed = chunks(&approve.stdout);
    assert_eq!(resumed.last().unwrap()["type"], "finish");
    assert_eq!(text(&resumed), "The plan is approved; implementing it now.");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    wire.assert_headers(&requests[1]);
    let (w, s) = (wire.id("w"), wire.id("s"));
    let approved = json!({
        "toolId": "submit_plan",
        "content": "Plan approved. Proceed with implementation following the approved plan.",
        "isError": false,
        "submittedPlan": {
            "title": "Greeting module",
            "path": PLAN_PATH,
            "plan": "Add `greet(name)` to src/lib.rs.\n\n1. Write the function\n2. Test it"
        }
    });
    assert_eq!(result_of(&resumed, &s), &approved);
    let plan = "# Greeting module\n\nAdd `greet(name)` to src/lib.rs.\n\n1. Write the function\n2. Test it\n";
    assert_eq!(
        normalise(wire.conversation(&requests[1].body)),
        normalise(wire.expected_tool_round(
            "I'll write the plan and submit it.",
            &[
                (
                    &w,
                    "write_file",
                    json!({"path": PLAN_PATH, "content": plan})
                ),
                (&s, "submit_plan", json!({"path": PLAN_PATH}))
            ],
            &[(&w, result_of(&resumed, &w)), (&s, &approved)]
        )),
        "the approval goes back as the submit_plan tool result, in the wire's own shape"
    );
    assert_eq!(
        wire.tool_names(&requests[1].body),
        ["read_file", "list_files", "write_file"],
        "approval switched the run to build mode before calling the model"
    );
    assert_no_key_anywhere(&fx, &[&start, &approve]);
}

fn rate_limited_then_success(wire: &Wire) {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    let limited = json!({"error": {"type": "rate_limit_error", "message": "Rate limit reached for requests"}});
    server
        .push(Reply::json(429, &limited).header("retry-after", "1"))
        .push(Reply::json(
            503,
            &json!({"error": {"message": "overloaded"}}),
        ))
        .push(Reply::sse(&wire.fixture("text")));
    let began = Instant::now();
    let out = wire.run(&fx, &server);
    assert_ok(&out);
    assert!(
        began.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was honoured"
    );
    assert_eq!(text(&chunks(&out.stdout)), "Hello there — I’ll plan first.");
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "429, then 503, then success");
    assert!(
        requests.iter().all(|r| r.body == requests[0].body),
        "every attempt sends the same request"
    );
}

fn error_mid_stream_is_not_retried(wire: &Wire) {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    server.push(Reply::sse(&wire.fixture("mid_error")));
    let out = wire.run(&fx, &server);
    let (chunks, message) = failed_with(&out, "model-provider-error");
    assert!(
        message.starts_with(&format!("{} reported an error mid-answer", wire.name)),
        "{message}"
    );
    assert_eq!(text(&chunks), "Working on ", "what streamed was shown");
    assert_eq!(
        server.requests().len(),
        1,
        "nothing is retried once output started"
    );
    let run_id = chunks[0]["runId"].as_str().unwrap();
    let listing: Value = serde_json::from_slice(&fx.ok(&["--json", "runs"]).stdout).unwrap();
    assert_eq!(listing[0]["status"], "failed");
    let failed = crate::support::events(&fx.store, run_id)
        .into_iter()
        .find(|e| e.kind == "failed")
        .expect("a failed event");
    assert_eq!(
        failed.data["partialText"], "Working on ",
        "what streamed before the failure is kept in the run's log"
    );
    assert_eq!(failed.data["code"], "model-provider-error");

    // The run resumes from its last good state: the same request again, then it finishes.
    server.push(Reply::sse(&wire.fixture("text")));
    let resumed = wire
        .command(&fx, &["--json", "resume", run_id])
        .output()
        .unwrap();
    assert_ok(&resumed);
    assert_eq!(chunks::last_type(&resumed.stdout), "finish");
    let requests = server.requests();
    assert_eq!(
        requests[1].body, requests[0].body,
        "retried from the last good state"
    );
}

fn cut_mid_stream(wire: &Wire) {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    server.push(Reply::sse_then(&wire.fixture("text"), 3, Part::Cut));
    let out = wire.run(&fx, &server);
    let (_, message) = failed_with(&out, "model-stream");
    assert!(
        message.starts_with(&format!("{}: ", wire.name))
            && (message.contains("connection broke") || message.contains("ended before")),
        "{message}"
    );
    assert_eq!(server.requests().len(), 1, "not retried");
}

fn malformed_delta(wire: &Wire) {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    server.push(Reply::sse(&wire.fixture("malformed")));
    let out = wire.run(&fx, &server);
    let (chunks, message) = failed_with(&out, "model-stream");
    assert!(
        message.starts_with(&format!("{}: malformed event data", wire.name)),
        "names the provider and what was wrong: {message}"
    );
    assert_eq!(text(&chunks), "Let me ");
}

fn stalled_stream_times_out(wire: &Wire) {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    server.push(Reply::sse_then(&wire.fixture("text"), 3, Part::Stall));
    let spec = wire.spec(&server);
    let out = wire
        .command(&fx, &["--json", "run", "--model", &spec, PROMPT])
        .env("PLANDESK_HTTP_IDLE_TIMEOUT_MS", "300")
        .output()
        .unwrap();
    let (_, message) = failed_with(&out, "model-timeout");
    assert!(message.contains("stalled: no data for 0.3 s"), "{message}");
    assert!(
        server.wait_client_closed(Duration::from_secs(10)),
        "the stalled connection was closed"
    );
}

fn wrong_key(wire: &Wire) {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    let echo = json!({"error": {"type": "authentication_error", "message": format!("Incorrect API key provided: {KEY}.")}});
    server.push(Reply::json(401, &echo));
    let out = wire.run(&fx, &server);
    let (_, message) = failed_with(&out, "model-auth");
    assert!(
        message.starts_with(&format!("{} refused the API key (HTTP 401", wire.name))
            && message.contains(&format!("plandesk key set {}", wire.name)),
        "says the key is wrong and for which provider: {message}"
    );
    assert!(message.contains("[redacted]"), "{message}");
    assert_eq!(server.requests().len(), 1, "a refused key is not retried");
    assert_no_key_anywhere(&fx, &[&out]);
}

macro_rules! provider_tests {
    ($module:ident, $wire:expr) => {
        mod $module {
            #[test]
            fn plain_text() {
                super::plain_text(&$wire)
            }
            #[test]
            fn one_tool_call() {
                super::one_tool_call(&$wire)
            }
            #[test]
            fn two_parallel_calls() {
                super::two_parallel_calls(&$wire)
            }
            #[test]
            fn submit_plan_suspends_and_resumes() {
                super::submit_plan_suspends_and_resumes(&$wire)
            }
            #[test]
            fn rate_limited_then_success() {
                super::rate_limited_then_success(&$wire)
            }
            #[test]
            fn error_mid_stream_is_not_retried() {
                super::error_mid_stream_is_not_retried(&$wire)
            }
            #[test]
            fn cut_mid_stream() {
                super::cut_mid_stream(&$wire)
            }
            #[test]
            fn malformed_delta() {
                super::malformed_delta(&$wire)
            }
            #[test]
            fn stalled_stream_times_out() {
                super::stalled_stream_times_out(&$wire)
            }
            #[test]
            fn wrong_key() {
                super::wrong_key(&$wire)
            }
        }
    };
}

provider_tests!(openai, super::OPENAI);
provider_tests!(anthropic, super::ANTHROPIC);

mod chunks {
    pub fn last_type(stdout: &[u8]) -> String {
        let all = crate::support::chunks(stdout);
        all.last().unwrap()["type"].as_str().unwrap().to_owned()
    }
}

#[test]
fn retries_are_bounded() {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    for _ in 0..5 {
        server.push(
            Reply::json(500, &json!({"error": {"message": "boom"}})).header("retry-after", "0"),
        );
    }
    let out = OPENAI.run(&fx, &server);
    let (_, message) = failed_with(&out, "model-http-status");
    assert_eq!(message, "openai answered HTTP 500: boom after 4 attempts");
    assert_eq!(server.requests().len(), 4);
}

#[test]
fn a_long_retry_after_is_not_waited_for() {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    server.push(
        Reply::json(429, &json!({"error": {"message": "slow down"}})).header("retry-after", "3600"),
    );
    let out = ANTHROPIC.run(&fx, &server);
    let (_, message) = failed_with(&out, "model-rate-limited");
    assert!(message.contains("retry after 3600 s"), "{message}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_missing_key_is_refused_before_anything_is_stored() {
    let fx = Fixture::new(json!([]));
    let out = fx
        .command(&["run", "--model", "anthropic:claude-sonnet-4-5", PROMPT])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("anthropic: no API key: set ANTHROPIC_API_KEY or save one with `plandesk key set anthropic`")
            && err.contains("the OS keyring could not be read"),
        "{err}"
    );
    let runs: Value = serde_json::from_slice(&fx.ok(&["--json", "runs"]).stdout).unwrap();
    assert_eq!(runs, json!([]), "no run was created");
}

#[test]
fn an_unreachable_server_is_named() {
    let fx = Fixture::new(json!([]));
    let out = fx
        .command(&[
            "--json",
            "run",
            "--model",
            "openai:m@http://127.0.0.1:9/v1",
            PROMPT,
        ])
        .output()
        .unwrap();
    let (_, message) = failed_with(&out, "model-connect");
    assert!(
        message.starts_with("openai: cannot reach http://127.0.0.1:9/v1/chat/completions: "),
        "{message}"
    );
}
