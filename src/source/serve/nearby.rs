//! The review served to this computer's own network by the desktop app (Settings → Review from
//! your phone): the server `plandesk serve` runs, in the app's process, at this computer's
//! address on its network and one port, so that a phone on the same network opens a sign-in
//! link's QR code without anyone starting a server in a terminal. Plain HTTP, as `serve
//! --listen` on a LAN address is: for a network the person trusts (across the internet,
//! `plandesk serve` behind a proxy with TLS). Everything but the sign-in page needs a session
//! or a token.
//!
//! It listens at this computer's address on the network it was turned on for, and only while
//! the computer is on that network (by its address range, such as `192.168.1.0/24`: another
//! network with the same range, as many home routers give, counts as the same): on another
//! network (a café's Wi-Fi) it stops, and serves again once back.

use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use if_addrs::IfOperStatus;
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, Mutex};
use tokio::task::JoinHandle;

use super::{serve, ServeOptions, DEFAULT_HOOK_TIMEOUT};
use crate::engine::Engine;
use crate::source::deadline::hook_deadline;
use crate::source::WaitSettings;
use crate::view::CommandError;

/// The setting that holds the port the app serves its network at; absent, it does not.
pub const PORT_SETTING: &str = "phone.port";
/// The setting that holds the network it was turned on for (`192.168.1.0/24`).
pub const NETWORK_SETTING: &str = "phone.network";
/// The port offered first: `plandesk serve`'s.
pub const DEFAULT_PORT: u16 = 8765;
/// Connections the app's server holds at once (more wait to be accepted): a device on the
/// network that opens many cannot take the files the app itself needs.
const MAX_CONNECTIONS: usize = 256;
/// How often the app looks at which network this computer is on.
pub const LOOK_AGAIN: Duration = Duration::from_secs(30);

/// How the names of virtual networks' interfaces start (containers', virtual machines' and
/// overlay networks' bridges and taps): the phone beside this computer is never on one.
const VIRTUAL: &[&str] = &[
    "docker", "br-", "veth", "virbr", "vnet", "tap", "podman", "cni", "lxc", "lxdbr", "incusbr",
    "mpqemubr", "vmnet", "vboxnet", "zt", "bridge",
];

/// This computer's IPv4 address on a network, with the length of that network's prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkAddress {
    pub ip: Ipv4Addr,
    pub prefix: u8,
}

impl NetworkAddress {
    /// The network, as `192.168.1.0/24`.
    pub fn network(&self) -> String {
        let mask = u32::MAX
            .checked_shl(32 - u32::from(self.prefix.min(32)))
            .unwrap_or(0);
        format!(
            "{}/{}",
            Ipv4Addr::from(u32::from(self.ip) & mask),
            self.prefix
        )
    }

    /// Whether the address is a private one (a home or office network): others may be
    /// reached from beyond the network.
    pub fn private(&self) -> bool {
        self.ip.is_private()
    }
}

/// How an interface's link stands, as [`pick`] weighs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Link {
    /// Running.
    Up,
    /// Not known running (Linux says so of a link that is not: an unplugged cable that kept
    /// its address), a last resort.
    Unknown,
    Down,
}

/// An IPv4 address of one of this computer's interfaces, as [`pick`] weighs it.
#[derive(Debug, Clone)]
struct Candidate {
    interface: String,
    address: NetworkAddress,
    link: Link,
    /// Point-to-point: a VPN's tunnel, whose address the phone beside this computer is not on.
    point_to_point: bool,
}

/// The address a phone on this computer's network reaches it at, if it has one.
pub fn network_address() -> Option<NetworkAddress> {
    let interfaces = if_addrs::get_if_addrs().ok()?;
    let candidates: Vec<Candidate> = interfaces
        .iter()
        .filter_map(|interface| match &interface.addr {
            if_addrs::IfAddr::V4(v4) => Some(Candidate {
                interface: interface.name.clone(),
                address: NetworkAddress {
                    ip: v4.ip,
                    prefix: v4.prefixlen,
                },
                link: match interface.oper_status {
                    IfOperStatus::Up => Link::Up,
                    IfOperStatus::Down
                    | IfOperStatus::NotPresent
                    | IfOperStatus::LowerLayerDown => Link::Down,
                    _ => Link::Unknown,
                },
                point_to_point: interface.is_p2p(),
            }),
            if_addrs::IfAddr::V6(_) => None,
        })
        .collect();
    pick(&candidates)
}

/// Of this computer's addresses, the one to put in a link for a phone: on an interface that is
/// not down, loopback, link-local, point-to-point or virtual; a running link before one not
/// known to run, and a private address before any other.
fn pick(candidates: &[Candidate]) -> Option<NetworkAddress> {
    candidates
        .iter()
        .filter(|c| {
            let ip = c.address.ip;
            c.link != Link::Down
                && !c.point_to_point
                && !ip.is_loopback()
                && !ip.is_link_local()
                && !ip.is_unspecified()
                && !VIRTUAL.iter().any(|v| c.interface.starts_with(v))
        })
        .min_by_key(|c| (c.link, !c.address.private()))
        .map(|c| c.address)
}

/// The app's server on its network, while it runs; dropped, it stops too.
#[derive(Debug)]
struct Nearby {
    /// The address it listens at: this computer's on the network allowed, and no other (not a
    /// VPN's, not a container bridge's, not another network's it joins meanwhile).
    at: NetworkAddress,
    port: u16,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Nearby {
    /// Serves the review, MCP and hooks at `at`'s address and `port`, as `plandesk serve`
    /// does. Refused when the port cannot be had (see [`cannot_listen`]).
    async fn start(
        engine: Engine,
        data_dir: PathBuf,
        at: NetworkAddress,
        port: u16,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(SocketAddr::from((at.ip, port))).await?;
        let port = listener.local_addr().map_or(port, |a| a.port());
        // The app tells the person of each plan itself, as a desktop.
        let wait = WaitSettings {
            data_dir,
            deadline: None,
            desktop: false,
        };
        let options = ServeOptions {
            hook_wait: WaitSettings {
                deadline: Some(hook_deadline(None, DEFAULT_HOOK_TIMEOUT)),
                ..wait.clone()
            },
            mcp_wait: wait,
            max_connections: Some(MAX_CONNECTIONS),
            max_per_token: None,
            trusted_proxies: Vec::new(),
            public_url: Some(url(at, port)),
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(engine, listener, options, async {
            let _ = stopped.await;
        }));
        Ok(Self {
            at,
            port,
            stop,
            task,
        })
    }

    /// Stops serving: plans still waiting on it are closed as abandoned (each agent answered
    /// "not approved"), requests in flight get a few seconds to answer.
    async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// Where a phone reaches the server at `at` and `port`.
fn url(at: NetworkAddress, port: u16) -> String {
    format!("http://{}:{port}", at.ip)
}

/// Why the app cannot serve at `port`, in words a person can act on.
fn cannot_listen(port: u16, err: &std::io::Error) -> String {
    match err.kind() {
        ErrorKind::AddrInUse => format!(
            "Port {port} is taken by another program (Plandesk's own server, perhaps): choose \
             another port"
        ),
        ErrorKind::PermissionDenied => {
            format!("Port {port} is reserved for the system: choose one above 1023")
        }
        _ => format!("Plandesk cannot use port {port}: {err}"),
    }
}

/// Whether the app serves its network, as Settings shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Serving {
    pub on: bool,
    /// The port it serves at, else the one to offer.
    pub port: u16,
    /// Where a phone reaches it, while on.
    pub url: Option<String>,
    /// The network it serves, as `192.168.1.0/24`, while on.
    pub network: Option<String>,
    /// Whether its address may be reached from beyond this computer's network (it is not a
    /// private one): Settings says so.
    pub beyond_network: bool,
    /// Why it does not serve although asked to (at this launch, or just now).
    pub error: Option<String>,
}

/// The app's switch for serving its network: on or off as the person last set it, remembered
/// in the store ([`PORT_SETTING`], [`NETWORK_SETTING`]) for the next launch, and serving only
/// while this computer is on the network it was turned on for ([`Switch::follow_network`]).
#[derive(Debug, Default)]
pub struct Switch {
    state: Mutex<Switched>,
}

#[derive(Debug, Default)]
struct Switched {
    server: Option<Nearby>,
    /// Why it does not serve although asked to.
    error: Option<String>,
    /// Turned off by the person in this session (even if the store could not be told).
    off: bool,
    /// The app is quitting: nothing starts again.
    closed: bool,
}

impl Switch {
    /// At launch, and every [`LOOK_AGAIN`] while the app runs: serves while the person left it
    /// on and this computer is on the network it was turned on for, at its address there;
    /// stops (still remembering it) while the computer is on another network or none, and
    /// Settings says why.
    pub async fn follow_network(&self, engine: &Engine, data_dir: &Path) {
        let mut state = self.state.lock().await;
        if state.closed || state.off {
            return;
        }
        let (port, allowed) = match remembered(engine).await {
            Ok(Some(remembered)) => remembered,
            Ok(None) => return,
            Err(err) => {
                if state.server.is_none() {
                    state.error = Some(format!("Plandesk cannot tell whether to serve: {err}"));
                }
                return;
            }
        };
        let now = network_address();
        let here = now.filter(|here| here.network() == allowed);
        if let (Some(here), Some(server)) = (here, &state.server) {
            if server.at == here {
                return;
            }
        }
        // Off the network allowed, or at another address on it: not where it listens.
        if let Some(server) = state.server.take() {
            server.stop().await;
        }
        let Some(here) = here else {
            state.error = Some(match now {
                Some(other) => format!(
                    "Not letting phones in: this computer is on another network ({}) than the \
                     one you let them in on ({allowed}). Turn it on again here if you trust \
                     this one.",
                    other.network()
                ),
                None => format!(
                    "Not letting phones in yet: this computer is on no network (they were let \
                     in on {allowed}); Plandesk looks again every {} s",
                    LOOK_AGAIN.as_secs()
                ),
            });
            return;
        };
        match Nearby::start(engine.clone(), data_dir.to_owned(), here, port).await {
            Ok(server) => {
                state.server = Some(server);
                state.error = None;
            }
            Err(err) => state.error = Some(cannot_listen(port, &err)),
        }
    }

    /// Serves at `port` (as typed; stopping what served before) on the network this computer
    /// is on now, and remembers both. A start that fails, or that cannot be remembered, leaves
    /// it off, and says why.
    pub async fn turn_on(
        &self,
        engine: &Engine,
        data_dir: &Path,
        port: &str,
    ) -> Result<Serving, CommandError> {
        let port = match port.trim() {
            digits if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
                digits.parse::<u16>().ok().filter(|&port| port != 0)
            }
            _ => None,
        }
        .ok_or_else(|| CommandError::invalid("Choose a port from 1 to 65535"))?;
        let mut state = self.state.lock().await;
        if state.closed {
            return Err(CommandError::new("quitting", "Plandesk is quitting"));
        }
        if let Some(server) = state.server.take() {
            server.stop().await;
        }
        state.off = false;
        let Some(here) = network_address() else {
            state.error = Some(
                "This computer is on no network a phone could reach (it has no address but its \
                 own): connect it to your Wi-Fi or network first"
                    .into(),
            );
            forget(engine).await?;
            return Ok(state.shown(port));
        };
        match Nearby::start(engine.clone(), data_dir.to_owned(), here, port).await {
            Ok(server) => {
                let listening = server.port.to_string();
                let saved = async {
                    engine.set_setting(PORT_SETTING, Some(&*listening)).await?;
                    engine
                        .set_setting(NETWORK_SETTING, Some(&*here.network()))
                        .await
                };
                match saved.await {
                    Ok(()) => {
                        state.server = Some(server);
                        state.error = None;
                    }
                    Err(err) => {
                        server.stop().await;
                        state.error = Some(format!(
                            "Plandesk could not remember this ({err}), so it does not let \
                             phones in"
                        ));
                    }
                }
            }
            Err(err) => {
                state.error = Some(cannot_listen(port, &err));
                forget(engine).await?;
            }
        }
        Ok(state.shown(port))
    }

    /// Stops serving, then remembers that it does not.
    pub async fn turn_off(&self, engine: &Engine) -> Result<Serving, CommandError> {
        let mut state = self.state.lock().await;
        let port = state.server.as_ref().map_or(DEFAULT_PORT, |s| s.port);
        if let Some(server) = state.server.take() {
            server.stop().await;
        }
        state.off = true;
        state.error = None;
        forget(engine).await?;
        Ok(state.shown(port))
    }

    /// The app is quitting (or starting again): stops serving, so that every plan waiting on
    /// it is answered "not approved", and nothing starts it again; it stays remembered for
    /// the next launch.
    pub async fn shut_down(&self) {
        let mut state = self.state.lock().await;
        state.closed = true;
        if let Some(server) = state.server.take() {
            server.stop().await;
        }
    }

    pub async fn serving(&self, engine: &Engine) -> Serving {
        let offered = match remembered(engine).await {
            Ok(Some((port, _))) => port,
            _ => DEFAULT_PORT,
        };
        self.state.lock().await.shown(offered)
    }

    /// Where a phone reaches the app's server, while it serves.
    pub async fn url(&self) -> Option<String> {
        let state = self.state.lock().await;
        state.server.as_ref().map(|s| url(s.at, s.port))
    }
}

impl Switched {
    /// As Settings shows it; `port` is the one to offer when it does not serve.
    fn shown(&self, port: u16) -> Serving {
        let server = self.server.as_ref();
        Serving {
            on: server.is_some(),
            port: server.map_or(port, |s| s.port),
            url: server.map(|s| url(s.at, s.port)),
            network: server.map(|s| s.at.network()),
            beyond_network: server.is_some_and(|s| !s.at.private()),
            error: self.error.clone(),
        }
    }
}

/// The port and network the app last served at, if it was left serving (a port that is not
/// one is none).
async fn remembered(engine: &Engine) -> Result<Option<(u16, String)>, CommandError> {
    let port = engine.setting(PORT_SETTING).await?;
    let network = engine.setting(NETWORK_SETTING).await?;
    let port = port
        .and_then(|port| port.parse::<u16>().ok())
        .filter(|&port| port != 0);
    Ok(port.zip(network))
}

/// Forgets that the app serves its network.
async fn forget(engine: &Engine) -> Result<(), CommandError> {
    engine.set_setting(PORT_SETTING, None).await?;
    engine.set_setting(NETWORK_SETTING, None).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(interface: &str, ip: [u8; 4]) -> Candidate {
        Candidate {
            interface: interface.into(),
            address: NetworkAddress {
                ip: Ipv4Addr::from(ip),
                prefix: 24,
            },
            link: Link::Up,
            point_to_point: false,
        }
    }

    #[test]
    fn a_phone_is_sent_to_the_home_network_address_first() {
        let found = pick(&[
            address("lo", [127, 0, 0, 1]),
            address("docker0", [172, 17, 0, 1]),
            address("eth1", [203, 0, 113, 7]),
            address("wlp2s0", [192, 168, 1, 20]),
        ]);
        assert_eq!(found.map(|a| a.ip), Some(Ipv4Addr::new(192, 168, 1, 20)));
        // No private address: any other this computer has on a real network (Settings warns).
        let found = pick(&[
            address("lo", [127, 0, 0, 1]),
            address("eth0", [192, 0, 2, 2]),
        ]);
        assert_eq!(found.map(|a| a.ip), Some(Ipv4Addr::new(192, 0, 2, 2)));
        assert!(!found.unwrap().private());
        // A running link before one not known to run (an unplugged cable that kept its
        // address), whatever its address.
        let unplugged = Candidate {
            link: Link::Unknown,
            ..address("enp3s0", [192, 168, 1, 30])
        };
        let found = pick(&[unplugged.clone(), address("wlan0", [198, 51, 100, 4])]);
        assert_eq!(found.map(|a| a.ip), Some(Ipv4Addr::new(198, 51, 100, 4)));
        let found = pick(&[unplugged]);
        assert_eq!(found.map(|a| a.ip), Some(Ipv4Addr::new(192, 168, 1, 30)));
    }

    #[test]
    fn no_address_a_phone_cannot_reach_is_ever_named() {
        let down = Candidate {
            link: Link::Down,
            ..address("wlp2s0", [192, 168, 1, 20])
        };
        let vpn = Candidate {
            point_to_point: true,
            ..address("tun0", [10, 8, 0, 2])
        };
        let found = pick(&[
            address("lo", [127, 0, 0, 1]),
            address("eth0", [169, 254, 3, 4]),
            address("virbr0", [192, 168, 122, 1]),
            address("veth12ab", [10, 0, 0, 5]),
            address("br-5e1f", [172, 18, 0, 1]),
            address("zt7nnkz3ab", [10, 147, 17, 3]),
            address("tap0", [10, 9, 0, 2]),
            address("eth2", [0, 0, 0, 0]),
            down,
            vpn,
        ]);
        assert_eq!(found, None);
        assert_eq!(pick(&[]), None);
    }

    #[test]
    fn a_network_is_named_by_its_first_address_and_prefix() {
        let here = |ip: [u8; 4], prefix| NetworkAddress {
            ip: Ipv4Addr::from(ip),
            prefix,
        };
        assert_eq!(here([192, 168, 1, 20], 24).network(), "192.168.1.0/24");
        assert_eq!(here([10, 1, 2, 3], 8).network(), "10.0.0.0/8");
        assert_eq!(here([172, 20, 5, 9], 20).network(), "172.20.0.0/20");
        assert_eq!(here([192, 0, 2, 2], 32).network(), "192.0.2.2/32");
        assert_eq!(here([192, 0, 2, 2], 0).network(), "0.0.0.0/0");
    }
}
