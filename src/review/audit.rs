//! Checking the audit trail, and its exports. The chain (each entry hashes to its `hash` and
//! carries the one before's) shows an entry changed, or taken from between others; the head
//! recorded outside the store ([`AuditAnchor`]) shows entries deleted from its end, which the
//! chain cannot: what is left of a cut chain still links up. An export carries its head in its
//! first line, for the same reason.
//!
//! What cannot be checked is said, never passed over: no record of the head yet, a team store's
//! entries newer than this machine's record.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{plan_sha256, Review, ReviewError};
use crate::audit::{AuditAnchor, AuditHead, AuditRow, ANSWER_PLAN_IS_REVISION};

/// What `--verify` found, and what it could not check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditCheck {
    pub entries: usize,
    /// The first entry that breaks the chain, and how.
    pub broken: Option<(i64, String)>,
    /// The trail's end against the head recorded for it (outside the store, or in an export's
    /// first line).
    pub head: HeadCheck,
    /// Nothing was found changed or removed (what could not be checked is in `summary`).
    pub holds: bool,
    /// What was checked and found, in a sentence or three for people.
    pub summary: String,
}

/// The trail's end against the head recorded for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum HeadCheck {
    /// The trail holds the recorded entry (`recorded` is its number): none up to it was
    /// removed.
    Reached { recorded: i64 },
    /// The trail ends before the recorded entry: its `removed` newest entries are gone.
    Cut { recorded: i64, removed: i64 },
    /// The trail's entry `recorded` is another one than was recorded: entries were removed and
    /// others written in their place.
    Replaced { recorded: i64 },
    /// An export holds `added` entries after the one its head line names.
    Extended { recorded: i64, added: i64 },
    /// No head was recorded for this store here yet.
    NotRecorded,
    /// This store keeps no record of its head here.
    NotKept,
    /// The record of the head cannot be read.
    Unreadable { message: String },
    /// An export without its head line.
    NoHeadLine,
}

/// What was checked, for the words of the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checked {
    /// The store's trail; `team`: a team store, appended to from other machines too.
    Store { team: bool },
    /// An export (a file).
    Export,
}

/// The first line of an export: the trail's head when it was exported.
#[derive(Debug, Serialize, Deserialize)]
struct HeadLine {
    head: AuditHead,
}

impl Review {
    /// Checks the whole audit trail: its chain (the first entry whose hash or link does not
    /// hold), that each plan an answer names by its revision's hash (`answerPlan`: the plan is
    /// kept once, with the revision, outside the chain) is still what that hash says, and that
    /// its end is not before the head recorded outside the store.
    pub async fn verify_audit(&self) -> Result<AuditCheck, ReviewError> {
        Ok(self.checked_audit().await?.1)
    }

    /// The whole audit trail, oldest first, and what [`Review::verify_audit`] finds of it. A
    /// trail found whole moves the record of its head forward to its newest entry, so that
    /// removing any entry seen here is found from then on.
    pub async fn checked_audit(&self) -> Result<(Vec<AuditRow>, AuditCheck), ReviewError> {
        let anchor = self.store.audit_anchor();
        // What this process appended is recorded on the anchor's own thread: waited for, so
        // that the check reads the record this process left.
        if let Some(anchor) = anchor {
            anchor.settle();
        }
        // The record is read before the trail: it only moves forward, and only once entries
        // are committed, so it cannot name an entry newer than the trail read after it.
        let recorded = anchor.map(AuditAnchor::read);
        let trail = self.store.audit(None).await?;
        let broken = match chain_broken(&trail) {
            Some(broken) => Some(broken),
            None => self.plan_broken(&trail).await?,
        };
        let head = match recorded {
            None => HeadCheck::NotKept,
            Some(Ok(None)) => HeadCheck::NotRecorded,
            Some(Ok(Some(recorded))) => against(&trail, &recorded),
            Some(Err(err)) => HeadCheck::Unreadable {
                message: err.to_string(),
            },
        };
        let team = anchor.is_some_and(AuditAnchor::is_team);
        let check = AuditCheck::new(trail.len(), broken, head, Checked::Store { team });
        if let Some(anchor) = anchor.filter(|_| check.holds) {
            let entries: Vec<(i64, String)> =
                trail.iter().map(|e| (e.id, e.hash.clone())).collect();
            anchor.advance_or_warn(&entries);
        }
        Ok((trail, check))
    }

    /// The first entry naming a plan revision by its hash (a submission, an edit, a comment,
    /// a decision and its answer) whose revision no longer hashes so, or is gone: every row
    /// kept under that hash must still hold that plan. The plans are kept outside the chain,
    /// so this is what shows one changed after it was submitted or decided.
    async fn plan_broken(&self, trail: &[AuditRow]) -> Result<Option<(i64, String)>, ReviewError> {
        let mut held = HashSet::new();
        for entry in trail {
            let Some(sha) = entry.revision_sha.as_deref() else {
                continue;
            };
            if held.contains(sha) {
                continue;
            }
            let rows = self.store.revisions_by_sha(sha).await?;
            let rows: Vec<_> = rows.iter().filter(|r| r.sha256 == sha).collect();
            let holds =
                !rows.is_empty() && rows.iter().all(|r| plan_sha256(&r.title, &r.body) == sha);
            if !holds {
                let names = match entry.data.get("answerPlan").and_then(Value::as_str) {
                    Some(ANSWER_PLAN_IS_REVISION) => "the plan its answer names",
                    _ => "the plan it names",
                };
                return Ok(Some((
                    entry.id,
                    format!(
                        "{names} (revision {}) was changed or is gone",
                        sha.get(..12).unwrap_or(sha)
                    ),
                )));
            }
            held.insert(sha);
        }
        Ok(None)
    }
}

/// Walks the chain: each entry must hash to its `hash` and link to the one before. Its end is
/// not checked (see [`Review::verify_audit`]).
pub fn check_chain(rows: &[AuditRow]) -> AuditCheck {
    AuditCheck::new(
        rows.len(),
        chain_broken(rows),
        HeadCheck::NotKept,
        Checked::Store { team: false },
    )
}

/// The first entry that breaks the chain, and how.
fn chain_broken(rows: &[AuditRow]) -> Option<(i64, String)> {
    let mut prev = String::new();
    for (expected_id, row) in (1..).zip(rows) {
        let problem = if row.id != expected_id {
            Some(format!(
                "entry {expected_id} is missing (the next one is {})",
                row.id
            ))
        } else if row.prev_hash != prev {
            Some("it does not link to the entry before it".to_owned())
        } else if row.expected_hash() != row.hash {
            Some("its content does not match its hash (it was changed)".to_owned())
        } else {
            None
        };
        if let Some(problem) = problem {
            return Some((row.id, problem));
        }
        prev = row.hash.clone();
    }
    None
}

/// The trail's end against a recorded head.
fn against(rows: &[AuditRow], recorded: &AuditHead) -> HeadCheck {
    let newest = rows.last().map_or(0, |e| e.id);
    if recorded.entries == 0 {
        return HeadCheck::Reached { recorded: 0 };
    }
    match rows.binary_search_by_key(&recorded.entries, |e| e.id) {
        Ok(at) if rows[at].hash == recorded.hash => HeadCheck::Reached {
            recorded: recorded.entries,
        },
        Err(_) if newest < recorded.entries => HeadCheck::Cut {
            recorded: recorded.entries,
            removed: recorded.entries - newest,
        },
        // Another entry by that number, or none with newer ones after (the chain says where).
        _ => HeadCheck::Replaced {
            recorded: recorded.entries,
        },
    }
}

/// The whole trail as an export (JSON lines): first its head (how many entries, the newest
/// one's hash), so that entries cut from the file's end are found, then each entry, oldest
/// first.
pub fn write_export(trail: &[AuditRow], out: &mut impl std::io::Write) -> std::io::Result<()> {
    let head = HeadLine {
        head: AuditHead {
            entries: trail.last().map_or(0, |e| e.id),
            hash: trail.last().map(|e| e.hash.clone()).unwrap_or_default(),
        },
    };
    serde_json::to_writer(&mut *out, &head)?;
    writeln!(out)?;
    for entry in trail {
        serde_json::to_writer(&mut *out, entry)?;
        writeln!(out)?;
    }
    Ok(())
}

/// Checks an export ([`write_export`]'s text): its chain, and its end against the head its
/// first line names. The plans its decisions name are kept in the store, not in the export,
/// and are not checked here.
pub fn check_export(text: &str) -> AuditCheck {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .peekable();
    let head = lines
        .peek()
        .and_then(|(_, line)| serde_json::from_str::<HeadLine>(line).ok())
        .map(|line| line.head);
    if head.is_some() {
        lines.next();
    }
    let mut rows = Vec::new();
    for (at, line) in lines {
        match serde_json::from_str::<AuditRow>(line) {
            Ok(row) => rows.push(row),
            Err(err) => {
                let id = rows.last().map_or(1, |e: &AuditRow| e.id + 1);
                let why = format!("line {} is not an audit entry ({err})", at + 1);
                return AuditCheck::new(
                    rows.len(),
                    Some((id, why)),
                    head_of(&rows, head.as_ref()),
                    Checked::Export,
                );
            }
        }
    }
    let broken = chain_broken(&rows);
    let head = head_of(&rows, head.as_ref());
    AuditCheck::new(rows.len(), broken, head, Checked::Export)
}

/// An export's end against its head line.
fn head_of(rows: &[AuditRow], head: Option<&AuditHead>) -> HeadCheck {
    let Some(head) = head else {
        return HeadCheck::NoHeadLine;
    };
    let newest = rows.last().map_or(0, |e| e.id);
    match against(rows, head) {
        HeadCheck::Reached { recorded } if newest > recorded => HeadCheck::Extended {
            recorded,
            added: newest - recorded,
        },
        check => check,
    }
}

impl AuditCheck {
    fn new(entries: usize, broken: Option<(i64, String)>, head: HeadCheck, of: Checked) -> Self {
        // Nothing wrong found with the end: the recorded entry is there, or, for the store,
        // there is nothing to check it against (the summary says so). A record that cannot
        // be read is something wrong. An export must end at the head its first line names.
        let end_holds = matches!(
            (&head, of),
            (HeadCheck::Reached { .. }, _)
                | (
                    HeadCheck::NotRecorded | HeadCheck::NotKept,
                    Checked::Store { .. }
                )
        );
        let summary = summary(entries, broken.as_ref(), &head, of);
        Self {
            entries,
            holds: broken.is_none() && end_holds,
            broken,
            head,
            summary,
        }
    }
}

/// "1 entry", "5 entries".
fn count(n: i64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// What a check found, for people: what holds, what was found, and what could not be told.
fn summary(
    entries: usize,
    broken: Option<&(i64, String)>,
    head: &HeadCheck,
    of: Checked,
) -> String {
    let n = i64::try_from(entries).unwrap_or(i64::MAX);
    let (trail, the_record) = match of {
        Checked::Store { team: false } => {
            ("The audit trail", "the record kept outside the database")
        }
        Checked::Store { team: true } => ("The audit trail", "this machine's record"),
        Checked::Export => ("The export", "its head line"),
    };
    let newest = |n: i64| {
        if n == 0 {
            "it has no entry left".to_owned()
        } else {
            format!("it ends at entry #{n}")
        }
    };
    // What is wrong with the end, if anything: said even when the chain is broken too.
    let end = match head {
        HeadCheck::Cut { recorded, removed } => Some(format!(
            "{trail} was cut: its {} ({}; {the_record} names entry #{recorded}).",
            if *removed == 1 {
                "newest entry was removed".to_owned()
            } else {
                format!("{removed} newest entries were removed")
            },
            newest(recorded - removed),
        )),
        HeadCheck::Replaced { recorded } => Some(format!(
            "{trail}'s newest entries were replaced: entry #{recorded} is not the one \
             {the_record} names (entries were removed and others written in their place)."
        )),
        HeadCheck::Extended { recorded, added } => Some(format!(
            "{trail} has {} after entry #{recorded}, the newest its head line names: they were \
             added to it.",
            count(*added, "entry", "entries")
        )),
        _ => None,
    };
    if let Some((id, why)) = broken {
        let broken = format!("{trail} is broken at entry #{id}: {why}.");
        return match end {
            Some(end) => format!("{broken} {end}"),
            None => broken,
        };
    }
    if let Some(end) = end {
        return end;
    }
    let holds = format!(
        "{trail} holds: {}, chain intact",
        count(n, "entry", "entries")
    );
    let cannot = "whether its newest entries were removed cannot be told";
    match (head, of) {
        (HeadCheck::Reached { .. }, Checked::Export) => format!(
            "{holds}, ending at the entry its head line names. (The plans its decisions name \
             are kept in the store, not in the export, and were not checked.)"
        ),
        (HeadCheck::NoHeadLine, _) => format!(
            "{trail} has {}, chain intact, but no head line: {cannot} (it was cut, or made by \
             an older Plandesk).",
            count(n, "entry", "entries")
        ),
        (HeadCheck::Reached { recorded }, Checked::Store { team: false }) if *recorded == n => {
            format!(
                "{holds}. None was changed or removed: its newest entry is the one recorded \
                 outside the database."
            )
        }
        (HeadCheck::Reached { recorded }, Checked::Store { team: true }) if *recorded == n => {
            format!(
                "{holds}. None that this machine added or checked was changed or removed: \
                 entry #{recorded}, the newest it recorded, is still there. Entries that other \
                 machines add are vouched for here once this machine checks them."
            )
        }
        (HeadCheck::Reached { recorded }, Checked::Store { team }) => format!(
            "{holds}. Entry #{recorded}, the newest {}, is still there; {} came after \
             it ({}), so {cannot}.",
            if team {
                "this machine recorded"
            } else {
                "recorded outside the database"
            },
            if recorded + 1 == n {
                format!("entry #{n}")
            } else {
                format!("entries #{} to #{n}", recorded + 1)
            },
            if team {
                "from other machines, or before this machine kept a record"
            } else {
                "written before the record was kept, or by a process stopped just after"
            },
        ),
        (HeadCheck::NotRecorded, Checked::Store { team: false }) => format!(
            "{holds}: none was changed. But {cannot}: no record of its end had been kept \
             outside the database yet."
        ),
        (HeadCheck::NotRecorded, _) => format!(
            "{holds}: none was changed. But {cannot}: this machine had kept no record of its \
             end yet, and other machines add entries too."
        ),
        (HeadCheck::Unreadable { message }, _) => format!(
            "{trail} has {}, chain intact, but {the_record} cannot be read ({message}): {cannot}, \
             and nothing is recorded there until it is moved aside (look at it first: a cut \
             trail may have left it so).",
            count(n, "entry", "entries")
        ),
        _ => format!(
            "{holds}: none was changed. But {cannot}: no record of its end is kept for this \
             store."
        ),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::audit::audit_hash;
    use serde_json::json;

    fn trail(n: i64) -> Vec<AuditRow> {
        let mut rows: Vec<AuditRow> = Vec::new();
        for id in 1..=n {
            let prev = rows.last().map(|e| e.hash.clone()).unwrap_or_default();
            let data = json!({"n": id});
            let hash = audit_hash(&prev, id, id, "ana", "cli", "r", "commented", None, &data);
            rows.push(AuditRow {
                id,
                at: id,
                actor: "ana".into(),
                process: "cli".into(),
                run_id: "r".into(),
                kind: "commented".into(),
                revision_sha: None,
                data,
                prev_hash: prev,
                hash,
            });
        }
        rows
    }

    fn export(rows: &[AuditRow]) -> String {
        let mut out = Vec::new();
        write_export(rows, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn an_export_round_trips_and_its_end_is_checked() {
        let whole = export(&trail(4));
        let check = check_export(&whole);
        assert!(check.holds, "{check:?}");
        assert_eq!(check.head, HeadCheck::Reached { recorded: 4 });

        let lines: Vec<&str> = whole.lines().collect();
        let cut = check_export(&lines[..4].join("\n"));
        assert_eq!(
            cut.head,
            HeadCheck::Cut {
                recorded: 4,
                removed: 1
            },
            "one entry cut from the end"
        );
        assert!(!cut.holds && cut.summary.contains("newest entry was removed"));

        let mut longer = export(&trail(5));
        let first_newline = longer.find('\n').unwrap();
        longer.replace_range(..first_newline, lines[0]);
        let extended = check_export(&longer);
        assert_eq!(
            extended.head,
            HeadCheck::Extended {
                recorded: 4,
                added: 1
            },
            "an entry added after the head it names"
        );
        assert!(!extended.holds);

        let garbled = check_export(&whole.replace("\"actor\"", "\"who\""));
        assert_eq!(garbled.broken.as_ref().map(|b| b.0), Some(1), "{garbled:?}");
        assert!(!garbled.holds);

        let empty = check_export(&export(&[]));
        assert!(empty.holds, "an empty trail's export holds: {empty:?}");
    }

    #[test]
    fn the_trails_end_is_checked_against_the_recorded_head() {
        let rows = trail(5);
        let head = |n: i64| AuditHead {
            entries: n,
            hash: rows[usize::try_from(n - 1).unwrap()].hash.clone(),
        };
        assert_eq!(against(&rows, &head(5)), HeadCheck::Reached { recorded: 5 });
        assert_eq!(against(&rows, &head(3)), HeadCheck::Reached { recorded: 3 });
        assert_eq!(
            against(&rows[..3], &head(5)),
            HeadCheck::Cut {
                recorded: 5,
                removed: 2
            }
        );
        let other = AuditHead {
            entries: 5,
            hash: "another".into(),
        };
        assert_eq!(against(&rows, &other), HeadCheck::Replaced { recorded: 5 });
        assert_eq!(
            against(&[], &head(2)),
            HeadCheck::Cut {
                recorded: 2,
                removed: 2
            }
        );
    }

    /// Where the end could not be checked, the words never say that nothing was removed; a
    /// record that cannot be read is a failed check.
    #[test]
    fn what_could_not_be_checked_is_said() {
        for head in [
            HeadCheck::NotRecorded,
            HeadCheck::NotKept,
            HeadCheck::Unreadable {
                message: "garbled".into(),
            },
        ] {
            for team in [false, true] {
                let check = AuditCheck::new(5, None, head.clone(), Checked::Store { team });
                let unreadable = matches!(head, HeadCheck::Unreadable { .. });
                assert_eq!(check.holds, !unreadable, "{}", check.summary);
                assert!(
                    check.summary.contains("cannot be told")
                        && !check.summary.contains("or removed"),
                    "it must not claim that none was removed: {}",
                    check.summary
                );
            }
        }
        let behind = AuditCheck::new(
            7,
            None,
            HeadCheck::Reached { recorded: 5 },
            Checked::Store { team: true },
        );
        assert!(
            behind.summary.contains("entries #6 to #7")
                && behind.summary.contains("cannot be told"),
            "{}",
            behind.summary
        );
    }
}
