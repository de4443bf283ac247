//! `submit_plan` called over `/mcp` and held open until a person decides: rmcp's client gets
//! the contract and is recorded as its token; a client that cancels, times out, drops its
//! stream or closes its session leaves its plan abandoned at once; a waiting call reports
//! progress.

use std::time::Duration;

use rmcp::service::PeerRequestOptions;
use serde_json::{json, Value};

use super::legacy::{sse_messages, until_pending_count, LegacyClient, LEGACY_VERSION};
use super::*;
use crate::mcp::{
    assert_tool_metadata, assert_undecidable, report, status_of, submit, submit_cancellable,
    submit_while_progress_resets_the_timeout, until_titled, Heard,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_over_http_gets_the_contract_and_is_recorded_as_its_token() {
    let fx = Fixture::new(json!([]));
    let token = create_token(&fx, "build-box");
    let server = Server::start(&fx, &[]);
    let client = mcp_client(&server.base, &token).await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0].name, "submit_plan");
    assert_eq!(tools[1].name, "report_progress");
    assert_eq!(
        tools[0].input_schema["required"],
        json!(["path", "plan"]),
        "the plan travels in the call"
    );
    assert_tool_metadata(&tools[0]);

    // Checked before a person sees it.
    let (escape, is_error) = submit(&client, json!({"path": "../x.md", "plan": "# P"})).await;
    assert!(is_error);
    assert!(
        escape["content"]
            .as_str()
            .unwrap()
            .contains("not a plain relative path"),
        "{escape}"
    );
    let (absolute, _) = submit(&client, json!({"path": "/etc/x.md", "plan": "# P"})).await;
    assert!(absolute["content"]
        .as_str()
        .unwrap()
        .contains("not a plain relative path"));
    let (not_md, _) = submit(&client, json!({"path": "plan.txt", "plan": "# P"})).await;
    assert!(not_md["content"]
        .as_str()
        .unwrap()
        .contains("does not end in `.md`"));
    let (empty, _) = submit(&client, json!({"path": "p.md", "plan": " \n"})).await;
    assert!(empty["content"]
        .as_str()
        .unwrap()
        .contains("The plan is empty"));
    let big = "a".repeat(1024 * 1024 + 1);
    let (large, _) = submit(&client, json!({"path": "p.md", "plan": big})).await;
    assert!(
        large["content"]
            .as_str()
            .unwrap()
            .contains("at most 1048576 bytes"),
        "{large}"
    );
    let (invalid, is_error) = submit(&client, json!({"path": "p.md"})).await;
    assert!(invalid.get("validationErrors").is_some(), "{invalid}");
    assert!(is_error, "a call with the wrong arguments failed");
    assert_eq!(
        fx.listing(&["history"]),
        json!([]),
        "none of those was recorded"
    );

    let path = "plans/cache.md";
    let ((rejected, is_error), item) = tokio::join!(
        submit(&client, json!({"path": path, "plan": PLAN_TEXT})),
        decide_when_pending(&fx, &["reject", "--feedback", "Measure first"])
    );
    assert!(!is_error);
    assert_eq!(item["source"]["kind"], "mcp");
    assert_eq!(
        rejected,
        json!({"toolId": "submit_plan", "isError": false,
               "content": "Plan was not approved. The user wants revisions.\n\nUser feedback: Measure first\n\nPlease revise the plan based on the feedback and submit again with submit_plan.",
               "submittedPlan": {"title": "Add a cache", "path": path,
                                 "plan": "Use an LRU cache in front of the store.\n\n1. Measure\n2. Cache",
                                 "feedback": "Measure first"}})
    );
    let ((approved, _), _) = tokio::join!(
        submit(
            &client,
            json!({"path": path, "plan": "# Add a cache\n\nMeasure, then cache.\n"})
        ),
        decide_when_pending(&fx, &["approve"])
    );
    assert_eq!(approved["content"], APPROVED);
    assert_eq!(approved["submittedPlan"]["plan"], "Measure, then cache.");
    let history = fx.listing(&["history"]);
    assert_eq!(
        history[1]["revisionNo"], 2,
        "one thread per path: {history}"
    );
    assert_eq!(history[1]["status"], "approved");

    let entries = audit_entries(&fx);
    let submitted: Vec<&Value> = entries
        .iter()
        .filter(|e| e["kind"] == "submitted")
        .collect();
    assert_eq!(submitted.len(), 2);
    for entry in submitted {
        assert_eq!(entry["actor"], "build-box", "the token's name: {entry}");
        assert_eq!(entry["process"], "serve:mcp");
    }
    let answered = entries.iter().find(|e| e["kind"] == "answered").unwrap();
    assert_eq!(answered["actor"], "build-box");

    // A client that goes away leaves its plan abandoned.
    let call = tokio::spawn(async move {
        let _ = submit(&client, json!({"path": path, "plan": "# Third\n\nGo"})).await;
    });
    until_pending(&fx).await;
    call.abort();
    until_status(&fx, 2, "abandoned").await;
    assert!(server.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_clients_cancellation_abandons_its_own_waiting_call_at_once() {
    let fx = Fixture::new(json!([]));
    let token = create_token(&fx, "laptop");
    let server = Server::start(&fx, &[]);
    // Two clients on one token, each numbering its requests from the start: their ids meet.
    let (first, second) = tokio::join!(
        LegacyClient::connect(&server.base, &token),
        LegacyClient::connect(&server.base, &token)
    );
    assert!(
        first.session.is_some() && first.session != second.session,
        "each client gets a session id of its own, so a cancellation names one client's call: \
         {:?} {:?}",
        first.session,
        second.session
    );
    let first_call = first.call(7, "plans/one.md", "# One\n\nFirst plan").await;
    until_pending_count(&fx, 1).await;
    let second_call = second.call(7, "plans/two.md", "# Two\n\nSecond plan").await;
    until_pending_count(&fx, 2).await;
    let first_stream = tokio::spawn(sse_messages(first_call));

    let cancelled = first.cancel(7).await;
    assert_eq!(cancelled.status(), 202, "a notification is accepted");
    let took = until_titled(&fx, "One", "abandoned", Duration::from_secs(5)).await;
    eprintln!("cancelled call abandoned after {took:?}");
    let messages = tokio::time::timeout(Duration::from_secs(5), first_stream)
        .await
        .expect("the cancelled call's event stream ends")
        .unwrap();
    assert!(
        messages.iter().all(|m| m.get("result").is_none()),
        "no answer to a cancelled request: {messages:?}"
    );
    assert_eq!(
        status_of(&fx, "Two"),
        "pending",
        "the other client's call with the same id waits on"
    );
    let pending = fx.listing(&["pending"]);
    assert_eq!(pending.as_array().unwrap().len(), 1, "{pending}");
    assert_eq!(
        pending[0]["revision"]["title"], "Two",
        "a person is asked only about Two"
    );

    // A cancellation of a call that is not the sender's, or of no call, changes nothing.
    let stranger = create_token(&fx, "stranger");
    let other = LegacyClient::connect(&server.base, &stranger).await;
    assert_eq!(other.cancel(7).await.status(), 202);
    assert_eq!(first.cancel(7).await.status(), 202);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(status_of(&fx, "Two"), "pending");

    // A client that closes its session (DELETE) waits for none of its calls any more.
    let closing = LegacyClient::connect(&server.base, &token).await;
    let closing_call = closing
        .call(1, "plans/three.md", "# Three\n\nThird plan")
        .await;
    until_pending_count(&fx, 2).await;
    let mut delete = closing
        .http
        .delete(&closing.url)
        .bearer_auth(&token)
        .header("mcp-protocol-version", LEGACY_VERSION);
    if let Some(session) = &closing.session {
        delete = delete.header("mcp-session-id", session);
    }
    let deleted = delete.send().await.unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    until_titled(&fx, "Three", "abandoned", Duration::from_secs(5)).await;
    let messages = sse_messages(closing_call).await;
    assert!(
        messages.iter().all(|m| m.get("result").is_none()),
        "{messages:?}"
    );

    let (answer, _) = tokio::join!(
        sse_messages(second_call),
        decide_when_pending(&fx, &["approve"])
    );
    let result = answer
        .iter()
        .find(|m| m["id"] == 7)
        .unwrap_or_else(|| panic!("no answer: {answer:?}"));
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    let object: Value = serde_json::from_str(text).unwrap();
    assert_eq!(object["content"], APPROVED, "{object}");
    assert!(server.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_event_stream_abandons_its_call_at_once() {
    let fx = Fixture::new(json!([]));
    let token = create_token(&fx, "laptop");
    let server = Server::start(&fx, &[]);
    let client = LegacyClient::connect(&server.base, &token).await;
    let call = client.call(3, "plans/gone.md", "# Gone\n\nA plan").await;
    until_pending(&fx).await;
    // The client closes its connection (it quit, or its process died) without a word.
    drop(call);
    drop(client);
    let took = until_titled(&fx, "Gone", "abandoned", Duration::from_secs(5)).await;
    eprintln!("dropped stream's call abandoned after {took:?}");
    assert_eq!(fx.listing(&["pending"]), json!([]), "nobody is asked");
    assert!(server.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_client_that_gives_up_leaves_its_plan_abandoned_at_once_and_undecidable() {
    let fx = Fixture::new(json!([]));
    let token = create_token(&fx, "laptop");
    let server = Server::start(&fx, &[]);
    let client = mcp_client(&server.base, &token).await;
    let plan = |title: &str| json!({"path": "plans/p.md", "plan": format!("# {title}\n\nA plan")});

    let call =
        submit_cancellable(&client, plan("Cancelled"), PeerRequestOptions::no_options()).await;
    let run = until_pending(&fx).await["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    call.cancel(Some("the user pressed Esc".into()))
        .await
        .unwrap();
    let took = until_titled(&fx, "Cancelled", "abandoned", Duration::from_secs(5)).await;
    eprintln!("http: cancelled call abandoned after {took:?}");
    assert_undecidable(&fx, &run, "Cancelled");

    let call = submit_cancellable(
        &client,
        plan("Timed out"),
        PeerRequestOptions::with_timeout(Duration::from_secs(2)),
    )
    .await;
    let outcome = call.await_response().await;
    assert!(
        matches!(outcome, Err(rmcp::ServiceError::Timeout { .. })),
        "{outcome:?}"
    );
    let took = until_titled(&fx, "Timed out", "abandoned", Duration::from_secs(5)).await;
    eprintln!("http: timed-out call abandoned after {took:?}");
    assert_undecidable(&fx, &run, "Timed out");

    let ((approved, _), _) = tokio::join!(
        submit(&client, plan("Approved")),
        decide_when_pending(&fx, &["approve"])
    );
    assert_eq!(approved["content"], APPROVED);

    let call = submit_cancellable(&client, plan("Closed"), PeerRequestOptions::no_options()).await;
    until_pending(&fx).await;
    drop(call);
    client.cancel().await.unwrap();
    let took = until_titled(&fx, "Closed", "abandoned", Duration::from_secs(5)).await;
    eprintln!("http: closed client's call abandoned after {took:?}");
    assert_undecidable(&fx, &run, "Closed");
    assert_eq!(status_of(&fx, "Approved"), "approved");
    assert!(server.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_call_over_http_reports_progress_so_a_client_timeout_can_be_reset() {
    let fx = Fixture::new(json!([]));
    let token = create_token(&fx, "laptop");
    let server = Server::start_with_env(&fx, &[], &[("PLANDESK_MCP_PROGRESS_MS", "300")]);
    let heard = Heard::default();
    let client = mcp_client_as(&server.base, &token, heard.clone()).await;
    let args = json!({"path": "plans/p.md", "plan": "# Progress\n\nA plan"});
    submit_while_progress_resets_the_timeout(&fx, &client, args, &heard).await;

    // A 2025-11-25 client's call carries its token in `_meta`; its event stream carries the
    // progress, and a call without a token gets none.
    let legacy = LegacyClient::connect(&server.base, &token).await;
    let with_token = legacy
        .post(
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "submit_plan", "_meta": {"progressToken": "p-5"},
            "arguments": {"path": "plans/q.md", "plan": "# Legacy\n\nA plan"}}}),
        )
        .await;
    let (messages, _) = tokio::join!(
        sse_messages(with_token),
        decide_after(&fx, Duration::from_secs(1))
    );
    let progress: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(progress.len() >= 2, "{messages:?}");
    assert!(progress
        .iter()
        .all(|p| p["params"]["progressToken"] == "p-5"));
    let without_token = legacy.call(6, "plans/r.md", "# Quiet\n\nA plan").await;
    let (messages, _) = tokio::join!(
        sse_messages(without_token),
        decide_after(&fx, Duration::from_secs(1))
    );
    assert!(
        messages.iter().all(|m| m.get("method").is_none()),
        "no token, no progress: {messages:?}"
    );
    assert!(server.stop().success());
}

/// A revoked token's name may be given to a new one: that token's plans and reports are its
/// own, never held against the plan approved for the old one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_given_again_starts_afresh() {
    let fx = Fixture::new(json!([]));
    let old = create_token(&fx, "laptop");
    let server = Server::start(&fx, &[]);
    let client = mcp_client(&server.base, &old).await;
    let ((approved, _), _) = tokio::join!(
        submit(&client, json!({"path": "p.md", "plan": PLAN_TEXT})),
        decide_when_pending(&fx, &["approve"])
    );
    assert!(approved["content"]
        .as_str()
        .unwrap()
        .starts_with("Plan approved"));
    let (text, _) = report(&client, json!({"finished": true})).await;
    assert!(text.starts_with("Recorded 1 of 1"), "{text}");
    client.cancel().await.unwrap();

    fx.ok(&["token", "revoke", "laptop"]);
    let new = create_token(&fx, "laptop");
    let client = mcp_client(&server.base, &new).await;
    let (text, is_error) = report(&client, json!({"finished": true})).await;
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("Nothing recorded: no plan of yours is approved yet"),
        "{text}"
    );
    client.cancel().await.unwrap();
}
