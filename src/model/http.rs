//! The transport every HTTP provider shares: one POST that is retried only before any answer
//! byte arrives, and the server-sent-events decoding of the answer (in one place, for all wire
//! formats), with an idle timeout on every read.
//!
//! Nothing is retried once the server has started answering: a retried POST would bill twice and
//! duplicate output. For the same reason the SSE stream never reconnects on its own.

use std::collections::VecDeque;
use std::time::Duration;

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
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            max_attempts: 4,
            first_backoff: Duration::from_millis(500),
            longest_wait: Duration::from_secs(60),
        }
    }
}

impl HttpSettings {
    /// The defaults, with the idle timeout from `PLANDESK_HTTP_IDLE_TIMEOUT_MS` when it is set.
    pub fn from_env() -> Self {
        let mut settings = Self::default();
        if let Some(ms) = std::env::var(IDLE_TIMEOUT_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|&ms| ms > 0)
        {
            settings.idle_timeout = Duration::from_millis(ms);
        }
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
    pub fn with_key(
        mut self,
        name: &'static str,
        prefix: &str,
        key: Option<ApiKey>,
    ) -> Result<Self, ModelError> {
        if let Some(key) = key {
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
        let text = match &self.key {
            Some(key) => key.scrub(text),
            None => text.to_owned(),
        };
        shorten(&text, 300)
    }
}

/// A client for one provider: no overall timeout (answers stream for minutes), a connect timeout.
pub(crate) fn client(settings: &HttpSettings) -> Result<reqwest::Client, ModelError> {
    reqwest::Client::builder()
        .connect_timeout(settings.connect_timeout)
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
    let idle = settings.idle_timeout;
    let provider = endpoint.provider;
    let mut decoder = Some(decoder);
    stream::once(async move { open(&client, &endpoint, &body, &settings).await })
        .flat_map(move |opened| -> EventStream<'a> {
            match (opened, decoder.take()) {
                (Ok(response), Some(decoder)) => {
                    decode(response.bytes_stream(), provider, idle, decoder).boxed()
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
        let wait = retry_after(response.headers()).unwrap_or(backoff);
        let message = error_message(endpoint, response).await;
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
                    "; it asks to retry after {} s, longer than Plandesk waits",
                    wait.as_secs()
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

/// `Retry-After` in seconds (or OpenAI's `retry-after-ms`). HTTP dates are not honoured: the
/// exponential backoff applies then.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let read = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok();
    if let Some(ms) = read("retry-after-ms").filter(|ms| ms.is_finite() && *ms >= 0.0) {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    read(RETRY_AFTER.as_str())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

/// The provider's own error message from an error response (`{"error": {"message"}}` in both
/// wire formats), else the start of the body, else the status text.
async fn error_message(endpoint: &Endpoint, response: reqwest::Response) -> String {
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    let from_json = serde_json::from_str::<Value>(&body).ok().and_then(|v| {
        let error = v.get("error")?;
        error
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.as_str())
            .map(str::to_owned)
    });
    let message = match from_json {
        Some(message) => message,
        None if body.trim().is_empty() => status
            .canonical_reason()
            .unwrap_or("no reason given")
            .to_owned(),
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

/// The decoded events of an answer's bytes. Stops at the first error (which is the last item),
/// at the wire format's end marker, or when the server closes the stream.
pub(crate) fn decode<'a, S, B, E, D>(
    bytes: S,
    provider: &'static str,
    idle: Duration,
    decoder: D,
) -> impl Stream<Item = Result<ModelEvent, ModelError>> + Send + 'a
where
    S: Stream<Item = Result<B, E>> + Send + 'a,
    B: AsRef<[u8]> + Send + 'a,
    E: std::error::Error + Send + 'a,
    D: WireDecoder + 'a,
{
    struct Reading<'a, E, D> {
        events: BoxStream<'a, Result<Event, EventStreamError<E>>>,
        decoder: D,
        queue: VecDeque<Result<ModelEvent, ModelError>>,
        ended: bool,
    }
    let reading = Reading {
        events: bytes.eventsource().boxed(),
        decoder,
        queue: VecDeque::new(),
        ended: false,
    };
    stream::unfold(reading, move |mut reading| async move {
        loop {
            if let Some(item) = reading.queue.pop_front() {
                return Some((item, reading));
            }
            if reading.ended {
                return None;
            }
            let next = tokio::time::timeout(idle, reading.events.next()).await;
            let decoded = match next {
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
                    reading.queue.push_back(Err(err));
                    reading.ended = true;
                }
            }
        }
    })
}

fn stream_error<E: std::error::Error>(
    provider: &'static str,
    err: &EventStreamError<E>,
) -> ModelError {
    let message = match err {
        EventStreamError::Utf8(e) => format!("the stream is not UTF-8: {e}"),
        EventStreamError::Parser(e) => format!("the stream is not valid server-sent events: {e}"),
        EventStreamError::Transport(e) => {
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
        runtime.block_on(
            decode(
                stream::iter(pieces),
                "test",
                Duration::from_secs(5),
                decoder,
            )
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

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(
            retry_after(&headers),
            Some(Duration::from_millis(150)),
            "the finer header wins"
        );
        headers.clear();
        headers.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&headers), None, "dates fall back to backoff");
    }

    #[test]
    fn shorten_cuts_on_characters() {
        assert_eq!(shorten("ééé", 2), "éé…");
        assert_eq!(shorten("ab", 2), "ab");
    }
}
