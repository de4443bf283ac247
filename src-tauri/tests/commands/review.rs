//! What a review reads: the inbox, a revision and its pages, a run's detail and tool calls.

use super::*;

#[test]
fn inbox_revision_and_a_stale_decision() {
    let fx = fixture();
    let inbox = fx.ok("inbox", json!({}));
    assert_eq!(inbox.as_array().unwrap().len(), 1);
    let item = &inbox[0];
    assert_eq!(item["kind"], "plan");
    assert_eq!(item["title"], "Add a --verbose flag");
    assert_eq!(item["revisionNo"], 1);
    let revision = fx.ok("revision", json!({"id": item["revisionId"]}));
    assert_eq!(revision["status"], "pending");
    assert_eq!(revision["revisionsInThread"], 1);
    let pages: Vec<&str> = revision["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        pages.concat().contains("<h2 data-sourcepos="),
        "rendered, each block with its lines: {pages:?}"
    );
    assert_eq!(
        revision["pageBytes"],
        json!(pages.iter().map(|p| p.len()).collect::<Vec<_>>()),
        "a short plan comes whole"
    );
    assert_eq!(
        fx.ok(
            "revision_pages",
            json!({"id": item["revisionId"], "from": 0})
        ),
        json!(pages),
        "the pages, from the first"
    );
    assert!(
        revision.get("markdown").is_none() && revision.get("sourceHtml").is_none(),
        "the text comes on its own, when asked for"
    );
    let source = fx.ok("revision_source", json!({"id": item["revisionId"]}));
    assert!(source["markdown"]
        .as_str()
        .unwrap()
        .starts_with("# Add a --verbose flag"));
    assert!(source["sourceHtml"].as_str().unwrap().starts_with(
        "<pre class=\"plan-source\"><code><span class=\"line\"># Add a --verbose flag"
    ));

    let stale = fx.refused(
        "decide",
        json!({"request": {"runId": item["runId"], "toolCallId": item["toolCallId"], "approve": true,
                           "revision": "0000000000"}, "onEvent": channel()}),
    );
    assert_eq!(stale["code"], "stale-revision", "{stale}");
    assert!(
        stale["message"].as_str().unwrap().contains("changed"),
        "{stale}"
    );
    assert_eq!(
        fx.ok("inbox", json!({})),
        inbox,
        "a refused decision changes nothing"
    );
}

/// A run read for the window carries long tool arguments and results as previews; opened, a
/// tool call comes whole.
#[test]
fn long_tool_arguments_and_results_come_as_previews_then_whole() {
    let content = "Move a table, then check the counts.\n".repeat(5_000);
    let notes = "A line of notes to read.\n".repeat(4_000);
    let fx = fixture_with(|workspace| {
        std::fs::write(workspace.join("notes.txt"), &notes).unwrap();
        let script = workspace.join("script.json");
        let turns = json!({"turns": [{"toolCalls": [
            {"toolCallId": "read", "toolName": "read_file", "args": {"path": "notes.txt"}},
            {"toolCallId": "write", "toolName": "write_file",
             "args": {"path": ".plandesk/plans/big.md", "content": format!("# Big\n\n{content}")}},
        ]}, {"toolCalls": [
            {"toolCallId": "plan", "toolName": "submit_plan", "args": {"path": ".plandesk/plans/big.md"}},
        ]}]});
        std::fs::write(&script, turns.to_string()).unwrap();
        format!("scripted:{}", script.display())
    });
    let inbox = fx.ok("inbox", json!({}));
    let run_id = inbox[0]["runId"].clone();
    let detail = fx.ok("run_detail", json!({"runId": run_id}));
    assert!(
        detail.to_string().len() < 16 * 1024,
        "{} bytes: the long values went whole",
        detail.to_string().len()
    );
    let items = detail["transcript"].as_array().unwrap();
    let find = |kind: &str, id: &str| {
        items
            .iter()
            .find(|i| i["kind"] == kind && i["toolCallId"] == id)
            .unwrap_or_else(|| panic!("no {kind} {id} in {items:?}"))
            .clone()
    };
    let write = find("tool-call", "write");
    assert_eq!(write["args"]["path"], ".plandesk/plans/big.md");
    let shown = write["args"]["content"].as_str().unwrap();
    assert!(
        shown.len() < 1024 && content.starts_with(&shown["# Big\n\n".len()..]),
        "the start of the plan: {shown:?}"
    );
    let whole = fx.ok("tool_call", json!({"runId": run_id, "toolCallId": "write"}));
    assert_eq!(
        write["fullBytes"],
        json!(whole["args"].to_string().len()),
        "the preview says how long the whole is"
    );
    assert_eq!(
        whole["args"]["content"],
        json!(format!("# Big\n\n{content}"))
    );
    assert!(whole["result"].is_object(), "written: {}", whole["result"]);

    let read = find("tool-result", "read");
    assert!(read["fullBytes"].as_u64().unwrap() > notes.len() as u64);
    assert!(read["result"]["content"].as_str().unwrap().len() < 1024);
    let whole = fx.ok("tool_call", json!({"runId": run_id, "toolCallId": "read"}));
    assert!(
        whole["result"]["content"]
            .as_str()
            .unwrap()
            .contains(&notes[..2000]),
        "the file as it was read: {}",
        &whole["result"].to_string()[..200]
    );
    assert_eq!(
        find("tool-call", "plan")["fullBytes"],
        Value::Null,
        "short: as it is"
    );
    assert_eq!(
        find("tool-call", "plan")["args"],
        json!({"path": ".plandesk/plans/big.md"})
    );

    let unknown = fx.refused("tool_call", json!({"runId": run_id, "toolCallId": "nope"}));
    assert_eq!(unknown["code"], "unknown-tool-call", "{unknown}");
    assert!(
        unknown["message"].as_str().unwrap().contains("nope"),
        "{unknown}"
    );
}

/// The inbox lists a pending approval with its long arguments as a preview (they went to the
/// window whole with every change to the inbox); the run's detail, which the review is drawn
/// from, has them whole.
#[test]
fn the_inbox_lists_long_approval_arguments_as_a_preview_and_the_review_has_them_whole() {
    let content = "fn step() {}\n".repeat(10_000);
    let fx = fixture_with(|workspace| {
        let script = workspace.join("script.json");
        let turns = json!({"turns": [{"toolCalls": [
            {"toolCallId": "draft", "toolName": "write_file",
             "args": {"path": ".plandesk/plans/steps.md", "content": "# Steps\n\nWrite the steps.\n"}},
            {"toolCallId": "plan", "toolName": "submit_plan", "args": {"path": ".plandesk/plans/steps.md"}},
        ]}, {"toolCalls": [
            {"toolCallId": "big", "toolName": "write_file", "args": {"path": "src/steps.rs", "content": content}},
        ]}]});
        std::fs::write(&script, turns.to_string()).unwrap();
        format!("scripted:{}", script.display())
    });
    let plan = fx.ok("inbox", json!({}))[0].clone();
    fx.ok(
        "decide",
        json!({"request": {"runId": plan["runId"], "toolCallId": plan["toolCallId"], "approve": true,
                           "revision": plan["sha256"]}, "onEvent": channel()}),
    );
    let inbox = fx.wait_inbox("the write to approve", |items| {
        items[0]["kind"] == "approval"
    });
    let listed = &inbox[0];
    assert_eq!(
        listed["args"]["path"], "src/steps.rs",
        "the preview names the file"
    );
    assert!(listed["args"]["content"].as_str().unwrap().len() < 1024);
    assert!(
        inbox.to_string().len() < 8 * 1024,
        "{} bytes: the arguments went whole",
        inbox.to_string().len()
    );
    let detail = fx.ok("run_detail", json!({"runId": listed["runId"]}));
    let pending = &detail["pending"][0];
    assert_eq!(pending["toolCallId"], "big");
    assert_eq!(
        pending["args"]["content"],
        json!(content),
        "the review shows all of it"
    );
    assert_eq!(pending["argsFullBytes"], Value::Null);
    assert_eq!(
        listed["argsFullBytes"],
        json!(pending["args"].to_string().len()),
        "the preview says how long the whole is"
    );
}

/// A run that stops on a plan hands its review over with the end of its stream: the run as
/// `run_detail` reads it, and the revision as `revision` gives it but with only the pages a
/// review fills first, small enough to cross with the message. A run that ends otherwise hands
/// nothing over.
#[test]
fn a_run_that_stops_on_a_plan_hands_its_review_over_with_its_end() {
    let mut plan = String::from("# Migrate the store\n\n");
    for step in 0..400 {
        plan.push_str(&format!(
            "## Step {step}\n\nMove table `t{step}`; keep **reads** working.\n\n| table | rows |\n|---|---|\n| t{step} | {step} |\n\n"
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let (data, workspace) = (dir.path().join("data"), dir.path().join("ws"));
    std::fs::create_dir_all(&workspace).unwrap();
    let script = dir.path().join("script.json");
    let turns = json!({"turns": [
        {"toolCalls": [
            {"toolName": "write_file", "args": {"path": ".plandesk/plans/big.md", "content": plan}},
            {"toolName": "submit_plan", "args": {"path": ".plandesk/plans/big.md"}},
        ]},
        {"text": "Approved; starting."},
    ]});
    std::fs::write(&script, turns.to_string()).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let engine = Engine::open(&data).unwrap();
    let options = StartOptions::new(workspace.clone(), format!("scripted:{}", script.display()));
    let report = runtime
        .block_on(engine.start("Migrate the store", &options, &mut |_| {}))
        .unwrap();
    let run_id = report.run_id.clone();
    // When to hand over, and what, is `plandesk::view`'s (tested there): here, that the
    // message the channel sends is what the commands answer, and small enough.
    let event = plandesk_app::ipc::RunEvent::Ended(
        runtime.block_on(plandesk::view::run_end(&engine, report, true)),
    );
    let message = serde_json::to_string(&event).unwrap();
    let ended: Value = serde_json::from_str(&message).unwrap();
    assert_eq!(ended["event"], "ended");
    let review = &ended["data"]["review"];

    let (_app, webview) = support::app(&Options {
        data_dir: Some(data.clone()),
        workspace: Some(workspace.clone()),
        ..Options::default()
    });
    let detail = support::ok(&webview, "run_detail", json!({"runId": run_id}));
    assert_eq!(review["detail"], detail, "the run, as the window reads it");
    let revision_id = &detail["pending"][0]["revisionId"];
    assert_eq!(&ended["data"]["revisionId"], revision_id);
    let mut revision = support::ok(&webview, "revision", json!({"id": revision_id}));
    let page_bytes: Vec<usize> = serde_json::from_value(revision["pageBytes"].clone()).unwrap();
    assert!(
        page_bytes.len() > 20,
        "a plan of many pages: {page_bytes:?}"
    );
    // The pages a review fills first: while fewer than 4 KiB are in, one more.
    let mut first = 0;
    let mut bytes = 0;
    while bytes < 4 * 1024 {
        bytes += page_bytes[first];
        first += 1;
    }
    let handed: Vec<Value> = review["revision"]["pages"].as_array().unwrap().clone();
    assert_eq!(handed.len(), first, "{bytes} bytes in {first} pages");
    assert_eq!(
        handed[..],
        revision["pages"].as_array().unwrap()[..first],
        "the first pages, as `revision` sends them"
    );
    revision["pages"] = json!(handed);
    assert_eq!(
        review["revision"], revision,
        "all else as `revision` says it"
    );
    assert!(
        message.len() < 8 * 1024,
        "{} bytes: too large to cross with its notice",
        message.len()
    );

    // Approved: the run goes on and finishes, with no plan to hand over.
    let verdict = plandesk::Verdict {
        approve: true,
        ..Default::default()
    };
    let report = runtime
        .block_on(engine.decide(&run_id, &verdict, &mut |_| {}))
        .unwrap();
    assert_ne!(report.status, plandesk::RunStatus::Suspended);
    let end = runtime.block_on(plandesk::view::run_end(&engine, report, true));
    let ended = serde_json::to_value(plandesk_app::ipc::RunEvent::Ended(end)).unwrap();
    assert!(
        ended["data"].get("review").is_none() && ended["data"]["revisionId"].is_null(),
        "{ended}"
    );
}
