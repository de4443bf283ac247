//! `plandesk install mcp`: the `plandesk` server in the project's `.mcp.json`, recognised by its
//! arguments; a server of that name that Plandesk did not write is never replaced (install
//! refuses, uninstall leaves it).

use rustix::fs::OFlags;
use serde_json::{json, Map, Value};

use super::file::{read, resolve_links};
use super::settings::{drop_empty, finished, object_at, parse};
use super::{file_error, Change, InstallError, Places};

/// Computes what installing (or uninstalling) the MCP server does to `.mcp.json`.
pub(super) fn plan(uninstall: bool, places: &Places) -> Result<Change, InstallError> {
    let file = places.project.join(".mcp.json");
    let target = resolve_links(&file)?;
    // A project may come from anyone (a clone): its `.mcp.json` may be a link, but only to a
    // file of the project itself, never to a person's own settings elsewhere.
    if target != file && !inside(&target, &places.project) {
        return Err(file_error(
            &file,
            format!(
                "is a link to {}, outside the project; Plandesk writes only the project's own \
                 .mcp.json (replace the link with a file, then install again)",
                target.display()
            ),
        ));
    }
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
    let paths: [&[&str]; 1] = [&path];
    let note = (!uninstall).then(|| {
        "MCP clients time a tool call out (Codex after 60 s, Gemini CLI after 10 min, Claude Code \
         moves it to the background after 2 min): give `submit_plan` a long timeout — Codex: \
         tool_timeout_sec = 86400; Gemini CLI: \"timeout\": 86400000; Claude Code: \
         CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS=0."
            .to_owned()
    });
    Ok(Change {
        after: finished(&target, before.as_deref(), &settings, uninstall, &paths),
        file,
        before,
        note,
        target,
        remove: false,
    })
}

/// Whether `path` (a link's target, its folder made canonical) lies in the folder `dir`.
fn inside(path: &std::path::Path, dir: &std::path::Path) -> bool {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
    path.starts_with(dir)
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
