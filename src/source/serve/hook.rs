//! `/hooks/claude`: Claude Code's `type: "http"` hook. Claude Code POSTs the JSON a command
//! hook reads on stdin and reads the same JSON output from a 2xx response's body (an empty
//! body: no opinion, it asks as usual). A non-2xx answer or a timeout is a non-blocking error
//! there, so every failure of ours is answered 200 with a deny (fail closed): a body too large
//! or unreadable, a token past its share of the server (`share`), a store that fails.

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use tokio::sync::oneshot;

use super::{read_body, Body, State};
use crate::review::ExternalPlan;
use crate::source::{claude, review_plan, SourceError, MAX_HOOK_INPUT};
use crate::store::Actor;
use crate::token::Caller;

pub(super) async fn claude(
    state: &State,
    caller: Caller,
    request: Request<Incoming>,
) -> Response<Body> {
    // The request and its body are dropped once parsed: the call is what waits.
    let parsed = {
        let (parts, body) = request.into_parts();
        match read_body(&parts.headers, body, "a hook payload").await {
            Err(_) => Err(SourceError::Input {
                agent: "Claude Code",
                message: format!(
                    "the request body is not a payload of at most {MAX_HOOK_INPUT} bytes"
                ),
            }),
            Ok(body) => match std::str::from_utf8(&body) {
                Ok(text) => claude::parse_remote(text, &caller),
                Err(_) => Err(SourceError::Input {
                    agent: "Claude Code",
                    message: "the request body is not UTF-8".into(),
                }),
            },
        }
    };
    let mut call = match parsed {
        Ok(Some(call)) => call,
        Ok(None) => return answer(None),
        Err(err) => return answer(Some(claude::failure(&err))),
    };
    let token = caller.token_key();
    let checked = caller.clone();
    let engine = state.engine.clone().with_actor(Actor {
        name: caller.name,
        process: "serve:claude-code".into(),
    });
    // The review runs on a task of its own; this request's future holds `_armed`, so when the
    // client goes away (hyper drops the future) the task hears of it and closes the plan as
    // abandoned, as a killed command hook's plan is.
    let (_armed, gone) = oneshot::channel::<()>();
    let mut stopped = state.stopped.clone();
    // Its token revoked while it waits, the request ends as if its client had gone.
    let mut revoked = state.revoked.clone();
    let wait = state.hook_wait.clone();
    // The plan's text goes to the review; the answer is built from the tool's input, which
    // holds it too.
    let plan = ExternalPlan {
        text: std::mem::take(&mut call.plan.text),
        ..call.plan.clone()
    };
    let review = tokio::spawn(async move {
        let stop = async move {
            tokio::select! {
                _ = gone => {}
                _ = stopped.wait_for(|stop| *stop) => {}
                _ = revoked.wait_for(|keys| keys.contains(&token)) => {}
            }
        };
        review_plan(&engine, plan, &wait, stop).await
    });
    let reply = match review.await {
        // Revoked while the plan waited (before the watcher ended the wait): no answer goes out.
        Ok(Ok(_))
            if !Box::pin(state.tokens.is_active(&checked))
                .await
                .unwrap_or(false) =>
        {
            Some(claude::failure(&SourceError::Revoked))
        }
        Ok(Ok(decided)) => claude::answer(&call, &decided),
        Ok(Err(err)) => Some(claude::failure(&err)),
        Err(join) => Some(claude::failure(&SourceError::Internal(format!(
            "the review task ended: {join}"
        )))),
    };
    answer(reply)
}

/// A 200 carrying the hook's output (`None`: an empty body, Claude Code asks as usual).
pub(super) fn answer(output: Option<String>) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(output.unwrap_or_default())).boxed());
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
