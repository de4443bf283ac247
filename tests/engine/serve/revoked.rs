//! A token revoked while its plans wait: every request still waiting on it ends (an http hook,
//! an MCP call, a task), each plan closed as abandoned and undecidable, while another token's
//! waits, and a new token given the revoked one's name, go on.

use std::time::Duration;

use serde_json::{json, Value};

use super::legacy::LegacyClient;
use super::*;
use crate::mcp::{assert_undecidable, status_of, until_titled};

/// Waits until `count` plans are pending.
async fn until_pending_count(fx: &Fixture, count: usize) {
    for _ in 0..200 {
        if fx.listing(&["pending"]).as_array().unwrap().len() == count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never {count} pending: {}", fx.listing(&["pending"]));
}

fn run_of(fx: &Fixture, title: &str) -> String {
    let history = fx.listing(&["history"]);
    let revision = history
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["title"] == title)
        .unwrap_or_else(|| panic!("no {title}: {history}"));
    revision["runId"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_a_token_ends_every_wait_of_its_plans_and_no_other() {
    let fx = Fixture::new(json!([]));
    let laptop = create_token(&fx, "laptop");
    let ci = create_token(&fx, "ci");
    let server = Server::start(&fx, &[]);
    let hook = |token: &str, session: &str, title: &str| {
        let (base, token) = (server.base.clone(), token.to_owned());
        let payload = hook_payload(session, json!({"plan": format!("# {title}\n\nA plan")}));
        tokio::spawn(async move { json_of(post_hook(&base, Some(&token), &payload).await).await })
    };

    // The laptop's plans wait three ways; the CI's one way.
    let laptop_hook = hook(&laptop, "sess-1", "Hooked");
    let client = LegacyClient::connect(&server.base, &laptop).await;
    let call = client
        .call(3, "plans/called.md", "# Called\n\nA plan")
        .await;
    let (tasks, _) = LegacyClient::connect_declaring(
        &server.base,
        &laptop,
        json!({"tasks": {"list": {}, "cancel": {}}}),
    )
    .await;
    tasks
        .submit_task(4, "plans/tasked.md", "# Tasked\n\nA plan")
        .await;
    let ci_hook = hook(&ci, "sess-2", "Continuous");
    until_pending_count(&fx, 4).await;

    fx.ok(&["token", "revoke", "laptop"]);
    let body = tokio::time::timeout(Duration::from_secs(10), laptop_hook)
        .await
        .expect("the revoked token's hook is answered")
        .unwrap();
    assert_eq!(body["hookSpecificOutput"]["decision"]["behavior"], "deny");
    let stream = tokio::time::timeout(Duration::from_secs(10), call.text())
        .await
        .expect("the revoked token's call ends");
    assert!(
        !stream.unwrap_or_default().contains("approved"),
        "no answer reaches it"
    );
    for title in ["Hooked", "Called", "Tasked"] {
        let took = until_titled(&fx, title, "abandoned", Duration::from_secs(10)).await;
        eprintln!("revoked: {title} abandoned after {took:?}");
        assert_undecidable(&fx, &run_of(&fx, title), title);
    }
    assert_eq!(status_of(&fx, "Continuous"), "pending", "another token's");
    let refused = tasks
        .post(json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/list", "params": {}}))
        .await;
    assert_eq!(refused.status(), 401, "the revoked token is let in no more");

    // A new token under the old name is another token: its plan waits and is answered.
    let laptop = create_token(&fx, "laptop");
    let renewed = hook(&laptop, "sess-3", "Renewed");
    until_pending_count(&fx, 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(status_of(&fx, "Renewed"), "pending");
    fx.ok(&["approve", &run_of(&fx, "Renewed")]);
    fx.ok(&["approve", &run_of(&fx, "Continuous")]);
    for waiting in [renewed, ci_hook] {
        let body: Value = waiting.await.unwrap();
        assert_eq!(
            body["hookSpecificOutput"]["decision"]["behavior"], "allow",
            "{body}"
        );
    }
    assert!(server.stop().success());
}
