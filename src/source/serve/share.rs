//! Each token's share of the server: how many of its requests are answered at once. A waiting
//! plan holds its request (and its connection) until a person decides, so without a share one
//! token (an agent in a loop, a leaked secret) could hold every connection the server has and
//! leave the others' agents waiting to be accepted. What may wait takes a part of the share: a
//! hook (refused before its body is read, with a deny, as the hook endpoint answers every
//! failure: see `hook`) and an MCP request (refused with 429 once its message says it is one);
//! a cancellation or a session's end, which end waits, never does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use http::Response;
use http_body_util::BodyExt;

use super::Body;

/// The requests each token has in flight, at most `most` each.
#[derive(Debug)]
pub(super) struct Shares {
    most: usize,
    held: Mutex<HashMap<String, usize>>,
}

/// One request's part of its token's share, given back when the request is answered: when
/// its response body ends or is dropped (a waiting MCP call answers in its body's stream).
#[derive(Debug)]
pub(super) struct Share {
    shares: Arc<Shares>,
    key: String,
}

impl Shares {
    pub(super) fn new(most: usize) -> Arc<Self> {
        Arc::new(Self {
            most: most.max(1),
            held: Mutex::default(),
        })
    }

    /// The most requests one token has in flight.
    pub(super) fn most(&self) -> usize {
        self.most
    }

    /// A part of `key`'s share, unless all of it is held.
    pub(super) fn take(self: &Arc<Self>, key: &str) -> Option<Share> {
        let mut held = self.lock();
        let count = held.entry(key.to_owned()).or_default();
        if *count >= self.most {
            return None;
        }
        *count += 1;
        Some(Share {
            shares: self.clone(),
            key: key.to_owned(),
        })
    }

    /// How many requests `key` has in flight.
    #[cfg(test)]
    fn held(&self, key: &str) -> usize {
        self.lock().get(key).copied().unwrap_or(0)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, usize>> {
        // A count is whole after any panic: it is changed in one statement.
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Share {
    /// `response`, holding this share until its body is done with.
    pub(super) fn hold(self, response: Response<Body>) -> Response<Body> {
        response.map(|body| {
            body.map_frame(move |frame| {
                let _held = &self;
                frame
            })
            .boxed()
        })
    }
}

/// `response`, holding `share` (if any) until its body is done with.
pub(super) fn held(share: Option<Share>, response: Response<Body>) -> Response<Body> {
    match share {
        Some(share) => share.hold(response),
        None => response,
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut held = self.shares.lock();
        if let Some(count) = held.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http_body_util::Full;

    #[tokio::test]
    async fn a_share_is_held_until_the_response_body_is_done_with() {
        let shares = Shares::new(2);
        let first = shares.take("a").unwrap();
        let second = shares.take("a").unwrap();
        assert!(shares.take("a").is_none(), "a token past its share");
        let other = shares.take("b").expect("another token's share is its own");
        drop(other);
        assert_eq!(shares.held("b"), 0);
        let response = second.hold(Response::new(Full::new(Bytes::from("x")).boxed()));
        assert_eq!(shares.held("a"), 2, "held while the body is unread");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, "x");
        assert_eq!(shares.held("a"), 1, "given back with the body");
        drop(first);
        assert_eq!(shares.held("a"), 0);
        assert!(
            shares.lock().is_empty(),
            "nothing kept for a token with none"
        );
    }
}
