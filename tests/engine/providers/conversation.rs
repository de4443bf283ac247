//! What a provider streams and is sent back: text, tool calls, and a plan that suspends a run.

use crate::http_server::Reply;
use crate::support::types;

use super::*;

provider_tests!(
    plain_text,
    one_tool_call,
    two_parallel_calls,
    submit_plan_suspends_and_resumes,
);

fn plain_text(wire: &Wire) {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    server.push(Reply::sse(&wire.fixture("text")));
    let out = wire.run(&fx, &server);
    assert_ok(&out);
    let chunks = chunks(&out.stdout);
    assert_eq!(
        types(&chunks),
        [
            "start",
            "step-start",
            "text-start",
            "text-delta",
            "text-delta",
            "text-delta",
            "text-end",
            "step-finish",
            "finish"
        ]
    );
    assert_eq!(text(&chunks), "Hello there — I’ll plan first.");
    let finish = chunks.last().unwrap();
    assert_eq!(finish["payload"]["stepResult"]["reason"], "stop");
    assert_eq!(
        finish["payload"]["usage"],
        json!({"inputTokens": 120, "outputTokens": 9}),
        "usage as the server reported it"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    wire.assert_headers(&requests[0]);
    wire.assert_first_request(&requests[0].body);
    assert_no_key_anywhere(&fx, &[&out]);
}

fn one_tool_call(wire: &Wire) {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    server
        .push(Reply::sse(&wire.fixture("tool_call")))
        .push(Reply::sse(&wire.fixture("text")));
    let out = wire.run(&fx, &server);
    assert_ok(&out);
    let chunks = chunks(&out.stdout);
    let id = wire.id("read1");
    let calls = of_type(&chunks, "tool-call");
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0]["payload"],
        json!({"toolCallId": id, "toolName": "read_file", "args": {"path": "src/lib.rs"}}),
        "arguments assembled from their fragments"
    );
    let result = result_of(&chunks, &id);
    assert!(
        result.to_string().contains("pub fn answer() -> u32 { 42 }"),
        "read_file ran: {result}"
    );
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        2,
        "the model is called again with the result"
    );
    let said = if wire.name == "openai" {
        ""
    } else {
        "Reading the library first."
    };
    assert_eq!(
        normalise(wire.conversation(&requests[1].body)),
        normalise(wire.expected_tool_round(
            said,
            &[(&id, "read_file", json!({"path": "src/lib.rs"}))],
            &[(&id, result)]
        ))
    );
}

fn two_parallel_calls(wire: &Wire) {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    server
        .push(Reply::sse(&wire.fixture("parallel")))
        .push(Reply::sse(&wire.fixture("text")));
    let out = wire.run(&fx, &server);
    assert_ok(&out);
    let chunks = chunks(&out.stdout);
    let (a, b) = (wire.id("a"), wire.id("b"));
    let calls: Vec<&Value> = of_type(&chunks, "tool-call")
        .iter()
        .map(|c| &c["payload"])
        .collect();
    assert_eq!(
        calls,
        [
            &json!({"toolCallId": a, "toolName": "read_file", "args": {"path": "src/lib.rs"}}),
            &json!({"toolCallId": b, "toolName": "list_files", "args": {"path": "."}}),
        ]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        normalise(wire.conversation(&requests[1].body)),
        normalise(wire.expected_tool_round(
            "",
            &[
                (&a, "read_file", json!({"path": "src/lib.rs"})),
                (&b, "list_files", json!({"path": "."}))
            ],
            &[(&a, result_of(&chunks, &a)), (&b, result_of(&chunks, &b))]
        )),
        "both calls in one assistant turn, both results back in order"
    );
}

fn submit_plan_suspends_and_resumes(wire: &Wire) {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    server.push(Reply::sse(&wire.fixture("submit_plan")));
    // The base URL comes from the environment when the run starts...
    let start = wire
        .command(
            &fx,
            &[
                "--json",
                "run",
                "--model",
                &format!("{}:test-model", wire.name),
                PROMPT,
            ],
        )
        .env(wire.base_env, format!("{}/v1", server.url()))
        .output()
        .unwrap();
    assert_ok(&start);
    let first = chunks(&start.stdout);
    assert_eq!(
        types(&first)[first.len() - 3..],
        ["tool-call", "tool-call", "tool-call-suspended"],
        "the run suspends on submit_plan"
    );
    let run_id = first[0]["runId"].as_str().unwrap().to_owned();
    let runs: Value = serde_json::from_slice(&fx.ok(&["--json", "runs"]).stdout).unwrap();
    assert_eq!(
        runs[0]["model"],
        format!("{}:test-model@{}/v1", wire.name, server.url()),
        "the run records the model and where it lives"
    );
    assert!(fx.workspace.join(PLAN_PATH).exists(), "write_file ran");

    // ...and a resume in a new process, with the environment gone, goes to the same server.
    server.push(Reply::sse(&wire.fixture("after_approval")));
    let approve = wire
        .command(&fx, &["--json", "approve", &run_id])
        .output()
        .unwrap();
    assert_ok(&approve);
    let resumed = chunks(&approve.stdout);
    assert_eq!(resumed.last().unwrap()["type"], "finish");
    assert_eq!(text(&resumed), "The plan is approved; implementing it now.");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    wire.assert_headers(&requests[1]);
    let (w, s) = (wire.id("w"), wire.id("s"));
    let approved = json!({
        "toolId": "submit_plan",
        "content": "Plan approved. Proceed with implementation following the approved plan.",
        "isError": false,
        "submittedPlan": {
            "title": "Greeting module",
            "path": PLAN_PATH,
            "plan": "Add `greet(name)` to src/lib.rs.\n\n1. Write the function\n2. Test it"
        }
    });
    assert_eq!(result_of(&resumed, &s), &approved);
    let plan = "# Greeting module\n\nAdd `greet(name)` to src/lib.rs.\n\n1. Write the function\n2. Test it\n";
    assert_eq!(
        normalise(wire.conversation(&requests[1].body)),
        normalise(wire.expected_tool_round(
            "I'll write the plan and submit it.",
            &[
                (
                    &w,
                    "write_file",
                    json!({"path": PLAN_PATH, "content": plan})
                ),
                (&s, "submit_plan", json!({"path": PLAN_PATH}))
            ],
            &[(&w, result_of(&resumed, &w)), (&s, &approved)]
        )),
        "the approval goes back as the submit_plan tool result, in the wire's own shape"
    );
    assert_eq!(
        wire.tool_names(&requests[1].body),
        ["read_file", "list_files", "write_file"],
        "approval switched the run to build mode before calling the model"
    );
    assert_no_key_anywhere(&fx, &[&start, &approve]);
}
