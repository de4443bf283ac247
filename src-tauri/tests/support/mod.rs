//! What the app's IPC tests share: the app on Tauri's mock runtime, and calling a command as the
//! webview would.

use plandesk_app::{configure, AppState, Options};
use serde_json::Value;
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{
    get_ipc_response, mock_builder, mock_context, noop_assets, MockRuntime, INVOKE_KEY,
};
use tauri::webview::InvokeRequest;
use tauri::WebviewWindow;

/// The app opened with `options` (its store, its data folder) and its main window, without a
/// real window.
pub fn app(options: &Options) -> (tauri::App<MockRuntime>, WebviewWindow<MockRuntime>) {
    let state = AppState::open(options).unwrap();
    let app = configure(mock_builder(), state)
        .build(mock_context(noop_assets()))
        .unwrap();
    let webview = tauri::WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    (app, webview)
}

/// Calls `cmd` with `body` through Tauri's IPC: its answer, or the error it was refused with.
pub fn invoke(
    webview: &WebviewWindow<MockRuntime>,
    cmd: &str,
    body: Value,
) -> Result<Value, Value> {
    let request = InvokeRequest {
        cmd: cmd.into(),
        callback: CallbackFn(0),
        error: CallbackFn(1),
        url: "tauri://localhost".parse().unwrap(),
        body: InvokeBody::Json(body),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_string(),
    };
    get_ipc_response(webview, request).map(|b| b.deserialize::<Value>().unwrap())
}

/// Calls `cmd`, expecting an answer.
pub fn ok(webview: &WebviewWindow<MockRuntime>, cmd: &str, body: Value) -> Value {
    invoke(webview, cmd, body).unwrap_or_else(|e| panic!("{cmd} failed: {e}"))
}
