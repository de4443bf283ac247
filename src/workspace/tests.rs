//! The workspace's containment, no-follow writes and bounded regular-file reads.

use super::*;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::sync::mpsc;
use std::time::Duration;

fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("ws/src")).unwrap();
    fs::write(dir.path().join("ws/src/lib.rs"), "lib\n").unwrap();
    let ws = Workspace::open(&dir.path().join("ws"), None).unwrap();
    (dir, ws)
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Runs `op` on a thread; fails the test if it blocks (a FIFO opened the usual way would).
fn within_seconds<T: Send + 'static>(op: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(op());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the operation blocked")
}

/// Issue 8 #1: with `.plandesk/plans -> ..`, a plan-mode write landed in the workspace root.
#[test]
fn a_plans_folder_that_is_a_link_is_refused() {
    let (_dir, ws) = workspace();
    fs::create_dir_all(ws.root().join(".plandesk")).unwrap();
    symlink("..", ws.root().join(".plandesk/plans")).unwrap();
    let err = ws
        .write_plan_file(".plandesk/plans/x.txt", b"escaped")
        .unwrap_err();
    assert!(
        matches!(&err, WorkspaceError::PlansDirLink { link, .. } if link == ".plandesk/plans"),
        "{err}"
    );
    assert!(
        !ws.root().join("x.txt").exists(),
        "nothing landed in the root"
    );
    assert!(matches!(
        ws.check_plans_dir(),
        Err(WorkspaceError::PlansDirLink { .. })
    ));

    let (_dir, ws) = workspace();
    fs::create_dir_all(ws.root().join("elsewhere/plans")).unwrap();
    symlink("elsewhere", ws.root().join(".plandesk")).unwrap();
    let err = ws
        .write_plan_file(".plandesk/plans/p.md", b"# P")
        .unwrap_err();
    assert!(
        matches!(&err, WorkspaceError::PlansDirLink { link, .. } if link == ".plandesk"),
        "a link above the plans folder counts too: {err}"
    );
    assert!(!ws.root().join("elsewhere/plans/p.md").exists());
}

#[test]
fn plan_writes_stay_in_the_plans_folder() {
    let (_dir, ws) = workspace();
    ws.write_plan_file(".plandesk/plans/a/p.md", b"# P\n")
        .unwrap();
    assert_eq!(
        fs::read_to_string(ws.root().join(".plandesk/plans/a/p.md")).unwrap(),
        "# P\n"
    );
    for outside in [
        ".plandesk/plans",
        ".plandesk/other.md",
        ".plandesk/plans/../x.md",
        "src/p.md",
    ] {
        assert!(
            matches!(
                ws.write_plan_file(outside, b"x"),
                Err(WorkspaceError::OutsidePlans { .. })
            ),
            "{outside}"
        );
    }
}

#[test]
fn writes_never_follow_links() {
    let (dir, ws) = workspace();
    let outside = dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    symlink(&outside, ws.root().join("out")).unwrap();
    symlink("src", ws.root().join("inner")).unwrap();
    symlink("src/lib.rs", ws.root().join("lib-link.rs")).unwrap();
    for (path, link) in [
        ("out/x.txt", "out"),
        ("inner/new.rs", "inner"),
        ("lib-link.rs", "lib-link.rs"),
    ] {
        let err = ws.write_file(path, b"overwritten").unwrap_err();
        assert!(
            matches!(&err, WorkspaceError::Symlink { link: l, .. } if l == link),
            "{path}: {err}"
        );
    }
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
    assert!(!ws.root().join("src/new.rs").exists());
    assert_eq!(
        fs::read_to_string(ws.root().join("src/lib.rs")).unwrap(),
        "lib\n"
    );
    assert!(
        ws.resolve_existing("lib-link.rs").is_ok(),
        "a link inside the workspace stays readable"
    );
}

#[test]
fn writes_replace_regular_files_keeping_their_mode() {
    let (_dir, ws) = workspace();
    let script = ws.root().join("run.sh");
    fs::write(&script, "old").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o750)).unwrap();
    ws.write_file("run.sh", b"new").unwrap();
    assert_eq!(fs::read_to_string(&script).unwrap(), "new");
    assert_eq!(
        fs::metadata(&script).unwrap().permissions().mode() & 0o7777,
        0o750
    );
    ws.write_file("deep/er/file.txt", b"made").unwrap();
    assert_eq!(
        fs::read_to_string(ws.root().join("deep/er/file.txt")).unwrap(),
        "made"
    );
    let leftovers: Vec<_> = fs::read_dir(ws.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("plandesk-write"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert!(matches!(
        ws.write_file("src", b"x"),
        Err(WorkspaceError::NotAFile { .. })
    ));
    assert!(matches!(
        ws.write_file("src/lib.rs/x", b"x"),
        Err(WorkspaceError::NotADir { .. })
    ));
}

/// Issue 8 #4: a FIFO as the file blocked the run forever.
#[test]
fn fifos_are_refused_without_blocking() {
    let (_dir, ws) = workspace();
    mkfifo(&ws.root().join("pipe.md"));
    let reader = ws.clone();
    let read = within_seconds(move || {
        let resolved = reader.resolve_existing("pipe.md")?;
        reader.read_text(&resolved, "pipe.md")
    });
    assert!(
        matches!(&read, Err(WorkspaceError::NotRegular { kind, .. }) if kind.contains("FIFO")),
        "{read:?}"
    );
    let writer = ws.clone();
    let written = within_seconds(move || writer.write_file("pipe.md", b"x"));
    assert!(
        matches!(&written, Err(WorkspaceError::NotRegular { .. })),
        "{written:?}"
    );
}

#[test]
fn reads_are_bounded() {
    let (_dir, ws) = workspace();
    fs::write(
        ws.root().join("max.md"),
        vec![b'a'; MAX_FILE_BYTES as usize],
    )
    .unwrap();
    fs::write(
        ws.root().join("big.md"),
        vec![b'a'; MAX_FILE_BYTES as usize + 1],
    )
    .unwrap();
    let read = |p: &str| ws.read_text(&ws.resolve_existing(p).unwrap(), p);
    assert_eq!(read("max.md").unwrap().len(), MAX_FILE_BYTES as usize);
    assert!(matches!(
        read("big.md"),
        Err(WorkspaceError::TooLarge { size, .. }) if size == MAX_FILE_BYTES + 1
    ));
    assert!(matches!(read("src"), Err(WorkspaceError::NotAFile { .. })));
}

proptest::proptest! {
    #![proptest_config(crate::text::testing::proptest_config(128))]

    /// Any bytes: read back exactly when they are UTF-8, refused as not UTF-8 otherwise.
    #[test]
    fn prop_workspace_read_any_bytes(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048),
        text in proptest::prelude::any::<String>(),
        as_text in proptest::prelude::any::<bool>(),
    ) {
        let (_dir, ws) = workspace();
        let bytes = if as_text { text.into_bytes() } else { bytes };
        ws.write_file("f.md", &bytes).unwrap();
        let read = ws.read_text(&ws.resolve_existing("f.md").unwrap(), "f.md");
        match std::str::from_utf8(&bytes) {
            Ok(expected) => proptest::prop_assert_eq!(read.unwrap(), expected),
            Err(_) => {
                let refused = matches!(read, Err(WorkspaceError::NotUtf8 { .. }));
                proptest::prop_assert!(refused, "not UTF-8, yet read as {:?}", read);
            }
        }
    }
}

#[test]
fn lexical_paths_may_not_climb_out() {
    assert_eq!(lexical_relative("a/./b/../c"), Some(PathBuf::from("a/c")));
    assert_eq!(lexical_relative("a/../../etc/passwd"), None);
    assert_eq!(lexical_relative("/etc/passwd"), None);
}
