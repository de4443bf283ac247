//! Words as plan search sees them, for stores without SQLite's FTS5 (the `unicode61` tokenizer
//! with diacritics removed): runs of letters and digits, lowercased, accents folded. A search
//! matches when its words appear in a row in the title or in the body, the last one as the
//! start of a word.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// The words of `text`, in order.
pub fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    for c in text.nfd() {
        if is_combining_mark(c) {
            continue;
        }
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// The words of what a person typed, as one phrase to look for.
pub fn phrase(typed: &[String]) -> Vec<String> {
    typed.iter().flat_map(|t| words(t)).collect()
}

/// Whether `phrase` occurs in `text`'s words in a row, its last word as a prefix. An empty
/// phrase matches nothing.
pub fn has_phrase(text: &str, phrase: &[String]) -> bool {
    let Some((last, whole)) = phrase.split_last() else {
        return false;
    };
    let words = words(text);
    words.windows(phrase.len()).any(|window| {
        window[..whole.len()] == *whole
            && window.last().is_some_and(|w| w.starts_with(last.as_str()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(words: &[&str]) -> Vec<String> {
        phrase(&words.iter().map(|w| w.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn words_are_letters_and_digits_lowercased_without_accents() {
        assert_eq!(
            words("Crème brûlée: v2.1 — src/Main.rs, don't!"),
            ["creme", "brulee", "v2", "1", "src", "main", "rs", "don", "t"]
        );
        assert_eq!(words("日本語 テキスト"), ["日本語", "テキスト"]);
        assert!(words(" \n\t*#`").is_empty());
    }

    #[test]
    fn a_phrase_is_words_in_a_row_the_last_a_prefix() {
        let text = "Add a retry loop to the HTTP client";
        assert!(has_phrase(text, &typed(&["retry", "lo"])));
        assert!(has_phrase(text, &typed(&["http CLIENT"])));
        assert!(!has_phrase(text, &typed(&["Héttp"])));
        assert!(!has_phrase(text, &typed(&["retry", "client"])));
        assert!(!has_phrase(text, &typed(&["etry"])));
        assert!(!has_phrase(text, &[]));
        assert!(has_phrase("Éléphant rose", &typed(&["elephant r"])));
    }
}
