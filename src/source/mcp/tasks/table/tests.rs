//! The task table's lifecycle, driven with work that waits for an answer or its stop.

use super::super::{INVALID_PARAMS, POLL_EVERY};
use super::*;

fn owner(principal: &str, session: &str) -> Owner {
    Owner {
        principal: principal.into(),
        session: Some(session.into()),
    }
}

/// Work that waits for a value or for its stop; what it answered, or that it stopped.
fn waiting_work(answer: oneshot::Receiver<Value>, stopped: oneshot::Sender<()>) -> Work {
    Box::new(move |stop| {
        Box::pin(async move {
            tokio::select! {
                Ok(value) = answer => value,
                () = stop => {
                    let _ = stopped.send(());
                    json!({"content": [{"type": "text", "text": "stopped"}], "isError": true})
                }
            }
        })
    })
}

fn task_id_of(created: &Value) -> Value {
    created["task"]["taskId"].clone()
}

#[tokio::test]
async fn a_task_is_its_clients_alone_and_gives_its_result_once_done() {
    let tasks = Tasks::new(Duration::from_millis(300), None);
    let mine = owner("laptop", "s1");
    let (answer, answer_rx) = oneshot::channel();
    let (stopped_tx, _stopped) = oneshot::channel();
    let created = tasks
        .create(
            mine.clone(),
            &json!({}),
            waiting_work(answer_rx, stopped_tx),
        )
        .unwrap();
    let id = task_id_of(&created);
    assert_eq!(id.as_str().unwrap().len(), 32);
    assert_eq!(created["task"]["status"], "working");
    assert_eq!(created["task"]["ttl"], 86_400_000);
    assert_eq!(created["task"]["pollInterval"], 300);
    assert!(created["task"]["createdAt"]
        .as_str()
        .unwrap()
        .ends_with('Z'));

    for stranger in [owner("laptop", "s2"), owner("ci", "s1")] {
        assert_eq!(tasks.get(&stranger, &id), Err(RpcError::not_found()));
        assert_eq!(
            tasks.cancel(&stranger, &id).await,
            Err(RpcError::not_found())
        );
        assert_eq!(
            tasks.list(&stranger, &json!({})).unwrap(),
            json!({"tasks": []})
        );
    }
    assert_eq!(tasks.get(&mine, &json!("nope")), Err(RpcError::not_found()));
    assert_eq!(
        tasks.get(&mine, &json!(7)).unwrap_err().code,
        INVALID_PARAMS
    );
    assert_eq!(
        tasks.list(&mine, &json!({})).unwrap()["tasks"][0]["taskId"],
        id
    );

    let waiting = {
        let (tasks, mine, id) = (tasks.clone(), mine.clone(), id.clone());
        tokio::spawn(async move { tasks.result(&mine, &id).await })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(
        !waiting.is_finished(),
        "tasks/result waits for the decision"
    );
    answer
        .send(json!({"content": [{"type": "text", "text": "{}"}], "isError": false}))
        .unwrap();
    let result = waiting.await.unwrap().unwrap();
    assert_eq!(result["_meta"][RELATED_TASK]["taskId"], id);
    assert_eq!(tasks.get(&mine, &id).unwrap()["status"], "completed");
    let refused = tasks.cancel(&mine, &id).await.unwrap_err();
    assert_eq!(refused.code, INVALID_PARAMS, "{refused:?}");
    tasks.idle().await;
}

#[tokio::test]
async fn cancelling_expiring_or_ending_the_session_stops_the_work() {
    let tasks = Tasks::new(POLL_EVERY, None);
    let mine = owner("stdio", "s");
    let start = |task: Value| {
        let (answer, answer_rx) = oneshot::channel::<Value>();
        let (stopped_tx, stopped) = oneshot::channel();
        let created = tasks
            .create(mine.clone(), &task, waiting_work(answer_rx, stopped_tx))
            .unwrap();
        (task_id_of(&created), stopped, answer)
    };

    let (id, stopped, _answer) = start(json!({"ttl": 60_000}));
    let cancelled = tasks.cancel(&mine, &id).await.unwrap();
    assert_eq!(cancelled["status"], "cancelled");
    assert!(
        stopped.await.is_ok(),
        "the work was stopped before the answer"
    );
    assert_eq!(tasks.get(&mine, &id).unwrap()["status"], "cancelled");
    let result = tasks.result(&mine, &id).await.unwrap();
    assert_eq!(result["isError"], true);

    let (id, stopped, _answer) = start(json!({"ttl": 0}));
    assert_eq!(
        tasks.get(&mine, &id).unwrap()["ttl"],
        1000,
        "at least a second"
    );
    tokio::time::timeout(Duration::from_secs(5), stopped)
        .await
        .expect("an expired task's work stops")
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(tasks.get(&mine, &id), Err(RpcError::not_found()));

    let (_, stopped, _answer) = start(json!({"ttl": null}));
    assert_eq!(
        tasks.end_session(&mine),
        2,
        "the cancelled one and this one"
    );
    tokio::time::timeout(Duration::from_secs(5), stopped)
        .await
        .expect("a forgotten task's work stops")
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), tasks.idle())
        .await
        .unwrap();

    for bad in [json!("soon"), json!({"ttl": "1h"}), json!({"ttl": -1})] {
        let (_answer, answer_rx) = oneshot::channel::<Value>();
        let (stopped_tx, _stopped) = oneshot::channel();
        let refused = tasks
            .create(mine.clone(), &bad, waiting_work(answer_rx, stopped_tx))
            .unwrap_err();
        assert_eq!(refused.code, INVALID_PARAMS, "{bad}");
    }
}

#[tokio::test]
async fn a_client_holds_a_bounded_number_of_tasks() {
    let tasks = Tasks::new(POLL_EVERY, Some(Duration::from_secs(3600)));
    let mut answers = Vec::new();
    for n in 0..MAX_TASKS {
        let (answer, answer_rx) = oneshot::channel::<Value>();
        let (stopped_tx, _stopped) = oneshot::channel();
        // Spread over sessions of one token: the limit is the token's.
        let created = tasks.create(
            owner("laptop", &format!("s{}", n % 3)),
            &json!({}),
            waiting_work(answer_rx, stopped_tx),
        );
        assert!(created.is_ok(), "{n}");
        answers.push(answer);
    }
    let work = || {
        let (_answer, answer_rx) = oneshot::channel::<Value>();
        let (stopped_tx, _stopped) = oneshot::channel();
        waiting_work(answer_rx, stopped_tx)
    };
    let refused = tasks
        .create(owner("laptop", "s9"), &json!({}), work())
        .unwrap_err();
    assert_eq!(refused.code, INVALID_REQUEST);
    // Refused calls under new sessions leave nothing behind them.
    for n in 0..100 {
        let session = format!("new{n}");
        assert!(tasks
            .create(owner("laptop", &session), &json!({}), work())
            .is_err());
    }
    let liveness = tasks.liveness.as_ref().unwrap();
    assert_eq!(
        liveness.owners(),
        3,
        "the sessions that hold tasks, no more"
    );
    assert!(tasks.create(owner("ci", "s"), &json!({}), work()).is_ok());
    // A finished task makes room.
    let first = answers.remove(0);
    first
        .send(json!({"content": [], "isError": false}))
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(tasks
        .create(owner("laptop", "s9"), &json!({}), work())
        .is_ok());
}

#[tokio::test]
async fn a_silent_clients_work_stops_and_its_task_says_why() {
    let silence = Duration::from_millis(300);
    let tasks = Tasks::new(Duration::from_millis(50), Some(silence));
    let (quiet, busy) = (owner("laptop", "quiet"), owner("laptop", "busy"));
    let start = |owner: &Owner| {
        let (answer, answer_rx) = oneshot::channel::<Value>();
        let (stopped_tx, stopped) = oneshot::channel();
        let created = tasks
            .create(
                owner.clone(),
                &json!({}),
                waiting_work(answer_rx, stopped_tx),
            )
            .unwrap();
        (task_id_of(&created), created, stopped, answer)
    };
    let (quiet_id, created, stopped, _answer) = start(&quiet);
    let said = created["task"]["statusMessage"].as_str().unwrap();
    assert!(said.contains("every 0.3 s"), "{said}");
    let (busy_id, _, mut busy_stopped, busy_answer) = start(&busy);

    let started = Instant::now();
    for _ in 0..12 {
        tokio::time::sleep(silence / 4).await;
        tasks.touch(&busy);
    }
    assert!(stopped.await.is_ok(), "the quiet client's work stopped");
    assert!(started.elapsed() >= silence);
    assert!(busy_stopped.try_recv().is_err(), "the busy one's goes on");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let got = tasks.get(&quiet, &quiet_id).unwrap();
    assert_eq!(got["status"], "failed", "{got}");
    assert!(
        got["statusMessage"]
            .as_str()
            .unwrap()
            .contains("no request from this client for 0.3 s"),
        "{got}"
    );

    // A result waited on keeps its client there; an answer completes the task as usual.
    let waiting = {
        let (tasks, busy, id) = (tasks.clone(), busy.clone(), busy_id.clone());
        tokio::spawn(async move { tasks.result(&busy, &id).await })
    };
    tokio::time::sleep(silence * 3).await;
    assert!(busy_stopped.try_recv().is_err(), "waiting on tasks/result");
    busy_answer
        .send(json!({"content": [], "isError": false}))
        .unwrap();
    assert_eq!(waiting.await.unwrap().unwrap()["isError"], false);
    assert_eq!(tasks.get(&busy, &busy_id).unwrap()["status"], "completed");
}
