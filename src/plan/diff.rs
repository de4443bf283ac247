//! Side-by-side comparison of two plan revisions: a line diff, and inside each changed line pair
//! the words that changed.

use serde::Serialize;
use similar::{ChangeTag, DiffOp, TextDiff};

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

/// The words of `old` and `new` that differ, as segments for each side.
fn word_segments(old: &str, new: &str) -> (Vec<Segment>, Vec<Segment>) {
    let diff = TextDiff::from_words(old, new);
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
    (left, right)
}

/// Compares two texts line by line; replaced lines are paired and diffed word by word.
pub fn side_by_side(old: &str, new: &str) -> SideBySide {
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = new.lines().collect();
    let diff = TextDiff::configure().diff_slices(&old_lines, &new_lines);
    let mut out = SideBySide::default();
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
                    &old_lines[old_index..old_index + old_len],
                    old_index,
                    &new_lines[new_index..new_index + new_len],
                    new_index,
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
/// following new line that resembles it most; the rest are shown as removed or added.
fn replaced_rows(
    out: &mut SideBySide,
    old: &[&str],
    old_start: usize,
    new: &[&str],
    new_start: usize,
) {
    let search = old.len() * new.len() <= PAIR_SEARCH_LIMIT;
    let mut next_new = 0;
    for (i, old_line) in old.iter().enumerate() {
        let partner = if search {
            (next_new..new.len())
                .map(|j| (j, TextDiff::from_words(*old_line, new[j]).ratio()))
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
        let (left, right) = word_segments(old_line, new[j]);
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
}
