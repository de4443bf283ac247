//! `GET /api/events`: the window's events as server-sent events. `inbox-changed` carries the
//! whole inbox (as the app's event does) when the stream opens and whenever it changes; the
//! stream checks its session at each change and ends with `signed-out` once it is revoked or
//! expired, and when the server stops.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, Response};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use tokio::sync::mpsc;

use super::{Body, State};
use crate::view;

/// How often the inbox is read even when nothing changed (a plan whose agent stopped waiting is
/// closed as abandoned then), and the stream carries a keep-alive (proxies close idle ones).
const REFRESH: Duration = Duration::from_secs(10);
/// Changes that come together are read once.
const SETTLE: Duration = Duration::from_millis(20);

pub(super) fn stream(state: &State, session: String) -> Response<Body> {
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    let engine = state.engine.clone();
    let tokens = state.tokens.clone();
    let mut stopped = state.stopped.clone();
    tokio::spawn(async move {
        // Fused: a store whose changes cannot be followed is read on the timer alone.
        let mut changes = engine.changes().fuse();
        let mut refresh = tokio::time::interval_at(tokio::time::Instant::now() + REFRESH, REFRESH);
        let mut sent = String::new();
        loop {
            let event = match tokens.session(&session).await {
                Ok(Some(_)) => match view::inbox(engine.review()).await {
                    Ok(inbox) => {
                        let inbox = serde_json::to_string(&inbox).unwrap_or_default();
                        (inbox != sent).then(|| {
                            sent.clone_from(&inbox);
                            format!("event: inbox-changed\ndata: {inbox}\n\n")
                        })
                    }
                    Err(err) => {
                        eprintln!("plandesk serve: cannot read the inbox: {err}");
                        None
                    }
                },
                Ok(None) => {
                    let _ = tx
                        .send(Bytes::from_static(b"event: signed-out\ndata: null\n\n"))
                        .await;
                    return;
                }
                Err(err) => {
                    eprintln!("plandesk serve: cannot check a session: {err}");
                    None
                }
            };
            let event = event.unwrap_or_else(|| ": keep-alive\n\n".to_owned());
            if tx.send(Bytes::from(event)).await.is_err() {
                return;
            }
            tokio::select! {
                Some(()) = changes.next() => tokio::time::sleep(SETTLE).await,
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
