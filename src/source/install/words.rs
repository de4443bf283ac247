//! Reading back the command line of a hook: the words of one simple command, as a POSIX shell
//! reads them, so that ours is recognised whatever the binary's path, and nothing else is.

/// The words of a command line that is one simple command of literal words, as a POSIX shell
/// reads them: blanks split words; `'…'`, `"…"`, `\x` and `$'…'` (which [`shell_quote`] writes
/// for control characters) quote. Anything a shell would give another meaning (an operator such
/// as `;` or `|`, an expansion, a glob, a comment, an assignment) or an unclosed quote gives
/// `None`: such a command is not one we wrote. Unquoted, only the characters [`shell_quote`]
/// leaves bare (and a few other inert ones) are taken.
pub(crate) fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    // Bytes, not chars: `$'\xe2\x80\xae'` spells a character one byte at a time.
    let mut word: Option<Vec<u8>> = None;
    let mut chars = line.chars().peekable();
    let push = |word: &mut Option<Vec<u8>>, c: char| {
        let mut utf8 = [0u8; 4];
        word.get_or_insert_with(Vec::new)
            .extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
    };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => words.extend(word.take()),
            '\'' => {
                word.get_or_insert_with(Vec::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => push(&mut word, c),
                    }
                }
            }
            '"' => {
                word.get_or_insert_with(Vec::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' => return None,
                        '\\' => match chars.next()? {
                            '\n' => {}
                            c @ ('$' | '`' | '"' | '\\') => push(&mut word, c),
                            c => {
                                push(&mut word, '\\');
                                push(&mut word, c);
                            }
                        },
                        c => push(&mut word, c),
                    }
                }
            }
            '\\' => match chars.next()? {
                '\n' => {}
                c => push(&mut word, c),
            },
            '$' if chars.peek() == Some(&'\'') => {
                chars.next();
                let bytes = word.get_or_insert_with(Vec::new);
                ansi_c_quoted(&mut chars, bytes)?;
            }
            c if c.is_ascii_alphanumeric() || "._/-+,:@%^".contains(c) => push(&mut word, c),
            _ => return None,
        }
    }
    words.extend(word);
    Some(
        words
            .into_iter()
            .map(|w| String::from_utf8_lossy(&w).into_owned())
            .collect(),
    )
}

/// The rest of a `$'…'` word part, after its opening quote, decoded into `out`.
fn ansi_c_quoted(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    out: &mut Vec<u8>,
) -> Option<()> {
    let mut utf8 = [0u8; 4];
    loop {
        let c = chars.next()?;
        if c == '\'' {
            return Some(());
        }
        if c != '\\' {
            out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
            continue;
        }
        let escaped = chars.next()?;
        let byte = match escaped {
            'a' => 0x07,
            'b' => 0x08,
            'e' | 'E' => 0x1b,
            'f' => 0x0c,
            'n' => b'\n',
            'r' => b'\r',
            't' => b'\t',
            'v' => 0x0b,
            '\\' | '\'' | '"' | '?' => escaped as u8,
            'x' => {
                let mut value = 0u32;
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(16)) {
                        Some(digit) => {
                            value = value * 16 + digit;
                            chars.next();
                        }
                        None => break,
                    }
                }
                value as u8
            }
            '0'..='7' => {
                let mut value = escaped.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(digit) => {
                            value = value * 8 + digit;
                            chars.next();
                        }
                        None => break,
                    }
                }
                value as u8
            }
            other => {
                // Kept as written, as bash does with an escape it does not know.
                out.push(b'\\');
                out.extend_from_slice(other.encode_utf8(&mut utf8).as_bytes());
                continue;
            }
        };
        out.push(byte);
    }
}
