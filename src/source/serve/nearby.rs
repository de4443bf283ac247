//! The review served to this computer's own network by the desktop app (Settings → Review from
//! your phone): the server `plandesk serve` runs, in the app's process, on every address of
//! this computer at one port, so that a phone on the same network opens a sign-in link's QR
//! code without anyone starting a server in a terminal. Plain HTTP, as `serve --listen
//! 0.0.0.0:…` is: for a network the person trusts (across the internet, `plandesk serve`
//! behind a proxy with TLS). Every request still needs a session or a token.

use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

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
/// The port offered first: `plandesk serve`'s.
pub const DEFAULT_PORT: u16 = 8765;

/// How the names of virtual networks' interfaces start (containers' and virtual machines'
/// bridges): a phone is never on one.
const VIRTUAL: &[&str] = &[
    "docker", "br-", "veth", "virbr", "podman", "cni", "lxc", "lxdbr", "vmnet", "vboxnet",
];

/// An IPv4 address of one of this computer's interfaces, as [`pick`] weighs it.
#[derive(Debug, Clone)]
struct Candidate {
    interface: String,
    ip: Ipv4Addr,
    /// Not down (an interface whose state the kernel does not know counts as up: a phone
    /// may still reach it).
    up: bool,
    /// Point-to-point: a VPN's tunnel, whose address the phone beside this computer is not on.
    point_to_point: bool,
}

/// The address a phone on this computer's network reaches it at, if it has one.
pub fn network_address() -> Option<Ipv4Addr> {
    let interfaces = if_addrs::get_if_addrs().ok()?;
    let candidates: Vec<Candidate> = interfaces
        .iter()
        .filter_map(|interface| match &interface.addr {
            if_addrs::IfAddr::V4(v4) => Some(Candidate {
                interface: interface.name.clone(),
                ip: v4.ip,
                up: !matches!(
                    interface.oper_status,
                    IfOperStatus::Down | IfOperStatus::NotPresent | IfOperStatus::LowerLayerDown
                ),
                point_to_point: interface.is_p2p(),
            }),
            if_addrs::IfAddr::V6(_) => None,
        })
        .collect();
    pick(&candidates)
}

/// Of this computer's addresses, the one to put in a link for a phone: on an interface that is
/// up, not loopback, link-local, point-to-point or virtual; a private address (a home or
/// office network) before any other.
fn pick(candidates: &[Candidate]) -> Option<Ipv4Addr> {
    let usable = || {
        candidates.iter().filter(|c| {
            c.up && !c.point_to_point
                && !c.ip.is_loopback()
                && !c.ip.is_link_local()
                && !c.ip.is_unspecified()
                && !VIRTUAL.iter().any(|v| c.interface.starts_with(v))
        })
    };
    usable()
        .find(|c| c.ip.is_private())
        .or_else(|| usable().next())
        .map(|c| c.ip)
}

/// The app's server on its network, while it runs.
#[derive(Debug)]
pub struct Nearby {
    port: u16,
    /// Where a phone reached it when it started (the address may change later: see
    /// [`Nearby::url`]).
    started_at: String,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Nearby {
    /// Serves the review, MCP and hooks on every address of this computer at `port`, as
    /// `plandesk serve` does (waiting calls closed as abandoned when it stops). Refused, with
    /// why in words a person can act on, when this computer is on no network or the port
    /// cannot be had.
    pub async fn start(engine: Engine, data_dir: PathBuf, port: u16) -> Result<Self, String> {
        let Some(ip) = network_address() else {
            return Err(
                "This computer is on no network a phone could reach (it has no address but its \
                 own): connect it to your Wi-Fi or network first"
                    .into(),
            );
        };
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)))
            .await
            .map_err(|err| match err.kind() {
                ErrorKind::AddrInUse => format!(
                    "Port {port} is in use (by `plandesk serve`, or another program): choose \
                     another port"
                ),
                ErrorKind::PermissionDenied => format!(
                    "Port {port} needs privileges Plandesk does not have: choose one above 1023"
                ),
                _ => format!("Cannot serve on port {port}: {err}"),
            })?;
        let port = listener.local_addr().map_or(port, |a| a.port());
        let started_at = format!("http://{ip}:{port}");
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
            max_connections: None,
            max_per_token: None,
            trusted_proxies: Vec::new(),
            public_url: Some(started_at.clone()),
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(engine, listener, options, async {
            let _ = stopped.await;
        }));
        Ok(Self {
            port,
            started_at,
            stop,
            task,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Where a phone reaches the server now: this computer's address on its network at the
    /// port (the one it had at the start if it has none now).
    pub fn url(&self) -> String {
        network_address().map_or_else(
            || self.started_at.clone(),
            |ip| format!("http://{ip}:{}", self.port),
        )
    }

    /// Stops serving: plans still waiting on it are closed as abandoned (each agent answered
    /// "not approved"), requests in flight get a few seconds to answer.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
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
    /// Why it does not serve although asked to (at this launch, or just now).
    pub error: Option<String>,
}

/// The app's switch for serving its network: on or off as the person last set it, remembered
/// in the store ([`PORT_SETTING`]) for the next launch.
#[derive(Debug, Default)]
pub struct Switch {
    state: Mutex<Switched>,
}

#[derive(Debug, Default)]
struct Switched {
    server: Option<Nearby>,
    /// Why the last start failed.
    error: Option<String>,
}

impl Switch {
    /// At launch: serves again if it served when the app last ran (a port now taken is said
    /// in Settings, and tried again at the next launch).
    pub async fn resume(&self, engine: &Engine, data_dir: &Path) {
        let Ok(Some(port)) = saved_port(engine).await else {
            return;
        };
        let mut state = self.state.lock().await;
        match Nearby::start(engine.clone(), data_dir.to_owned(), port).await {
            Ok(server) => *state = Switched::serving(server),
            Err(why) => state.error = Some(why),
        }
    }

    /// Serves at `port` (as typed; stopping what served before), and remembers it. A start
    /// that fails leaves it off, and says why.
    pub async fn turn_on(
        &self,
        engine: &Engine,
        data_dir: &Path,
        port: &str,
    ) -> Result<Serving, CommandError> {
        let port = match port.trim().parse::<u16>() {
            Ok(port) if port != 0 => port,
            _ => return Err(CommandError::invalid("Choose a port from 1 to 65535")),
        };
        let mut state = self.state.lock().await;
        if let Some(server) = state.server.take() {
            server.stop().await;
        }
        match Nearby::start(engine.clone(), data_dir.to_owned(), port).await {
            Ok(server) => {
                let port = server.port().to_string();
                engine
                    .set_setting(PORT_SETTING, Some(port.as_str()))
                    .await?;
                *state = Switched::serving(server);
            }
            Err(why) => {
                engine.set_setting(PORT_SETTING, None).await?;
                state.error = Some(why);
            }
        }
        Ok(state.shown(port))
    }

    /// Stops serving, and remembers that it does not.
    pub async fn turn_off(&self, engine: &Engine) -> Result<Serving, CommandError> {
        let mut state = self.state.lock().await;
        engine.set_setting(PORT_SETTING, None).await?;
        let port = state.server.as_ref().map_or(DEFAULT_PORT, Nearby::port);
        if let Some(server) = state.server.take() {
            server.stop().await;
        }
        state.error = None;
        Ok(state.shown(port))
    }

    pub async fn serving(&self, engine: &Engine) -> Serving {
        let offered = saved_port(engine)
            .await
            .ok()
            .flatten()
            .unwrap_or(DEFAULT_PORT);
        self.state.lock().await.shown(offered)
    }

    /// Where a phone reaches the app's server, while it serves.
    pub async fn url(&self) -> Option<String> {
        self.state.lock().await.server.as_ref().map(Nearby::url)
    }
}

impl Switched {
    fn serving(server: Nearby) -> Self {
        Self {
            server: Some(server),
            error: None,
        }
    }

    /// As Settings shows it; `port` is the one to offer when it does not serve.
    fn shown(&self, port: u16) -> Serving {
        Serving {
            on: self.server.is_some(),
            port: self.server.as_ref().map_or(port, Nearby::port),
            url: self.server.as_ref().map(Nearby::url),
            error: self.error.clone(),
        }
    }
}

/// The port the app last served at, if it was left serving (a value that is not a port is
/// none).
async fn saved_port(engine: &Engine) -> Result<Option<u16>, CommandError> {
    let saved = engine.setting(PORT_SETTING).await?;
    Ok(saved
        .and_then(|port| port.parse().ok())
        .filter(|&port| port != 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(interface: &str, ip: [u8; 4]) -> Candidate {
        Candidate {
            interface: interface.into(),
            ip: Ipv4Addr::from(ip),
            up: true,
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
        assert_eq!(found, Some(Ipv4Addr::new(192, 168, 1, 20)));
        // No private address: any other this computer has on a real network.
        let found = pick(&[
            address("lo", [127, 0, 0, 1]),
            address("eth0", [192, 0, 2, 2]),
        ]);
        assert_eq!(found, Some(Ipv4Addr::new(192, 0, 2, 2)));
    }

    #[test]
    fn no_address_a_phone_cannot_reach_is_ever_named() {
        let down = Candidate {
            up: false,
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
            address("eth2", [0, 0, 0, 0]),
            down,
            vpn,
        ]);
        assert_eq!(found, None);
        assert_eq!(pick(&[]), None);
    }
}
