//! What the app's IPC tests share: calling a command as the webview would.

use serde_json::Value;
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, MockRuntime, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::WebviewWindow;

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
