//! What a plan holds that its rendering would not show as written: lines the parser consumes
//! (link reference definitions, unreferenced footnotes), table cells past the header, images
//! (turned into visible links here), and invisible characters. Each becomes a
//! [`HiddenContent`] finding with its line and a visible excerpt.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use comrak::arena_tree::Node;
use comrak::nodes::{Ast, AstNode, LineColumn, NodeLink, NodeValue};

use super::nesting::{container_prefix, source_lines};
use super::{HiddenContent, HiddenKind};
use crate::text;

/// Source lines that render to nothing: link reference definitions, unreferenced footnotes,
/// anything else outside every block; and table cells past the header's columns.
pub(super) fn unrendered_findings<'a>(root: &'a AstNode<'a>, lines: &[&str]) -> Vec<HiddenContent> {
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
                // comrak can end a block before it starts (a `<script>` HTML block): a block
                // covers at least its first line.
                for flag in covered
                    .iter_mut()
                    .take(end.max(start).min(lines.len()) + 1)
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
pub(super) fn leading_definitions<'a>(
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
pub(super) fn definition_label(text: &str) -> Option<&str> {
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
pub(super) fn table_cells(row: &str) -> usize {
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
pub(super) fn show_images<'a>(
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
pub(super) fn url_scheme(url: &str) -> Option<String> {
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
pub(super) fn plain_text<'a>(node: &'a AstNode<'a>) -> String {
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
pub(super) fn invisible_findings(markdown: &str) -> Vec<HiddenContent> {
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
pub(super) fn char_name(c: char) -> &'static str {
    text::invisible_name(c).unwrap_or_else(|| text::control_name(c))
}

/// Whether `c` (between `prev` and `next`) is shown as a marker. A zero-width joiner between
/// two emoji is how emoji sequences are spelled (👩‍💻), so it is left alone there.
pub(super) fn is_marked(c: char, prev: Option<char>, next: Option<char>) -> bool {
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
pub(super) fn excerpt(line: &str, at: usize) -> String {
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
