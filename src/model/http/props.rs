//! Property tests of the SSE decoders: any split of a recorded stream decodes the same, and
//! any garbage (random bytes, or recorded streams with bytes changed) never panics.

use proptest::prelude::*;

use super::testing::{all_fixtures, run_split};
use crate::model::anthropic::MessagesDecoder;
use crate::model::openai::ChatDecoder;
use crate::model::ModelEvent;

type Decoded = Vec<Result<ModelEvent, String>>;

fn decode_with(provider: usize, wire: &[u8], cuts: &[usize]) -> Decoded {
    if provider == 0 {
        run_split(wire, cuts, ChatDecoder::new("openai"))
    } else {
        run_split(wire, cuts, MessagesDecoder::default())
    }
}

/// Cut points (sorted, deduplicated) into a wire of `len` bytes.
fn cuts(len: usize, picks: &[prop::sample::Index]) -> Vec<usize> {
    let mut cuts: Vec<usize> = picks.iter().map(|p| p.index(len + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// At most one error, and only as the last item.
fn well_formed(events: &Decoded) -> bool {
    let errors = events.iter().filter(|e| e.is_err()).count();
    errors == 0 || (errors == 1 && events.last().is_some_and(|e| e.is_err()))
}

fn fixtures() -> Vec<(usize, String)> {
    let mut all = Vec::new();
    for (provider, name) in [(0, "openai"), (1, "anthropic")] {
        all.extend(
            all_fixtures(name)
                .into_iter()
                .map(|(_, wire)| (provider, wire)),
        );
    }
    all
}

proptest! {
    #![proptest_config(crate::text::testing::proptest_config(128))]

    /// A recorded stream delivered in any number of pieces decodes as it does whole.
    #[test]
    fn prop_sse_any_split_decodes_the_same(
        which in any::<prop::sample::Index>(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let all = fixtures();
        let (provider, wire) = &all[which.index(all.len())];
        let whole = decode_with(*provider, wire.as_bytes(), &[]);
        let split = decode_with(*provider, wire.as_bytes(), &cuts(wire.len(), &picks));
        prop_assert_eq!(split, whole);
    }

    /// Any bytes at all, in any pieces: no panic, and errors only at the end.
    #[test]
    fn prop_sse_garbage_never_panics(
        provider in 0usize..2,
        wire in prop::collection::vec(any::<u8>(), 0..600),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let events = decode_with(provider, &wire, &cuts(wire.len(), &picks));
        prop_assert!(well_formed(&events), "{:?}", events);
    }

    /// A recorded stream with bytes changed, dropped or inserted: no panic, errors
    /// only at the end, and the same result at any split.
    #[test]
    fn prop_sse_mutated_streams_never_panic(
        which in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let all = fixtures();
        let (provider, wire) = &all[which.index(all.len())];
        let mut bytes = wire.as_bytes().to_vec();
        for (at, byte, op) in edits {
            let at = at.index(bytes.len() + 1);
            match op {
                0 if at < bytes.len() => bytes[at] = byte,
                1 if at < bytes.len() => {
                    bytes.remove(at);
                }
                _ => bytes.insert(at, byte),
            }
        }
        let whole = decode_with(*provider, &bytes, &[]);
        prop_assert!(well_formed(&whole), "{:?}", whole);
        let split = decode_with(*provider, &bytes, &cuts(bytes.len(), &picks));
        prop_assert_eq!(split, whole);
    }
}
