//! Writing a settings file: refused when it is not JSON, a FIFO or huge, or changed since the
//! plan; links followed, backups never overwritten, the mode and owner kept.

use super::*;

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
