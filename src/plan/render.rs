//! Markdown to HTML for untrusted plans: comrak (GFM) with raw HTML escaped to visible text,
//! then ammonia, so nothing a prompt-injected model writes can run in the app.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use ammonia::{Builder, UrlRelative};

/// Renders plan markdown to HTML that is safe to insert into the app's document.
pub fn render_html(markdown: &str) -> String {
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
    let html = comrak::markdown_to_html(markdown, &options);
    sanitizer().clean(&html).to_string()
}

fn sanitizer() -> Builder<'static> {
    let mut builder = Builder::default();
    let mut tags: HashSet<&str> = builder.clone_tags();
    // Images would load remote content (a tracking pixel is exfiltration); the CSP blocks them
    // too, but they are dropped here so the rendering is the same everywhere.
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
mod tests {
    use super::*;

    #[test]
    fn gfm_features_render() {
        let html = render_html(
            "# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done\n- [ ] todo\n\n~~old~~ https://example.com\n\nNote[^1].\n\n[^1]: The note.\n",
        );
        assert!(html.contains("<table>"), "{html}");
        assert!(html.contains("type=\"checkbox\""), "{html}");
        assert!(html.contains("<del>old</del>"), "{html}");
        assert!(html.contains("href=\"https://example.com\""), "{html}");
        assert!(
            html.contains("id=\"fn-1\""),
            "footnote anchors keep their ids: {html}"
        );
        assert!(html.contains("href=\"#fn-1\""), "{html}");
    }

    /// The markup of every element start tag in `html` (escaped text is not markup).
    pub(crate) fn start_tags(html: &str) -> Vec<&str> {
        html.split('<')
            .skip(1)
            .filter_map(|rest| rest.split_once('>').map(|(tag, _)| tag))
            .collect()
    }

    #[test]
    fn hostile_markdown_is_inert() {
        let html = render_html(
            "<script>alert(1)</script>\n\n[x](javascript:alert(2)) <img src=x onerror=alert(3)>\n\n<a href=\"#\" onclick=\"alert(4)\">y</a> <div id=\"app\">clobber</div>\n\n![pixel](https://evil.example/p.png)\n\n[ok](https://ok.example \"t\")",
        );
        let tags = start_tags(&html);
        assert!(
            tags.iter().all(|t| !t.starts_with("script")
                && !t.starts_with("img")
                && !t.starts_with("div")),
            "{html}"
        );
        assert!(
            tags.iter().all(|t| !t.contains(" on")),
            "no event handler attribute: {html}"
        );
        assert!(!html.contains("javascript:"), "{html}");
        assert!(tags.iter().all(|t| !t.contains("id=\"app\"")), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "raw HTML shows as text: {html}"
        );
        assert!(html.contains("<a href=\"https://ok.example\" title=\"t\" rel=\"noopener noreferrer nofollow\">ok</a>"), "{html}");
    }
}
