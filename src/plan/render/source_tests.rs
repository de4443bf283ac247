//! The source view: every character shown, its lines numbered as the warnings count them.

use super::*;

/// The source view numbers lines as the warnings count them: a lone CR ends one too.
#[test]
fn the_source_view_has_the_lines_the_warnings_count() {
    for text in ["a\nb\r\nc\rd", "a\n\n", "", "one", "\r\r\n\n"] {
        let html = render_source(text);
        assert_eq!(
            html.matches("<span class=\"line\">").count(),
            nesting::source_lines(text).len(),
            "{text:?}: {html}"
        );
    }
    assert!(render_source("a\rb").contains("⟨U+000D⟩</span><br></span>"));
}

/// The worst input for numbered lines, a plan of nothing but line breaks, is shown as it was
/// before lines were numbered: no bigger than its text.
#[test]
fn a_source_of_only_line_breaks_is_not_numbered() {
    let breaks = "\n".repeat(MAX_INPUT_BYTES);
    let html = render_source(&breaks);
    assert!(!html.contains("class=\"line\""));
    assert!(html.len() < MAX_INPUT_BYTES + 100, "{} bytes", html.len());
    let most = format!("{}a", "a\n".repeat(MAX_NUMBERED_LINES - 1));
    assert_eq!(
        render_source(&most).matches("class=\"line\"").count(),
        MAX_NUMBERED_LINES
    );
}

#[test]
fn the_source_view_shows_every_character() {
    let html = render_source("[//]: # \"hidden\"\n<b>\u{200b}</b>\r\n\u{1b}[31m");
    assert_eq!(
        html,
        "<pre class=\"plan-source\"><code>\
         <span class=\"line\">[//]: # &quot;hidden&quot;\n</span>\
         <span class=\"line\">&lt;b&gt;\
         <span class=\"invisible\" title=\"U+200B ZERO WIDTH SPACE\">⟨U+200B⟩</span>&lt;/b&gt;\
         <span class=\"invisible\" title=\"U+000D CARRIAGE RETURN\">⟨U+000D⟩</span>\n</span>\
         <span class=\"line\"><span class=\"invisible\" title=\"U+001B ESCAPE\">⟨U+001B⟩</span>[31m</span>\
         </code></pre>\n"
    );
}

/// The worst input for the source view, a plan of nothing but invisible characters (each
/// boxed marker ~25 times its size): past [`MAX_MARKED`] boxed ones, each run of them is a
/// plain marker with its count, so the HTML stays within ~7 times the plan (one between
/// visible characters is the worst), and nothing after them is hidden. What is shown is whole HTML, every marker and line closed.
#[test]
fn past_the_most_marked_a_run_of_invisible_characters_is_one_marker() {
    let one_line = format!("{}end", "\u{200b}".repeat(MAX_INPUT_BYTES / 3 - 1));
    let many_lines = "\u{200b}\u{2066}x\n".repeat(MAX_INPUT_BYTES / 8);
    let alternating = "a\u{1}".repeat(MAX_INPUT_BYTES / 2);
    let mixed = "\u{1}\u{2}".repeat(MAX_INPUT_BYTES / 2);
    for source in [&one_line, &many_lines, &alternating, &mixed] {
        let html = render_source(source);
        assert_eq!(html.matches("class=\"invisible\"").count(), MAX_MARKED);
        assert!(
            html.len() < MAX_MARKED * 100 + 7 * source.len(),
            "{} bytes",
            html.len()
        );
        assert!(html.contains("past the first 20,000 invisible characters"));
        assert!(
            html.ends_with("</span></code></pre>\n"),
            "{}",
            &html[html.len() - 300..]
        );
        assert_eq!(
            html.matches("<span").count(),
            html.matches("</span>").count()
        );
    }
    let html = render_source(&one_line);
    let rest = MAX_INPUT_BYTES / 3 - 1 - MAX_MARKED;
    assert!(
        html.contains(&format!("⟨U+200B ×{}⟩end", crate::text::grouped(rest))),
        "the run past the boxed markers is one marker, and what follows it is shown"
    );
    assert!(render_source(&many_lines).contains("⟨2 invisible: U+200B U+2066⟩x\n"));
    assert!(render_source(&alternating).ends_with(
        "a⟨U+0001⟩</span>\n<span class=\"render-cut\">(past the first 20,000 invisible characters, \
         each run of them is shown as one: ⟨U+XXXX ×count⟩)</span></code></pre>\n"
    ));
    let rest = MAX_INPUT_BYTES - MAX_MARKED;
    assert!(render_source(&mixed).contains(&format!(
        "⟨{} invisible: U+0001 U+0002⟩",
        crate::text::grouped(rest)
    )));
    let rendered = render(&one_line);
    assert_eq!(
        rendered.fallback,
        Some(Fallback::TooManyInvisible { limit: MAX_MARKED })
    );
    assert!(rendered.html.contains("end</span>"));
    // The most is shown boxed, and rendered.
    let most = "\u{200b}".repeat(MAX_MARKED);
    assert!(!render_source(&most).contains("past the first"));
    assert_eq!(render(&most).fallback, None);
    let emoji = "👩\u{200d}💻 ".repeat(MAX_MARKED + 1);
    assert_eq!(
        render(&emoji).fallback,
        None,
        "a joiner in an emoji is no marker"
    );
}
