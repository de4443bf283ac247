//! `plandesk install`'s merges, backups, links, modes and refusals, on real files: a module per
//! part of the install, over the places and files set up here.

mod file;
mod hooks;
mod kimi;
mod mcp;
mod script;

use serde_json::{json, Value};

use super::*;

fn places(dir: &Path) -> Places {
    Places {
        home: dir.join("home"),
        claude_dir: None,
        codex_home: None,
        copilot_home: None,
        pi_dir: None,
        kimi_home: None,
        config_home: None,
        project: dir.join("project"),
        exe: PathBuf::from("/opt/Plan Desk/plandesk"),
        data_dir: None,
        record: true,
    }
}

fn settings(change: &Change) -> Value {
    serde_json::from_str(&change.after).unwrap()
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
