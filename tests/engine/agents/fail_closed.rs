//! Failing closed: a hook that is stopped, killed, orphaned by its agent or past its deadline
//! never leaves its plan pending, and a hook without a usable deadline or store says "not
//! approved".

use std::io::Write;
use std::process::Stdio;

use super::*;

#[test]
fn a_stopped_or_killed_hook_never_leaves_its_plan_pending() {
    let fx = Fixture::new(json!([]));
    let child = hook(&fx, "claude-code", &claude_payload("# Stop me\n\nx"), &[]);
    let run = wait_pending(&fx, 1)[0]["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    let pid = child.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(fx.listing(&["pending"]), json!([]));
    assert_eq!(fx.listing(&["history", &run])[0]["status"], "abandoned");

    let mut killed = hook(&fx, "claude-code", &claude_payload("# Kill me\n\ny"), &[]);
    wait_pending(&fx, 1);
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert_eq!(
        fx.listing(&["pending"]),
        json!([]),
        "a waiter whose process is gone is swept as abandoned"
    );
    let history = fx.listing(&["history", &run]);
    assert_eq!(history[1]["status"], "abandoned", "{history}");
}

/// `cmd` (a `plandesk` command of the fixture's) run by `runner` instead, with the same
/// arguments, environment and folder.
fn run_under(runner: &[&str], cmd: &std::process::Command) -> std::process::Command {
    let mut under = std::process::Command::new(runner[0]);
    under
        .args(&runner[1..])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => under.env(key, value),
            None => under.env_remove(key),
        };
    }
    under.current_dir(cmd.get_current_dir().unwrap());
    under
}

#[test]
fn a_hook_whose_agent_is_killed_abandons_its_plan() {
    // The agent is `timeout` (a program that waits for its child, like an agent for its hook),
    // killed with SIGKILL so it cannot stop the hook. Gemini CLI runs a hook directly; Claude
    // Code under a `sh -c` that stays and waits for it.
    let runners: [&[&str]; 2] = [
        &["timeout", "120"],
        &["timeout", "120", "sh", "-c", "\"$@\"; exit $?", "sh"],
    ];
    for runner in runners {
        let fx = Fixture::new(json!([]));
        let mut agent = run_under(runner, &fx.command(&["hook", "claude-code"]))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        agent
            .stdin
            .take()
            .unwrap()
            .write_all(claude_payload("# Orphan\n\nx").to_string().as_bytes())
            .unwrap();
        let run = wait_pending(&fx, 1)[0]["runId"]
            .as_str()
            .unwrap()
            .to_owned();
        agent.kill().unwrap();
        agent.wait().unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        while fx.listing(&["pending"]) != json!([]) {
            assert!(
                Instant::now() < until,
                "{runner:?}: the hook noticed its agent is gone"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            fx.listing(&["history", &run])[0]["status"],
            "abandoned",
            "{runner:?}"
        );
    }
}

#[test]
fn past_its_deadline_a_plan_is_denied_and_recorded_as_expired() {
    let fx = Fixture::new(json!([]));
    // Long enough that the review, not the hook's last-resort watchdog, meets it even on a
    // loaded machine (the watchdog keeps a fifth of it for the answer; both deny).
    let child = hook(
        &fx,
        "claude-code",
        &claude_payload("# Slow\n\nz"),
        &["--deadline", "3s"],
    );
    let decision = answer(child)["hookSpecificOutput"]["decision"].clone();
    assert_eq!(decision["behavior"], "deny", "fail closed, never open");
    let message = decision["message"].as_str().unwrap();
    assert!(message.contains("No decision was made"), "{message}");
    let history = fx.listing(&["history"]);
    assert_eq!(history[0]["status"], "expired");
}

/// A deadline that is not one (or is nothing) is a mistake in the agent's settings: the hook
/// still answers its agent, "not approved", and never becomes clap's non-zero exit.
#[test]
fn a_hook_given_no_usable_deadline_denies_and_says_why() {
    let fx = Fixture::new(json!([]));
    for (deadline, env, why) in [
        (Some("soon"), None, "is not a duration such as 30s"),
        (Some("0s"), None, "longer than 0 s"),
        (None, Some("10 parsecs"), "is not a duration such as 30s"),
    ] {
        let mut args = vec!["hook", "claude-code"];
        args.extend(deadline.map(|d| ["--deadline", d]).into_iter().flatten());
        let mut cmd = fx.command(&args);
        if let Some(env) = env {
            cmd.env("PLANDESK_HOOK_DEADLINE", env);
        }
        let child = spawn_with_input(cmd, claude_payload("# P").to_string().as_bytes());
        let decision = answer(child)["hookSpecificOutput"]["decision"].clone();
        assert_eq!(
            decision["behavior"], "deny",
            "{deadline:?} {env:?}: {decision}"
        );
        assert!(
            decision["message"].as_str().unwrap().contains(why),
            "{deadline:?} {env:?}: {decision}"
        );
    }
    assert_eq!(fx.listing(&["pending"]), json!([]), "nothing was submitted");
}

#[test]
fn a_hook_that_cannot_reach_the_store_denies() {
    if sqlite_only("a_hook_that_cannot_reach_the_store_denies") {
        return;
    }
    let fx = Fixture::new(json!([]));
    std::fs::create_dir_all(&fx.data).unwrap();
    std::fs::write(fx.data.join("plandesk.db"), vec![0x42; 4096]).unwrap();
    let decision = answer(hook(&fx, "claude-code", &claude_payload("# P"), &[]))
        ["hookSpecificOutput"]["decision"]
        .clone();
    assert_eq!(decision["behavior"], "deny", "{decision}");
    assert!(decision["message"]
        .as_str()
        .unwrap()
        .contains("not approved"));
    let junk = answer(hook(&fx, "gemini", &json!("not an object"), &[]));
    assert_eq!(junk["decision"], "deny");
}

/// A hook whose agent closed its end of stderr still answers on stdout (never a crash's
/// silence, which some agents take as approval), and what it says on stderr, which may quote
/// the agent's own text, is made safe for a terminal.
#[test]
fn a_hook_answers_with_its_stderr_closed_and_says_nothing_raw() {
    let fx = Fixture::new(json!([]));
    let run = |agent: &str, input: &[u8], stderr: Stdio| {
        let mut cmd = fx.command(&["hook", agent]);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr);
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        child.wait_with_output().unwrap()
    };
    let closed = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        Stdio::from(writer)
    };

    let out = run("claude-code", b"{not json", closed());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let said: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(said["hookSpecificOutput"]["decision"]["behavior"], "deny");

    // Droid reads a deny's reason on stderr, with status 2; the reason quotes the payload.
    let mut payload = super::formats::held_payload("droid", "s", "1. Add a cache");
    payload["hook_event_name"] = json!("\u{1b}]0;pwned\u{7}");
    for stderr in [closed(), Stdio::piped()] {
        let out = run("droid", payload.to_string().as_bytes(), stderr);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let said: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(said["hookSpecificOutput"]["permissionDecision"], "deny");
        assert!(!out.stderr.contains(&0x1b), "{:?}", out.stderr);
        assert!(!out.stderr.contains(&0x07), "{:?}", out.stderr);
    }
}
