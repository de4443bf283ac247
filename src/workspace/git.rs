//! A workspace that is a git repository, seen by git itself: its state when a plan was
//! submitted (the commit, and the files already changed then with their contents' hashes), and
//! what changed since (names and line counts only). Every call is bounded in time and in what
//! it reads, and none takes git's locks or runs what the repository's configuration names
//! (fsmonitor, external diff, textconv), so a huge repository or a broken git is reported,
//! never waited on, and the agent's own git use is never in the way.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The longest one git command may take; then it is stopped and the changes are not known.
const TIME_LIMIT: Duration = Duration::from_secs(5);
/// The most of a git command's output read.
const MAX_OUTPUT: u64 = 4 * 1024 * 1024;
/// The most files a baseline or a list of changes keeps.
pub const MAX_FILES: usize = 2000;

/// The repository's state when a plan was submitted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baseline {
    /// `HEAD`'s commit, or `None` in a repository without one.
    pub commit: Option<String>,
    /// Files changed (or new) then, with their contents' git hashes (`None`: deleted).
    pub dirty: BTreeMap<String, Option<String>>,
}

/// A file changed since the baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// Relative to the workspace.
    pub path: String,
    /// Lines added and removed (`None` for a binary file or one not counted).
    pub added: Option<u64>,
    pub removed: Option<u64>,
}

/// Why git could not say.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitError {
    #[error("not a git repository")]
    NotARepository,
    #[error("git is not installed")]
    NotInstalled,
    #[error("git did not answer within {0:?}")]
    TooSlow(Duration),
    #[error("git failed: {0}")]
    Failed(String),
}

/// Runs `git ARGS` in `dir`, bounded; its output.
fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, GitError> {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.untrackedCache=false",
            "-c",
            "core.quotePath=false",
        ])
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => GitError::NotInstalled,
            _ => GitError::Failed(format!("cannot run git: {e}")),
        })?;
    // Both pipes are read while git runs (a full one would stall it), each up to a limit.
    let read = |pipe: Option<Box<dyn Read + Send>>, limit: u64| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = (&mut pipe).take(limit).read_to_end(&mut out);
                let _ = std::io::copy(&mut pipe, &mut std::io::sink());
            }
            out
        })
    };
    let reader = read(child.stdout.take().map(|p| Box::new(p) as _), MAX_OUTPUT);
    let errors = read(child.stderr.take().map(|p| Box::new(p) as _), 4096);
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < TIME_LIMIT => {
                std::thread::sleep(Duration::from_millis(5));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(GitError::TooSlow(TIME_LIMIT));
            }
        }
    };
    let out = reader.join().unwrap_or_default();
    if status.success() {
        return Ok(out);
    }
    let err = String::from_utf8_lossy(&errors.join().unwrap_or_default()).into_owned();
    if err.contains("not a git repository") {
        return Err(GitError::NotARepository);
    }
    Err(GitError::Failed(crate::text::short(err.trim(), 300)))
}

/// NUL-separated names.
fn names(out: &[u8]) -> impl Iterator<Item = String> + '_ {
    out.split(|b| *b == 0)
        .filter(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned())
}

/// The workspace's state now, for what changes after it (paths relative to it).
pub fn baseline(dir: &Path) -> Result<Baseline, GitError> {
    let commit = match git(dir, &["rev-parse", "--verify", "-q", "HEAD"]) {
        Ok(out) => Some(String::from_utf8_lossy(&out).trim().to_owned()),
        Err(GitError::Failed(_)) => None,
        Err(err) => return Err(err),
    };
    let mut dirty = BTreeMap::new();
    let changed = match &commit {
        Some(commit) => git(
            dir,
            &["diff", "--name-only", "-z", "--no-renames", commit.as_str()],
        )?,
        None => Vec::new(),
    };
    let untracked = git(dir, &["ls-files", "--others", "--exclude-standard", "-z"])?;
    let paths: Vec<String> = names(&changed)
        .chain(names(&untracked))
        .take(MAX_FILES)
        .collect();
    let hashes = hash_objects(dir, &paths)?;
    for (path, hash) in paths.into_iter().zip(hashes) {
        dirty.insert(path, hash);
    }
    Ok(Baseline { commit, dirty })
}

/// The git hashes of `paths`' contents now (`None`: no such file), relative to `dir`.
fn hash_objects(dir: &Path, paths: &[String]) -> Result<Vec<Option<String>>, GitError> {
    let present: Vec<&String> = paths
        .iter()
        .filter(|p| dir.join(p).symlink_metadata().is_ok_and(|m| m.is_file()))
        .collect();
    let mut hashes = BTreeMap::new();
    if !present.is_empty() {
        let mut args = vec!["hash-object", "--no-filters", "--"];
        args.extend(present.iter().map(|p| p.as_str()));
        let out = git(dir, &args)?;
        for (path, hash) in present.iter().zip(String::from_utf8_lossy(&out).lines()) {
            hashes.insert((*path).clone(), hash.to_owned());
        }
    }
    Ok(paths.iter().map(|p| hashes.get(p).cloned()).collect())
}

/// What changed since `base`: tracked files that differ from its commit (committed since or
/// not), and files new since; a file already changed at the baseline counts only if its content
/// moved on since. At most [`MAX_FILES`].
pub fn changes_since(dir: &Path, base: &Baseline) -> Result<Vec<Change>, GitError> {
    let mut changes = Vec::new();
    if let Some(commit) = &base.commit {
        let out = git(
            dir,
            &[
                "diff",
                "--numstat",
                "-z",
                "--no-renames",
                "--no-ext-diff",
                "--no-textconv",
                "--relative",
                commit.as_str(),
            ],
        )?;
        for entry in out.split(|b| *b == 0).filter(|e| !e.is_empty()) {
            let entry = String::from_utf8_lossy(entry);
            let mut fields = entry.splitn(3, '\t');
            let (Some(added), Some(removed), Some(path)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            changes.push(Change {
                path: path.to_owned(),
                added: added.parse().ok(),
                removed: removed.parse().ok(),
            });
        }
    }
    let untracked = git(dir, &["ls-files", "--others", "--exclude-standard", "-z"])?;
    for path in names(&untracked) {
        let added = count_lines(&dir.join(&path));
        changes.push(Change {
            path,
            added,
            removed: Some(0),
        });
    }
    // A file changed at the baseline already: only if it changed again since.
    let known: Vec<String> = changes
        .iter()
        .filter(|c| base.dirty.contains_key(&c.path))
        .map(|c| c.path.clone())
        .collect();
    let now = hash_objects(dir, &known)?;
    let moved: BTreeMap<&String, bool> = known
        .iter()
        .zip(&now)
        .map(|(path, hash)| (path, base.dirty.get(path) != Some(hash)))
        .collect();
    changes.retain(|c| moved.get(&c.path).copied().unwrap_or(true));
    changes.truncate(MAX_FILES);
    Ok(changes)
}

/// The lines of a new file, read without following a link and only up to a limit.
fn count_lines(path: &Path) -> Option<u64> {
    let meta = path.symlink_metadata().ok()?;
    if !meta.is_file() || meta.len() > crate::workspace::MAX_FILE_BYTES {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    Some(bytes.iter().filter(|b| **b == b'\n').count() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, script: &str) {
        let ok = Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap()
            .success();
        assert!(ok, "{script}");
    }

    #[test]
    fn changes_since_the_baseline_leave_out_what_was_changed_already() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        sh(d, "git init -q && printf 'a\\nb\\n' > a.txt && printf 'x\\n' > b.txt && git add . && git commit -qm one");
        // Already changed when the plan was submitted: b.txt edited, c.txt new.
        sh(d, "printf 'y\\n' >> b.txt && printf 'c\\n' > c.txt");
        let base = baseline(d).unwrap();
        assert_eq!(base.dirty.keys().collect::<Vec<_>>(), ["b.txt", "c.txt"]);
        // Since: a.txt edited and committed, a new file, c.txt changed again; b.txt untouched.
        sh(d, "printf 'z\\n' >> a.txt && git commit -qam two && printf '1\\n2\\n3\\n' > new.txt && printf 'more\\n' >> c.txt");
        let changes = changes_since(d, &base).unwrap();
        let summary: Vec<(&str, Option<u64>, Option<u64>)> = changes
            .iter()
            .map(|c| (c.path.as_str(), c.added, c.removed))
            .collect();
        assert_eq!(
            summary,
            [
                ("a.txt", Some(1), Some(0)),
                ("c.txt", Some(2), Some(0)),
                ("new.txt", Some(3), Some(0))
            ]
        );
    }

    #[test]
    fn a_workspace_below_the_top_sees_only_its_own_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        sh(d, "git init -q && mkdir -p ws/src && echo a > ws/src/a.txt && echo o > other.txt && git add . && git commit -qm one");
        let ws = d.join("ws");
        let base = baseline(&ws).unwrap();
        sh(
            d,
            "echo b >> ws/src/a.txt && echo p >> other.txt && echo n > ws/new.txt",
        );
        let paths: Vec<String> = changes_since(&ws, &base)
            .unwrap()
            .into_iter()
            .map(|c| c.path)
            .collect();
        assert_eq!(paths, ["src/a.txt", "new.txt"]);
    }

    #[test]
    fn a_folder_that_is_no_repository_says_so() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(baseline(dir.path()), Err(GitError::NotARepository));
    }
}
