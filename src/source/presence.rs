//! Whether the desktop app is running on a store: the app holds an exclusive lock on
//! `app.lock` in the data folder for as long as it runs (the OS drops it when the process dies,
//! however it dies). A hook that finds the lock free knows nobody will be told of its plan, and
//! notifies the person itself. The app also keeps a single instance per store under a name
//! derived from the store's path ([`store_tag`]): started again on the same store, it hands
//! over to the running one.

use std::fs::{File, OpenOptions};
use std::path::Path;

use rustix::fs::{flock, FlockOperation};
use sha2::{Digest, Sha256};

const LOCK_FILE: &str = "app.lock";

/// Held by the running app; dropping it releases the lock.
#[derive(Debug)]
pub struct AppPresence(#[allow(dead_code)] File);

fn open(data_dir: &Path) -> std::io::Result<File> {
    std::fs::create_dir_all(data_dir)?;
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(data_dir.join(LOCK_FILE))
}

/// Marks the app as running on `data_dir`; `None` if another app instance already is.
pub fn hold(data_dir: &Path) -> std::io::Result<Option<AppPresence>> {
    let file = open(data_dir)?;
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Some(AppPresence(file))),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
        Err(errno) => Err(errno.into()),
    }
}

/// Whether an app instance is running on `data_dir` now.
pub fn app_running(data_dir: &Path) -> bool {
    let Ok(file) = open(data_dir) else {
        return false;
    };
    match flock(&file, FlockOperation::NonBlockingLockShared) {
        Ok(()) => {
            let _ = flock(&file, FlockOperation::Unlock);
            false
        }
        Err(_) => true,
    }
}

/// A short tag naming `data_dir`'s store, the same for every spelling of its path (it is
/// canonicalised): `store_` and 16 hex digits of the path's SHA-256, usable as a D-Bus name
/// element.
pub fn store_tag(data_dir: &Path) -> String {
    let path = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_owned());
    let digest = Sha256::digest(path.as_os_str().as_encoded_bytes());
    format!("store_{}", &hex::encode(digest)[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presence_is_seen_while_held_and_gone_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!app_running(dir.path()));
        let held = hold(dir.path()).unwrap().unwrap();
        assert!(app_running(dir.path()));
        assert!(hold(dir.path()).unwrap().is_none(), "one app per store");
        drop(held);
        assert!(!app_running(dir.path()));
    }

    #[test]
    fn a_store_has_one_tag_however_its_path_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("data");
        std::fs::create_dir_all(&store).unwrap();
        let tag = store_tag(&store);
        assert_eq!(tag, store_tag(&dir.path().join("data/../data/.")));
        assert_ne!(
            tag,
            store_tag(dir.path()),
            "another store, another instance"
        );
        assert!(tag.starts_with("store_") && tag.len() == 22, "{tag}");
    }
}
