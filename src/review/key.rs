//! How a person names a revision: its number (`12`, or `#12`), or a prefix of its sha256 of at
//! least [`MIN_SHA_PREFIX`] hex digits. A key that could be either is resolved only when it
//! names one revision.

use super::ReviewError;

/// The shortest sha256 prefix accepted: one in 4 billion plans shares it by chance.
pub const MIN_SHA_PREFIX: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevisionKey {
    Id(i64),
    Sha(String),
    /// All digits and long enough to be a sha prefix: the number, or the hash, whichever exists.
    Either(i64, String),
}

impl RevisionKey {
    pub fn parse(key: &str) -> Result<Self, ReviewError> {
        let key = key.trim().to_ascii_lowercase();
        let bad = || ReviewError::BadRevisionKey { key: key.clone() };
        if let Some(number) = key.strip_prefix('#') {
            return number.parse().map(RevisionKey::Id).map_err(|_| bad());
        }
        let is_number = !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit());
        if is_number && key.len() < MIN_SHA_PREFIX {
            return key.parse().map(RevisionKey::Id).map_err(|_| bad());
        }
        let sha = sha_prefix(&key)?;
        Ok(match key.parse() {
            Ok(id) if is_number => RevisionKey::Either(id, sha),
            _ => RevisionKey::Sha(sha),
        })
    }
}

/// A sha256 prefix a decision may be bound to: 8 to 64 hex digits.
pub fn sha_prefix(key: &str) -> Result<String, ReviewError> {
    let key = key.trim().to_ascii_lowercase();
    let hex = key.bytes().all(|b| b.is_ascii_hexdigit());
    if !hex || key.len() < MIN_SHA_PREFIX || key.len() > 64 {
        return Err(ReviewError::BadRevisionKey { key });
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_numbers_are_revision_numbers() {
        assert_eq!(RevisionKey::parse("12").unwrap(), RevisionKey::Id(12));
        assert_eq!(
            RevisionKey::parse("#12345678").unwrap(),
            RevisionKey::Id(12_345_678)
        );
    }

    #[test]
    fn long_digit_strings_may_be_either() {
        assert_eq!(
            RevisionKey::parse("12345678").unwrap(),
            RevisionKey::Either(12_345_678, "12345678".into())
        );
    }

    #[test]
    fn sha_prefixes_need_eight_hex_digits() {
        assert_eq!(
            RevisionKey::parse("ABCDEF01").unwrap(),
            RevisionKey::Sha("abcdef01".into())
        );
        assert!(RevisionKey::parse("abc").is_err(), "too short");
        assert!(RevisionKey::parse("a").is_err(), "one character");
        assert!(RevisionKey::parse("xyz12345").is_err(), "not hex");
        assert!(RevisionKey::parse("").is_err());
        assert!(sha_prefix("1234567").is_err());
        assert!(sha_prefix(&"a".repeat(65)).is_err());
        assert_eq!(sha_prefix("  DEADBEEF ").unwrap(), "deadbeef");
    }
}
