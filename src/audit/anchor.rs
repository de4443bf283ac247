//! The audit trail's head, recorded outside the store: how many entries it had and the newest
//! one's hash, in a small file of the data folder. The chain alone shows an entry changed, or
//! taken from between others, but not entries deleted from its end (what is left still links
//! up): whoever can write to the database can drop the append-only guard and delete the newest
//! entries. The record here is what `audit --verify` checks the trail's end against.
//!
//! Every process that appends writes it, after its entries are committed (never before: a
//! record ahead of the database would accuse it of a cut that never happened). Several
//! processes append at once, so the record only moves forward, under a lock file: to a newer
//! head, and only when the trail that head ends still holds the recorded entry (a trail that
//! no longer does was cut or rewritten, and the record is the evidence of it: kept as is).
//!
//! A SQLite store's record is in its own data folder, beside the database. A team's
//! PostgreSQL store is appended to from every machine: each data folder keeps its own record,
//! which vouches for the entries this machine wrote or checked, not for those others added
//! after them.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The record of a SQLite store (one per data folder).
const LOCAL_FILE: &str = "audit-head.json";
/// Held while a record is read and replaced, so that two appenders never move it backwards.
const LOCK_FILE: &str = "audit-head.lock";
/// The most of a record read (one is ~100 bytes).
const MAX_RECORD: u64 = 4096;

/// The head of the audit trail: how many entries it has (entries are numbered from 1, so the
/// newest is entry `entries`) and the newest one's hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditHead {
    pub entries: i64,
    pub hash: String,
}

/// Why the record could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum AnchorError {
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("{path} is not a record of the audit trail's end ({message})")]
    Unreadable { path: PathBuf, message: String },
}

/// What [`AuditAnchor::advance`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advance {
    /// The record names the given head now.
    Moved,
    /// The record already names that head or a newer one.
    Ahead,
    /// The given entries do not hold the recorded one: the trail they were read from was cut
    /// or rewritten since it was recorded. The record is left as it is.
    Disagrees,
}

/// The file a store's audit head is recorded in, and how it is read and moved forward.
#[derive(Debug)]
struct Record {
    path: PathBuf,
    lock: PathBuf,
    /// A team store: other machines append too.
    team: bool,
    /// A failure to keep the record is said once per store, not on every append.
    warned: AtomicBool,
}

impl Record {
    /// The record of the SQLite store in `data_dir`.
    pub fn local(data_dir: &Path) -> Self {
        Self::at(data_dir, LOCAL_FILE.to_owned(), false)
    }

    /// This data folder's record of the team store at `location` (its URL without password):
    /// one file per store, so a folder that changes stores keeps each one's apart.
    pub fn team(data_dir: &Path, location: &str) -> Self {
        let tag = hex::encode(Sha256::digest(location.as_bytes()));
        Self::at(data_dir, format!("audit-head-{}.json", &tag[..16]), true)
    }

    fn at(data_dir: &Path, name: String, team: bool) -> Self {
        Self {
            path: data_dir.join(name),
            lock: data_dir.join(LOCK_FILE),
            team,
            warned: AtomicBool::new(false),
        }
    }

    /// The file that holds the record.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether other machines append to the store too, so that the record vouches only for
    /// what this one wrote or checked.
    pub fn is_team(&self) -> bool {
        self.team
    }

    /// The recorded head; `None` if none was recorded yet. Read as the data folder's other
    /// files someone may have put there: a regular file only (a link, a FIFO or a device is
    /// an error at once), at most [`MAX_RECORD`] bytes; the store's write lock may be held.
    pub fn read(&self) -> Result<Option<AuditHead>, AnchorError> {
        let opened = crate::untrusted::open_untrusted(&self.path);
        let text = match opened.and_then(|(file, _)| crate::untrusted::read_text(file, MAX_RECORD))
        {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io(&self.path, e)),
        };
        let head: AuditHead = serde_json::from_str(&text).map_err(|e| AnchorError::Unreadable {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        if head.entries < 1 || head.hash.is_empty() {
            return Err(AnchorError::Unreadable {
                path: self.path.clone(),
                message: "it names no entry".into(),
            });
        }
        Ok(Some(head))
    }

    /// The first entry an appender reads back for [`AuditAnchor::advance`]: the recorded one
    /// (read without the lock: the record only moves forward, and the appender holds the
    /// store's write lock, so the record it finds under the lock is this one or a newer entry
    /// it reads too), or the first entry when there is no record to hold. `None` when the
    /// record cannot be read: it is not moved (see `advance`), so nothing is read back for it.
    pub fn first_needed(&self) -> Option<i64> {
        match self.read() {
            Ok(Some(head)) => Some(head.entries),
            Ok(None) => Some(1),
            Err(_) => None,
        }
    }

    /// Moves the record forward to the newest of `entries` (ids and hashes, in order, read as
    /// one trail: from the recorded entry, or the first, to the newest), if it is newer than
    /// the recorded head and `entries` still hold the recorded entry. A record that cannot be
    /// read is left as it is, an error: it may be what someone who cut the trail left (a
    /// person moves it aside, and the next append starts a new record).
    pub fn advance(&self, entries: &[(i64, String)]) -> Result<Advance, AnchorError> {
        let _held = self.hold()?;
        let recorded = self.read()?;
        let Some((newest, hash)) = entries.last() else {
            return Ok(Advance::Ahead);
        };
        if let Some(recorded) = recorded {
            if recorded.entries >= *newest {
                return Ok(Advance::Ahead);
            }
            let holds = entries
                .binary_search_by_key(&recorded.entries, |(id, _)| *id)
                .is_ok_and(|at| entries[at].1 == recorded.hash);
            if !holds {
                return Ok(Advance::Disagrees);
            }
        }
        self.write(&AuditHead {
            entries: *newest,
            hash: hash.clone(),
        })?;
        Ok(Advance::Moved)
    }

    /// [`AuditAnchor::advance`] after entries were appended or checked: a failure, or a trail
    /// that no longer holds the recorded entry, is said on stderr (once per store), never
    /// returned: the entries are committed, and what they record stands.
    pub fn advance_or_warn(&self, entries: &[(i64, String)]) {
        let said = match self.advance(entries) {
            Ok(Advance::Moved | Advance::Ahead) => return,
            Ok(Advance::Disagrees) => format!(
                "the audit trail no longer holds the newest entry recorded in {}: entries were \
                 removed or replaced (`plandesk audit --verify` says which)",
                self.path.display()
            ),
            Err(e) => format!("cannot record the audit trail's end: {e}"),
        };
        if !self.warned.swap(true, Ordering::Relaxed) {
            eprintln!("plandesk: {said}");
        }
    }

    /// Takes the lock file (blocking: it is held only to read and replace a small file).
    fn hold(&self) -> Result<std::fs::File, AnchorError> {
        if let Some(dir) = self.lock.parent() {
            std::fs::create_dir_all(dir).map_err(|e| self.io(dir, e))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(no_link_or_wait())
            .open(&self.lock)
            .map_err(|e| self.io(&self.lock, e))?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| self.io(&self.lock, e.into()))?;
        // Dropping the file releases the lock.
        Ok(file)
    }

    /// Replaces the record at once (a new file renamed over it): a reader sees the old record
    /// or the new one, never a part. Not synced to the disk: a crash of the machine may leave
    /// an older record (it then vouches for fewer entries) or, rarely, an unreadable one (the
    /// next append reports it), never one ahead of the database, which is synced first. The
    /// new file is made anew, never written through a link left in its place.
    fn write(&self, head: &AuditHead) -> Result<(), AnchorError> {
        let text = serde_json::to_string(head).map_err(|e| AnchorError::Io {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        let mut temporary = self.path.clone().into_os_string();
        temporary.push(".new");
        let temporary = PathBuf::from(temporary);
        match std::fs::remove_file(&temporary) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(self.io(&temporary, e))
            }
            _ => {}
        }
        let made = OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(no_link_or_wait())
            .open(&temporary);
        let written = made.and_then(|mut file| {
            use std::io::Write;
            file.write_all(format!("{text}\n").as_bytes())
        });
        written.map_err(|e| self.io(&temporary, e))?;
        std::fs::rename(&temporary, &self.path).map_err(|e| self.io(&self.path, e))
    }

    fn io(&self, path: &Path, err: std::io::Error) -> AnchorError {
        AnchorError::Io {
            path: path.to_owned(),
            message: err.to_string(),
        }
    }
}

/// Open flags for a file of the record's own: never through a link, never waiting on a FIFO.
fn no_link_or_wait() -> i32 {
    use rustix::fs::OFlags;
    (OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32
}

/// Where a store's audit head is recorded outside it. A store moves it forward after each
/// commit that appended ([`AuditAnchor::advance_later`]) on a thread of its own, off the path
/// of the decision that appended (the file's lock, read, write and rename cost ~0.3 ms a
/// commit here); what is queued is written before the store closes, and a check waits for it
/// ([`AuditAnchor::settle`]).
#[derive(Debug)]
pub struct AuditAnchor {
    record: Arc<Record>,
    /// Started with the first commit that appends.
    writer: Mutex<Option<Writer>>,
}

/// The thread that moves the record forward, and how to reach it.
#[derive(Debug)]
struct Writer {
    jobs: mpsc::Sender<Job>,
    thread: std::thread::JoinHandle<()>,
}

#[derive(Debug)]
enum Job {
    /// Entries read under the store's write lock, to move the record to.
    Advance(Vec<(i64, String)>),
    /// Answered once every job before it is done.
    Settle(mpsc::Sender<()>),
}

impl AuditAnchor {
    /// The record of the SQLite store in `data_dir`.
    pub fn local(data_dir: &Path) -> Self {
        Self::of(Record::local(data_dir))
    }

    /// This data folder's record of the team store at `location` (its URL without password):
    /// one file per store, so a folder that changes stores keeps each one's apart.
    pub fn team(data_dir: &Path, location: &str) -> Self {
        Self::of(Record::team(data_dir, location))
    }

    fn of(record: Record) -> Self {
        Self {
            record: Arc::new(record),
            writer: Mutex::new(None),
        }
    }

    /// The file that holds the record.
    pub fn path(&self) -> &Path {
        self.record.path()
    }

    /// Whether other machines append to the store too, so that the record vouches only for
    /// what this one wrote or checked.
    pub fn is_team(&self) -> bool {
        self.record.is_team()
    }

    /// The recorded head; `None` if none was recorded yet.
    pub fn read(&self) -> Result<Option<AuditHead>, AnchorError> {
        self.record.read()
    }

    /// The first entry an appender reads back for [`AuditAnchor::advance`] (see there).
    pub fn first_needed(&self) -> Option<i64> {
        self.record.first_needed()
    }

    /// Moves the record forward to the newest of `entries` (ids and hashes, in order, read as
    /// one trail: from the recorded entry, or the first, to the newest), if it is newer than
    /// the recorded head and `entries` still hold the recorded entry.
    pub fn advance(&self, entries: &[(i64, String)]) -> Result<Advance, AnchorError> {
        self.record.advance(entries)
    }

    /// [`AuditAnchor::advance`], a failure or a disagreement said on stderr (once per store).
    pub fn advance_or_warn(&self, entries: &[(i64, String)]) {
        self.record.advance_or_warn(entries)
    }

    /// [`AuditAnchor::advance_or_warn`] on the record's own thread: what a store calls once a
    /// commit that appended is durable. In order: a later call never overtakes an earlier one.
    pub fn advance_later(&self, entries: Vec<(i64, String)>) {
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if writer.is_none() {
            *writer = self.start();
        }
        let job = Job::Advance(entries);
        let unsent = match writer.as_ref() {
            Some(w) => w.jobs.send(job).err().map(|unsent| unsent.0),
            None => Some(job),
        };
        if let Some(Job::Advance(entries)) = unsent {
            // No thread to be had: the record is moved here, as it was before.
            self.record.advance_or_warn(&entries);
        }
    }

    /// Waits until every [`AuditAnchor::advance_later`] made so far has been written: a check of
    /// the trail reads the record after this.
    pub fn settle(&self) {
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let Some(writer) = writer.as_ref() else {
            return;
        };
        let (done, settled) = mpsc::channel();
        if writer.jobs.send(Job::Settle(done)).is_ok() {
            let _ = settled.recv();
        }
    }

    fn start(&self) -> Option<Writer> {
        let (jobs, queue) = mpsc::channel();
        let record = self.record.clone();
        let thread = std::thread::Builder::new()
            .name("plandesk-audit-head".into())
            .spawn(move || {
                for job in queue {
                    match job {
                        Job::Advance(entries) => record.advance_or_warn(&entries),
                        Job::Settle(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            })
            .ok()?;
        Some(Writer { jobs, thread })
    }
}

impl Drop for AuditAnchor {
    /// What is queued is written before the store is gone.
    fn drop(&mut self) {
        let writer = self
            .writer
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(Writer { jobs, thread }) = writer {
            drop(jobs);
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn chain(from: i64, to: i64) -> Vec<(i64, String)> {
        (from..=to).map(|id| (id, format!("h{id}"))).collect()
    }

    #[test]
    fn the_record_moves_forward_only_along_the_trail_it_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let anchor = AuditAnchor::local(dir.path());
        assert_eq!(anchor.read().unwrap(), None, "nothing recorded yet");
        assert_eq!(anchor.advance(&chain(1, 3)).unwrap(), Advance::Moved);
        assert_eq!(
            anchor.read().unwrap().unwrap(),
            AuditHead {
                entries: 3,
                hash: "h3".into()
            }
        );
        assert_eq!(
            anchor.advance(&chain(1, 2)).unwrap(),
            Advance::Ahead,
            "an older head never replaces a newer one"
        );
        assert_eq!(anchor.advance(&chain(3, 5)).unwrap(), Advance::Moved);
        let rewritten: Vec<(i64, String)> = (5..=8).map(|id| (id, format!("x{id}"))).collect();
        assert_eq!(
            anchor.advance(&rewritten).unwrap(),
            Advance::Disagrees,
            "a trail whose entry 5 is another one does not move the record: it is the evidence"
        );
        assert_eq!(anchor.read().unwrap().unwrap().entries, 5);
        std::fs::write(anchor.path(), "").unwrap();
        assert!(matches!(anchor.read(), Err(AnchorError::Unreadable { .. })));
        assert_eq!(anchor.first_needed(), None, "no trail is read back for it");
        assert!(
            anchor.advance(&chain(1, 6)).is_err(),
            "an unreadable record is not replaced: it may be the evidence of a cut"
        );
        assert_eq!(std::fs::read_to_string(anchor.path()).unwrap(), "");
        std::fs::remove_file(anchor.path()).unwrap();
        assert_eq!(
            anchor.advance(&chain(1, 6)).unwrap(),
            Advance::Moved,
            "moved aside, a new record starts"
        );
    }

    /// The record, its lock and its new file may be anything someone put in the data folder:
    /// none is read or written through a link, waited on as a FIFO, or read whole if large.
    #[test]
    fn a_record_is_never_followed_waited_on_or_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let anchor = AuditAnchor::local(dir.path());
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, r#"{"entries":9,"hash":"h9"}"#).unwrap();
        let fifo = |path: &Path| {
            let made = std::process::Command::new("mkfifo").arg(path).status();
            assert!(made.unwrap().success());
        };
        std::os::unix::fs::symlink(&elsewhere, anchor.path()).unwrap();
        assert!(anchor.read().is_err(), "a link is not followed");
        std::fs::remove_file(anchor.path()).unwrap();
        fifo(anchor.path());
        assert!(anchor.read().is_err(), "a FIFO is refused at once");
        assert!(anchor.advance(&chain(1, 2)).is_err());
        std::fs::remove_file(anchor.path()).unwrap();
        std::fs::write(anchor.path(), " ".repeat(1 << 20)).unwrap();
        assert!(anchor.read().is_err(), "a large file is not read whole");
        std::fs::remove_file(anchor.path()).unwrap();

        // A link where the new record is made is replaced, not written through.
        let new_file = dir.path().join("audit-head.json.new");
        std::os::unix::fs::symlink(&elsewhere, &new_file).unwrap();
        assert_eq!(anchor.advance(&chain(1, 2)).unwrap(), Advance::Moved);
        let kept = std::fs::read_to_string(&elsewhere).unwrap();
        assert_eq!(kept, r#"{"entries":9,"hash":"h9"}"#);
        assert_eq!(anchor.read().unwrap().unwrap().entries, 2);

        // A FIFO as the lock: an error, not a wait.
        std::fs::remove_file(dir.path().join(LOCK_FILE)).unwrap();
        fifo(&dir.path().join(LOCK_FILE));
        assert!(anchor.advance(&chain(1, 3)).is_err());
    }

    /// Appenders racing to record their heads, in any order: the newest one wins.
    #[test]
    fn racing_appenders_leave_the_newest_head() {
        let dir = tempfile::tempdir().unwrap();
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let dir = dir.path().to_owned();
                std::thread::spawn(move || {
                    // Each its own anchor, as another process would have.
                    let anchor = AuditAnchor::local(&dir);
                    for n in (1..=50).map(|i| i * 8 - t) {
                        anchor.advance(&chain(1, n)).unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let recorded = AuditAnchor::local(dir.path()).read().unwrap().unwrap();
        assert_eq!(recorded.entries, 400, "the highest head any appender saw");
    }

    #[test]
    fn each_team_store_has_its_own_record() {
        let dir = Path::new("/data");
        let a = AuditAnchor::team(dir, "postgres://ana@db/a");
        let b = AuditAnchor::team(dir, "postgres://ana@db/b");
        assert_ne!(a.path(), b.path());
        assert_ne!(a.path(), AuditAnchor::local(dir).path());
        assert!(a.is_team() && !AuditAnchor::local(dir).is_team());
    }
}
