//! OpenAI-compatible and Anthropic providers against a real HTTP server on 127.0.0.1 replaying
//! streams in each provider's documented wire format. Each test runs the real `plandesk` binary
//! and checks both sides: the chunks a host sees and the exact requests the server received.

use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::http_server::{fixture, Recorded, ReplayServer};
use crate::support::{chunks, Fixture};

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

/// Each scenario, once per provider's wire format.
macro_rules! provider_tests {
    ($($name:ident),* $(,)?) => {
        mod openai {
            $(
                #[test]
                fn $name() {
                    super::$name(&super::OPENAI)
                }
            )*
        }
        mod anthropic {
            $(
                #[test]
                fn $name() {
                    super::$name(&super::ANTHROPIC)
                }
            )*
        }
    };
}

mod conversation;
mod failures;
