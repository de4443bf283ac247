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

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime};

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::stream::{self, BoxStream};
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use reqwest::StatusCode;
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

/// Sends the request until it is answered with success, a status that is not worth retrying,
/// or the attempts run out.
async fn open(
    client: &reqwest::Client,
    endpoint: &Endpoint,
    body: &Value,
    settings: &HttpSettings,
) -> Result<reqwest::Response, ModelError> {
    let provider = endpoint.provider;
    let mut attempt = 1;
    let mut backoff = settings.first_backoff;
    loop {
        let request = client
            .post(&endpoint.url)
            .headers(endpoint.headers.clone())
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body.to_string());
        let response = match tokio::time::timeout(settings.idle_timeout, request.send()).await {
            Err(_) => {
                return Err(ModelError::Timeout {
                    provider,
                    message: format!(
                        "{} sent no response within {} s",
                        endpoint.url,
                        settings.idle_timeout.as_secs_f64()
                    ),
                })
            }
            Ok(Err(err)) => return Err(send_error(endpoint, &err)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retryable = status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error();
        let wait = retry_after(response.headers(), SystemTime::now()).unwrap_or(backoff);
        let message = error_message(endpoint, response, settings.idle_timeout).await;
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(ModelError::Auth {
                provider,
                status: status.as_u16(),
                hint: endpoint.key_hint,
                message,
            });
        }
        if !retryable || attempt >= settings.max_attempts || wait > settings.longest_wait {
            let tried = if retryable && wait > settings.longest_wait {
                format!(
                    "; it asks to retry after {}, longer than Plandesk waits",
                    describe_wait(wait)
                )
            } else if retryable {
                format!(" after {attempt} attempts")
            } else {
                String::new()
            };
            return Err(ModelError::Status {
                provider,
                status: status.as_u16(),
                message: format!("{message}{tried}"),
            });
        }
        tokio::time::sleep(wait).await;
        attempt += 1;
        backoff = backoff.saturating_mul(2);
    }
}

fn send_error(endpoint: &Endpoint, err: &reqwest::Error) -> ModelError {
    let detail = endpoint.scrub(&error_chain(err));
    if err.is_timeout() {
        ModelError::Timeout {
            provider: endpoint.provider,
            message: format!("connecting to {} timed out: {detail}", endpoint.url),
        }
    } else {
        ModelError::Connect {
            provider: endpoint.provider,
            url: endpoint.url.clone(),
            message: detail,
        }
    }
}

/// reqwest's top-level message is generic ("error sending request"); the cause says why.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// How long a server asks to be left alone: `Retry-After` in seconds or as an HTTP date
/// (relative to `now`), or OpenAI's `retry-after-ms`. Any number is read without overflow: one
/// too large for a `Duration` is `Duration::MAX` (longer than anyone waits); a negative, NaN or
/// unreadable value is no answer (the exponential backoff applies).
fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| Some(headers.get(name)?.to_str().ok()?.trim().to_owned());
    let seconds = |value: f64| {
        if value.is_nan() || value < 0.0 {
            None
        } else {
            Some(Duration::try_from_secs_f64(value).unwrap_or(Duration::MAX))
        }
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if let Some(wait) = seconds(ms / 1000.0) {
            return Some(wait);
        }
    }
    let value = text(RETRY_AFTER.as_str())?;
    match value.parse::<f64>() {
        Ok(secs) => seconds(secs),
        Err(_) => {
            let when = httpdate::parse_http_date(&value).ok()?;
            Some(when.duration_since(now).unwrap_or(Duration::ZERO))
        }
    }
}

fn describe_wait(wait: Duration) -> String {
    if wait == Duration::MAX {
        "an unrepresentably long time".into()
    } else {
        format!("{} s", wait.as_secs())
    }
}

/// The provider's own error message from an error response (`{"error": {"message"}}` in both
/// wire formats), else the start of the body, else the status text. The body is read for at
/// most `patience` and [`MAX_ERROR_BODY_BYTES`]: a server that never finishes it cannot hang
/// the call, nor one that sends without end fill the memory.
async fn error_message(
    endpoint: &Endpoint,
    mut response: reqwest::Response,
    patience: Duration,
) -> String {
    let status = response.status();
    let mut bytes: Vec<u8> = Vec::new();
    let deadline = tokio::time::Instant::now() + patience;
    let mut incomplete = false;
    while bytes.len() < MAX_ERROR_BODY_BYTES {
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(chunk))) => {
                let room = MAX_ERROR_BODY_BYTES - bytes.len();
                bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Ok(Ok(None)) => break,
            Ok(Err(_)) | Err(_) => {
                incomplete = true;
                break;
            }
        }
    }
    let body = String::from_utf8_lossy(&bytes);
    let from_json = serde_json::from_str::<Value>(&body).ok().and_then(|v| {
        let error = v.get("error")?;
        error
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.as_str())
            .map(str::to_owned)
    });
    let reason = status.canonical_reason().unwrap_or("no reason given");
    let message = match from_json {
        Some(message) => message,
        None if body.trim().is_empty() && incomplete => format!(
            "{reason} (the error body did not arrive within {} s)",
            patience.as_secs_f64()
        ),
        None if body.trim().is_empty() => reason.to_owned(),
        None => body.trim().to_owned(),
    };
    endpoint.scrub(&message)
}

fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// What one answer may take, and the key to scrub from its errors.
#[derive(Debug, Clone)]
pub(crate) struct StreamLimits {
    pub provider: &'static str,
    /// Longest silence between two reads.
    pub idle: Duration,
    pub max_bytes: u64,
    /// Longest the whole answer may take, from the start of decoding.
    pub max_time: Duration,
    pub key: Option<ApiKey>,
}

impl StreamLimits {
    pub fn new(provider: &'static str, settings: &HttpSettings, key: Option<ApiKey>) -> Self {
        Self {
            provider,
            idle: settings.idle_timeout,
            max_bytes: settings.max_stream_bytes,
            max_time: settings.max_stream_time,
            key,
        }
    }
}

/// A transport error, or the answer passing its size limit (which must stop the byte stream
/// itself: the SSE parser buffers an unterminated event without end).
#[derive(Debug)]
pub(crate) enum ReadError<E> {
    Transport(E),
    TooLarge(u64),
}

impl<E: std::fmt::Display> std::fmt::Display for ReadError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Transport(e) => e.fmt(f),
            ReadError::TooLarge(limit) => write!(f, "the answer passed {limit} bytes"),
        }
    }
}

/// The decoded events of an answer's bytes. Stops at the first error (which is the last item),
/// at the wire format's end marker, or when the server closes the stream. Every error has the
/// key scrubbed from it: servers echo keys back, and errors reach the run's event log.
pub(crate) fn decode<'a, S, B, E, D>(
    bytes: S,
    limits: StreamLimits,
    decoder: D,
) -> impl Stream<Item = Result<ModelEvent, ModelError>> + Send + 'a
where
    S: Stream<Item = Result<B, E>> + Send + 'a,
    B: AsRef<[u8]> + Send + 'a,
    E: std::error::Error + Send + 'a,
    D: WireDecoder + 'a,
{
    struct Reading<'a, E, D> {
        events: BoxStream<'a, Result<Event, EventStreamError<ReadError<E>>>>,
        decoder: D,
        queue: VecDeque<Result<ModelEvent, ModelError>>,
        ended: bool,
        limits: StreamLimits,
        deadline: Instant,
    }
    let max_bytes = limits.max_bytes;
    let mut seen: u64 = 0;
    let counted = bytes.map(move |chunk| {
        let chunk = chunk.map_err(ReadError::Transport)?;
        seen = seen.saturating_add(chunk.as_ref().len() as u64);
        if seen > max_bytes {
            return Err(ReadError::TooLarge(max_bytes));
        }
        Ok(chunk)
    });
    let reading = Reading {
        events: counted.eventsource().boxed(),
        decoder,
        queue: VecDeque::new(),
        ended: false,
        deadline: Instant::now() + limits.max_time,
        limits,
    };
    stream::unfold(reading, move |mut reading| async move {
        loop {
            if let Some(item) = reading.queue.pop_front() {
                return Some((item, reading));
            }
            if reading.ended {
                return None;
            }
            let provider = reading.limits.provider;
            let idle = reading.limits.idle;
            let left = reading.deadline.saturating_duration_since(Instant::now());
            let next = tokio::time::timeout(idle.min(left), reading.events.next()).await;
            let decoded = match next {
                Err(_) if left <= idle => Err(ModelError::Timeout {
                    provider,
                    message: format!(
                        "the answer took longer than {} s, the most Plandesk waits for one \
                         (set {MAX_STREAM_TIME_ENV} to allow more)",
                        reading.limits.max_time.as_secs_f64()
                    ),
                }),
                Err(_) => Err(ModelError::Timeout {
                    provider,
                    message: format!("the stream stalled: no data for {} s", idle.as_secs_f64()),
                }),
                Ok(None) => {
                    reading.ended = true;
                    reading.decoder.end()
                }
                Ok(Some(Err(err))) => Err(stream_error(provider, &err)),
                Ok(Some(Ok(event))) => {
                    let events = reading.decoder.event(&event);
                    reading.ended = reading.decoder.finished();
                    events
                }
            };
            match decoded {
                Ok(events) => reading.queue.extend(events.into_iter().map(Ok)),
                Err(err) => {
                    reading
                        .queue
                        .push_back(Err(scrubbed(err, reading.limits.key.as_ref())));
                    reading.ended = true;
                }
            }
        }
    })
}

/// `err` with every copy of the key in its text replaced by `[redacted]`.
fn scrubbed(err: ModelError, key: Option<&ApiKey>) -> ModelError {
    if key.is_none() {
        return err;
    }
    let clean = |text: String| scrub_key(key, &text);
    match err {
        ModelError::Provider {
            provider,
            kind,
            message,
        } => ModelError::Provider {
            provider,
            kind: clean(kind),
            message: clean(message),
        },
        ModelError::Stream { provider, message } => ModelError::Stream {
            provider,
            message: clean(message),
        },
        ModelError::Timeout { provider, message } => ModelError::Timeout {
            provider,
            message: clean(message),
        },
        ModelError::Protocol { model, message } => ModelError::Protocol {
            model,
            message: clean(message),
        },
        other => other,
    }
}

fn stream_error<E: std::error::Error>(
    provider: &'static str,
    err: &EventStreamError<ReadError<E>>,
) -> ModelError {
    let message = match err {
        EventStreamError::Utf8(e) => format!("the stream is not UTF-8: {e}"),
        EventStreamError::Parser(e) => format!("the stream is not valid server-sent events: {e}"),
        EventStreamError::Transport(ReadError::TooLarge(limit)) => format!(
            "the answer passed {limit} bytes, the most Plandesk reads (set \
             {MAX_STREAM_BYTES_ENV} to allow more)"
        ),
        EventStreamError::Transport(ReadError::Transport(e)) => {
            format!("the connection broke mid-answer: {}", error_chain(e))
        }
    };
    ModelError::Stream { provider, message }
}

/// A JSON event payload, or an error naming the provider and the offending data.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(
    provider: &'static str,
    data: &str,
) -> Result<T, ModelError> {
    serde_json::from_str(data).map_err(|e| ModelError::Stream {
        provider,
        message: format!("malformed event data ({e}): {}", shorten(data, 200)),
    })
}

#[cfg(test)]
pub(crate) mod testing {
    //! Feeding recorded streams to a decoder, whole and split at every byte offset.

    use super::*;

    /// A recorded stream from `tests/fixtures/<provider>/<name>.sse`.
    pub fn fixture(provider: &str, name: &str) -> String {
        let path = format!(
            "{}/tests/fixtures/{provider}/{name}.sse",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// The text the events carry, or with `Some(id)`, that tool call's argument text.
    pub fn joined(events: &[Result<ModelEvent, String>], id: Option<&str>) -> String {
        events
            .iter()
            .filter_map(|e| match (e, id) {
                (Ok(ModelEvent::TextDelta(t)), None) => Some(t.as_str()),
                (Ok(ModelEvent::ToolCallArgsDelta { id: i, delta }), Some(id)) if i == id => {
                    Some(delta.as_str())
                }
                _ => None,
            })
            .collect()
    }

    /// Decodes `wire` delivered in the given pieces.
    pub fn run_split<D: WireDecoder + 'static>(
        wire: &[u8],
        cuts: &[usize],
        decoder: D,
    ) -> Vec<Result<ModelEvent, String>> {
        let mut pieces = Vec::new();
        let mut from = 0;
        for &cut in cuts.iter().chain([&wire.len()]) {
            pieces.push(Ok::<_, std::io::Error>(wire[from..cut].to_vec()));
            from = cut;
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let limits = StreamLimits::new("test", &HttpSettings::default(), None);
        runtime.block_on(
            decode(stream::iter(pieces), limits, decoder)
                .map(|r| r.map_err(|e| e.to_string()))
                .collect(),
        )
    }

    /// Every recorded stream of a provider, by name.
    pub fn all_fixtures(provider: &str) -> Vec<(String, String)> {
        let dir = format!("{}/tests/fixtures/{provider}", env!("CARGO_MANIFEST_DIR"));
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter_map(|name| name.strip_suffix(".sse").map(str::to_owned))
            .collect();
        names.sort();
        assert!(
            names.len() >= 6,
            "recorded streams for {provider}: {names:?}"
        );
        names
            .into_iter()
            .map(|name| {
                let wire = fixture(provider, &name);
                (name, wire)
            })
            .collect()
    }

    /// Asserts that every split of `wire` into two pieces decodes exactly as the whole does,
    /// and returns the whole's events.
    pub fn same_at_every_split<D: WireDecoder + 'static>(
        wire: &str,
        decoder: impl Fn() -> D,
    ) -> Vec<Result<ModelEvent, String>> {
        let whole = run_split(wire.as_bytes(), &[], decoder());
        for cut in 1..wire.len() {
            let split = run_split(wire.as_bytes(), &[cut], decoder());
            assert_eq!(split, whole, "split at byte {cut} decoded differently");
        }
        whole
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait_for(name: &'static str, value: &'static str) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_static(value));
        // Wed, 21 Oct 2015 07:28:00 GMT
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        retry_after(&headers, now)
    }

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("2"));
        assert_eq!(
            retry_after(&headers, SystemTime::now()),
            Some(Duration::from_secs(2))
        );
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(
            retry_after(&headers, SystemTime::now()),
            Some(Duration::from_millis(150)),
            "the finer header wins"
        );
    }

    /// Issue 8 #9: a `Retry-After` too large for a `Duration` panicked.
    #[test]
    fn retry_after_of_any_size_or_shape_never_panics() {
        assert_eq!(wait_for("retry-after", "1e30"), Some(Duration::MAX));
        assert_eq!(
            wait_for("retry-after", "99999999999999999999999999"),
            Some(Duration::MAX)
        );
        assert_eq!(wait_for("retry-after", "inf"), Some(Duration::MAX));
        assert_eq!(wait_for("retry-after-ms", "1e300"), Some(Duration::MAX));
        assert_eq!(wait_for("retry-after", "-5"), None, "negative: backoff");
        assert_eq!(wait_for("retry-after", "NaN"), None);
        assert_eq!(wait_for("retry-after-ms", "-1"), None);
        assert_eq!(wait_for("retry-after", "soon"), None);
        assert_eq!(wait_for("retry-after", ""), None);
        assert_eq!(
            wait_for("retry-after", "Wed, 21 Oct 2015 07:30:00 GMT"),
            Some(Duration::from_secs(120)),
            "an HTTP date is a wait until then"
        );
        assert_eq!(
            wait_for("retry-after", "Wed, 21 Oct 2015 07:00:00 GMT"),
            Some(Duration::ZERO),
            "a date in the past means now"
        );
        assert_eq!(describe_wait(Duration::MAX), "an unrepresentably long time");
    }

    #[test]
    fn keys_go_over_plain_http_to_this_machine_only() {
        let key = ApiKey::new("sk-k");
        let strict = HttpSettings::default();
        let endpoint = |url: &str| Endpoint::new("openai", url.into(), "hint");
        for local in [
            "http://127.0.0.1:8000/v1",
            "http://localhost:11434/v1",
            "http://[::1]:1/v1",
            "https://api.example.com/v1",
        ] {
            assert!(
                endpoint(local)
                    .with_key("authorization", "Bearer ", key.clone(), &strict)
                    .is_ok(),
                "{local}"
            );
        }
        for remote in [
            "http://10.0.0.2:8000/v1",
            "http://api.example.com/v1",
            "HTTP://Box/v1",
        ] {
            let err = endpoint(remote)
                .with_key("authorization", "Bearer ", key.clone(), &strict)
                .unwrap_err();
            assert_eq!(err.code(), "model-config", "{remote}");
            assert!(err.to_string().contains(ALLOW_INSECURE_HTTP_ENV), "{err}");
            assert!(
                endpoint(remote)
                    .with_key("authorization", "Bearer ", None, &strict)
                    .is_ok(),
                "no key, nothing to leak: {remote}"
            );
        }
        let allowed = HttpSettings {
            allow_insecure_http: true,
            ..HttpSettings::default()
        };
        assert!(endpoint("http://10.0.0.2/v1")
            .with_key("authorization", "Bearer ", key, &allowed)
            .is_ok());
    }

    #[test]
    fn shorten_cuts_on_characters() {
        assert_eq!(shorten("ééé", 2), "éé…");
        assert_eq!(shorten("ab", 2), "ab");
    }

    /// Issue 8 #9: an answer without end is cut at the size limit, with a clear error.
    #[test]
    fn an_answer_past_its_size_limit_is_refused() {
        let wire = testing::fixture("openai", "text");
        let settings = HttpSettings {
            max_stream_bytes: 64,
            ..HttpSettings::default()
        };
        let limits = StreamLimits::new("openai", &settings, None);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let pieces = wire
            .as_bytes()
            .chunks(16)
            .map(|c| Ok::<_, std::io::Error>(c.to_vec()))
            .collect::<Vec<_>>();
        let events: Vec<_> = runtime.block_on(
            decode(
                stream::iter(pieces),
                limits,
                super::super::openai::ChatDecoder::new("openai"),
            )
            .collect(),
        );
        let last = events.last().unwrap().as_ref().unwrap_err();
        assert_eq!(last.code(), "model-stream");
        assert!(
            last.to_string().contains("passed 64 bytes")
                && last.to_string().contains(MAX_STREAM_BYTES_ENV),
            "{last}"
        );
    }

    #[test]
    fn errors_from_the_stream_are_scrubbed_of_the_key() {
        let key = ApiKey::new("sk-echoed-key-123");
        let wire = "data: {\"error\":{\"type\":\"sk-echoed-key-123\",\"message\":\"bad key sk-echoed-key-123\"}}\n\n";
        let limits = StreamLimits::new("openai", &HttpSettings::default(), key);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let events: Vec<_> = runtime.block_on(
            decode(
                stream::iter([Ok::<_, std::io::Error>(wire.as_bytes().to_vec())]),
                limits,
                super::super::openai::ChatDecoder::new("openai"),
            )
            .collect(),
        );
        let err = events.last().unwrap().as_ref().unwrap_err().to_string();
        assert_eq!(
            err,
            "openai reported an error mid-answer ([redacted]): bad key [redacted]"
        );
    }
}

#[cfg(test)]
mod props;
