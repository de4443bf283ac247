//! Comments resolved and reopened, and the audit trail's hash chain over them.

use super::*;

on_both_stores!(comments_are_resolved_and_reopened_and_the_audit_chain_holds);

async fn comments_are_resolved_and_reopened_and_the_audit_chain_holds(location: StoreLocation) {
    let store = store_with_run(&location, "r").await;
    open_items(&*store, &[plan_item("c1", "# A\n\nline two\nline three\n")]).await;
    let revision = store.revisions(Some("r")).await.unwrap().remove(0);
    let comment = store
        .add_comment(&NewComment {
            run_id: "r",
            revision_id: revision.id,
            revision_sha: &revision.sha256,
            line_start: 3,
            line_end: 4,
            quote: "line two\nline three",
            body: "Say which lines",
            by: &ACTOR,
            at: 3_000,
        })
        .await
        .unwrap();
    assert_eq!((comment.line_start, comment.line_end), (3, 4));
    let resolved = store
        .set_comment_resolved(comment.id, true, &ACTOR, 3_100)
        .await
        .unwrap();
    assert_eq!(resolved.resolved_by.as_deref(), Some("ana"));
    // Resolving again changes nothing (and writes no audit entry).
    store
        .set_comment_resolved(comment.id, true, &ACTOR, 3_200)
        .await
        .unwrap();
    let reopened = store
        .set_comment_resolved(comment.id, false, &ACTOR, 3_300)
        .await
        .unwrap();
    assert_eq!(reopened.resolved_at, None);
    assert_eq!(store.comments("r").await.unwrap(), vec![reopened]);
    assert!(matches!(
        store
            .set_comment_resolved(999, true, &ACTOR, 1)
            .await
            .unwrap_err(),
        StoreError::UnknownComment(999)
    ));
    store
        .append_audit(&NewAudit {
            run_id: "r",
            kind: AuditKind::Answered,
            revision_sha: None,
            data: json!({"text": "ünïcode \"quoted\""}),
            by: &ACTOR,
            at: 4_000,
        })
        .await
        .unwrap();
    let trail = store.audit(None).await.unwrap();
    assert_eq!(
        trail.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(),
        [
            "submitted",
            "commented",
            "comment-resolved",
            "comment-reopened",
            "answered"
        ]
    );
    let mut prev = String::new();
    for entry in &trail {
        assert_eq!(
            entry.prev_hash, prev,
            "entry {} links to the one before",
            entry.id
        );
        assert_eq!(
            entry.expected_hash(),
            entry.hash,
            "entry {} hashes its fields",
            entry.id
        );
        prev = entry.hash.clone();
    }
}
