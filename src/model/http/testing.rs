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
