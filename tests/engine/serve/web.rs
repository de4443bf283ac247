//! The web review's doors, over real HTTP: what is public (the UI's code), what a session
//! opens, the checks on every state change, the cookie behind an https proxy, sign-in links
//! rate-limited and signing out.

use serde_json::{json, Value};

use super::*;

/// A sign-in link made with the CLI for `name`.
fn pair(fx: &Fixture, server: &Server, name: &str) -> String {
    let out = fx.ok(&["--json", "pair", "--name", name, "--url", &server.base]);
    let link: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(link["name"], name);
    assert_eq!(link["onlyHere"], true, "the test server is on 127.0.0.1");
    link["url"].as_str().unwrap().to_owned()
}

/// A link to this computer's own address says a phone cannot open it; one to another does not.
#[test]
fn a_link_to_this_computer_says_a_phone_cannot_open_it() {
    let fx = Fixture::new(json!([]));
    let said = String::from_utf8(fx.ok(&["pair", "--name", "here"]).stderr).unwrap();
    assert!(
        said.contains("reaches this computer only, so a phone cannot open it"),
        "{said}"
    );
    let out = fx.ok(&[
        "--json",
        "pair",
        "--name",
        "lan",
        "--url",
        "http://10.0.0.5:8765",
    ]);
    let link: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(link["onlyHere"], false);
    assert!(link["url"]
        .as_str()
        .unwrap()
        .starts_with("http://10.0.0.5:8765/pair/pdp_"));
    let said = String::from_utf8(out.stderr).unwrap();
    assert!(!said.contains("this computer only"), "{said}");
}

/// A GET of `path` exactly as written, over a plain TCP connection: its status.
async fn raw_get(server: &Server, path: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = server.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {answer}"))
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Uses a link as its page's form does; the `Set-Cookie` it answers with.
async fn sign_in(server: &Server, link: &str, forwarded_https: bool) -> String {
    let mut request = client().post(link).header("origin", &server.base);
    if forwarded_https {
        request = request.header("x-forwarded-proto", "https");
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()["location"], "/");
    response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned()
}

fn session_of(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().to_owned()
}

async fn api(
    server: &Server,
    cookie: Option<&str>,
    origin: Option<&str>,
    command: &str,
) -> (u16, Value) {
    let mut request = client()
        .post(format!("{}/api/{command}", server.base))
        .header("content-type", "application/json")
        .body("{}");
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// While the store cannot say whether a session is active, its event stream carries nothing
/// of the inbox; a command the store fails is a 503 without the store's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_cannot_be_asked_gives_a_session_nothing() {
    let fx = Fixture::new(json!([]));
    let server = Server::start(&fx, &[]);
    let link = pair(&fx, &server, "ann");
    let cookie = session_of(&sign_in(&server, &link, false).await);
    let mut events = client()
        .get(format!("{}/api/events", server.base))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), 200);
    // The inbox as it is when the stream opens (after a keep-alive if it is not read yet).
    loop {
        let chunk = events.chunk().await.unwrap().unwrap();
        if String::from_utf8_lossy(&chunk).starts_with("event: inbox-changed") {
            break;
        }
    }

    std::thread::scope(|s| {
        s.spawn(|| raw_sql(&fx, "ALTER TABLE tokens RENAME TO tokens_elsewhere"));
    });
    // A plan arrives (from a hook on this machine, which needs no token).
    let payload = hook_payload("s1", json!({"plan": "# Secret\n\nDo it"}));
    let hook = fx.command(&["hook", "claude-code"]);
    let mut hook = spawn_with_input(hook, payload.to_string().as_bytes());
    let mut seen = Vec::new();
    let until = tokio::time::Instant::now() + Duration::from_secs(3);
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(until, events.chunk()).await {
        seen.extend_from_slice(&chunk);
    }
    let seen = String::from_utf8_lossy(&seen);
    assert!(!seen.contains("Secret"), "{seen}");
    assert_eq!(fx.listing(&["pending"]).as_array().unwrap().len(), 1);

    std::thread::scope(|s| {
        s.spawn(|| {
            raw_sql(&fx, "ALTER TABLE tokens_elsewhere RENAME TO tokens");
            raw_sql(&fx, "ALTER TABLE pending RENAME TO pending_elsewhere");
        });
    });
    let (status, body) = api(&server, Some(&cookie), Some(&server.base), "inbox").await;
    assert_eq!(status, 503, "{body}");
    let said = body["message"].as_str().unwrap();
    assert!(!said.contains("pending"), "{said}");
    hook.kill().unwrap();
    hook.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_opens_the_api_and_every_state_change_must_come_from_its_pages() {
    let fx = Fixture::new(json!([]));
    let server = Server::start(&fx, &[]);
    // The UI's code is public; it holds no data.
    let script = client()
        .get(format!("{}/api.js", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(script.status(), 200);
    assert_eq!(
        script.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    assert!(script.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("script-src 'self'"));
    // Sent as written (a client library would tidy the dots away): only the UI's own files.
    for hidden in [
        "/../Cargo.toml",
        "/%2e%2e/Cargo.toml",
        "/..%2fCargo.toml",
        "/ui/app.js",
        "/nowhere",
    ] {
        assert_eq!(raw_get(&server, hidden).await, 404, "{hidden}");
    }

    let link = pair(&fx, &server, "ann");
    let set_cookie = sign_in(&server, &link, false).await;
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=2592000"] {
        assert!(set_cookie.contains(attribute), "{set_cookie}");
    }
    assert!(!set_cookie.contains("Secure"), "plain HTTP: {set_cookie}");
    let cookie = session_of(&set_cookie);
    let origin = server.base.clone();

    let (status, info) = api(&server, Some(&cookie), Some(&origin), "app_info").await;
    assert_eq!(
        (status, &info["reviewer"], &info["web"]),
        (200, &json!("ann"), &json!(true))
    );
    // No Origin, another origin, or not JSON: refused before the command runs.
    assert_eq!(api(&server, Some(&cookie), None, "inbox").await.0, 403);
    assert_eq!(
        api(&server, Some(&cookie), Some("http://evil.example"), "inbox")
            .await
            .0,
        403
    );
    let text = client()
        .post(format!("{}/api/inbox", server.base))
        .header("cookie", &cookie)
        .header("origin", &origin)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(text.status(), 403);
    let cross_site = client()
        .post(format!("{}/api/inbox", server.base))
        .header("cookie", &cookie)
        .header("origin", &origin)
        .header("sec-fetch-site", "cross-site")
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(cross_site.status(), 403);
    // What only the desktop app does is refused by name.
    let (status, refused) = api(&server, Some(&cookie), Some(&origin), "start_run").await;
    assert_eq!((status, &refused["code"]), (400, &json!("desktop-only")));
    // An agent's token is not a session, and a session is not an agent's token.
    let token = create_token(&fx, "laptop");
    let as_cookie = format!("plandesk_session={token}");
    assert_eq!(
        api(&server, Some(&as_cookie), Some(&origin), "inbox")
            .await
            .0,
        401
    );
    let secret = cookie.split('=').nth(1).unwrap();
    let hook = client()
        .post(format!("{}/hooks/claude", server.base))
        .bearer_auth(secret)
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(hook.status(), 401);

    // Signing out ends the session, here and in `plandesk session list`.
    let (status, _) = api(&server, Some(&cookie), Some(&origin), "sign_out").await;
    assert_eq!(status, 200);
    assert_eq!(
        api(&server, Some(&cookie), Some(&origin), "inbox").await.0,
        401
    );
    let sessions: Value =
        serde_json::from_slice(&fx.ok(&["--json", "session", "list"]).stdout).unwrap();
    let ann: Vec<(&str, bool)> = sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["kind"].as_str().unwrap(), s["revokedAt"].is_null()))
        .collect();
    assert_eq!(ann, [("pairing", false), ("session", false)], "{sessions}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_an_https_proxy_the_cookie_is_secure_and_the_forwarded_host_is_the_origin() {
    let fx = Fixture::new(json!([]));
    let server = Server::start(&fx, &[]);
    let set_cookie = sign_in(&server, &pair(&fx, &server, "bob"), true).await;
    assert!(set_cookie.contains("; Secure"), "{set_cookie}");
    let cookie = session_of(&set_cookie);
    let response = client()
        .post(format!("{}/api/inbox", server.base))
        .header("cookie", &cookie)
        .header("origin", "https://plans.example.com")
        .header("x-forwarded-host", "plans.example.com")
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_attempts_are_rate_limited() {
    let fx = Fixture::new(json!([]));
    let server = Server::start(&fx, &[]);
    let guess = format!("{}/pair/pdp_{}", server.base, "0".repeat(64));
    let mut statuses = Vec::new();
    for _ in 0..12 {
        statuses.push(client().get(&guess).send().await.unwrap().status().as_u16());
    }
    assert_eq!(statuses[..10], [410; 10]);
    assert_eq!(statuses[10..], [429, 429]);
    // A real link from the same address waits too: nothing is tried meanwhile.
    let link = pair(&fx, &server, "carol");
    let response = client().get(&link).send().await.unwrap();
    assert_eq!(response.status(), 429);
    assert!(response.headers().contains_key("retry-after"));
}

/// Behind a reverse proxy every browser comes from the proxy's address: told to trust it, the
/// server counts sign-in attempts by the address the proxy forwards, so one browser guessing
/// links does not hold up another's sign-in; what a client forges before the proxy's entry,
/// and the header from a peer not trusted, count for nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_sign_in_attempts_count_per_forwarded_address() {
    let fx = Fixture::new(json!([]));
    let server = Server::start(&fx, &["--trusted-proxy", "127.0.0.1"]);
    let guess = format!("{}/pair/pdp_{}", server.base, "0".repeat(64));
    let from = |forwarded: &'static str, url: &str| {
        client()
            .get(url)
            .header("x-forwarded-for", forwarded)
            .send()
    };
    let mut statuses = Vec::new();
    for _ in 0..11 {
        // The guesser forges an address of its own before the proxy's entry.
        let status = from("198.51.100.7, 203.0.113.5", &guess)
            .await
            .unwrap()
            .status();
        statuses.push(status.as_u16());
    }
    assert_eq!(statuses[10], 429, "{statuses:?}");
    let link = pair(&fx, &server, "carol");
    let response = from("203.0.113.6", &link).await.unwrap();
    assert_eq!(
        response.status(),
        200,
        "another browser behind the proxy signs in"
    );
    let forged = from("203.0.113.6, 203.0.113.5", &guess).await.unwrap();
    assert_eq!(forged.status(), 429, "the proxy's entry is what counts");

    // Not told of a proxy: the header is the client's word and counts for nothing.
    let direct = Server::start(&fx, &[]);
    let guess = format!("{}/pair/pdp_{}", direct.base, "1".repeat(64));
    for n in 0..10 {
        let forwarded = ["203.0.113.1", "203.0.113.2"][n % 2];
        assert_eq!(from(forwarded, &guess).await.unwrap().status(), 410);
    }
    assert_eq!(from("203.0.113.3", &guess).await.unwrap().status(), 429);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_that_fails_is_tried_again_with_backoff_and_its_failure_is_listed() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let fx = Fixture::new(json!([]));
    // A receiver that answers every POST with a 500.
    let receiver = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = receiver.local_addr().unwrap();
    let tries = Arc::new(AtomicUsize::new(0));
    let counted = tries.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = receiver.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let mut buffer = vec![0u8; 64 * 1024];
            let _ = stream.read(&mut buffer).await;
            let _ = stream
                .write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .await;
        }
    });
    fx.ok(&[
        "webhook",
        "add",
        &format!("http://{address}/hook"),
        "--format",
        "slack",
    ]);
    let token = create_token(&fx, "laptop");
    let server = Server::start(&fx, &[]);
    let payload = hook_payload("s1", json!({"plan": "# Ship it\n\nNow."}));
    let waiting = tokio::spawn({
        let base = server.base.clone();
        async move { post_hook(&base, Some(&token), &payload).await }
    });
    let started = std::time::Instant::now();
    let failed = loop {
        let listed: Value =
            serde_json::from_slice(&fx.ok(&["--json", "webhook", "list"]).stdout).unwrap();
        if listed[0]["last"]["ok"] == json!(false) {
            break listed;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no failure listed: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(tries.load(Ordering::SeqCst), 5, "five tries");
    assert!(
        started.elapsed() >= Duration::from_secs(15),
        "waits of 1, 2, 4 and 8 s between them"
    );
    assert_eq!(
        failed[0]["last"]["error"],
        "answered 500 Internal Server Error (tried 5 times)"
    );
    assert_eq!(failed[0]["format"], "slack");
    fx.ok(&[
        "reject",
        fx.listing(&["pending"])[0]["runId"].as_str().unwrap(),
        "--feedback",
        "later",
    ]);
    let answer = waiting.await.unwrap();
    assert_eq!(answer.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browsers_decision_is_its_persons_and_names_the_whole_revision() {
    let fx = Fixture::new(json!([]));
    // The desktop's reviewer, named in Settings on this store: not who decides from a phone.
    let store = fx.store.open().await.unwrap();
    store
        .set_setting("reviewer_name", Some("Desk Person"), 1)
        .await
        .unwrap();
    let token = create_token(&fx, "laptop");
    let server = Server::start(&fx, &[]);
    let link = pair(&fx, &server, "ann");
    // Two uses of one link at once: one session.
    let (first, second) = tokio::join!(
        client().post(&link).header("origin", &server.base).send(),
        client().post(&link).header("origin", &server.base).send()
    );
    let mut statuses = [
        first.unwrap().status().as_u16(),
        second.unwrap().status().as_u16(),
    ];
    statuses.sort_unstable();
    assert_eq!(statuses, [303, 410]);
    let sessions: Value =
        serde_json::from_slice(&fx.ok(&["--json", "session", "list"]).stdout).unwrap();
    assert_eq!(
        sessions.as_array().unwrap().len(),
        2,
        "one link, one session: {sessions}"
    );
    // A link's POST from another origin (or none) is refused, and the link not used up.
    let other = pair(&fx, &server, "bob");
    for origin in [Some("http://evil.example"), None] {
        let mut request = client().post(&other);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        assert_eq!(request.send().await.unwrap().status(), 403, "{origin:?}");
    }
    let cookie = session_of(&sign_in(&server, &other, false).await);

    let payload = hook_payload("s1", json!({"plan": "# Ship it\n\nNow."}));
    let waiting = tokio::spawn({
        let base = server.base.clone();
        async move { post_hook(&base, Some(&token), &payload).await }
    });
    let item = until_pending(&fx).await;
    let (run_id, call_id) = (item["runId"].clone(), item["toolCallId"].clone());
    let sha = item["revision"]["sha256"].as_str().unwrap().to_owned();
    let decide = |revision: Value| {
        let body = json!({"request": {"runId": run_id, "toolCallId": call_id, "approve": true,
                                      "feedback": null, "note": null, "revision": revision}});
        client()
            .post(format!("{}/api/decide", server.base))
            .header("cookie", &cookie)
            .header("origin", &server.base)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
    };
    // Whatever is pending, or a prefix an agent could collide: refused.
    for revision in [Value::Null, json!(&sha[..8])] {
        let refused = decide(revision.clone()).await.unwrap();
        assert_eq!(refused.status(), 400, "{revision}");
        let body: Value = serde_json::from_str(&refused.text().await.unwrap()).unwrap();
        assert_eq!(body["code"], "invalid-input", "{revision}: {body}");
    }
    assert_eq!(
        fx.listing(&["pending"]).as_array().unwrap().len(),
        1,
        "still waiting"
    );
    assert_eq!(decide(json!(sha)).await.unwrap().status(), 200);
    let answer: Value =
        serde_json::from_str(&waiting.await.unwrap().text().await.unwrap()).unwrap();
    assert_eq!(
        answer["hookSpecificOutput"]["decision"]["behavior"],
        "allow"
    );
    let audit = String::from_utf8(fx.ok(&["--json", "audit"]).stdout).unwrap();
    let decided: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["kind"] == "decided")
        .collect();
    assert_eq!(decided.len(), 1);
    assert_eq!(
        (&decided[0]["actor"], &decided[0]["process"]),
        (&json!("bob"), &json!("web"))
    );
}
