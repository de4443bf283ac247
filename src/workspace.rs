//! The folder an agent works in. Every path a model names is resolved here, and nothing it names
//! may leave the folder: not through `..`, not as an absolute path, not through a symlink.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Where plans are written unless a run says otherwise, relative to the workspace root.
pub const DEFAULT_PLANS_DIR: &str = ".plandesk/plans";

/// Largest file the workspace tools read or a plan may be (1 MiB).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

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
    #[error("`{path}` is not a folder")]
    NotADir { path: String },
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
        if lexical_relative(&plans_dir).map_or(true, |p| p.as_os_str().is_empty()) {
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
        self.root.join(&self.plans_dir)
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

    /// Resolves a path that may not exist yet, for writing: its deepest existing ancestor (and
    /// the file itself, if present) must resolve inside the workspace.
    pub fn resolve_for_write(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        let relative = self.lexical(path)?;
        let joined = self.root.join(&relative);
        if joined.symlink_metadata().is_ok() {
            let canonical = self.resolve_existing(path)?;
            if canonical.is_dir() {
                return Err(WorkspaceError::NotAFile {
                    path: path.to_owned(),
                });
            }
            return Ok(canonical);
        }
        let mut missing = Vec::new();
        let mut existing = joined.as_path();
        while existing.symlink_metadata().is_err() {
            let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
                return Err(WorkspaceError::Escapes {
                    path: path.to_owned(),
                });
            };
            missing.push(name.to_owned());
            existing = parent;
        }
        let mut canonical = fs::canonicalize(existing).map_err(|_| WorkspaceError::Escapes {
            path: path.to_owned(),
        })?;
        self.inside(&canonical, path)?;
        if !canonical.is_dir() {
            return Err(WorkspaceError::NotADir {
                path: self.display(&canonical),
            });
        }
        canonical.extend(missing.iter().rev());
        Ok(canonical)
    }

    /// Checks that a resolved path lies inside the plans folder.
    pub fn require_in_plans(&self, resolved: &Path, path: &str) -> Result<(), WorkspaceError> {
        // The plans folder itself may be a symlink inside the workspace; compare canonical forms.
        let plans = fs::canonicalize(self.plans_abs()).unwrap_or_else(|_| self.plans_abs());
        if resolved.starts_with(&plans) && resolved != plans {
            Ok(())
        } else {
            Err(WorkspaceError::OutsidePlans {
                path: path.to_owned(),
                plans_dir: self.plans_dir.clone(),
            })
        }
    }

    /// Reads a UTF-8 text file of at most [`MAX_FILE_BYTES`].
    pub fn read_text(&self, resolved: &Path, path: &str) -> Result<String, WorkspaceError> {
        let meta = fs::metadata(resolved).map_err(|source| WorkspaceError::Io {
            path: path.to_owned(),
            source,
        })?;
        if !meta.is_file() {
            return Err(WorkspaceError::NotAFile {
                path: path.to_owned(),
            });
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(WorkspaceError::TooLarge {
                path: path.to_owned(),
                size: meta.len(),
                limit: MAX_FILE_BYTES,
            });
        }
        let bytes = fs::read(resolved).map_err(|source| WorkspaceError::Io {
            path: path.to_owned(),
            source,
        })?;
        String::from_utf8(bytes).map_err(|_| WorkspaceError::NotUtf8 {
            path: path.to_owned(),
        })
    }
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

    #[test]
    fn lexical_paths_may_not_climb_out() {
        assert_eq!(lexical_relative("a/./b/../c"), Some(PathBuf::from("a/c")));
        assert_eq!(lexical_relative("a/../../etc/passwd"), None);
        assert_eq!(lexical_relative("/etc/passwd"), None);
    }
}
