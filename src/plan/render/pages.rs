//! A rendered plan cut into pages, for a view that keeps only the pages near the screen in its
//! document (a 200 KB plan is ~20,000 elements: laying them all out, or taking them all down,
//! stalls the window for hundreds of milliseconds). A page is whole top-level elements, so each
//! parses on its own to exactly what it was part of.

/// Elements without an end tag.
const VOID: &[&[u8]] = &[
    b"area", b"base", b"br", b"col", b"embed", b"hr", b"img", b"input", b"link", b"meta",
    b"source", b"track", b"wbr",
];

/// Elements whose text the serialiser writes unescaped (the sanitiser lets none through; if one
/// came, a `<` in its text would not start a tag).
const RAW_TEXT: &[&[u8]] = &[
    b"script",
    b"style",
    b"xmp",
    b"iframe",
    b"noembed",
    b"noframes",
    b"plaintext",
    b"noscript",
    b"textarea",
    b"title",
];

/// Cuts sanitised HTML into pages of whole top-level elements, each at least `page_bytes` long
/// but for the last (an element longer than that is a page of its own). Joined, the pages are
/// `html`. The HTML must be serialiser output, as [`super::render`] returns: `<` only starts a
/// tag, attribute values are quoted, every element that is not void is closed. Anything else
/// (an unclosed tag or element, a stray end tag, a comment) is not guessed at: it is one page.
pub fn pages(html: &str, page_bytes: usize) -> Vec<&str> {
    split(html.as_bytes(), page_bytes)
        .map(|cuts| {
            let mut pages = Vec::with_capacity(cuts.len() + 1);
            let mut start = 0;
            for cut in cuts {
                pages.push(&html[start..cut]);
                start = cut;
            }
            pages.push(&html[start..]);
            pages
        })
        .unwrap_or_else(|| vec![html])
}

/// Where pages end (byte offsets after an element's last `>`, so always char boundaries), or
/// `None` when `html` does not nest as serialiser output does.
fn split(html: &[u8], page_bytes: usize) -> Option<Vec<usize>> {
    let mut cuts = Vec::new();
    let mut page_start = 0;
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(offset) = html[at..].iter().position(|&b| b == b'<') {
        let open = at + offset;
        let end = tag_end(html, open)?;
        let closing = html.get(open + 1) == Some(&b'/');
        let name = tag_name(&html[open + if closing { 2 } else { 1 }..end]);
        if name.is_empty() || is_one_of(name, RAW_TEXT) {
            return None;
        }
        if closing {
            depth = depth.checked_sub(1)?;
        } else if !is_one_of(name, VOID) && html[end - 1] != b'/' {
            depth += 1;
        }
        at = end + 1;
        if depth == 0 && at - page_start >= page_bytes {
            cuts.push(at);
            page_start = at;
        }
    }
    if depth != 0 {
        return None;
    }
    // What follows the last cut is a page only if it holds more than the blank between blocks.
    if html[page_start..].iter().all(u8::is_ascii_whitespace) {
        cuts.pop();
    }
    Some(cuts)
}

/// Whether the element `name` is one of `names` (lowercase), in any case; no copy per tag.
fn is_one_of(name: &[u8], names: &[&[u8]]) -> bool {
    names.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// The `>` that ends the tag starting at `open`, outside quoted attribute values.
fn tag_end(html: &[u8], open: usize) -> Option<usize> {
    let mut quote = None;
    for (i, &b) in html.iter().enumerate().skip(open + 1) {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if b == b'>' => return Some(i),
            None => {}
        }
    }
    None
}

/// The element name a tag's text starts with (empty when it starts with anything else).
fn tag_name(tag: &[u8]) -> &[u8] {
    let len = tag
        .iter()
        .position(|b| !b.is_ascii_alphanumeric())
        .unwrap_or(tag.len());
    if tag.first().is_some_and(u8::is_ascii_alphabetic) {
        &tag[..len]
    } else {
        &[]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_whole_top_level_elements() {
        let html = "<h1 data-sourcepos=\"1:1-1:3\">T</h1>\n<p>a <em>b</em><br>c</p>\n\
                    <ul>\n<li>x</li>\n</ul>\n<hr />\n<p>last</p>\n";
        assert_eq!(
            pages(html, 1),
            vec![
                "<h1 data-sourcepos=\"1:1-1:3\">T</h1>",
                "\n<p>a <em>b</em><br>c</p>",
                "\n<ul>\n<li>x</li>\n</ul>",
                "\n<hr />",
                "\n<p>last</p>\n",
            ],
            "the blank after the last element stays with it"
        );
        assert_eq!(
            pages(html, 40),
            vec![
                "<h1 data-sourcepos=\"1:1-1:3\">T</h1>\n<p>a <em>b</em><br>c</p>",
                "\n<ul>\n<li>x</li>\n</ul>\n<hr />\n<p>last</p>\n",
            ],
            "a page ends after the element that makes it long enough"
        );
        assert_eq!(pages(html, 10_000), vec![html]);
        assert_eq!(pages("", 10), vec![""]);
    }

    #[test]
    fn quoted_attributes_and_escaped_text_do_not_confuse_it() {
        let html = "<p title=\"a > b </p> <c\">x &lt;/p&gt; y</p><p class='q>'>z</p>";
        assert_eq!(
            pages(html, 1),
            vec![
                "<p title=\"a > b </p> <c\">x &lt;/p&gt; y</p>",
                "<p class='q>'>z</p>"
            ]
        );
    }

    #[test]
    fn html_that_does_not_nest_is_one_page() {
        for odd in [
            "<p>open",
            "<p>a</p></div><p>b</p>",
            "<p>a</p><!-- c --><p>b</p>",
            "<p>a</p><p title=\"unclosed>b</p>",
            "<p>a</p>< p>b</p>",
            "<p>a</p><script>if (a<b) {}</script><p>b</p>",
            "<p>a</p><p",
        ] {
            assert_eq!(pages(odd, 1), vec![odd], "{odd}");
        }
    }
}
