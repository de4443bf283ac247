//! The transport's unit tests: Retry-After, error bodies, limits, scrubbing.

use std::time::SystemTime;

use reqwest::header::RETRY_AFTER;

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
