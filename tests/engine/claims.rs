//! One driver per run: a claim is one atomic statement with a lease; a refused claim leaves the
//! holder alone; a crashed holder on this machine is taken over at once, a live one elsewhere
//! only when its lease has run out.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::http_server::{fixture, Part, ReplayServer, Reply};
use crate::support::*;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn a_refused_claim_leaves_the_driver_alone_and_a_killed_driver_is_taken_over() {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    let text = fixture("openai", "text");
    server.push(Reply::sse_then(&text, 1, Part::Stall));
    let spec = format!("ollama:m@{}/v1", server.url());
    let mut driver = fx
        .command(&["--json", "run", "--model", &spec, "Say hello"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(driver.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let run = serde_json::from_str::<serde_json::Value>(&first).unwrap()["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    let until = Instant::now() + Duration::from_secs(20);
    while server.requests().is_empty() {
        assert!(Instant::now() < until, "the driver never called the model");
        std::thread::sleep(Duration::from_millis(20));
    }

    let who = format!("is being run by process {}", driver.id());
    for attempt in [
        &["resume", run.as_str()][..],
        &["send", &run, "hello?"],
        &["resume", &run],
    ] {
        let err = fx.refused(attempt);
        assert!(
            err.contains(&who),
            "{attempt:?} is refused while the driver works, and a refusal never clears the \
             holder: {err}"
        );
    }

    driver.kill().unwrap();
    driver.wait().unwrap();
    server.push(Reply::sse(&text));
    let resumed = fx.stream(&["resume", &run]);
    assert_eq!(
        *types(&resumed).last().unwrap(),
        "finish",
        "the killed driver's run is taken over at once: {resumed:?}"
    );
}

#[test]
fn a_holder_elsewhere_keeps_the_run_until_its_lease_runs_out() {
    if sqlite_only("a_holder_elsewhere_keeps_the_run_until_its_lease_runs_out") {
        return;
    }
    let fx = Fixture::new(json!([]));
    // No turns: the run fails at once, and `resume` retries it.
    let (run, _) = {
        let model = format!("scripted:{}", fx.script.display());
        let out = fx
            .command(&["--json", "run", "--model", &model, "Add a cache"])
            .output()
            .unwrap();
        (
            chunks(&out.stdout)[0]["runId"].as_str().unwrap().to_owned(),
            (),
        )
    };
    let db = rusqlite::Connection::open(fx.data.join("plandesk.db")).unwrap();
    let hold = |until: i64| {
        db.execute(
            "UPDATE runs SET holder = 'build-server-7/4242/abc', lease_until = ?2 WHERE id = ?1",
            rusqlite::params![run, until],
        )
        .unwrap();
    };

    hold(now_ms() + 60_000);
    let err = fx.refused(&["resume", &run]);
    assert!(
        err.contains("is being run by process 4242 on build-server-7"),
        "a live lease elsewhere is respected: {err}"
    );

    hold(now_ms() - 1);
    let out = fx.command(&["resume", &run]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("is being run by"),
        "an expired lease is taken over: {stderr}"
    );
    let kinds: Vec<String> = events(&fx.store, &run)
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert!(kinds.contains(&"retry".to_owned()), "{kinds:?}");
    let holder: Option<String> = db
        .query_row("SELECT holder FROM runs WHERE id = ?1", [&run], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(holder, None, "the driver gave the run back when it stopped");
}
