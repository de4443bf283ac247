//! Anthropic Messages with `stream: true`: `content_block_start/delta/stop` for text and
//! `tool_use` blocks (arguments as `input_json_delta` fragments), `message_delta` for the stop
//! reason and usage, `error` events. Tool results go back as `tool_result` blocks in a user turn.

use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::http::{self, Endpoint, HttpSettings, WireDecoder};
use super::{EventStream, LanguageModel, ModelError, ModelEvent, ModelRequest};
use crate::chunk::Usage;
use crate::message::Message;
use crate::secret::ApiKey;

pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com/v1";
/// The Messages API version this wire format follows.
pub const API_VERSION: &str = "2023-06-01";
/// Room for a long plan written in one tool call.
pub const MAX_TOKENS: u32 = 8192;

const PROVIDER: &str = "anthropic";

#[derive(Debug)]
pub struct AnthropicModel {
    model: String,
    base_url: String,
    endpoint: Endpoint,
    settings: HttpSettings,
    client: reqwest::Client,
}

impl AnthropicModel {
    pub fn new(
        model: &str,
        base_url: &str,
        key: Option<ApiKey>,
        settings: HttpSettings,
    ) -> Result<Self, ModelError> {
        let base_url = base_url.trim_end_matches('/').to_owned();
        let endpoint = Endpoint::new(
            PROVIDER,
            format!("{base_url}/messages"),
            "check ANTHROPIC_API_KEY, or save a new key with `plandesk key set anthropic`",
        )
        .with_key("x-api-key", "", key, &settings)?
        .with_header("anthropic-version", API_VERSION);
        Ok(Self {
            model: model.to_owned(),
            base_url,
            endpoint,
            client: http::client(&settings)?,
            settings,
        })
    }
}

impl LanguageModel for AnthropicModel {
    fn spec(&self) -> String {
        if self.base_url == ANTHROPIC_BASE_URL {
            format!("{PROVIDER}:{}", self.model)
        } else {
            format!("{PROVIDER}:{}@{}", self.model, self.base_url)
        }
    }

    fn stream<'a>(&'a self, request: ModelRequest<'a>) -> EventStream<'a> {
        http::stream_call(
            self.client.clone(),
            self.endpoint.clone(),
            request_body(&self.model, &request),
            self.settings.clone(),
            MessagesDecoder::default(),
        )
    }
}

/// The Messages request for one model call. Consecutive messages of one role are merged into
/// one turn (the API wants turns to alternate): a step's tool results, and the person's next
/// message after them, form one user turn.
pub fn request_body(model: &str, request: &ModelRequest<'_>) -> Value {
    let mut system = request.system.to_owned();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in request.messages {
        let (role, blocks) = match message {
            Message::System { content } => {
                system.push_str("\n\n");
                system.push_str(content);
                continue;
            }
            Message::User { content } => ("user", vec![json!({"type": "text", "text": content})]),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                // The API refuses empty text blocks.
                let text = (!content.is_empty()).then(|| json!({"type": "text", "text": content}));
                let uses = tool_calls.iter().map(|call| {
                    json!({
                        "type": "tool_use",
                        "id": call.tool_call_id,
                        "name": call.tool_name,
                        "input": tool_input(call.args.value()),
                    })
                });
                ("assistant", text.into_iter().chain(uses).collect())
            }
            Message::Tool {
                tool_call_id,
                result,
                ..
            } => {
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": tool_call_id,
                    "content": result.text(),
                });
                if result.value().get("isError") == Some(&Value::Bool(true)) {
                    block["is_error"] = Value::Bool(true);
                }
                ("user", vec![block])
            }
        };
        match turns.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let messages: Vec<Value> = turns
        .into_iter()
        .filter(|(_, content)| !content.is_empty())
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = json!({
        "model": model,
        "max_tokens": MAX_TOKENS,
        "stream": true,
        "system": system,
        "messages": messages,
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                })
            })
            .collect();
    }
    body
}

/// `tool_use.input` must be an object; arguments that were not one (the model sent text that
/// was not JSON) go back under `_raw` so the model can see what it sent.
fn tool_input(args: Value) -> Value {
    match args {
        Value::Object(_) => args,
        Value::Null => Value::Object(Map::new()),
        other => json!({"_raw": other}),
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum EventWire {
    MessageStart {
        message: MessageWire,
    },
    ContentBlockStart {
        index: u32,
        content_block: BlockWire,
    },
    ContentBlockDelta {
        index: u32,
        delta: DeltaWire,
    },
    ContentBlockStop {
        index: u32,
    },
    MessageDelta {
        #[serde(default)]
        delta: Option<MessageDeltaWire>,
        #[serde(default)]
        usage: Option<UsageWire>,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorWire,
    },
    /// Event types added to the API later are ignored.
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
struct MessageWire {
    #[serde(default)]
    usage: Option<UsageWire>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockWire {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    /// Thinking, server tools, and block types to come: not part of a plan's conversation.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum DeltaWire {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct MessageDeltaWire {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct UsageWire {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct ErrorWire {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// Assembles a Messages stream into model events.
#[derive(Debug, Default)]
pub(crate) struct MessagesDecoder {
    /// Open `tool_use` blocks: (block index, tool call id).
    tool_blocks: Vec<(u32, String)>,
    usage: Usage,
    stop_reason: Option<String>,
    done: bool,
}

impl MessagesDecoder {
    fn apply(&mut self, event: EventWire) -> Result<Vec<ModelEvent>, ModelError> {
        let mut out = Vec::new();
        match event {
            EventWire::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.count(&usage);
                }
            }
            EventWire::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                BlockWire::Text { text } if !text.is_empty() => {
                    out.push(ModelEvent::TextDelta(text));
                }
                BlockWire::ToolUse { id, name } => {
                    self.tool_blocks.push((index, id.clone()));
                    out.push(ModelEvent::ToolCallStart { id, name });
                }
                BlockWire::Text { .. } | BlockWire::Other => {}
            },
            EventWire::ContentBlockDelta { index, delta } => match delta {
                DeltaWire::TextDelta { text } => out.push(ModelEvent::TextDelta(text)),
                DeltaWire::InputJsonDelta { partial_json } => {
                    let id = self.tool_id(index).ok_or_else(|| ModelError::Stream {
                        provider: PROVIDER,
                        message: format!(
                            "input_json_delta for block {index}, which is no tool_use"
                        ),
                    })?;
                    out.push(ModelEvent::ToolCallArgsDelta {
                        id,
                        delta: partial_json,
                    });
                }
                DeltaWire::Other => {}
            },
            EventWire::ContentBlockStop { index } => {
                if let Some(pos) = self.tool_blocks.iter().position(|(i, _)| *i == index) {
                    let (_, id) = self.tool_blocks.remove(pos);
                    out.push(ModelEvent::ToolCallEnd { id });
                }
            }
            EventWire::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(normalise_reason(&reason));
                }
                if let Some(usage) = usage {
                    self.count(&usage);
                }
            }
            EventWire::MessageStop => {
                self.done = true;
                out.extend(self.close()?);
            }
            EventWire::Error { error } => {
                return Err(ModelError::Provider {
                    provider: PROVIDER,
                    kind: error.kind.unwrap_or_else(|| "error".into()),
                    message: error.message.unwrap_or_default(),
                })
            }
            EventWire::Ping | EventWire::Unknown => {}
        }
        Ok(out)
    }

    fn tool_id(&self, index: u32) -> Option<String> {
        self.tool_blocks
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, id)| id.clone())
    }

    /// `message_start` carries the input count; `message_delta` the running output count.
    fn count(&mut self, usage: &UsageWire) {
        if let Some(n) = usage.input_tokens {
            self.usage.input_tokens = n;
        }
        if let Some(n) = usage.output_tokens {
            self.usage.output_tokens = n;
        }
    }

    fn close(&mut self) -> Result<Vec<ModelEvent>, ModelError> {
        if let Some((index, id)) = self.tool_blocks.first() {
            return Err(ModelError::Stream {
                provider: PROVIDER,
                message: format!("the answer ended inside tool_use block {index} ({id})"),
            });
        }
        let reason = self.stop_reason.take().unwrap_or_else(|| "stop".into());
        Ok(vec![
            ModelEvent::Usage(self.usage),
            ModelEvent::Finish { reason },
        ])
    }
}

impl WireDecoder for MessagesDecoder {
    fn event(&mut self, event: &Event) -> Result<Vec<ModelEvent>, ModelError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let parsed: EventWire = http::parse_json(PROVIDER, data)?;
        self.apply(parsed)
    }

    fn end(&mut self) -> Result<Vec<ModelEvent>, ModelError> {
        if self.done {
            return Ok(Vec::new());
        }
        if self.stop_reason.is_some() {
            self.done = true;
            return self.close();
        }
        Err(ModelError::Stream {
            provider: PROVIDER,
            message: "the stream ended before the answer was complete (no message_stop)".into(),
        })
    }

    fn finished(&self) -> bool {
        self.done
    }
}

fn normalise_reason(reason: &str) -> String {
    match reason {
        "end_turn" | "stop_sequence" => "stop".into(),
        "tool_use" => "tool-calls".into(),
        "max_tokens" | "model_context_window_exceeded" => "length".into(),
        "refusal" => "content-filter".into(),
        other => other.replace('_', "-"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::http::testing::{
        all_fixtures, fixture as recorded, joined as collect, run_split, same_at_every_split,
    };

    fn fixture(name: &str) -> String {
        recorded("anthropic", name)
    }

    fn decode_all(name: &str) -> Vec<Result<ModelEvent, String>> {
        same_at_every_split(&fixture(name), MessagesDecoder::default)
    }

    #[test]
    fn plain_text_with_usage_from_start_and_delta() {
        let events = decode_all("text");
        assert_eq!(collect(&events, None), "Hello there — I’ll plan first.");
        let tail: Vec<_> = events.iter().rev().take(2).rev().cloned().collect();
        assert_eq!(
            tail,
            vec![
                Ok(ModelEvent::Usage(Usage {
                    input_tokens: 120,
                    output_tokens: 9
                })),
                Ok(ModelEvent::Finish {
                    reason: "stop".into()
                })
            ]
        );
    }

    #[test]
    fn tool_use_blocks_with_json_fragments() {
        let events = decode_all("parallel");
        assert!(events.contains(&Ok(ModelEvent::ToolCallStart {
            id: "toolu_a".into(),
            name: "read_file".into()
        })));
        assert_eq!(
            collect(&events, Some("toolu_a")),
            r#"{"path": "src/lib.rs"}"#
        );
        assert_eq!(collect(&events, Some("toolu_b")), r#"{"path": "."}"#);
        assert_eq!(
            events.last(),
            Some(&Ok(ModelEvent::Finish {
                reason: "tool-calls".into()
            }))
        );
    }

    #[test]
    fn error_event_ends_the_answer_with_its_type() {
        let events = decode_all("mid_error");
        assert_eq!(
            events.last().unwrap().clone().unwrap_err(),
            "anthropic reported an error mid-answer (overloaded_error): Overloaded"
        );
        assert_eq!(collect(&events, None), "Working on ");
    }

    #[test]
    fn malformed_delta_is_named() {
        let events = decode_all("malformed");
        let last = events.last().unwrap().clone().unwrap_err();
        assert!(
            last.starts_with("anthropic: malformed event data"),
            "{last}"
        );
    }

    #[test]
    fn cut_inside_a_tool_block_is_an_error() {
        let whole = fixture("tool_call");
        let cut = &whole[..whole.find("event: content_block_stop").unwrap()];
        let events = run_split(cut.as_bytes(), &[], MessagesDecoder::default());
        let last = events.last().unwrap().clone().unwrap_err();
        assert!(last.contains("no message_stop"), "{last}");
    }

    #[test]
    fn tool_results_and_the_next_message_share_one_user_turn() {
        use crate::message::{CalledTool, Json};
        let messages = vec![
            Message::user("plan it"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![CalledTool {
                    tool_call_id: "toolu_1".into(),
                    tool_name: "submit_plan".into(),
                    args: Json::new(&json!({"path": "p.md"})),
                }],
            },
            Message::tool(
                "toolu_1",
                "submit_plan",
                &json!({"content": "no", "isError": true}),
            ),
            Message::user("use a queue"),
        ];
        let body = request_body(
            "m",
            &ModelRequest {
                run_id: "r",
                system: "sys",
                plans_dir: ".plandesk/plans",
                messages: &messages,
                turns: 0,
                tools: &[],
            },
        );
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "plan it"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "submit_plan", "input": {"path": "p.md"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1",
                     "content": "{\"content\":\"no\",\"isError\":true}", "is_error": true},
                    {"type": "text", "text": "use a queue"}
                ]}
            ]),
            "no empty text block; results and the next message merged"
        );
        assert!(body.get("tools").is_none(), "no tools, no tools field");
    }

    #[test]
    fn every_recorded_stream_decodes_the_same_at_every_split() {
        for (name, wire) in all_fixtures("anthropic") {
            let events = same_at_every_split(&wire, MessagesDecoder::default);
            let last = events.last().cloned();
            let failing = name == "malformed" || name == "mid_error";
            assert_eq!(
                matches!(last, Some(Err(_))),
                failing,
                "{name} ends with {last:?}"
            );
            if !failing {
                assert!(
                    matches!(last, Some(Ok(ModelEvent::Finish { .. }))),
                    "{name} ends with a stop reason: {last:?}"
                );
            }
        }
    }
}
