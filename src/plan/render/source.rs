//! The source view: the plan as the model reads it, every character shown, its lines numbered
//! as the warnings count them, in HTML of bounded size whatever the plan holds.

use std::fmt::Write as _;

use super::hidden::{char_name, is_marked};
use super::MAX_INPUT_BYTES;
use crate::text;

/// The most lines a source view numbers: a span each would make a plan of nothing but line
/// breaks (up to [`MAX_INPUT_BYTES`] of them) tens of megabytes, and millions of elements.
pub const MAX_NUMBERED_LINES: usize = 20_000;
/// The most invisible characters a source view marks, each a boxed element of ~80 bytes: a
/// plan of nothing else (up to [`MAX_INPUT_BYTES`] / 3 of them) would be ~56 MB of HTML and
/// hundreds of thousands of elements. One with more is shown up to the one past this, and
/// says it stops there.
pub const MAX_MARKED: usize = 20_000;

const LINE: &str = "<span class=\"line\">";
/// The plan's source exactly as the model reads it, as HTML for a source view: escaped, in a
/// `<pre class="plan-source"><code>`, each line in a `<span class="line">` (numbered beside
/// it, as the hidden-content warning and comments name lines), with every invisible or control
/// character shown as a marker (see [`super::Rendered::html`]): what is not marked is the
/// source. Sources over [`MAX_INPUT_BYTES`] are cut there, with `…`; one of more than
/// [`MAX_NUMBERED_LINES`] lines is shown unnumbered; one of more than [`MAX_MARKED`]
/// invisible characters is cut before the first one past it, and says so.
pub fn render_source(markdown: &str) -> String {
    let shown = text::head(markdown, MAX_INPUT_BYTES);
    let escaped = text::escape_html(shown);
    let lines = escaped.matches(['\n', '\r']).count() + 1;
    let numbered = lines <= MAX_NUMBERED_LINES;
    let mut html = String::with_capacity(escaped.len() + lines * (LINE.len() + 7) + 64);
    html.push_str("<pre class=\"plan-source\"><code>");
    let mut rest = escaped.as_str();
    let mut whole = true;
    let mut markers = MAX_MARKED;
    while whole && !rest.is_empty() {
        // Lines end as comrak ends them, and so the warnings count them: at `\n`, `\r\n` or a
        // lone `\r`, which is marked and breaks the line here too.
        let end = match rest.find(['\n', '\r']) {
            None => rest.len(),
            Some(at) if rest[at..].starts_with("\r\n") => at + 2,
            Some(at) => at + 1,
        };
        let (line, next) = rest.split_at(end);
        if numbered {
            html.push_str(LINE);
        }
        whole = push_marked(&mut html, line, &mut markers);
        if whole && numbered && line.ends_with('\r') {
            html.push_str("<br>");
        }
        if numbered {
            html.push_str("</span>");
        }
        rest = next;
    }
    if !whole {
        let _ = write!(
            html,
            "\n… <span class=\"render-cut\">(the rest is not shown: this plan holds more \
             invisible characters than the {} marked here)</span>",
            text::grouped(MAX_MARKED)
        );
    } else if shown.len() < markdown.len() {
        html.push_str("\n…");
    }
    html.push_str("</code></pre>\n");
    html
}

/// Appends escaped text to `html`, each hidden character as a marker while `markers` lasts (a
/// marker each); false when it stopped at one past it.
fn push_marked(html: &mut String, escaped: &str, markers: &mut usize) -> bool {
    let mut prev = None;
    let mut chars = escaped.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        if c != '\n' && is_marked(c, prev, next) {
            let Some(left) = markers.checked_sub(1) else {
                return false;
            };
            *markers = left;
            push_marker(html, c);
        } else {
            html.push(c);
        }
        prev = Some(c);
    }
    true
}

/// How many characters of `text` a view marks.
pub(super) fn marked_count(text: &str) -> usize {
    let mut prev = None;
    let mut chars = text.chars().peekable();
    let mut count = 0;
    while let Some(c) = chars.next() {
        count += usize::from(c != '\n' && is_marked(c, prev, chars.peek().copied()));
        prev = Some(c);
    }
    count
}

/// A hidden character as a visible marker in HTML text: its code point, its name on hover.
pub(super) fn push_marker(html: &mut String, c: char) {
    let _ = write!(
        html,
        "<span class=\"invisible\" title=\"U+{code:04X} {name}\">⟨U+{code:04X}⟩</span>",
        code = c as u32,
        name = char_name(c)
    );
}
