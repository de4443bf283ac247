//! The app serving its network (Settings → Review from your phone), over real HTTP at this
//! computer's own network address: on at a port the person chose, remembered with its network
//! and serving at the next launch there, stopped while the computer is on another network, a
//! taken port said plainly, waiting plans answered "not approved" when it stops or the app
//! quits, off until turned on again.

use plandesk::source::serve::nearby::{
    network_address, Switch, DEFAULT_PORT, NETWORK_SETTING, PORT_SETTING,
};
use plandesk::source::serve::web::pair;
use plandesk::Engine;

use super::*;
use crate::pg::free_port;

/// The status of a GET of `url`, or `None` when nothing answers there.
async fn status(url: &str) -> Option<u16> {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let answer = client.get(url).timeout(Duration::from_secs(5)).send().await;
    answer.ok().map(|r| r.status().as_u16())
}

/// A Claude Code http hook's plan waiting on the server at `base`, answered when it stops.
async fn waiting_hook(fx: &Fixture, base: &str, session: &str) -> tokio::task::JoinHandle<Value> {
    let token = create_token(fx, session);
    let base = base.to_owned();
    let payload = hook_payload(session, json!({"plan": "# Wait\n\nfor me"}));
    let answer =
        tokio::spawn(async move { json_of(post_hook(&base, Some(&token), &payload).await).await });
    until_pending(fx).await;
    answer
}

/// The waiting hook's answer (within 30 s): "not approved".
async fn assert_denied(waiting: tokio::task::JoinHandle<Value>) {
    let answer = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the waiting hook is answered")
        .unwrap();
    let decision = &answer["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "deny", "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_serves_its_network_at_its_address_and_again_at_its_next_launch_there() {
    let fx = Fixture::new(json!([]));
    let engine = Engine::open_at(&fx.store, "app").await.unwrap();
    let here = network_address().expect("this test needs this computer on a network");
    assert!(!here.ip.is_loopback(), "{here:?}");
    let switch = Switch::default();
    let off = switch.serving(&engine).await;
    assert_eq!(
        (off.on, off.port, off.url, off.error),
        (false, DEFAULT_PORT, None, None)
    );

    // On: the review answers at this computer's network address, and a sign-in link names it.
    let port = free_port();
    let on = switch
        .turn_on(&engine, &fx.data, &format!(" {port} "))
        .await
        .unwrap();
    let url = format!("http://{}:{port}", here.ip);
    assert_eq!(
        (on.on, on.port, on.url.as_deref()),
        (true, port, Some(&*url))
    );
    assert_eq!((on.beyond_network, on.error), (!here.private(), None));
    assert_eq!(on.network, Some(here.network()));
    let page = format!("{url}/?signin=1");
    assert_eq!(
        status(&page).await,
        Some(401),
        "the sign-in page, to anyone"
    );
    assert_eq!(
        engine.setting(PORT_SETTING).await.unwrap(),
        Some(port.to_string())
    );
    assert_eq!(
        engine.setting(NETWORK_SETTING).await.unwrap(),
        Some(here.network())
    );
    let base = switch.url().await;
    let link = pair::sign_in_link(&engine, None, base.as_deref())
        .await
        .unwrap();
    assert!(
        link.url.starts_with(&format!("{url}/pair/pdp_")),
        "{}",
        link.url
    );
    assert!(!link.only_here);

    // Another launch on the same store while this one serves: the port is taken, and said so.
    let other = Switch::default();
    other.follow_network(&engine, &fx.data).await;
    let shown = other.serving(&engine).await;
    assert!(!shown.on);
    let why = shown.error.unwrap();
    assert!(why.starts_with(&format!("Port {port} is taken")), "{why}");

    // The app quits: what waits on it is told no, and the next launch serves again.
    let waiting = waiting_hook(&fx, &url, "quit").await;
    switch.shut_down().await;
    assert_denied(waiting).await;
    assert_eq!(status(&page).await, None);
    // Quitting, nothing starts it again.
    switch.follow_network(&engine, &fx.data).await;
    assert_eq!(status(&page).await, None);
    assert_eq!(
        switch
            .turn_on(&engine, &fx.data, &port.to_string())
            .await
            .unwrap_err()
            .code,
        "quitting"
    );
    let next = Switch::default();
    next.follow_network(&engine, &fx.data).await;
    let resumed = next.serving(&engine).await;
    assert_eq!((resumed.on, resumed.port), (true, port));
    assert_eq!(status(&page).await, Some(401));

    // Off: what waits is told no, nothing answers, and the launch after does not serve.
    let waiting = waiting_hook(&fx, &url, "stop").await;
    let off = next.turn_off(&engine).await.unwrap();
    assert_denied(waiting).await;
    assert_eq!((off.on, off.url), (false, None));
    assert_eq!(status(&page).await, None);
    assert_eq!(engine.setting(PORT_SETTING).await.unwrap(), None);
    assert_eq!(engine.setting(NETWORK_SETTING).await.unwrap(), None);
    let after = Switch::default();
    after.follow_network(&engine, &fx.data).await;
    assert!(!after.serving(&engine).await.on);
    let statuses: Vec<Value> = fx.listing(&["history"]).as_array().unwrap().clone();
    assert!(
        statuses.iter().all(|r| r["status"] == "abandoned"),
        "{statuses:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_another_network_it_stops_and_serves_again_once_back() {
    let fx = Fixture::new(json!([]));
    let engine = Engine::open_at(&fx.store, "app").await.unwrap();
    let here = network_address().expect("this test needs this computer on a network");
    let port = free_port();
    let page = format!("http://{}:{port}/?signin=1", here.ip);
    let switch = Switch::default();
    assert!(
        switch
            .turn_on(&engine, &fx.data, &port.to_string())
            .await
            .unwrap()
            .on
    );
    // Only at this computer's address on the network allowed: not on its loopback.
    assert_eq!(
        status(&format!("http://127.0.0.1:{port}/?signin=1")).await,
        None
    );
    // As if the phones were let in at home, and the computer is now at a café: a plan waiting
    // on it is told no, it stops, and Settings says why.
    engine
        .set_setting(NETWORK_SETTING, Some("203.0.113.0/24"))
        .await
        .unwrap();
    let waiting = waiting_hook(&fx, &format!("http://{}:{port}", here.ip), "moved").await;
    switch.follow_network(&engine, &fx.data).await;
    assert_denied(waiting).await;
    assert_eq!(status(&page).await, None);
    let shown = switch.serving(&engine).await;
    assert!(!shown.on);
    assert_eq!(
        shown.error.as_deref(),
        Some(&*format!(
            "Not letting phones in: this computer is on another network ({}) than the one you \
             let them in on (203.0.113.0/24). Turn it on again here if you trust this one.",
            here.network()
        ))
    );
    // A launch there does not serve either.
    let launched = Switch::default();
    launched.follow_network(&engine, &fx.data).await;
    assert!(!launched.serving(&engine).await.on);
    // Back on the network allowed, it serves again, at the same port.
    engine
        .set_setting(NETWORK_SETTING, Some(&*here.network()))
        .await
        .unwrap();
    switch.follow_network(&engine, &fx.data).await;
    let back = switch.serving(&engine).await;
    assert_eq!((back.on, back.port, back.error), (true, port, None));
    assert_eq!(status(&page).await, Some(401));
    switch.turn_off(&engine).await.unwrap();
    // Turned off, following the network starts nothing.
    switch.follow_network(&engine, &fx.data).await;
    assert_eq!(status(&page).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_that_is_taken_or_not_a_port_serves_nothing_and_says_why() {
    let fx = Fixture::new(json!([]));
    let engine = Engine::open_at(&fx.store, "app").await.unwrap();
    network_address().expect("this test needs this computer on a network");
    let switch = Switch::default();
    for typed in ["", "0", "65536", "80a", "-1", "+80", "8 0"] {
        let refused = switch.turn_on(&engine, &fx.data, typed).await.unwrap_err();
        assert_eq!(refused.code, "invalid-input", "{typed:?}");
        assert_eq!(refused.message, "Choose a port from 1 to 65535");
    }
    let taken = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let shown = switch
        .turn_on(&engine, &fx.data, &port.to_string())
        .await
        .unwrap();
    assert!(!shown.on);
    let why = shown.error.unwrap();
    assert!(why.starts_with(&format!("Port {port} is taken")), "{why}");
    assert_eq!(
        engine.setting(PORT_SETTING).await.unwrap(),
        None,
        "not remembered"
    );
}
