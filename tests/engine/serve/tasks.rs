//! `submit_plan` as a task of MCP 2025-11-25 over `/mcp`, message by message: declared only
//! to a client that declares tasks, its client's alone, and its plan never outliving it.

use std::time::Duration;

use serde_json::{json, Value};

use super::legacy::{rpc_error, sse_messages, LegacyClient, LEGACY_VERSION};
use super::*;
use crate::mcp::{assert_undecidable, status_of, until_titled};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_over_http_is_its_clients_alone_and_its_plan_never_outlives_it() {
    let fx = Fixture::new(json!([]));
    let token = create_token(&fx, "laptop");
    let server = Server::start(&fx, &[]);
    let declares = json!({"tasks": {"list": {}, "cancel": {}}});

    // Tasks are declared to a client that declares them, and to no other.
    let (_, plain) = LegacyClient::connect_declaring(&server.base, &token, json!({})).await;
    assert!(plain["capabilities"].get("tasks").is_none(), "{plain}");
    let (client, init) =
        LegacyClient::connect_declaring(&server.base, &token, declares.clone()).await;
    assert_eq!(
        init["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        "{init}"
    );
    let tools = client.request(1, "tools/list", json!({})).await;
    assert_eq!(
        tools["result"]["tools"][0]["execution"],
        json!({"taskSupport": "optional"})
    );

    // The task is created at once, while the plan waits for a person.
    let task = client
        .submit_task(2, "plans/one.md", "# One\n\nA plan")
        .await;
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "{task}");
    assert_eq!(task["ttl"], 600_000);
    assert!(task["pollInterval"].as_u64().unwrap() > 0, "{task}");
    until_pending(&fx).await;

    // Another token, or another client of this token, finds no such task.
    let stranger = create_token(&fx, "stranger");
    let (other_token, _) =
        LegacyClient::connect_declaring(&server.base, &stranger, declares.clone()).await;
    let (other_client, _) =
        LegacyClient::connect_declaring(&server.base, &token, declares.clone()).await;
    for other in [&other_token, &other_client] {
        for method in ["tasks/get", "tasks/cancel", "tasks/result"] {
            let answer = other.request(3, method, json!({"taskId": id})).await;
            let (code, message) = rpc_error(&answer);
            assert_eq!(code, -32602, "{method}: {answer}");
            assert!(message.contains("not found"), "{method}: {message}");
        }
        let listed = other.request(4, "tasks/list", json!({})).await;
        assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    }
    assert_eq!(status_of(&fx, "One"), "pending");
    let listed = client.request(5, "tasks/list", json!({})).await;
    assert_eq!(listed["result"]["tasks"][0]["taskId"], id.as_str());

    // Bad requests are refused, each with what is wrong.
    for (params, wrong) in [
        (
            json!({"taskId": "0123456789abcdef0123456789abcdef"}),
            "not found",
        ),
        (json!({"taskId": 7}), "must be a string"),
        (json!({}), "must be a string"),
    ] {
        let answer = client.request(6, "tasks/get", params).await;
        let (code, message) = rpc_error(&answer);
        assert_eq!(code, -32602);
        assert!(message.contains(wrong), "{message}");
    }
    for params in [
        json!({"name": "submit_plan", "arguments": {"path": "plans/x.md", "plan": "# X"}, "task": "soon"}),
        json!({"name": "nope", "arguments": {}, "task": {}}),
        json!({"name": "submit_plan", "arguments": [], "task": {}}),
    ] {
        let answer = client.request(7, "tools/call", params.clone()).await;
        assert_eq!(rpc_error(&answer).0, -32602, "{params}: {answer}");
    }
    let answer = client
        .request(8, "tasks/list", json!({"cursor": "abc"}))
        .await;
    assert_eq!(rpc_error(&answer).0, -32602);
    assert_eq!(
        fx.listing(&["pending"]).as_array().unwrap().len(),
        1,
        "nothing refused reached a person"
    );

    // tasks/result waits for the person; its answer is the tool's result.
    let result = client
        .post(json!({"jsonrpc": "2.0", "id": 9, "method": "tasks/result",
                     "params": {"taskId": id}}))
        .await;
    assert!(result.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let waiting = tokio::spawn(sse_messages(result));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "tasks/result waits for a decision");
    decide_when_pending(&fx, &["approve", "--note", "Go"]).await;
    let answer = waiting.await.unwrap();
    let answer = answer.iter().find(|m| m["id"] == 9).unwrap();
    let object: Value =
        serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        object["content"],
        format!("{APPROVED}\n\nReviewer notes: Go")
    );
    assert_eq!(answer["result"]["structuredContent"], object);
    assert_eq!(
        answer["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    let got = client.request(10, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");

    // Cancelled: abandoned before the answer; then refused as terminal.
    let task = client
        .submit_task(11, "plans/two.md", "# Two\n\nA plan")
        .await;
    until_pending(&fx).await;
    let cancelled = client
        .request(12, "tasks/cancel", json!({"taskId": task["taskId"]}))
        .await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_eq!(
        status_of(&fx, "Two"),
        "abandoned",
        "abandoned before the answer"
    );
    let two = fx
        .listing(&["history"])
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["title"] == "Two")
        .unwrap()["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_undecidable(&fx, &two, "Two");
    let again = client
        .request(13, "tasks/cancel", json!({"taskId": task["taskId"]}))
        .await;
    assert_eq!(rpc_error(&again).0, -32602);

    // A client that ends its session (DELETE) leaves no task waiting.
    client
        .submit_task(14, "plans/three.md", "# Three\n\nA plan")
        .await;
    until_pending(&fx).await;
    let deleted = client
        .http
        .delete(&client.url)
        .bearer_auth(&token)
        .header("mcp-protocol-version", LEGACY_VERSION)
        .header("mcp-session-id", client.session.as_deref().unwrap())
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let took = until_titled(&fx, "Three", "abandoned", Duration::from_secs(5)).await;
    eprintln!("a task of an ended session abandoned after {took:?}");

    // And a server that stops leaves none either.
    other_token
        .submit_task(15, "plans/four.md", "# Four\n\nA plan")
        .await;
    until_pending(&fx).await;
    assert!(server.stop().success());
    assert_eq!(status_of(&fx, "Four"), "abandoned");
    assert_eq!(fx.listing(&["pending"]), json!([]));
}

/// The run of the revision titled `title`.
fn run_of(fx: &Fixture, title: &str) -> String {
    fx.listing(&["history"])
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["title"] == title)
        .unwrap_or_else(|| panic!("no revision {title}"))["runId"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_client_falls_silent_is_abandoned_and_one_that_polls_waits_on() {
    let fx = Fixture::new(json!([]));
    let idle = Duration::from_millis(1500);
    let server = Server::start_with_env(
        &fx,
        &[],
        &[
            ("PLANDESK_MCP_TASK_IDLE_MS", "1500"),
            ("PLANDESK_MCP_POLL_MS", "300"),
        ],
    );
    let declares = json!({"tasks": {"list": {}, "cancel": {}}});
    // Three clients, each with a token of its own (a token's plans are one run).
    let client = |name: &'static str| {
        let (base, token) = (server.base.clone(), create_token(&fx, name));
        let declares = declares.clone();
        async move {
            LegacyClient::connect_declaring(&base, &token, declares)
                .await
                .0
        }
    };
    let silent = client("silent").await;
    let polling = client("polling").await;
    let streaming = client("streaming").await;

    // The task says how often to poll, well inside the limit, and what silence does.
    let task = silent
        .submit_task(1, "plans/silent.md", "# Silent\n\nA plan")
        .await;
    let silent_since = std::time::Instant::now();
    assert!(
        task["pollInterval"].as_u64().unwrap() <= 500,
        "a client that polls as told is never silent that long: {task}"
    );
    let said = task["statusMessage"].as_str().unwrap();
    assert!(
        said.contains("1.5 s") && said.contains("abandoned"),
        "the task states the rule: {said}"
    );
    let polled = polling
        .submit_task(1, "plans/polled.md", "# Polled\n\nA plan")
        .await;
    let streamed = streaming
        .submit_task(1, "plans/streamed.md", "# Streamed\n\nA plan")
        .await;
    // An open tasks/result is a client waiting: alive for as long as it is open.
    let stream = streaming
        .post(json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result",
                     "params": {"taskId": streamed["taskId"]}}))
        .await;
    assert_eq!(stream.status(), 200);

    // The polling client asks every 300 ms meanwhile; the silent one says nothing.
    let (stop_polling, mut polling_stopped) = tokio::sync::oneshot::channel::<()>();
    let task_id = polled["taskId"].clone();
    let poller = tokio::spawn(async move {
        for id in 10.. {
            let got = polling
                .request(id, "tasks/get", json!({"taskId": task_id}))
                .await;
            assert_eq!(got["result"]["status"], "working", "{got}");
            tokio::select! {
                _ = &mut polling_stopped => break,
                () = tokio::time::sleep(Duration::from_millis(300)) => {}
            }
        }
        polling
    });
    until_titled(&fx, "Silent", "abandoned", idle + Duration::from_secs(5)).await;
    let took = silent_since.elapsed();
    eprintln!("a silent client's task abandoned within {took:?} of its last request");
    assert!(
        took >= idle - Duration::from_millis(100),
        "abandoned no sooner than the idle limit: {took:?}"
    );
    // The others wait on, three idle limits on.
    tokio::time::sleep(
        (silent_since + idle * 3).saturating_duration_since(std::time::Instant::now()),
    )
    .await;
    stop_polling.send(()).unwrap();
    let polling = poller.await.unwrap();
    // From now on the polling client waits on tasks/result instead.
    let result = polling
        .post(json!({"jsonrpc": "2.0", "id": 99, "method": "tasks/result",
                     "params": {"taskId": polled["taskId"]}}))
        .await;
    assert_undecidable(&fx, &run_of(&fx, "Silent"), "Silent");
    assert_eq!(status_of(&fx, "Polled"), "pending", "polled: still asked");
    assert_eq!(status_of(&fx, "Streamed"), "pending", "its stream is open");

    // The silent client, back, finds its task failed, saying why.
    let got = silent
        .request(3, "tasks/get", json!({"taskId": task["taskId"]}))
        .await;
    assert_eq!(got["result"]["status"], "failed", "{got}");
    let message = got["result"]["statusMessage"].as_str().unwrap();
    assert!(message.contains("no request"), "{message}");

    // The stream's connection drops: the idle clock starts then.
    drop(stream);
    let took = until_titled(&fx, "Streamed", "abandoned", Duration::from_secs(10)).await;
    eprintln!("a task abandoned {took:?} after its tasks/result stream dropped");
    assert!(took >= idle - Duration::from_millis(300), "{took:?}");

    // The polling client's plan, waited on since, is decided as usual.
    let (answer, _) = tokio::join!(sse_messages(result), decide_when_pending(&fx, &["approve"]));
    let answer = answer.iter().find(|m| m["id"] == 99).unwrap();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(status_of(&fx, "Polled"), "approved");
    assert!(server.stop().success());
}
