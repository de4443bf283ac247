//! A small JSON-Schema checker for the schemas Plandesk's tools declare (objects of scalars, enums,
//! required keys, no extra keys), with Zod-like messages because that is what Mastra's models see.

use serde_json::{json, Value};

use crate::text::head;

/// One problem found in a value: where (`path`, `root` for the value itself) and what.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub path: String,
    pub message: String,
}

/// Checks `value` against `schema`; an empty list means it conforms.
pub fn validate(schema: &Value, value: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    check(schema, value, "", &mut out);
    out
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(expected: &str, value: &Value) -> bool {
    match expected {
        "number" => value.is_number(),
        other => type_name(value) == other,
    }
}

fn check(schema: &Value, value: &Value, path: &str, out: &mut Vec<Violation>) {
    let at = if path.is_empty() {
        "root".to_owned()
    } else {
        path.to_owned()
    };
    if let Some(expected) = schema.get("type").and_then(Value::as_str) {
        if !type_matches(expected, value) {
            out.push(Violation {
                path: at,
                message: format!("Expected {expected}, received {}", type_name(value)),
            });
            return;
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            let options: Vec<String> = allowed.iter().map(quote).collect();
            out.push(Violation {
                path: at.clone(),
                message: format!(
                    "Invalid enum value. Expected {}, received {}",
                    options.join(" | "),
                    quote(value)
                ),
            });
        }
    }
    let (Some(object), Some(properties)) = (
        value.as_object(),
        schema.get("properties").and_then(Value::as_object),
    ) else {
        return;
    };
    let join = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    for key in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(key) = key.as_str() {
            if !object.contains_key(key) {
                out.push(Violation {
                    path: join(key),
                    message: "Required".to_owned(),
                });
            }
        }
    }
    for (key, item) in object {
        match properties.get(key) {
            Some(sub) => check(sub, item, &join(key), out),
            None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                out.push(Violation {
                    path: join(key),
                    message: "Unrecognized key".to_owned(),
                });
            }
            None => {}
        }
    }
}

/// A received value as a violation's message quotes it: at most 200 bytes of it.
fn quote(value: &Value) -> String {
    let text = match value {
        Value::String(s) => format!("'{s}'"),
        other => other.to_string(),
    };
    crate::text::cut_to(text, 200, "…")
}

/// The result object a model sees when a tool's input (or resume data) does not fit its schema:
/// Mastra's `{error: true, message, validationErrors}` shape.
pub fn validation_error(
    tool: &str,
    what: &str,
    provided: &Value,
    violations: &[Violation],
) -> Value {
    let shown = &violations[..violations.len().min(MAX_VIOLATIONS_SHOWN)];
    let mut lines: Vec<String> = shown
        .iter()
        .map(|v| format!("- {}: {}", head(&v.path, 200), v.message))
        .collect();
    if violations.len() > shown.len() {
        lines.push(format!("- and {} more", violations.len() - shown.len()));
    }
    let pretty = echo(provided);
    let (label, provided_label) = match what {
        "resume" => ("Tool resume data validation failed", "Provided resume data"),
        _ => ("Tool validation failed", "Provided arguments"),
    };
    json!({
        "error": true,
        "message": format!(
            "{label} for {tool}. Please fix the following errors and try again:\n{}\n\n{provided_label}: {pretty}",
            lines.join("\n")
        ),
        "validationErrors": shown
            .iter()
            .map(|v| json!({"path": head(&v.path, 200), "message": v.message}))
            .collect::<Vec<_>>(),
    })
}

/// The most violations a validation error lists.
const MAX_VIOLATIONS_SHOWN: usize = 20;
/// The most of the provided value a validation error echoes (it came from a model or a client:
/// a few MiB of nested arrays, pretty-printed, would be hundreds of MiB).
const MAX_ECHO: usize = 4096;

/// The provided value as the error shows it: pretty-printed when that is small (else compact),
/// and past [`MAX_ECHO`] its start, compact, saying how much was left out.
fn echo(provided: &Value) -> String {
    let compact = provided.to_string();
    if compact.len() <= MAX_ECHO {
        let pretty = serde_json::to_string_pretty(provided).unwrap_or_default();
        return if pretty.len() <= 4 * MAX_ECHO {
            pretty
        } else {
            compact
        };
    }
    let left_out = format!("… ({} bytes in all; the rest is not shown)", compact.len());
    crate::text::cut_to(compact, MAX_ECHO, &left_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["approved", "rejected"]},
                "feedback": {"type": "string"}
            },
            "required": ["action"],
            "additionalProperties": false
        })
    }

    #[test]
    fn accepts_conforming_values() {
        assert!(validate(&plan_schema(), &json!({"action": "approved"})).is_empty());
        assert!(validate(
            &plan_schema(),
            &json!({"action": "rejected", "feedback": "x"})
        )
        .is_empty());
    }

    #[test]
    fn names_each_violation_and_where() {
        let found = validate(
            &plan_schema(),
            &json!({"action": "maybe", "extra": 1, "feedback": 2}),
        );
        let text: Vec<String> = found
            .iter()
            .map(|v| format!("{}: {}", v.path, v.message))
            .collect();
        assert!(
            text.contains(
                &"action: Invalid enum value. Expected 'approved' | 'rejected', received 'maybe'"
                    .to_owned()
            ),
            "{text:?}"
        );
        assert!(
            text.contains(&"extra: Unrecognized key".to_owned()),
            "{text:?}"
        );
        assert!(
            text.contains(&"feedback: Expected string, received integer".to_owned()),
            "{text:?}"
        );
        assert_eq!(validate(&plan_schema(), &json!({}))[0].message, "Required");
        assert_eq!(validate(&plan_schema(), &json!("approved"))[0].path, "root");
    }

    /// The worst input a client can send in a few MiB: nested deep and wide, with thousands
    /// of unknown keys. What comes back is small, and says what it left out.
    #[test]
    fn a_validation_error_stays_small_whatever_was_sent() {
        let mut deep = json!(vec![0; 200_000]);
        for _ in 0..120 {
            deep = json!([deep]);
        }
        let mut args = serde_json::Map::new();
        args.insert("x".into(), deep);
        for n in 0..5_000 {
            args.insert(format!("{}{n}", "k".repeat(300)), json!(n));
        }
        args.insert("action".into(), json!("m".repeat(1 << 20)));
        let args = Value::Object(args);
        let found = validate(&plan_schema(), &args);
        assert_eq!(found.len(), 5_002);
        assert!(
            found.iter().all(|v| v.message.len() < 400),
            "an enum's quote is cut"
        );
        let error = validation_error("plan", "input", &args, &found);
        let size = error.to_string().len();
        assert!(size < 3 * MAX_ECHO + 20 * 300, "{size} bytes");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains("- and 4982 more"), "{message}");
        assert!(message.contains("bytes in all; the rest is not shown"));
        assert_eq!(error["validationErrors"].as_array().unwrap().len(), 20);

        let small = validation_error("plan", "input", &json!({"a": [1]}), &found[..1]);
        assert!(small["message"]
            .as_str()
            .unwrap()
            .contains("{\n  \"a\": [\n    1"));
    }
}
