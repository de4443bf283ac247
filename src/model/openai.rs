//! OpenAI-compatible Chat Completions with `stream: true`: OpenAI itself, and the local servers
//! that speak the same wire format (Ollama, llama.cpp server, vLLM, LM Studio).
//!
//! Tool calls arrive as deltas keyed by `index`: the first fragment carries the id and name, the
//! arguments are spread over many. Parsing is tolerant: unknown fields are ignored, an empty or
//! missing `finish_reason` is accepted, `data: [DONE]` ends the answer.

use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::{json, Value};

use super::http::{self, Endpoint, HttpSettings, WireDecoder};
use super::{EventStream, LanguageModel, ModelError, ModelEvent, ModelRequest};
use crate::chunk::Usage;
use crate::message::Message;
use crate::secret::ApiKey;

pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
pub const OLLAMA_BASE_URL: &str = "http://127.0.0.1:11434/v1";

/// A Chat Completions endpoint and the model to ask there.
#[derive(Debug)]
pub struct OpenAiModel {
    /// `openai` or `ollama`: the spec prefix, and the name errors give.
    provider: &'static str,
    model: String,
    base_url: String,
    /// The base URL a spec without `@URL` means for this provider.
    default_base_url: &'static str,
    endpoint: Endpoint,
    settings: HttpSettings,
    client: reqwest::Client,
}

impl OpenAiModel {
    pub fn new(
        provider: &'static str,
        model: &str,
        base_url: &str,
        default_base_url: &'static str,
        key: Option<ApiKey>,
        settings: HttpSettings,
    ) -> Result<Self, ModelError> {
        let base_url = base_url.trim_end_matches('/').to_owned();
        let key_hint = if provider == "ollama" {
            "Ollama needs no key: check that the server at the base URL is the one you meant"
        } else {
            "check OPENAI_API_KEY, or save a new key with `plandesk key set openai`"
        };
        let endpoint = Endpoint::new(provider, format!("{base_url}/chat/completions"), key_hint)
            .with_key("authorization", "Bearer ", key, &settings)?;
        Ok(Self {
            provider,
            model: model.to_owned(),
            base_url,
            default_base_url,
            endpoint,
            client: http::client(&settings)?,
            settings,
        })
    }
}

impl LanguageModel for OpenAiModel {
    fn spec(&self) -> String {
        if self.base_url == self.default_base_url {
            format!("{}:{}", self.provider, self.model)
        } else {
            format!("{}:{}@{}", self.provider, self.model, self.base_url)
        }
    }

    fn stream<'a>(&'a self, request: ModelRequest<'a>) -> EventStream<'a> {
        http::stream_call(
            self.client.clone(),
            self.endpoint.clone(),
            request_body(&self.model, &request),
            self.settings.clone(),
            ChatDecoder::new(self.provider),
        )
    }
}

/// The Chat Completions request for one model call.
pub fn request_body(model: &str, request: &ModelRequest<'_>) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    messages.extend(request.messages.iter().map(|message| match message {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let mut out = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty() {
                if content.is_empty() {
                    out["content"] = Value::Null;
                }
                out["tool_calls"] = tool_calls
                    .iter()
                    .map(|call| {
                        json!({
                            "id": call.tool_call_id,
                            "type": "function",
                            "function": {"name": call.tool_name, "arguments": arguments_text(&call.args.value())},
                        })
                    })
                    .collect();
            }
            out
        }
        Message::Tool {
            tool_call_id,
            result,
            ..
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": result.text()}),
    }));
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.input_schema,
                    },
                })
            })
            .collect();
    }
    body
}

/// Arguments as the model sent them: a run keeps text that was not JSON as a JSON string, which
/// goes back verbatim, not re-quoted.
fn arguments_text(args: &Value) -> String {
    match args {
        Value::String(raw) => raw.clone(),
        Value::Null => "{}".into(),
        other => other.to_string(),
    }
}

#[derive(Debug, Deserialize)]
struct ChunkWire {
    #[serde(default)]
    choices: Option<Vec<ChoiceWire>>,
    #[serde(default)]
    usage: Option<UsageWire>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct ChoiceWire {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    delta: Option<DeltaWire>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct DeltaWire {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallWire>>,
}

#[derive(Debug, Deserialize)]
struct ToolCallWire {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionWire>,
}

#[derive(Debug, Deserialize)]
struct FunctionWire {
    #[serde(default)]
    name: Option<String>,
    /// A string on the wire; some local servers send the object itself.
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct UsageWire {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// One tool call being assembled from its deltas.
#[derive(Debug)]
struct OpenCall {
    index: u32,
    id: String,
    /// `None` until a fragment names the tool; its start is announced then.
    name: Option<String>,
    /// Argument text received before the name.
    early_args: String,
}

/// Assembles a Chat Completions stream into model events.
#[derive(Debug)]
pub(crate) struct ChatDecoder {
    provider: &'static str,
    calls: Vec<OpenCall>,
    /// Normalised stop reason, once a chunk gave one.
    finish: Option<String>,
    done: bool,
}

impl ChatDecoder {
    pub fn new(provider: &'static str) -> Self {
        Self {
            provider,
            calls: Vec::new(),
            finish: None,
            done: false,
        }
    }

    fn chunk(&mut self, chunk: ChunkWire) -> Result<Vec<ModelEvent>, ModelError> {
        if let Some(error) = chunk.error {
            return Err(provider_error(self.provider, &error));
        }
        let mut out = Vec::new();
        // Only the first choice is asked for (no `n`); others are ignored.
        for choice in chunk.choices.unwrap_or_default() {
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            let delta = choice.delta.unwrap_or_default();
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                out.push(ModelEvent::TextDelta(text));
            }
            for (position, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
                self.call_delta(call, position, &mut out)?;
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finish = Some(normalise_reason(&reason));
            }
        }
        if let Some(usage) = chunk.usage {
            out.push(ModelEvent::Usage(Usage {
                input_tokens: usage.prompt_tokens.unwrap_or(0),
                output_tokens: usage.completion_tokens.unwrap_or(0),
            }));
        }
        Ok(out)
    }

    fn call_delta(
        &mut self,
        delta: ToolCallWire,
        position: usize,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        // Servers that send whole calls at once (Ollama) may leave out the index.
        let index = delta.index.unwrap_or(position as u32);
        let (name, args) = match delta.function {
            Some(f) => (f.name.filter(|n| !n.is_empty()), f.arguments),
            None => (None, None),
        };
        let args = match args {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(text)) => text,
            Some(other) => other.to_string(),
        };
        let slot = match self.calls.iter().position(|c| c.index == index) {
            Some(slot) => slot,
            None => {
                let id = delta
                    .id
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| format!("call_{}", self.calls.len()));
                self.calls.push(OpenCall {
                    index,
                    id,
                    name: None,
                    early_args: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[slot];
        if call.name.is_none() {
            if let Some(name) = name {
                call.name = Some(name.clone());
                out.push(ModelEvent::ToolCallStart {
                    id: call.id.clone(),
                    name,
                });
                let early = std::mem::take(&mut call.early_args);
                if !early.is_empty() {
                    out.push(ModelEvent::ToolCallArgsDelta {
                        id: call.id.clone(),
                        delta: early,
                    });
                }
            }
        }
        if !args.is_empty() {
            if call.name.is_some() {
                out.push(ModelEvent::ToolCallArgsDelta {
                    id: call.id.clone(),
                    delta: args,
                });
            } else {
                call.early_args.push_str(&args);
            }
        }
        Ok(())
    }

    /// Closes every call and reports the stop reason.
    fn close(&mut self) -> Result<Vec<ModelEvent>, ModelError> {
        let mut out = Vec::new();
        for call in self.calls.drain(..) {
            if call.name.is_none() {
                return Err(ModelError::Stream {
                    provider: self.provider,
                    message: format!("tool call {} never named its tool", call.id),
                });
            }
            out.push(ModelEvent::ToolCallEnd { id: call.id });
        }
        let reason = match self.finish.take() {
            Some(reason) => reason,
            None if out.is_empty() => "stop".into(),
            None => "tool-calls".into(),
        };
        out.push(ModelEvent::Finish { reason });
        Ok(out)
    }
}

impl WireDecoder for ChatDecoder {
    fn event(&mut self, event: &Event) -> Result<Vec<ModelEvent>, ModelError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.done = true;
            return self.close();
        }
        let chunk: ChunkWire = http::parse_json(self.provider, data)?;
        self.chunk(chunk)
    }

    fn end(&mut self) -> Result<Vec<ModelEvent>, ModelError> {
        if self.done {
            return Ok(Vec::new());
        }
        // Some servers close without `[DONE]`; a stop reason says the answer was complete.
        if self.finish.is_some() {
            self.done = true;
            return self.close();
        }
        Err(ModelError::Stream {
            provider: self.provider,
            message:
                "the stream ended before the answer was complete (no finish_reason, no [DONE])"
                    .into(),
        })
    }

    fn finished(&self) -> bool {
        self.done
    }
}

fn normalise_reason(reason: &str) -> String {
    match reason {
        "tool_calls" | "function_call" => "tool-calls".into(),
        "content_filter" => "content-filter".into(),
        other => other.replace('_', "-"),
    }
}

fn provider_error(provider: &'static str, error: &Value) -> ModelError {
    let text = |key: &str| error.get(key).and_then(Value::as_str).map(str::to_owned);
    ModelError::Provider {
        provider,
        kind: text("type")
            .or_else(|| error.get("code").map(|c| c.to_string()))
            .unwrap_or_else(|| "error".into()),
        message: text("message")
            .or_else(|| error.as_str().map(str::to_owned))
            .unwrap_or_else(|| error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::http::testing::{
        all_fixtures, fixture as recorded, joined, run_split, same_at_every_split,
    };

    fn fixture(name: &str) -> String {
        recorded("openai", name)
    }

    fn decode_all(name: &str) -> Vec<Result<ModelEvent, String>> {
        same_at_every_split(&fixture(name), || ChatDecoder::new("openai"))
    }

    fn start(id: &str, name: &str) -> Result<ModelEvent, String> {
        Ok(ModelEvent::ToolCallStart {
            id: id.into(),
            name: name.into(),
        })
    }

    fn end(id: &str) -> Result<ModelEvent, String> {
        Ok(ModelEvent::ToolCallEnd { id: id.into() })
    }

    fn finish(reason: &str) -> Result<ModelEvent, String> {
        Ok(ModelEvent::Finish {
            reason: reason.into(),
        })
    }

    fn text_of(events: &[Result<ModelEvent, String>]) -> String {
        joined(events, None)
    }

    fn args_of(events: &[Result<ModelEvent, String>], id: &str) -> String {
        joined(events, Some(id))
    }

    #[test]
    fn plain_text_with_usage_and_multibyte_characters() {
        let events = decode_all("text");
        assert_eq!(text_of(&events), "Hello there — I’ll plan first.");
        assert!(events.contains(&Ok(ModelEvent::Usage(Usage {
            input_tokens: 120,
            output_tokens: 9
        }))));
        assert_eq!(events.last(), Some(&finish("stop")));
    }

    #[test]
    fn one_tool_call_assembled_from_fragments() {
        let events = decode_all("tool_call");
        assert_eq!(events[0], start("call_read1", "read_file"));
        assert_eq!(args_of(&events, "call_read1"), r#"{"path":"src/lib.rs"}"#);
        let tail: Vec<_> = events.iter().rev().take(2).rev().cloned().collect();
        assert_eq!(tail, vec![end("call_read1"), finish("tool-calls")]);
    }

    #[test]
    fn parallel_tool_calls_keep_their_own_arguments() {
        let events = decode_all("parallel");
        assert_eq!(args_of(&events, "call_a"), r#"{"path":"src/lib.rs"}"#);
        assert_eq!(args_of(&events, "call_b"), r#"{"path":"."}"#);
        let ends: Vec<_> = events
            .iter()
            .filter(|e| matches!(e, Ok(ModelEvent::ToolCallEnd { .. })))
            .cloned()
            .collect();
        assert_eq!(
            ends,
            vec![end("call_a"), end("call_b")],
            "ends in index order"
        );
    }

    #[test]
    fn malformed_json_names_the_provider_and_the_data() {
        let events = decode_all("malformed");
        let last = events.last().unwrap().clone().unwrap_err();
        assert!(
            last.starts_with("openai: malformed event data") && last.contains(r#"{"choices":[{"#),
            "{last}"
        );
        assert_eq!(
            text_of(&events),
            "Let me ",
            "text before the bad chunk is kept"
        );
    }

    #[test]
    fn error_object_mid_stream_ends_the_answer() {
        let events = decode_all("mid_error");
        let last = events.last().unwrap().clone().unwrap_err();
        assert_eq!(
            last,
            "openai reported an error mid-answer (server_error): The server had an error while processing your request. Sorry about that!"
        );
    }

    #[test]
    fn ollama_whole_calls_without_usage_request_fields() {
        let events = decode_all("ollama_submit");
        assert_eq!(events[0], start("call_w", "write_file"));
        assert!(events.contains(&start("call_s", "submit_plan")));
        assert_eq!(
            args_of(&events, "call_s"),
            r#"{"path":".plandesk/plans/greeting.md"}"#
        );
    }

    #[test]
    fn a_stream_cut_before_the_end_is_an_error_but_a_missing_done_is_not() {
        let whole = fixture("text");
        let without_done = whole.replace("data: [DONE]\n\n", "");
        let events = run_split(without_done.as_bytes(), &[], ChatDecoder::new("openai"));
        assert_eq!(
            events.last(),
            Some(&finish("stop")),
            "finish_reason suffices"
        );
        let cut = &whole[..whole.find("\"finish_reason\":\"stop\"").unwrap()];
        let cut = &cut[..cut.rfind("\n\n").unwrap() + 2];
        let events = run_split(cut.as_bytes(), &[], ChatDecoder::new("openai"));
        let last = events.last().unwrap().clone().unwrap_err();
        assert!(
            last.contains("ended before the answer was complete"),
            "{last}"
        );
    }

    #[test]
    fn arguments_sent_before_the_name_are_not_lost() {
        let wire = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"arguments\":\"{\\\"a\\\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"t\",\"arguments\":\":1}\"}}]},\"finish_reason\":\"\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let events = run_split(wire.as_bytes(), &[], ChatDecoder::new("openai"));
        assert_eq!(events[0], start("c1", "t"));
        assert_eq!(args_of(&events, "c1"), r#"{"a":1}"#);
        assert_eq!(
            events.last(),
            Some(&finish("tool-calls")),
            "empty finish_reason is no reason"
        );
    }

    #[test]
    fn every_recorded_stream_decodes_the_same_at_every_split() {
        for (name, wire) in all_fixtures("openai") {
            let events = same_at_every_split(&wire, || ChatDecoder::new("openai"));
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
