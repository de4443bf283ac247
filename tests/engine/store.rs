//! The store's file: versioned migrations (a store of the first schema upgrades with its data
//! intact; a newer one is refused), and one clear line for a damaged or read-only file.

use std::path::Path;

use serde_json::Value;

use crate::support::*;

/// Where the fixture's runs had their workspace (see tests/fixtures/store-v0/README.md).
const FIXTURE_WORKSPACE: &str = "/tmp/plandesk-v0-fixture/ws";

fn fixture_store(fx: &Fixture) {
    std::fs::create_dir_all(&fx.data).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-v0/plandesk.db"),
        fx.data.join("plandesk.db"),
    )
    .unwrap();
}

fn user_version(fx: &Fixture) -> i64 {
    let conn = rusqlite::Connection::open(fx.data.join("plandesk.db")).unwrap();
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_store_of_the_first_schema_upgrades_with_its_data_intact() {
    if sqlite_only("a_store_of_the_first_schema_upgrades_with_its_data_intact") {
        return;
    }
    let fx = Fixture::new(serde_json::json!([]));
    fixture_store(&fx);
    assert_eq!(user_version(&fx), 0, "the fixture predates migrations");
    let conversations = |fx: &Fixture| -> Vec<(String, i64, i64)> {
        let conn = rusqlite::Connection::open(fx.data.join("plandesk.db")).unwrap();
        let mut query = conn
            .prepare(
                "SELECT run_id, COUNT(*), SUM(length(message)) FROM messages GROUP BY 1 ORDER BY 1",
            )
            .unwrap();
        let rows = query.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)));
        rows.unwrap().collect::<Result<_, _>>().unwrap()
    };
    let before = conversations(&fx);

    let history = fx.listing(&["history"]);
    let rows = history.as_array().unwrap();
    assert_eq!(rows.len(), 3, "every revision survives: {history}");
    let statuses: Vec<&str> = rows.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["rejected", "approved", "pending"]);
    assert_eq!(rows[0]["decision"]["feedback"], "Log to stderr, not stdout");
    assert_eq!(rows[1]["revisionNo"], 2, "revision numbers are kept");
    assert!(user_version(&fx) >= 2, "the store was migrated");
    let conn = rusqlite::Connection::open(fx.data.join("plandesk.db")).unwrap();
    let snapshots: Vec<(String, i64, i64)> = conn
        .prepare(
            "SELECT run_id, COUNT(*), MAX(version) FROM run_snapshots GROUP BY run_id ORDER BY 1",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        snapshots,
        [
            ("0a8a0af89a5645d9".to_owned(), 1, 10),
            ("76426506e5bb42ab".to_owned(), 1, 5)
        ],
        "each run keeps its newest snapshot (of 10 and 5) and nothing else"
    );
    // A move rewrites as few pages as it can: the snapshot's key is its run alone, and the
    // messages are stored in their key's order (no second tree).
    let schema = |table: &str| -> String {
        conn.query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert!(schema("run_snapshots").contains("run_id TEXT PRIMARY KEY"));
    assert!(schema("messages").ends_with("WITHOUT ROWID"));
    drop(conn);
    assert_eq!(conversations(&fx), before, "every message survives");
    assert_eq!(before.len(), 2);
    let found = fx.listing(&["history", "--search", "login"]);
    assert_eq!(
        found[0]["title"], "Fix the login bug",
        "old revisions are in the search index: {found}"
    );

    let runs = fx.listing(&["runs"]);
    assert_eq!(runs.as_array().unwrap().len(), 2);
    assert!(runs
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["source"]["kind"] == "engine"));
    let model: Value = fx.listing(&["model"]);
    assert_eq!(model["model"], "demo", "settings survive");

    // The pending plan is still pending, and deciding it works on the upgraded store.
    let pending = fx.listing(&["pending"]);
    assert_eq!(pending.as_array().unwrap().len(), 1);
    let run = pending[0]["runId"].as_str().unwrap().to_owned();
    let sha = pending[0]["revision"]["sha256"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(pending[0]["revision"]["title"], "Fix the login bug");
    std::fs::create_dir_all(FIXTURE_WORKSPACE).unwrap();
    let resumed = fx.stream(&["approve", &run, "--revision", &sha[..8]]);
    assert_eq!(*types(&resumed).last().unwrap(), "finish");
    assert_eq!(fx.listing(&["pending"]), serde_json::json!([]));
}

#[test]
fn a_store_written_by_a_newer_plandesk_is_refused() {
    if sqlite_only("a_store_written_by_a_newer_plandesk_is_refused") {
        return;
    }
    let fx = Fixture::new(serde_json::json!([]));
    fx.ok(&["runs"]);
    let conn = rusqlite::Connection::open(fx.data.join("plandesk.db")).unwrap();
    conn.pragma_update(None, "user_version", 999).unwrap();
    drop(conn);
    let err = fx.refused(&["runs"]);
    assert!(
        err.contains("written by a newer Plandesk") && err.contains("999"),
        "{err}"
    );
    assert!(
        err.contains("plandesk.db"),
        "the line names the file: {err}"
    );
}

#[test]
fn a_damaged_store_gives_one_clear_line_and_keyless_commands_still_work() {
    if sqlite_only("a_damaged_store_gives_one_clear_line_and_keyless_commands_still_work") {
        return;
    }
    let fx = Fixture::new(serde_json::json!([]));
    std::fs::create_dir_all(&fx.data).unwrap();
    std::fs::write(fx.data.join("plandesk.db"), vec![0x5a; 8192]).unwrap();
    let err = fx.refused(&["pending"]);
    assert!(
        err.contains("plandesk.db") && err.contains("not a Plandesk database or is damaged"),
        "{err}"
    );
    // Commands that need no store never open it.
    fx.ok(&["key", "list"]);
    fx.ok(&["--help"]);
    fx.ok(&["run", "--help"]);
}

#[test]
fn a_read_only_store_gives_one_clear_line() {
    if sqlite_only("a_read_only_store_gives_one_clear_line") {
        return;
    }
    let fx = Fixture::new(serde_json::json!([]));
    fx.ok(&["runs"]);
    // Root writes anywhere: run as `nobody`, who may read the store but not write it.
    use std::os::unix::fs::PermissionsExt;
    for dir in [&fx.root, &fx.data] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_plandesk"))
        .args(["--data-dir", fx.data.to_str().unwrap(), "runs"])
        .env("DBUS_SESSION_BUS_ADDRESS", NO_BUS)
        .output()
        .expect("setpriv (util-linux) runs the CLI as nobody");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.starts_with("setpriv:"), "{stderr}");
    assert!(!out.status.success(), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("plandesk.db") && stderr.contains("cannot be written"),
        "{stderr}"
    );
}

/// `plandesk store`: a data folder's choice of store, checked before it is saved, shared by
/// every command on that folder.
#[test]
fn a_data_folder_is_pointed_at_a_team_store_and_back() {
    let fx = Fixture::new(serde_json::json!([{"toolCalls": [submit("c1", PLAN)]}]));
    fx.write(PLAN, PLAN_TEXT.as_bytes());
    // The suite may put every fixture on PostgreSQL through the environment: not here.
    let store = |args: &[&str]| {
        let mut command = fx.command(&[&["store"][..], args].concat());
        command.env_remove("PLANDESK_STORE");
        command.output().unwrap()
    };
    let text = |out: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let shown = store(&[]);
    assert!(shown.status.success());
    assert!(
        text(&shown).contains(&fx.data.join("plandesk.db").display().to_string()),
        "{}",
        text(&shown)
    );
    let url = crate::pg::database();
    let with_password = url.replace("postgres@", "postgres:hunter2@");
    for (bad, says) in [
        (with_password.as_str(), "~/.pgpass"),
        ("mysql://ana@db/team", "PostgreSQL URL"),
        ("postgres://ana@127.0.0.1:9/team", "cannot open the store"),
    ] {
        let out = store(&["set", bad]);
        assert!(!out.status.success(), "{bad} was saved");
        assert!(text(&out).contains(says), "{bad}: {}", text(&out));
        assert!(!text(&out).contains("hunter2"), "{}", text(&out));
        assert!(!fx.data.join("team-store").exists());
    }
    let saved = store(&["set", &url]);
    assert!(saved.status.success(), "{}", text(&saved));
    assert!(
        text(&saved).contains("Store: postgres://postgres@127.0.0.1:"),
        "{}",
        text(&saved)
    );
    // Every command on the folder now works on the team store.
    let mut run = fx.command(&[
        "run",
        "--model",
        &format!("scripted:{}", fx.script.display()),
        "Add a cache",
    ]);
    run.env_remove("PLANDESK_STORE");
    let ran = run.output().unwrap();
    assert!(ran.status.success(), "{}", text(&ran));
    let team = plandesk::config::StoreLocation::postgres(url);
    let runs = block_on(async { team.open().await.unwrap().runs().await.unwrap() });
    assert_eq!(runs.len(), 1, "the run is in the team's database");
    let cleared = store(&["clear"]);
    assert!(text(&cleared).contains(&fx.data.join("plandesk.db").display().to_string()));
    assert!(!fx.data.join("team-store").exists());
}

#[test]
fn what_a_long_message_says_is_among_what_the_store_keeps() {
    // Checks that a secret is never stored read `Fixture::stored`: a long message is kept
    // compressed, so it must read the conversation back too, or such checks could not fail.
    let marker = "a-marker-that-must-be-found-0123456789";
    let long = format!("{}{marker}", "Reading the library again. ".repeat(60));
    let fx = Fixture::new(serde_json::json!([text(&long)]));
    let (run, _) = fx.start(&[]);
    let found: Vec<String> = fx
        .stored()
        .into_iter()
        .filter(|(_, bytes)| bytes.windows(marker.len()).any(|w| w == marker.as_bytes()))
        .map(|(place, _)| place)
        .collect();
    assert!(
        found.contains(&format!("the conversation of run {run}")),
        "{found:?}"
    );
}
