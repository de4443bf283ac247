//! Side-by-side comparison of two plan revisions: a line diff, and inside each changed line pair
//! the words that changed.
//!
//! Revisions are untrusted and may be large and wholly different, so a comparison has a
//! deadline ([`DIFF_DEADLINE`]): the line diff stops searching for the best alignment when it
//! passes, and from then on replaced blocks are shown as whole lines removed and added. Very
//! long lines are never diffed word by word, and the search for which old line pairs with which
//! new one has a budget. Whenever any of this applies the result says so
//! ([`SideBySide::coarse`]); it always reconstructs both revisions exactly.

use std::time::{Duration, Instant};

use serde::Serialize;
use similar::{ChangeTag, DiffOp, TextDiff};

/// Longest a comparison searches for the finest diff before settling for a coarser one.
pub const DIFF_DEADLINE: Duration = Duration::from_secs(2);
/// Lines longer than this (in bytes) are shown whole, not diffed word by word.
pub const MAX_WORD_DIFF_LINE: usize = 4096;
/// Bytes of line pairs the pairing search may compare in one comparison; past it, lines of a
/// replaced block pair by position.
const PAIR_BUDGET_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RowKind {
    Equal,
    Changed,
    Removed,
    Added,
}

/// A run of text within a line, marked when it differs from the other side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Segment {
    pub text: String,
    pub changed: bool,
}

/// One side of a row: its 1-based line number and its text in segments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffLine {
    pub number: usize,
    pub segments: Vec<Segment>,
}

impl DiffLine {
    pub fn text(&self) -> String {
        self.segments.iter().map(|s| s.text.as_str()).collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffRow {
    pub kind: RowKind,
    pub left: Option<DiffLine>,
    pub right: Option<DiffLine>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SideBySide {
    pub rows: Vec<DiffRow>,
    pub added: usize,
    pub removed: usize,
    pub changed: usize,
    /// The comparison was coarsened to stay within its deadline or budgets: lines of a large
    /// replaced block may be paired by position rather than by likeness, some lines that
    /// changed only in part may show as wholly removed and added, or without word highlights.
    pub coarse: bool,
}

/// What one comparison may still spend.
#[derive(Debug)]
struct Budget {
    deadline: Instant,
    pair_bytes: usize,
}

impl Budget {
    fn expired(&self) -> bool {
        Instant::now() >= self.deadline
    }
}

fn whole(number: usize, text: &str, changed: bool) -> DiffLine {
    DiffLine {
        number,
        segments: vec![Segment {
            text: text.to_owned(),
            changed,
        }],
    }
}

fn push_segment(segments: &mut Vec<Segment>, text: &str, changed: bool) {
    match segments.last_mut() {
        Some(last) if last.changed == changed => last.text.push_str(text),
        _ => segments.push(Segment {
            text: text.to_owned(),
            changed,
        }),
    }
}

/// The words of `old` and `new` that differ, as segments for each side; `None` when the lines
/// are too long or the deadline has passed (the caller marks the whole lines).
fn word_segments(old: &str, new: &str, budget: &Budget) -> Option<(Vec<Segment>, Vec<Segment>)> {
    if old.len() > MAX_WORD_DIFF_LINE || new.len() > MAX_WORD_DIFF_LINE || budget.expired() {
        return None;
    }
    let diff = TextDiff::configure()
        .deadline(budget.deadline)
        .diff_words(old, new);
    let (mut left, mut right) = (Vec::new(), Vec::new());
    for change in diff.iter_all_changes() {
        let text = change.value();
        match change.tag() {
            ChangeTag::Equal => {
                push_segment(&mut left, text, false);
                push_segment(&mut right, text, false);
            }
            ChangeTag::Delete => push_segment(&mut left, text, true),
            ChangeTag::Insert => push_segment(&mut right, text, true),
        }
    }
    Some((left, right))
}

/// Compares two texts line by line; replaced lines are paired and diffed word by word. Takes
/// about [`DIFF_DEADLINE`] at most, coarsening the result when it must.
pub fn side_by_side(old: &str, new: &str) -> SideBySide {
    side_by_side_within(old, new, DIFF_DEADLINE)
}

/// [`side_by_side`] with a deadline of `time` from now.
pub fn side_by_side_within(old: &str, new: &str, time: Duration) -> SideBySide {
    let mut budget = Budget {
        deadline: Instant::now() + time,
        pair_bytes: PAIR_BUDGET_BYTES,
    };
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = new.lines().collect();
    let diff = TextDiff::configure()
        .deadline(budget.deadline)
        .diff_slices(&old_lines, &new_lines);
    let mut out = SideBySide {
        // Past the deadline the line diff settled for a cruder alignment.
        coarse: budget.expired(),
        ..SideBySide::default()
    };
    for op in diff.ops() {
        match *op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                for i in 0..len {
                    out.rows.push(DiffRow {
                        kind: RowKind::Equal,
                        left: Some(whole(old_index + i + 1, old_lines[old_index + i], false)),
                        right: Some(whole(new_index + i + 1, new_lines[new_index + i], false)),
                    });
                }
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => {
                removed_rows(&mut out, &old_lines, old_index, old_len, 0);
            }
            DiffOp::Insert {
                new_index, new_len, ..
            } => {
                added_rows(&mut out, &new_lines, new_index, new_len, 0);
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                replaced_rows(
                    &mut out,
                    &mut budget,
                    (&old_lines[old_index..old_index + old_len], old_index),
                    (&new_lines[new_index..new_index + new_len], new_index),
                );
            }
        }
    }
    out
}

/// Lines at least this alike (similar's word ratio) are shown as one changed line.
const PAIR_RATIO: f32 = 0.5;
/// Past this many line pairs in one replaced block, pair lines by position instead of searching.
const PAIR_SEARCH_LIMIT: usize = 10_000;

/// A block of old lines replaced by new ones: each old line is paired, in order, with the
/// following new line that resembles it most; the rest are shown as removed or added. Past the
/// deadline the whole block is shown as removed, then added.
fn replaced_rows(
    out: &mut SideBySide,
    budget: &mut Budget,
    (old, old_start): (&[&str], usize),
    (new, new_start): (&[&str], usize),
) {
    if budget.expired() {
        out.coarse = true;
        removed_rows(out, old, 0, old.len(), old_start);
        added_rows(out, new, 0, new.len(), new_start);
        return;
    }
    let block_bytes = |lines: &[&str]| lines.iter().map(|l| l.len()).sum::<usize>();
    // Every old line may be compared with every new one: that many bytes in all.
    let search_bytes = block_bytes(old)
        .saturating_mul(new.len())
        .saturating_add(block_bytes(new).saturating_mul(old.len()));
    let mut search = old.len().saturating_mul(new.len()) <= PAIR_SEARCH_LIMIT
        && search_bytes <= budget.pair_bytes;
    if search {
        budget.pair_bytes -= search_bytes;
    } else {
        out.coarse = true;
    }
    if old.iter().chain(new).any(|l| l.len() > MAX_WORD_DIFF_LINE) {
        // Such a line is never compared word by word: it shows whole.
        out.coarse = true;
    }
    let mut next_new = 0;
    for (i, old_line) in old.iter().enumerate() {
        if search && budget.expired() {
            search = false;
            out.coarse = true;
        }
        let partner = if search {
            (next_new..new.len())
                .filter(|&j| {
                    old_line.len() <= MAX_WORD_DIFF_LINE && new[j].len() <= MAX_WORD_DIFF_LINE
                })
                .map(|j| {
                    let ratio = TextDiff::configure()
                        .deadline(budget.deadline)
                        .diff_words(*old_line, new[j])
                        .ratio();
                    (j, ratio)
                })
                .filter(|&(_, ratio)| ratio >= PAIR_RATIO)
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
                .map(|(j, _)| j)
        } else {
            (next_new < new.len()).then_some(next_new)
        };
        let Some(j) = partner else {
            removed_rows(out, old, i, 1, old_start);
            continue;
        };
        added_rows(out, new, next_new, j - next_new, new_start);
        let (left, right) = word_segments(old_line, new[j], budget).unwrap_or_else(|| {
            out.coarse = true;
            (
                whole(0, old_line, true).segments,
                whole(0, new[j], true).segments,
            )
        });
        out.changed += 1;
        out.rows.push(DiffRow {
            kind: RowKind::Changed,
            left: Some(DiffLine {
                number: old_start + i + 1,
                segments: left,
            }),
            right: Some(DiffLine {
                number: new_start + j + 1,
                segments: right,
            }),
        });
        next_new = j + 1;
    }
    added_rows(out, new, next_new, new.len() - next_new, new_start);
}

fn removed_rows(out: &mut SideBySide, lines: &[&str], start: usize, len: usize, offset: usize) {
    one_sided_rows(out, RowKind::Removed, lines, start, len, offset);
}

fn added_rows(out: &mut SideBySide, lines: &[&str], start: usize, len: usize, offset: usize) {
    one_sided_rows(out, RowKind::Added, lines, start, len, offset);
}

/// Rows for lines that exist on one side only: `lines[start..start + len]`, numbered from
/// `offset + start + 1`.
fn one_sided_rows(
    out: &mut SideBySide,
    kind: RowKind,
    lines: &[&str],
    start: usize,
    len: usize,
    offset: usize,
) {
    for (i, line) in lines.iter().enumerate().skip(start).take(len) {
        let side = Some(whole(offset + i + 1, line, true));
        let (left, right) = if kind == RowKind::Removed {
            out.removed += 1;
            (side, None)
        } else {
            out.added += 1;
            (None, side)
        };
        out.rows.push(DiffRow { kind, left, right });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_lines_are_paired_with_word_highlights() {
        let d = side_by_side("a\nrun the tests\nc\n", "a\nrun all the tests\nc\nd\n");
        assert_eq!(d.rows.len(), 4);
        assert_eq!(d.rows[1].kind, RowKind::Changed);
        let right = d.rows[1].right.as_ref().unwrap();
        let changed: Vec<&str> = right
            .segments
            .iter()
            .filter(|s| s.changed)
            .map(|s| s.text.as_str())
            .collect();
        assert_eq!(
            changed.join("").trim(),
            "all",
            "only the inserted word is marked: {right:?}"
        );
        assert_eq!(right.text(), "run all the tests");
        assert_eq!(d.rows[3].kind, RowKind::Added);
        assert_eq!((d.added, d.removed, d.changed), (1, 0, 1));
    }

    #[test]
    fn an_inserted_line_does_not_pair_unrelated_lines() {
        let d = side_by_side(
            "1. Test it well\n2. Document it\n",
            "1. Address feedback first\n2. Test it well\n3. Document it\n",
        );
        let kinds: Vec<RowKind> = d.rows.iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            vec![RowKind::Added, RowKind::Changed, RowKind::Changed],
            "{d:?}"
        );
        let changed: Vec<String> = d.rows[1]
            .right
            .as_ref()
            .unwrap()
            .segments
            .iter()
            .filter(|s| s.changed)
            .map(|s| s.text.clone())
            .collect();
        assert_eq!(
            changed,
            vec!["2.".to_owned()],
            "only the renumbering is marked"
        );
    }

    #[test]
    fn identical_texts_have_only_equal_rows() {
        let d = side_by_side("x\ny", "x\ny");
        assert!(d.rows.iter().all(|r| r.kind == RowKind::Equal));
    }

    /// Both sides as the rows show them, line by line, checking their numbering.
    fn sides(d: &SideBySide) -> (Vec<String>, Vec<String>) {
        let (mut left, mut right) = (Vec::new(), Vec::new());
        for row in &d.rows {
            if let Some(line) = &row.left {
                assert_eq!(line.number, left.len() + 1, "left numbering: {row:?}");
                left.push(line.text());
            }
            if let Some(line) = &row.right {
                assert_eq!(line.number, right.len() + 1, "right numbering: {row:?}");
                right.push(line.text());
            }
        }
        (left, right)
    }

    fn assert_reconstructs(old: &str, new: &str, d: &SideBySide) {
        let (left, right) = sides(d);
        assert!(
            left.iter().map(String::as_str).eq(old.lines()),
            "left side differs"
        );
        assert!(
            right.iter().map(String::as_str).eq(new.lines()),
            "right side differs"
        );
    }

    #[test]
    fn small_edits_are_not_coarse() {
        let d = side_by_side("a\nrun the tests\nc\n", "a\nrun all the tests\nc\nd\n");
        assert!(!d.coarse, "a small diff is exact: {d:?}");
    }

    /// Issue 8 #6: two large, wholly different revisions used to spin for minutes.
    #[test]
    fn large_different_revisions_finish_coarsened() {
        let old: String = (0..5_000)
            .map(|i| format!("old line {i} alpha beta gamma {}\n", i * 7919))
            .collect();
        let new: String = (0..5_000)
            .map(|i| format!("new text {i} delta epsilon {}\n", i * 104_729))
            .collect();
        let began = Instant::now();
        let d = side_by_side(&old, &new);
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "a comparison must not hang: {:?}",
            began.elapsed()
        );
        assert!(
            d.coarse,
            "5,000 x 5,000 lines cannot all be searched for partners"
        );
        assert_reconstructs(&old, &new, &d);
        assert_eq!(d.removed + d.changed, 5_000);
        assert_eq!(d.added + d.changed, 5_000);
    }

    /// Issue 8 #6: two 1 MiB single lines would be word-diffed without end.
    #[test]
    fn huge_single_lines_are_shown_whole() {
        let old = "alpha ".repeat(180_000);
        let new = "omega ".repeat(180_000);
        let began = Instant::now();
        let d = side_by_side(&old, &new);
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "{:?}",
            began.elapsed()
        );
        assert!(d.coarse, "a line this long is not diffed word by word");
        assert_reconstructs(&old, &new, &d);
        let kinds: Vec<RowKind> = d.rows.iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [RowKind::Removed, RowKind::Added], "shown whole");
        let left = d.rows[0].left.as_ref().unwrap();
        assert_eq!(left.segments.len(), 1, "one segment");
        assert!(left.segments[0].changed);
    }

    #[test]
    fn an_expired_deadline_gives_whole_line_blocks() {
        let old = "one\ntwo\nthree\n";
        let new = "one\n2\nthree\nfour\n";
        let d = side_by_side_within(old, new, Duration::ZERO);
        assert!(d.coarse);
        assert_reconstructs(old, new, &d);
        assert!(
            d.rows.iter().all(|r| r.kind != RowKind::Changed),
            "no pairing past the deadline: {d:?}"
        );
    }

    use proptest::prelude::*;

    /// Texts drawn from a few lines and words, so that revisions share lines and words often.
    fn revision() -> impl Strategy<Value = String> {
        let word = prop_oneof![
            Just("alpha".to_owned()),
            Just("beta".to_owned()),
            Just("gamma".to_owned()),
            Just("  ".to_owned()),
            Just("\t".to_owned()),
            "[a-z]{1,6}",
            any::<String>(),
        ];
        let line = prop::collection::vec(word, 0..8).prop_map(|w| w.join(" "));
        let ending = prop_oneof![Just("\n"), Just("\r\n"), Just("")];
        (prop::collection::vec(line, 0..30), ending).prop_map(|(lines, end)| lines.join(end))
    }

    proptest! {
        #![proptest_config(crate::text::testing::proptest_config(128))]

        /// Any two revisions: no panic, and the rows give back both sides exactly.
        #[test]
        fn prop_diff_rows_reconstruct_both_sides(old in revision(), new in revision()) {
            let d = side_by_side(&old, &new);
            assert_reconstructs(&old, &new, &d);
            let changed = d.rows.iter().filter(|r| r.kind == RowKind::Changed).count();
            prop_assert_eq!(changed, d.changed);
        }

        /// Arbitrary text on both sides, and an edit of one side.
        #[test]
        fn prop_diff_of_any_strings(old in any::<String>(), new in any::<String>(), cut in any::<prop::sample::Index>()) {
            let d = side_by_side(&old, &new);
            assert_reconstructs(&old, &new, &d);
            let mut edited = old.clone();
            let at = cut.index(edited.len() + 1);
            if edited.is_char_boundary(at) {
                edited.insert_str(at, " inserted\nline ");
            }
            let d = side_by_side(&old, &edited);
            assert_reconstructs(&old, &edited, &d);
        }
    }
}
