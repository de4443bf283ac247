//! Issue 33 #2: a reviewer's edit is written back only to a file Plandesk was given to write.
//! A plan that came over HTTP has no file on this machine, whatever path its payload names (a
//! Claude Code http hook could name a reviewer's own file holding the plan's text, and the edit
//! overwrote it). A local hook's plan file is written only inside the agent's workspace or its
//! plans folder, never through a link out of them, and only while it still holds the plan.

use std::path::Path;

use serde_json::{json, Value};

use crate::serve::{create_token, hook_payload, Server};
use crate::support::*;

const PLAN: &str = "# Tidy\n\n1. Remove the dead code\n";
const EDIT: &str = "# Tidy\n\n1. Remove the dead code, keep the tests\n";

/// Edits the one pending plan with `EDIT`; returns `plandesk edit --json`'s answer.
fn edit_pending(fx: &Fixture, item: &Value) -> Value {
    let mine = fx.root.join("mine.md");
    std::fs::write(&mine, EDIT).unwrap();
    fx.listing(&[
        "edit",
        &item["revision"]["id"].to_string(),
        "--file",
        mine.to_str().unwrap(),
    ])
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_of_a_plan_sent_over_http_writes_no_file_here() {
    let fx = Fixture::new(json!([]));
    let token = create_token(&fx, "laptop");
    let server = Server::start(&fx, &["--deadline", "60s"]);
    // A file of the reviewer's whose text is the plan's, named by the remote payload.
    let victim = fx.root.join("notes.md");
    std::fs::write(&victim, PLAN).unwrap();
    let payload = hook_payload("s1", json!({"plan": PLAN, "planFilePath": victim}));
    let url = format!("{}/hooks/claude", server.base);
    let post = tokio::spawn(async move {
        reqwest::Client::new()
            .post(url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(payload.to_string())
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    let item = until_pending(&fx).await;
    let edited = edit_pending(&fx, &item);
    assert_eq!(edited["written"], false, "{edited}");
    assert!(
        edited["notWritten"]
            .as_str()
            .unwrap()
            .contains("kept in Plandesk only"),
        "{edited}"
    );
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        PLAN,
        "a file on the reviewer's machine is never written for a remote plan"
    );
    let run = item["runId"].as_str().unwrap().to_owned();
    fx.ok(&["approve", &run]);
    let answer: Value = serde_json::from_str(&post.await.unwrap()).unwrap();
    let plan = answer["hookSpecificOutput"]["decision"]["updatedInput"]["plan"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        plan.starts_with(EDIT.trim_end()),
        "the agent still gets the edit: {plan}"
    );
}

/// Starts `plandesk hook claude-code` for a plan in `plan_file`, with the session in `cwd` and
/// Claude Code's config folder in `config`; returns the hook.
fn local_hook(fx: &Fixture, plan_file: &Path, cwd: &Path, config: &Path) -> std::process::Child {
    let payload = json!({
        "session_id": "s1", "cwd": cwd, "permission_mode": "plan",
        "hook_event_name": "PermissionRequest", "tool_name": "ExitPlanMode",
        "tool_input": {"plan": PLAN, "planFilePath": plan_file}});
    let mut cmd = fx.command(&["hook", "claude-code", "--deadline", "60s"]);
    cmd.env("CLAUDE_CONFIG_DIR", config);
    spawn_with_input(cmd, payload.to_string().as_bytes())
}

/// Submits `plan_file` through a local hook, edits it, rejects it (ending the hook); returns
/// whether the edit was written and the file's text after.
fn edit_through_local_hook(fx: &Fixture, plan_file: &Path) -> (bool, String) {
    let config = fx.root.join("claude-config");
    let mut hook = local_hook(fx, plan_file, &fx.workspace, &config);
    let item = crate::support::block_on(until_pending(fx));
    let edited = edit_pending(fx, &item);
    fx.ok(&["reject", item["runId"].as_str().unwrap()]);
    hook.wait().unwrap();
    let text = std::fs::read_to_string(plan_file).unwrap();
    (edited["written"] == true, text)
}

/// Where a case puts the plan file.
type Place = fn(&Fixture) -> std::path::PathBuf;

#[test]
fn a_local_edit_is_written_only_inside_the_workspace_or_the_plans_folder() {
    let cases: [(&str, Place, bool); 4] = [
        ("in the workspace", |fx| fx.workspace.join("PLAN.md"), true),
        (
            "in Claude Code's plans folder",
            |fx| fx.root.join("claude-config/plans/brave-otter.md"),
            true,
        ),
        ("elsewhere", |fx| fx.root.join("elsewhere/plan.md"), false),
        (
            "through a link in the workspace to a file elsewhere",
            |fx| {
                let target = fx.root.join("elsewhere/target.md");
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                std::fs::write(&target, PLAN).unwrap();
                let link = fx.workspace.join("linked.md");
                std::os::unix::fs::symlink(&target, &link).unwrap();
                target
            },
            false,
        ),
    ];
    for (case, place, writable) in cases {
        let fx = Fixture::new(json!([]));
        let file = place(&fx);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        if !file.exists() {
            std::fs::write(&file, PLAN).unwrap();
        }
        // The link case names the link, whose target is outside.
        let named = if case.contains("link") {
            fx.workspace.join("linked.md")
        } else {
            file.clone()
        };
        let (written, _) = edit_through_local_hook(&fx, &named);
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(written, writable, "{case}: written");
        let expected = if writable { EDIT } else { PLAN };
        assert_eq!(text, expected, "{case}: the file's text after the edit");
    }
}
