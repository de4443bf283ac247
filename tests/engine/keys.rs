//! API keys in the OS keyring: a real Secret Service (GNOME Keyring on a private session bus),
//! and the plain answer when there is none.

use std::process::Command;

use serde_json::json;

use crate::http_server::{fixture, ReplayServer, Reply};
use crate::support::{spawn_with_input, Fixture};

const KEY: &str = "sk-keyring-7c0ffee-0123456789";

#[test]
fn without_a_keyring_service_the_cli_says_so_and_points_to_the_environment() {
    let fx = Fixture::new(json!([]));
    let child = spawn_with_input(
        fx.command(&["key", "set", "openai"]),
        format!("{KEY}\n").as_bytes(),
    );
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no OS keyring service is available")
            && err.contains("Set OPENAI_API_KEY in the environment instead"),
        "{err}"
    );
    assert!(!err.contains(KEY));
    let listed = fx.ok(&["key", "list"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("openai\tnone (no OS keyring service"),
        "{listed}"
    );
}

/// Runs `script` with `sh` on a private session bus where GNOME Keyring serves the Secret
/// Service (unlocked with a throwaway password, its files in a temp HOME).
fn with_keyring(fx: &Fixture, script: &str) -> std::process::Output {
    assert!(
        Command::new("gnome-keyring-daemon")
            .arg("--version")
            .output()
            .is_ok(),
        "gnome-keyring-daemon is missing: `./x test` installs it (apt gnome-keyring)"
    );
    let home = fx.root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let full = format!(
        "set -e\n\
         echo -n test-password | gnome-keyring-daemon --unlock --components=secrets >/dev/null\n\
         {script}"
    );
    Command::new("dbus-run-session")
        .args(["--", "sh", "-c", &full])
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_RUNTIME_DIR", &home)
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .env("PLANDESK", env!("CARGO_BIN_EXE_plandesk"))
        .env("DATA", &fx.data)
        .current_dir(&fx.workspace)
        .output()
        .unwrap()
}

#[test]
fn a_key_saved_in_the_keyring_is_used_and_never_stored() {
    let fx = Fixture::new(json!([]));
    let server = ReplayServer::start();
    server.push(Reply::sse(&fixture("openai", "text")));
    let spec = format!("openai:test-model@{}/v1", server.url());
    let script = format!(
        "echo '{KEY}' | \"$PLANDESK\" --data-dir \"$DATA\" key set openai\n\
         \"$PLANDESK\" --data-dir \"$DATA\" key list\n\
         \"$PLANDESK\" --data-dir \"$DATA\" model\n\
         \"$PLANDESK\" --data-dir \"$DATA\" --json run --model '{spec}' 'Say hello' > /dev/null\n\
         \"$PLANDESK\" --data-dir \"$DATA\" key rm openai\n\
         \"$PLANDESK\" --data-dir \"$DATA\" key list\n"
    );
    let out = with_keyring(&fx, &script);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "openai\tin the OS keyring",
            "anthropic\tnone",
            "openai:gpt-4.1\ta openai key is in the OS keyring",
            "openai\tnone",
            "anthropic\tnone",
        ],
        "{stderr}"
    );
    assert!(stderr.contains("the openai key is saved in the OS keyring"));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].headers.get("authorization").map(String::as_str),
        Some(format!("Bearer {KEY}").as_str()),
        "the run used the keyring's key"
    );
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY));
    for entry in std::fs::read_dir(&fx.data).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            continue; // the store's wake folder: sockets, no data
        }
        let bytes = std::fs::read(path).unwrap();
        assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()));
    }
}
