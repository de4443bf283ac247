//! Decoding an answer's server-sent events into model events, for every wire format: bounded in
//! size and time, stopped at the first error, every error scrubbed of the key.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::stream::{self, BoxStream};
use futures::{Stream, StreamExt};

use super::*;

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
pub(super) fn scrubbed(err: ModelError, key: Option<&ApiKey>) -> ModelError {
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

pub(super) fn stream_error<E: std::error::Error>(
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
