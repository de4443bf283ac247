//! `GET /api/events`: the window's events as server-sent events. `inbox-changed` carries the
//! whole inbox (as the app's event does) when the stream opens and whenever it changes;
//! `store-changed` (no data) says the store changed though the inbox did not (an agent's work
//! recorded, a run moved on), for what the page shows beside the inbox; the
//! stream checks its session at each change and ends with `signed-out` once it is revoked or
//! expired, and when the server stops. Every stream follows one reader of the inbox
//! (`view::follow_inbox`): a hundred open pages cost one subscription to the store.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, Response};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use tokio::sync::mpsc;

use super::{Body, State};

/// How often a stream checks its session and carries a keep-alive when nothing changed
/// (proxies close idle ones).
const REFRESH: Duration = Duration::from_secs(10);

/// One browser's stream, from the server's one reader of the inbox (`State::inbox`): each
/// stream checks its session at each change and sends the inbox when it differs from what it
/// sent last.
pub(super) fn stream(state: &State, session: String) -> Response<Body> {
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    let tokens = state.tokens.clone();
    let mut feed = state.inbox.follow();
    let mut stopped = state.stopped.clone();
    tokio::spawn(async move {
        let mut refresh = tokio::time::interval_at(tokio::time::Instant::now() + REFRESH, REFRESH);
        let mut sent = String::new();
        let mut changes = 0;
        loop {
            // Nothing of the inbox goes out unless the session is known to be active: while
            // the store cannot say, the stream only keeps alive, and asks again at the next
            // refresh (not at each change, which would ask at once again).
            let active = match tokens.session(&session).await {
                Ok(Some(_)) => true,
                Ok(None) => {
                    let _ = tx
                        .send(Bytes::from_static(b"event: signed-out\ndata: null\n\n"))
                        .await;
                    return;
                }
                Err(err) => {
                    eprintln!("plandesk serve: cannot check a session: {err}");
                    false
                }
            };
            let snapshot = active.then(|| feed.borrow_and_update().clone()).flatten();
            let event = match snapshot {
                Some(snapshot) if snapshot.json != sent => {
                    sent.clone_from(&snapshot.json);
                    changes = snapshot.changes;
                    format!("event: inbox-changed\ndata: {}\n\n", snapshot.json)
                }
                Some(snapshot) if snapshot.changes != changes => {
                    changes = snapshot.changes;
                    "event: store-changed\ndata: null\n\n".to_owned()
                }
                _ => ": keep-alive\n\n".to_owned(),
            };
            if tx.send(Bytes::from(event)).await.is_err() {
                return;
            }
            tokio::select! {
                changed = feed.changed(), if active => if changed.is_err() { return },
                _ = refresh.tick() => {}
                _ = async { stopped.wait_for(|stopped| *stopped).await.map(|_| ()) } => return,
                () = tx.closed() => return,
            }
        }
    });
    let frames = tokio_stream::wrappers::ReceiverStream::new(rx)
        .map(|bytes| Ok::<_, Infallible>(Frame::data(bytes)));
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(frames)));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
