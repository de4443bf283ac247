//! A small JSON-Schema checker for the schemas Plandesk's tools declare (objects of scalars, enums,
//! required keys, no extra keys), with Zod-like messages because that is what Mastra's models see.

use serde_json::{json, Value};

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

fn quote(value: &Value) -> String {
    match value {
        Value::String(s) => format!("'{s}'"),
        other => other.to_string(),
    }
}

/// The result object a model sees when a tool's input (or resume data) does not fit its schema:
/// Mastra's `{error: true, message, validationErrors}` shape.
pub fn validation_error(
    tool: &str,
    what: &str,
    provided: &Value,
    violations: &[Violation],
) -> Value {
    let lines: Vec<String> = violations
        .iter()
        .map(|v| format!("- {}: {}", v.path, v.message))
        .collect();
    let pretty = serde_json::to_string_pretty(provided).unwrap_or_else(|_| provided.to_string());
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
        "validationErrors": violations
            .iter()
            .map(|v| json!({"path": v.path, "message": v.message}))
            .collect::<Vec<_>>(),
    })
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
}
