//! The app serving its network (Settings → Review from your phone), over real HTTP at this
//! computer's own network address: on at a port the person chose, remembered and resumed at
//! the next launch, a taken port said plainly, off until turned on again.

use plandesk::source::serve::nearby::{network_address, Switch, DEFAULT_PORT, PORT_SETTING};
use plandesk::source::serve::web::pair;
use plandesk::Engine;

use super::*;

/// A port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("0.0.0.0:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The status of a GET of `url`, or `None` when nothing answers there.
async fn status(url: &str) -> Option<u16> {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let answer = client.get(url).timeout(Duration::from_secs(5)).send().await;
    answer.ok().map(|r| r.status().as_u16())
}

/// Waits until nothing answers at `url` any more (a server stopping drains for a moment).
async fn until_closed(url: &str) {
    for _ in 0..150 {
        if status(url).await.is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{url} still answers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_serves_its_network_at_its_address_and_again_at_its_next_launch() {
    let fx = Fixture::new(json!([]));
    let engine = Engine::open_at(&fx.store, "app").await.unwrap();
    let switch = Switch::default();
    let off = switch.serving(&engine).await;
    assert_eq!(
        (off.on, off.port, off.url, off.error),
        (false, DEFAULT_PORT, None, None)
    );
    let port = free_port();
    let Some(ip) = network_address() else {
        // This computer is on no network: the switch says so and serves nothing.
        let shown = switch
            .turn_on(&engine, &fx.data, &port.to_string())
            .await
            .unwrap();
        assert!(!shown.on);
        assert!(shown.error.unwrap().contains("on no network"));
        return;
    };
    assert!(!ip.is_loopback(), "{ip}");

    // On: the review answers at this computer's network address, and a sign-in link names it.
    let on = switch
        .turn_on(&engine, &fx.data, &format!(" {port} "))
        .await
        .unwrap();
    let url = format!("http://{ip}:{port}");
    assert_eq!(
        (on.on, on.port, on.url.as_deref()),
        (true, port, Some(&*url))
    );
    assert_eq!(on.error, None);
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
    other.resume(&engine, &fx.data).await;
    let shown = other.serving(&engine).await;
    assert!(!shown.on);
    let why = shown.error.unwrap();
    assert!(why.contains(&format!("Port {port} is in use")), "{why}");

    // The app quits serving: the next launch serves again, at the same port.
    drop(switch);
    until_closed(&page).await;
    let next = Switch::default();
    next.resume(&engine, &fx.data).await;
    let resumed = next.serving(&engine).await;
    assert_eq!((resumed.on, resumed.port), (true, port));
    assert_eq!(status(&page).await, Some(401));

    // Off: nothing answers, and the launch after does not serve.
    let off = next.turn_off(&engine).await.unwrap();
    assert_eq!((off.on, off.url), (false, None));
    assert_eq!(status(&page).await, None);
    assert_eq!(engine.setting(PORT_SETTING).await.unwrap(), None);
    let after = Switch::default();
    after.resume(&engine, &fx.data).await;
    assert!(!after.serving(&engine).await.on);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_that_is_taken_or_not_a_port_serves_nothing_and_says_why() {
    if network_address().is_none() {
        return; // the test above holds a computer on no network to what it says
    }
    let fx = Fixture::new(json!([]));
    let engine = Engine::open_at(&fx.store, "app").await.unwrap();
    let switch = Switch::default();
    for typed in ["", "0", "65536", "80a", "-1"] {
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
    assert!(why.starts_with(&format!("Port {port} is in use")), "{why}");
    assert_eq!(
        engine.setting(PORT_SETTING).await.unwrap(),
        None,
        "not remembered"
    );
}
