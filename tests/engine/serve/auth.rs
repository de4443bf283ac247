//! Who gets in: tokens made, listed and revoked with the CLI (only their hashes kept), every
//! request without an active one refused before anything is recorded, and no OAuth to be
//! discovered.

use plandesk::token::TokenKind;
use serde_json::{json, Value};

use super::*;

#[test]
fn tokens_are_created_listed_and_revoked_and_only_hashes_are_kept() {
    let fx = Fixture::new(json!([]));
    let secret = create_token(&fx, "laptop");
    assert_eq!(secret.len(), 4 + 64, "pdt_ and 32 bytes in hex");
    assert_ne!(create_token(&fx, "ci"), secret, "each secret is new");
    let err = fx.refused(&["token", "create", "laptop"]);
    assert!(err.contains("already active"), "{err}");
    let err = fx.refused(&["token", "create", "no/slash"]);
    assert!(err.contains("not a token name"), "{err}");
    let err = fx.refused(&["token", "revoke", "nobody"]);
    assert!(err.contains("no active token is named `nobody`"), "{err}");
    fx.ok(&["token", "revoke", "laptop"]);
    let listed = fx.listing(&["token", "list"]);
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
    assert_eq!(listed[0]["name"], "laptop");
    assert!(
        listed[0]["revokedAt"].is_i64(),
        "revoked stays listed: {listed}"
    );
    assert!(listed[1]["revokedAt"].is_null());
    let text = listed.to_string();
    assert!(
        !text.contains(&secret[4..20]) && !text.contains("sha"),
        "no secret or hash is listed: {text}"
    );
    // A revoked name can be given to a new token.
    create_token(&fx, "laptop");
    for (place, bytes) in fx.stored() {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&secret),
            "the secret itself is never stored ({place})"
        );
    }
    assert_eq!(
        audit_kinds(&fx),
        [
            "token-created",
            "token-created",
            "token-revoked",
            "token-created"
        ],
        "creating and revoking are in the audit trail"
    );
}

#[tokio::test]
async fn the_store_finds_only_active_tokens_by_the_hash_of_their_secret() {
    use plandesk::store::StoreError;
    use plandesk::token::{TokenError, Tokens};
    let dir = tempfile::tempdir().unwrap();
    let actor = plandesk::store::Actor {
        name: "admin".into(),
        process: "test".into(),
    };
    let tokens = Tokens::new(
        test_store(dir.path()).await,
        std::sync::Arc::new(plandesk::clock::SystemClock),
        actor,
    );
    let (row, first) = tokens.create("laptop").await.unwrap();
    assert_eq!(
        (row.name.as_str(), row.created_by.as_str()),
        ("laptop", "admin")
    );
    let bearer = |secret: &str| format!("Bearer {secret}");
    let found = tokens.authenticate(&bearer(first.expose())).await.unwrap();
    assert_eq!(found.map(|t| t.name).as_deref(), Some("laptop"));
    let wrong = format!("pdt_{}", "f".repeat(64));
    assert_eq!(tokens.authenticate(&bearer(&wrong)).await.unwrap(), None);
    assert!(matches!(
        tokens.create("laptop").await,
        Err(TokenError::Store(StoreError::TokenExists(TokenKind::Agent, name))) if name == "laptop"
    ));
    tokens.revoke(TokenKind::Agent, "laptop").await.unwrap();
    assert_eq!(
        tokens.authenticate(&bearer(first.expose())).await.unwrap(),
        None,
        "a revoked token is refused"
    );
    assert!(matches!(
        tokens.revoke(TokenKind::Agent, "laptop").await,
        Err(TokenError::Store(StoreError::UnknownToken(..)))
    ));
    let (_, second) = tokens.create("laptop").await.unwrap();
    assert_eq!(
        tokens.authenticate(&bearer(first.expose())).await.unwrap(),
        None
    );
    assert!(tokens
        .authenticate(&bearer(second.expose()))
        .await
        .unwrap()
        .is_some());
    let listed = tokens.list().await.unwrap();
    assert_eq!(listed.len(), 2, "the revoked one stays listed");
    assert!(listed[0].revoked_at.is_some() && listed[1].revoked_at.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_an_active_token_are_refused_and_nothing_is_recorded() {
    let fx = Fixture::new(json!([]));
    let good = create_token(&fx, "laptop");
    let revoked = create_token(&fx, "old");
    fx.ok(&["token", "revoke", "old"]);
    let server = Server::start(&fx, &[]);
    let payload = hook_payload("s1", json!({"plan": "# Sneaky\n\nDo it"}));
    let wrong = format!("pdt_{}", "0".repeat(64));
    let client = reqwest::Client::new();
    for (what, auth) in [
        ("no token", None),
        ("not bearer", Some(format!("Basic {good}"))),
        ("a wrong token", Some(format!("Bearer {wrong}"))),
        ("a revoked token", Some(format!("Bearer {revoked}"))),
        ("junk", Some("Bearer pdt_!!".to_owned())),
    ] {
        for path in ["/hooks/claude", "/mcp"] {
            let mut request = client
                .post(format!("{}{path}", server.base))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(payload.to_string());
            if let Some(auth) = &auth {
                request = request.header("authorization", auth);
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 401, "{what} on {path}");
            assert_eq!(
                response.headers()["www-authenticate"],
                "Bearer realm=\"plandesk\"",
                "{what} on {path}"
            );
            let body: Value = json_of(response).await;
            assert_eq!(body["error"], "unauthorized");
        }
    }
    // Two Authorization headers are not one token.
    let response = client
        .post(format!("{}/hooks/claude", server.base))
        .header("authorization", format!("Bearer {good}"))
        .header("authorization", format!("Bearer {wrong}"))
        .body(payload.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(fx.listing(&["pending"]), json!([]), "no item was opened");
    assert_eq!(
        fx.listing(&["history"]),
        json!([]),
        "no revision was recorded"
    );
    assert_eq!(fx.listing(&["runs"]), json!([]), "no run was recorded");
    assert_eq!(
        audit_kinds(&fx),
        ["token-created", "token-created", "token-revoked"],
        "only the tokens' own entries"
    );
    // The same request with the good token gets in (and is answered when the server stops).
    let response = client
        .get(format!("{}/nowhere", server.base))
        .bearer_auth(&good)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404, "authenticated, then routed");
    assert!(server.stop().success());
}

/// A store that fails while a token is checked: 503, and none of the store's own words (its
/// path, its host, its tables) to a request nobody has authenticated; those go to the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_failing_a_token_check_says_nothing_of_itself() {
    let fx = Fixture::new(json!([]));
    let good = create_token(&fx, "laptop");
    let server = Server::start(&fx, &[]);
    std::thread::scope(|s| {
        s.spawn(|| raw_sql(&fx, "ALTER TABLE tokens RENAME TO tokens_elsewhere"));
    });
    let response = reqwest::Client::new()
        .post(format!("{}/hooks/claude", server.base))
        .bearer_auth(&good)
        .body(hook_payload("s1", json!({"plan": "# P\n\nDo it"})).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    let body = json_of(response).await;
    assert_eq!(body["error"], "store");
    let said = body["message"].as_str().unwrap();
    assert!(
        !said.contains("tokens") && !said.contains("query"),
        "the store's words stay in the log: {said}"
    );
    // In the server's log (read by a thread of the harness: it may come a moment later).
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while !server.stderr().join("\n").contains("cannot check a token") {
        assert!(std::time::Instant::now() < until, "{:?}", server.stderr());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(fx.listing(&["pending"]), json!([]), "no item was opened");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_discovery_finds_nothing_and_a_401_says_what_to_send() {
    let fx = Fixture::new(json!([]));
    let server = Server::start(&fx, &[]);
    let client = reqwest::Client::new();
    // Where MCP clients look for an OAuth server after a 401: a 401 there too would send them
    // into a login that cannot work; a 404 says there is none.
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-authorization-server/mcp",
        "/.well-known/openid-configuration",
        // Where clients go when discovery finds nothing.
        "/register",
        "/authorize",
        "/token",
    ] {
        let response = client
            .get(format!("{}{path}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{path}");
        let body: Value = json_of(response).await;
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("Authorization: Bearer pdt_"),
            "{path}: {body}"
        );
    }
    let response = client
        .post(format!("{}/mcp", server.base))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let challenge = response.headers()["www-authenticate"].to_str().unwrap();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(
        !challenge.contains("resource_metadata"),
        "no OAuth metadata is offered: {challenge}"
    );
    let body: Value = json_of(response).await;
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("Authorization: Bearer pdt_…")
            && message.contains("plandesk token create"),
        "the refusal says what to send and how to get it: {message}"
    );
    assert_eq!(fx.listing(&["runs"]), json!([]), "nothing was recorded");
    assert!(server.stop().success());
}
