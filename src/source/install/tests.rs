//! `plandesk install`'s merges, backups, links, modes and refusals, on real files.

use super::*;

fn places(dir: &Path) -> Places {
    Places {
        home: dir.join("home"),
        claude_dir: None,
        codex_home: None,
        copilot_home: None,
        pi_dir: None,
        config_home: None,
        project: dir.join("project"),
        exe: PathBuf::from("/opt/Plan Desk/plandesk"),
        data_dir: None,
        record: true,
    }
}

fn settings(change: &Change) -> Value {
    serde_json::from_str(&change.after).unwrap()
}

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
fn a_file_that_is_not_json_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = places(dir.path());
    let file = p.home.join(".gemini/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "{ not json").unwrap();
    let err = plan(Target::Gemini, false, &p).unwrap_err();
    assert!(err.to_string().contains("not valid JSON"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ not json");
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

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn write_with_mode(file: &Path, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(mode)).unwrap();
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
fn an_mcp_server_named_plandesk_that_we_did_not_write_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let p = places(dir.path());
    let file = p.project.join(".mcp.json");
    let theirs = json!({"mcpServers": {
        "other": {"command": "other-mcp"},
        "plandesk": {"command": "npx", "args": ["plandesk-cloud", "--token", "t"]},
    }});
    write_with_mode(&file, &theirs.to_string(), 0o600);
    let removed = plan(Target::Mcp, true, &p).unwrap();
    assert!(
        !removed.changes_anything(),
        "uninstall leaves a server it did not write: {}",
        removed.after
    );
    let err = plan(Target::Mcp, false, &p).unwrap_err().to_string();
    assert!(
        err.contains("mcpServers.plandesk"),
        "install refuses to overwrite it: {err}"
    );

    // Ours, from another binary, with a timeout the person added: kept by install.
    let ours = json!({"mcpServers": {
        "other": {"command": "other-mcp"},
        "plandesk": {"command": "/old/pd", "args": ["mcp", "--workspace", "/w"],
                     "timeout": 86_400_000},
    }});
    write_with_mode(&file, &ours.to_string(), 0o600);
    let installed = settings(&plan(Target::Mcp, false, &p).unwrap());
    assert_eq!(installed["mcpServers"]["plandesk"]["timeout"], 86_400_000);
    assert_eq!(
        installed["mcpServers"]["plandesk"]["command"],
        "/opt/Plan Desk/plandesk"
    );
    let removed = settings(&plan(Target::Mcp, true, &p).unwrap());
    assert_eq!(
        removed,
        json!({"mcpServers": {"other": {"command": "other-mcp"}}}),
        "uninstall takes out ours only"
    );
}

#[test]
fn a_linked_settings_file_stays_a_link_and_its_target_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let p = places(dir.path());
    let target = dir.path().join("dotfiles/claude/settings.json");
    let original = "{\"model\": \"opus\"}\n";
    write_with_mode(&target, original, 0o644);
    // home/.claude/settings.json -> ../../dotfiles/current.json -> claude/settings.json
    let middle = dir.path().join("dotfiles/current.json");
    std::os::unix::fs::symlink("claude/settings.json", &middle).unwrap();
    let link = p.home.join(".claude/settings.json");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink("../../dotfiles/current.json", &link).unwrap();

    let change = plan(Target::ClaudeCode, false, &p).unwrap();
    assert_eq!(
        change.file, link,
        "the person is told about the path they know"
    );
    let backup = apply(&change, 7).unwrap().unwrap();
    for l in [&link, &middle] {
        assert!(
            std::fs::symlink_metadata(l).unwrap().is_symlink(),
            "{} is still a link",
            l.display()
        );
    }
    let written = std::fs::read_to_string(&target).unwrap();
    assert!(
        written.contains("ExitPlanMode"),
        "the target got the hook: {written}"
    );
    assert_eq!(
        backup,
        std::fs::canonicalize(dir.path())
            .unwrap()
            .join("dotfiles/claude/settings.json.plandesk-backup-7"),
        "the backup lies next to the target"
    );
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), original);
    let beside_link: Vec<_> = std::fs::read_dir(link.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        beside_link,
        ["settings.json"],
        "nothing left beside the link"
    );
}

#[test]
fn the_new_file_and_its_backup_keep_the_original_mode_and_owner() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let p = places(dir.path());
    let file = p.home.join(".claude/settings.json");
    write_with_mode(&file, "{\"env\": {\"KEY\": \"secret\"}}", 0o600);
    let before = std::fs::metadata(&file).unwrap();
    let backup = apply(&plan(Target::ClaudeCode, false, &p).unwrap(), 7)
        .unwrap()
        .unwrap();
    let after = std::fs::metadata(&file).unwrap();
    assert_eq!(mode(&file), 0o600, "a private file stays private");
    assert_eq!(mode(&backup), 0o600, "its backup is as private");
    assert_eq!(
        (after.uid(), after.gid()),
        (before.uid(), before.gid()),
        "the owner is kept"
    );

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let backup = apply(&plan(Target::ClaudeCode, true, &p).unwrap(), 8)
        .unwrap()
        .unwrap();
    assert_eq!(mode(&file), 0o640, "the mode it had, whatever it was");
    assert_eq!(mode(&backup), 0o640);

    // As root (`sudo plandesk install`), someone else's file stays theirs, backup and all.
    if std::fs::metadata(dir.path()).unwrap().uid() == 0 {
        std::os::unix::fs::chown(&file, Some(4242), Some(4343)).unwrap();
        let backup = apply(&plan(Target::ClaudeCode, false, &p).unwrap(), 9)
            .unwrap()
            .unwrap();
        for path in [&file, &backup] {
            let meta = std::fs::metadata(path).unwrap();
            assert_eq!(
                (meta.uid(), meta.gid()),
                (4242, 4343),
                "{} keeps the person's owner",
                path.display()
            );
        }
    }
}

#[test]
fn a_new_settings_file_is_readable_by_its_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let p = places(dir.path());
    let backup = apply(&plan(Target::Gemini, false, &p).unwrap(), 7).unwrap();
    assert_eq!(backup, None, "no file, nothing to back up");
    let file = p.home.join(".gemini/settings.json");
    assert_eq!(mode(&file), 0o600, "settings can hold keys");
}

#[test]
fn install_then_uninstall_in_the_same_second_gives_back_the_original_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let p = places(dir.path());
    let file = p.home.join(".claude/settings.json");
    let original = "{\"model\":\"opus\",\n   \"env\": {\"A\": \"1\"} }";
    write_with_mode(&file, original, 0o600);
    let first = apply(&plan(Target::ClaudeCode, false, &p).unwrap(), 7)
        .unwrap()
        .unwrap();
    let second = apply(&plan(Target::ClaudeCode, true, &p).unwrap(), 7)
        .unwrap()
        .unwrap();
    assert_ne!(first, second, "two backups in one second get two names");
    assert_eq!(
        std::fs::read_to_string(&first).unwrap(),
        original,
        "the first backup is not overwritten"
    );
    assert!(std::fs::read_to_string(&second)
        .unwrap()
        .contains("ExitPlanMode"));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        original,
        "install then uninstall leaves the file as it was, byte for byte"
    );
    assert_eq!(mode(&file), 0o600);
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
fn a_fifo_or_a_huge_settings_file_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let p = places(dir.path());
    let file = p.home.join(".claude/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&file)
        .status()
        .unwrap();
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let q = p.clone();
    std::thread::spawn(move || {
        let _ = tx.send(plan(Target::ClaudeCode, false, &q).map(|_| ()));
    });
    let result = rx
        .recv_timeout(std::time::Duration::from_secs(5))
        .expect("reading the settings must not wait for a writer on a FIFO");
    let err = result.unwrap_err().to_string();
    assert!(err.contains("not a regular file"), "{err}");

    std::fs::remove_file(&file).unwrap();
    let huge = std::fs::File::create(&file).unwrap();
    huge.set_len(64 * 1024 * 1024).unwrap();
    let err = plan(Target::ClaudeCode, false, &p).unwrap_err().to_string();
    assert!(err.contains("larger than"), "{err}");
}

#[test]
fn a_file_changed_since_the_plan_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let p = places(dir.path());
    let file = p.home.join(".claude/settings.json");
    write_with_mode(&file, "{}", 0o600);
    let change = plan(Target::ClaudeCode, false, &p).unwrap();
    std::fs::write(&file, "{\"model\": \"opus\"}").unwrap();
    let err = apply(&change, 7).unwrap_err().to_string();
    assert!(err.contains("changed"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{\"model\": \"opus\"}",
        "the newer text is kept"
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

#[test]
fn opencode_kilo_and_pi_get_plandesks_script_a_file_of_its_own() {
    for (target, place) in [
        (Target::OpenCode, ".config/opencode/plugins"),
        (Target::Kilo, ".config/kilo/plugins"),
        (Target::Pi, ".pi/agent/extensions"),
    ] {
        script_installed(target, place);
    }
}

#[test]
fn pis_extension_goes_where_pi_coding_agent_dir_says() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = places(dir.path());
    p.pi_dir = Some(dir.path().join("pi"));
    let change = plan(Target::Pi, false, &p).unwrap();
    assert_eq!(change.file, dir.path().join("pi/extensions/plandesk.js"));
    assert!(crate::source::script::is_ours(
        &change.after,
        crate::source::pi::HEADER
    ));
}

fn script_installed(target: Target, place: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut p = places(dir.path());
    p.data_dir = Some(PathBuf::from("/data"));
    let file = p.home.join(place).join("plandesk.js");
    let change = plan(target, false, &p).unwrap();
    assert_eq!(change.file, file);
    assert!(change
        .after
        .contains(r#"const PLANDESK = ["/opt/Plan Desk/plandesk","--data-dir","/data"];"#));
    assert!(change.after.contains("const RECORD = true;"));
    let agent = crate::source::agent_name(target.source());
    assert!(change
        .note
        .as_deref()
        .unwrap()
        .starts_with(&format!("{agent} loads the ")));
    assert_eq!(apply(&change, 7).unwrap(), None, "nothing to back up");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), change.after);
    assert_eq!(mode(&file), NEW_FILE_MODE);
    assert!(!plan(target, false, &p).unwrap().changes_anything());
    p.record = false;
    let quiet = plan(target, false, &p).unwrap();
    assert!(quiet.after.contains("const RECORD = false;"));

    let removed = plan(target, true, &p).unwrap();
    assert!(removed.changes_anything());
    let backup = apply(&removed, 8).unwrap().unwrap();
    assert!(!file.exists(), "uninstalling removes Plandesk's own file");
    assert_eq!(std::fs::read_to_string(backup).unwrap(), change.after);
    assert!(!plan(target, true, &p).unwrap().changes_anything());

    std::fs::write(&file, "export const Mine = async () => ({})\n").unwrap();
    let err = plan(target, false, &p).unwrap_err().to_string();
    assert!(err.contains("a file Plandesk did not write"), "{err}");
    let err = plan(target, true, &p).unwrap_err().to_string();
    assert!(
        err.contains("did not write"),
        "theirs is never removed: {err}"
    );
}
