//! The conversation a run carries: what the model is sent on every call.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::chunk::ToolCall;

/// One message of a run's conversation. Tool results are kept whole: the model sees the exact
/// object the tool returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase", try_from = "Wire")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        content: String,
        #[serde(rename = "toolCalls", default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<CalledTool>,
    },
    Tool {
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        #[serde(rename = "toolName")]
        tool_name: String,
        result: Json,
    },
}

impl Message {
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
        }
    }

    /// The message that gives the model a tool's result.
    pub fn tool(tool_call_id: &str, tool_name: &str, result: &Value) -> Self {
        Message::Tool {
            tool_call_id: tool_call_id.to_owned(),
            tool_name: tool_name.to_owned(),
            result: Json::new(result),
        }
    }
}

/// A message as it is read: one flat object, so that its JSON parts are kept as text straight
/// from the input (serde reads an internally tagged enum through a buffer of parsed values).
#[derive(Deserialize)]
struct Wire {
    role: Role,
    content: Option<String>,
    #[serde(rename = "toolCalls", default)]
    tool_calls: Vec<CalledTool>,
    #[serde(rename = "toolCallId")]
    tool_call_id: Option<String>,
    #[serde(rename = "toolName")]
    tool_name: Option<String>,
    result: Option<Json>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl TryFrom<Wire> for Message {
    type Error = String;

    fn try_from(wire: Wire) -> Result<Self, String> {
        let missing = |field: &str| format!("missing field `{field}`");
        Ok(match wire.role {
            Role::System => Message::System {
                content: wire.content.ok_or_else(|| missing("content"))?,
            },
            Role::User => Message::User {
                content: wire.content.ok_or_else(|| missing("content"))?,
            },
            Role::Assistant => Message::Assistant {
                content: wire.content.ok_or_else(|| missing("content"))?,
                tool_calls: wire.tool_calls,
            },
            Role::Tool => Message::Tool {
                tool_call_id: wire.tool_call_id.ok_or_else(|| missing("toolCallId"))?,
                tool_name: wire.tool_name.ok_or_else(|| missing("toolName"))?,
                result: wire.result.ok_or_else(|| missing("result"))?,
            },
        })
    }
}

/// A tool call as the conversation keeps it: a `ToolCall` whose arguments stay JSON text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CalledTool {
    pub tool_call_id: String,
    pub tool_name: String,
    pub args: Json,
}

impl From<&ToolCall> for CalledTool {
    fn from(call: &ToolCall) -> Self {
        CalledTool {
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            args: Json::new(&call.args),
        }
    }
}

/// A JSON value kept as its compact text. A long run's conversation holds thousands of tool
/// arguments and results, and each parsed object costs several times its text (a map node of
/// ~600 bytes however few its keys); the text is what the store and the providers need, and it
/// is parsed where a value is read. Serialized, it is the value itself, not a string.
#[derive(Clone)]
pub struct Json(Box<RawValue>);

impl Json {
    pub fn new(value: &Value) -> Self {
        // A Value always serializes (its map keys are strings).
        Json(serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned()))
    }

    /// The compact JSON text.
    pub fn text(&self) -> &str {
        self.0.get()
    }

    /// The value, parsed.
    pub fn value(&self) -> Value {
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }
}

impl PartialEq for Json {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text() || self.value() == other.value()
    }
}

impl std::fmt::Debug for Json {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text())
    }
}

impl Serialize for Json {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Json {
    /// The text as it is in the input, checked but not parsed into a value. Only from JSON text
    /// (serde_json's reader), and not inside an internally tagged enum: `Message` is read through
    /// `Wire` for that reason.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(Json)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_message_reads_and_writes_as_it_did_with_parsed_values() {
        let stored = r#"{"role":"assistant","content":"","toolCalls":[{"toolCallId":"c1","toolName":"read_file","args":{"path":"a.md"}}]}"#;
        let message: Message = serde_json::from_str(stored).unwrap();
        assert_eq!(serde_json::to_string(&message).unwrap(), stored);
        let tool = Message::tool("c1", "read_file", &json!({"content": "x", "lines": 1}));
        let text = serde_json::to_string(&tool).unwrap();
        assert_eq!(
            text,
            r#"{"role":"tool","toolCallId":"c1","toolName":"read_file","result":{"content":"x","lines":1}}"#
        );
        let back: Message = serde_json::from_str(&text).unwrap();
        assert_eq!(back, tool);
    }

    #[test]
    fn a_message_missing_what_its_role_needs_is_refused_by_name() {
        for (text, needs) in [
            (r#"{"role":"tool","toolName":"t","result":1}"#, "toolCallId"),
            (
                r#"{"role":"tool","toolCallId":"c","toolName":"t"}"#,
                "result",
            ),
            (r#"{"role":"user"}"#, "content"),
        ] {
            let err = serde_json::from_str::<Message>(text)
                .unwrap_err()
                .to_string();
            assert!(err.contains(needs), "{text}: {err}");
        }
        let err = serde_json::from_str::<Message>(r#"{"role":"robot","content":""}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("robot"), "{err}");
    }

    #[test]
    fn json_keeps_any_value_and_compares_by_value() {
        for value in [
            json!(null),
            json!("a \"quoted\" \u{1b} text"),
            json!([1, {"b": [true]}]),
            json!(1.5),
        ] {
            let kept = Json::new(&value);
            assert_eq!(kept.value(), value);
            let spaced: Json =
                serde_json::from_str(&serde_json::to_string_pretty(&value).unwrap()).unwrap();
            assert_eq!(spaced, kept);
        }
    }
}
