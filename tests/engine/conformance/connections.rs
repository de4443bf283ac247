//! Several connections to one store: another's commit heard, migrations run once.

use std::time::Duration;

use futures::StreamExt;

use super::*;

on_both_stores!(
    another_connections_commit_is_heard,
    a_store_opened_twice_is_migrated_once,
);

async fn another_connections_commit_is_heard(location: StoreLocation) {
    let watcher = location.open().await.unwrap();
    let mut changes = watcher.changes();
    // The first yield is "look now"; then only commits wake the stream.
    tokio::time::timeout(Duration::from_secs(5), changes.next())
        .await
        .expect("a stream yields at once")
        .unwrap();
    // Let the watcher settle (SQLite polls; PostgreSQL subscribes).
    tokio::time::sleep(Duration::from_millis(600)).await;
    while tokio::time::timeout(Duration::from_millis(50), changes.next())
        .await
        .is_ok()
    {}
    let writer = location.open().await.unwrap();
    writer.set_setting("k", Some("v"), 1).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), changes.next())
        .await
        .expect("another connection's commit is heard within seconds")
        .unwrap();
}

async fn a_store_opened_twice_is_migrated_once(location: StoreLocation) {
    let (a, b) = tokio::join!(location.open(), location.open());
    let (a, b) = (a.unwrap(), b.unwrap());
    a.set_setting("k", Some("a"), 1).await.unwrap();
    assert_eq!(b.setting("k").await.unwrap().as_deref(), Some("a"));
    drop((a, b));
    let again = location.open().await.unwrap();
    assert_eq!(again.setting("k").await.unwrap().as_deref(), Some("a"));
}
