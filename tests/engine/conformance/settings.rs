//! Store-wide records: settings, and API tokens created, found by hash and revoked.

use super::*;

on_both_stores!(
    settings_round_trip,
    tokens_are_created_found_by_hash_and_revoked,
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
        name,
        sha256,
        by: &ACTOR,
        at,
    };
    let made = store.create_token(&new("ci", "aa11", 1)).await.unwrap();
    assert_eq!((made.name.as_str(), made.revoked_at), ("ci", None));
    let err = store.create_token(&new("ci", "bb22", 2)).await.unwrap_err();
    assert!(matches!(err, StoreError::TokenExists(_)), "{err}");
    assert_eq!(store.active_token("aa11").await.unwrap(), Some(made));
    assert_eq!(
        store.active_token("aa1").await.unwrap(),
        None,
        "exact hashes only"
    );
    let revoked = store.revoke_token("ci", &ACTOR, 3).await.unwrap();
    assert_eq!(revoked.revoked_at, Some(3));
    assert_eq!(store.active_token("aa11").await.unwrap(), None);
    let err = store.revoke_token("ci", &ACTOR, 4).await.unwrap_err();
    assert!(matches!(err, StoreError::UnknownToken(_)), "{err}");
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
