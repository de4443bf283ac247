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
    DiffLine { number, segments: vec![Segment { text: text.to_owned(), changed }] }
}

fn push_segment(segments: &mut Vec<Segment>, text: &str, changed: bool) {
    match segments.last_mut() {
        Some(last) if last.changed == changed => last.text.push_str(text),
        _ => segments.push(Segment { text: text.to_owned(), changed }),
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
            DiffOp::Equal { old_index, new_index, len } => {
                for i in 0..len {
                    out.rows.push(DiffRow {
                        kind: RowKind::Equal,
                        left: Some(whole(old_index + i + 1, old_lines[old_index + i], false)),
                        right: Some(whole(new_index + i + 1, new_lines[new_index + i], false)),
                    });
                }
            }
            DiffOp::Delete { old_index, old_len, .. } => {
                removed_rows(&mut out, &old_lines, old_index, old_len);
            }
            DiffOp::Insert { new_index, new_len, .. } => {
                added_rows(&mut out, &new_lines, new_index, new_len);
            }
            DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                let paired = old_len.min(new_len);
                for i in 0..paired {
                    let (a, b) = (old_lines[old_index + i], new_lines[new_index + i]);
                    let (left, right) = word_segments(a, b);
                    out.changed += 1;
                    out.rows.push(DiffRow {
                        kind: RowKind::Changed,
                        left: Some(DiffLine { number: old_index + i + 1, segments: left }),
                        right: Some(DiffLine { number: new_index + i + 1, segments: right }),
                    });
                }
                removed_rows(&mut out, &old_lines, old_index + paired, old_len - paired);
                added_rows(&mut out, &new_lines, new_index + paired, new_len - paired);
            }
        }
    }
    out
}

fn removed_rows(out: &mut SideBySide, lines: &[&str], start: usize, len: usize) {
    for i in start..start + len {
        out.removed += 1;
        out.rows.push(DiffRow { kind: RowKind::Removed, left: Some(whole(i + 1, lines[i], true)), right: None });
    }
}

fn added_rows(out: &mut SideBySide, lines: &[&str], start: usize, len: usize) {
    for i in start..start + len {
        out.added += 1;
        out.rows.push(DiffRow { kind: RowKind::Added, left: None, right: Some(whole(i + 1, lines[i], true)) });
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
        let changed: Vec<&str> = right.segments.iter().filter(|s| s.changed).map(|s| s.text.as_str()).collect();
        assert_eq!(changed.join("").trim(), "all", "only the inserted word is marked: {right:?}");
        assert_eq!(right.text(), "run all the tests");
        assert_eq!(d.rows[3].kind, RowKind::Added);
        assert_eq!((d.added, d.removed, d.changed), (1, 0, 1));
    }

    #[test]
    fn identical_texts_have_only_equal_rows() {
        let d = side_by_side("x\ny", "x\ny");
        assert!(d.rows.iter().all(|r| r.kind == RowKind::Equal));
    }
}
