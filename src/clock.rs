//! Time and identifiers are passed in, never read in business logic, so a scripted run with a
//! fixed clock and sequential ids produces the same bytes every time.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// An instant for people, in UTC: `2026-12-03 06:49:10 UTC`.
pub fn utc(at: Millis) -> String {
    let (date, time) = civil(at);
    format!("{date} {time} UTC")
}

/// An instant for programs, ISO 8601 in UTC with milliseconds: `2026-12-03T06:49:10.123Z`.
pub fn iso8601(at: Millis) -> String {
    let (date, time) = civil(at);
    format!("{date}T{time}.{:03}Z", at.rem_euclid(1000))
}

/// `2026-12-03` and `06:49:10` of an instant, in UTC.
fn civil(at: Millis) -> (String, String) {
    let secs = at.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        format!("{year:04}-{month:02}-{day:02}"),
        format!(
            "{:02}:{:02}:{:02}",
            rest / 3600,
            rest % 3600 / 60,
            rest % 60
        ),
    )
}

pub trait Clock: Send + Sync + fmt::Debug {
    fn now(&self) -> Millis;
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Millis {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }
}

/// A clock that starts at a fixed instant and advances one millisecond per reading.
#[derive(Debug)]
pub struct SteppingClock(AtomicU64);

impl SteppingClock {
    pub fn starting_at(millis: u64) -> Self {
        Self(AtomicU64::new(millis))
    }
}

impl Clock for SteppingClock {
    fn now(&self) -> Millis {
        i64::try_from(self.0.fetch_add(1, Ordering::Relaxed)).unwrap_or(i64::MAX)
    }
}

/// Makes the ids of runs, messages and tool calls. `kind` is a short prefix such as `msg`.
pub trait IdSource: Send + Sync + fmt::Debug {
    fn next_id(&self, kind: &str) -> String;
}

/// Random (UUID v4) ids: unique across processes sharing one store.
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomIds;

impl IdSource for RandomIds {
    fn next_id(&self, kind: &str) -> String {
        let id = uuid::Uuid::new_v4().simple().to_string();
        if kind == "run" {
            // Run ids are typed by people (`plandesk approve RUN_ID`): keep them short but unique enough.
            id[..16].to_owned()
        } else {
            format!("{kind}-{}", &id[..16])
        }
    }
}

/// `kind-1`, `kind-2`, ...: deterministic ids for tests.
#[derive(Debug, Default)]
pub struct SequentialIds(AtomicU64);

impl IdSource for SequentialIds {
    fn next_id(&self, kind: &str) -> String {
        format!("{kind}-{}", self.0.fetch_add(1, Ordering::Relaxed) + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_read_as_utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_796_280_550_999), "2026-12-03 06:49:10 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(-1_000), "1969-12-31 23:59:59 UTC");
        assert_eq!(iso8601(1_796_280_550_999), "2026-12-03T06:49:10.999Z");
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
    }
}
