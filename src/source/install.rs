//! `plandesk install claude-code|codex|gemini|mcp [--uninstall] [--print]`: merges Plandesk's
//! hook (or MCP server) into the agent's settings file. Ours is recognised by its exact shape
//! (our matcher, one command hook running `PROGRAM [--data-dir DIR] hook AGENT`; for MCP, the
//! `plandesk` server with our arguments), so nobody else's entry is touched, and a hook from a
//! renamed or moved binary is still found. A file that is not valid JSON is refused, not
//! overwritten; installing twice changes nothing. The settings file is read without blocking (a
//! FIFO or a huge file is refused). A symbolic link to it (a dotfile manager's) is followed:
//! its final target is backed up beside itself, never overwriting an older backup, and replaced
//! atomically, keeping its mode and owner, while the link stays a link. Uninstalling gives back
//! the exact bytes of a backup whose JSON equals the result, so install then uninstall leaves
//! the file as it was.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use serde_json::{json, Map, Value};

use crate::store::SourceKind;
use crate::text::shell_quote;

/// A hook may wait this long for a person (seconds): longer than any deadline of ours, so the
/// agent never times the hook out first (several agents let a plan through on a timeout).
pub const HOOK_TIMEOUT_SECS: u64 = 86_400;

/// The largest settings file read: agents' settings are a few KiB, and a file far past that is
/// not one to load into memory and rewrite.
const MAX_SETTINGS_BYTES: u64 = 4 * 1024 * 1024;

/// How many symbolic links a settings path may go through (the kernel's own limit for a path).
const MAX_LINKS: usize = 40;

/// On uninstall, how many of the newest backups are compared with the result.
const MAX_BACKUPS_COMPARED: usize = 32;

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
    /// An MCP server entry in the project's `.mcp.json`.
    Mcp,
}

impl Target {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "claude-code" | "claude" => Some(Target::ClaudeCode),
            "codex" => Some(Target::Codex),
            "gemini" | "gemini-cli" => Some(Target::Gemini),
            "mcp" => Some(Target::Mcp),
            _ => None,
        }
    }

    pub fn source(self) -> SourceKind {
        match self {
            Target::ClaudeCode => SourceKind::ClaudeCode,
            Target::Codex => SourceKind::Codex,
            Target::Gemini => SourceKind::Gemini,
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
    /// The folder `install mcp` writes `.mcp.json` into (and the server's workspace).
    pub project: PathBuf,
    /// This `plandesk` binary, absolute.
    pub exe: PathBuf,
    /// Passed on to the hook when the store is not the default one.
    pub data_dir: Option<PathBuf>,
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
            project: std::env::current_dir().map_err(|e| file_error(Path::new("."), e))?,
            exe,
            data_dir,
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
}

impl Change {
    pub fn changes_anything(&self) -> bool {
        self.before.as_deref() != Some(self.after.as_str())
    }
}

/// Where an agent's hook goes and how ours looks there.
struct HookPlace {
    file: PathBuf,
    event: &'static str,
    /// Our group's `matcher`; `None`: the group has none (Codex's Stop hooks match nothing).
    matcher: Option<&'static str>,
    /// The agent `plandesk hook` is told it runs under.
    agent: &'static str,
}

/// Computes what installing (or uninstalling) `target` does to its settings file.
pub fn plan(target: Target, uninstall: bool, places: &Places) -> Result<Change, InstallError> {
    let (place, hook, note) = match target {
        Target::ClaudeCode => {
            let dir = places
                .claude_dir
                .clone()
                .unwrap_or_else(|| places.home.join(".claude"));
            let place = HookPlace {
                file: dir.join("settings.json"),
                event: "PermissionRequest",
                matcher: Some("ExitPlanMode"),
                agent: "claude-code",
            };
            let hook = json!({
                "type": "command",
                "command": places.command("hook claude-code"),
                "timeout": HOOK_TIMEOUT_SECS,
            });
            (place, hook, None)
        }
        Target::Codex => {
            let dir = places
                .codex_home
                .clone()
                .unwrap_or_else(|| places.home.join(".codex"));
            let place = HookPlace {
                file: dir.join("hooks.json"),
                event: "Stop",
                matcher: None,
                agent: "codex",
            };
            let hook = json!({
                "type": "command",
                "command": places.command("hook codex"),
                "timeout": HOOK_TIMEOUT_SECS,
                "statusMessage": "Waiting for the plan review in Plandesk",
            });
            let note = (!uninstall).then(|| {
                "Codex runs a new hook only once you trust it: start Codex and answer \"Hooks need \
                 review\" with \"Trust all and continue\" (or type /hooks)."
                    .to_owned()
            });
            (place, hook, note)
        }
        Target::Gemini => {
            let place = HookPlace {
                file: places.home.join(".gemini/settings.json"),
                event: "BeforeTool",
                matcher: Some("^exit_plan_mode$"),
                agent: "gemini",
            };
            let hook = json!({
                "type": "command",
                "command": places.command("hook gemini"),
                // Milliseconds here.
                "timeout": HOOK_TIMEOUT_SECS * 1000,
            });
            (place, hook, None)
        }
        Target::Mcp => return plan_mcp(uninstall, places),
    };
    let HookPlace {
        file,
        event,
        matcher,
        agent,
    } = place;
    let target = resolve_links(&file)?;
    let before = read(&target, OFlags::empty())?.map(|existing| existing.text);
    let mut settings = parse(&file, before.as_deref())?;
    let hooks = object_at(&mut settings, "hooks", &file)?;
    let groups = hooks
        .entry(event)
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(groups) = groups else {
        return Err(file_error(&file, format!("`hooks.{event}` is not a list")));
    };
    groups.retain(|g| !is_our_group(g, matcher, agent));
    if !uninstall {
        let mut group = Map::new();
        if let Some(matcher) = matcher {
            group.insert("matcher".into(), matcher.into());
        }
        group.insert("hooks".into(), json!([hook]));
        groups.push(Value::Object(group));
    }
    // No empty list or `hooks` object left of what install added.
    let path = ["hooks", event];
    drop_empty(&mut settings, &path);
    let after = finished(&target, before.as_deref(), &settings, uninstall, &path);
    Ok(Change {
        after,
        file,
        before,
        note,
        target,
    })
}

fn plan_mcp(uninstall: bool, places: &Places) -> Result<Change, InstallError> {
    let file = places.project.join(".mcp.json");
    let target = resolve_links(&file)?;
    let before = read(&target, OFlags::empty())?.map(|existing| existing.text);
    let mut settings = parse(&file, before.as_deref())?;
    let servers = object_at(&mut settings, "mcpServers", &file)?;
    let theirs = servers.get("plandesk").is_some_and(|s| !is_our_server(s));
    if theirs && !uninstall {
        return Err(file_error(
            &file,
            "`mcpServers.plandesk` is a server Plandesk did not write (its arguments are not \
             `[--data-dir DIR] mcp --workspace DIR`); rename or remove it, then install again",
        ));
    }
    if uninstall {
        if !theirs {
            servers.remove("plandesk");
        }
    } else {
        let mut args = Vec::new();
        if let Some(dir) = &places.data_dir {
            args.extend(["--data-dir".to_owned(), dir.display().to_string()]);
        }
        args.extend([
            "mcp".to_owned(),
            "--workspace".to_owned(),
            places.project.display().to_string(),
        ]);
        // Keys the person added to ours (a `timeout`, as the note below asks) stay.
        let server = servers
            .entry("plandesk")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(server) = server {
            server.insert("command".into(), places.exe.display().to_string().into());
            server.insert("args".into(), json!(args));
        }
    }
    let path = ["mcpServers"];
    drop_empty(&mut settings, &path);
    let note = (!uninstall).then(|| {
        "MCP clients time a tool call out (Codex after 60 s, Gemini CLI after 10 min, Claude Code \
         moves it to the background after 2 min): give `submit_plan` a long timeout — Codex: \
         tool_timeout_sec = 86400; Gemini CLI: \"timeout\": 86400000; Claude Code: \
         CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS=0."
            .to_owned()
    });
    Ok(Change {
        after: finished(&target, before.as_deref(), &settings, uninstall, &path),
        file,
        before,
        note,
        target,
    })
}

/// Whether a hook group is exactly one we write: our matcher (or none where we write none), one
/// hook, of type command, running `PROGRAM [--data-dir DIR] hook AGENT`. The program may be any
/// (the binary may have been renamed or moved since); nothing else is ours, however much it
/// mentions Plandesk.
fn is_our_group(group: &Value, matcher: Option<&str>, agent: &str) -> bool {
    let Some(group) = group.as_object() else {
        return false;
    };
    let same_matcher = match matcher {
        Some(matcher) => group.get("matcher").and_then(Value::as_str) == Some(matcher),
        None => !group.contains_key("matcher"),
    };
    let hooks = group.get("hooks").and_then(Value::as_array);
    let Some([hook]) = hooks.map(Vec::as_slice) else {
        return false;
    };
    same_matcher
        && hook.get("type").and_then(Value::as_str) == Some("command")
        && hook
            .get("command")
            .and_then(Value::as_str)
            .and_then(shell_words)
            .is_some_and(|words| {
                let words: Vec<&str> = words.iter().map(String::as_str).collect();
                matches!(
                    words.as_slice(),
                    [_, "hook", name] | [_, "--data-dir", _, "hook", name] if *name == agent
                )
            })
}

/// Whether an `mcpServers.plandesk` entry is one we write: a command and the arguments
/// `[--data-dir DIR] mcp --workspace DIR`.
fn is_our_server(server: &Value) -> bool {
    let command = server.get("command").and_then(Value::as_str);
    let args: Option<Vec<&str>> = server
        .get("args")
        .and_then(Value::as_array)
        .and_then(|args| args.iter().map(Value::as_str).collect());
    command.is_some()
        && args.is_some_and(|args| {
            matches!(
                args.as_slice(),
                ["mcp", "--workspace", _] | ["--data-dir", _, "mcp", "--workspace", _]
            )
        })
}

/// The words of a command line that is one simple command of literal words, as a POSIX shell
/// reads them: blanks split words; `'…'`, `"…"`, `\x` and `$'…'` (which [`shell_quote`] writes
/// for control characters) quote. Anything a shell would give another meaning (an operator such
/// as `;` or `|`, an expansion, a glob, a comment, an assignment) or an unclosed quote gives
/// `None`: such a command is not one we wrote. Unquoted, only the characters [`shell_quote`]
/// leaves bare (and a few other inert ones) are taken.
fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    // Bytes, not chars: `$'\xe2\x80\xae'` spells a character one byte at a time.
    let mut word: Option<Vec<u8>> = None;
    let mut chars = line.chars().peekable();
    let push = |word: &mut Option<Vec<u8>>, c: char| {
        let mut utf8 = [0u8; 4];
        word.get_or_insert_with(Vec::new)
            .extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
    };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => words.extend(word.take()),
            '\'' => {
                word.get_or_insert_with(Vec::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => push(&mut word, c),
                    }
                }
            }
            '"' => {
                word.get_or_insert_with(Vec::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' => return None,
                        '\\' => match chars.next()? {
                            '\n' => {}
                            c @ ('$' | '`' | '"' | '\\') => push(&mut word, c),
                            c => {
                                push(&mut word, '\\');
                                push(&mut word, c);
                            }
                        },
                        c => push(&mut word, c),
                    }
                }
            }
            '\\' => match chars.next()? {
                '\n' => {}
                c => push(&mut word, c),
            },
            '$' if chars.peek() == Some(&'\'') => {
                chars.next();
                let bytes = word.get_or_insert_with(Vec::new);
                ansi_c_quoted(&mut chars, bytes)?;
            }
            c if c.is_ascii_alphanumeric() || "._/-+,:@%^".contains(c) => push(&mut word, c),
            _ => return None,
        }
    }
    words.extend(word);
    Some(
        words
            .into_iter()
            .map(|w| String::from_utf8_lossy(&w).into_owned())
            .collect(),
    )
}

/// The rest of a `$'…'` word part, after its opening quote, decoded into `out`.
fn ansi_c_quoted(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    out: &mut Vec<u8>,
) -> Option<()> {
    let mut utf8 = [0u8; 4];
    loop {
        let c = chars.next()?;
        if c == '\'' {
            return Some(());
        }
        if c != '\\' {
            out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
            continue;
        }
        let escaped = chars.next()?;
        let byte = match escaped {
            'a' => 0x07,
            'b' => 0x08,
            'e' | 'E' => 0x1b,
            'f' => 0x0c,
            'n' => b'\n',
            'r' => b'\r',
            't' => b'\t',
            'v' => 0x0b,
            '\\' | '\'' | '"' | '?' => escaped as u8,
            'x' => {
                let mut value = 0u32;
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(16)) {
                        Some(digit) => {
                            value = value * 16 + digit;
                            chars.next();
                        }
                        None => break,
                    }
                }
                value as u8
            }
            '0'..='7' => {
                let mut value = escaped.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(digit) => {
                            value = value * 8 + digit;
                            chars.next();
                        }
                        None => break,
                    }
                }
                value as u8
            }
            other => {
                // Kept as written, as bash does with an escape it does not know.
                out.push(b'\\');
                out.extend_from_slice(other.encode_utf8(&mut utf8).as_bytes());
                continue;
            }
        };
        out.push(byte);
    }
}

/// Removes the entry at `path` (keys from the top) if it is an empty list or object, and then
/// each of its parents left empty, so uninstall leaves nothing of what install added.
fn drop_empty(value: &mut Value, path: &[&str]) {
    let Some((key, rest)) = path.split_first() else {
        return;
    };
    let Some(map) = value.as_object_mut() else {
        return;
    };
    let Some(child) = map.get_mut(*key) else {
        return;
    };
    drop_empty(child, rest);
    let empty = match child {
        Value::Array(list) => list.is_empty(),
        Value::Object(object) => object.is_empty(),
        _ => false,
    };
    if empty {
        map.remove(*key);
    }
}

/// The text to write for `settings`. The file's own text if its JSON is already that (but for
/// empty entries on `path`), so nothing is rewritten for nothing. On uninstall, the exact bytes
/// of the newest backup whose JSON is the same, so that install then uninstall gives the file
/// back as it was, formatting, key order and all. Otherwise the JSON, pretty-printed.
fn finished(
    target: &Path,
    before: Option<&str>,
    settings: &Value,
    uninstall: bool,
    path: &[&str],
) -> String {
    let same = |text: &str| {
        serde_json::from_str::<Value>(text).is_ok_and(|mut value| {
            drop_empty(&mut value, path);
            value == *settings
        })
    };
    if let Some(before) = before.filter(|text| same(text)) {
        return before.to_owned();
    }
    if uninstall {
        for backup in backups(target).into_iter().take(MAX_BACKUPS_COMPARED) {
            // A backup is only a copy: one that cannot be read is passed over.
            if let Ok(Some(existing)) = read(&backup, OFlags::NOFOLLOW) {
                if same(&existing.text) {
                    return existing.text;
                }
            }
        }
    }
    let mut text = serde_json::to_string_pretty(settings).unwrap_or_else(|_| settings.to_string());
    text.push('\n');
    text
}

/// The backups of `target` beside it, newest first.
fn backups(target: &Path) -> Vec<PathBuf> {
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
fn folder(file: &Path) -> &Path {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// `file` with every symbolic link on it followed to the final target (which may not exist
/// yet): a dotfile manager's link stays a link, and its target gets the change. A path reached
/// through a link is made canonical where it can be, so the backup's path reads plainly.
fn resolve_links(file: &Path) -> Result<PathBuf, InstallError> {
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
fn canonical_folder(path: PathBuf) -> PathBuf {
    match (std::fs::canonicalize(folder(&path)), path.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => path,
    }
}

/// A settings file's text and what it is (mode, owner).
struct Existing {
    text: String,
    meta: Metadata,
}

/// Reads `file`, `None` if there is none. Opened without blocking (a FIFO would wait for a
/// writer) and checked before reading: only a regular UTF-8 file of at most
/// [`MAX_SETTINGS_BYTES`], even one that grows while it is read.
fn read(file: &Path, flags: OFlags) -> Result<Option<Existing>, InstallError> {
    let flags = flags | OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match rustix::fs::open(file, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(e) => return Err(file_error(file, e)),
    };
    let handle = File::from(fd);
    let meta = handle.metadata().map_err(|e| file_error(file, e))?;
    if !meta.is_file() {
        return Err(file_error(file, "not a regular file"));
    }
    let too_large = || file_error(file, format!("larger than {MAX_SETTINGS_BYTES} bytes"));
    if meta.len() > MAX_SETTINGS_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    handle
        .take(MAX_SETTINGS_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| file_error(file, e))?;
    if bytes.len() as u64 > MAX_SETTINGS_BYTES {
        return Err(too_large());
    }
    let text = String::from_utf8(bytes).map_err(|_| file_error(file, "not UTF-8 text"))?;
    Ok(Some(Existing { text, meta }))
}

fn parse(file: &Path, text: Option<&str>) -> Result<Value, InstallError> {
    match text {
        None => Ok(json!({})),
        Some(text) if text.trim().is_empty() => Ok(json!({})),
        Some(text) => {
            let value: Value = serde_json::from_str(text).map_err(|e| InstallError::NotJson {
                file: file.to_owned(),
                message: e.to_string(),
            })?;
            if value.is_object() {
                Ok(value)
            } else {
                Err(InstallError::NotJson {
                    file: file.to_owned(),
                    message: "the top level is not an object".into(),
                })
            }
        }
    }
}

fn object_at<'v>(
    value: &'v mut Value,
    key: &str,
    file: &Path,
) -> Result<&'v mut Map<String, Value>, InstallError> {
    let not_object = || file_error(file, format!("`{key}` is not an object"));
    let Value::Object(map) = value else {
        return Err(not_object());
    };
    map.entry(key)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(not_object)
}

/// The mode and owner a file written in place of another keeps.
#[derive(Debug, Clone, Copy)]
struct Keep {
    /// Permission bits (and set-id and sticky bits, for the file itself).
    mode: u32,
    /// `None`: a new file, owned by whoever makes it.
    owner: Option<(u32, u32)>,
}

/// Creates `dir/name` (or `dir/name-1`, `-2`, … if taken: nothing is ever overwritten) holding
/// `text`, with `keep`'s mode and owner, synced. Until its owner is set it is readable by its
/// owner at most, so it is never more readable than the file it copies.
fn create_new(dir: &Path, name: &str, text: &str, keep: Keep) -> Result<PathBuf, InstallError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn places(dir: &Path) -> Places {
        Places {
            home: dir.join("home"),
            claude_dir: None,
            codex_home: None,
            project: dir.join("project"),
            exe: PathBuf::from("/opt/Plan Desk/plandesk"),
            data_dir: None,
        }
    }

    fn settings(change: &Change) -> Value {
        serde_json::from_str(&change.after).unwrap()
    }

    #[test]
    fn installing_merges_beside_other_entries_and_twice_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let file = p.home.join(".claude/settings.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let theirs = json!({"model": "opus", "hooks": {"PermissionRequest": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}]}});
        std::fs::write(&file, theirs.to_string()).unwrap();

        let change = plan(Target::ClaudeCode, false, &p).unwrap();
        let after = settings(&change);
        assert_eq!(after["model"], "opus", "other settings stay");
        let groups = after["hooks"]["PermissionRequest"].as_array().unwrap();
        assert_eq!(groups.len(), 2, "their hook stays beside ours");
        assert_eq!(groups[1]["matcher"], "ExitPlanMode");
        assert_eq!(
            groups[1]["hooks"][0]["command"], "'/opt/Plan Desk/plandesk' hook claude-code",
            "the path is quoted for the shell"
        );
        assert_eq!(groups[1]["hooks"][0]["timeout"], HOOK_TIMEOUT_SECS);
        let backup = apply(&change, 7).unwrap().unwrap();
        assert_eq!(
            std::fs::read_to_string(&backup).unwrap(),
            theirs.to_string(),
            "the old file is kept"
        );
        let again = plan(Target::ClaudeCode, false, &p).unwrap();
        assert!(
            !again.changes_anything(),
            "installing twice changes nothing"
        );

        let removed = plan(Target::ClaudeCode, true, &p).unwrap();
        assert_eq!(settings(&removed), theirs, "uninstall removes only ours");
    }

    #[test]
    fn a_file_that_is_not_json_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let file = p.home.join(".gemini/settings.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "{ not json").unwrap();
        let err = plan(Target::Gemini, false, &p).unwrap_err();
        assert!(err.to_string().contains("not valid JSON"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ not json");
    }

    #[test]
    fn each_agent_gets_its_own_shape() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = places(dir.path());
        p.data_dir = Some(PathBuf::from("/data"));
        let codex = settings(&plan(Target::Codex, false, &p).unwrap());
        assert_eq!(
            codex["hooks"]["Stop"][0]["hooks"][0]["command"],
            "'/opt/Plan Desk/plandesk' --data-dir /data hook codex"
        );
        let gemini = settings(&plan(Target::Gemini, false, &p).unwrap());
        let group = &gemini["hooks"]["BeforeTool"][0];
        assert_eq!(group["matcher"], "^exit_plan_mode$");
        assert_eq!(
            group["hooks"][0]["timeout"], 86_400_000,
            "Gemini counts milliseconds"
        );
        let mcp = settings(&plan(Target::Mcp, false, &p).unwrap());
        assert_eq!(
            mcp["mcpServers"]["plandesk"]["command"],
            "/opt/Plan Desk/plandesk"
        );
        assert_eq!(mcp["mcpServers"]["plandesk"]["args"][2], "mcp", "{mcp}");
    }

    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    fn write_with_mode(file: &Path, text: &str, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn command_hook(matcher: Option<&str>, commands: &[&str]) -> Value {
        let hooks: Vec<Value> = commands
            .iter()
            .map(|c| json!({"type": "command", "command": c}))
            .collect();
        match matcher {
            Some(m) => json!({"matcher": m, "hooks": hooks}),
            None => json!({"hooks": hooks}),
        }
    }

    #[test]
    fn only_the_exact_entry_we_wrote_is_taken_for_ours() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let file = p.home.join(".claude/settings.json");
        let m = Some("ExitPlanMode");
        let theirs = vec![
            command_hook(Some("Bash"), &["plandesk-audit hook log"]),
            command_hook(m, &["plandesk hook claude-code; audit.sh"]),
            command_hook(m, &["plandesk hook claude-code && audit.sh"]),
            command_hook(m, &["$(plandesk) hook claude-code"]),
            command_hook(m, &["plandesk hook codex"]),
            command_hook(m, &["plandesk --verbose hook claude-code"]),
            command_hook(m, &["plandesk hook claude-code", "notify.sh"]),
            command_hook(Some("Bash"), &["plandesk hook claude-code"]),
            command_hook(None, &["plandesk hook claude-code"]),
            json!({"matcher": "ExitPlanMode", "hooks": [
                {"type": "http", "command": "plandesk hook claude-code"}]}),
        ];
        // Ours, from a binary since renamed and moved, with its own store and timeout.
        let old_ours = json!({"matcher": "ExitPlanMode", "hooks": [{"type": "command",
            "command": "'/old place/pd' --data-dir '/data'\\''s'$'\\x0a' hook claude-code",
            "timeout": 5}]});
        let mut groups = theirs.clone();
        groups.insert(1, old_ours);
        write_with_mode(
            &file,
            &json!({"hooks": {"PermissionRequest": groups}}).to_string(),
            0o644,
        );

        let installed = settings(&plan(Target::ClaudeCode, false, &p).unwrap());
        let after = installed["hooks"]["PermissionRequest"].as_array().unwrap();
        assert_eq!(
            after[..after.len() - 1],
            theirs[..],
            "every hook of theirs stays, in order; only the old one of ours is replaced"
        );
        assert_eq!(
            after[after.len() - 1]["hooks"][0]["command"],
            "'/opt/Plan Desk/plandesk' hook claude-code",
            "ours is written once, for this binary"
        );
        let removed = settings(&plan(Target::ClaudeCode, true, &p).unwrap());
        assert_eq!(
            removed["hooks"]["PermissionRequest"],
            json!(theirs),
            "uninstall takes out ours (renamed binary and all) and nothing else"
        );

        // Codex's Stop group has no matcher; Gemini's is anchored.
        let codex = p.home.join(".codex/hooks.json");
        let codex_theirs = vec![command_hook(Some("x"), &["plandesk hook codex"])];
        let mut codex_groups = codex_theirs.clone();
        codex_groups.push(command_hook(None, &["/old/plandesk hook codex"]));
        write_with_mode(
            &codex,
            &json!({"hooks": {"Stop": codex_groups}}).to_string(),
            0o644,
        );
        let removed = settings(&plan(Target::Codex, true, &p).unwrap());
        assert_eq!(
            removed["hooks"]["Stop"],
            json!(codex_theirs),
            "a Codex group with a matcher is not one we wrote"
        );
        let gemini = p.home.join(".gemini/settings.json");
        let gemini_theirs = vec![command_hook(
            Some("exit_plan_mode"),
            &["plandesk hook gemini"],
        )];
        let mut gemini_groups = gemini_theirs.clone();
        gemini_groups.push(command_hook(
            Some("^exit_plan_mode$"),
            &["plandesk hook gemini"],
        ));
        write_with_mode(
            &gemini,
            &json!({"hooks": {"BeforeTool": gemini_groups}}).to_string(),
            0o644,
        );
        let removed = settings(&plan(Target::Gemini, true, &p).unwrap());
        assert_eq!(
            removed["hooks"]["BeforeTool"],
            json!(gemini_theirs),
            "a Gemini group on another matcher is not one we wrote"
        );
    }

    #[test]
    fn an_mcp_server_named_plandesk_that_we_did_not_write_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let file = p.project.join(".mcp.json");
        let theirs = json!({"mcpServers": {
            "other": {"command": "other-mcp"},
            "plandesk": {"command": "npx", "args": ["plandesk-cloud", "--token", "t"]},
        }});
        write_with_mode(&file, &theirs.to_string(), 0o600);
        let removed = plan(Target::Mcp, true, &p).unwrap();
        assert!(
            !removed.changes_anything(),
            "uninstall leaves a server it did not write: {}",
            removed.after
        );
        let err = plan(Target::Mcp, false, &p).unwrap_err().to_string();
        assert!(
            err.contains("mcpServers.plandesk"),
            "install refuses to overwrite it: {err}"
        );

        // Ours, from another binary, with a timeout the person added: kept by install.
        let ours = json!({"mcpServers": {
            "other": {"command": "other-mcp"},
            "plandesk": {"command": "/old/pd", "args": ["mcp", "--workspace", "/w"],
                         "timeout": 86_400_000},
        }});
        write_with_mode(&file, &ours.to_string(), 0o600);
        let installed = settings(&plan(Target::Mcp, false, &p).unwrap());
        assert_eq!(installed["mcpServers"]["plandesk"]["timeout"], 86_400_000);
        assert_eq!(
            installed["mcpServers"]["plandesk"]["command"],
            "/opt/Plan Desk/plandesk"
        );
        let removed = settings(&plan(Target::Mcp, true, &p).unwrap());
        assert_eq!(
            removed,
            json!({"mcpServers": {"other": {"command": "other-mcp"}}}),
            "uninstall takes out ours only"
        );
    }

    #[test]
    fn a_linked_settings_file_stays_a_link_and_its_target_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let target = dir.path().join("dotfiles/claude/settings.json");
        let original = "{\"model\": \"opus\"}\n";
        write_with_mode(&target, original, 0o644);
        // home/.claude/settings.json -> ../../dotfiles/current.json -> claude/settings.json
        let middle = dir.path().join("dotfiles/current.json");
        std::os::unix::fs::symlink("claude/settings.json", &middle).unwrap();
        let link = p.home.join(".claude/settings.json");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink("../../dotfiles/current.json", &link).unwrap();

        let change = plan(Target::ClaudeCode, false, &p).unwrap();
        assert_eq!(
            change.file, link,
            "the person is told about the path they know"
        );
        let backup = apply(&change, 7).unwrap().unwrap();
        for l in [&link, &middle] {
            assert!(
                std::fs::symlink_metadata(l).unwrap().is_symlink(),
                "{} is still a link",
                l.display()
            );
        }
        let written = std::fs::read_to_string(&target).unwrap();
        assert!(
            written.contains("ExitPlanMode"),
            "the target got the hook: {written}"
        );
        assert_eq!(
            backup,
            std::fs::canonicalize(dir.path())
                .unwrap()
                .join("dotfiles/claude/settings.json.plandesk-backup-7"),
            "the backup lies next to the target"
        );
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), original);
        let beside_link: Vec<_> = std::fs::read_dir(link.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            beside_link,
            ["settings.json"],
            "nothing left beside the link"
        );
    }

    #[test]
    fn the_new_file_and_its_backup_keep_the_original_mode_and_owner() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let file = p.home.join(".claude/settings.json");
        write_with_mode(&file, "{\"env\": {\"KEY\": \"secret\"}}", 0o600);
        let before = std::fs::metadata(&file).unwrap();
        let backup = apply(&plan(Target::ClaudeCode, false, &p).unwrap(), 7)
            .unwrap()
            .unwrap();
        let after = std::fs::metadata(&file).unwrap();
        assert_eq!(mode(&file), 0o600, "a private file stays private");
        assert_eq!(mode(&backup), 0o600, "its backup is as private");
        assert_eq!(
            (after.uid(), after.gid()),
            (before.uid(), before.gid()),
            "the owner is kept"
        );

        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let backup = apply(&plan(Target::ClaudeCode, true, &p).unwrap(), 8)
            .unwrap()
            .unwrap();
        assert_eq!(mode(&file), 0o640, "the mode it had, whatever it was");
        assert_eq!(mode(&backup), 0o640);

        // As root (`sudo plandesk install`), someone else's file stays theirs, backup and all.
        if std::fs::metadata(dir.path()).unwrap().uid() == 0 {
            std::os::unix::fs::chown(&file, Some(4242), Some(4343)).unwrap();
            let backup = apply(&plan(Target::ClaudeCode, false, &p).unwrap(), 9)
                .unwrap()
                .unwrap();
            for path in [&file, &backup] {
                let meta = std::fs::metadata(path).unwrap();
                assert_eq!(
                    (meta.uid(), meta.gid()),
                    (4242, 4343),
                    "{} keeps the person's owner",
                    path.display()
                );
            }
        }
    }

    #[test]
    fn a_new_settings_file_is_readable_by_its_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let backup = apply(&plan(Target::Gemini, false, &p).unwrap(), 7).unwrap();
        assert_eq!(backup, None, "no file, nothing to back up");
        let file = p.home.join(".gemini/settings.json");
        assert_eq!(mode(&file), 0o600, "settings can hold keys");
    }

    #[test]
    fn install_then_uninstall_in_the_same_second_gives_back_the_original_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let file = p.home.join(".claude/settings.json");
        let original = "{\"model\":\"opus\",\n   \"env\": {\"A\": \"1\"} }";
        write_with_mode(&file, original, 0o600);
        let first = apply(&plan(Target::ClaudeCode, false, &p).unwrap(), 7)
            .unwrap()
            .unwrap();
        let second = apply(&plan(Target::ClaudeCode, true, &p).unwrap(), 7)
            .unwrap()
            .unwrap();
        assert_ne!(first, second, "two backups in one second get two names");
        assert_eq!(
            std::fs::read_to_string(&first).unwrap(),
            original,
            "the first backup is not overwritten"
        );
        assert!(std::fs::read_to_string(&second)
            .unwrap()
            .contains("ExitPlanMode"));
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            original,
            "install then uninstall leaves the file as it was, byte for byte"
        );
        assert_eq!(mode(&file), 0o600);
    }

    #[test]
    fn uninstall_leaves_no_empty_hooks_behind() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let file = p.home.join(".claude/settings.json");
        write_with_mode(&file, "{\"model\": \"opus\"}", 0o600);
        let backup = apply(&plan(Target::ClaudeCode, false, &p).unwrap(), 7)
            .unwrap()
            .unwrap();
        // Without the backup there is nothing to copy back: the JSON must still be clean.
        std::fs::remove_file(backup).unwrap();
        let removed = settings(&plan(Target::ClaudeCode, true, &p).unwrap());
        assert_eq!(
            removed,
            json!({"model": "opus"}),
            "no `hooks: {{}}` left of what install added"
        );
    }

    #[test]
    fn a_fifo_or_a_huge_settings_file_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let file = p.home.join(".claude/settings.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&file)
            .status()
            .unwrap();
        assert!(made.success());
        let (tx, rx) = std::sync::mpsc::channel();
        let q = p.clone();
        std::thread::spawn(move || {
            let _ = tx.send(plan(Target::ClaudeCode, false, &q).map(|_| ()));
        });
        let result = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("reading the settings must not wait for a writer on a FIFO");
        let err = result.unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");

        std::fs::remove_file(&file).unwrap();
        let huge = std::fs::File::create(&file).unwrap();
        huge.set_len(64 * 1024 * 1024).unwrap();
        let err = plan(Target::ClaudeCode, false, &p).unwrap_err().to_string();
        assert!(err.contains("larger than"), "{err}");
    }

    #[test]
    fn a_file_changed_since_the_plan_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let file = p.home.join(".claude/settings.json");
        write_with_mode(&file, "{}", 0o600);
        let change = plan(Target::ClaudeCode, false, &p).unwrap();
        std::fs::write(&file, "{\"model\": \"opus\"}").unwrap();
        let err = apply(&change, 7).unwrap_err().to_string();
        assert!(err.contains("changed"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "{\"model\": \"opus\"}",
            "the newer text is kept"
        );
    }

    #[test]
    fn shell_words_reads_what_shell_quote_writes_and_refuses_the_rest() {
        let words = [
            "plain",
            "a b",
            "it's",
            "",
            "$HOME",
            "a\x1bb",
            "tab\there",
            "new\nline",
            "é\u{202e}",
            "\\",
            "-n",
            "a\"b",
            "~user",
        ];
        for word in words {
            let line = format!("{} hook x", shell_quote(word));
            let expected = [word, "hook", "x"].map(str::to_owned).to_vec();
            assert_eq!(shell_words(&line), Some(expected), "{line} is three words");
        }
        assert_eq!(
            shell_words("a\\ b  \"c d\"\t'e'\\''f'"),
            Some(["a b", "c d", "e'f"].map(str::to_owned).to_vec()),
            "blanks split, quotes and backslashes join"
        );
        let not_simple = [
            "a;b hook x",
            "a | b",
            "a && b",
            "a > f",
            "(a)",
            "$(a) hook x",
            "`a` hook x",
            "\"$a\" hook x",
            "$a hook x",
            "a* hook x",
            "a? b",
            "FOO=1 hook x",
            "a # c",
            "'open",
            "\"open",
            "a\nb",
            "~/a hook x",
            "{a,b} hook x",
        ];
        for line in not_simple {
            assert_eq!(
                shell_words(line),
                None,
                "{line:?} is not a simple command of words"
            );
        }
    }
}
