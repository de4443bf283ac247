//! Reads `tauri.conf.json` (at the repository's top, where the bundler looks too; it serves `ui/`
//! as it is, native modules) and declares the app's commands, so each gets an `allow-*`
//! permission and the capability file can grant exactly those the UI uses.

/// The app's configuration, from this crate's folder (`generate_context!` names it too).
const CONFIG: &str = "../tauri.conf.json";

/// Every command the webview may invoke; `capabilities/main.json` grants them.
const COMMANDS: &[&str] = &[
    "app_info",
    "sign_in_link",
    "phone_serving",
    "serve_phone",
    "webhooks",
    "add_webhook",
    "remove_webhook",
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
    "progress",
    "revision_progress",
    "file_diff",
    "mark_step",
];

fn main() {
    let attributes = tauri_build::Attributes::new()
        .config_path(CONFIG)
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    if let Err(err) = tauri_build::try_build(attributes) {
        println!("cargo:warning=tauri build step failed: {err:#}");
        std::process::exit(1);
    }
}
