//! The floor for the app's memory benchmark (`./x bench app`): a Tauri window on the same
//! WebKitGTK, with the same config and painting, showing a page of one line and doing nothing else.
//! Plandesk's idle memory is reported as a multiple of this one's.

fn main() {
    // Painted as Plandesk paints (without GL when the machine has no GPU): the floor is what a
    // window costs, not how it paints.
    plandesk_app::rendering::choose();
    let context = tauri::generate_context!("../tauri.conf.json");
    let built = tauri::Builder::default()
        // A page served by the app itself, as Plandesk's is (WebKit starts no web process for
        // about:blank, which would make the floor too low).
        .register_uri_scheme_protocol("empty", |_, _| {
            tauri::http::Response::builder()
                .header("Content-Type", "text/html")
                .body(b"<!doctype html><title>Empty</title><p>Empty</p>".to_vec())
                .unwrap_or_default()
        })
        .setup(|app| {
            tauri::WebviewWindowBuilder::new(
                app,
                "main",
                tauri::WebviewUrl::CustomProtocol("empty://localhost/".parse()?),
            )
            .title("Empty")
            .build()?;
            Ok(())
        })
        .run(context);
    if let Err(err) = built {
        eprintln!("empty_window: {err}");
        std::process::exit(1);
    }
}
