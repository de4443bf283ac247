//! The folder an agent works in. Every path a model names is resolved here, and nothing it names
//! may leave the folder: not through `..`, not as an absolute path, not through a symlink.
//!
//! Reads may follow a symlink that stays inside the workspace ([`Workspace::resolve_existing`]),
//! but the file itself is then opened by walking its resolved path from an open handle on the
//! root, one component at a time with `O_NOFOLLOW`, so a link swapped in after the check cannot
//! redirect the read. Writes never follow a symlink at all: every folder on the way is opened
//! the same way (missing ones created with `mkdirat`), and the file is replaced with a rename
//! inside the folder handle. Only regular files are read or written (a FIFO would block forever),
//! and reads are bounded even when the file grows while it is read.

use std::ffi::OsStr;
use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// Where plans are written unless a run says otherwise, relative to the workspace root.
pub const DEFAULT_PLANS_DIR: &str = ".plandesk/plans";

/// Largest file the workspace tools read or a plan may be (1 MiB).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Why a path was refused, or could not be read or written; each names the path.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("workspace folder {path} cannot be opened: {source}")]
    Root { path: PathBuf, source: io::Error },
    #[error("workspace {path} is not a folder")]
    RootNotDir { path: PathBuf },
    #[error("plans folder {path} must be a relative path inside the workspace")]
    PlansDir { path: String },
    #[error("path is empty")]
    Empty,
    #[error("absolute paths are not allowed: `{path}`; use a path relative to the workspace root")]
    Absolute { path: String },
    #[error("`{path}` leaves the workspace; use a path inside it")]
    Escapes { path: String },
    #[error("`{path}` does not exist")]
    NotFound { path: String },
    #[error("`{path}` is not a file")]
    NotAFile { path: String },
    #[error("`{path}` is a {kind}, not a regular file; only regular files are read or written")]
    NotRegular { path: String, kind: &'static str },
    #[error("`{path}` is not a folder")]
    NotADir { path: String },
    #[error(
        "`{path}`: `{link}` is a symbolic link, and files are never written (or re-opened) \
         through a link; use the path it points to"
    )]
    Symlink { path: String, link: String },
    #[error(
        "the plans folder `{plans_dir}/` goes through the symbolic link `{link}`; plans are only \
         read from and written to a real folder inside the workspace (remove the link and \
         create the folder)"
    )]
    PlansDirLink { plans_dir: String, link: String },
    #[error("`{path}` is {size} bytes; the limit is {limit} bytes")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("`{path}` is not UTF-8 text")]
    NotUtf8 { path: String },
    #[error("`{path}` is outside the plans folder `{plans_dir}/`")]
    OutsidePlans { path: String, plans_dir: String },
    #[error("`{path}`: {source}")]
    Io { path: String, source: io::Error },
}

/// A workspace root (canonical) and its plans folder.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    plans_dir: String,
}

impl Workspace {
    /// Opens an existing folder as a workspace. `plans_dir` defaults to [`DEFAULT_PLANS_DIR`].
    pub fn open(root: &Path, plans_dir: Option<&str>) -> Result<Self, WorkspaceError> {
        let canonical = fs::canonicalize(root).map_err(|source| WorkspaceError::Root {
            path: root.to_owned(),
            source,
        })?;
        if !canonical.is_dir() {
            return Err(WorkspaceError::RootNotDir { path: canonical });
        }
        let plans_dir = plans_dir
            .unwrap_or(DEFAULT_PLANS_DIR)
            .trim_end_matches('/')
            .to_owned();
        if lexical_relative(&plans_dir).is_none_or(|p| p.as_os_str().is_empty()) {
            return Err(WorkspaceError::PlansDir { path: plans_dir });
        }
        Ok(Self {
            root: canonical,
            plans_dir,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The plans folder as the model should write it, e.g. `.plandesk/plans`.
    pub fn plans_dir(&self) -> &str {
        &self.plans_dir
    }

    fn plans_abs(&self) -> PathBuf {
        self.root.join(self.plans_relative())
    }

    /// The path of `abs` relative to the root, with `/` separators, for messages and listings.
    pub fn display(&self, abs: &Path) -> String {
        abs.strip_prefix(&self.root)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_else(|_| abs.to_string_lossy().into_owned())
    }

    fn lexical(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        if path.trim().is_empty() {
            return Err(WorkspaceError::Empty);
        }
        if Path::new(path).is_absolute() || path.starts_with('/') || path.starts_with('\\') {
            return Err(WorkspaceError::Absolute {
                path: path.to_owned(),
            });
        }
        lexical_relative(path).ok_or_else(|| WorkspaceError::Escapes {
            path: path.to_owned(),
        })
    }

    fn inside(&self, canonical: &Path, path: &str) -> Result<(), WorkspaceError> {
        if canonical.starts_with(&self.root) {
            Ok(())
        } else {
            Err(WorkspaceError::Escapes {
                path: path.to_owned(),
            })
        }
    }

    /// Resolves an existing path for reading; symlinks are followed and must stay inside.
    pub fn resolve_existing(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        let joined = self.root.join(self.lexical(path)?);
        let canonical = fs::canonicalize(&joined).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound if joined.symlink_metadata().is_ok() => {
                // A dangling symlink: where it points is not ours to say.
                WorkspaceError::Escapes {
                    path: path.to_owned(),
                }
            }
            io::ErrorKind::NotFound => WorkspaceError::NotFound {
                path: path.to_owned(),
            },
            _ => WorkspaceError::Io {
                path: path.to_owned(),
                source,
            },
        })?;
        self.inside(&canonical, path)?;
        Ok(canonical)
    }

    /// Checks that the plans folder, and every folder on the way to it below the root, is a
    /// real folder and not a symbolic link. A plans folder that does not exist yet passes (the
    /// plan file is then simply not found).
    pub fn check_plans_dir(&self) -> Result<(), WorkspaceError> {
        let plans = self.plans_relative();
        let parts: Vec<&OsStr> = plans.iter().collect();
        match self.open_dirs(&parts, false, &self.plans_dir) {
            Ok(_) | Err(WorkspaceError::NotFound { .. }) => Ok(()),
            Err(err) => Err(self.as_plans_error(err)),
        }
    }

    /// Checks that a resolved path lies inside the plans folder.
    pub fn require_in_plans(&self, resolved: &Path, path: &str) -> Result<(), WorkspaceError> {
        // `check_plans_dir` refuses a plans folder reached through a link, so its canonical
        // form is the lexical one below the (canonical) root.
        let plans = self.plans_abs();
        if resolved.starts_with(&plans) && resolved != plans {
            Ok(())
        } else {
            Err(WorkspaceError::OutsidePlans {
                path: path.to_owned(),
                plans_dir: self.plans_dir.clone(),
            })
        }
    }

    /// Reads a regular UTF-8 text file of at most [`MAX_FILE_BYTES`]. `resolved` comes from
    /// [`Workspace::resolve_existing`]; it is opened without following any link, so a path
    /// swapped for a link since it was resolved is refused, not followed. A FIFO, socket or
    /// device is refused without blocking, and a file that grows past the limit while it is
    /// read is refused too.
    pub fn read_text(&self, resolved: &Path, path: &str) -> Result<String, WorkspaceError> {
        let relative = resolved
            .strip_prefix(&self.root)
            .map_err(|_| WorkspaceError::Escapes {
                path: path.to_owned(),
            })?;
        let parts: Vec<&OsStr> = relative.iter().collect();
        let Some((name, folders)) = parts.split_last() else {
            return Err(WorkspaceError::NotAFile {
                path: path.to_owned(),
            });
        };
        let dir = self.open_dirs(folders, false, path)?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&dir, *name, flags, Mode::empty())
            .map_err(|errno| open_error(errno, &dir, name, path, &parts))?;
        let stat = rustix::fs::fstat(&fd).map_err(|errno| io_error(path, errno))?;
        regular_only(FileType::from_raw_mode(stat.st_mode), path)?;
        let on_disk = u64::try_from(stat.st_size).unwrap_or(0);
        if on_disk > MAX_FILE_BYTES {
            return Err(WorkspaceError::TooLarge {
                path: path.to_owned(),
                size: on_disk,
                limit: MAX_FILE_BYTES,
            });
        }
        let mut bytes = Vec::with_capacity(usize::try_from(on_disk).unwrap_or(0));
        fs::File::from(fd)
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|source| WorkspaceError::Io {
                path: path.to_owned(),
                source,
            })?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(WorkspaceError::TooLarge {
                path: path.to_owned(),
                size: on_disk.max(bytes.len() as u64),
                limit: MAX_FILE_BYTES,
            });
        }
        String::from_utf8(bytes).map_err(|_| WorkspaceError::NotUtf8 {
            path: path.to_owned(),
        })
    }

    /// Writes `content` to `path` (relative to the root), creating missing folders. No symbolic
    /// link is followed: not a folder on the way, not the file itself, even one that points
    /// inside the workspace. Only a regular file is replaced.
    pub fn write_file(&self, path: &str, content: &[u8]) -> Result<(), WorkspaceError> {
        let relative = self.lexical(path)?;
        self.write_at(&relative, content, path)
    }

    /// Plan mode's write: like [`Workspace::write_file`], and `path` must lie inside the plans
    /// folder, which must not be (or go through) a symbolic link.
    pub fn write_plan_file(&self, path: &str, content: &[u8]) -> Result<(), WorkspaceError> {
        let relative = self.lexical(path)?;
        let plans = self.plans_relative();
        if !relative.starts_with(&plans) || relative == plans {
            return Err(WorkspaceError::OutsidePlans {
                path: path.to_owned(),
                plans_dir: self.plans_dir.clone(),
            });
        }
        self.write_at(&relative, content, path)
            .map_err(|err| self.as_plans_error(err))
    }

    /// The plans folder as a normalised relative path (checked in [`Workspace::open`]).
    fn plans_relative(&self) -> PathBuf {
        lexical_relative(&self.plans_dir).unwrap_or_default()
    }

    /// A link at or above the plans folder is the plans folder's problem, not the file's.
    fn as_plans_error(&self, err: WorkspaceError) -> WorkspaceError {
        match err {
            WorkspaceError::Symlink { link, .. }
                if self.plans_relative().starts_with(Path::new(&link)) =>
            {
                WorkspaceError::PlansDirLink {
                    plans_dir: self.plans_dir.clone(),
                    link,
                }
            }
            other => other,
        }
    }

    /// Replaces the file at `relative` with `content` through a temporary file renamed into
    /// place inside the folder's handle. Why a rename rather than opening the file with
    /// `O_TRUNC`: the final name is never opened, so a link or FIFO planted there after the
    /// check is replaced, not followed or blocked on; a hard link to the old file (possibly
    /// from outside the workspace) keeps its old content; and a reader never sees half a file.
    fn write_at(&self, relative: &Path, content: &[u8], path: &str) -> Result<(), WorkspaceError> {
        let parts: Vec<&OsStr> = relative.iter().collect();
        let Some((name, folders)) = parts.split_last() else {
            return Err(WorkspaceError::NotAFile {
                path: path.to_owned(),
            });
        };
        let dir = self.open_dirs(folders, true, path)?;
        let keep_mode = match rustix::fs::statat(&dir, *name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => match FileType::from_raw_mode(stat.st_mode) {
                FileType::Symlink => {
                    return Err(WorkspaceError::Symlink {
                        path: path.to_owned(),
                        link: join(&parts),
                    })
                }
                kind => {
                    regular_only(kind, path)?;
                    // Permission bits only: a rewritten file keeps no setuid, setgid or sticky
                    // bit (writing to a file clears setuid and setgid too).
                    Some(Mode::from_raw_mode(stat.st_mode & 0o777))
                }
            },
            Err(Errno::NOENT) => None,
            Err(errno) => return Err(io_error(path, errno)),
        };
        let temp = temp_name();
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        // New files get the usual 0666 less the umask, as `fs::write` would give them.
        let fd = rustix::fs::openat(&dir, &temp, flags, Mode::from_raw_mode(0o666))
            .map_err(|errno| io_error(path, errno))?;
        let written = (|| {
            if let Some(mode) = keep_mode {
                rustix::fs::fchmod(&fd, mode)?;
            }
            fs::File::from(fd).write_all(content)?;
            rustix::fs::renameat(&dir, &temp, &dir, *name)?;
            Ok::<(), io::Error>(())
        })();
        written.map_err(|source| {
            let _ = rustix::fs::unlinkat(&dir, &temp, AtFlags::empty());
            WorkspaceError::Io {
                path: path.to_owned(),
                source,
            }
        })
    }

    /// Opens the folder `root/folders...` without following a link at any step; with `create`,
    /// missing folders are made on the way.
    fn open_dirs(
        &self,
        folders: &[&OsStr],
        create: bool,
        path: &str,
    ) -> Result<OwnedFd, WorkspaceError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let mut dir = rustix::fs::open(&self.root, flags, Mode::empty()).map_err(|errno| {
            WorkspaceError::Root {
                path: self.root.clone(),
                source: errno.into(),
            }
        })?;
        let flags = flags | OFlags::NOFOLLOW;
        for (depth, name) in folders.iter().enumerate() {
            let opened = match rustix::fs::openat(&dir, *name, flags, Mode::empty()) {
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&dir, *name, Mode::from_raw_mode(0o777)) {
                        // Made by someone else meanwhile: open whatever is there, no-follow.
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(errno) => return Err(io_error(path, errno)),
                    }
                    rustix::fs::openat(&dir, *name, flags, Mode::empty())
                }
                other => other,
            };
            dir = opened.map_err(|errno| {
                let err = open_error(errno, &dir, name, path, &folders[..=depth]);
                match err {
                    WorkspaceError::NotAFile { .. } | WorkspaceError::NotRegular { .. } => {
                        WorkspaceError::NotADir {
                            path: join(&folders[..=depth]),
                        }
                    }
                    other => other,
                }
            })?;
        }
        Ok(dir)
    }
}

/// Why `name` in `dir` could not be opened; `walked` are the components from the root up to
/// and including `name`, to name a link in the message.
fn open_error(
    errno: Errno,
    dir: &OwnedFd,
    name: &OsStr,
    path: &str,
    walked: &[&OsStr],
) -> WorkspaceError {
    match errno {
        Errno::NOENT => WorkspaceError::NotFound {
            path: path.to_owned(),
        },
        // `O_NOFOLLOW` on a link is ELOOP; with `O_DIRECTORY` some systems say ENOTDIR.
        Errno::LOOP | Errno::NOTDIR | Errno::MLINK => {
            match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                    WorkspaceError::Symlink {
                        path: path.to_owned(),
                        link: join(walked),
                    }
                }
                Ok(stat) => match regular_only(FileType::from_raw_mode(stat.st_mode), path) {
                    Err(err) => err,
                    Ok(()) => WorkspaceError::NotAFile { path: join(walked) },
                },
                Err(_) => io_error(path, errno),
            }
        }
        other => io_error(path, other),
    }
}

/// `Ok` for a regular file; otherwise the error naming what the path is instead.
fn regular_only(kind: FileType, path: &str) -> Result<(), WorkspaceError> {
    let kind = match kind {
        FileType::RegularFile => return Ok(()),
        FileType::Directory => {
            return Err(WorkspaceError::NotAFile {
                path: path.to_owned(),
            })
        }
        FileType::Fifo => "named pipe (FIFO)",
        FileType::Socket => "socket",
        FileType::CharacterDevice | FileType::BlockDevice => "device",
        FileType::Symlink => "symbolic link",
        FileType::Unknown => "special file",
    };
    Err(WorkspaceError::NotRegular {
        path: path.to_owned(),
        kind,
    })
}

fn io_error(path: &str, errno: Errno) -> WorkspaceError {
    WorkspaceError::Io {
        path: path.to_owned(),
        source: errno.into(),
    }
}

/// Path components joined with `/`, for messages.
fn join(parts: &[&OsStr]) -> String {
    parts
        .iter()
        .map(|p| p.to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// A name for a write's temporary file, unique in this process and across processes.
fn temp_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        ".plandesk-write-{}-{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Normalises `a/./b/../c` to `a/c`; `None` if the path climbs above its start or is absolute.
fn lexical_relative(path: &str) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};
    use std::sync::mpsc;
    use std::time::Duration;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("ws/src")).unwrap();
        fs::write(dir.path().join("ws/src/lib.rs"), "lib\n").unwrap();
        let ws = Workspace::open(&dir.path().join("ws"), None).unwrap();
        (dir, ws)
    }

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success(), "mkfifo {}", path.display());
    }

    /// Runs `op` on a thread; fails the test if it blocks (a FIFO opened the usual way would).
    fn within_seconds<T: Send + 'static>(op: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(op());
        });
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the operation blocked")
    }

    /// Issue 8 #1: with `.plandesk/plans -> ..`, a plan-mode write landed in the workspace root.
    #[test]
    fn a_plans_folder_that_is_a_link_is_refused() {
        let (_dir, ws) = workspace();
        fs::create_dir_all(ws.root().join(".plandesk")).unwrap();
        symlink("..", ws.root().join(".plandesk/plans")).unwrap();
        let err = ws
            .write_plan_file(".plandesk/plans/x.txt", b"escaped")
            .unwrap_err();
        assert!(
            matches!(&err, WorkspaceError::PlansDirLink { link, .. } if link == ".plandesk/plans"),
            "{err}"
        );
        assert!(
            !ws.root().join("x.txt").exists(),
            "nothing landed in the root"
        );
        assert!(matches!(
            ws.check_plans_dir(),
            Err(WorkspaceError::PlansDirLink { .. })
        ));

        let (_dir, ws) = workspace();
        fs::create_dir_all(ws.root().join("elsewhere/plans")).unwrap();
        symlink("elsewhere", ws.root().join(".plandesk")).unwrap();
        let err = ws
            .write_plan_file(".plandesk/plans/p.md", b"# P")
            .unwrap_err();
        assert!(
            matches!(&err, WorkspaceError::PlansDirLink { link, .. } if link == ".plandesk"),
            "a link above the plans folder counts too: {err}"
        );
        assert!(!ws.root().join("elsewhere/plans/p.md").exists());
    }

    #[test]
    fn plan_writes_stay_in_the_plans_folder() {
        let (_dir, ws) = workspace();
        ws.write_plan_file(".plandesk/plans/a/p.md", b"# P\n")
            .unwrap();
        assert_eq!(
            fs::read_to_string(ws.root().join(".plandesk/plans/a/p.md")).unwrap(),
            "# P\n"
        );
        for outside in [
            ".plandesk/plans",
            ".plandesk/other.md",
            ".plandesk/plans/../x.md",
            "src/p.md",
        ] {
            assert!(
                matches!(
                    ws.write_plan_file(outside, b"x"),
                    Err(WorkspaceError::OutsidePlans { .. })
                ),
                "{outside}"
            );
        }
    }

    #[test]
    fn writes_never_follow_links() {
        let (dir, ws) = workspace();
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        symlink(&outside, ws.root().join("out")).unwrap();
        symlink("src", ws.root().join("inner")).unwrap();
        symlink("src/lib.rs", ws.root().join("lib-link.rs")).unwrap();
        for (path, link) in [
            ("out/x.txt", "out"),
            ("inner/new.rs", "inner"),
            ("lib-link.rs", "lib-link.rs"),
        ] {
            let err = ws.write_file(path, b"overwritten").unwrap_err();
            assert!(
                matches!(&err, WorkspaceError::Symlink { link: l, .. } if l == link),
                "{path}: {err}"
            );
        }
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
        assert!(!ws.root().join("src/new.rs").exists());
        assert_eq!(
            fs::read_to_string(ws.root().join("src/lib.rs")).unwrap(),
            "lib\n"
        );
        assert!(
            ws.resolve_existing("lib-link.rs").is_ok(),
            "a link inside the workspace stays readable"
        );
    }

    #[test]
    fn writes_replace_regular_files_keeping_their_mode() {
        let (_dir, ws) = workspace();
        let script = ws.root().join("run.sh");
        fs::write(&script, "old").unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o750)).unwrap();
        ws.write_file("run.sh", b"new").unwrap();
        assert_eq!(fs::read_to_string(&script).unwrap(), "new");
        assert_eq!(
            fs::metadata(&script).unwrap().permissions().mode() & 0o7777,
            0o750
        );
        ws.write_file("deep/er/file.txt", b"made").unwrap();
        assert_eq!(
            fs::read_to_string(ws.root().join("deep/er/file.txt")).unwrap(),
            "made"
        );
        let leftovers: Vec<_> = fs::read_dir(ws.root())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("plandesk-write"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        assert!(matches!(
            ws.write_file("src", b"x"),
            Err(WorkspaceError::NotAFile { .. })
        ));
        assert!(matches!(
            ws.write_file("src/lib.rs/x", b"x"),
            Err(WorkspaceError::NotADir { .. })
        ));
    }

    /// Issue 8 #4: a FIFO as the file blocked the run forever.
    #[test]
    fn fifos_are_refused_without_blocking() {
        let (_dir, ws) = workspace();
        mkfifo(&ws.root().join("pipe.md"));
        let reader = ws.clone();
        let read = within_seconds(move || {
            let resolved = reader.resolve_existing("pipe.md")?;
            reader.read_text(&resolved, "pipe.md")
        });
        assert!(
            matches!(&read, Err(WorkspaceError::NotRegular { kind, .. }) if kind.contains("FIFO")),
            "{read:?}"
        );
        let writer = ws.clone();
        let written = within_seconds(move || writer.write_file("pipe.md", b"x"));
        assert!(
            matches!(&written, Err(WorkspaceError::NotRegular { .. })),
            "{written:?}"
        );
    }

    #[test]
    fn reads_are_bounded() {
        let (_dir, ws) = workspace();
        fs::write(
            ws.root().join("max.md"),
            vec![b'a'; MAX_FILE_BYTES as usize],
        )
        .unwrap();
        fs::write(
            ws.root().join("big.md"),
            vec![b'a'; MAX_FILE_BYTES as usize + 1],
        )
        .unwrap();
        let read = |p: &str| ws.read_text(&ws.resolve_existing(p).unwrap(), p);
        assert_eq!(read("max.md").unwrap().len(), MAX_FILE_BYTES as usize);
        assert!(matches!(
            read("big.md"),
            Err(WorkspaceError::TooLarge { size, .. }) if size == MAX_FILE_BYTES + 1
        ));
        assert!(matches!(read("src"), Err(WorkspaceError::NotAFile { .. })));
    }

    proptest::proptest! {
        #![proptest_config(crate::text::testing::proptest_config(128))]

        /// Any bytes: read back exactly when they are UTF-8, refused as not UTF-8 otherwise.
        #[test]
        fn prop_workspace_read_any_bytes(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048),
            text in proptest::prelude::any::<String>(),
            as_text in proptest::prelude::any::<bool>(),
        ) {
            let (_dir, ws) = workspace();
            let bytes = if as_text { text.into_bytes() } else { bytes };
            ws.write_file("f.md", &bytes).unwrap();
            let read = ws.read_text(&ws.resolve_existing("f.md").unwrap(), "f.md");
            match std::str::from_utf8(&bytes) {
                Ok(expected) => proptest::prop_assert_eq!(read.unwrap(), expected),
                Err(_) => {
                    let refused = matches!(read, Err(WorkspaceError::NotUtf8 { .. }));
                    proptest::prop_assert!(refused, "not UTF-8, yet read as {:?}", read);
                }
            }
        }
    }

    #[test]
    fn lexical_paths_may_not_climb_out() {
        assert_eq!(lexical_relative("a/./b/../c"), Some(PathBuf::from("a/c")));
        assert_eq!(lexical_relative("a/../../etc/passwd"), None);
        assert_eq!(lexical_relative("/etc/passwd"), None);
    }
}
