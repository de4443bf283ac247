//! "Start at login, in the tray": an XDG autostart entry (`$XDG_CONFIG_HOME/autostart/
//! plandesk.desktop`) that starts this app hidden at login, and, while the option is on, a
//! closed window that hides to the tray instead of quitting.
//!
//! A package cannot write into its users' homes, so the default is settled at the app's first
//! start: on the user's own store (the one the launcher opens) the option is on unless the
//! person turned it off; on any other store (`--data-dir`, tests, `./x app`) it is off until
//! turned on, so development runs never touch the login session.

use std::io::Write;
use std::path::{Path, PathBuf};

use plandesk::view::Settings;
use plandesk::Engine;

const FILE_NAME: &str = "plandesk.desktop";

#[derive(Debug, thiserror::Error)]
pub enum AutostartError {
    #[error("no configuration folder (neither $XDG_CONFIG_HOME nor $HOME is set)")]
    NoConfigDir,
    #[error("the path {0} cannot be written in a desktop entry (it has a line break)")]
    Unwritable(PathBuf),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot remove {path}: {source}")]
    Remove {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The autostart entry this app writes: where, and what it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Autostart {
    pub file: PathBuf,
    exe: PathBuf,
    /// `--data-dir` for a store other than the user's own.
    data_dir: Option<PathBuf>,
}

impl Autostart {
    /// The entry for this binary on `data_dir`, in the user's autostart folder.
    pub fn for_this_app(data_dir: &Path) -> Result<Self, AutostartError> {
        let dir = dirs::config_dir()
            .ok_or(AutostartError::NoConfigDir)?
            .join("autostart");
        // Like the hooks, the entry names this binary by its real path, which stays put.
        let exe = std::env::current_exe()
            .and_then(std::fs::canonicalize)
            .unwrap_or_else(|_| PathBuf::from(plandesk::desktop::APP_BINARY));
        Ok(Self::at(&dir, exe, data_dir))
    }

    /// The entry in `dir` starting `exe` on `data_dir`.
    pub fn at(dir: &Path, exe: PathBuf, data_dir: &Path) -> Self {
        let data_dir = canonical(data_dir);
        Self {
            file: dir.join(FILE_NAME),
            exe,
            data_dir: (!is_user_store(&data_dir)).then_some(data_dir),
        }
    }

    /// The desktop entry's text.
    pub fn contents(&self) -> Result<String, AutostartError> {
        let mut exec = vec![exec_arg(&self.exe)?];
        if let Some(dir) = &self.data_dir {
            exec.push("--data-dir".into());
            exec.push(exec_arg(dir)?);
        }
        exec.push("--hidden".into());
        Ok(format!(
            "[Desktop Entry]\n\
             Type=Application\n\
             Name=Plandesk\n\
             Comment=Plandesk in the tray: it tells you when a plan waits for your review\n\
             Exec={}\n\
             TryExec={}\n\
             Icon={}\n\
             Terminal=false\n\
             NoDisplay=true\n\
             X-GNOME-Autostart-enabled=true\n",
            exec.join(" "),
            string_value(&self.exe)?,
            plandesk::desktop::APP_BINARY,
        ))
    }

    /// Whether the entry is there as this app would write it.
    pub fn is_written(&self) -> bool {
        match (std::fs::read_to_string(&self.file), self.contents()) {
            (Ok(found), Ok(ours)) => found == ours,
            _ => false,
        }
    }

    /// Writes the entry (atomically), unless it is already there.
    pub fn write(&self) -> Result<(), AutostartError> {
        if self.is_written() {
            return Ok(());
        }
        let contents = self.contents()?;
        let failed = |source| AutostartError::Write {
            path: self.file.clone(),
            source,
        };
        let dir = self.file.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(failed)?;
        let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
        temp.write_all(contents.as_bytes()).map_err(failed)?;
        temp.persist(&self.file).map_err(|e| failed(e.error))?;
        Ok(())
    }

    /// Removes the entry if it is this app's (one another build or store wrote is left alone).
    pub fn remove(&self) -> Result<(), AutostartError> {
        if !self.is_written() {
            return Ok(());
        }
        std::fs::remove_file(&self.file).map_err(|source| AutostartError::Remove {
            path: self.file.clone(),
            source,
        })
    }
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// Whether `data_dir` is the user's own store: where the app opens without `--data-dir`.
pub fn is_user_store(data_dir: &Path) -> bool {
    let own = dirs::data_dir().map(|d| d.join("plandesk"));
    own.is_some_and(|own| canonical(&own) == canonical(data_dir))
}

/// A path as a desktop-entry string value (backslashes escaped).
fn string_value(path: &Path) -> Result<String, AutostartError> {
    let text = path.to_string_lossy();
    if text.contains(['\n', '\r']) {
        return Err(AutostartError::Unwritable(path.to_owned()));
    }
    Ok(text.replace('\\', "\\\\"))
}

/// A path as one argument of an `Exec` key: quoted when it has anything but plain characters
/// (with `"`, `` ` ``, `$` and `\` escaped inside the quotes), then escaped as a string value,
/// and `%` doubled so it is not read as a field code.
fn exec_arg(path: &Path) -> Result<String, AutostartError> {
    let text = path.to_string_lossy();
    if text.contains(['\n', '\r']) {
        return Err(AutostartError::Unwritable(path.to_owned()));
    }
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/-_.,+=:@".contains(c));
    let quoted = if plain {
        text.into_owned()
    } else {
        let mut quoted = String::from("\"");
        for c in text.chars() {
            if matches!(c, '"' | '`' | '$' | '\\') {
                quoted.push('\\');
            }
            quoted.push(c);
        }
        quoted.push('"');
        quoted
    };
    Ok(quoted.replace('\\', "\\\\").replace('%', "%%"))
}

/// Settles the option at start: on the user's own store a first start turns it on (and writes
/// the entry); while it is on the entry is kept written (the binary may have moved). Returns
/// whether it is on.
pub async fn settle(engine: &Engine, entry: &Autostart) -> bool {
    let saved = Settings::saved_start_at_login(engine).await.ok().flatten();
    let on = saved.unwrap_or(entry.data_dir.is_none());
    if on {
        match entry.write() {
            Ok(()) => {
                if saved.is_none() {
                    let _ = Settings::save_start_at_login(engine, true).await;
                }
            }
            Err(err) => eprintln!("plandesk-app: cannot start at login: {err}"),
        }
    }
    on
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn plain_paths_stay_plain_and_others_are_quoted() {
        assert_eq!(
            exec_arg(Path::new("/usr/bin/plandesk-app")).unwrap(),
            "/usr/bin/plandesk-app"
        );
        assert_eq!(
            exec_arg(Path::new("/home/a b/100%/$x\"y")).unwrap(),
            r#""/home/a b/100%%/\\$x\\"y""#
        );
        assert!(exec_arg(Path::new("/a\nb")).is_err());
    }

    #[test]
    fn an_entry_for_another_store_names_it_and_is_removed_only_if_ours() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        std::fs::create_dir_all(&store).unwrap();
        let entry = Autostart::at(dir.path(), PathBuf::from("/opt/p/plandesk-app"), &store);
        let text = entry.contents().unwrap();
        assert!(
            text.contains(&format!(
                "Exec=/opt/p/plandesk-app --data-dir {} --hidden\n",
                store.canonicalize().unwrap().display()
            )),
            "{text}"
        );
        assert!(text.contains("TryExec=/opt/p/plandesk-app\n"), "{text}");
        entry.write().unwrap();
        assert!(entry.is_written());
        let other = Autostart::at(dir.path(), PathBuf::from("/usr/bin/plandesk-app"), &store);
        other.remove().unwrap();
        assert!(entry.file.exists(), "another build's entry is left alone");
        entry.remove().unwrap();
        assert!(!entry.file.exists());
    }
}
