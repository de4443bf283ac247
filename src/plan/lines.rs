//! Following lines from one revision of a plan to the next (where did the lines a comment is on
//! go, and did they change?), and the unified diff an agent reads when a reviewer edited its
//! plan. Both under the same deadline as comparisons.

use std::time::Instant;

use similar::{DiffOp, TextDiff};

use super::diff::DIFF_DEADLINE;

/// What became of some lines of an old revision in a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineFate {
    /// Every one of the lines is still there, unchanged.
    pub unchanged: bool,
    /// The lines of the new revision they are now (1-based, inclusive), or `None` when they
    /// were removed with nothing in their place.
    pub now: Option<(usize, usize)>,
}

/// How the lines of an old revision map onto a new one: one line diff, under the comparisons'
/// deadline, that every comment on the old revision is followed through.
#[derive(Debug, Clone)]
pub struct LineMap {
    ops: Vec<DiffOp>,
    old_len: usize,
}

impl LineMap {
    pub fn between(old: &str, new: &str) -> Self {
        let old_lines: Vec<&str> = old.lines().collect();
        let new_lines: Vec<&str> = new.lines().collect();
        let ops = TextDiff::configure()
            .deadline(Instant::now() + DIFF_DEADLINE)
            .diff_slices(&old_lines, &new_lines)
            .ops()
            .to_vec();
        Self {
            ops,
            old_len: old_lines.len(),
        }
    }

    /// Where lines `start..=end` (1-based) of the old revision went in the new one.
    pub fn follow(&self, start: usize, end: usize) -> LineFate {
        let (first, last) = (start.max(1) - 1, end.min(self.old_len));
        if first >= last {
            return LineFate {
                unchanged: false,
                now: None,
            };
        }
        let mut unchanged = true;
        let mut now: Option<(usize, usize)> = None;
        let mut cover = |from: usize, to: usize| {
            now = Some(match now {
                Some((a, b)) => (a.min(from), b.max(to)),
                None => (from, to),
            });
        };
        for op in &self.ops {
            let (old_range, new_range) = (op.old_range(), op.new_range());
            let overlap = old_range.start.max(first)..old_range.end.min(last);
            if overlap.is_empty() {
                continue;
            }
            match *op {
                DiffOp::Equal { .. } => {
                    let shift = |i: usize| i - old_range.start + new_range.start + 1;
                    cover(shift(overlap.start), shift(overlap.end - 1));
                }
                DiffOp::Delete { .. } => unchanged = false,
                DiffOp::Replace { .. } | DiffOp::Insert { .. } => {
                    unchanged = false;
                    if !new_range.is_empty() {
                        cover(new_range.start + 1, new_range.end);
                    }
                }
            }
        }
        LineFate { unchanged, now }
    }
}

/// A unified diff (3 lines of context) from `old` to `new`, headed with their names.
pub fn unified(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    TextDiff::configure()
        .deadline(Instant::now() + DIFF_DEADLINE)
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_name, new_name)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn follow_lines(old: &str, new: &str, start: usize, end: usize) -> LineFate {
        LineMap::between(old, new).follow(start, end)
    }

    const OLD: &str = "# Plan\n\n1. Measure\n2. Cache with LRU\n3. Ship\n";

    #[test]
    fn unchanged_lines_are_followed_to_where_they_moved() {
        let new = "# Plan\n\nIntro.\n\n1. Measure\n2. Cache with LRU\n3. Ship\n";
        assert_eq!(
            follow_lines(OLD, new, 3, 4),
            LineFate {
                unchanged: true,
                now: Some((5, 6))
            }
        );
    }

    #[test]
    fn changed_lines_point_at_what_replaced_them() {
        let new = "# Plan\n\n1. Measure\n2. Cache with a TTL\n3. Ship\n";
        assert_eq!(
            follow_lines(OLD, new, 4, 4),
            LineFate {
                unchanged: false,
                now: Some((4, 4))
            }
        );
        // One of two lines changed: the pair is addressed, and both are still found.
        assert_eq!(
            follow_lines(OLD, new, 3, 4),
            LineFate {
                unchanged: false,
                now: Some((3, 4))
            }
        );
    }

    #[test]
    fn removed_lines_are_nowhere() {
        let new = "# Plan\n\n1. Measure\n3. Ship\n";
        assert_eq!(
            follow_lines(OLD, new, 4, 4),
            LineFate {
                unchanged: false,
                now: None
            }
        );
        assert_eq!(follow_lines(OLD, new, 40, 41).now, None, "out of range");
    }

    #[test]
    fn the_unified_diff_names_both_sides() {
        let diff = unified(OLD, "# Plan\n\n1. Measure\n3. Ship\n", "a", "b");
        assert!(diff.starts_with("--- a\n+++ b\n@@"), "{diff}");
        assert!(diff.contains("\n-2. Cache with LRU\n"), "{diff}");
        assert_eq!(unified(OLD, OLD, "a", "b"), "", "no change, no diff");
    }
}
