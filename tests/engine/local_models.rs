//! Local OpenAI-compatible servers (Ollama and friends), which model a run uses by default, and
//! cancelling a run mid-answer.

use std::time::Duration;

use plandesk::{ChunkKind, Engine, StartOptions};
use serde_json::{json, Value};

use crate::http_server::{fixture, Part, ReplayServer, Reply};
use crate::support::{chunks, types, Fixture};

#[test]
fn ollama_plan_approve_finish() {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    server.push(Reply::sse(&fixture("openai", "ollama_submit")));
    let host = format!("127.0.0.1:{}", server.port());
    let run = |args: &[&str]| {
        fx.command(args)
            .env("OLLAMA_HOST", &host)
            // An OpenAI key in the environment must never be sent to a local server.
            .env("OPENAI_API_KEY", "sk-not-for-ollama")
            .output()
            .unwrap()
    };
    let out = run(&[
        "--json",
        "run",
        "--model",
        "ollama:llama3.2",
        "Add a greeting",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = chunks(&out.stdout);
    assert_eq!(
        types(&first)[first.len() - 3..],
        ["tool-call", "tool-call", "tool-call-suspended"]
    );
    let suspended = &first.last().unwrap()["payload"]["suspendPayload"];
    assert_eq!(suspended["title"], "Greeting module");
    let run_id = first[0]["runId"].as_str().unwrap();

    server.push(Reply::sse(&fixture("openai", "ollama_after")));
    let out = run(&["--json", "approve", run_id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let second = chunks(&out.stdout);
    assert_eq!(second.last().unwrap()["type"], "finish");
    let said: String = second
        .iter()
        .filter(|c| c["type"] == "text-delta")
        .map(|c| c["payload"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(said, "Approved. Starting on the greeting.");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.body["model"], "llama3.2");
        assert!(
            !request.headers.contains_key("authorization"),
            "no key goes to Ollama"
        );
    }
    let runs: Value = serde_json::from_slice(&fx.ok(&["--json", "runs"]).stdout).unwrap();
    assert_eq!(
        runs[0]["model"],
        format!("ollama:llama3.2@http://{host}/v1"),
        "OLLAMA_HOST is recorded with the run"
    );
    assert_eq!(runs[0]["status"], "finished");
}

/// `plandesk model` with the given environment: (spec, reason).
fn default_model(fx: &Fixture, env: &[(&str, &str)]) -> (String, String) {
    let mut cmd = fx.command(&["--json", "model"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        v["model"].as_str().unwrap().to_owned(),
        v["reason"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn the_default_model_is_the_first_configured() {
    let fx = Fixture::new(json!([]));
    assert_eq!(default_model(&fx, &[]).0, "demo", "nothing configured");

    let ollama = ReplayServer::start();
    let host = format!("127.0.0.1:{}", ollama.port());
    ollama.push(Reply::json(
        200,
        &json!({"object": "list", "data": [{"id": "qwen2.5-coder:7b", "object": "model", "owned_by": "library"}]}),
    ));
    let (spec, reason) = default_model(&fx, &[("OLLAMA_HOST", &host)]);
    assert_eq!(spec, format!("ollama:qwen2.5-coder:7b@http://{host}/v1"));
    assert!(reason.contains("local Ollama"), "{reason}");
    assert_eq!(ollama.requests()[0].path, "/v1/models");

    // A key in the environment comes before a local server (which is not even asked).
    let (spec, reason) = default_model(
        &fx,
        &[("OLLAMA_HOST", &host), ("ANTHROPIC_API_KEY", "sk-ant-x")],
    );
    assert_eq!(spec, "anthropic:claude-sonnet-4-5");
    assert_eq!(reason, "ANTHROPIC_API_KEY is set");
    assert_eq!(ollama.requests().len(), 1);
    let (spec, _) = default_model(
        &fx,
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-x"),
            ("OPENAI_API_KEY", "sk-x"),
        ],
    );
    assert_eq!(spec, "openai:gpt-4.1", "OpenAI first when both are set");

    // A saved choice comes first of all, and `clear` forgets it.
    fx.ok(&["model", "set", "ollama:llama3.2"]);
    assert_eq!(
        default_model(&fx, &[("OPENAI_API_KEY", "sk-x")]).0,
        "ollama:llama3.2"
    );
    let bad = fx.refused(&["model", "set", "gpt-4"]);
    assert!(bad.contains("unknown model `gpt-4`"), "{bad}");
    fx.ok(&["model", "clear"]);
    assert_eq!(default_model(&fx, &[]).0, "demo");

    // `run` without --model uses the default and says which.
    let out = fx
        .command(&["--json", "run", "Fix the bug"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("model demo (no provider is configured"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn cancelling_a_run_closes_the_http_stream_and_it_can_continue() {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    server.push(Reply::sse_then(&fixture("openai", "text"), 3, Part::Stall));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let engine = runtime.block_on(Engine::open_at(&fx.store, "cli")).unwrap();
    let spec = format!("openai:test-model@{}/v1", server.url());
    let run_id = runtime.block_on(async {
        let mut stream = engine.stream(
            "Say hello".into(),
            StartOptions::new(fx.workspace.clone(), spec),
        );
        // Wait until the answer is streaming, then cancel.
        while let Some(chunk) = stream.next_chunk().await {
            if matches!(chunk.kind, ChunkKind::TextDelta(_)) {
                break;
            }
        }
        let run_id = stream.run_id.clone();
        stream.cancel().await;
        run_id
    });
    assert!(
        server.wait_client_closed(Duration::from_secs(10)),
        "cancelling closed the HTTP stream"
    );
    // The run kept its last committed state and carries on when asked.
    server.push(Reply::sse(&fixture("openai", "text")));
    let report = runtime
        .block_on(engine.continue_run(&run_id, &mut |_| {}))
        .unwrap();
    assert_eq!(report.status, plandesk::RunStatus::Finished);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].body, requests[0].body,
        "the same model call again"
    );
}
