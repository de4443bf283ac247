//! Opening a provider call: the POST retried only before any answer byte (429, 5xx), how long
//! a server asks to wait (`Retry-After` of any size or shape), and the provider's own error
//! message, read bounded in time and size.

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::StatusCode;
use serde_json::Value;

use super::*;

/// Sends the request until it is answered with success, a status that is not worth retrying,
/// or the attempts run out.
pub(super) async fn open(
    client: &reqwest::Client,
    endpoint: &Endpoint,
    body: &Value,
    settings: &HttpSettings,
) -> Result<reqwest::Response, ModelError> {
    let provider = endpoint.provider;
    let mut attempt = 1;
    let mut backoff = settings.first_backoff;
    loop {
        let request = client
            .post(&endpoint.url)
            .headers(endpoint.headers.clone())
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body.to_string());
        let response = match tokio::time::timeout(settings.idle_timeout, request.send()).await {
            Err(_) => {
                return Err(ModelError::Timeout {
                    provider,
                    message: format!(
                        "{} sent no response within {} s",
                        endpoint.url,
                        settings.idle_timeout.as_secs_f64()
                    ),
                })
            }
            Ok(Err(err)) => return Err(send_error(endpoint, &err)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retryable = status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error();
        let wait = retry_after(response.headers(), SystemTime::now()).unwrap_or(backoff);
        let message = error_message(endpoint, response, settings.idle_timeout).await;
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(ModelError::Auth {
                provider,
                status: status.as_u16(),
                hint: endpoint.key_hint,
                message,
            });
        }
        if !retryable || attempt >= settings.max_attempts || wait > settings.longest_wait {
            let tried = if retryable && wait > settings.longest_wait {
                format!(
                    "; it asks to retry after {}, longer than Plandesk waits",
                    describe_wait(wait)
                )
            } else if retryable {
                format!(" after {attempt} attempts")
            } else {
                String::new()
            };
            return Err(ModelError::Status {
                provider,
                status: status.as_u16(),
                message: format!("{message}{tried}"),
            });
        }
        tokio::time::sleep(wait).await;
        attempt += 1;
        backoff = backoff.saturating_mul(2);
    }
}

pub(super) fn send_error(endpoint: &Endpoint, err: &reqwest::Error) -> ModelError {
    let detail = endpoint.scrub(&error_chain(err));
    if err.is_timeout() {
        ModelError::Timeout {
            provider: endpoint.provider,
            message: format!("connecting to {} timed out: {detail}", endpoint.url),
        }
    } else {
        ModelError::Connect {
            provider: endpoint.provider,
            url: endpoint.url.clone(),
            message: detail,
        }
    }
}

/// reqwest's top-level message is generic ("error sending request"); the cause says why.
pub(super) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// How long a server asks to be left alone: `Retry-After` in seconds or as an HTTP date
/// (relative to `now`), or OpenAI's `retry-after-ms`. Any number is read without overflow: one
/// too large for a `Duration` is `Duration::MAX` (longer than anyone waits); a negative, NaN or
/// unreadable value is no answer (the exponential backoff applies).
pub(super) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| Some(headers.get(name)?.to_str().ok()?.trim().to_owned());
    let seconds = |value: f64| {
        if value.is_nan() || value < 0.0 {
            None
        } else {
            Some(Duration::try_from_secs_f64(value).unwrap_or(Duration::MAX))
        }
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if let Some(wait) = seconds(ms / 1000.0) {
            return Some(wait);
        }
    }
    let value = text(RETRY_AFTER.as_str())?;
    match value.parse::<f64>() {
        Ok(secs) => seconds(secs),
        Err(_) => {
            let when = httpdate::parse_http_date(&value).ok()?;
            Some(when.duration_since(now).unwrap_or(Duration::ZERO))
        }
    }
}

pub(super) fn describe_wait(wait: Duration) -> String {
    if wait == Duration::MAX {
        "an unrepresentably long time".into()
    } else {
        format!("{} s", wait.as_secs())
    }
}

/// The provider's own error message from an error response (`{"error": {"message"}}` in both
/// wire formats), else the start of the body, else the status text. The body is read for at
/// most `patience` and [`MAX_ERROR_BODY_BYTES`]: a server that never finishes it cannot hang
/// the call, nor one that sends without end fill the memory.
pub(super) async fn error_message(
    endpoint: &Endpoint,
    mut response: reqwest::Response,
    patience: Duration,
) -> String {
    let status = response.status();
    let mut bytes: Vec<u8> = Vec::new();
    let deadline = tokio::time::Instant::now() + patience;
    let mut incomplete = false;
    while bytes.len() < MAX_ERROR_BODY_BYTES {
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(chunk))) => {
                let room = MAX_ERROR_BODY_BYTES - bytes.len();
                bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Ok(Ok(None)) => break,
            Ok(Err(_)) | Err(_) => {
                incomplete = true;
                break;
            }
        }
    }
    let body = String::from_utf8_lossy(&bytes);
    let from_json = serde_json::from_str::<Value>(&body).ok().and_then(|v| {
        let error = v.get("error")?;
        error
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.as_str())
            .map(str::to_owned)
    });
    let reason = status.canonical_reason().unwrap_or("no reason given");
    let message = match from_json {
        Some(message) => message,
        None if body.trim().is_empty() && incomplete => format!(
            "{reason} (the error body did not arrive within {} s)",
            patience.as_secs_f64()
        ),
        None if body.trim().is_empty() => reason.to_owned(),
        None => body.trim().to_owned(),
    };
    endpoint.scrub(&message)
}

pub(super) fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
