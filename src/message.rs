//! The conversation a run carries: what the model is sent on every call.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::chunk::ToolCall;

/// One message of a run's conversation. Tool results are kept whole: the model sees the exact
/// object the tool returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
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
    /// Read as a value, then kept as text: a raw read cannot work inside an internally tagged
    /// enum (serde buffers its fields first), which `Message` is.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(|value| Json::new(&value))
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
