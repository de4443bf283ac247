//! Failed model calls: retries, errors and cuts mid-stream, stalls, and missing or wrong keys.

use std::time::{Duration, Instant};

use crate::http_server::{Part, Reply};

use super::*;

provider_tests!(
    rate_limited_then_success,
    error_mid_stream_is_not_retried,
    cut_mid_stream,
    malformed_delta,
    stalled_stream_times_out,
    wrong_key,
);

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
