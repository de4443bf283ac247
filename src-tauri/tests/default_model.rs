#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is the failure report
//! The model new runs use when none is named: not looked for to open the window (the keyring
//! and the network are slow, and the first view does not need it), looked for again each time
//! it is asked, and not at all when a model is saved. Its own test binary: it sets the
//! environment the lookup reads, before the app starts.

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use plandesk::model::select::{self, Provider};
use plandesk::Engine;
use plandesk_app::Options;
use serde_json::{json, Value};

/// A local server that answers `GET /v1/models` as Ollama does, counting the times it is asked.
struct Ollama {
    url: String,
    asked: Arc<AtomicUsize>,
    model: Arc<Mutex<String>>,
}

impl Ollama {
    fn start(model: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let asked = Arc::new(AtomicUsize::new(0));
        let model = Arc::new(Mutex::new(model.to_owned()));
        let (count, name) = (asked.clone(), model.clone());
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let mut request = Vec::new();
                let mut buf = [0; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                assert!(
                    request.starts_with(b"GET /v1/models "),
                    "{}",
                    String::from_utf8_lossy(&request)
                );
                let body = json!({"object": "list", "data": [{"id": *name.lock().unwrap()}]});
                let body = body.to_string();
                // Counted before it answers: the app may read the answer and go on at once.
                count.fetch_add(1, Ordering::SeqCst);
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Self { url, asked, model }
    }

    fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

#[test]
fn the_default_model_is_looked_for_when_asked_and_not_when_one_is_saved() {
    let ollama = Ollama::start("qwen3:0.6b");
    // Only the local Ollama is set up: no key in the environment, and no keyring (a dead
    // session bus), whatever this machine has.
    std::env::set_var("OLLAMA_HOST", &ollama.url);
    std::env::set_var(
        "DBUS_SESSION_BUS_ADDRESS",
        "unix:path=/nonexistent/plandesk-test-bus",
    );
    for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"] {
        std::env::remove_var(var);
    }
    let base = Provider::Ollama.base_url_from_env();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (_app, webview) = support::app(&Options {
        data_dir: Some(data.clone()),
        workspace: Some(dir.path().to_owned()),
        ..Options::default()
    });
    let chosen = || support::ok(&webview, "default_model", json!({}));
    let ollama_says = |model: &str| {
        json!({"spec": format!("ollama:{model}@{base}"),
               "reason": format!("a local Ollama answers at {base}")})
    };

    // Opening the window asks nothing of the network.
    let info = support::ok(&webview, "app_info", json!({}));
    assert_eq!(
        info["workspace"],
        Value::from(dir.path().display().to_string())
    );
    assert_eq!(ollama.asked(), 0, "app_info looked for a model");

    assert_eq!(
        chosen(),
        ollama_says("qwen3:0.6b"),
        "only the local Ollama is set up"
    );
    assert_eq!(ollama.asked(), 1);
    // Asked again, it looks again: a model pulled since shows.
    *ollama.model.lock().unwrap() = "llama3.2".into();
    assert_eq!(chosen(), ollama_says("llama3.2"));
    assert_eq!(ollama.asked(), 2);

    // A saved choice comes first, and nothing is looked for.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let engine = Engine::open(&data).unwrap();
    runtime
        .block_on(engine.set_setting(select::MODEL_SETTING, Some("anthropic:claude-sonnet-4-5")))
        .unwrap();
    assert_eq!(
        chosen(),
        json!({"spec": "anthropic:claude-sonnet-4-5",
               "reason": "your saved choice"})
    );
    assert_eq!(ollama.asked(), 2);
}
