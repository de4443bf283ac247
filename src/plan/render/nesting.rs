//! How deep a plan nests, measured cheaply: before parsing, an upper bound read line by line
//! (so a hostile plan is refused before any stage that could recurse on it), and after
//! parsing, the tree's depth measured without recursion.

use comrak::arena_tree::NodeEdge;
use comrak::nodes::AstNode;

/// An upper bound on how deeply the markdown can nest, without parsing it: per line, the block
/// containers it opens (`>` and list markers) plus its indentation in steps of two columns;
/// per paragraph, open `[` plus open emphasis delimiters. Linear in the input.
pub(super) fn nesting_estimate(markdown: &str) -> usize {
    let mut deepest = 0;
    let mut inline = InlineDepth::default();
    let mut fence: Option<(u8, usize)> = None;
    for line in source_lines(markdown) {
        let (markers, columns, rest) = container_prefix(line);
        if markers > 0 {
            deepest = deepest.max(markers + columns / 2);
        }
        let trimmed = rest.trim_start_matches([' ', '\t']);
        if let Some(marker) = fence_marker(trimmed) {
            fence = match fence {
                None => Some(marker),
                Some((c, n)) if marker.0 == c && marker.1 >= n => None,
                open => open,
            };
            continue;
        }
        if fence.is_some() {
            continue;
        }
        if trimmed.is_empty() {
            inline = InlineDepth::default();
            continue;
        }
        deepest = deepest.max(inline.line(rest));
    }
    deepest
}

/// The fence character and length if `line` opens or closes a fenced code block.
pub(super) fn fence_marker(line: &str) -> Option<(u8, usize)> {
    let c = *line.as_bytes().first()?;
    if c != b'`' && c != b'~' {
        return None;
    }
    let n = line.bytes().take_while(|&b| b == c).count();
    (n >= 3).then_some((c, n))
}

/// Running inline nesting within one paragraph.
#[derive(Debug, Default)]
pub(super) struct InlineDepth {
    brackets: usize,
    emphasis: usize,
}

/// How far ahead a code span's closing backticks are looked for (longer spans are scanned as
/// text, which can only overestimate).
const CODE_SPAN_WINDOW: usize = 1000;

impl InlineDepth {
    /// Feeds one line; returns the deepest nesting seen so far in the paragraph. Emphasis that
    /// could both open and close (inside a word) counts as neither: it pairs with its
    /// neighbours rather than nesting, and the parsed tree is measured again anyway.
    pub(super) fn line(&mut self, line: &str) -> usize {
        let bytes = line.as_bytes();
        let mut deepest = self.brackets + self.emphasis;
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 1,
                b'[' => self.brackets += 1,
                b']' => self.brackets = self.brackets.saturating_sub(1),
                b'`' => i = code_span_end(bytes, i),
                c @ (b'*' | b'_' | b'~') => {
                    let run = bytes[i..].iter().take_while(|&&b| b == c).count();
                    let before = i.checked_sub(1).map(|j| bytes[j]);
                    let after = bytes.get(i + run).copied();
                    let opens = after.is_some_and(|b| !b.is_ascii_whitespace());
                    let closes = before.is_some_and(|b| !b.is_ascii_whitespace());
                    // A run of n delimiters nests at most (n + 1) / 2 deep (strong takes two).
                    let levels = run.div_ceil(2);
                    if opens && !closes {
                        self.emphasis += levels;
                    } else if closes && !opens {
                        self.emphasis = self.emphasis.saturating_sub(levels);
                    }
                    i += run - 1;
                }
                _ => {}
            }
            deepest = deepest.max(self.brackets + self.emphasis);
            i += 1;
        }
        deepest
    }
}

/// The index of the last backtick of the code span opening at `start`, or of the opening run
/// itself when no closing run of the same length follows within [`CODE_SPAN_WINDOW`].
fn code_span_end(bytes: &[u8], start: usize) -> usize {
    let run = bytes[start..].iter().take_while(|&&b| b == b'`').count();
    let from = start + run;
    let until = bytes.len().min(from.saturating_add(CODE_SPAN_WINDOW));
    let mut j = from;
    while j < until {
        if bytes[j] == b'`' {
            let close = bytes[j..].iter().take_while(|&&b| b == b'`').count();
            if close == run {
                return j + close - 1;
            }
            j += close;
        } else {
            j += 1;
        }
    }
    from - 1
}

/// Splits off the block-container markers at the start of a line: `>` and list markers, with
/// the whitespace between them. Returns (markers, whitespace columns, the rest).
pub(super) fn container_prefix(line: &str) -> (usize, usize, &str) {
    let bytes = line.as_bytes();
    let (mut markers, mut columns, mut i) = (0, 0, 0);
    loop {
        while let Some(&b) = bytes.get(i) {
            match b {
                b' ' => columns += 1,
                b'\t' => columns += 4,
                _ => break,
            }
            i += 1;
        }
        let spaced = |at: usize| matches!(bytes.get(at), None | Some(b' ' | b'\t'));
        match bytes.get(i) {
            Some(b'>') => {
                markers += 1;
                i += 1;
            }
            Some(b'-' | b'+' | b'*') if spaced(i + 1) => {
                markers += 1;
                i += 1;
            }
            Some(b'0'..=b'9') => {
                let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
                if digits <= 9
                    && matches!(bytes.get(i + digits), Some(b'.' | b')'))
                    && spaced(i + digits + 1)
                {
                    markers += 1;
                    i += digits + 1;
                } else {
                    break;
                }
            }
            _ => break,
        }
    }
    (markers, columns, &line[i..])
}

/// The lines of `text` as comrak numbers them: ended by `\n`, `\r\n` or a lone `\r`.
pub(super) fn source_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push(&text[start..i]);
                start = i + 1;
            }
            b'\r' => {
                lines.push(&text[start..i]);
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// How deep the parsed tree is, measured without recursion.
pub(super) fn tree_depth<'a>(root: &'a AstNode<'a>) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for edge in root.traverse() {
        match edge {
            NodeEdge::Start(_) => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            NodeEdge::End(_) => depth = depth.saturating_sub(1),
        }
    }
    deepest
}
