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

/// A workspace as git is asked about it: its folder, and the configuration that keeps git from
/// running anything the repository names. Its clean and process filters would run when git
/// compares the working tree with a commit (`.gitattributes` and `filter.*` are the
/// repository's, so whoever can write to the workspace, an agent included, names them): each
/// driver the configuration defines is set to nothing for Plandesk's calls.
struct Repo<'a> {
    dir: &'a Path,
    overrides: Vec<String>,
}

impl<'a> Repo<'a> {
    fn open(dir: &'a Path) -> Result<Self, GitError> {
        let mut repo = Self {
            dir,
            overrides: Vec::new(),
        };
        // Exit 1: no such setting.
        let config = repo.git_ok(&["config", "-z", "--get-regexp", r"^filter\."], &[0, 1])?;
        let mut drivers: Vec<String> = config
            .split(|b| *b == 0)
            .filter_map(|entry| {
                let key =
                    String::from_utf8_lossy(entry.split(|b| *b == b'\n').next()?).into_owned();
                let driver = key.strip_prefix("filter.")?.rsplit_once('.')?.0.to_owned();
                Some(driver)
            })
            .collect();
        drivers.sort();
        drivers.dedup();
        for driver in drivers {
            for var in ["clean", "smudge", "process"] {
                repo.overrides.push("-c".into());
                repo.overrides.push(format!("filter.{driver}.{var}="));
            }
            repo.overrides.push("-c".into());
            repo.overrides
                .push(format!("filter.{driver}.required=false"));
        }
        Ok(repo)
    }

    /// Runs `git ARGS` in the workspace, bounded; its output.
    fn git(&self, args: &[&str]) -> Result<Vec<u8>, GitError> {
        self.git_ok(args, &[0])
    }

    /// [`Repo::git`], taking each of `ok` for an exit code that succeeded (`diff --no-index`
    /// exits 1 when the files differ).
    fn git_ok(&self, args: &[&str], ok: &[i32]) -> Result<Vec<u8>, GitError> {
        run(self.dir, &self.overrides, args, ok)
    }
}

/// Runs `git OVERRIDES ARGS` in `dir`, bounded; its output.
fn run(dir: &Path, overrides: &[String], args: &[&str], ok: &[i32]) -> Result<Vec<u8>, GitError> {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(overrides)
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.untrackedCache=false",
            "-c",
            "core.quotePath=false",
        ])
        .args(args)
        // The workspace's own repository, whatever the environment names.
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_OBJECT_DIRECTORY")
        .env_remove("GIT_CEILING_DIRECTORIES")
        .env("GIT_OPTIONAL_LOCKS", "0")
        // A path is a path, never pathspec magic (`:(top)`, `*`).
        .env("GIT_LITERAL_PATHSPECS", "1")
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
    if status.code().is_some_and(|code| ok.contains(&code)) {
        return Ok(out);
    }
    let err = String::from_utf8_lossy(&errors.join().unwrap_or_default()).into_owned();
    if err.contains("not a git repository") {
        return Err(GitError::NotARepository);
    }
    // git's own words may carry what a filter or a hook printed: never raw to a terminal.
    Err(GitError::Failed(
        crate::text::terminal_safe(&crate::text::short(err.trim(), 300)).into_owned(),
    ))
}

/// NUL-separated names.
fn names(out: &[u8]) -> impl Iterator<Item = String> + '_ {
    out.split(|b| *b == 0)
        .filter(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned())
}

/// Whether `dir` is in a git repository, by looking (a `.git` in it or a folder above it):
/// most workspaces that are not cost no git process.
fn in_repository(dir: &Path) -> bool {
    dir.ancestors()
        .any(|folder| folder.join(".git").symlink_metadata().is_ok())
}

/// The workspace's state now, for what changes after it (paths relative to it).
pub fn baseline(dir: &Path) -> Result<Baseline, GitError> {
    if !in_repository(dir) {
        return Err(GitError::NotARepository);
    }
    let repo = Repo::open(dir)?;
    let commit = match repo.git(&["rev-parse", "--verify", "-q", "HEAD"]) {
        Ok(out) => Some(String::from_utf8_lossy(&out).trim().to_owned()),
        Err(GitError::Failed(_)) => None,
        Err(err) => return Err(err),
    };
    let mut dirty = BTreeMap::new();
    let changed = match &commit {
        Some(commit) => repo.git(&[
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            "--relative",
            "--no-ext-diff",
            "--no-textconv",
            commit.as_str(),
        ])?,
        None => Vec::new(),
    };
    let untracked = repo.git(&["ls-files", "--others", "--exclude-standard", "-z"])?;
    let paths: Vec<String> = names(&changed)
        .chain(names(&untracked))
        .take(MAX_FILES)
        .collect();
    let hashes = hash_objects(&repo, &paths)?;
    for (path, hash) in paths.into_iter().zip(hashes) {
        dirty.insert(path, hash);
    }
    Ok(Baseline { commit, dirty })
}

/// The git hashes of `paths`' contents now (`None`: no such file), relative to `dir`.
fn hash_objects(repo: &Repo, paths: &[String]) -> Result<Vec<Option<String>>, GitError> {
    let dir = repo.dir;
    let present: Vec<&String> = paths
        .iter()
        .filter(|p| dir.join(p).symlink_metadata().is_ok_and(|m| m.is_file()))
        .collect();
    let mut hashes = BTreeMap::new();
    if !present.is_empty() {
        let mut args = vec!["hash-object", "--no-filters", "--"];
        args.extend(present.iter().map(|p| p.as_str()));
        let out = repo.git(&args)?;
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
    let repo = Repo::open(dir)?;
    let mut changes = Vec::new();
    if let Some(commit) = &base.commit {
        let out = repo.git(&[
            "diff",
            "--numstat",
            "-z",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            "--relative",
            commit.as_str(),
        ])?;
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
    let untracked = repo.git(&["ls-files", "--others", "--exclude-standard", "-z"])?;
    for path in names(&untracked).take(MAX_FILES) {
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
    let now = hash_objects(&repo, &known)?;
    let moved: BTreeMap<&String, bool> = known
        .iter()
        .zip(&now)
        .map(|(path, hash)| (path, base.dirty.get(path) != Some(hash)))
        .collect();
    changes.retain(|c| moved.get(&c.path).copied().unwrap_or(true));
    changes.truncate(MAX_FILES);
    Ok(changes)
}

/// The most of one file's diff shown.
pub const MAX_DIFF: usize = 256 * 1024;

/// One file's changes since `base` as a unified diff (cut at [`MAX_DIFF`]); `path` is relative
/// to the workspace and must stay inside it.
pub fn file_diff(dir: &Path, base: &Baseline, path: &str) -> Result<String, GitError> {
    let clean = !path.is_empty()
        && Path::new(path)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !clean {
        return Err(GitError::Failed(format!(
            "{} is not a path in the workspace",
            crate::text::short(path, 100)
        )));
    }
    let repo = Repo::open(dir)?;
    let tracked = match &base.commit {
        Some(commit) => {
            let spec = format!("{commit}:./{path}");
            repo.git(&["cat-file", "-e", spec.as_str()]).is_ok()
        }
        None => false,
    };
    let out = match (&base.commit, tracked) {
        (Some(commit), true) => repo.git(&[
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--relative",
            commit.as_str(),
            "--",
            path,
        ])?,
        _ => {
            // Read by git only if it is a file (not a link to follow, not a FIFO to block on).
            let meta = dir.join(path).symlink_metadata();
            if !meta.as_ref().is_ok_and(|m| m.is_file()) {
                return Err(GitError::Failed(format!(
                    "{} is no regular file",
                    crate::text::short(path, 100)
                )));
            }
            repo.git_ok(
                &[
                    "diff",
                    "--no-index",
                    "--no-ext-diff",
                    "--no-textconv",
                    "--no-color",
                    "--",
                    "/dev/null",
                    path,
                ],
                &[0, 1],
            )?
        }
    };
    let text = String::from_utf8_lossy(&out).into_owned();
    Ok(crate::text::cut_to(
        text,
        MAX_DIFF,
        "\n… (cut: the diff is longer)\n",
    ))
}

/// The lines of a new file: opened without following a link or waiting on a FIFO, only a
/// regular file, read up to a limit.
fn count_lines(path: &Path) -> Option<u64> {
    use rustix::fs::{FileType, Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::empty()).ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return None;
    }
    let limit = crate::workspace::MAX_FILE_BYTES;
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() as u64 <= limit).then(|| bytes.iter().filter(|b| **b == b'\n').count() as u64)
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
    fn a_files_diff_since_the_baseline_is_read_by_git_and_bounded_to_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        sh(
            d,
            "git init -q && printf 'a\\n' > a.txt && git add . && git commit -qm one",
        );
        let base = baseline(d).unwrap();
        sh(d, "printf 'b\\n' >> a.txt && printf 'n\\n' > ':(top)x'");
        let diff = file_diff(d, &base, "a.txt").unwrap();
        assert!(diff.contains("+b"), "{diff}");
        let new = file_diff(d, &base, ":(top)x").unwrap();
        assert!(
            new.contains("+n"),
            "a new file, its name taken literally: {new}"
        );
        for bad in ["../etc/passwd", "/etc/passwd", "", "a/../../b"] {
            assert!(file_diff(d, &base, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn nothing_the_repository_configures_is_run() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let marker = d.join("ran");
        sh(
            d,
            "git init -q && echo a > a.txt && git add . && git commit -qm one",
        );
        // What an agent in the workspace could write: a filter driver and what it applies to.
        sh(
            d,
            &format!(
                "printf '* filter=pwn diff=pwn\\n' > .gitattributes && \
                 git config filter.pwn.clean 'touch {m}; cat' && \
                 git config filter.pwn.process 'touch {m}' && \
                 git config diff.pwn.textconv 'touch {m}; cat' && \
                 git config diff.external 'touch {m}' && \
                 git config core.fsmonitor 'touch {m}'",
                m = marker.display()
            ),
        );
        let base = baseline(d).unwrap();
        sh(d, "echo b >> a.txt && echo n > new.txt");
        changes_since(d, &base).unwrap();
        file_diff(d, &base, "a.txt").unwrap();
        file_diff(d, &base, "new.txt").unwrap();
        assert!(!marker.exists(), "git ran what the repository configures");
    }

    #[test]
    fn a_file_changed_before_the_baseline_below_the_top_is_not_counted() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        sh(d, "git init -q && mkdir -p ws && echo a > ws/a.txt && echo c > ws/c.txt && git add . && git commit -qm one");
        sh(d, "echo dirty >> ws/a.txt");
        let ws = d.join("ws");
        let base = baseline(&ws).unwrap();
        assert_eq!(base.dirty.keys().collect::<Vec<_>>(), ["a.txt"]);
        sh(d, "echo more >> ws/c.txt");
        let paths: Vec<String> = changes_since(&ws, &base)
            .unwrap()
            .into_iter()
            .map(|c| c.path)
            .collect();
        assert_eq!(paths, ["c.txt"]);
    }

    #[test]
    fn a_fifo_or_a_link_in_the_workspace_is_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        sh(
            d,
            "git init -q && echo a > a.txt && git add . && git commit -qm one",
        );
        let base = baseline(d).unwrap();
        sh(d, "mkfifo pipe && ln -s /etc/passwd link");
        let started = std::time::Instant::now();
        changes_since(d, &base).unwrap();
        assert!(file_diff(d, &base, "pipe").is_err(), "no FIFO is opened");
        assert!(file_diff(d, &base, "link").is_err(), "no link is followed");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "nothing waited on the FIFO"
        );
    }

    #[test]
    fn a_folder_that_is_no_repository_says_so() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(baseline(dir.path()), Err(GitError::NotARepository));
    }
}
