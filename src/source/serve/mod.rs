//! `plandesk serve`: plans from agents on other machines, over HTTP/1.1. `/mcp` is the MCP
//! server over streamable HTTP (its `submit_plan` takes the plan's markdown in the call), and
//! `/hooks/claude` takes Claude Code's `type: "http"` hooks. Every request must carry
//! `Authorization: Bearer <token>` for an active token; any other is answered 401 before its
//! body is read, and nothing of it is recorded; OAuth's discovery and default endpoints are
//! answered 404 to anyone (there is no OAuth here, and a client that found a 401 there would
//! start a login that cannot work). Plans are submitted as the token's name. TLS is left to a
//! reverse proxy in front.

mod calls;
mod hook;
pub mod nearby;
mod revoked;
mod share;
mod tasks;
pub mod web;

use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use self::calls::{CallKey, Calls, Message};
use super::mcp::{Owner, PlanServer, TASKS_VERSION};
use super::{WaitSettings, MAX_HOOK_INPUT};
use crate::engine::Engine;
use crate::token::{Caller, Tokens};

/// Where `plandesk serve` listens unless told otherwise: this machine only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8765";
/// The `timeout` of a Claude Code http hook pointed at a server, unless told otherwise (the
/// README's hook gives this one): its plans are answered before it runs out.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(86_400);
/// File descriptors kept for what is not a connection (the store's, the listener, files).
const RESERVED_FILES: u64 = 128;
/// A client must send its request headers within this long (slow clients hold no slot).
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a waiting MCP call's event stream carries a keep-alive (proxies close idle ones,
/// and a client that went away is noticed when one cannot be written).
const SSE_KEEP_ALIVE: Duration = Duration::from_secs(10);
/// How long in-flight requests get to answer once the server is told to stop.
const DRAIN: Duration = Duration::from_secs(10);

/// How `plandesk serve` waits for decisions.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// For MCP calls.
    pub mcp_wait: WaitSettings,
    /// For Claude Code's hooks: its deadline must fall before Claude Code stops waiting.
    pub hook_wait: WaitSettings,
    /// Connections served at once (more wait to be accepted): at most what the OS allows this
    /// process to open ([`connection_limit`]); `None`, that.
    pub max_connections: Option<usize>,
    /// Requests one token has answered at once (more are refused); `None`, half the
    /// connections, so that no one token holds them all.
    pub max_per_token: Option<usize>,
    /// Reverse proxies in front of the server: a request from one of them comes from the
    /// address it puts last in `X-Forwarded-For` (see [`web::client_address`]).
    pub trusted_proxies: Vec<IpAddr>,
    /// Where browsers reach this server, when the caller knows (the app serving its network:
    /// its address there); `None`, the one `serve --public-url` saved, if any.
    pub public_url: Option<String>,
}

/// How many connections this process can hold open at once: its limit of open files, raised
/// to the most the OS allows it, less what the server needs besides. Capped at `asked`.
pub fn connection_limit(asked: Option<usize>) -> usize {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            limit = raised;
        }
    }
    // No limit at all: as many as connections can be counted.
    let files = limit.current.unwrap_or(u64::MAX);
    let available = usize::try_from(files.saturating_sub(RESERVED_FILES))
        .unwrap_or(usize::MAX)
        .max(1);
    asked.map_or(available, |asked| asked.clamp(1, available))
}

type Body = BoxBody<Bytes, Infallible>;

struct State {
    engine: Engine,
    tokens: Tokens,
    mcp: StreamableHttpService<PlanServer, NeverSessionManager>,
    /// The server behind `mcp`, for the requests of the tasks extension it answers itself.
    server: PlanServer,
    hook_wait: WaitSettings,
    /// The MCP requests being answered, for the cancellations that name them.
    calls: Arc<Calls>,
    /// Flips to `true` when the server stops: every waiting call closes its plan as abandoned.
    stopped: watch::Receiver<bool>,
    /// The tokens seen revoked: what still waits on one ends (see `revoked`).
    revoked: revoked::RevokedKeys,
    /// The requests each token has in flight.
    shares: Arc<share::Shares>,
    /// Sign-in attempts of the web review, per address.
    web: web::Attempts,
    /// Reverse proxies whose `X-Forwarded-For` is believed.
    trusted_proxies: Vec<IpAddr>,
    /// The inbox, read once per change for every browser's event stream and the webhooks.
    inbox: crate::view::InboxFeed,
    /// Whether browsers reach this server over https (its public URL says so): its session
    /// cookies are `Secure` even without a proxy's header.
    public_https: bool,
}

/// Serves on `listener` until `shutdown` resolves; then every plan still waiting is closed as
/// abandoned (each agent is answered "not approved"), and in-flight requests get a few seconds
/// to answer.
pub async fn serve(
    engine: Engine,
    listener: TcpListener,
    options: ServeOptions,
    shutdown: impl std::future::Future<Output = ()>,
) {
    // What is pending from now on is new to the webhooks (before any request is accepted).
    let started = engine.now_millis();
    let (stop, stopped) = watch::channel(false);
    let server = PlanServer::inline(engine.clone(), options.mcp_wait, stopped.clone());
    // Stateless: each call is one POST whose event stream is its answer, so a client that
    // goes away cancels its call (and a pre-2026 client's `notifications/cancelled`, a POST
    // of its own, is routed to the call it names: see `calls`). Host checks guard against DNS
    // rebinding of unauthenticated local servers; here every request needs a token, and a
    // reverse proxy sends its own host.
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_sse_keep_alive(Some(SSE_KEEP_ALIVE))
        .with_max_request_body_bytes(MAX_HOOK_INPUT)
        .disable_allowed_hosts();
    let service = server.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(service.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let (revoked_keys, revoked) = revoked::channel();
    // Where browsers reach this server, for webhooks' links and the session cookie.
    let public_url = match options.public_url {
        Some(url) => Some(url),
        None => engine
            .setting(web::pair::PUBLIC_URL_SETTING)
            .await
            .ok()
            .flatten(),
    };
    let inbox = crate::view::follow_inbox(engine.clone());
    let connections = connection_limit(options.max_connections).min(Semaphore::MAX_PERMITS);
    let state = Arc::new(State {
        shares: share::Shares::new(
            options
                .max_per_token
                .unwrap_or(connections / 2)
                .min(connections),
        ),
        inbox: inbox.clone(),
        public_https: public_url
            .as_deref()
            .is_some_and(|u| u.starts_with("https://")),
        tokens: engine.tokens(),
        engine,
        mcp,
        server,
        hook_wait: options.hook_wait,
        calls: Arc::default(),
        stopped,
        revoked,
        web: web::Attempts::default(),
        trusted_proxies: options.trusted_proxies,
    });
    let watcher = tokio::spawn(revoked::watch(state.clone(), revoked_keys));
    let base = match public_url {
        Some(url) => url,
        None => {
            let address = listener.local_addr().ok();
            if address.is_some_and(|a| a.ip().is_unspecified()) {
                eprintln!(
                    "plandesk serve: webhooks' links name this server by an address no browser \
                     can open; give the one browsers reach with --public-url"
                );
            }
            address.map(|a| format!("http://{a}")).unwrap_or_default()
        }
    };
    let announcer = tokio::spawn(crate::webhook::announce_new(
        state.engine.clone(),
        base,
        inbox,
        started,
    ));
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(connections));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // Told to stop while every slot is taken (by clients that hold their connections
        // open), it stops all the same.
        let slot = tokio::select! {
            biased;
            () = &mut shutdown => break,
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors and the like: wait, and go on serving.
                    eprintln!("plandesk serve: cannot accept a connection: {err}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let state = state.clone();
        let service = hyper::service::service_fn(move |request| {
            let state = state.clone();
            async move { Ok::<_, Infallible>(handle(&state, request, peer.ip()).await) }
        });
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT)
            .serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A client that breaks its connection has nothing to be told.
            let _ = connection.await;
            drop(slot);
        });
    }
    drop(listener);
    announcer.abort();
    let _ = stop.send(true);
    let _ = watcher.await;
    let tasks = state.server.tasks().clone();
    let drained = async {
        graceful.shutdown().await;
        // Tasks have no connection of their own: their plans are closed too before the end.
        tasks.idle().await;
    };
    if tokio::time::timeout(DRAIN, drained).await.is_err() {
        eprintln!("plandesk serve: some connections were still open after {DRAIN:?}; closing them");
    }
}

/// How a client gets in, for every refusal to say.
const HOW_TO_AUTHENTICATE: &str = "send `Authorization: Bearer pdt_…` with an active token \
     (`plandesk token create NAME` on the server's machine makes one)";

/// The endpoints an MCP client assumes (2025-03-26 authorization) when a server publishes no
/// OAuth metadata.
const OAUTH_FALLBACKS: [&str; 3] = ["/authorize", "/token", "/register"];

/// One request: authenticated first (from its headers alone), then routed.
async fn handle(state: &State, request: Request<Incoming>, peer: IpAddr) -> Response<Body> {
    // OAuth discovery (RFC 9728, RFC 8414, OpenID) and the endpoints MCP clients fall back to
    // when it finds nothing: after a 401 they look here and, finding metadata or another 401,
    // start a login this server cannot complete. Nothing is here, to anyone: a 404 before any
    // token is asked for.
    let path = request.uri().path();
    if path.starts_with("/.well-known/") || OAUTH_FALLBACKS.contains(&path) {
        return json_response(
            StatusCode::NOT_FOUND,
            &json!({"error": "not-found", "message": format!(
                "this server has no OAuth; {HOW_TO_AUTHENTICATE}"
            )}),
        );
    }
    // Each route's future boxed: a connection holds the size of the one it waits in, not of
    // the largest (a server holds thousands of waiting hooks).
    if web::serves(path) {
        return Box::pin(web::handle(state, request, peer)).await;
    }
    let caller = match Box::pin(authenticate(&state.tokens, request.headers())).await {
        Ok(Some(caller)) => caller,
        Ok(None) => return unauthorized(),
        Err(err) => {
            // What the store said stays in the server's log: a request not yet authenticated
            // gets no path or host of it.
            eprintln!("plandesk serve: cannot check a token: {err}");
            return json_response(
                StatusCode::SERVICE_UNAVAILABLE,
                &json!({"error": "store", "message":
                    "the server cannot reach its store to check the token: try again"}),
            );
        }
    };
    match (request.method(), request.uri().path()) {
        (_, "/mcp") => Box::pin(mcp(state, caller, request)).await,
        (&Method::POST, "/hooks/claude") => {
            let Some(share) = state.shares.take(&caller.token_key()) else {
                return busy(state.shares.most(), true);
            };
            share.hold(Box::pin(hook::claude(state, caller, request)).await)
        }
        (_, "/hooks/claude") => json_response(
            StatusCode::METHOD_NOT_ALLOWED,
            &json!({"error": "method", "message": "POST the hook's JSON to /hooks/claude"}),
        ),
        (_, path) => json_response(
            StatusCode::NOT_FOUND,
            &json!({"error": "not-found", "message": format!(
                "no endpoint {}; this server has /mcp and /hooks/claude",
                crate::text::short(path, 100)
            )}),
        ),
    }
}

/// The answer to a request past its token's share ([`share`]): a deny for Claude Code's hook
/// (which would take any other answer as no opinion), 429 for the rest.
fn busy(most: usize, hook: bool) -> Response<Body> {
    let err = super::SourceError::Busy(most);
    if hook {
        return hook::answer(Some(super::claude::failure(&err)));
    }
    let mut response = json_response(
        StatusCode::TOO_MANY_REQUESTS,
        &json!({"error": "busy", "message": err.to_string()}),
    );
    response.headers_mut().insert(
        http::header::RETRY_AFTER,
        http::HeaderValue::from_static("10"),
    );
    response
}

/// `/mcp`: rmcp's streamable HTTP service, each request registered while it is answered so
/// that its client's cancellation reaches it (see `calls`); the requests of the tasks extension
/// are answered here (see `mcp::tasks`), and rmcp's `initialize` and `tools/list` answers
/// completed.
async fn mcp(state: &State, caller: Caller, request: Request<Incoming>) -> Response<Body> {
    let session = calls::session_of(request.headers());
    let token = caller.token_key();
    // Any request is a sign of life of its client, whose tasks wait only while it shows some.
    state.server.tasks().touch(&Owner {
        principal: token.clone(),
        session: session.clone(),
    });
    match (request.method(), &session) {
        // A client closing its session: it waits for none of its calls or tasks any more.
        (&Method::DELETE, Some(session)) => {
            state.calls.cancel_session(&token, session);
            state.server.tasks().end_session(&Owner {
                principal: token.clone(),
                session: Some(session.clone()),
            });
            return empty(StatusCode::NO_CONTENT, None);
        }
        (&Method::POST, _) => {}
        _ => {
            let mut request = request;
            request.extensions_mut().insert(caller);
            return state.mcp.handle(request).await;
        }
    }
    let (mut parts, body) = request.into_parts();
    let body = match read_body(&parts.headers, body, "an MCP message").await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let parsed = serde_json::from_slice::<serde_json::Value>(&body).ok();
    let message = parsed.as_ref().map_or(Message::Other, Message::of_value);
    // A request holds a part of its token's share until it is answered; a cancellation (which
    // gives one back) or any other message takes none.
    let share = match &message {
        Message::Request { .. } => match state.shares.take(&token) {
            Some(share) => Some(share),
            None => return busy(state.shares.most(), false),
        },
        _ => None,
    };
    let tasks_version = parts
        .headers
        .get(tasks::PROTOCOL_HEADER)
        .is_some_and(|v| v.as_bytes() == TASKS_VERSION.as_bytes());
    if let (true, Some(parsed), Message::Request { id, .. }) = (tasks_version, &parsed, &message) {
        let owner = Owner {
            principal: token.clone(),
            session: session.clone(),
        };
        if let Some(reply) = state.server.task_reply(parsed, owner, Some(caller.clone())) {
            let registered = state.calls.register(CallKey::new(&token, session, id));
            revoked::end_if_revoked(state, &token);
            return share::held(share, tasks::answer(reply, registered).await);
        }
    }
    // What rmcp's answer lacks, if it answers `initialize` or `tools/list` (see `mcp::tasks`).
    let completion = parsed
        .as_ref()
        .and_then(|parsed| tasks::completion(parsed, tasks_version));
    parts.extensions.insert(caller);
    let request = Request::from_parts(parts, Full::new(body));
    match message {
        Message::Cancelled { id } => {
            state.calls.cancel(&CallKey::new(&token, session, &id));
            state.mcp.handle(request).await
        }
        Message::Request { id, initialize } => {
            let mut registered = state.calls.register(CallKey::new(&token, session, &id));
            revoked::end_if_revoked(state, &token);
            let mut response = tokio::select! {
                response = state.mcp.handle(request) => response,
                // Cancelled before its answer began (rmcp holds a 2026-07-28 request's
                // headers until its first message): dropping the future cancels the handler.
                () = registered.cancelled() => {
                    return empty(StatusCode::OK, Some("text/event-stream"));
                }
            };
            if initialize && response.status().is_success() {
                // The client's name for itself from now on (see `calls`).
                if let Ok(value) = http::HeaderValue::from_str(&calls::new_session()) {
                    response.headers_mut().insert(calls::SESSION_HEADER, value);
                }
            }
            if let Some(completion) = completion {
                response = tasks::complete(response, completion).await;
            }
            share::held(share, response.map(|body| registered.guard(body)))
        }
        Message::Other => state.mcp.handle(request).await,
    }
}

/// A request's whole body, at most [`MAX_HOOK_INPUT`] bytes (`what` it is, for the refusal):
/// one that says or turns out to be larger is refused with 413 before more of it is read.
pub(super) async fn read_body(
    headers: &HeaderMap,
    body: Incoming,
    what: &str,
) -> Result<Bytes, Response<Body>> {
    let too_large = || {
        json_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            &json!({"error": "too-large", "message": format!("{what} may be at most {MAX_HOOK_INPUT} bytes")}),
        )
    };
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_HOOK_INPUT as u64) {
        return Err(too_large());
    }
    match Limited::new(body, MAX_HOOK_INPUT).collect().await {
        Ok(body) => Ok(body.to_bytes()),
        Err(err) if err.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
        Err(err) => Err(json_response(
            StatusCode::BAD_REQUEST,
            &json!({"error": "body", "message": format!("cannot read the request body: {err}")}),
        )),
    }
}

fn empty(status: StatusCode, content_type: Option<&'static str>) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = status;
    if let Some(content_type) = content_type {
        response
            .headers_mut()
            .insert(CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    }
    response
}

/// The token a request carries, if it is one active token's: exactly one `Authorization`
/// header, `Bearer <secret>`.
async fn authenticate(
    tokens: &Tokens,
    headers: &HeaderMap,
) -> Result<Option<Caller>, crate::token::TokenError> {
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return Ok(None);
    };
    let Ok(value) = value.to_str() else {
        return Ok(None);
    };
    Ok(tokens
        .authenticate(value)
        .await?
        .map(|row| Caller::of(&row)))
}

fn unauthorized() -> Response<Body> {
    let mut response = json_response(
        StatusCode::UNAUTHORIZED,
        &json!({"error": "unauthorized", "message": HOW_TO_AUTHENTICATE}),
    );
    response.headers_mut().insert(
        WWW_AUTHENTICATE,
        http::HeaderValue::from_static("Bearer realm=\"plandesk\""),
    );
    response
}

fn json_response(status: StatusCode, body: &serde_json::Value) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
