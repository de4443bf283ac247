//! Markdown to HTML for untrusted plans: comrak (GFM) with raw HTML escaped to visible text,
//! then ammonia, so nothing a prompt-injected model writes can run in the app.
//!
//! Three more promises, because a plan is hostile input and the reviewer approves what they see:
//! - Rendering never crashes or hangs, whatever the plan: nesting is bounded by a cheap scan
//!   before parsing (and the parsed tree is measured again), the work runs on its own thread
//!   with a large stack and a deadline, and the output size is capped. A plan past any bound is
//!   shown as its escaped source with a sentence saying why ([`Fallback`]).
//! - What the model receives but the rendered view would not show is listed ([`HiddenContent`]):
//!   link reference definitions (`[//]: # "..."`), footnotes that are never referenced, table
//!   cells past the header's columns, any other line that renders to nothing, images, and
//!   invisible characters.
//! - Invisible characters (zero-width, bidi controls, Unicode tags, the soft hyphen, control
//!   characters) are rendered as visible markers, and images as links that name their alt text
//!   and URL (never loaded).

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::mpsc;
use std::time::Duration;

use ammonia::{Builder, UrlRelative};
use comrak::arena_tree::{Node, NodeEdge};
use comrak::nodes::{Ast, AstNode, LineColumn, NodeLink, NodeValue};
use serde::Serialize;

use crate::text;

/// Deepest nesting (block containers plus inline brackets and emphasis) rendered; deeper plans
/// are shown as source. Real plans stay far below; the bound keeps every later stage cheap.
pub const MAX_NESTING: usize = 100;
/// Largest markdown rendered (2 MiB: a plan file is at most 1 MiB, plus its title).
pub const MAX_INPUT_BYTES: usize = 2 * 1024 * 1024;
/// Largest HTML a rendering may produce (32 MiB).
pub const MAX_OUTPUT_BYTES: usize = 32 * 1024 * 1024;
/// Longest a rendering may take before the source is shown instead.
pub const RENDER_DEADLINE: Duration = Duration::from_secs(10);
/// Most findings listed in [`Rendered::hidden`]; the rest are counted in `hidden_omitted`.
pub const MAX_FINDINGS: usize = 200;
/// The rendering thread's stack: far more than the bounded nesting needs.
const RENDER_STACK_BYTES: usize = 64 * 1024 * 1024;
/// A parsed tree deeper than this is not formatted (blocks and inlines each add a level or two
/// per nesting step, so this is well above what [`MAX_NESTING`] lets through).
const MAX_TREE_DEPTH: usize = 4 * MAX_NESTING;

/// A rendered plan: HTML safe to insert into the app's document, whether it was rendered or
/// shown as source, and what it holds that the rendered view does not show as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rendered {
    /// Sanitised HTML. Invisible characters appear as
    /// `<span class="invisible" title="U+200B ZERO WIDTH SPACE">⟨U+200B⟩</span>`.
    pub html: String,
    /// Set when the plan could not be rendered and `html` is its escaped source instead.
    pub fallback: Option<Fallback>,
    /// Content the model receives that the rendered view hides or changes, in line order, at
    /// most [`MAX_FINDINGS`]. A host should offer the source view and flag the plan when this
    /// is not empty.
    pub hidden: Vec<HiddenContent>,
    /// Findings past [`MAX_FINDINGS`], not listed.
    pub hidden_omitted: usize,
}

impl Rendered {
    /// Whether the plan holds content a reviewer would not see in the rendered view.
    pub fn has_hidden_content(&self) -> bool {
        !self.hidden.is_empty() || self.hidden_omitted > 0
    }
}

/// Why a plan is shown as its source instead of rendered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum Fallback {
    /// Nested deeper than [`MAX_NESTING`] (block quotes, lists, brackets, emphasis).
    TooDeep { depth: usize, limit: usize },
    /// Longer than [`MAX_INPUT_BYTES`]; only the start of the source is shown.
    TooLarge { bytes: usize, limit: usize },
    /// Rendering took longer than [`RENDER_DEADLINE`].
    TimedOut { seconds: u64 },
    /// The rendered HTML would be larger than [`MAX_OUTPUT_BYTES`].
    OutputTooLarge { limit: usize },
    /// The renderer failed (its thread could not start, or panicked).
    Failed,
}

impl Fallback {
    /// The sentence shown above the source.
    pub fn message(&self) -> String {
        match self {
            Fallback::TooDeep { .. } => {
                "This plan is too deeply nested to render; here is its source.".into()
            }
            Fallback::TooLarge { bytes, limit } => format!(
                "This plan is too large to render ({bytes} bytes; the limit is {limit}); here is \
                 the start of its source."
            ),
            Fallback::TimedOut { seconds } => {
                format!("This plan took more than {seconds} s to render; here is its source.")
            }
            Fallback::OutputTooLarge { .. } => {
                "This plan would render to too much HTML; here is its source.".into()
            }
            Fallback::Failed => "This plan could not be rendered; here is its source.".into(),
        }
    }
}

/// One place where what the model receives differs from what the rendered view shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HiddenContent {
    pub kind: HiddenKind,
    /// 1-based line in the markdown that was rendered (lines end at `\n`, `\r\n` or `\r`).
    pub line: usize,
    /// The text in question, shortened, with invisible characters shown as `⟨U+XXXX⟩`.
    pub excerpt: String,
    /// What is hidden, for a person: e.g. "U+202E RIGHT-TO-LEFT OVERRIDE".
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HiddenKind {
    /// `[label]: url "title"`: consumed by the parser, renders to nothing (`[//]: # "..."` is
    /// the usual way to hide a comment in markdown).
    LinkReferenceDefinition,
    /// A footnote definition no footnote reference points to: dropped.
    FootnoteDefinition,
    /// Table cells past the header's column count: dropped.
    TableCell,
    /// An image: rendered as a link naming its alt text and URL, never loaded.
    Image,
    /// Zero-width, bidi, tag, control and other invisible characters.
    InvisibleCharacter,
    /// Any other non-blank source line that renders to nothing.
    Unrendered,
}

/// Renders plan markdown. Never panics, never runs longer than about [`RENDER_DEADLINE`], and
/// the HTML is always safe to insert into the app's document.
pub fn render(markdown: &str) -> Rendered {
    let mut findings = invisible_findings(markdown);
    let fallback = if markdown.len() > MAX_INPUT_BYTES {
        Some(Fallback::TooLarge {
            bytes: markdown.len(),
            limit: MAX_INPUT_BYTES,
        })
    } else {
        let depth = nesting_estimate(markdown);
        (depth > MAX_NESTING).then_some(Fallback::TooDeep {
            depth,
            limit: MAX_NESTING,
        })
    };
    let outcome = match fallback {
        Some(fallback) => Err(fallback),
        None => render_on_thread(markdown),
    };
    let html = match outcome {
        Ok((html, found)) => {
            findings.extend(found);
            html
        }
        Err(fallback) => {
            let html = source_html(markdown, &fallback);
            return finish(html, Some(fallback), findings);
        }
    };
    finish(html, None, findings)
}

/// Renders plan markdown to HTML that is safe to insert into the app's document; see
/// [`render`] for the whole result (fallback reason and hidden content).
pub fn render_html(markdown: &str) -> String {
    render(markdown).html
}

fn finish(html: String, fallback: Option<Fallback>, mut findings: Vec<HiddenContent>) -> Rendered {
    findings.sort_by_key(|f| f.line);
    let hidden_omitted = findings.len().saturating_sub(MAX_FINDINGS);
    findings.truncate(MAX_FINDINGS);
    Rendered {
        html,
        fallback,
        hidden: findings,
        hidden_omitted,
    }
}

type Rendering = Result<(String, Vec<HiddenContent>), Fallback>;

/// Renders on a thread of its own: a large stack, and a deadline after which the caller stops
/// waiting (the thread finishes on its own; its result is dropped).
fn render_on_thread(markdown: &str) -> Rendering {
    let (tx, rx) = mpsc::channel();
    let owned = markdown.to_owned();
    let spawned = std::thread::Builder::new()
        .name("plan-render".into())
        .stack_size(RENDER_STACK_BYTES)
        .spawn(move || {
            let _ = tx.send(render_markdown(&owned));
        });
    if spawned.is_err() {
        return Err(Fallback::Failed);
    }
    match rx.recv_timeout(RENDER_DEADLINE) {
        Ok(result) => result,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(Fallback::TimedOut {
            seconds: RENDER_DEADLINE.as_secs(),
        }),
        // The thread ended without an answer: it panicked.
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(Fallback::Failed),
    }
}

fn options() -> comrak::Options<'static> {
    let mut options = comrak::Options::default();
    options.extension.strikethrough = true;
    options.extension.table = true;
    options.extension.autolink = true;
    options.extension.tasklist = true;
    options.extension.footnotes = true;
    options.extension.tagfilter = true;
    // Raw HTML is shown as text, so a reviewer sees exactly what the plan tried to embed.
    options.render.unsafe_ = false;
    options.render.escape = true;
    options
}

/// Parse, find what would not show, make images visible, format, sanitise, mark invisibles.
fn render_markdown(markdown: &str) -> Rendering {
    let options = options();
    let arena = comrak::Arena::new();
    let root = comrak::parse_document(&arena, markdown, &options);
    let depth = tree_depth(root);
    if depth > MAX_TREE_DEPTH {
        return Err(Fallback::TooDeep {
            depth,
            limit: MAX_TREE_DEPTH,
        });
    }
    let lines = source_lines(markdown);
    let mut findings = unrendered_findings(root, &lines);
    findings.extend(show_images(&arena, root, &lines));
    let mut html = Vec::new();
    if comrak::format_html(root, &options, &mut html).is_err() {
        return Err(Fallback::Failed);
    }
    let html = String::from_utf8_lossy(&html);
    if html.len() > MAX_OUTPUT_BYTES {
        return Err(Fallback::OutputTooLarge {
            limit: MAX_OUTPUT_BYTES,
        });
    }
    let clean = sanitizer().clean(&html).to_string();
    let marked = mark_invisible(&clean);
    if marked.len() > MAX_OUTPUT_BYTES {
        return Err(Fallback::OutputTooLarge {
            limit: MAX_OUTPUT_BYTES,
        });
    }
    Ok((marked, findings))
}

/// The page shown instead of a rendering: the reason, then the escaped source.
fn source_html(markdown: &str, fallback: &Fallback) -> String {
    let mut shown = markdown;
    if shown.len() > MAX_INPUT_BYTES {
        let mut cut = MAX_INPUT_BYTES;
        while !shown.is_char_boundary(cut) {
            cut -= 1;
        }
        shown = &shown[..cut];
    }
    let mut html = String::with_capacity(shown.len() + 200);
    html.push_str("<p class=\"render-fallback\">");
    html.push_str(&escape_html(&fallback.message()));
    html.push_str("</p>\n<pre class=\"plan-source\"><code>");
    html.push_str(&escape_html(shown));
    if shown.len() < markdown.len() {
        html.push_str("\n…");
    }
    html.push_str("</code></pre>\n");
    mark_invisible(&html)
}

fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An upper bound on how deeply the markdown can nest, without parsing it: per line, the block
/// containers it opens (`>` and list markers) plus its indentation in steps of two columns;
/// per paragraph, open `[` plus open emphasis delimiters. Linear in the input.
fn nesting_estimate(markdown: &str) -> usize {
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
fn fence_marker(line: &str) -> Option<(u8, usize)> {
    let c = *line.as_bytes().first()?;
    if c != b'`' && c != b'~' {
        return None;
    }
    let n = line.bytes().take_while(|&b| b == c).count();
    (n >= 3).then_some((c, n))
}

/// Running inline nesting within one paragraph.
#[derive(Debug, Default)]
struct InlineDepth {
    brackets: usize,
    emphasis: usize,
}

impl InlineDepth {
    /// Feeds one line; returns the deepest nesting seen so far in the paragraph.
    fn line(&mut self, line: &str) -> usize {
        let bytes = line.as_bytes();
        let mut deepest = self.brackets + self.emphasis;
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 1,
                b'[' => self.brackets += 1,
                b']' => self.brackets = self.brackets.saturating_sub(1),
                c @ (b'*' | b'_' | b'~') => {
                    let run = bytes[i..].iter().take_while(|&&b| b == c).count();
                    let before = i.checked_sub(1).map(|j| bytes[j]);
                    let after = bytes.get(i + run).copied();
                    let opens = after.is_some_and(|b| !b.is_ascii_whitespace());
                    let closes = before.is_some_and(|b| !b.is_ascii_whitespace());
                    // A run of n delimiters nests at most (n + 1) / 2 deep (strong takes two).
                    let levels = run.div_ceil(2);
                    if opens && !(closes && c == b'_') {
                        self.emphasis += levels;
                    } else if closes {
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

/// Splits off the block-container markers at the start of a line: `>` and list markers, with
/// the whitespace between them. Returns (markers, whitespace columns, the rest).
fn container_prefix(line: &str) -> (usize, usize, &str) {
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
fn source_lines(text: &str) -> Vec<&str> {
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
fn tree_depth<'a>(root: &'a AstNode<'a>) -> usize {
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

/// Source lines that render to nothing: link reference definitions, unreferenced footnotes,
/// anything else outside every block; and table cells past the header's columns.
fn unrendered_findings<'a>(root: &'a AstNode<'a>, lines: &[&str]) -> Vec<HiddenContent> {
    let mut covered = vec![false; lines.len() + 2];
    // Lines a paragraph starts with that its text does not: reference definitions it held.
    let mut consumed: Vec<usize> = Vec::new();
    let mut findings = Vec::new();
    for node in root.descendants() {
        let ast = node.data.borrow();
        let (start, end) = (ast.sourcepos.start.line, ast.sourcepos.end.line);
        match &ast.value {
            NodeValue::Paragraph
            | NodeValue::Heading(_)
            | NodeValue::CodeBlock(_)
            | NodeValue::HtmlBlock(_)
            | NodeValue::ThematicBreak
            | NodeValue::Table(_) => {
                for flag in covered
                    .iter_mut()
                    .take(end.min(lines.len()) + 1)
                    .skip(start)
                {
                    *flag = true;
                }
            }
            _ => {}
        }
        if matches!(ast.value, NodeValue::Paragraph | NodeValue::Heading(_)) {
            consumed.extend(leading_definitions(node, lines, start, end));
        }
        if let NodeValue::TableRow(_) = ast.value {
            let shown = node.children().count();
            if let Some(line) = lines.get(start.wrapping_sub(1)) {
                let written = table_cells(container_prefix(line).2);
                if written > shown {
                    findings.push(HiddenContent {
                        kind: HiddenKind::TableCell,
                        line: start,
                        excerpt: excerpt(line, 0),
                        detail: format!(
                            "{} table cell(s) past the table's {shown} column(s) are not shown",
                            written - shown
                        ),
                    });
                }
            }
        }
    }
    for line in consumed {
        if let Some(flag) = covered.get_mut(line) {
            *flag = false;
        }
    }
    for (index, line) in lines.iter().enumerate() {
        let number = index + 1;
        if covered[number] {
            continue;
        }
        let rest = container_prefix(line).2.trim();
        if rest.is_empty() {
            continue;
        }
        let (kind, detail) = if rest.starts_with("[^") && rest.contains("]:") {
            (
                HiddenKind::FootnoteDefinition,
                "a footnote nothing refers to: not shown",
            )
        } else if rest.starts_with('[') && rest.contains("]:") {
            (
                HiddenKind::LinkReferenceDefinition,
                "a link reference definition: not shown",
            )
        } else {
            (HiddenKind::Unrendered, "a line that renders to nothing")
        };
        findings.push(HiddenContent {
            kind,
            line: number,
            excerpt: excerpt(line, 0),
            detail: detail.into(),
        });
    }
    findings
}

/// The lines a paragraph (or setext heading) from `start` to `end` begins with that are link
/// reference definitions: the parser took them out of its text (its sourcepos still covers
/// them), so they are the lines whose `[label]:` the rendered text does not begin with.
fn leading_definitions<'a>(
    node: &'a AstNode<'a>,
    lines: &[&str],
    start: usize,
    end: usize,
) -> Vec<usize> {
    let label_at = |number: usize| {
        let line = lines.get(number.wrapping_sub(1))?;
        definition_label(container_prefix(line).2.trim_start())
    };
    let Some(label) = label_at(start) else {
        return Vec::new();
    };
    let mut text = String::new();
    for descendant in node.descendants() {
        if let NodeValue::Text(t) = &descendant.data.borrow().value {
            text.push_str(t);
        }
        if text.len() >= label.len() {
            break;
        }
    }
    if text.starts_with(label) {
        return Vec::new();
    }
    (start..=end.min(lines.len()))
        .take_while(|&number| label_at(number).is_some())
        .collect()
}

/// `[label]:` at the start of `text`, if it is there (a footnote's `[^x]:` is not a label).
fn definition_label(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    if bytes.first() != Some(&b'[') || bytes.get(1) == Some(&b'^') {
        return None;
    }
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'[' => return None,
            b']' if i > 1 && bytes.get(i + 1) == Some(&b':') => return Some(&text[..i + 2]),
            b']' => return None,
            _ => {}
        }
        i += 1;
    }
    None
}

/// Cells in a table row as written: `|`-separated, escaped pipes excepted, outer pipes optional.
fn table_cells(row: &str) -> usize {
    let row = row.trim();
    let bytes = row.as_bytes();
    let mut pipes: usize = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'|' => pipes += 1,
            _ => {}
        }
        i += 1;
    }
    let leading = usize::from(row.starts_with('|'));
    let trailing = usize::from(row.len() > 1 && row.ends_with('|') && !row.ends_with("\\|"));
    (pipes + 1).saturating_sub(leading + trailing)
}

/// Turns every image into a link naming its alt text and URL (never loaded), and lists them.
fn show_images<'a>(
    arena: &'a comrak::Arena<AstNode<'a>>,
    root: &'a AstNode<'a>,
    lines: &[&str],
) -> Vec<HiddenContent> {
    let images: Vec<&'a AstNode<'a>> = root
        .descendants()
        .filter(|n| matches!(n.data.borrow().value, NodeValue::Image(_)))
        .collect();
    let mut findings = Vec::new();
    for image in images {
        let (link, start) = {
            let ast = image.data.borrow();
            let NodeValue::Image(link) = &ast.value else {
                continue;
            };
            (link.clone(), ast.sourcepos.start)
        };
        let alt = plain_text(image);
        let line = lines.get(start.line.wrapping_sub(1)).copied().unwrap_or("");
        findings.push(HiddenContent {
            kind: HiddenKind::Image,
            line: start.line,
            excerpt: excerpt(line, start.column.saturating_sub(1)),
            detail: format!(
                "an image (alt text `{}`, URL `{}`): shown as a link, never loaded",
                text::short(&alt, 60),
                text::short(&link.url, 200)
            ),
        });
        let shown_url = match url_scheme(&link.url) {
            Some(scheme) if !matches!(scheme.as_str(), "http" | "https" | "mailto") => {
                format!(" (a `{scheme}` URL: see the source)")
            }
            _ => format!(" ({})", text::short(&link.url, 200)),
        };
        image.data.borrow_mut().value = NodeValue::Link(NodeLink {
            url: link.url,
            title: link.title,
        });
        let new_text = |text: String| -> &'a AstNode<'a> {
            arena.alloc(Node::new(RefCell::new(Ast::new(
                NodeValue::Text(text),
                LineColumn {
                    line: start.line,
                    column: start.column,
                },
            ))))
        };
        image.prepend(new_text("Image: ".into()));
        image.append(new_text(shown_url));
    }
    findings
}

/// A URL's scheme, lower-cased, if it has one.
fn url_scheme(url: &str) -> Option<String> {
    let (scheme, _) = url.trim().split_once(':')?;
    let valid = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| scheme.to_ascii_lowercase())
}

/// The text inside a node (an image's alt text).
fn plain_text<'a>(node: &'a AstNode<'a>) -> String {
    let mut out = String::new();
    for descendant in node.descendants() {
        match &descendant.data.borrow().value {
            NodeValue::Text(t) => out.push_str(t),
            NodeValue::Code(code) => out.push_str(&code.literal),
            NodeValue::SoftBreak | NodeValue::LineBreak => out.push(' '),
            _ => {}
        }
    }
    out
}

/// One finding per line holding invisible or control characters, naming them.
fn invisible_findings(markdown: &str) -> Vec<HiddenContent> {
    let mut findings = Vec::new();
    for (index, line) in source_lines(markdown).into_iter().enumerate() {
        let mut named: BTreeMap<u32, usize> = BTreeMap::new();
        let mut first = None;
        let mut prev = None;
        let mut chars = line.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            let next = chars.peek().map(|&(_, n)| n);
            if is_marked(c, prev, next) {
                *named.entry(c as u32).or_default() += 1;
                first.get_or_insert(at);
            }
            prev = Some(c);
        }
        let Some(first) = first else {
            continue;
        };
        let detail = named
            .iter()
            .map(|(&code, &count)| {
                let name = char::from_u32(code).map_or("CONTROL CHARACTER", char_name);
                let times = if count > 1 {
                    format!(" ×{count}")
                } else {
                    String::new()
                };
                format!("U+{code:04X} {name}{times}")
            })
            .collect::<Vec<_>>()
            .join(", ");
        findings.push(HiddenContent {
            kind: HiddenKind::InvisibleCharacter,
            line: index + 1,
            excerpt: excerpt(line, first),
            detail,
        });
    }
    findings
}

/// The name shown for a hidden character.
fn char_name(c: char) -> &'static str {
    text::invisible_name(c).unwrap_or("CONTROL CHARACTER")
}

/// Whether `c` (between `prev` and `next`) is shown as a marker. A zero-width joiner between
/// two emoji is how emoji sequences are spelled (👩‍💻), so it is left alone there.
fn is_marked(c: char, prev: Option<char>, next: Option<char>) -> bool {
    if !text::is_hidden(c) {
        return false;
    }
    let emoji = |c: Option<char>| {
        c.is_some_and(
            |c| matches!(c as u32, 0x1F000..=0x1FAFF | 0x2600..=0x27BF | 0xFE0F | 0x2B00..=0x2BFF),
        )
    };
    !(c == '\u{200D}' && emoji(prev) && emoji(next))
}

/// Up to 120 characters of `line` around byte `at`, whitespace flattened, hidden characters
/// shown as `⟨U+XXXX⟩`.
fn excerpt(line: &str, at: usize) -> String {
    let mut from = at.min(line.len());
    while !line.is_char_boundary(from) {
        from -= 1;
    }
    for _ in 0..40 {
        match line[..from].char_indices().next_back() {
            Some((i, _)) => from = i,
            None => break,
        }
    }
    let window: String = line[from..].chars().take(400).collect();
    let mut visible = String::with_capacity(window.len());
    let mut prev = None;
    let mut chars = window.chars().peekable();
    while let Some(c) = chars.next() {
        if is_marked(c, prev, chars.peek().copied()) {
            let _ = write!(visible, "⟨U+{:04X}⟩", c as u32);
        } else {
            visible.push(c);
        }
        prev = Some(c);
    }
    let short = text::short(&visible, 120);
    if from > 0 {
        format!("…{short}")
    } else {
        short
    }
}

/// Replaces every hidden character in sanitised HTML with a visible marker: a styled span in
/// text, plain `⟨U+XXXX⟩` inside a tag's attribute values (where markup cannot go). The input
/// is serialiser output, so `<` only ever starts a tag and attribute values are quoted.
fn mark_invisible(html: &str) -> String {
    if !html.chars().any(text::is_hidden) {
        return html.to_owned();
    }
    #[derive(Clone, Copy)]
    enum State {
        Text,
        Tag,
        Quoted(char),
    }
    let mut out = String::with_capacity(html.len() + 64);
    let mut state = State::Text;
    let mut prev = None;
    let mut chars = html.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        let marked = c != '\n' && is_marked(c, prev, next);
        prev = Some(c);
        match state {
            State::Text if marked => {
                let _ = write!(
                    out,
                    "<span class=\"invisible\" title=\"U+{code:04X} {name}\">⟨U+{code:04X}⟩</span>",
                    code = c as u32,
                    name = char_name(c)
                );
                continue;
            }
            State::Tag | State::Quoted(_) if marked => {
                let _ = write!(out, "⟨U+{:04X}⟩", c as u32);
                continue;
            }
            State::Text if c == '<' => state = State::Tag,
            State::Tag if c == '"' || c == '\'' => state = State::Quoted(c),
            State::Tag if c == '>' => state = State::Text,
            State::Quoted(q) if c == q => state = State::Tag,
            _ => {}
        }
        out.push(c);
    }
    out
}

fn sanitizer() -> Builder<'static> {
    let mut builder = Builder::default();
    let mut tags: HashSet<&str> = builder.clone_tags();
    // Images would load remote content (a tracking pixel is exfiltration); they are turned
    // into links before this, and any left are dropped here.
    tags.remove("img");
    tags.extend(["input", "section", "sup", "del"]);
    let mut tag_attributes: HashMap<&str, HashSet<&str>> = HashMap::new();
    tag_attributes.insert(
        "input",
        ["type", "checked", "disabled"].into_iter().collect(),
    );
    tag_attributes.insert("a", ["href", "title"].into_iter().collect());
    tag_attributes.insert("th", ["align"].into_iter().collect());
    tag_attributes.insert("td", ["align"].into_iter().collect());
    tag_attributes.insert("ol", ["start"].into_iter().collect());
    tag_attributes.insert("code", ["class"].into_iter().collect());
    builder
        .tags(tags)
        .tag_attributes(tag_attributes)
        .generic_attributes(
            [
                "id",
                "class",
                "data-footnotes",
                "data-footnote-ref",
                "data-footnote-backref",
            ]
            .into_iter()
            .collect(),
        )
        .url_schemes(["http", "https", "mailto"].into_iter().collect())
        .url_relative(UrlRelative::Custom(Box::new(only_fragments)))
        .link_rel(Some("noopener noreferrer nofollow"))
        .attribute_filter(|_element, attribute, value| match attribute {
            // Only footnote anchors may carry ids; anything else could clobber the app's DOM.
            "id" if is_footnote_id(value) => Some(Cow::Borrowed(value)),
            "id" => None,
            "type" if value != "checkbox" => None,
            _ => Some(Cow::Borrowed(value)),
        });
    builder
}

fn is_footnote_id(value: &str) -> bool {
    (value.starts_with("fn-") || value.starts_with("fnref-"))
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn only_fragments(url: &str) -> Option<Cow<'_, str>> {
    url.starts_with('#').then_some(Cow::Borrowed(url))
}

#[cfg(test)]
mod tests;
