//! Command hooks: merged beside other entries, each agent's own shape, only the exact entry we
//! wrote taken for ours (its command read back as a shell would), nothing empty left behind.

use super::*;
use crate::source::install::hooks::{
    CLAUDE_RECORDED_TOOLS, COPILOT_RECORDED_TOOLS, DROID_RECORDED_TOOLS, QWEN_RECORDED_TOOLS,
    RECORD_TIMEOUT_SECS,
};
use crate::source::install::words::shell_words;

#[test]
fn installing_merges_beside_other_entries_and_twice_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = places(dir.path());
    let file = p.home.join(".claude/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let theirs = json!({"model": "opus", "hooks": {"PermissionRequest": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}]}});
    std::fs::write(&file, theirs.to_string()).unwrap();

    let change = plan(Target::ClaudeCode, false, &p).unwrap();
    let after = settings(&change);
    assert_eq!(after["model"], "opus", "other settings stay");
    let groups = after["hooks"]["PermissionRequest"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "their hook stays beside ours");
    assert_eq!(groups[1]["matcher"], "ExitPlanMode");
    assert_eq!(
        groups[1]["hooks"][0]["command"], "'/opt/Plan Desk/plandesk' hook claude-code",
        "the path is quoted for the shell"
    );
    assert_eq!(groups[1]["hooks"][0]["timeout"], HOOK_TIMEOUT_SECS);
    let recorded = &after["hooks"]["PostToolUse"][0];
    assert_eq!(recorded["matcher"], CLAUDE_RECORDED_TOOLS);
    assert_eq!(
        recorded["hooks"][0]["command"],
        "'/opt/Plan Desk/plandesk' record claude-code"
    );
    assert_eq!(recorded["hooks"][0]["timeout"], RECORD_TIMEOUT_SECS);
    assert_eq!(
        after["hooks"]["Stop"][0],
        json!({"hooks": [{"type": "command", "timeout": RECORD_TIMEOUT_SECS,
                          "command": "'/opt/Plan Desk/plandesk' record claude-code"}]})
    );
    let backup = apply(&change, 7).unwrap().unwrap();
    assert_eq!(
        std::fs::read_to_string(&backup).unwrap(),
        theirs.to_string(),
        "the old file is kept"
    );
    let again = plan(Target::ClaudeCode, false, &p).unwrap();
    assert!(
        !again.changes_anything(),
        "installing twice changes nothing"
    );

    let removed = plan(Target::ClaudeCode, true, &p).unwrap();
    assert_eq!(settings(&removed), theirs, "uninstall removes only ours");
}

#[test]
fn the_hooks_that_record_work_after_an_approval_can_be_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = places(dir.path());
    apply(&plan(Target::ClaudeCode, false, &p).unwrap(), 1).unwrap();
    p.record = false;
    let change = plan(Target::ClaudeCode, false, &p).unwrap();
    let after = settings(&change);
    assert_eq!(
        after["hooks"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["PermissionRequest"],
        "only the plan's hook is left: {after}"
    );
    apply(&change, 2).unwrap();
    assert!(!plan(Target::ClaudeCode, false, &p)
        .unwrap()
        .changes_anything());

    // A record hook whose matcher a person (or an older Plandesk) changed is still ours.
    p.record = true;
    apply(&plan(Target::ClaudeCode, false, &p).unwrap(), 3).unwrap();
    let file = p.home.join(".claude/settings.json");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace(CLAUDE_RECORDED_TOOLS, "Write|Edit")).unwrap();
    let again = settings(&plan(Target::ClaudeCode, false, &p).unwrap());
    assert_eq!(
        again["hooks"]["PostToolUse"].as_array().unwrap().len(),
        1,
        "{again}"
    );
    assert_eq!(
        again["hooks"]["PostToolUse"][0]["matcher"],
        CLAUDE_RECORDED_TOOLS
    );
}

#[test]
fn each_agent_gets_its_own_shape() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = places(dir.path());
    p.data_dir = Some(PathBuf::from("/data"));
    let codex = settings(&plan(Target::Codex, false, &p).unwrap());
    assert_eq!(
        codex["hooks"]["Stop"][0]["hooks"][0]["command"],
        "'/opt/Plan Desk/plandesk' --data-dir /data hook codex"
    );
    let gemini = settings(&plan(Target::Gemini, false, &p).unwrap());
    let group = &gemini["hooks"]["BeforeTool"][0];
    assert_eq!(group["matcher"], "^exit_plan_mode$");
    assert_eq!(
        group["hooks"][0]["timeout"], 86_400_000,
        "Gemini counts milliseconds"
    );
    let qwen = settings(&plan(Target::QwenCode, false, &p).unwrap());
    let group = &qwen["hooks"]["PermissionRequest"][0];
    assert_eq!(group["matcher"], "exit_plan_mode");
    assert_eq!(
        group["hooks"][0]["timeout"], 90,
        "under 1000, so Qwen Code reads seconds"
    );
    assert_eq!(
        qwen["hooks"]["PostToolUse"][0]["matcher"],
        QWEN_RECORDED_TOOLS
    );
    assert_eq!(
        qwen["hooks"]["PostToolUseFailure"][0]["hooks"][0]["command"],
        "'/opt/Plan Desk/plandesk' --data-dir /data record qwen-code"
    );
    let droid = plan(Target::Droid, false, &p).unwrap();
    assert!(droid.file.ends_with(".factory/settings.json"));
    let droid = settings(&droid);
    assert_eq!(droid["hooks"]["PreToolUse"][0]["matcher"], "^ExitSpecMode$");
    assert_eq!(
        droid["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"],
        86_400
    );
    assert_eq!(
        droid["hooks"]["PostToolUse"][0]["matcher"],
        DROID_RECORDED_TOOLS
    );
    let copilot = plan(Target::Copilot, false, &p).unwrap();
    assert!(copilot.file.ends_with(".copilot/hooks/plandesk.json"));
    let copilot = settings(&copilot);
    let group = &copilot["hooks"]["preToolUse"][0];
    assert_eq!(group["matcher"], "exit_plan_mode");
    assert_eq!(group["hooks"][0]["timeout"], 86_400, "seconds");
    assert_eq!(
        copilot["hooks"]["postToolUse"][0]["matcher"],
        COPILOT_RECORDED_TOOLS
    );
    assert!(copilot["hooks"]["agentStop"][0].get("matcher").is_none());
    let change = plan(Target::Copilot, false, &p).unwrap();
    apply(&change, 7).unwrap();
    let removed = plan(Target::Copilot, true, &p).unwrap();
    assert!(removed.changes_anything());
    apply(&removed, 8).unwrap();
    assert!(
        !change.file.exists(),
        "Plandesk's own hooks file goes: Copilot refuses one without hooks"
    );
    let mcp = settings(&plan(Target::Mcp, false, &p).unwrap());
    assert_eq!(
        mcp["mcpServers"]["plandesk"]["command"],
        "/opt/Plan Desk/plandesk"
    );
    assert_eq!(mcp["mcpServers"]["plandesk"]["args"][2], "mcp", "{mcp}");
}

fn command_hook(matcher: Option<&str>, commands: &[&str]) -> Value {
    let hooks: Vec<Value> = commands
        .iter()
        .map(|c| json!({"type": "command", "command": c}))
        .collect();
    match matcher {
        Some(m) => json!({"matcher": m, "hooks": hooks}),
        None => json!({"hooks": hooks}),
    }
}

#[test]
fn only_the_exact_entry_we_wrote_is_taken_for_ours() {
    let dir = tempfile::tempdir().unwrap();
    let p = places(dir.path());
    let file = p.home.join(".claude/settings.json");
    let m = Some("ExitPlanMode");
    let theirs = vec![
        command_hook(Some("Bash"), &["plandesk-audit hook log"]),
        command_hook(m, &["plandesk hook claude-code; audit.sh"]),
        command_hook(m, &["plandesk hook claude-code && audit.sh"]),
        command_hook(m, &["$(plandesk) hook claude-code"]),
        command_hook(m, &["plandesk hook codex"]),
        command_hook(m, &["plandesk --verbose hook claude-code"]),
        command_hook(m, &["plandesk hook claude-code", "notify.sh"]),
        command_hook(Some("Bash"), &["plandesk hook claude-code"]),
        command_hook(None, &["plandesk hook claude-code"]),
        json!({"matcher": "ExitPlanMode", "hooks": [
            {"type": "http", "command": "plandesk hook claude-code"}]}),
    ];
    // Ours, from a binary since renamed and moved, with its own store and timeout.
    let old_ours = json!({"matcher": "ExitPlanMode", "hooks": [{"type": "command",
        "command": "'/old place/pd' --data-dir '/data'\\''s'$'\\x0a' hook claude-code",
        "timeout": 5}]});
    let mut groups = theirs.clone();
    groups.insert(1, old_ours);
    write_with_mode(
        &file,
        &json!({"hooks": {"PermissionRequest": groups}}).to_string(),
        0o644,
    );

    let installed = settings(&plan(Target::ClaudeCode, false, &p).unwrap());
    let after = installed["hooks"]["PermissionRequest"].as_array().unwrap();
    assert_eq!(
        after[..after.len() - 1],
        theirs[..],
        "every hook of theirs stays, in order; only the old one of ours is replaced"
    );
    assert_eq!(
        after[after.len() - 1]["hooks"][0]["command"],
        "'/opt/Plan Desk/plandesk' hook claude-code",
        "ours is written once, for this binary"
    );
    let removed = settings(&plan(Target::ClaudeCode, true, &p).unwrap());
    assert_eq!(
        removed["hooks"]["PermissionRequest"],
        json!(theirs),
        "uninstall takes out ours (renamed binary and all) and nothing else"
    );

    // Codex's Stop group has no matcher; Gemini's is anchored.
    let codex = p.home.join(".codex/hooks.json");
    let codex_theirs = vec![command_hook(Some("x"), &["plandesk hook codex"])];
    let mut codex_groups = codex_theirs.clone();
    codex_groups.push(command_hook(None, &["/old/plandesk hook codex"]));
    write_with_mode(
        &codex,
        &json!({"hooks": {"Stop": codex_groups}}).to_string(),
        0o644,
    );
    let removed = settings(&plan(Target::Codex, true, &p).unwrap());
    assert_eq!(
        removed["hooks"]["Stop"],
        json!(codex_theirs),
        "a Codex group with a matcher is not one we wrote"
    );
    let gemini = p.home.join(".gemini/settings.json");
    let gemini_theirs = vec![command_hook(
        Some("exit_plan_mode"),
        &["plandesk hook gemini"],
    )];
    let mut gemini_groups = gemini_theirs.clone();
    gemini_groups.push(command_hook(
        Some("^exit_plan_mode$"),
        &["plandesk hook gemini"],
    ));
    write_with_mode(
        &gemini,
        &json!({"hooks": {"BeforeTool": gemini_groups}}).to_string(),
        0o644,
    );
    let removed = settings(&plan(Target::Gemini, true, &p).unwrap());
    assert_eq!(
        removed["hooks"]["BeforeTool"],
        json!(gemini_theirs),
        "a Gemini group on another matcher is not one we wrote"
    );
}

#[test]
fn uninstall_leaves_no_empty_hooks_behind() {
    let dir = tempfile::tempdir().unwrap();
    let p = places(dir.path());
    let file = p.home.join(".claude/settings.json");
    write_with_mode(&file, "{\"model\": \"opus\"}", 0o600);
    let backup = apply(&plan(Target::ClaudeCode, false, &p).unwrap(), 7)
        .unwrap()
        .unwrap();
    // Without the backup there is nothing to copy back: the JSON must still be clean.
    std::fs::remove_file(backup).unwrap();
    let removed = settings(&plan(Target::ClaudeCode, true, &p).unwrap());
    assert_eq!(
        removed,
        json!({"model": "opus"}),
        "no `hooks: {{}}` left of what install added"
    );
}

#[test]
fn shell_words_reads_what_shell_quote_writes_and_refuses_the_rest() {
    let words = [
        "plain",
        "a b",
        "it's",
        "",
        "$HOME",
        "a\x1bb",
        "tab\there",
        "new\nline",
        "é\u{202e}",
        "\\",
        "-n",
        "a\"b",
        "~user",
    ];
    for word in words {
        let line = format!("{} hook x", shell_quote(word));
        let expected = [word, "hook", "x"].map(str::to_owned).to_vec();
        assert_eq!(shell_words(&line), Some(expected), "{line} is three words");
    }
    assert_eq!(
        shell_words("a\\ b  \"c d\"\t'e'\\''f'"),
        Some(["a b", "c d", "e'f"].map(str::to_owned).to_vec()),
        "blanks split, quotes and backslashes join"
    );
    let not_simple = [
        "a;b hook x",
        "a | b",
        "a && b",
        "a > f",
        "(a)",
        "$(a) hook x",
        "`a` hook x",
        "\"$a\" hook x",
        "$a hook x",
        "a* hook x",
        "a? b",
        "FOO=1 hook x",
        "a # c",
        "'open",
        "\"open",
        "a\nb",
        "~/a hook x",
        "{a,b} hook x",
    ];
    for line in not_simple {
        assert_eq!(
            shell_words(line),
            None,
            "{line:?} is not a simple command of words"
        );
    }
}

#[test]
fn droid_gets_its_hooks_where_its_hooks_json_would_not_hide_them() {
    let dir = tempfile::tempdir().unwrap();
    let p = places(dir.path());
    let hooks_file = p.home.join(".factory/hooks.json");
    let theirs = json!({"PreToolUse": [{"matcher": "Execute", "hooks": [
        {"type": "command", "command": "guard.sh"}]}]});
    write_with_mode(&hooks_file, &theirs.to_string(), 0o600);
    let change = plan(Target::Droid, false, &p).unwrap();
    assert_eq!(
        change.file, hooks_file,
        "Droid reads hooks.json over settings.json"
    );
    let after = settings(&change);
    assert!(
        after.get("hooks").is_none(),
        "hooks.json holds them at its top level"
    );
    let groups = after["PreToolUse"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "theirs stays beside ours: {after}");
    assert_eq!(groups[1]["matcher"], "^ExitSpecMode$");
    assert!(after["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .ends_with("record droid"));
    apply(&change, 7).unwrap();
    assert!(!plan(Target::Droid, false, &p).unwrap().changes_anything());
    let removed = plan(Target::Droid, true, &p).unwrap();
    assert_eq!(
        removed.after,
        theirs.to_string(),
        "uninstall gives the file back as it was"
    );

    // Installed in settings.json before a hooks.json appeared (Droid's /hooks writes one):
    // uninstalling finds it there.
    let other = tempfile::tempdir().unwrap();
    let p = places(other.path());
    apply(&plan(Target::Droid, false, &p).unwrap(), 7).unwrap();
    write_with_mode(&p.home.join(".factory/hooks.json"), "{}", 0o600);
    let removed = plan(Target::Droid, true, &p).unwrap();
    assert!(
        removed.file.ends_with(".factory/settings.json"),
        "{:?}",
        removed.file
    );
    assert!(!removed.after.contains("hook droid"));
}
