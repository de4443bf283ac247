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
use std::sync::{Arc, OnceLock};

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
    /// Whether it is on local disks only (see [`Workspace::is_local`]): found out when first
    /// asked, once for the workspace and all its clones.
    local: Arc<OnceLock<bool>>,
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
            local: Arc::default(),
        })
    }

    /// Whether the root, and every filesystem mounted inside it, is of this machine's own disks
    /// or memory, where a read cannot hang for long. One on a network (NFS, SMB, Ceph…), a FUSE
    /// mount, or one of a kind not known is not: a read there can wait on a server without end.
    /// Asked only where it matters (a tool about to read): opening a workspace reads nothing.
    pub fn is_local(&self) -> bool {
        *self.local.get_or_init(|| local::on_local_disk(&self.root))
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
pub fn lexical_relative(path: &str) -> Option<PathBuf> {
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
mod tests;

pub mod git;
mod local;
