//! Time and identifiers are passed in, never read in business logic, so a scripted run with a
//! fixed clock and sequential ids produces the same bytes every time.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

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
