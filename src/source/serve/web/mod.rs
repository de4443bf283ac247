//! The review in a browser: `plandesk serve` also serves the window's own UI (`ui/`, the same
//! modules; `api.js` speaks HTTP and server-sent events where there is no Tauri) to reviewers
//! signed in by pairing. Every path but the agents' (`/mcp`, `/hooks/…`) is the web review's.
//!
//! What keeps it closed:
//! - Nothing about a plan without a session: the page at `/` is a sign-in page until a session
//!   cookie (HttpOnly, SameSite=Strict, Secure behind a proxy that says it speaks https) is
//!   presented; the API and the event stream answer 401. Only the UI's code (no data) is public.
//! - A session is got once from a sign-in link of `plandesk pair` (single use, 10 minutes),
//!   by a POST from its page: a link previewed by a chat app is not used up. Failed sign-in
//!   attempts are rate-limited per address.
//! - Every state change is a POST from this origin: `Origin` must name this host (as sent, or as
//!   the proxy forwarded it), `Sec-Fetch-Site` must say same-origin where sent, and the API
//!   takes JSON only (a form of another site cannot send that).
//! - The app's CSP on every page (no inline script or style, nothing from elsewhere), framing
//!   refused, no referrer to another site (a sign-in link is in a URL; within the site the
//!   referrer stays, or a browser sends `Origin: null`).
//! - A decision is bound to the revision hash the page showed, exactly as in the app, and
//!   recorded under the session's name (process `web`).

mod api;
mod events;
mod limit;
mod pages;
pub mod pair;

use std::net::IpAddr;

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, COOKIE, HOST, LOCATION, SET_COOKIE};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use include_dir::{include_dir, Dir};
use serde_json::json;

use super::{empty, json_response, read_body, Body, State};
use crate::store::{Actor, TokenRow};
use crate::token::SESSION_LIFETIME;

pub(super) use limit::Attempts;

/// The window's files, served as they are.
static UI: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/ui");

/// The cookie that carries a session's secret.
const SESSION_COOKIE: &str = "plandesk_session";

/// The app's CSP (`tauri.conf.json`), with the browser's own connections: to this origin only.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' \
     data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; \
     frame-src 'none'; frame-ancestors 'none'; form-action 'self'";

/// Whether `path` is the web review's: everything but the agents' endpoints.
pub(super) fn serves(path: &str) -> bool {
    !(path == "/mcp" || path.starts_with("/hooks/"))
}

/// One request of the web review.
pub(super) async fn handle(
    state: &State,
    request: Request<Incoming>,
    peer: IpAddr,
) -> Response<Body> {
    let peer = client_address(peer, request.headers(), &state.trusted_proxies);
    let path = request.uri().path().to_owned();
    let method = request.method().clone();
    let response = match (&method, path.as_str()) {
        (&Method::GET | &Method::HEAD, "/") => home(state, &request).await,
        (_, p) if p.starts_with("/pair/") => pair(state, request, peer).await,
        (&Method::GET, "/api/events") => match session(state, request.headers()).await {
            Ok(signed_in) => events::stream(state, signed_in.secret),
            Err(refused) => refused,
        },
        (&Method::POST, p) if p.starts_with("/api/") => api(state, request).await,
        (_, p) if p.starts_with("/api/") => error(
            StatusCode::METHOD_NOT_ALLOWED,
            "method",
            "the review's API takes POSTs (and a GET of /api/events)",
        ),
        (&Method::GET | &Method::HEAD, p) => match file(p) {
            Some(response) => response,
            None => pages::not_found(),
        },
        _ => error(StatusCode::METHOD_NOT_ALLOWED, "method", "not here"),
    };
    secured(response)
}

/// `/`: the review for a signed-in browser; else a sign-in page (after one same-site reload, for
/// a link followed from another site: a SameSite=Strict cookie is not sent with that).
async fn home(state: &State, request: &Request<Incoming>) -> Response<Body> {
    match session(state, request.headers()).await {
        Ok(_) => file("/index.html").unwrap_or_else(pages::not_found),
        Err(_)
            if request
                .uri()
                .query()
                .is_some_and(|q| q.contains("signin=1")) =>
        {
            pages::sign_in_needed()
        }
        Err(_) => pages::reload_same_site(request.uri().query().unwrap_or("")),
    }
}

/// A signed-in reviewer: the session's row and secret.
pub(super) struct SignedIn {
    row: TokenRow,
    secret: String,
}

impl SignedIn {
    /// Who decides, comments and edits from this browser, in the audit trail.
    fn reviewer(&self) -> Actor {
        Actor {
            name: self.row.name.clone(),
            process: "web".into(),
        }
    }
}

/// The session a request's cookie carries, if it is active; else the 401 (or 503) to answer.
async fn session(state: &State, headers: &HeaderMap) -> Result<SignedIn, Response<Body>> {
    let Some(secret) = cookie(headers, SESSION_COOKIE) else {
        return Err(signed_out());
    };
    match state.tokens.session(secret).await {
        Ok(Some(row)) => Ok(SignedIn {
            row,
            secret: secret.to_owned(),
        }),
        Ok(None) => Err(signed_out()),
        Err(err) => {
            // What the store said stays in the server's log: a stranger's request gets no path
            // or host of it.
            eprintln!("plandesk serve: cannot check a session: {err}");
            Err(store_unavailable())
        }
    }
}

/// The API's answer when the store fails: what it said is in the server's log only.
fn store_unavailable() -> Response<Body> {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        "store",
        "The server cannot reach its store: try again.",
    )
}

fn signed_out() -> Response<Body> {
    error(
        StatusCode::UNAUTHORIZED,
        "signed-out",
        "This browser is not signed in: open a sign-in link of `plandesk pair`.",
    )
}

/// The value of the cookie `name` in a request's `Cookie` headers.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name).then_some(value)
        })
}

/// A header's value, if it is one and text.
fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Whether a state-changing request comes from a page of this server: its `Origin` names the
/// host it was sent to (or that a proxy forwarded), and `Sec-Fetch-Site`, where a browser sends
/// it, says same-origin.
fn same_origin(headers: &HeaderMap) -> bool {
    let header = |name| header(headers, name);
    if header("sec-fetch-site").is_some_and(|site| site != "same-origin") {
        return false;
    }
    let Some(origin) = header("origin") else {
        return false;
    };
    let Some((_, authority)) = origin.split_once("://") else {
        return false;
    };
    let forwarded = header("x-forwarded-host").and_then(|h| h.split(',').next());
    [forwarded, header(HOST.as_str())]
        .into_iter()
        .flatten()
        .any(|host| host.trim().eq_ignore_ascii_case(authority))
}

/// Whether the browser reached this server over https: a proxy in front says so.
fn over_https(headers: &HeaderMap) -> bool {
    let header = |name| header(headers, name);
    header("x-forwarded-proto").is_some_and(|p| {
        p.split(',')
            .next()
            .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"))
    }) || header("forwarded").is_some_and(|f| f.to_ascii_lowercase().contains("proto=https"))
}

/// The browser's address: the peer's, unless the peer is a reverse proxy the server was told
/// to trust (`--trusted-proxy`); then the last address in `X-Forwarded-For` that is not one of
/// those proxies (each proxy appends the address it was reached from, so what a client wrote
/// there itself comes before). A header that cannot be read, or names only proxies, leaves the
/// proxy's own address: its browsers then share one limit, the stricter answer.
pub(super) fn client_address(peer: IpAddr, headers: &HeaderMap, trusted: &[IpAddr]) -> IpAddr {
    // An IPv4 proxy reaches a dual-stack listener as `::ffff:a.b.c.d`.
    let peer = peer.to_canonical();
    let trusted = |address: &IpAddr| trusted.iter().any(|t| t.to_canonical() == *address);
    if !trusted(&peer) {
        return peer;
    }
    let mut hops: Vec<&str> = Vec::new();
    for value in headers.get_all("x-forwarded-for") {
        let Ok(value) = value.to_str() else {
            return peer;
        };
        hops.extend(value.split(',').map(str::trim));
    }
    for hop in hops.iter().rev() {
        // An address, or one with its port (`203.0.113.5:4711`, `[2001:db8::1]:4711`).
        let address = hop
            .parse::<IpAddr>()
            .or_else(|_| hop.parse::<std::net::SocketAddr>().map(|a| a.ip()));
        let Ok(address) = address.map(|a| a.to_canonical()) else {
            return peer;
        };
        if !trusted(&address) {
            return address;
        }
    }
    peer
}

/// `/pair/<secret>`: GET shows whom the link signs in (or that it cannot be used); POST, from
/// that page, uses it: a session cookie and on to the review.
async fn pair(state: &State, request: Request<Incoming>, peer: IpAddr) -> Response<Body> {
    if let Err(wait) = state.web.check(peer) {
        return pages::too_many(wait);
    }
    let secret = request.uri().path()["/pair/".len()..].to_owned();
    let unusable = || {
        state.web.failed(peer);
        pages::link_used()
    };
    match *request.method() {
        Method::GET | Method::HEAD => match state.tokens.pairing(&secret).await {
            Ok(Some(row)) => pages::confirm_pairing(&row.name),
            Ok(None) => unusable(),
            Err(err) => store_failed(&err),
        },
        Method::POST => {
            if !same_origin(request.headers()) {
                return pages::forbidden();
            }
            match state.tokens.redeem(&secret).await {
                Ok(Some((row, session))) => {
                    eprintln!("plandesk serve: `{}` signed in from {peer}", row.name);
                    let https = state.public_https || over_https(request.headers());
                    let secure = if https { "; Secure" } else { "" };
                    let cookie = format!(
                        "{SESSION_COOKIE}={}; Path=/; Max-Age={}; HttpOnly; SameSite=Strict{secure}",
                        session.expose(),
                        SESSION_LIFETIME.as_secs()
                    );
                    let mut response = empty(StatusCode::SEE_OTHER, None);
                    let headers = response.headers_mut();
                    headers.insert(LOCATION, HeaderValue::from_static("/"));
                    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
                        headers.insert(SET_COOKIE, cookie);
                    }
                    response
                }
                Ok(None) => unusable(),
                Err(err) => store_failed(&err),
            }
        }
        _ => error(
            StatusCode::METHOD_NOT_ALLOWED,
            "method",
            "open the link, then sign in",
        ),
    }
}

/// The page for a store that failed while a sign-in link was checked: the detail in the log.
fn store_failed(err: &dyn std::fmt::Display) -> Response<Body> {
    eprintln!("plandesk serve: cannot check a sign-in link: {err}");
    pages::store_failed()
}

/// `POST /api/<command>`: a command of the window, as the signed-in reviewer; JSON in and out.
async fn api(state: &State, request: Request<Incoming>) -> Response<Body> {
    let signed_in = match session(state, request.headers()).await {
        Ok(signed_in) => signed_in,
        Err(refused) => return refused,
    };
    let json = header(request.headers(), CONTENT_TYPE.as_str()).is_some_and(|v| {
        v.split(';')
            .next()
            .is_some_and(|t| t.trim() == "application/json")
    });
    if !same_origin(request.headers()) || !json {
        return error(
            StatusCode::FORBIDDEN,
            "forbidden",
            "refused: the review's API answers its own pages only",
        );
    }
    let command = request.uri().path()["/api/".len()..].to_owned();
    let (parts, body) = request.into_parts();
    let body = match read_body(&parts.headers, body, "a command").await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let args = if body.is_empty() {
        json!({})
    } else {
        match serde_json::from_slice(&body) {
            Ok(args) => args,
            Err(err) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "invalid-input",
                    &format!("not JSON: {err}"),
                )
            }
        }
    };
    if command == "sign_out" {
        return sign_out(state, &signed_in).await;
    }
    let engine = state.engine.clone().as_person(signed_in.reviewer());
    match api::call(&engine, &signed_in.row, &command, args).await {
        Ok(value) => json_response(StatusCode::OK, &value),
        // The store's own failure (its path, its host) stays in the server's log.
        Err(err) if matches!(err.code.as_str(), "store" | "store-file" | "store-newer") => {
            eprintln!("plandesk serve: {command}: {err}");
            store_unavailable()
        }
        Err(err) => json_response(StatusCode::BAD_REQUEST, &json!(err)),
    }
}

/// Ends this browser's session: revoked in the store, the cookie cleared.
async fn sign_out(state: &State, signed_in: &SignedIn) -> Response<Body> {
    let tokens = state
        .engine
        .clone()
        .as_person(signed_in.reviewer())
        .tokens();
    if let Err(err) = tokens.sign_out(&signed_in.secret).await {
        eprintln!("plandesk serve: cannot sign a session out: {err}");
        return store_unavailable();
    }
    let mut response = json_response(StatusCode::OK, &json!(null));
    let cleared = format!("{SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict");
    if let Ok(cleared) = HeaderValue::from_str(&cleared) {
        response.headers_mut().insert(SET_COOKIE, cleared);
    }
    response
}

/// One of the window's files, by its path (`/app.js`); `None` for any other path.
fn file(path: &str) -> Option<Response<Body>> {
    let name = path.strip_prefix('/')?;
    if name.contains('/') {
        return None;
    }
    let file = UI.get_file(name)?;
    let kind = match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    };
    let mut response = Response::new(Full::new(Bytes::from_static(file.contents())).boxed());
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    Some(response)
}

/// What every answer of the web review carries.
fn secured(mut response: Response<Body>) -> Response<Body> {
    let headers = response.headers_mut();
    for (name, value) in [
        ("content-security-policy", CSP),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "same-origin"),
        ("x-frame-options", "DENY"),
        ("cross-origin-opener-policy", "same-origin"),
        ("cross-origin-resource-policy", "same-origin"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    if !headers.contains_key(CACHE_CONTROL) {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// A refusal as the window reads errors: `{code, message}`.
fn error(status: StatusCode, code: &str, message: &str) -> Response<Body> {
    json_response(status, &json!({"code": code, "message": message}))
}
