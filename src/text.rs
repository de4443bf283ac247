//! Untrusted text made safe to show: plans and model output are written by a model that can be
//! prompt-injected, so before they reach a terminal every character that could move the cursor,
//! recolour the screen, reorder what follows, or hide itself is shown as a visible escape. Also
//! shell quoting for the commands Plandesk suggests, and the one truncation helper for
//! one-line summaries.
//!
//! The table of invisible characters here is the one the plan renderer marks too, so the
//! terminal and the app agree on what a reviewer must be shown.

use std::borrow::Cow;
use std::fmt::Write as _;

/// The name of a character that is invisible or changes how the text around it is displayed
/// (zero-width characters, bidi controls, Unicode tags, the soft hyphen, ...), or `None` for a
/// character that shows as itself. Control characters (C0, DEL, C1) are not listed here:
/// [`is_control`] covers them.
pub fn invisible_name(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{00AD}' => "SOFT HYPHEN",
        '\u{034F}' => "COMBINING GRAPHEME JOINER",
        '\u{061C}' => "ARABIC LETTER MARK",
        '\u{115F}' => "HANGUL CHOSEONG FILLER",
        '\u{1160}' => "HANGUL JUNGSEONG FILLER",
        '\u{17B4}' => "KHMER VOWEL INHERENT AQ",
        '\u{17B5}' => "KHMER VOWEL INHERENT AA",
        '\u{180E}' => "MONGOLIAN VOWEL SEPARATOR",
        '\u{200B}' => "ZERO WIDTH SPACE",
        '\u{200C}' => "ZERO WIDTH NON-JOINER",
        '\u{200D}' => "ZERO WIDTH JOINER",
        '\u{200E}' => "LEFT-TO-RIGHT MARK",
        '\u{200F}' => "RIGHT-TO-LEFT MARK",
        '\u{2028}' => "LINE SEPARATOR",
        '\u{2029}' => "PARAGRAPH SEPARATOR",
        '\u{202A}' => "LEFT-TO-RIGHT EMBEDDING",
        '\u{202B}' => "RIGHT-TO-LEFT EMBEDDING",
        '\u{202C}' => "POP DIRECTIONAL FORMATTING",
        '\u{202D}' => "LEFT-TO-RIGHT OVERRIDE",
        '\u{202E}' => "RIGHT-TO-LEFT OVERRIDE",
        '\u{2060}' => "WORD JOINER",
        '\u{2061}' => "FUNCTION APPLICATION",
        '\u{2062}' => "INVISIBLE TIMES",
        '\u{2063}' => "INVISIBLE SEPARATOR",
        '\u{2064}' => "INVISIBLE PLUS",
        '\u{2066}' => "LEFT-TO-RIGHT ISOLATE",
        '\u{2067}' => "RIGHT-TO-LEFT ISOLATE",
        '\u{2068}' => "FIRST STRONG ISOLATE",
        '\u{2069}' => "POP DIRECTIONAL ISOLATE",
        '\u{206A}'..='\u{206F}' => "DEPRECATED FORMAT CHARACTER",
        '\u{3164}' => "HANGUL FILLER",
        '\u{FEFF}' => "ZERO WIDTH NO-BREAK SPACE",
        '\u{FFA0}' => "HALFWIDTH HANGUL FILLER",
        '\u{FFF9}' => "INTERLINEAR ANNOTATION ANCHOR",
        '\u{FFFA}' => "INTERLINEAR ANNOTATION SEPARATOR",
        '\u{FFFB}' => "INTERLINEAR ANNOTATION TERMINATOR",
        '\u{1D173}'..='\u{1D17A}' => "MUSICAL SYMBOL FORMAT CHARACTER",
        '\u{E0000}'..='\u{E007F}' => "TAG CHARACTER",
        _ => return None,
    })
}

/// The name of a control character, for a person: `ESCAPE`, `CARRIAGE RETURN`, ...; the
/// less common ones are `CONTROL CHARACTER`.
pub fn control_name(c: char) -> &'static str {
    match c {
        '\0' => "NULL",
        '\u{7}' => "BELL",
        '\u{8}' => "BACKSPACE",
        '\t' => "CHARACTER TABULATION",
        '\n' => "LINE FEED",
        '\u{b}' => "LINE TABULATION",
        '\u{c}' => "FORM FEED",
        '\r' => "CARRIAGE RETURN",
        '\u{1b}' => "ESCAPE",
        '\u{7f}' => "DELETE",
        '\u{85}' => "NEXT LINE",
        '\u{9b}' => "CONTROL SEQUENCE INTRODUCER",
        '\u{9d}' => "OPERATING SYSTEM COMMAND",
        _ => "CONTROL CHARACTER",
    }
}

/// C0 controls (U+0000–U+001F), DEL and C1 controls (U+0080–U+009F): what a terminal acts on.
pub fn is_control(c: char) -> bool {
    c.is_control()
}

/// Whether a reviewer would not see `c` as itself: a control character other than newline and
/// tab, or an invisible or display-changing character ([`invisible_name`]).
pub fn is_hidden(c: char) -> bool {
    (is_control(c) && c != '\n' && c != '\t') || invisible_name(c).is_some()
}

/// `text` safe to print to a terminal: newlines and tabs stay, every other control character
/// becomes a visible escape (`\r`, `\x1b`, `\x7f`, `\u{9b}` for C1), and every invisible or
/// display-changing character becomes `\u{...}` (e.g. `\u{202e}`), so an ANSI sequence, a
/// carriage return or a bidi override in a plan cannot rewrite what a person reads.
/// Backslashes are left alone: the escapes are for a person to read, not to be parsed back.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !is_hidden(c) {
            out.push(c);
            continue;
        }
        match c {
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x80 => {
                // Writing to a String cannot fail.
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// `value` as one line of JSON that is safe to print: what `serde_json` escapes (quotes,
/// backslashes, C0 controls) plus every other character [`is_hidden`] names (DEL, C1 controls,
/// bidi controls, zero-width and tag characters) written as `\uXXXX`, so `--json` output read
/// in a terminal shows what a person would otherwise not see, and parses back to the same value.
pub fn visible_json<T: ?Sized + serde::Serialize>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(128);
    value.serialize(&mut serde_json::Serializer::with_formatter(
        &mut out,
        VisibleJson,
    ))?;
    // The serializer writes UTF-8 and the formatter only ASCII escapes.
    String::from_utf8(out).map_err(serde::ser::Error::custom)
}

/// The compact formatter, but a hidden character inside a string is written as its escape.
struct VisibleJson;

impl serde_json::ser::Formatter for VisibleJson {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let bytes = fragment.as_bytes();
        let mut plain = 0;
        for (at, c) in fragment.char_indices() {
            if !is_hidden(c) {
                continue;
            }
            writer.write_all(&bytes[plain..at])?;
            for unit in c.encode_utf16(&mut [0; 2]) {
                write!(writer, "\\u{unit:04x}")?;
            }
            plain = at + c.len_utf8();
        }
        writer.write_all(&bytes[plain..])
    }
}

/// `arg` as one word for a POSIX shell, for the commands Plandesk prints for a person to paste.
/// Words made only of `[A-Za-z0-9._/-]` (run ids, revision hashes, plain paths) are returned as
/// they are; anything else is single-quoted, a `'` inside written as `'\''`. A control
/// character (newline and tab included) or a character that [`terminal_safe`] would escape is
/// written as an ANSI-C quoted byte (`$'\x1b'`, part of
/// POSIX.1-2024 and of bash, zsh, ksh and dash), so the result is both exact when pasted and
/// safe to print.
pub fn shell_quote(arg: &str) -> Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-');
    if !arg.is_empty() && arg.chars().all(plain) {
        return Cow::Borrowed(arg);
    }
    let mut out = String::with_capacity(arg.len() + 2);
    let mut quoted = false;
    for c in arg.chars() {
        // Newlines and tabs too: a pasted line break would split the command in two.
        if is_hidden(c) || is_control(c) {
            if quoted {
                out.push('\'');
                quoted = false;
            }
            out.push_str("$'");
            let mut utf8 = [0u8; 4];
            for byte in c.encode_utf8(&mut utf8).bytes() {
                let _ = write!(out, "\\x{byte:02x}");
            }
            out.push('\'');
            continue;
        }
        if !quoted {
            out.push('\'');
            quoted = true;
        }
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    if quoted {
        out.push('\'');
    }
    if out.is_empty() {
        out.push_str("''");
    }
    Cow::Owned(out)
}

/// The start of `text`, at most `max_bytes` bytes, ending on a character boundary.
pub fn head(text: &str, max_bytes: usize) -> &str {
    let mut end = text.len().min(max_bytes);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Cuts `text` to at most `max_bytes` bytes on a character boundary, ending it with `note` when
/// anything was cut (for a long block kept whole otherwise, such as a diff).
pub fn cut_to(mut text: String, max_bytes: usize, note: &str) -> String {
    if text.len() > max_bytes {
        text.truncate(head(&text, max_bytes).len());
        text.push_str(note);
    }
    text
}

/// Text as HTML: the five characters that could end an element or an attribute escaped.
pub fn escape_html(text: &str) -> String {
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

/// A one-line summary of `text`: runs of whitespace (newlines included) become one space, the
/// ends are trimmed, and a summary longer than `max_chars` characters is cut on a character
/// boundary to `max_chars - 1` characters followed by `…` (so it is never longer than
/// `max_chars` characters, the ellipsis included).
pub fn short(text: &str, max_chars: usize) -> String {
    let mut flat = String::with_capacity(text.len().min(max_chars.saturating_mul(4)));
    let mut count = 0;
    for word in text.split_whitespace() {
        let space = usize::from(count > 0);
        let len = word.chars().count();
        if count + space + len > max_chars {
            // Too long: keep max_chars - 1 characters and add the ellipsis.
            let room = max_chars.saturating_sub(1);
            if count > room {
                // What is already kept fills the room (it was exactly max_chars long).
                let cut = flat.char_indices().nth(room).map_or(flat.len(), |(i, _)| i);
                flat.truncate(cut);
            } else if count + space < room {
                flat.extend(std::iter::repeat_n(' ', space));
                count += space;
                flat.extend(word.chars().take(room - count));
            }
            if max_chars > 0 {
                let kept = flat.trim_end().len();
                flat.truncate(kept);
                flat.push('…');
            }
            return flat;
        }
        if space == 1 {
            flat.push(' ');
        }
        flat.push_str(word);
        count += space + len;
    }
    flat
}

#[cfg(test)]
pub(crate) mod testing {
    //! Shared settings for the property tests (`prop_*`) of every module.

    /// A proptest configuration running `cases` cases unless `PROPTEST_CASES` says otherwise
    /// (`./x fuzz` sets it high), so `cargo test` stays fast and a long run needs no rebuild.
    pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
        let mut config = proptest::test_runner::Config::default();
        if std::env::var_os("PROPTEST_CASES").is_none() {
            config.cases = cases;
        }
        // Shrinking a huge failing input can take longer than finding it; bound it.
        config.max_shrink_time = 60_000;
        config
    }
}

/// A count as people read it, its thousands apart: `20000` → `20,000`.
pub fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn counts_are_grouped_by_thousands() {
        for (n, text) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (20_000, "20,000"),
            (1_234_567, "1,234,567"),
        ] {
            assert_eq!(grouped(n), text);
        }
    }

    #[test]
    fn a_long_block_is_cut_on_a_character_boundary_and_says_so() {
        assert_eq!(cut_to("abc".into(), 3, " (cut)"), "abc");
        assert_eq!(
            cut_to("aé".into(), 2, " (cut)"),
            "a (cut)",
            "é takes two bytes"
        );
        assert_eq!(cut_to("abcd".into(), 2, " (cut)"), "ab (cut)");
    }

    #[test]
    fn terminal_safe_escapes_every_control_but_newline_and_tab() {
        assert_eq!(terminal_safe("plain\ttext\nline 2"), "plain\ttext\nline 2");
        assert!(matches!(terminal_safe("plain"), Cow::Borrowed(_)));
        assert_eq!(
            terminal_safe("ok\r\x1b[2K\x1b]0;title\x07done"),
            "ok\\r\\x1b[2K\\x1b]0;title\\x07done",
            "CR, CSI and OSC sequences are shown, not obeyed"
        );
        assert_eq!(terminal_safe("\0\x08\x7f"), "\\x00\\x08\\x7f");
        assert_eq!(
            terminal_safe("a\u{9b}31mb\u{85}c"),
            "a\\u{9b}31mb\\u{85}c",
            "C1 controls (CSI, NEL) too"
        );
        for c in (0u32..0x20).chain(0x7f..0xa0).filter_map(char::from_u32) {
            let shown = terminal_safe(&c.to_string()).into_owned();
            if c == '\n' || c == '\t' {
                assert_eq!(shown, c.to_string());
            } else {
                assert!(
                    shown.starts_with('\\') && shown.chars().all(|s| !s.is_control()),
                    "U+{:04X} shown as {shown:?}",
                    c as u32
                );
            }
        }
    }

    #[test]
    fn terminal_safe_shows_invisible_and_bidi_characters() {
        assert_eq!(
            terminal_safe("rm -rf /\u{202e}txt.exe"),
            "rm -rf /\\u{202e}txt.exe"
        );
        assert_eq!(
            terminal_safe("a\u{200b}b\u{2066}c\u{2069}\u{feff}\u{ad}"),
            "a\\u{200b}b\\u{2066}c\\u{2069}\\u{feff}\\u{ad}"
        );
        assert_eq!(
            terminal_safe("x\u{e0041}\u{e007f}"),
            "x\\u{e0041}\\u{e007f}",
            "Unicode tags spell hidden ASCII"
        );
        assert_eq!(
            terminal_safe("naïve — 日本語 ✓"),
            "naïve — 日本語 ✓",
            "ordinary text is untouched"
        );
    }

    #[test]
    fn shell_quote_leaves_plain_ids_and_quotes_the_rest() {
        assert_eq!(shell_quote("run-1f2e.3_a/b"), "run-1f2e.3_a/b");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("$(rm -rf ~)"), "'$(rm -rf ~)'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("x;y|z&`w`"), "'x;y|z&`w`'");
        assert_eq!(shell_quote("~user"), "'~user'", "no tilde expansion");
        assert_eq!(shell_quote("*.md"), "'*.md'", "no globbing");
        assert_eq!(
            shell_quote("a\x1bb\n"),
            "'a'$'\\x1b''b'$'\\x0a'",
            "control characters as ANSI-C bytes: exact and printable"
        );
        assert_eq!(shell_quote("\u{202e}"), "$'\\xe2\\x80\\xae'");
        assert!(!shell_quote("\u{200b}id").chars().any(is_hidden));
    }

    #[test]
    fn shell_quote_round_trips_through_a_real_shell() {
        let words = [
            "plain",
            "a b",
            "it's",
            "'",
            "''",
            "$HOME",
            "a\x1bb",
            "tab\there",
            "new\nline",
            "é\u{202e}",
            "\\",
            "-n",
        ];
        for word in words {
            let script = format!("printf %s {}", shell_quote(word));
            let out = std::process::Command::new("bash")
                .args(["-c", &script])
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8(out.stdout).unwrap(),
                word,
                "bash read {script:?} back differently"
            );
        }
    }

    #[test]
    fn short_flattens_and_cuts_on_characters() {
        assert_eq!(short("  one\n\ttwo  three ", 100), "one two three");
        assert_eq!(short("ééééé", 5), "ééééé", "exactly max fits");
        assert_eq!(short("éééééé", 5), "éééé…", "never longer than max");
        assert_eq!(short("alpha beta gamma", 12), "alpha beta…");
        assert_eq!(short("alpha beta", 7), "alpha…", "no dangling space");
        assert_eq!(short("abc", 0), "");
        assert_eq!(short("abc", 1), "…");
        assert_eq!(
            short("! a", 1),
            "…",
            "found by ./x fuzz: a first word that exactly fills max"
        );
        assert_eq!(short("abc de", 3), "ab…");
        assert_eq!(short("", 3), "");
        let long = "x".repeat(10_000);
        assert_eq!(short(&long, 80).chars().count(), 80);
    }

    #[test]
    fn visible_json_escapes_what_a_terminal_would_hide() {
        // Keys in sorted order, as a map holds them with or without `preserve_order`.
        let value = serde_json::json!({
            "a\u{9b}31m": "a\x1b[2Kb\u{7f}c\u{e0041}",
            "plain": "naïve — 日本語 ✓ \"q\" \\",
            "title": "rm -rf /\u{202e}txt.exe",
        });
        let line = visible_json(&value).unwrap();
        assert_eq!(
            line,
            r#"{"a\u009b31m":"a\u001b[2Kb\u007fc\udb40\udc41","plain":"naïve — 日本語 ✓ \"q\" \\","title":"rm -rf /\u202etxt.exe"}"#
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&line).unwrap(),
            value
        );
    }

    proptest! {
        #![proptest_config(testing::proptest_config(128))]

        /// Whatever the text, nothing a terminal acts on survives, and plain text is untouched.
        #[test]
        fn prop_terminal_safe_leaves_nothing_hidden(text in any::<String>()) {
            let safe = terminal_safe(&text);
            prop_assert!(!safe.chars().any(is_hidden), "{safe:?}");
            if !text.chars().any(is_hidden) {
                prop_assert_eq!(safe.as_ref(), text.as_str());
            }
        }

        /// Whatever the strings, `--json` output hides nothing and reads back as written.
        #[test]
        fn prop_visible_json_round_trips(key in any::<String>(), text in any::<String>()) {
            let value = serde_json::json!({ key: [text] });
            let line = visible_json(&value).unwrap();
            prop_assert!(!line.chars().any(|c| is_hidden(c) || is_control(c)), "{line:?}");
            prop_assert_eq!(serde_json::from_str::<serde_json::Value>(&line).unwrap(), value);
        }

        /// Quoted words are printable and are one plain word or start with a quote.
        #[test]
        fn prop_shell_quote_is_printable(word in any::<String>()) {
            let quoted = shell_quote(&word);
            prop_assert!(!quoted.chars().any(|c| is_hidden(c) || is_control(c)), "{quoted:?}");
            prop_assert!(!quoted.is_empty());
        }

        /// A summary is never longer than asked and keeps every word it does not cut.
        #[test]
        fn prop_short_is_bounded(text in any::<String>(), max in 0usize..200) {
            let summary = short(&text, max);
            prop_assert!(summary.chars().count() <= max, "{summary:?}");
            let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
            if flat.chars().count() <= max {
                prop_assert_eq!(summary, flat);
            } else {
                prop_assert!(summary.ends_with('…') || max == 0);
            }
        }
    }
}
