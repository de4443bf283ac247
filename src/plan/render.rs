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
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::mpsc;
use std::time::Duration;

use ammonia::{Builder, UrlRelative};
use serde::Serialize;

use crate::text;
use hidden::{invisible_findings, is_marked, show_images, unrendered_findings};
use nesting::{nesting_estimate, source_lines, tree_depth};
pub use pages::pages;
use source::{marked_count, push_marker};
pub use source::{render_source, MAX_MARKED, MAX_NUMBERED_LINES};

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
    /// More invisible characters than [`MAX_MARKED`]: each would be a marker in the page.
    TooManyInvisible { limit: usize },
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
            Fallback::TooManyInvisible { limit } => format!(
                "This plan holds more than {} invisible characters; here is its source, each \
                 of them shown.",
                text::grouped(*limit)
            ),
            Fallback::Failed => "This plan could not be rendered; here is its source.".into(),
        }
    }
}

/// One place where what the model receives differs from what the rendered view shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HiddenContent {
    /// What sort of content it is.
    pub kind: HiddenKind,
    /// 1-based line in the markdown that was rendered (lines end at `\n`, `\r\n` or `\r`).
    pub line: usize,
    /// The text in question, shortened, with invisible characters shown as `⟨U+XXXX⟩`.
    pub excerpt: String,
    /// What is hidden, for a person: e.g. "U+202E RIGHT-TO-LEFT OVERRIDE".
    pub detail: String,
}

/// The sorts of content a rendering hides or changes (serialised in kebab-case, e.g.
/// `link-reference-definition`).
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
        if depth > MAX_NESTING {
            Some(Fallback::TooDeep {
                depth,
                limit: MAX_NESTING,
            })
        } else {
            (marked_count(markdown) > MAX_MARKED)
                .then_some(Fallback::TooManyInvisible { limit: MAX_MARKED })
        }
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
    // Each block says which lines of the plan it comes from (`data-sourcepos="3:1-4:20"`), so
    // a reviewer can select a block and comment on its lines.
    options.render.sourcepos = true;
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
    match mark_invisible(&clean, MAX_OUTPUT_BYTES) {
        Some(marked) => Ok((marked, findings)),
        None => Err(Fallback::OutputTooLarge {
            limit: MAX_OUTPUT_BYTES,
        }),
    }
}

/// The page shown instead of a rendering: the reason, then the escaped source.
fn source_html(markdown: &str, fallback: &Fallback) -> String {
    format!(
        "<p class=\"render-fallback\">{}</p>\n{}",
        text::escape_html(&fallback.message()),
        render_source(markdown)
    )
}

/// Replaces every hidden character in sanitised HTML with a visible marker: a styled span in
/// text, plain `⟨U+XXXX⟩` inside a tag's attribute values (where markup cannot go). The input
/// is serialiser output, so `<` only ever starts a tag and attribute values are quoted. None
/// when the result would be longer than `limit` (stopped there: markers ~80 bytes each).
fn mark_invisible(html: &str, limit: usize) -> Option<String> {
    if !html.chars().any(text::is_hidden) {
        return (html.len() <= limit).then(|| html.to_owned());
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
        if out.len() > limit {
            return None;
        }
        let next = chars.peek().copied();
        let marked = c != '\n' && is_marked(c, prev, next);
        prev = Some(c);
        match state {
            State::Text if marked => {
                push_marker(&mut out, c);
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
    (out.len() <= limit).then_some(out)
}

/// Elements that keep the lines they come from (`data-sourcepos`).
const BLOCKS: &[&str] = &[
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "li",
    "pre",
    "blockquote",
    "table",
    "tr",
    "hr",
];

/// `L:C-L:C`, as comrak writes it (nothing else may pass as a source position).
fn is_sourcepos(value: &str) -> bool {
    let point = |p: &str| {
        p.split_once(':').is_some_and(|(l, c)| {
            !l.is_empty()
                && !c.is_empty()
                && l.bytes().all(|b| b.is_ascii_digit())
                && c.bytes().all(|b| b.is_ascii_digit())
        })
    };
    value
        .split_once('-')
        .is_some_and(|(from, to)| point(from) && point(to))
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
                "data-sourcepos",
            ]
            .into_iter()
            .collect(),
        )
        .url_schemes(["http", "https", "mailto"].into_iter().collect())
        .url_relative(UrlRelative::Custom(Box::new(only_fragments)))
        .link_rel(Some("noopener noreferrer nofollow"))
        .attribute_filter(|element, attribute, value| match attribute {
            // Only footnote anchors may carry ids; anything else could clobber the app's DOM.
            "id" if is_footnote_id(value) => Some(Cow::Borrowed(value)),
            "id" => None,
            "type" if value != "checkbox" => None,
            // Blocks only: a reviewer selects lines, never part of one.
            "data-sourcepos" if !is_sourcepos(value) || !BLOCKS.contains(&element) => None,
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

mod hidden;
mod nesting;
mod pages;
mod source;
#[cfg(test)]
mod source_tests;
#[cfg(test)]
mod tests;
