//! The same moves on both stores, compared record by record.

use super::*;

/// The same moves on both stores leave the same records: every audit entry (so the same hash
/// chain, byte for byte), every event, revision and comment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_stores_record_the_same_moves_identically() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = same_moves(StoreLocation::Sqlite(dir.path().to_owned())).await;
    let postgres = same_moves(StoreLocation::postgres(crate::pg::database())).await;
    assert_eq!(sqlite.0, postgres.0, "audit trails differ");
    assert_eq!(sqlite.1, postgres.1, "event logs differ");
    assert_eq!(sqlite.2, postgres.2, "revisions differ");
    assert_eq!(sqlite.3, postgres.3, "comments differ");
}

async fn same_moves(
    location: StoreLocation,
) -> (
    Vec<AuditRow>,
    Vec<EventRow>,
    Vec<RevisionRow>,
    Vec<CommentRow>,
) {
    let store = store_with_run(&location, "r").await;
    open_items(
        &*store,
        &[
            plan_item("c1", "# Cache\n\nAdd a cache.\n"),
            plan_item("c2", "# Index\n\nAdd an index.\n"),
        ],
    )
    .await;
    let first = store.revisions(Some("r")).await.unwrap().remove(0);
    let comment = store
        .add_comment(&NewComment {
            run_id: "r",
            revision_id: first.id,
            revision_sha: &first.sha256,
            line_start: 3,
            line_end: 3,
            quote: "Add a cache.",
            body: "Which cache?",
            by: &ACTOR,
            at: 2_000,
        })
        .await
        .unwrap();
    store
        .set_comment_resolved(comment.id, true, &ACTOR, 2_100)
        .await
        .unwrap();
    let edited = plan("# Cache\n\nAdd an LRU cache.\n");
    store
        .edit_plan(&NewEdit {
            run_id: "r",
            tool_call_id: "c1",
            expect_sha: &first.sha256,
            plan: &edited,
            by: &ACTOR,
            at: 2_200,
        })
        .await
        .unwrap();
    store
        .record_decision(&decision("c1", Action::Approved, Some(&edited.sha256)))
        .await
        .unwrap();
    store
        .record_decision(&NewDecision {
            feedback: Some("Too broad"),
            ..decision("c2", Action::Rejected, None)
        })
        .await
        .unwrap();
    store
        .commit(&Commit {
            mode: "build",
            ..commit("r", 2, 1, &[], &[])
        })
        .await
        .unwrap();
    store
        .create_token(&NewToken {
            kind: TokenKind::Agent,
            name: "ci",
            sha256: "ab",
            by: &ACTOR,
            at: 3_000,
            expires_at: None,
        })
        .await
        .unwrap();
    let mut events = store.events("r").await.unwrap();
    // Event ids are the stores' own counters; what they say must match.
    for event in &mut events {
        event.id = 0;
    }
    (
        store.audit(None).await.unwrap(),
        events,
        store.revisions(None).await.unwrap(),
        store.comments("r").await.unwrap(),
    )
}
