//! The few pages the web review draws itself, before there is a session: sign in, a sign-in
//! link's confirmation, and refusals. Plain HTML under the CSP (the app's stylesheet, no
//! script), each naming only what the person already holds (a link's reviewer name).

use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};

use super::Body;
use crate::text::escape_html;

fn page(status: StatusCode, title: &str, body: &str) -> Response<Body> {
    let html = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title} · Plandesk</title>\n<link rel=\"stylesheet\" href=\"/style.css\">\n\
         </head>\n<body class=\"web-page\">\n<main class=\"web-card\">\n\
         <div class=\"brand\"><img src=\"/icon.png\" alt=\"\" width=\"22\" height=\"22\">\
         <span>Plandesk</span></div>\n<h1>{title}</h1>\n{body}\n</main>\n</body>\n</html>\n",
        title = escape_html(title)
    );
    let mut response = Response::new(Full::new(Bytes::from(html)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

/// How a browser gets a session, for every page that has none.
const HOW_TO_PAIR: &str = "<p>On the computer that runs <code>plandesk serve</code>, run \
     <code>plandesk pair</code> (or open the desktop app's Settings → Review from your phone) and \
     open the link or scan the code it shows.</p>";

pub(super) fn sign_in_needed() -> Response<Body> {
    page(
        StatusCode::UNAUTHORIZED,
        "Sign in to review plans",
        &format!("<p>This browser is not signed in.</p>\n{HOW_TO_PAIR}"),
    )
}

/// A link followed from another site arrives without the SameSite=Strict cookie: one reload
/// from this page sends it, and a browser that has none lands on the sign-in page.
pub(super) fn reload_same_site(query: &str) -> Response<Body> {
    let query: String = query
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "=&-_.%".contains(*c))
        .take(200)
        .collect();
    let target = if query.is_empty() {
        "/?signin=1".to_owned()
    } else {
        format!("/?{query}&amp;signin=1")
    };
    let mut response = page(
        StatusCode::OK,
        "Opening the review",
        &format!("<p><a href=\"{target}\">Open the review</a></p>"),
    );
    if let Ok(refresh) = HeaderValue::from_str(&format!("0;url={}", target.replace("&amp;", "&"))) {
        response.headers_mut().insert("refresh", refresh);
    }
    response
}

pub(super) fn confirm_pairing(name: &str) -> Response<Body> {
    page(
        StatusCode::OK,
        "Sign in to Plandesk",
        &format!(
            "<p>This browser will review plans as <strong>{name}</strong>: the audit trail \
             records your decisions under that name.</p>\n<form method=\"post\">\
             <button class=\"primary wide\" type=\"submit\">Sign in as {name}</button></form>\n\
             <p class=\"muted\">The link works once, for 10 minutes.</p>",
            name = escape_html(name)
        ),
    )
}

pub(super) fn link_used() -> Response<Body> {
    page(
        StatusCode::GONE,
        "This sign-in link cannot be used",
        &format!(
            "<p>It was used already, or it expired (a link works once, for 10 minutes).</p>\n\
             <p>Signed in on this browser already? <a href=\"/\">Open the review</a>.</p>\n{HOW_TO_PAIR}"
        ),
    )
}

pub(super) fn too_many(wait: Duration) -> Response<Body> {
    let mut response = page(
        StatusCode::TOO_MANY_REQUESTS,
        "Too many sign-in attempts",
        "<p>Wait a minute, then open the link again.</p>",
    );
    if let Ok(after) = HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
        response.headers_mut().insert(RETRY_AFTER, after);
    }
    response
}

pub(super) fn forbidden() -> Response<Body> {
    page(
        StatusCode::FORBIDDEN,
        "Refused",
        "<p>A sign-in is only accepted from the link's own page.</p>",
    )
}

pub(super) fn store_failed() -> Response<Body> {
    page(
        StatusCode::SERVICE_UNAVAILABLE,
        "The server cannot read its store",
        "<p>Try again in a moment.</p>",
    )
}

pub(super) fn not_found() -> Response<Body> {
    page(
        StatusCode::NOT_FOUND,
        "Not found",
        "<p>There is nothing here. <a href=\"/\">Open the review</a>.</p>",
    )
}
