//! `plandesk mcp` given two requests with one id while the first is not answered. A client
//! matches an answer to its request by id alone, so either answer could be taken as the
//! other's, an approval among them: neither is run on. Driven line by line over the server's
//! stdin and stdout, since no SDK client sends such a thing.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

use crate::mcp::{assert_undecidable, decide_when_pending, status_if_there, until_titled};
use crate::support::*;

/// One line to the server.
async fn send(stdin: &mut ChildStdin, message: Value) {
    stdin
        .write_all(format!("{message}\n").as_bytes())
        .await
        .unwrap();
    stdin.flush().await.unwrap();
}

/// The next message from the server that answers request `id` (others are skipped; `9.0` is
/// `9`, as JSON-RPC clients read it).
async fn answer(lines: &mut Lines<BufReader<ChildStdout>>, id: i64) -> Value {
    let read = async {
        loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("the server is there");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message.get("method").is_none() && message["id"].as_f64() == Some(id as f64) {
                return message;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .unwrap_or_else(|_| panic!("no answer to request {id}"))
}

fn submit(id: impl Into<Value>) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": "tools/call",
        "params": {"name": "submit_plan", "arguments": {"path": PLAN}}})
}

/// An error that says the request was not answered for its id: no result, nothing approved.
fn assert_refused(answer: &Value, says: &str) {
    assert!(answer.get("result").is_none(), "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains(says), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_requests_with_one_id_are_both_refused_and_nothing_is_approved() {
    let fx = Fixture::new(json!([]));
    let std_cmd = fx.command(&["mcp", "--workspace", fx.workspace.to_str().unwrap()]);
    let mut server = tokio::process::Command::from(std_cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "reuses-ids", "version": "1"}}}),
    )
    .await;
    assert!(answer(&mut lines, 0).await.get("result").is_some());
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;

    fx.write(PLAN, b"# First\n\nA plan\n");
    send(&mut stdin, submit(7)).await;
    let run = until_pending(&fx).await["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    fx.write(PLAN, b"# Second\n\nAnother plan\n");
    send(&mut stdin, submit(7)).await;
    assert_refused(&answer(&mut lines, 7).await, "was stopped");
    assert_refused(&answer(&mut lines, 7).await, "was not run");
    until_titled(&fx, "First", "abandoned", Duration::from_secs(5)).await;
    assert_undecidable(&fx, &run, "First");
    assert_eq!(
        status_if_there(&fx, "Second"),
        None,
        "the second was never put to a person"
    );

    // The id is not taken again; nor is one written another way (rmcp reads 9.0 as 9), nor
    // one whose request was cancelled (rmcp may still be answering it).
    send(&mut stdin, submit(7)).await;
    assert_refused(&answer(&mut lines, 7).await, "was not run");
    fx.write(PLAN, b"# Third\n\nA plan\n");
    send(&mut stdin, submit(9)).await;
    until_pending(&fx).await;
    send(&mut stdin, submit(9.0)).await;
    assert_refused(&answer(&mut lines, 9).await, "was stopped");
    assert_refused(&answer(&mut lines, 9).await, "was not run");
    until_titled(&fx, "Third", "abandoned", Duration::from_secs(5)).await;
    fx.write(PLAN, b"# Fourth\n\nA plan\n");
    send(&mut stdin, submit(11)).await;
    until_pending(&fx).await;
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 11, "reason": "the user pressed Esc"}}),
    )
    .await;
    until_titled(&fx, "Fourth", "abandoned", Duration::from_secs(5)).await;
    send(&mut stdin, submit(11)).await;
    assert_refused(&answer(&mut lines, 11).await, "was not run");
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    send(&mut stdin, submit(8)).await;
    decide_when_pending(&fx, &["approve"]).await;
    let approved = answer(&mut lines, 8).await;
    let text = approved["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Plan approved"), "{approved}");
}
