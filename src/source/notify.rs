//! Desktop notifications a hook sends itself when no app is running to tell the person: the
//! plan is waiting (and, before a deadline, a reminder). Clicking one starts the app on that
//! plan. Delivery is best effort: without a notification service the plan still waits in the
//! inbox, and the CLI shows it.

use std::path::Path;
use std::time::Duration;

use crate::desktop;
use crate::text;

fn show(data_dir: &Path, summary: String, body: String, run_id: &str) {
    let data_dir = data_dir.to_owned();
    let run_id = run_id.to_owned();
    // Showing blocks on D-Bus, and waiting for the click blocks until the bubble closes.
    let _ = std::thread::Builder::new()
        .name("notification".into())
        .spawn(move || {
            let shown = notify_rust::Notification::new()
                .appname("Plandesk")
                .summary(&summary)
                .body(&body)
                .action("default", "Review")
                .show();
            match shown {
                Ok(handle) => handle.wait_for_action(|action| {
                    if action == "default" {
                        open_app(&data_dir, &run_id);
                    }
                }),
                Err(err) => eprintln!("plandesk: the notification was not shown: {err}"),
            }
        });
}

/// Starts the app on `run_id`'s plan (or, when it runs, has it show that plan).
fn open_app(data_dir: &Path, run_id: &str) {
    let Some(app) = desktop::app_binary() else {
        eprintln!("plandesk: the desktop app is not installed beside this binary or on PATH");
        return;
    };
    if let Err(err) = desktop::start_app(&app, data_dir, run_id) {
        eprintln!("plandesk: cannot start the desktop app: {err}");
    }
}

fn titled(title: &str) -> String {
    if title.trim().is_empty() {
        "A plan".to_owned()
    } else {
        format!("Plan \"{}\"", text::short(title, 80))
    }
}

pub(super) fn plan_waiting(data_dir: &Path, agent: &str, title: &str, cwd: &str, run_id: &str) {
    show(
        data_dir,
        format!("{} from {agent} requires approval", titled(title)),
        text::short(cwd, 120),
        run_id,
    );
}

pub(super) fn reminder(data_dir: &Path, agent: &str, title: &str, left: Duration, run_id: &str) {
    show(
        data_dir,
        format!("{} from {agent} still needs a decision", titled(title)),
        format!(
            "Without one within {} min it is answered as not approved.",
            left.as_secs().div_ceil(60)
        ),
        run_id,
    );
}
