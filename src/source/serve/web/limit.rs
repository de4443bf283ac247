//! Failed sign-in attempts, counted per address: a sign-in link cannot be guessed (32 random
//! bytes), and a client trying is slowed to a few tries a minute all the same. A link that
//! works is never held up; an IPv6 client counts by its /64 (one host has them all).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed attempts one address may make per [`WINDOW`].
const PER_WINDOW: u32 = 10;
const WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered at most: when more come, the one seen longest ago is forgotten.
const REMEMBERED: usize = 10_000;

#[derive(Debug, Default)]
pub(in crate::source::serve) struct Attempts {
    by_address: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

impl Attempts {
    /// Whether `address` may try now: `Err` with how long to wait when it failed too often.
    pub(in crate::source::serve) fn check(&self, address: IpAddr) -> Result<(), Duration> {
        let now = Instant::now();
        let map = self.by_address.lock().unwrap_or_else(|p| p.into_inner());
        match map.get(&key(address)) {
            Some((start, count)) if *count >= PER_WINDOW && now.duration_since(*start) < WINDOW => {
                Err(WINDOW.saturating_sub(now.duration_since(*start)))
            }
            _ => Ok(()),
        }
    }

    /// Counts a failed attempt (a link unknown, used or expired) from `address`.
    pub(in crate::source::serve) fn failed(&self, address: IpAddr) {
        let now = Instant::now();
        let mut map = self.by_address.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= REMEMBERED {
            map.retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
        }
        if map.len() >= REMEMBERED {
            if let Some(oldest) = map
                .iter()
                .min_by_key(|(_, (start, _))| *start)
                .map(|(a, _)| *a)
            {
                map.remove(&oldest);
            }
        }
        let (start, count) = map.entry(key(address)).or_insert((now, 0));
        if now.duration_since(*start) >= WINDOW {
            (*start, *count) = (now, 0);
        }
        *count += 1;
    }
}

/// What an address is counted as: itself, or for IPv6 its /64.
fn key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
            let mut segments = v6.segments();
            segments[4..].fill(0);
            IpAddr::from(segments)
        }
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        IpAddr::V4(_) => address,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_gets_a_few_failures_a_minute_and_others_are_not_held_up() {
        let attempts = Attempts::default();
        let one: IpAddr = [10, 0, 0, 1].into();
        let other: IpAddr = [10, 0, 0, 2].into();
        for _ in 0..PER_WINDOW {
            assert!(attempts.check(one).is_ok());
            attempts.failed(one);
        }
        let wait = attempts.check(one).unwrap_err();
        assert!(wait > Duration::from_secs(50) && wait <= WINDOW, "{wait:?}");
        assert!(attempts.check(other).is_ok());
    }

    #[test]
    fn an_ipv6_host_counts_once_for_its_whole_prefix() {
        let attempts = Attempts::default();
        for n in 0..u16::try_from(PER_WINDOW).unwrap() {
            attempts.failed(IpAddr::from([0x2001, 0xdb8, 1, 2, n, n, n, n]));
        }
        assert!(attempts
            .check(IpAddr::from([0x2001, 0xdb8, 1, 2, 9, 9, 9, 9]))
            .is_err());
        assert!(attempts
            .check(IpAddr::from([0x2001, 0xdb8, 1, 3, 0, 0, 0, 1]))
            .is_ok());
    }

    #[test]
    fn a_flood_of_addresses_forgets_the_oldest_and_locks_nobody_else_out() {
        let attempts = Attempts::default();
        for n in 0..u32::try_from(REMEMBERED).unwrap() + 5 {
            attempts.failed(IpAddr::from(n.to_be_bytes()));
        }
        assert!(attempts.check([192, 168, 1, 1].into()).is_ok());
        assert!(attempts.by_address.lock().unwrap().len() <= REMEMBERED);
    }

    #[test]
    fn a_trusted_proxys_last_forwarded_address_is_the_clients() {
        use super::super::client_address;
        let proxy: IpAddr = [127, 0, 0, 1].into();
        let trusted = [proxy, "10.0.0.2".parse().unwrap()];
        let forwarded = |values: &[&str]| {
            let mut headers = http::HeaderMap::new();
            for value in values {
                headers.append("x-forwarded-for", value.parse().unwrap());
            }
            client_address(proxy, &headers, &trusted)
        };
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(forwarded(&["198.51.100.7, 203.0.113.5"]), ip("203.0.113.5"));
        assert_eq!(
            forwarded(&["203.0.113.5, 10.0.0.2"]),
            ip("203.0.113.5"),
            "past a second proxy"
        );
        assert_eq!(
            forwarded(&["198.51.100.7", "2001:db8::1"]),
            ip("2001:db8::1")
        );
        assert_eq!(forwarded(&[]), proxy);
        assert_eq!(forwarded(&["10.0.0.2"]), proxy, "only proxies");
        assert_eq!(forwarded(&["203.0.113.5, not-an-address"]), proxy);
        assert_eq!(
            forwarded(&["203.0.113.5:4711"]),
            ip("203.0.113.5"),
            "with its port"
        );
        assert_eq!(forwarded(&["[2001:db8::1]:4711"]), ip("2001:db8::1"));
        assert_eq!(forwarded(&["::ffff:203.0.113.5"]), ip("203.0.113.5"));
        // The proxy at 127.0.0.1, reaching a dual-stack listener.
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        let mut headers = http::HeaderMap::new();
        headers.append("x-forwarded-for", "203.0.113.9".parse().unwrap());
        assert_eq!(
            client_address(mapped, &headers, &trusted),
            ip("203.0.113.9")
        );
        let mut headers = http::HeaderMap::new();
        headers.append("x-forwarded-for", "203.0.113.5".parse().unwrap());
        let other: IpAddr = [192, 0, 2, 1].into();
        assert_eq!(
            client_address(other, &headers, &trusted),
            other,
            "not a proxy: its own"
        );
    }
}
