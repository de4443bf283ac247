//! Writes the page the app serves (`gen/ui`: `ui/` with its modules joined into one script, see
//! `build/ui.rs`), reads `tauri.conf.json` (beside this file, where the bundler looks too) and
//! declares the app's commands, so each gets an `allow-*` permission and the capability file
//! can grant exactly those the UI uses.

use std::path::Path;

#[path = "build/ui.rs"]
mod ui;

/// Every command the webview may invoke; `capabilities/main.json` grants them.
const COMMANDS: &[&str] = &[
    "app_info",
    "default_model",
    "start_run",
    "decide",
    "send_message",
    "retry_run",
    "cancel_run",
    "inbox",
    "runs",
    "run_detail",
    "tool_call",
    "revision",
    "revision_source",
    "revision_pages",
    "plan_thread",
    "compare",
    "history",
    "save_settings",
    "set_viewing",
    "open_link",
    "pick_workspace",
    "agent_setup",
    "install_agent",
    "comments",
    "add_comment",
    "resolve_comment",
    "edit_plan",
    "preview",
    "audit",
    "export_audit",
];

fn main() {
    if let Err(err) = write_page(Path::new("../ui"), Path::new("gen/ui")) {
        println!("cargo:warning=the page could not be written: {err}");
        std::process::exit(1);
    }
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    if let Err(err) = tauri_build::try_build(attributes) {
        println!("cargo:warning=tauri build step failed: {err:#}");
        std::process::exit(1);
    }
}

/// The page as `tauri.conf.json`'s `frontendDist` names it: every file of `source` but its
/// modules, which are joined into `app.js`. A file is written only when it changed (its time is
/// what Cargo compares), by a rename (a build beside this one reads whole files), and what is
/// no longer in `source` goes.
fn write_page(source: &Path, out: &Path) -> Result<(), String> {
    println!("cargo:rerun-if-changed={}", source.display());
    let mut files = vec![(
        "app.js".to_owned(),
        ui::join_modules(source, "app.js")?.into_bytes(),
    )];
    let entries = std::fs::read_dir(source).map_err(|e| format!("{}: {e}", source.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", source.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".js") || !entry.path().is_file() {
            continue;
        }
        let bytes = std::fs::read(entry.path()).map_err(|e| format!("{name}: {e}"))?;
        files.push((name, bytes));
    }
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    for (name, bytes) in &files {
        let path = out.join(name);
        if std::fs::read(&path).ok().as_ref() == Some(bytes) {
            continue;
        }
        let temporary = out.join(format!(".{name}.{}", std::process::id()));
        std::fs::write(&temporary, bytes)
            .and_then(|()| std::fs::rename(&temporary, &path))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let stale = std::fs::read_dir(out).map_err(|e| format!("{}: {e}", out.display()))?;
    for entry in stale.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') && !files.iter().any(|(kept, _)| *kept == name) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    Ok(())
}
