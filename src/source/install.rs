//! `plandesk install TARGET [--uninstall] [--print]`, a target of [`Target::ALL`] (an agent, or
//! `mcp`): merges Plandesk's hook, plugin or extension (or MCP server) into the agent's
//! settings. Ours is recognised by its exact shape (our matcher, one command hook running
//! `PROGRAM [--data-dir DIR] hook AGENT`; for MCP, the `plandesk` server with our arguments), so
//! nobody else's entry is touched, and a hook from a renamed or moved binary is still found. A
//! file that is not valid JSON is refused, not overwritten; installing twice changes nothing. The settings file is read without blocking (a
//! FIFO or a huge file is refused). A symbolic link to it (a dotfile manager's) is followed:
//! its final target is backed up beside itself, never overwriting an older backup, and replaced
//! atomically, keeping its mode and owner, while the link stays a link. Uninstalling gives back
//! the exact bytes of a backup whose JSON equals the result, so install then uninstall leaves
//! the file as it was.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;

use crate::text::shell_quote;
use crate::vocabulary::SourceKind;

/// A hook may wait this long for a person (seconds): longer than any deadline of ours, so the
/// agent never times the hook out first (several agents let a plan through on a timeout).
pub const HOOK_TIMEOUT_SECS: u64 = 86_400;

/// The largest settings file read: agents' settings are a few KiB, and a file far past that is
/// not one to load into memory and rewrite.
const MAX_SETTINGS_BYTES: u64 = 4 * 1024 * 1024;

/// How many symbolic links a settings path may go through (the kernel's own limit for a path).
const MAX_LINKS: usize = 40;

/// How many names a backup (or temporary file) tries before giving up: one per install in the
/// same second is plenty.
const MAX_NAME_TRIES: u64 = 1000;

/// The mode of a settings file made where none was: agents' settings can hold keys (Claude
/// Code's and MCP servers' `env`, Gemini CLI's API key), which only their owner needs to read.
/// Git keeps no read bits, so a `.mcp.json` shared through a repository is not affected.
const NEW_FILE_MODE: u32 = 0o600;

/// The mode of a folder made for a new settings file, for the same reason.
const NEW_FOLDER_MODE: u32 = 0o700;

/// What to install.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    ClaudeCode,
    Codex,
    Gemini,
    Droid,
    QwenCode,
    KimiCode,
    Copilot,
    OpenCode,
    /// Kilo CLI: OpenCode's plugin, in Kilo's plugins folder.
    Kilo,
    /// Pi: Plandesk's extension, in Pi's extensions folder.
    Pi,
    /// An MCP server entry in the project's `.mcp.json`.
    Mcp,
}

impl Target {
    /// Every target, in the order people see them listed.
    pub const ALL: [Target; 11] = [
        Target::ClaudeCode,
        Target::Codex,
        Target::Gemini,
        Target::Droid,
        Target::QwenCode,
        Target::KimiCode,
        Target::Copilot,
        Target::OpenCode,
        Target::Kilo,
        Target::Pi,
        Target::Mcp,
    ];

    /// Its name on the command line (`plandesk install NAME`) and in the app.
    pub fn id(self) -> &'static str {
        match self {
            Target::Mcp => "mcp",
            agent => agent.source().as_str(),
        }
    }

    /// The target named `id` (see [`Target::id`]).
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|target| target.id() == id)
    }

    pub fn source(self) -> SourceKind {
        match self {
            Target::ClaudeCode => SourceKind::ClaudeCode,
            Target::Codex => SourceKind::Codex,
            Target::Gemini => SourceKind::Gemini,
            Target::Droid => SourceKind::Droid,
            Target::QwenCode => SourceKind::QwenCode,
            Target::KimiCode => SourceKind::KimiCode,
            Target::Copilot => SourceKind::Copilot,
            Target::OpenCode => SourceKind::OpenCode,
            Target::Kilo => SourceKind::Kilo,
            Target::Pi => SourceKind::Pi,
            Target::Mcp => SourceKind::Mcp,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{file}: {message}")]
    File { file: PathBuf, message: String },
    #[error("{file} is not valid JSON ({message}); fix or move it, then install again")]
    NotJson { file: PathBuf, message: String },
    #[error("cannot tell where the home folder is (HOME is not set)")]
    NoHome,
}

impl InstallError {
    /// The settings file it is about, if it is about one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            InstallError::File { file, .. } | InstallError::NotJson { file, .. } => Some(file),
            InstallError::NoHome => None,
        }
    }
}

fn file_error(file: &Path, message: impl ToString) -> InstallError {
    InstallError::File {
        file: file.to_owned(),
        message: message.to_string(),
    }
}

/// Where things are: the agents' config folders and the command that runs Plandesk.
#[derive(Debug, Clone)]
pub struct Places {
    pub home: PathBuf,
    /// `CLAUDE_CONFIG_DIR`, `CODEX_HOME`, if set.
    pub claude_dir: Option<PathBuf>,
    pub codex_home: Option<PathBuf>,
    /// `COPILOT_HOME`, if set.
    pub copilot_home: Option<PathBuf>,
    /// `XDG_CONFIG_HOME`, if set (OpenCode's plugins are under it).
    pub config_home: Option<PathBuf>,
    /// `PI_CODING_AGENT_DIR`, if set (Pi's folder, else `~/.pi/agent`).
    pub pi_dir: Option<PathBuf>,
    /// `KIMI_CODE_HOME`, if set (Kimi Code's folder, else `~/.kimi-code`).
    pub kimi_home: Option<PathBuf>,
    /// The folder `install mcp` writes `.mcp.json` into (and the server's workspace).
    pub project: PathBuf,
    /// This `plandesk` binary, absolute.
    pub exe: PathBuf,
    /// Passed on to the hook when the store is not the default one.
    pub data_dir: Option<PathBuf>,
    /// Also install the hooks that record what an agent does after its plan is approved
    /// (`plandesk record`); `false` removes them.
    pub record: bool,
}

impl Places {
    /// From the environment of this process.
    pub fn from_env(exe: PathBuf, data_dir: Option<PathBuf>) -> Result<Self, InstallError> {
        let env_dir = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Ok(Self {
            home: env_dir("HOME").ok_or(InstallError::NoHome)?,
            claude_dir: env_dir("CLAUDE_CONFIG_DIR"),
            codex_home: env_dir("CODEX_HOME"),
            copilot_home: env_dir("COPILOT_HOME"),
            config_home: env_dir("XDG_CONFIG_HOME"),
            pi_dir: env_dir("PI_CODING_AGENT_DIR"),
            kimi_home: env_dir(crate::source::kimi::HOME_ENV),
            project: std::env::current_dir().map_err(|e| file_error(Path::new("."), e))?,
            exe,
            data_dir,
            record: true,
        })
    }

    /// The command line an agent runs: this binary, the store if not the default, `args`.
    fn command(&self, args: &str) -> String {
        let mut command = shell_quote(&self.exe.display().to_string()).into_owned();
        if let Some(dir) = &self.data_dir {
            command.push_str(" --data-dir ");
            command.push_str(&shell_quote(&dir.display().to_string()));
        }
        command.push(' ');
        command.push_str(args);
        command
    }
}

/// A change to one settings file, computed but not yet made.
#[derive(Debug, Clone)]
pub struct Change {
    /// The settings file as the agent names it (it may be a symbolic link).
    pub file: PathBuf,
    pub before: Option<String>,
    pub after: String,
    /// What the person should know (e.g. a hook Codex must be told to trust).
    pub note: Option<String>,
    /// `file` with every link followed: what is read, backed up beside itself and replaced.
    target: PathBuf,
    /// The file goes (a file of Plandesk's own, uninstalled): `after` is not written.
    remove: bool,
}

impl Change {
    pub fn changes_anything(&self) -> bool {
        match self.remove {
            true => self.before.is_some(),
            false => self.before.as_deref() != Some(self.after.as_str()),
        }
    }
}

mod file;
mod hooks;
mod kimi;
mod mcp;
mod script;
mod settings;
#[cfg(test)]
mod tests;
mod words;

pub use file::apply;
pub use hooks::plan;
pub use script::check;
pub(crate) use words::shell_words;
