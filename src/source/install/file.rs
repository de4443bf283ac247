//! Writing a settings file without losing anything: read without blocking, links followed to
//! their final target, a backup beside it that never overwrites an older one, and the new file
//! put in place atomically with the old one's mode and owner.

use super::*;

/// The backups of `target` beside it, newest first.
pub(super) fn backups(target: &Path) -> Vec<PathBuf> {
    let Some(name) = target.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let prefix = format!("{name}.plandesk-backup-");
    let Ok(entries) = std::fs::read_dir(folder(target)) else {
        return Vec::new();
    };
    let mut found: Vec<(std::cmp::Reverse<(u64, u64)>, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let file_name = entry.file_name();
            let suffix = file_name.to_str()?.strip_prefix(&prefix)?;
            let (secs, n) = suffix.split_once('-').unwrap_or((suffix, "0"));
            let order = (secs.parse().ok()?, n.parse().ok()?);
            Some((std::cmp::Reverse(order), entry.path()))
        })
        .collect();
    found.sort_by_key(|(order, _)| *order);
    found.into_iter().map(|(_, path)| path).collect()
}

/// The folder a file lies in (`.` for a bare name).
pub(super) fn folder(file: &Path) -> &Path {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// `file` with every symbolic link on it followed to the final target (which may not exist
/// yet): a dotfile manager's link stays a link, and its target gets the change. A path reached
/// through a link is made canonical where it can be, so the backup's path reads plainly.
pub(super) fn resolve_links(file: &Path) -> Result<PathBuf, InstallError> {
    let mut path = file.to_owned();
    for links in 0..MAX_LINKS {
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => Some(meta),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(file_error(&path, e)),
        };
        match meta {
            Some(meta) if meta.file_type().is_symlink() => {
                let to = std::fs::read_link(&path).map_err(|e| file_error(&path, e))?;
                // A relative link is relative to the link's own folder.
                path = folder(&path).join(to);
            }
            _ if links == 0 => return Ok(path),
            _ => return Ok(canonical_folder(path)),
        }
    }
    Err(file_error(file, "goes through too many symbolic links"))
}

/// `path` with its folder made canonical (`a/../b/x` → `/…/b/x`), or as it is if it cannot be.
pub(super) fn canonical_folder(path: PathBuf) -> PathBuf {
    match (std::fs::canonicalize(folder(&path)), path.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => path,
    }
}

/// A settings file's text and what it is (mode, owner).
pub(super) struct Existing {
    pub(super) text: String,
    pub(super) meta: Metadata,
}

/// Reads `file`, `None` if there is none. Opened without blocking (a FIFO would wait for a
/// writer) and checked before reading: only a regular UTF-8 file of at most
/// [`MAX_SETTINGS_BYTES`], even one that grows while it is read (`flags`: `NOFOLLOW` for a
/// backup, which is ours and never a link).
pub(super) fn read(file: &Path, flags: OFlags) -> Result<Option<Existing>, InstallError> {
    let handle = match crate::untrusted::open_regular(file, flags) {
        Ok((handle, _)) => handle,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(file_error(file, e)),
    };
    let meta = handle.metadata().map_err(|e| file_error(file, e))?;
    let text =
        crate::untrusted::read_text(handle, MAX_SETTINGS_BYTES).map_err(|e| file_error(file, e))?;
    Ok(Some(Existing { text, meta }))
}

/// The mode and owner a file written in place of another keeps.
#[derive(Debug, Clone, Copy)]
pub(super) struct Keep {
    /// Permission bits (and set-id and sticky bits, for the file itself).
    mode: u32,
    /// `None`: a new file, owned by whoever makes it.
    owner: Option<(u32, u32)>,
}

/// Creates `dir/name` (or `dir/name-1`, `-2`, … if taken: nothing is ever overwritten) holding
/// `text`, with `keep`'s mode and owner, synced. Until its owner is set it is readable by its
/// owner at most, so it is never more readable than the file it copies.
pub(super) fn create_new(
    dir: &Path,
    name: &str,
    text: &str,
    keep: Keep,
) -> Result<PathBuf, InstallError> {
    for n in 0..MAX_NAME_TRIES {
        let path = match n {
            0 => dir.join(name),
            n => dir.join(format!("{name}-{n}")),
        };
        let opened = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(keep.mode & 0o600)
            .open(&path);
        let mut file = match opened {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(file_error(&path, e)),
        };
        let written = (|| -> std::io::Result<()> {
            file.write_all(text.as_bytes())?;
            if let Some((uid, gid)) = keep.owner {
                // Before the mode: a change of owner clears set-id bits.
                std::os::unix::fs::fchown(&file, Some(uid), Some(gid)).map_err(|e| {
                    std::io::Error::new(
                        e.kind(),
                        format!("cannot give it the old file's owner ({uid}:{gid}): {e}"),
                    )
                })?;
            }
            file.set_permissions(std::fs::Permissions::from_mode(keep.mode))?;
            file.sync_all()
        })();
        return match written {
            Ok(()) => Ok(path),
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                Err(file_error(&path, e))
            }
        };
    }
    Err(file_error(
        &dir.join(name),
        format!("{MAX_NAME_TRIES} files of this name already exist"),
    ))
}

/// Makes the change: the old file backed up beside it, the new one written atomically, with
/// the old one's mode and owner. If `file` is a symbolic link, its final target is what is
/// backed up and replaced. Returns the backup's path, if there was a file to back up.
pub fn apply(change: &Change, now_secs: u64) -> Result<Option<PathBuf>, InstallError> {
    if !change.changes_anything() {
        return Ok(None);
    }
    let target = &change.target;
    let dir = folder(target);
    let Some(name) = target.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Err(file_error(target, "not a file's path"));
    };
    // What was planned on must still be there: an edit made since is not lost.
    let current = read(target, OFlags::empty())?;
    if current.as_ref().map(|c| c.text.as_str()) != change.before.as_deref() {
        return Err(file_error(
            &change.file,
            "changed while Plandesk was installing; run the install again",
        ));
    }
    let keep = match &current {
        Some(current) => Keep {
            mode: current.meta.mode() & 0o7777,
            owner: Some((current.meta.uid(), current.meta.gid())),
        },
        None => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(NEW_FOLDER_MODE)
                .create(dir)
                .map_err(|e| file_error(dir, e))?;
            Keep {
                mode: NEW_FILE_MODE,
                owner: None,
            }
        }
    };
    if change.remove {
        return remove(target, &name, current, now_secs);
    }
    // Complete, with its mode and owner, before it takes the target's place.
    let temp = create_new(
        dir,
        &format!(".{name}.plandesk-{}", std::process::id()),
        &change.after,
        keep,
    )?;
    let backup = match &current {
        Some(current) => {
            let backup_keep = Keep {
                mode: keep.mode & 0o777,
                ..keep
            };
            let name = format!("{name}.plandesk-backup-{now_secs}");
            match create_new(dir, &name, &current.text, backup_keep) {
                Ok(path) => Some(path),
                Err(e) => {
                    let _ = std::fs::remove_file(&temp);
                    return Err(e);
                }
            }
        }
        None => None,
    };
    if let Err(e) = std::fs::rename(&temp, target) {
        let _ = std::fs::remove_file(&temp);
        return Err(file_error(target, e));
    }
    // The rename itself reaches the disk with its folder.
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(backup)
}

/// Removes a file of Plandesk's own (`current`, as read), keeping a copy beside it first.
fn remove(
    target: &Path,
    name: &str,
    current: Option<Existing>,
    now_secs: u64,
) -> Result<Option<PathBuf>, InstallError> {
    let Some(current) = current else {
        return Ok(None);
    };
    let keep = Keep {
        mode: current.meta.mode() & 0o777,
        owner: Some((current.meta.uid(), current.meta.gid())),
    };
    let dir = folder(target);
    let backup = create_new(
        dir,
        &format!("{name}.plandesk-backup-{now_secs}"),
        &current.text,
        keep,
    )?;
    std::fs::remove_file(target).map_err(|e| file_error(target, e))?;
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(Some(backup))
}
