//! Kimi Code's `config.toml`: our `[[hooks]]` after everyone else's, the rest of the file kept
//! as written, uninstall giving it back byte for byte, and refusals where Kimi Code would
//! ignore our hook.

use super::*;
use crate::source::install::kimi::{has_review_hook, KIMI_RECORDED_TOOLS};

const THEIRS: &str = r#"# My Kimi Code settings
default_plan_mode = true   # plan first

[[hooks]]
event = "PreToolUse"
matcher = "^Bash$"
command = "audit.sh"   # theirs
timeout = 5

[providers.local]
type = "openai"
"#;

fn config(p: &Places) -> PathBuf {
    p.home.join(".kimi-code/config.toml")
}

fn tables(text: &str) -> Vec<toml_edit::Table> {
    let config = text.parse::<toml_edit::DocumentMut>().unwrap();
    config["hooks"]
        .as_array_of_tables()
        .unwrap()
        .iter()
        .cloned()
        .collect()
}

#[test]
fn installing_adds_our_hooks_after_theirs_and_uninstalling_gives_the_file_back() {
    let dir = tempfile::tempdir().unwrap();
    let p = places(dir.path());
    let file = config(&p);
    write_with_mode(&file, THEIRS, 0o640);
    let change = plan(Target::KimiCode, false, &p).unwrap();
    // Ours go right after their hooks; everything of theirs is kept as written.
    let (head, tail) = THEIRS.split_at(THEIRS.find("\n[providers").unwrap());
    assert!(change.after.starts_with(head), "{}", change.after);
    assert!(change.after.ends_with(tail), "{}", change.after);
    let hooks = tables(&change.after);
    assert_eq!(hooks.len(), 5);
    let entry = |hook: &toml_edit::Table| {
        let text = |key: &str| hook.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        let keys: Vec<&str> = hook.iter().map(|(k, _)| k).collect();
        (
            keys.join(","),
            text("event"),
            text("matcher"),
            text("command"),
            hook["timeout"].as_integer(),
        )
    };
    let s = |v: &str| Some(v.to_owned());
    assert_eq!(
        entry(&hooks[1]),
        (
            "event,matcher,command,timeout".into(),
            s("PreToolUse"),
            s("^ExitPlanMode$"),
            s("'/opt/Plan Desk/plandesk' hook kimi-code"),
            Some(600)
        ),
        "only Kimi Code's four keys, and its longest timeout"
    );
    assert_eq!(entry(&hooks[2]).2, s(KIMI_RECORDED_TOOLS));
    assert_eq!(
        entry(&hooks[2]).3,
        s("'/opt/Plan Desk/plandesk' record kimi-code")
    );
    assert_eq!(entry(&hooks[3]).1, s("PostToolUseFailure"));
    assert_eq!((entry(&hooks[4]).1, entry(&hooks[4]).2), (s("Stop"), None));
    assert!(change.note.as_deref().unwrap().contains("10 minutes"));
    apply(&change, 7).unwrap();
    assert_eq!(mode(&file), 0o640, "its mode kept");
    assert!(
        !plan(Target::KimiCode, false, &p)
            .unwrap()
            .changes_anything(),
        "twice: no change"
    );
    let removed = plan(Target::KimiCode, true, &p).unwrap();
    assert_eq!(
        removed.after, THEIRS,
        "uninstall: the file as it was, to the byte"
    );
    apply(&removed, 8).unwrap();
    assert!(!plan(Target::KimiCode, true, &p).unwrap().changes_anything());
}

#[test]
fn a_new_config_holds_our_hooks_alone_and_without_recording_only_the_review() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = places(dir.path());
    p.kimi_home = Some(dir.path().join("kimi"));
    p.record = false;
    p.data_dir = Some(dir.path().join("data"));
    let change = plan(Target::KimiCode, false, &p).unwrap();
    assert_eq!(
        change.file,
        dir.path().join("kimi/config.toml"),
        "$KIMI_CODE_HOME"
    );
    assert_eq!(change.before, None);
    let hooks = tables(&change.after);
    assert_eq!(hooks.len(), 1);
    assert!(hooks[0]["command"]
        .as_str()
        .unwrap()
        .contains(" --data-dir "));
    assert!(has_review_hook(&change.after));
    apply(&change, 7).unwrap();
    assert_eq!(mode(&dir.path().join("kimi/config.toml")), 0o600);
    // An older install with recording: uninstall takes out every hook of ours.
    let removed = plan(Target::KimiCode, true, &p).unwrap();
    assert_eq!(removed.after, "");
}

/// Kimi Code drops a file's every hook for one entry it does not take: installing beside such
/// an entry is refused, saying why, and so is a file that is not TOML or whose `hooks` is not a
/// list of tables. Nothing is written.
#[test]
fn a_config_kimi_code_would_ignore_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = places(dir.path());
    let file = config(&p);
    for (text, why) in [
        ("not = [toml", "is not valid TOML"),
        ("hooks = \"none\"\n", "is not a list of [[hooks]] tables"),
        (
            "[[hooks]]\nevent = \"Stop\"\ncommand = \"x\"\nfoo = 1\n",
            "a hook has the key `foo`",
        ),
        (
            "[[hooks]]\nevent = \"Stop\"\ncommand = \"x\"\ntimeout = 601\n",
            "timeout is not",
        ),
        (
            "[[hooks]]\nevent = \"Stop\"\ncommand = \"x\"\ntimeout = 2.5\n",
            "timeout is not",
        ),
        (
            "[[hooks]]\nevent = \"Nope\"\ncommand = \"x\"\n",
            "no event Kimi Code knows",
        ),
        ("[[hooks]]\nevent = \"Stop\"\n", "has no command"),
    ] {
        write_with_mode(&file, text, 0o600);
        let err = plan(Target::KimiCode, false, &p).unwrap_err().to_string();
        assert!(err.contains(why), "{text:?}: {err}");
    }
    // A whole number written as a float is one Kimi Code takes.
    let float = "[[hooks]]\nevent = \"Stop\"\ncommand = \"x\"\ntimeout = 30.0\n";
    write_with_mode(&file, float, 0o600);
    assert!(plan(Target::KimiCode, false, &p).is_ok());
    // Uninstalling still takes ours out of such a file.
    let ours =
        "[[hooks]]\nevent = \"Stop\"\ncommand = \"/x/plandesk record kimi-code\"\ntimeout = 10\n\
                [[hooks]]\nevent = \"Stop\"\ncommand = \"x\"\nfoo = 1\n";
    write_with_mode(&file, ours, 0o600);
    let removed = plan(Target::KimiCode, true, &p).unwrap();
    assert!(!removed.after.contains("kimi-code") && removed.after.contains("foo = 1"));
}
