//! `messages`: a run's conversation, one row per message, only ever added to. A message of some
//! size is stored compressed against the conversation before it (zstd, with the last
//! [`TAIL`] bytes of the messages before it as a prefix): what a model writes again — a plan
//! revised, a file read once more, the plan echoed in the tool's result — costs what changed,
//! not its length again. Messages never change once stored, so what comes before one is the
//! same for every reader, in every process.
//!
//! A commit needs the conversation's tail to compress what it adds: each store keeps the tails
//! of the runs it wrote or read last ([`Tails`]), and reads a run's messages again only when it
//! has not (another process drove the run, or it is one of many).

use std::collections::HashMap;
use std::sync::Mutex;

use super::sql::{Conn, Tx};
use super::StoreError;

/// How much of the conversation before a message it is compressed against.
const TAIL: usize = 32 * 1024;
/// Messages shorter than this are stored as their text: compressing one against the tail
/// costs some 30 µs whatever its length (zstd reads the tail first), a tenth of an engine's
/// step, to save less than this.
pub(super) const PACK_FROM: usize = 1024;
/// zstd's fastest positive level: the matches that matter, those against the tail, it finds
/// as well as level 3 does (a 700-byte message 382 bytes against 359), in half the time.
const LEVEL: i32 = 1;
/// The first byte of a stored message that is compressed: how (zstd, against the last
/// [`TAIL`] bytes of the messages before it, each followed by a newline). Another way would
/// be another byte.
const PACKED_V1: u8 = 1;
/// Largest message a compressed row may say it holds (a damaged row must not make the reader
/// reserve what it says).
const MAX_MESSAGE: u64 = 1 << 30;
/// How many runs' tails a store keeps.
const KEPT: usize = 64;

/// The end of a run's conversation: its last [`TAIL`] bytes (each message followed by a
/// newline), after `count` messages.
#[derive(Debug, Clone, Default)]
pub(super) struct Tail {
    count: i64,
    /// Up to twice [`TAIL`]: trimmed to it when it grows past that.
    bytes: Vec<u8>,
}

impl Tail {
    fn prefix(&self) -> &[u8] {
        &self.bytes[self.bytes.len().saturating_sub(TAIL)..]
    }

    fn push(&mut self, message: &str) {
        self.count += 1;
        self.bytes.extend_from_slice(message.as_bytes());
        self.bytes.push(b'\n');
        if self.bytes.len() > 2 * TAIL {
            self.bytes.drain(..self.bytes.len() - TAIL);
        }
    }

    /// The row that stores `message` after this tail: its text, or (if it is long enough and
    /// that is shorter) nothing and its compressed bytes. The message is added to the tail.
    fn pack(&mut self, message: &str) -> Result<(String, Option<Vec<u8>>), StoreError> {
        let packed = if message.len() >= PACK_FROM {
            Some(compress(self.prefix(), message.as_bytes())?)
                .filter(|packed| packed.len() < message.len())
        } else {
            None
        };
        self.push(message);
        Ok(match packed {
            Some(packed) => (String::new(), Some(packed)),
            None => (message.to_owned(), None),
        })
    }

    /// The message a row stores after this tail (see [`Tail::pack`]), added to the tail.
    fn unpack(
        &mut self,
        run_id: &str,
        text: String,
        packed: Option<Vec<u8>>,
    ) -> Result<String, StoreError> {
        let message = match packed {
            None => text,
            // A compressed row keeps no text: one with both was changed past the store.
            Some(_) if !text.is_empty() => {
                return Err(StoreError::Corrupt {
                    run_id: run_id.to_owned(),
                    message: format!("message {} is stored both ways", self.count),
                })
            }
            Some(packed) => {
                decompress(self.prefix(), &packed).map_err(|message| StoreError::Corrupt {
                    run_id: run_id.to_owned(),
                    message: format!("message {} cannot be read: {message}", self.count),
                })?
            }
        };
        self.push(&message);
        Ok(message)
    }
}

/// `message` compressed against `prefix` (what comes before it, or another text it likely
/// repeats), in the format [`PACKED_V1`] names; [`decompress`] takes the same prefix.
pub(super) fn compress(prefix: &[u8], message: &[u8]) -> Result<Vec<u8>, StoreError> {
    use zstd::zstd_safe::{CCtx, CParameter};
    let failed = |code: usize| StoreError::Query {
        context: "compress text",
        message: zstd::zstd_safe::get_error_name(code).to_owned(),
    };
    let mut cctx = CCtx::create();
    cctx.set_parameter(CParameter::CompressionLevel(LEVEL))
        .map_err(failed)?;
    cctx.set_parameter(CParameter::ChecksumFlag(true))
        .map_err(failed)?;
    cctx.ref_prefix(prefix).map_err(failed)?;
    // The format byte, then the frame written straight after it.
    let mut out = vec![0; 1 + zstd::zstd_safe::compress_bound(message.len())];
    out[0] = PACKED_V1;
    let written = cctx.compress2(&mut out[1..], message).map_err(failed)?;
    out.truncate(1 + written);
    Ok(out)
}

pub(super) fn decompress(prefix: &[u8], packed: &[u8]) -> Result<String, String> {
    use zstd::zstd_safe::DCtx;
    let (&PACKED_V1, frame) = packed.split_first().ok_or("it is empty")? else {
        return Err(format!("it is stored in an unknown way ({})", packed[0]));
    };
    let size = match zstd::zstd_safe::get_frame_content_size(frame) {
        Ok(Some(size)) if size <= MAX_MESSAGE => size,
        _ => return Err("its stored size is missing or too large".into()),
    };
    let mut dctx = DCtx::create();
    let name = |code: usize| zstd::zstd_safe::get_error_name(code).to_owned();
    dctx.ref_prefix(prefix).map_err(name)?;
    let mut out = Vec::with_capacity(size as usize);
    dctx.decompress(&mut out, frame).map_err(name)?;
    String::from_utf8(out).map_err(|_| "it is not text".into())
}

/// The runs' tails a store keeps, the least recently used going first.
#[derive(Debug, Default)]
pub(super) struct Tails {
    kept: Mutex<HashMap<String, (u64, Tail)>>,
    used: std::sync::atomic::AtomicU64,
}

impl Tails {
    /// `run_id`'s tail after `count` messages, if kept (taken: it is given back once a commit
    /// that grew it is durable).
    fn take(&self, run_id: &str, count: i64) -> Option<Tail> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        match kept.get(run_id) {
            Some((_, tail)) if tail.count == count => kept.remove(run_id).map(|(_, tail)| tail),
            _ => None,
        }
    }

    /// Keeps `tail` as `run_id`'s.
    pub(super) fn keep(&self, run_id: &str, tail: Tail) {
        let used = self.used.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() >= KEPT && !kept.contains_key(run_id) {
            let oldest = kept
                .iter()
                .min_by_key(|(_, (used, _))| *used)
                .map(|(run, _)| run.clone());
            if let Some(oldest) = oldest {
                kept.remove(&oldest);
            }
        }
        kept.insert(run_id.to_owned(), (used, tail));
    }
}

/// Run `run_id`'s first `count` messages, and the tail after them.
pub(super) async fn read(
    tx: &mut Tx<impl Conn>,
    run_id: &str,
    count: i64,
) -> Result<(Vec<String>, Tail), StoreError> {
    let rows: Vec<(String, Option<Vec<u8>>)> = tx
        .all(
            "load messages",
            "SELECT message, packed FROM messages WHERE run_id = $1 AND seq < $2 ORDER BY seq",
            &[&run_id, &count],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .await?;
    if rows.len() as i64 != count {
        return Err(StoreError::Corrupt {
            run_id: run_id.to_owned(),
            message: format!("{count} messages expected, {} stored", rows.len()),
        });
    }
    let mut tail = Tail::default();
    let messages = rows
        .into_iter()
        .map(|(text, packed)| tail.unpack(run_id, text, packed))
        .collect::<Result<_, _>>()?;
    Ok((messages, tail))
}

/// Appends `messages` to run `run_id`'s conversation, which holds `stored` messages: the tail
/// after them, to [`Tails::keep`] once the write is durable.
pub(super) async fn append(
    tx: &mut Tx<impl Conn>,
    tails: &Tails,
    run_id: &str,
    stored: i64,
    messages: &[String],
) -> Result<Tail, StoreError> {
    let mut tail = match tails.take(run_id, stored) {
        Some(tail) => tail,
        None if stored == 0 => Tail::default(),
        None => read(tx, run_id, stored).await?.1,
    };
    for message in messages {
        let seq = tail.count;
        let (text, packed) = tail.pack(message)?;
        tx.later(
            "append message",
            "INSERT INTO messages (run_id, seq, message, packed) VALUES ($1, $2, $3, $4)",
            &[&run_id, &seq, &text, &packed],
        )
        .await?;
    }
    Ok(tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| {
                let plan: String = (0..60)
                    .map(|line| format!("{line}. Step {line} of revision {}\n", i / 3))
                    .collect();
                serde_json::json!({"role": "tool", "i": i, "plan": plan}).to_string()
            })
            .collect()
    }

    fn stored(messages: &[String]) -> Vec<(String, Option<Vec<u8>>)> {
        let mut tail = Tail::default();
        messages.iter().map(|m| tail.pack(m).unwrap()).collect()
    }

    #[test]
    fn a_conversation_reads_back_as_it_was_written_and_repeats_cost_little() {
        let messages = conversation(40);
        let rows = stored(&messages);
        let mut tail = Tail::default();
        let read: Vec<String> = rows
            .iter()
            .cloned()
            .map(|(text, packed)| tail.unpack("r", text, packed).unwrap())
            .collect();
        assert_eq!(read, messages);
        let written: usize = messages.iter().map(String::len).sum();
        let kept: usize = rows
            .iter()
            .map(|(text, packed)| text.len() + packed.as_ref().map_or(0, Vec::len))
            .sum();
        assert!(kept * 10 < written, "{kept} bytes kept for {written}");
        assert!(rows[0].1.is_some(), "a long message is compressed");
        assert_eq!(
            stored(&["short".to_owned()]),
            [("short".to_owned(), None)],
            "a short one is stored as it is"
        );
    }

    #[test]
    fn a_message_read_after_another_tail_is_refused_not_misread() {
        let messages = conversation(6);
        let rows = stored(&messages);
        // The fifth message read as if a different conversation came before it.
        let mut other = Tail::default();
        for message in conversation(9).iter().skip(5).take(4) {
            other.push(message);
        }
        let (text, packed) = rows[4].clone();
        let err = other.unpack("r", text, packed).unwrap_err();
        assert!(
            matches!(&err, StoreError::Corrupt { message, .. } if message.contains("cannot be read")),
            "{err}"
        );
        let (_, packed) = rows[0].clone();
        let err = Tail::default()
            .unpack("r", "{\"role\":\"user\"}".into(), packed)
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::Corrupt { message, .. } if message.contains("both ways")),
            "{err}"
        );
        for damaged in [vec![], vec![9, 1, 2], vec![PACKED_V1, 0x28, 0xb5]] {
            let err = Tail::default()
                .unpack("r", String::new(), Some(damaged))
                .unwrap_err();
            assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
        }
    }

    #[test]
    fn tails_are_kept_for_the_runs_used_last() {
        let tails = Tails::default();
        for run in 0..KEPT + 1 {
            let mut tail = Tail::default();
            tail.push("m");
            tails.keep(&run.to_string(), tail);
        }
        assert!(tails.take("0", 1).is_none(), "the least recently used went");
        assert!(
            tails.take("1", 2).is_none(),
            "a tail after other messages is not used"
        );
        assert!(tails.take("1", 1).is_some());
        assert!(tails.take("1", 1).is_none(), "taken");
    }
}
