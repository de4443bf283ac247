//! The MCP requests in flight over `/mcp`, so that a client's cancellation reaches the call
//! it names. `plandesk serve` is stateless: a client of a protocol before 2026-07-28 sends
//! `notifications/cancelled` (or, closing, `DELETE /mcp`) as a POST of its own, which rmcp's
//! stateless service drops, so the call it names would wait on and its plan stay pending for
//! nobody. Here every request is registered under the token it came with, the session id
//! `initialize` handed its client, and its JSON-RPC id; a cancellation with the same three
//! ends that request's event stream, and rmcp then cancels the handler as when a client
//! drops the stream itself (the plan is closed as abandoned).
//!
//! The session id is only a name for one client: nothing is kept per session, any id is
//! accepted and none expires, so a restarted server goes on serving its clients. Without it,
//! two clients on one token would both number their requests from 0 and one could cancel the
//! other's call.

use std::collections::HashMap;
use std::future::Future as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use hyper::body::{Body as HttpBody, Frame};
use serde_json::Value;
use tokio::sync::oneshot;

use super::Body;

/// The header a streamable HTTP client echoes on every request once `initialize` set it.
pub(super) const SESSION_HEADER: &str = "mcp-session-id";
/// The longest session id taken from a request; a longer one is not ours (ours are 32 hex).
const MAX_SESSION: usize = 128;

/// One request: who sent it (the token's key, see `Caller::token_key`), from which client, and
/// its JSON-RPC id
/// (as JSON text, so that `1` and `"1"` differ, as they do in JSON-RPC).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct CallKey {
    token: String,
    session: Option<String>,
    id: String,
}

impl CallKey {
    pub(super) fn new(token: &str, session: Option<String>, id: &Value) -> Self {
        Self {
            token: token.to_owned(),
            session,
            id: id.to_string(),
        }
    }
}

/// The session id a request carries, if it is one that could be ours.
pub(super) fn session_of(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(SESSION_HEADER)?.to_str().ok()?;
    // Visible ASCII only, as the transport's specification requires of session ids.
    let fits = !value.is_empty()
        && value.len() <= MAX_SESSION
        && value.bytes().all(|b| (0x21..=0x7e).contains(&b));
    fits.then(|| value.to_owned())
}

/// A new session id for a client's `initialize`.
pub(super) fn new_session() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// What a client sent in one POST, as far as cancellation cares.
#[derive(Debug, PartialEq)]
pub(super) enum Message {
    /// A request with an id: registered while it is answered.
    Request { id: Value, initialize: bool },
    /// `notifications/cancelled` naming the request `id`.
    Cancelled { id: Value },
    /// Anything else (other notifications, responses, what does not parse): rmcp answers it.
    Other,
}

impl Message {
    #[cfg(test)]
    pub(super) fn of(body: &[u8]) -> Self {
        serde_json::from_slice::<Value>(body)
            .map_or(Self::Other, |message| Self::of_value(&message))
    }

    pub(super) fn of_value(message: &Value) -> Self {
        let Value::Object(message) = message else {
            return Self::Other;
        };
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            (Some("notifications/cancelled"), None) => {
                match message.get("params").and_then(|p| p.get("requestId")) {
                    Some(id @ (Value::String(_) | Value::Number(_))) => {
                        Self::Cancelled { id: id.clone() }
                    }
                    _ => Self::Other,
                }
            }
            (Some(method), Some(id @ (Value::String(_) | Value::Number(_)))) => Self::Request {
                id: id.clone(),
                initialize: method == "initialize",
            },
            _ => Self::Other,
        }
    }
}

/// The requests in flight under one key, each with its serial and the sender that ends its
/// event stream. More than one only when a client reuses an id it has in flight.
type Entries = Vec<(u64, oneshot::Sender<()>)>;

/// The requests in flight, each with the sender that ends its event stream.
#[derive(Debug, Default)]
pub(super) struct Calls {
    next: AtomicU64,
    map: Mutex<HashMap<CallKey, Entries>>,
}

impl Calls {
    /// Registers a request until the returned registration is dropped (with the response
    /// body, when the answer has gone out or the client went away).
    pub(super) fn register(self: &Arc<Self>, key: CallKey) -> Registered {
        let serial = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.lock()
            .entry(key.clone())
            .or_default()
            .push((serial, tx));
        Registered {
            calls: self.clone(),
            key,
            serial,
            cancelled: Some(rx),
        }
    }

    /// Cancels the requests registered under `key`; how many there were.
    pub(super) fn cancel(&self, key: &CallKey) -> usize {
        let senders = self.lock().remove(key).unwrap_or_default();
        let count = senders.len();
        for (_, tx) in senders {
            let _ = tx.send(());
        }
        count
    }

    /// Cancels every request of one client (it ended its session); how many there were.
    pub(super) fn cancel_session(&self, token: &str, session: &str) -> usize {
        self.cancel_where(|k| k.token == token && k.session.as_deref() == Some(session))
    }

    /// Cancels every request that came with `token` (it was revoked); how many there were.
    pub(super) fn cancel_token(&self, token: &str) -> usize {
        self.cancel_where(|k| k.token == token)
    }

    fn cancel_where(&self, cancels: impl Fn(&CallKey) -> bool) -> usize {
        let mut map = self.lock();
        let keys: Vec<CallKey> = map.keys().filter(|k| cancels(k)).cloned().collect();
        let mut count = 0;
        for key in keys {
            for (_, tx) in map.remove(&key).unwrap_or_default() {
                count += 1;
                let _ = tx.send(());
            }
        }
        count
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CallKey, Entries>> {
        // Nothing here can panic while the lock is held; a poisoned map is still whole.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }
}

/// A registered request; dropping it unregisters it.
#[derive(Debug)]
pub(super) struct Registered {
    calls: Arc<Calls>,
    key: CallKey,
    serial: u64,
    /// Resolves `Ok` when the request is cancelled (`Err`: it no longer can be).
    cancelled: Option<oneshot::Receiver<()>>,
}

impl Registered {
    /// Resolves when the request is cancelled; never, once it no longer can be.
    pub(super) async fn cancelled(&mut self) {
        if let Some(rx) = self.cancelled.as_mut() {
            if rx.await.is_ok() {
                return;
            }
            self.cancelled = None;
        }
        std::future::pending::<()>().await;
    }

    /// The response `body`, ended early when the request is cancelled (dropping the rest of
    /// rmcp's stream is how rmcp hears that its client went away).
    pub(super) fn guard(self, body: Body) -> Body {
        use http_body_util::BodyExt;
        Guarded {
            inner: Some(body),
            registered: self,
        }
        .boxed()
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut map = self.calls.lock();
        if let Some(entries) = map.get_mut(&self.key) {
            entries.retain(|(serial, _)| *serial != self.serial);
            if entries.is_empty() {
                map.remove(&self.key);
            }
        }
    }
}

/// A response body that ends when its request is cancelled.
struct Guarded {
    inner: Option<Body>,
    registered: Registered,
}

impl HttpBody for Guarded {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if let Some(rx) = this.registered.cancelled.as_mut() {
            match Pin::new(rx).poll(cx) {
                Poll::Ready(Ok(())) => {
                    // Dropped here, not when hyper drops the body: the handler hears of it now.
                    this.inner = None;
                    this.registered.cancelled = None;
                }
                Poll::Ready(Err(_)) => this.registered.cancelled = None,
                Poll::Pending => {}
            }
        }
        match this.inner.as_mut() {
            Some(inner) => Pin::new(inner).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(HttpBody::is_end_stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(value: Value) -> Vec<u8> {
        value.to_string().into_bytes()
    }

    #[test]
    fn requests_and_cancellations_are_told_apart() {
        assert_eq!(
            Message::of(&body(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize"})
            )),
            Message::Request {
                id: json!(0),
                initialize: true
            }
        );
        assert_eq!(
            Message::of(&body(
                json!({"jsonrpc": "2.0", "id": "a", "method": "tools/call"})
            )),
            Message::Request {
                id: json!("a"),
                initialize: false
            }
        );
        assert_eq!(
            Message::of(&body(
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                     "params": {"requestId": 7}})
            )),
            Message::Cancelled { id: json!(7) }
        );
        for other in [
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": null}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
            json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
        ] {
            assert_eq!(Message::of(&body(other.clone())), Message::Other, "{other}");
        }
        assert_eq!(Message::of(b"{not json"), Message::Other);
    }

    #[tokio::test]
    async fn a_cancellation_reaches_only_the_request_it_names() {
        let calls = Arc::new(Calls::default());
        let key = |token: &str, session: Option<&str>, id: Value| {
            CallKey::new(token, session.map(str::to_owned), &id)
        };
        let mut mine = calls.register(key("laptop", Some("s1"), json!(7)));
        let mut same_id_other_client = calls.register(key("laptop", Some("s2"), json!(7)));
        let mut same_id_other_token = calls.register(key("ci", Some("s1"), json!(7)));
        let mut string_id = calls.register(key("laptop", Some("s1"), json!("7")));
        assert_eq!(calls.cancel(&key("laptop", Some("s1"), json!(7))), 1);
        tokio::time::timeout(std::time::Duration::from_secs(1), mine.cancelled())
            .await
            .expect("the named request is cancelled");
        for other in [
            &mut same_id_other_client,
            &mut same_id_other_token,
            &mut string_id,
        ] {
            let waited =
                tokio::time::timeout(std::time::Duration::from_millis(20), other.cancelled()).await;
            assert!(waited.is_err(), "another request is left alone");
        }
        assert_eq!(calls.cancel_session("laptop", "s2"), 1);
        assert_eq!(calls.cancel_token("ci"), 1, "a revoked token's calls");
        assert_eq!(calls.cancel(&key("laptop", Some("s1"), json!(7))), 0);
        drop((mine, same_id_other_client, same_id_other_token, string_id));
        assert_eq!(calls.len(), 0, "dropped registrations are gone");
    }
}
