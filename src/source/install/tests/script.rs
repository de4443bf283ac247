//! OpenCode's, Kilo CLI's and Pi's script: a file of Plandesk's own, never one of theirs.

use super::*;

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
    let agent = target.source().agent_name();
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
