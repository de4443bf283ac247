//! The transport every HTTP provider shares: one POST that is retried only before any answer
//! byte arrives, and the server-sent-events decoding of the answer (in one place, for all wire
//! formats), with an idle timeout on every read.
//!
//! Nothing is retried once the server has started answering: a retried POST would bill twice and
//! duplicate output. For the same reason the SSE stream never reconnects on its own.
//!
//! Everything a server sends is bounded: an error body is read for at most the idle timeout and
//! 64 KiB, an answer for at most [`HttpSettings::max_stream_bytes`] and
//! [`HttpSettings::max_stream_time`], and a `Retry-After` of any size or shape is read without
//! overflow. An API key is never sent over plain `http://` to a host other than this machine
//! (unless a person allows it), never follows a redirect, and is scrubbed from every error a
//! server's words end up in.

use std::time::Duration;

use eventsource_stream::Event;
use futures::stream;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::{EventStream, ModelError, ModelEvent};
use crate::secret::ApiKey;

/// Milliseconds without a byte from the server before a call is abandoned (default 120 s).
pub const IDLE_TIMEOUT_ENV: &str = "PLANDESK_HTTP_IDLE_TIMEOUT_MS";
/// Most bytes one streamed answer may have (default 256 MiB).
pub const MAX_STREAM_BYTES_ENV: &str = "PLANDESK_HTTP_MAX_STREAM_BYTES";
/// Most milliseconds one streamed answer may take from its first byte (default 30 min).
pub const MAX_STREAM_TIME_ENV: &str = "PLANDESK_HTTP_MAX_STREAM_MS";
/// `1` lets API keys go over plain `http://` to a host that is not this machine.
pub const ALLOW_INSECURE_HTTP_ENV: &str = "PLANDESK_ALLOW_INSECURE_HTTP";
/// Most bytes of an error response that are read (the message is cut much shorter anyway).
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// How patient a provider call is.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    pub connect_timeout: Duration,
    /// Longest silence allowed: waiting for the response head, and between two reads of the body.
    pub idle_timeout: Duration,
    /// Attempts in all for a call answered with 429 or 5xx before its first byte.
    pub max_attempts: u32,
    /// Backoff before the second attempt when the server gives no `Retry-After`; doubled after.
    pub first_backoff: Duration,
    /// A `Retry-After` longer than this is not waited for: the call fails and says so.
    pub longest_wait: Duration,
    /// Most bytes one answer may stream before the call fails (`model-stream`).
    pub max_stream_bytes: u64,
    /// Longest one answer may stream before the call fails (`model-timeout`).
    pub max_stream_time: Duration,
    /// Send API keys over plain `http://` to hosts other than this machine too.
    pub allow_insecure_http: bool,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            max_attempts: 4,
            first_backoff: Duration::from_millis(500),
            longest_wait: Duration::from_secs(60),
            max_stream_bytes: 256 * 1024 * 1024,
            max_stream_time: Duration::from_secs(30 * 60),
            allow_insecure_http: false,
        }
    }
}

impl HttpSettings {
    /// The defaults, with each limit its environment variable sets ([`IDLE_TIMEOUT_ENV`],
    /// [`MAX_STREAM_BYTES_ENV`], [`MAX_STREAM_TIME_ENV`], [`ALLOW_INSECURE_HTTP_ENV`]); a value
    /// that is not a positive number leaves the default.
    pub fn from_env() -> Self {
        let positive = |var: &str| {
            std::env::var(var)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|&n| n > 0)
        };
        let mut settings = Self::default();
        if let Some(ms) = positive(IDLE_TIMEOUT_ENV) {
            settings.idle_timeout = Duration::from_millis(ms);
        }
        if let Some(bytes) = positive(MAX_STREAM_BYTES_ENV) {
            settings.max_stream_bytes = bytes;
        }
        if let Some(ms) = positive(MAX_STREAM_TIME_ENV) {
            settings.max_stream_time = Duration::from_millis(ms);
        }
        settings.allow_insecure_http =
            std::env::var(ALLOW_INSECURE_HTTP_ENV).is_ok_and(|v| v.trim() == "1");
        settings
    }
}

/// Where and how one provider is called.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// `openai`, `anthropic`, `ollama`: named in every error.
    pub provider: &'static str,
    pub url: String,
    /// Extra headers; the key's header is marked sensitive so it never shows in debug output.
    pub headers: HeaderMap,
    /// Kept to scrub the key from anything the server echoes back.
    pub key: Option<ApiKey>,
    /// What a person should check when the key is refused.
    pub key_hint: &'static str,
}

impl Endpoint {
    pub fn new(provider: &'static str, url: String, key_hint: &'static str) -> Self {
        Self {
            provider,
            url,
            headers: HeaderMap::new(),
            key: None,
            key_hint,
        }
    }

    /// Adds `name: prefix + key` as a sensitive header and remembers the key for scrubbing.
    /// Refuses to send a key over plain `http://` to a host other than this machine unless
    /// `settings.allow_insecure_http`: anyone on the way could read it.
    pub fn with_key(
        mut self,
        name: &'static str,
        prefix: &str,
        key: Option<ApiKey>,
        settings: &HttpSettings,
    ) -> Result<Self, ModelError> {
        if let Some(key) = key {
            if !settings.allow_insecure_http {
                if let Some(host) = insecure_remote_host(&self.url) {
                    return Err(ModelError::Config {
                        provider: self.provider,
                        message: format!(
                            "refusing to send the API key in clear text to {host} over plain \
                             http://; use an https:// base URL, or set \
                             {ALLOW_INSECURE_HTTP_ENV}=1 if this network is trusted (a server \
                             that needs no key can be used as `ollama:MODEL@URL`)"
                        ),
                    });
                }
            }
            let mut value =
                HeaderValue::from_str(&format!("{prefix}{}", key.expose())).map_err(|_| {
                    ModelError::Config {
                        provider: self.provider,
                        message: "the API key has characters an HTTP header cannot carry".into(),
                    }
                })?;
            value.set_sensitive(true);
            self.headers.insert(HeaderName::from_static(name), value);
            self.key = Some(key);
        }
        Ok(self)
    }

    pub fn with_header(mut self, name: &'static str, value: &'static str) -> Self {
        self.headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
        self
    }

    fn scrub(&self, text: &str) -> String {
        shorten(&scrub_key(self.key.as_ref(), text), 300)
    }
}

fn scrub_key(key: Option<&ApiKey>, text: &str) -> String {
    match key {
        Some(key) => key.scrub(text),
        None => text.to_owned(),
    }
}

/// The host of a plain `http://` URL that is not this machine (loopback), if `url` is one.
fn insecure_remote_host(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    if parsed.scheme() != "http" {
        return None;
    }
    let host = parsed.host_str()?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    (!loopback).then(|| host.to_owned())
}

/// A client for one provider: no overall timeout (answers stream for minutes), a connect timeout,
/// and no redirects: an API call is never redirected, and a redirect would carry the key's
/// header (reqwest strips only `Authorization` across hosts, not Anthropic's `x-api-key`).
pub(crate) fn client(settings: &HttpSettings) -> Result<reqwest::Client, ModelError> {
    reqwest::Client::builder()
        .connect_timeout(settings.connect_timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| ModelError::Config {
            provider: "http",
            message: format!("cannot build the HTTP client: {e}"),
        })
}

/// Turns a wire format's server-sent events into model events.
pub(crate) trait WireDecoder: Send {
    /// One event of the answer.
    fn event(&mut self, event: &Event) -> Result<Vec<ModelEvent>, ModelError>;
    /// The server closed the stream; `Err` if the answer was not complete.
    fn end(&mut self) -> Result<Vec<ModelEvent>, ModelError>;
    /// The wire format's own end marker was seen: nothing more is read.
    fn finished(&self) -> bool;
}

/// POSTs `body` and streams the decoded answer. The request is retried (429, 5xx) only while no
/// byte of an answer has arrived; dropping the stream closes the connection.
pub(crate) fn stream_call<'a, D: WireDecoder + 'a>(
    client: reqwest::Client,
    endpoint: Endpoint,
    body: Value,
    settings: HttpSettings,
    decoder: D,
) -> EventStream<'a> {
    let mut decoder = Some(decoder);
    let limits = StreamLimits::new(endpoint.provider, &settings, endpoint.key.clone());
    stream::once(async move { open(&client, &endpoint, &body, &settings).await })
        .flat_map(move |opened| -> EventStream<'a> {
            match (opened, decoder.take()) {
                (Ok(response), Some(decoder)) => {
                    decode(response.bytes_stream(), limits.clone(), decoder).boxed()
                }
                (Err(err), _) => stream::iter([Err(err)]).boxed(),
                // `once` yields one item, so the decoder is always there.
                (Ok(_), None) => stream::empty().boxed(),
            }
        })
        .boxed()
}

mod retry;
mod sse;

use retry::*;
pub(crate) use sse::*;

#[cfg(test)]
pub(crate) mod testing;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod props;
