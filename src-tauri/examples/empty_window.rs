//! The floor for the app's memory benchmark (`./x bench app`): a Tauri window on the same
//! WebKitGTK, with the same config, showing an empty page and doing nothing else. Plandesk's
//! idle memory is reported as a multiple of this one's.

fn main() {
    let context = tauri::generate_context!();
    let built = tauri::Builder::default()
        .setup(|app| {
            tauri::WebviewWindowBuilder::new(
                app,
                "main",
                tauri::WebviewUrl::External("about:blank".parse()?),
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
