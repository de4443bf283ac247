//! Claude Code's `type: "http"` hooks at `/hooks/claude`: the command hook's answers, refusals
//! of bad payloads and bodies, and a waiting hook answered when the server stops.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_codes_http_hook_gets_the_command_hooks_answers() {
    let fx = Fixture::new(json!([]));
    let token = create_token(&fx, "laptop");
    let server = Server::start(&fx, &[]);
    let plan = "# Add a cache\n\nUse an LRU cache.";
    let payload = hook_payload(
        "sess-1",
        json!({"plan": plan, "planFilePath": "/home/u/.claude/plans/brave-otter.md"}),
    );
    let (response, item) = tokio::join!(
        post_hook(&server.base, Some(&token), &payload),
        decide_when_pending(&fx, &["reject", "--feedback", "Measure first"])
    );
    assert_eq!(item["source"]["kind"], "claude-code");
    assert_eq!(response.status(), 200);
    let body: Value = json_of(response).await;
    assert_eq!(
        body,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {
            "behavior": "deny",
            "message": "Plan was not approved. The user wants revisions.\n\nUser feedback: Measure first\n\nPlease revise the plan based on the feedback and present it for review again."
        }}}),
        "what `plandesk hook claude-code` prints"
    );
    // A server shows no desktop notification of its own (here the bus does not exist: trying
    // would have said "the notification was not shown").
    let told: Vec<String> = server
        .stderr()
        .into_iter()
        .filter(|line| line.contains("notification"))
        .collect();
    assert_eq!(told, Vec::<String>::new());
    let (response, _) = tokio::join!(
        post_hook(&server.base, Some(&token), &payload),
        decide_when_pending(&fx, &["approve"])
    );
    let body: Value = json_of(response).await;
    assert_eq!(
        body["hookSpecificOutput"]["decision"],
        json!({"behavior": "allow", "updatedInput": {"plan": plan,
               "planFilePath": "/home/u/.claude/plans/brave-otter.md"}}),
        "an allow echoes the input"
    );
    let history = fx.listing(&["history"]);
    assert_eq!(history[1]["revisionNo"], 2, "one thread: {history}");

    // Another tool is not ours: an empty 200, Claude Code asks as usual.
    let mut other = payload.clone();
    other["tool_name"] = json!("Bash");
    let response = post_hook(&server.base, Some(&token), &other).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "");

    // No plan in the payload: refused (deny, stop) without opening the transcript it names,
    // here a FIFO that would block whoever opened it.
    let fifo = fx.root.join("transcript.jsonl");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut empty = hook_payload("sess-2", json!({"planFilePath": fifo}));
    empty["transcript_path"] = json!(fifo);
    let started = Instant::now();
    let response = post_hook(&server.base, Some(&token), &empty).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "nothing waited on the FIFO"
    );
    let body: Value = json_of(response).await;
    let decision = &body["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "deny", "{body}");
    assert_eq!(decision["interrupt"], true);
    assert!(
        decision["message"]
            .as_str()
            .unwrap()
            .contains("tool_input.plan"),
        "{body}"
    );

    // Too large a body is refused from its declared length, before any of it is read: with a
    // deny, as Claude Code takes any answer but a 200 as no opinion.
    let response = {
        use std::io::{Read, Write};
        let address = server.base.trim_start_matches("http://").to_owned();
        let token = token.clone();
        tokio::task::spawn_blocking(move || {
            let mut stream = std::net::TcpStream::connect(address).unwrap();
            write!(
                stream,
                "POST /hooks/claude HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                5 * 1024 * 1024
            )
            .unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut answer = Vec::new();
            let _ = stream.read_to_end(&mut answer);
            String::from_utf8_lossy(&answer).into_owned()
        })
        .await
        .unwrap()
    };
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    // The body, whether chunked or not: the one JSON object in it.
    let body = &response[response.find('{').unwrap()..=response.rfind('}').unwrap()];
    let body: Value = serde_json::from_str(body).unwrap();
    assert_eq!(body["hookSpecificOutput"]["decision"]["behavior"], "deny");
    assert!(
        body["hookSpecificOutput"]["decision"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 4194304 bytes"),
        "{body}"
    );
    assert_eq!(fx.listing(&["history"]).as_array().unwrap().len(), 2);

    // Told to stop while a plan waits: it is closed as abandoned and the agent told no.
    let waiting = {
        let base = server.base.clone();
        let token = token.clone();
        let payload = hook_payload("sess-3", json!({"plan": "# Wait\n\nfor me"}));
        tokio::spawn(async move { post_hook(&base, Some(&token), &payload).await })
    };
    until_pending(&fx).await;
    let status = tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap();
    assert!(status.success());
    let body: Value = json_of(waiting.await.unwrap()).await;
    assert_eq!(body["hookSpecificOutput"]["decision"]["behavior"], "deny");
    let history = fx.listing(&["history"]);
    assert_eq!(history[2]["status"], "abandoned", "{history}");
}

/// The titles of the plans pending now.
fn pending_titles(fx: &Fixture) -> Vec<String> {
    let pending = fx.listing(&["pending"]);
    let mut titles: Vec<String> = pending
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["revision"]["title"].as_str().unwrap().to_owned())
        .collect();
    titles.sort();
    titles
}

/// Waits until the plans pending are `titles`.
async fn until_titles(fx: &Fixture, titles: &[&str]) {
    let until = Instant::now() + Duration::from_secs(30);
    while pending_titles(fx) != titles {
        assert!(Instant::now() < until, "pending: {:?}", pending_titles(fx));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limit_wait_to_be_accepted_then_are_answered() {
    let fx = Fixture::new(json!([]));
    let token = create_token(&fx, "laptop");
    let server = Server::start(&fx, &["--max-connections", "2", "--max-per-token", "2"]);
    let post = |n: usize| {
        let (base, token) = (server.base.clone(), token.clone());
        let payload = hook_payload(
            &format!("sess-{n}"),
            json!({"plan": format!("# Plan {n}\n")}),
        );
        tokio::spawn(async move { json_of(post_hook(&base, Some(&token), &payload).await).await })
    };
    let (first, second) = (post(1), post(2));
    until_titles(&fx, &["Plan 1", "Plan 2"]).await;
    // Two agents wait, each on its connection: a third is not read while they do.
    let third = post(3);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(pending_titles(&fx), ["Plan 1", "Plan 2"]);
    let run_of = |title: &str| {
        let pending = fx.listing(&["pending"]);
        let item = pending
            .as_array()
            .unwrap()
            .iter()
            .find(|item| item["revision"]["title"] == title)
            .unwrap()
            .clone();
        item["runId"].as_str().unwrap().to_owned()
    };
    fx.ok(&["approve", &run_of("Plan 1")]);
    let answer = first.await.unwrap();
    assert_eq!(
        answer["hookSpecificOutput"]["decision"]["behavior"],
        "allow"
    );
    // Its connection closed, the third is let in and waits like the others.
    until_titles(&fx, &["Plan 2", "Plan 3"]).await;
    fx.ok(&["reject", &run_of("Plan 2"), "--feedback", "Smaller"]);
    fx.ok(&["approve", &run_of("Plan 3")]);
    let (second, third) = (second.await.unwrap(), third.await.unwrap());
    assert_eq!(second["hookSpecificOutput"]["decision"]["behavior"], "deny");
    assert_eq!(third["hookSpecificOutput"]["decision"]["behavior"], "allow");
}

/// One token cannot hold the whole server: past its share of requests in flight, its hooks
/// are denied and its MCP requests refused at once, while another token's plans still wait
/// for a person; a decision gives the share back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_past_its_share_is_refused_and_another_is_not() {
    let fx = Fixture::new(json!([]));
    let greedy = create_token(&fx, "loop");
    let other = create_token(&fx, "laptop");
    let server = Server::start(&fx, &["--max-per-token", "2"]);
    let post = |token: &str, n: usize| {
        let (base, token) = (server.base.clone(), token.to_owned());
        let payload = hook_payload(
            &format!("sess-{n}"),
            json!({"plan": format!("# Plan {n}\n")}),
        );
        tokio::spawn(async move { json_of(post_hook(&base, Some(&token), &payload).await).await })
    };
    let (first, second) = (post(&greedy, 1), post(&greedy, 2));
    until_titles(&fx, &["Plan 1", "Plan 2"]).await;
    let refused = post(&greedy, 3).await.unwrap();
    let decision = &refused["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "deny", "{refused}");
    assert!(
        decision["message"]
            .as_str()
            .unwrap()
            .contains("already has 2 requests waiting"),
        "{refused}"
    );
    let mcp = reqwest::Client::new()
        .post(format!("{}/mcp", server.base))
        .bearer_auth(&greedy)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(mcp.status(), 429);
    assert_eq!(mcp.headers()["retry-after"], "10");
    assert_eq!(json_of(mcp).await["error"], "busy");
    // What ends waits is never refused for the share: a cancellation, a session's end.
    let cancel = reqwest::Client::new()
        .post(format!("{}/mcp", server.base))
        .bearer_auth(&greedy)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#)
        .send()
        .await
        .unwrap();
    assert_ne!(cancel.status(), 429);
    let end = reqwest::Client::new()
        .delete(format!("{}/mcp", server.base))
        .bearer_auth(&greedy)
        .header("mcp-session-id", "s-1")
        .send()
        .await
        .unwrap();
    assert_eq!(end.status(), 204);
    // Another token's plan is taken and waits.
    let third = post(&other, 3);
    until_titles(&fx, &["Plan 1", "Plan 2", "Plan 3"]).await;
    // Answered, a request gives its part of the share back.
    let run = fx
        .listing(&["pending"])
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["revision"]["title"] == "Plan 1")
        .unwrap()["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    fx.ok(&["approve", &run]);
    assert_eq!(
        first.await.unwrap()["hookSpecificOutput"]["decision"]["behavior"],
        "allow"
    );
    let fourth = post(&greedy, 4);
    until_titles(&fx, &["Plan 2", "Plan 3", "Plan 4"]).await;
    let kinds = audit_kinds(&fx);
    assert_eq!(
        kinds.iter().filter(|k| *k == "submitted").count(),
        4,
        "nothing of the refused requests is recorded: {kinds:?}"
    );
    for waiting in [second, third, fourth] {
        waiting.abort();
    }
}
