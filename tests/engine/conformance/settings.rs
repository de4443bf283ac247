//! Store-wide records: settings, and tokens created, found by hash and revoked; sign-in links
//! used once.

use serde_json::Value;

use super::*;

on_both_stores!(
    settings_round_trip,
    tokens_are_created_found_by_hash_and_revoked,
    a_sign_in_link_is_used_once_before_it_expires,
);

async fn settings_round_trip(location: StoreLocation) {
    let store = location.open().await.unwrap();
    assert_eq!(store.setting("model").await.unwrap(), None);
    store.set_setting("model", Some("demo"), 1).await.unwrap();
    store
        .set_setting("model", Some("ollama:llama3"), 2)
        .await
        .unwrap();
    assert_eq!(
        store.setting("model").await.unwrap().as_deref(),
        Some("ollama:llama3")
    );
    store.set_setting("model", None, 3).await.unwrap();
    assert_eq!(store.setting("model").await.unwrap(), None);
}

async fn tokens_are_created_found_by_hash_and_revoked(location: StoreLocation) {
    let store = location.open().await.unwrap();
    let new = |name, sha256, at| NewToken {
        kind: TokenKind::Agent,
        name,
        sha256,
        by: &ACTOR,
        at,
        expires_at: None,
    };
    let agent = TokenKind::Agent;
    let made = store.create_token(&new("ci", "aa11", 1)).await.unwrap();
    assert_eq!((made.name.as_str(), made.revoked_at), ("ci", None));
    let err = store.create_token(&new("ci", "bb22", 2)).await.unwrap_err();
    assert!(matches!(err, StoreError::TokenExists(..)), "{err}");
    assert_eq!(
        store.active_token(agent, "aa11", 2).await.unwrap(),
        Some(made)
    );
    assert_eq!(
        store.active_token(agent, "aa1", 2).await.unwrap(),
        None,
        "exact hashes only"
    );
    assert_eq!(
        store
            .active_token(TokenKind::Session, "aa11", 2)
            .await
            .unwrap(),
        None,
        "of its own kind only"
    );
    let ci = TokenKey::Name("ci");
    let revoked = store.revoke_token(agent, ci, &ACTOR, 3).await.unwrap();
    assert_eq!(revoked.unwrap().revoked_at, Some(3));
    assert_eq!(store.active_token(agent, "aa11", 3).await.unwrap(), None);
    assert_eq!(
        store.revoke_token(agent, ci, &ACTOR, 4).await.unwrap(),
        None
    );
    // The name is free again; the revoked one stays listed.
    store.create_token(&new("ci", "cc33", 5)).await.unwrap();
    let listed = store.tokens().await.unwrap();
    assert_eq!(
        listed.iter().map(|t| t.revoked_at).collect::<Vec<_>>(),
        [Some(3), None]
    );
    let kinds: Vec<String> = store
        .audit(None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds, ["token-created", "token-revoked", "token-created"]);
}

async fn a_sign_in_link_is_used_once_before_it_expires(location: StoreLocation) {
    let store = location.open().await.unwrap();
    let link = |name, sha256, expires_at| NewToken {
        kind: TokenKind::Pairing,
        name,
        sha256,
        by: &ACTOR,
        at: 1_000,
        expires_at: Some(expires_at),
    };
    let session = |sha256, at| NewToken {
        kind: TokenKind::Session,
        name: "",
        sha256,
        by: &ACTOR,
        at,
        expires_at: Some(at + 100_000),
    };
    store
        .create_token(&link("phone", "p1", 10_000))
        .await
        .unwrap();
    // The same name as an agent's token is another token's.
    store
        .create_token(&NewToken {
            kind: TokenKind::Agent,
            expires_at: None,
            ..link("phone", "a1", 0)
        })
        .await
        .unwrap();
    assert!(
        store
            .redeem_pairing("p0", &session("s0", 2_000))
            .await
            .unwrap()
            .is_none(),
        "unknown"
    );
    let signed_in = store
        .redeem_pairing("p1", &session("s1", 2_000))
        .await
        .unwrap()
        .expect("the link signs in");
    assert_eq!(
        (
            signed_in.kind,
            signed_in.name.as_str(),
            signed_in.created_by.as_str()
        ),
        (TokenKind::Session, "phone", "phone")
    );
    assert_eq!(
        store
            .active_token(TokenKind::Session, "s1", 3_000)
            .await
            .unwrap(),
        Some(signed_in.clone())
    );
    assert_eq!(
        store
            .active_token(TokenKind::Session, "s1", 102_000)
            .await
            .unwrap(),
        None,
        "expired"
    );
    assert!(
        store
            .redeem_pairing("p1", &session("s2", 2_500))
            .await
            .unwrap()
            .is_none(),
        "a link works once"
    );
    store
        .create_token(&link("tablet", "p2", 10_000))
        .await
        .unwrap();
    assert!(
        store
            .redeem_pairing("p2", &session("s3", 10_000))
            .await
            .unwrap()
            .is_none(),
        "a link works until it expires"
    );
    // An expired link's name is free again: its row ends as it expired.
    let again = NewToken {
        at: 11_000,
        ..link("tablet", "p3", 20_000)
    };
    store.create_token(&again).await.unwrap();
    let tablets: Vec<_> = store
        .tokens()
        .await
        .unwrap()
        .into_iter()
        .filter(|t| t.name == "tablet")
        .map(|t| t.revoked_at)
        .collect();
    assert_eq!(tablets, [Some(10_000), None]);
    // A session signed out by its secret, not its name.
    let signed_out = store
        .revoke_token(TokenKind::Session, TokenKey::Sha256("s1"), &ACTOR, 4_000)
        .await
        .unwrap();
    assert_eq!(signed_out.map(|t| t.name), Some("phone".to_owned()));
    let audit: Vec<(String, Value)> = store
        .audit(None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.kind, e.data))
        .collect();
    assert_eq!(
        audit,
        [
            (
                "token-created".to_owned(),
                json!({"token": "phone", "kind": "pairing"})
            ),
            ("token-created".to_owned(), json!({"token": "phone"})),
            (
                "token-revoked".to_owned(),
                json!({"token": "phone", "kind": "pairing"})
            ),
            (
                "token-created".to_owned(),
                json!({"token": "phone", "kind": "session"})
            ),
            (
                "token-created".to_owned(),
                json!({"token": "tablet", "kind": "pairing"})
            ),
            (
                "token-created".to_owned(),
                json!({"token": "tablet", "kind": "pairing"})
            ),
            (
                "token-revoked".to_owned(),
                json!({"token": "phone", "kind": "session"})
            ),
        ]
    );
}
