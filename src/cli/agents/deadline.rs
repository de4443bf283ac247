//! Hooks' and servers' deadlines: a duration as people write it, and the one configured (on
//! the command line or in the environment). A hook's, never past the moment its agent stops
//! waiting, is `plandesk::source::deadline`'s.

use std::time::Duration;

use anyhow::{bail, Result};

/// Where the deadline can also come from, for hooks installed without one.
pub const DEADLINE_ENV: &str = "PLANDESK_HOOK_DEADLINE";

/// A duration as people write it: `30s`, `10m`, `2h`, `1h 30m` (humantime's forms), or a bare
/// number of seconds (how the README first documented deadlines). Never 0: a deadline of
/// nothing would deny every plan before anyone saw it.
pub fn parse_duration(text: &str) -> Result<Duration> {
    let text = text.trim();
    let duration = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse().map(Duration::from_secs).ok()
    } else {
        humantime::parse_duration(text).ok()
    };
    match duration {
        None => bail!("`{text}` is not a duration such as 30s, 10m, 2h or 1h 30m"),
        Some(d) if d.is_zero() => bail!("a deadline must be longer than 0 s"),
        Some(d) => Ok(d),
    }
}

/// The deadline given on the command line, else in [`DEADLINE_ENV`].
pub(super) fn configured_deadline(deadline: Option<String>) -> Result<Option<Duration>> {
    let deadline = deadline.or_else(|| std::env::var(DEADLINE_ENV).ok().filter(|d| !d.is_empty()));
    deadline.as_deref().map(parse_duration).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_read_as_people_write_them() {
        for (text, secs) in [
            ("30s", 30),
            ("10m", 600),
            ("2h", 7200),
            ("1h 30m", 5400),
            ("1h30m", 5400),
            ("90", 90),
            (" 45 ", 45),
            ("1.5h", 5400),
            ("1day", 86_400),
        ] {
            assert_eq!(
                parse_duration(text).unwrap(),
                Duration::from_secs(secs),
                "{text:?}"
            );
        }
        assert_eq!(
            parse_duration("1500ms").unwrap(),
            Duration::from_millis(1500)
        );
    }

    #[test]
    fn a_duration_that_is_not_one_or_is_nothing_is_refused() {
        for text in [
            "",
            "soon",
            "10x",
            "-5s",
            "2h soon",
            "s",
            "99999999999999999999",
        ] {
            let err = parse_duration(text).unwrap_err().to_string();
            assert!(
                err.contains("is not a duration such as 30s, 10m, 2h or 1h 30m"),
                "{text:?}: {err}"
            );
        }
        for text in ["0", "0s", "0h 0m"] {
            let err = parse_duration(text).unwrap_err().to_string();
            assert_eq!(err, "a deadline must be longer than 0 s", "{text:?}");
        }
    }
}
