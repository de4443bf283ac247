//! Pairing attempts, counted per address: a sign-in link cannot be guessed (32 random bytes),
//! and a client trying is slowed to a few tries a minute all the same.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Attempts one address may make per [`WINDOW`].
const PER_WINDOW: u32 = 10;
const WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered at most (the oldest windows are forgotten first when more come).
const REMEMBERED: usize = 10_000;

#[derive(Debug, Default)]
pub(in crate::source::serve) struct Attempts {
    by_address: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

impl Attempts {
    /// Counts an attempt from `address`: `Err` with how long to wait when it made too many.
    pub(in crate::source::serve) fn attempt(&self, address: IpAddr) -> Result<(), Duration> {
        let now = Instant::now();
        let mut map = self.by_address.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= REMEMBERED {
            map.retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
        }
        if map.len() >= REMEMBERED {
            // Every one of them within a minute: a flood, and everyone waits it out.
            return Err(WINDOW);
        }
        let (start, count) = map.entry(address).or_insert((now, 0));
        if now.duration_since(*start) >= WINDOW {
            (*start, *count) = (now, 0);
        }
        *count += 1;
        if *count > PER_WINDOW {
            return Err(WINDOW.saturating_sub(now.duration_since(*start)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_gets_a_few_tries_a_minute_and_others_are_not_held_up() {
        let attempts = Attempts::default();
        let one: IpAddr = [10, 0, 0, 1].into();
        let other: IpAddr = [10, 0, 0, 2].into();
        for _ in 0..PER_WINDOW {
            assert!(attempts.attempt(one).is_ok());
        }
        let wait = attempts.attempt(one).unwrap_err();
        assert!(wait > Duration::from_secs(50) && wait <= WINDOW, "{wait:?}");
        assert!(attempts.attempt(other).is_ok());
    }
}
