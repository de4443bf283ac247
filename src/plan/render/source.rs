//! The source view: the plan as the model reads it, every character shown, its lines numbered
//! as the warnings count them, in HTML of bounded size whatever the plan holds.

use std::fmt::Write as _;

use super::hidden::{char_name, is_marked};
use super::MAX_INPUT_BYTES;
use crate::text;

/// The most lines a source view numbers: a span each would make a plan of nothing but line
/// breaks (up to [`MAX_INPUT_BYTES`] of them) tens of megabytes, and millions of elements.
pub const MAX_NUMBERED_LINES: usize = 20_000;
/// The most invisible characters a source view marks as a boxed element (~80 bytes each): a
/// plan of nothing else (up to [`MAX_INPUT_BYTES`] / 3 of them) would be ~56 MB of HTML and
/// hundreds of thousands of elements. Past them each run of hidden characters is plain text,
/// `⟨U+200B ×12,345⟩`: every one still counted, nothing after them hidden, and the HTML at
/// most ~7 times the plan (a hidden character between two visible ones is the worst).
pub const MAX_MARKED: usize = 20_000;

const LINE: &str = "<span class=\"line\">";
/// The plan's source exactly as the model reads it, as HTML for a source view: escaped, in a
/// `<pre class="plan-source"><code>`, each line in a `<span class="line">` (numbered beside
/// it, as the hidden-content warning and comments name lines), with every invisible or control
/// character shown as a marker (see [`super::Rendered::html`]): what is not marked is the
/// source. Sources over [`MAX_INPUT_BYTES`] are cut there, with `…`; one of more than
/// [`MAX_NUMBERED_LINES`] lines is shown unnumbered; past [`MAX_MARKED`] invisible
/// characters, each run of them is a plain marker with its count, and a note says so.
pub fn render_source(markdown: &str) -> String {
    let shown = text::head(markdown, MAX_INPUT_BYTES);
    let escaped = text::escape_html(shown);
    let lines = escaped.matches(['\n', '\r']).count() + 1;
    let numbered = lines <= MAX_NUMBERED_LINES;
    let mut html = String::with_capacity(escaped.len() + lines * (LINE.len() + 7) + 64);
    html.push_str("<pre class=\"plan-source\"><code>");
    let mut rest = escaped.as_str();
    let mut boxed = MAX_MARKED;
    let mut plain = false;
    while !rest.is_empty() {
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
        plain |= push_marked(&mut html, line, &mut boxed);
        if numbered && line.ends_with('\r') {
            html.push_str("<br>");
        }
        if numbered {
            html.push_str("</span>");
        }
        rest = next;
    }
    if shown.len() < markdown.len() {
        html.push_str("\n…");
    }
    if plain {
        let _ = write!(
            html,
            "\n<span class=\"render-cut\">(past the first {} invisible characters, each run of \
             them is shown as one: ⟨U+XXXX ×count⟩)</span>",
            text::grouped(MAX_MARKED)
        );
    }
    html.push_str("</code></pre>\n");
    html
}

/// Appends escaped text to `html`, each hidden character as a boxed marker while `boxed`
/// lasts (one each), then each run of them as a plain marker with its count; true if it wrote
/// a plain one.
fn push_marked(html: &mut String, escaped: &str, boxed: &mut usize) -> bool {
    let mut plain = false;
    let mut prev = None;
    let mut chars = escaped.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        if c == '\n' || !is_marked(c, prev, next) {
            html.push(c);
        } else if let Some(left) = boxed.checked_sub(1) {
            *boxed = left;
            push_marker(html, c);
        } else {
            // Past the boxed markers, the run of hidden characters from here is one marker.
            let (mut count, mut last, mut kinds) = (1, c, vec![c]);
            while let Some(&more) = chars.peek() {
                let after = chars.clone().nth(1);
                if more == '\n' || !is_marked(more, Some(last), after) {
                    break;
                }
                chars.next();
                count += 1;
                last = more;
                if kinds.len() <= 3 && !kinds.contains(&more) {
                    kinds.push(more);
                }
            }
            push_run(html, count, &kinds);
            plain = true;
            prev = Some(last);
            continue;
        }
        prev = Some(c);
    }
    plain
}

/// A run of `count` hidden characters as a plain marker: `⟨U+200B⟩`, `⟨U+200B ×1,000⟩` for
/// one character again and again, `⟨1,000 invisible: U+0001 U+0002 …⟩` for several (the first
/// three of `kinds`, those it holds).
fn push_run(html: &mut String, count: usize, kinds: &[char]) {
    let code = |c: &char| format!("U+{:04X}", *c as u32);
    let _ = match kinds {
        [one] if count == 1 => write!(html, "⟨{}⟩", code(one)),
        [one] => write!(html, "⟨{} ×{}⟩", code(one), text::grouped(count)),
        _ => {
            let named: Vec<String> = kinds.iter().take(3).map(code).collect();
            let more = if kinds.len() > 3 { " …" } else { "" };
            write!(
                html,
                "⟨{} invisible: {}{more}⟩",
                text::grouped(count),
                named.join(" ")
            )
        }
    };
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
