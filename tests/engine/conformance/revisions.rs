//! Revisions: listed, found by hash and words, read a page at a time, and too big to index.

use super::*;

on_both_stores!(
    revisions_list_with_their_decisions_and_are_found_by_hash_and_words,
    a_listing_is_read_a_page_at_a_time_whatever_its_filter,
    a_plan_too_big_for_a_word_index_is_kept_and_found,
    a_revised_plan_is_stored_as_what_changed_and_read_whole,
);

async fn revisions_list_with_their_decisions_and_are_found_by_hash_and_words(
    location: StoreLocation,
) {
    let store = store_with_run(&location, "r").await;
    let bodies = [
        "# Crème brûlée service\n\nAdd a retry loop to the HTTP client.\n",
        "# Cache\n\nThe client retries; add a loop.\n",
        "# Élan\n\nNothing to see.\n",
        "# データベース移行\n\nКэш для мой сервис; 데이터베이스 백업, Ελληνικά.\n",
    ];
    let items: Vec<OpenItem> = bodies
        .iter()
        .enumerate()
        .map(|(i, body)| plan_item(&format!("c{i}"), body))
        .collect();
    open_items(&*store, &items).await;
    store
        .record_decision(&decision("c0", Action::Rejected, None))
        .await
        .unwrap();
    let all = store.revisions(Some("r")).await.unwrap();
    assert_eq!(all.len(), 4);
    assert_eq!(
        all.iter().map(|r| r.revision_no).collect::<Vec<_>>(),
        [1, 2, 3, 4],
        "numbered per plan file"
    );
    assert_eq!(
        all[0].decision.as_ref().map(|d| d.action),
        Some(Action::Rejected)
    );
    assert!(!all[0].open && all[1].open && all[2].open);
    assert_eq!(all[1].prompt, "make it faster");
    assert_eq!(store.revision(all[2].id).await.unwrap(), all[2]);
    assert!(matches!(
        store.revision(999_999).await.unwrap_err(),
        StoreError::UnknownRevision(999_999)
    ));
    let by_sha = store.revisions_by_sha(&all[1].sha256[..6]).await.unwrap();
    assert_eq!(by_sha, vec![all[1].clone()]);
    assert!(store.revisions_by_sha("zzzz").await.unwrap().is_empty());

    let search = |words: &[&str]| {
        let store = store.clone();
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        async move {
            store
                .search_revisions(None, &words)
                .await
                .unwrap()
                .iter()
                .map(|r| r.tool_call_id.clone())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        search(&["retry", "lo"]).await,
        ["c0"],
        "words in a row, last a prefix"
    );
    assert_eq!(search(&["retr"]).await, ["c0", "c1"]);
    assert_eq!(
        search(&["creme", "BRULEE"]).await,
        ["c0"],
        "accents and case ignored"
    );
    assert_eq!(search(&["élan"]).await, ["c2"], "the title counts");
    for words in [
        &["データベース"][..],
        &["데이터베이스"],
        &["мой", "сер"],
        &["ελληνικά"],
    ] {
        assert_eq!(search(words).await, ["c3"], "{words:?}: any script");
    }
    assert!(search(&["loop", "retry"]).await.is_empty(), "order matters");
    assert!(
        search(&["etry"]).await.is_empty(),
        "a word's start, not its middle"
    );
    assert!(search(&["\"'*:&|!()"]).await.is_empty(), "no search syntax");
    assert_eq!(
        store
            .search_revisions(Some("other"), &["retry".to_string()])
            .await
            .unwrap(),
        vec![]
    );
    // A listing is the same revisions without their bodies, and without their decisions'
    // resume data (an engine run's echoes the whole plan).
    assert_eq!(
        all[0].decision.as_ref().map(|d| &d.resume_data),
        Some(&json!({"approved": true}))
    );
    let listed_form = |r: &RevisionRow| RevisionRow {
        body: String::new(),
        decision: r.decision.clone().map(|d| DecisionRow {
            resume_data: serde_json::Value::Null,
            ..d
        }),
        ..r.clone()
    };
    let of_run = Listing {
        run_id: Some("r"),
        ..Listing::default()
    };
    let listed = store.revision_list(&of_run).await.unwrap();
    assert_eq!(
        listed,
        all.iter().rev().map(listed_form).collect::<Vec<_>>()
    );
    let words = vec!["retr".to_string()];
    let searched = Listing {
        words: &words,
        ..Listing::default()
    };
    let listed = store.revision_list(&searched).await.unwrap();
    assert_eq!(
        listed,
        all[..2].iter().rev().map(listed_form).collect::<Vec<_>>()
    );
    let hangul = vec!["데이터".to_string()];
    let listing = Listing {
        words: &hangul,
        ..Listing::default()
    };
    assert_eq!(
        store.revision_list(&listing).await.unwrap(),
        vec![listed_form(&all[3])],
        "a listing finds any script too"
    );
    let other_run = Listing {
        run_id: Some("other"),
        ..searched
    };
    assert_eq!(store.revision_list(&other_run).await.unwrap(), vec![]);
}

/// Every page of `listing`, `limit` at a time, each starting after the last one's end, put
/// together.
async fn every_page(store: &dyn Store, listing: Listing<'_>, limit: usize) -> Vec<RevisionRow> {
    let mut all: Vec<RevisionRow> = Vec::new();
    loop {
        let page = store
            .revision_list(&Listing {
                before: all.last().map(|r| r.id),
                limit: Some(limit),
                ..listing
            })
            .await
            .unwrap();
        assert!(page.len() <= limit, "{} on a page of {limit}", page.len());
        let last = page.len() < limit;
        all.extend(page);
        if last {
            return all;
        }
    }
}

/// A listing read a page at a time (newest first, the next page after the last one's end) is
/// the whole listing, whatever it is filtered by: a state, words (PostgreSQL reads the words'
/// candidates in batches and keeps those that have them in a row), a run. A page is full while
/// there are more.
async fn a_listing_is_read_a_page_at_a_time_whatever_its_filter(location: StoreLocation) {
    let store = store_with_run(&location, "r").await;
    // 450 plans: a third say "retry loop", the rest have both words but not in a row (so
    // that PostgreSQL's index finds candidates that are not hits, more than a batch of them).
    let items: Vec<OpenItem> = (0..450)
        .map(|i| {
            let words = if i % 3 == 0 {
                "a retry loop"
            } else {
                "loop, then retry"
            };
            plan_item(
                &format!("c{i}"),
                &format!("# Plan {i}\n\nAdd {words} to part {i}.\n"),
            )
        })
        .collect();
    open_items(&*store, &items).await;
    // Every action on some; then some of the undecided closed (superseded), the rest open.
    for (i, item) in items.iter().enumerate().filter(|(i, _)| i % 5 != 0) {
        let action = Action::ALL[i % Action::ALL.len()];
        store
            .record_decision(&decision(&item.tool_call_id, action, None))
            .await
            .unwrap();
    }
    let still_open: Vec<OpenItem> = items.iter().step_by(10).cloned().collect();
    store
        .commit(&commit("r", 2, 1, &[], &still_open))
        .await
        .unwrap();

    let whole = store.revision_list(&Listing::default()).await.unwrap();
    assert_eq!(whole.len(), 450);
    assert!(whole.windows(2).all(|w| w[0].id > w[1].id), "newest first");
    assert_eq!(every_page(&*store, Listing::default(), 7).await, whole);
    assert_eq!(every_page(&*store, Listing::default(), 450).await, whole);

    let mut kinds: Vec<States> = Action::ALL
        .iter()
        .map(|&action| States {
            actions: vec![action],
            ..States::default()
        })
        .collect();
    kinds.push(States {
        undecided_open: true,
        ..States::default()
    });
    kinds.push(States {
        undecided_closed: true,
        ..States::default()
    });
    kinds.push(States {
        actions: vec![Action::Rejected, Action::Declined],
        undecided_closed: true,
        ..States::default()
    });
    kinds.push(States::default());
    for states in &kinds {
        let expected: Vec<RevisionRow> = whole
            .iter()
            .filter(|r| match &r.decision {
                Some(d) => states.actions.contains(&d.action),
                None if r.open => states.undecided_open,
                None => states.undecided_closed,
            })
            .cloned()
            .collect();
        assert!(
            !expected.is_empty() || *states == States::default(),
            "{states:?} has revisions to list"
        );
        let listing = Listing {
            states: Some(states),
            ..Listing::default()
        };
        assert_eq!(
            store.revision_list(&listing).await.unwrap(),
            expected,
            "{states:?}"
        );
        assert_eq!(
            every_page(&*store, listing, 7).await,
            expected,
            "{states:?}"
        );
    }

    let words = vec!["retry".to_string(), "lo".to_string()];
    let searched = Listing {
        words: &words,
        ..Listing::default()
    };
    let hits: Vec<RevisionRow> = whole
        .iter()
        .filter(|r| r.tool_call_id[1..].parse::<usize>().unwrap() % 3 == 0)
        .cloned()
        .collect();
    assert_eq!(hits.len(), 150);
    assert_eq!(store.revision_list(&searched).await.unwrap(), hits);
    assert_eq!(every_page(&*store, searched, 7).await, hits);
    // Pages with more hits than PostgreSQL's batch of 200 candidates holds.
    assert_eq!(every_page(&*store, searched, 100).await, hits);
    let approved = States {
        actions: vec![Action::Approved],
        ..States::default()
    };
    let approved_hits = Listing {
        states: Some(&approved),
        ..searched
    };
    let expected: Vec<RevisionRow> = hits
        .iter()
        .filter(|r| {
            r.decision
                .as_ref()
                .is_some_and(|d| d.action == Action::Approved)
        })
        .cloned()
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(every_page(&*store, approved_hits, 4).await, expected);
    // A page sparser than PostgreSQL's batch of candidates: fewer than 10 in each 200.
    let open = States {
        undecided_open: true,
        ..States::default()
    };
    let open_hits = Listing {
        states: Some(&open),
        ..searched
    };
    let expected: Vec<RevisionRow> = hits.iter().filter(|r| r.open).cloned().collect();
    assert_eq!(expected.len(), 15);
    assert_eq!(every_page(&*store, open_hits, 10).await, expected);
    let elsewhere = Listing {
        run_id: Some("other"),
        ..Listing::default()
    };
    assert!(every_page(&*store, elsewhere, 7).await.is_empty());
    let here = Listing {
        run_id: Some("r"),
        ..Listing::default()
    };
    assert_eq!(every_page(&*store, here, 7).await, whole);
}

/// A hostile plan: a megabyte of distinct words and one word longer than any index keeps. It is
/// stored like any other, and a search still finds what is in it (PostgreSQL's tsvector, which
/// has a size limit, indexes part of it and the rest is read word by word).
async fn a_plan_too_big_for_a_word_index_is_kept_and_found(location: StoreLocation) {
    let store = store_with_run(&location, "r").await;
    let long_word = "x".repeat(5_000);
    let mut body = String::from("# Junk\n\n");
    for i in 0..110_000 {
        body.push_str(&format!("w{i:x} "));
    }
    body.push_str(&format!("needle {long_word} end\n"));
    open_items(&*store, &[plan_item("c1", &body)]).await;
    let search = |words: &[&str]| {
        let store = store.clone();
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        async move { store.search_revisions(None, &words).await.unwrap().len() }
    };
    assert_eq!(search(&["w1ad00"]).await, 1, "a word far into the plan");
    assert_eq!(search(&["needle", &long_word, "end"]).await, 1);
    assert_eq!(search(&["needle", "end"]).await, 0, "words in a row only");
    assert_eq!(store.revisions(None).await.unwrap()[0].body, body);
}

/// Integer columns of `sql`'s rows, read past the store.
async fn raw_rows(location: &StoreLocation, sql: &str) -> Vec<Vec<Option<i64>>> {
    match location {
        StoreLocation::Sqlite(dir) => {
            let db = rusqlite::Connection::open(dir.join(DB_FILE)).unwrap();
            let mut statement = db.prepare(sql).unwrap();
            let columns = statement.column_count();
            statement
                .query_map([], |r| (0..columns).map(|i| r.get(i)).collect())
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        }
        StoreLocation::Postgres { url, .. } => crate::support::pg_client(url)
            .await
            .query(sql, &[])
            .await
            .unwrap()
            .iter()
            .map(|r| (0..r.len()).map(|i| r.get(i)).collect())
            .collect(),
    }
}

/// A revised plan is stored as what changed since its file's first revision (itself stored
/// compressed), and every read has it whole: the history, one revision, the open item, a
/// decision's resume data that echoes it; search finds words in what changed and in what did
/// not.
async fn a_revised_plan_is_stored_as_what_changed_and_read_whole(location: StoreLocation) {
    let store = store_with_run(&location, "r").await;
    let first: String = std::iter::once("# Move the cache\n\n".to_owned())
        .chain((0..60).map(|i| format!("{i}. Step {i} moves table t{i} and checks its rows.\n")))
        .collect();
    let second = format!("{first}60. Then the zebra quokka migration runs once more.\n");
    open_items(&*store, &[plan_item("c1", &first)]).await;
    store
        .record_decision(&decision("c1", Action::Rejected, None))
        .await
        .unwrap();
    store
        .commit(&commit("r", 2, 1, &[], &[plan_item("c2", &second)]))
        .await
        .unwrap();
    let open = store.open_items(Some("r")).await.unwrap();
    assert_eq!(open[0].revision.as_ref().map(|r| &r.body), Some(&second));
    let data = json!({"action": "approved", "path": "plans/p.md", "title": "Move the cache",
                      "plan": second});
    store
        .record_decision(&NewDecision {
            resume_data: &data,
            ..decision("c2", Action::Approved, None)
        })
        .await
        .unwrap();

    let all = store.revisions(Some("r")).await.unwrap();
    let bodies: Vec<&str> = all.iter().map(|r| r.body.as_str()).collect();
    assert_eq!(bodies, [&first, &second]);
    assert_eq!(store.revision(all[1].id).await.unwrap(), all[1]);
    assert_eq!(
        store.revisions_by_sha(&all[1].sha256).await.unwrap(),
        vec![all[1].clone()]
    );
    let decided = store.decision("r", "c2").await.unwrap().unwrap();
    assert_eq!(decided.resume_data, data, "the plan it echoes, read whole");
    assert_eq!(
        all[1].decision.as_ref().map(|d| &d.resume_data),
        Some(&data)
    );

    let search = |words: &[&str]| {
        let store = store.clone();
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        async move {
            let found = store.search_revisions(None, &words).await.unwrap();
            let listing = Listing {
                words: &words,
                ..Listing::default()
            };
            let listed = store.revision_list(&listing).await.unwrap();
            assert_eq!(listed.len(), found.len(), "{words:?}: listed as searched");
            found
                .into_iter()
                .map(|r| r.tool_call_id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(search(&["zebra", "quok"]).await, ["c2"], "what changed");
    assert_eq!(search(&["table", "t59", "and"]).await, ["c1", "c2"]);

    let stored = raw_rows(
        &location,
        "SELECT CAST(LENGTH(body) AS BIGINT), CAST(LENGTH(packed) AS BIGINT), packed_against
         FROM plan_revisions ORDER BY id",
    )
    .await;
    assert_eq!(stored[0][..1], [Some(0)], "compressed, no text kept");
    assert!(stored[0][1].unwrap() < first.len() as i64 / 2, "{stored:?}");
    assert_eq!(stored[0][2], None, "the first on its own");
    assert_eq!(stored[1][0], Some(0));
    assert!(stored[1][1].unwrap() < 120, "what changed: {stored:?}");
    assert_eq!(stored[1][2], Some(all[0].id), "against the first");
    let once = raw_rows(
        &location,
        "SELECT CAST(CASE WHEN plan_from_revision THEN 1 ELSE 0 END AS BIGINT)
         FROM decisions WHERE tool_call_id = 'c2'",
    )
    .await;
    assert_eq!(
        once,
        [[Some(1)]],
        "the decided plan is stored once, compressed"
    );
}
