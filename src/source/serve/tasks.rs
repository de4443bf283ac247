//! The tasks extension over `/mcp` (see `mcp::tasks`): its requests answered here, with the
//! client's token and session as the tasks' owner, and rmcp's `initialize` and `tools/list`
//! answers completed with what rmcp's types cannot say. Only a request that names
//! 2025-11-25 in its `MCP-Protocol-Version` header gets any of this; every other client
//! sees rmcp alone.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use http::header::{CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE};
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::calls::Registered;
use super::{json_response, Body, SSE_KEEP_ALIVE};
use crate::source::mcp::{
    complete_initialize, complete_tools, declares_tasks, TaskMethod, TaskReply,
};

/// The header that names the protocol version of a request after `initialize`.
pub(super) const PROTOCOL_HEADER: &str = "mcp-protocol-version";
/// How long rmcp's `initialize` or `tools/list` answer may take to be read whole.
const COMPLETE_WAIT: Duration = Duration::from_secs(10);

/// The answer to a request of the tasks extension. `tasks/result`, which waits for a decision,
/// is an event stream with keep-alives that ends early when the request is cancelled (see
/// `calls`); the others are answered at once, as JSON.
pub(super) async fn answer(reply: TaskReply, registered: Registered) -> Response<Body> {
    if reply.method != TaskMethod::Result {
        let response = reply.response.await;
        drop(registered);
        return json_response(StatusCode::OK, &response);
    }
    let (tx, rx) = mpsc::channel::<Bytes>(4);
    let mut waiting = reply.response;
    tokio::spawn(async move {
        let start = tokio::time::Instant::now() + SSE_KEEP_ALIVE;
        let mut ticks = tokio::time::interval_at(start, SSE_KEEP_ALIVE);
        loop {
            tokio::select! {
                response = &mut waiting => {
                    let _ = tx.send(Bytes::from(format!("data: {response}\n\n"))).await;
                    return;
                }
                _ = ticks.tick() => {
                    if tx.send(Bytes::from_static(b": keep-alive\n\n")).await.is_err() {
                        return;
                    }
                }
                // The client went away or cancelled the request: it waits no more.
                () = tx.closed() => return,
            }
        }
    });
    let frames = tokio_stream::wrappers::ReceiverStream::new(rx)
        .map(|bytes| Ok::<_, Infallible>(Frame::data(bytes)));
    let mut response = Response::new(registered.guard(BodyExt::boxed(StreamBody::new(frames))));
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(CACHE_CONTROL, http::HeaderValue::from_static("no-cache"));
    response
}

/// What rmcp's answer to a request lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Completion {
    /// `initialize` from a client that declares tasks.
    Initialize,
    /// `tools/list` at 2025-11-25.
    Tools,
}

/// What rmcp's answer to `message` will lack, if anything.
pub(super) fn completion(message: &Value, tasks_version: bool) -> Option<Completion> {
    match message.get("method").and_then(Value::as_str)? {
        "initialize" if declares_tasks(message) => Some(Completion::Initialize),
        "tools/list" if tasks_version => Some(Completion::Tools),
        _ => None,
    }
}

/// rmcp's `response` (one JSON-RPC answer, as JSON or in an event stream) completed.
pub(super) async fn complete(response: Response<Body>, completion: Completion) -> Response<Body> {
    let (mut parts, body) = response.into_parts();
    let Ok(Ok(collected)) = tokio::time::timeout(COMPLETE_WAIT, body.collect()).await else {
        return json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"error": "mcp", "message": "the MCP answer did not come in time"}),
        );
    };
    let text = String::from_utf8_lossy(&collected.to_bytes()).into_owned();
    let complete_one = |message: &mut Value| {
        if message.get("method").is_some() {
            return;
        }
        if let Some(result) = message.get_mut("result") {
            match completion {
                Completion::Initialize => complete_initialize(result, true),
                Completion::Tools => complete_tools(result),
            }
        }
    };
    let json = parts
        .headers
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let text = if json {
        match serde_json::from_str::<Value>(&text) {
            Ok(mut message) => {
                complete_one(&mut message);
                message.to_string()
            }
            Err(_) => text,
        }
    } else {
        text.split('\n')
            .map(|line| {
                let data = line.strip_prefix("data:").map(str::trim_start);
                match data.and_then(|data| serde_json::from_str::<Value>(data).ok()) {
                    Some(mut message) => {
                        complete_one(&mut message);
                        format!("data: {message}")
                    }
                    None => line.to_owned(),
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    parts.headers.remove(CONTENT_LENGTH);
    Response::from_parts(parts, Full::new(Bytes::from(text)).boxed())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::mcp::TASKS_VERSION;

    #[tokio::test]
    async fn an_answer_in_an_event_stream_is_completed_in_place() {
        let event =
            json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "submit_plan"}]}});
        let body = format!("id: 0\nretry: 3000\ndata:\n\ndata: {event}\n\n: keep-alive\n\n");
        let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
        response.headers_mut().insert(
            CONTENT_TYPE,
            http::HeaderValue::from_static("text/event-stream"),
        );
        let completed = complete(response, Completion::Tools).await;
        let text = String::from_utf8(
            completed
                .into_body()
                .collect()
                .await
                .unwrap()
                .to_bytes()
                .to_vec(),
        )
        .unwrap();
        assert!(
            text.starts_with("id: 0\nretry: 3000\ndata:\n\ndata: {"),
            "{text}"
        );
        assert!(text.ends_with("}\n\n: keep-alive\n\n"), "{text}");
        let data = text.lines().nth(4).unwrap().strip_prefix("data: ").unwrap();
        let message: Value = serde_json::from_str(data).unwrap();
        assert_eq!(
            message["result"]["tools"][0]["execution"]["taskSupport"],
            "optional"
        );
    }

    #[test]
    fn only_a_tasks_client_gets_completions() {
        let init = |capabilities: Value| {
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": TASKS_VERSION, "capabilities": capabilities}})
        };
        assert_eq!(
            completion(&init(json!({"tasks": {}})), false),
            Some(Completion::Initialize)
        );
        assert_eq!(completion(&init(json!({})), false), None);
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        assert_eq!(completion(&list, true), Some(Completion::Tools));
        assert_eq!(completion(&list, false), None);
    }
}
