//! The app's command line, and one app per store: a second launch on a store the app already
//! shows (the launcher, a `plandesk://plan/<key>` link, `plandesk open`, a notification's click)
//! hands its command line to the running app through the single-instance plugin and exits; the
//! running app comes forward on the plan it names.

use std::path::PathBuf;

use plandesk::desktop;
use tauri::{AppHandle, Emitter, Runtime};

use crate::inbox::{self, OpenPlan, OPEN_EVENT};
use crate::ipc::IpcError;
use crate::Options;

pub const USAGE: &str =
    "plandesk-app [--data-dir DIR] [--workspace DIR] [--open REVISION|RUN] [--hidden] [plandesk://plan/KEY]";

/// The event that reports a plan that could not be opened (a link naming nothing).
pub const OPEN_FAILED_EVENT: &str = "open-failed";

/// What a command line asks for.
#[derive(Debug, PartialEq)]
pub enum Launch {
    Run(Options),
    Help,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ArgsError {
    #[error("{0} needs a value")]
    Missing(String),
    #[error("unknown argument {0} (try --help)")]
    Unknown(String),
}

/// Reads the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Launch, ArgsError> {
    let mut options = Options::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| ArgsError::Missing(arg.clone()));
        match arg.as_str() {
            "--data-dir" => options.data_dir = Some(PathBuf::from(value()?)),
            "--store" => options.store = Some(value()?),
            "--workspace" => options.workspace = Some(PathBuf::from(value()?)),
            "--open" => options.open = Some(value()?),
            "--hidden" => options.hidden = true,
            "--help" | "-h" => return Ok(Launch::Help),
            link => match desktop::parse_plan_link(link) {
                Some(key) => options.open = Some(key),
                None => return Err(ArgsError::Unknown(link.to_owned())),
            },
        }
    }
    Ok(Launch::Run(options))
}

/// A second launch on this store: the window comes forward, on the plan it names. A launch
/// with `--hidden` alone (the login autostart while the app already runs) changes nothing.
pub fn second_launch<R: Runtime>(app: &AppHandle<R>, argv: Vec<String>) {
    let options = match parse(argv.into_iter().skip(1)) {
        Ok(Launch::Run(options)) => options,
        Ok(Launch::Help) | Err(_) => Options::default(),
    };
    if options.hidden && options.open.is_none() {
        return;
    }
    inbox::bring_forward(app, None);
    if let Some(key) = options.open {
        open(app, key);
    }
}

/// Resolves `key` (a revision or run) and opens its plan in the window.
pub fn open<R: Runtime>(app: &AppHandle<R>, key: String) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let engine = crate::state(&app).engine.clone();
        match desktop::plan_target(&engine, &key).await {
            Ok(target) => {
                let _ = app.emit(
                    OPEN_EVENT,
                    OpenPlan {
                        run_id: target.run_id,
                        tool_call_id: target.tool_call_id,
                    },
                );
            }
            Err(err) => {
                let _ = app.emit(OPEN_FAILED_EVENT, IpcError::from(err));
            }
        }
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn a_link_or_open_names_the_plan() {
        let Launch::Run(options) = parse(args("plandesk://plan/%2312")).unwrap() else {
            panic!("a link is a launch");
        };
        assert_eq!(options.open.as_deref(), Some("#12"));
        let Launch::Run(options) = parse(args("--data-dir /d --open 0123abcd --hidden")).unwrap()
        else {
            panic!("options are a launch");
        };
        assert_eq!(options.data_dir, Some(PathBuf::from("/d")));
        assert_eq!(options.open.as_deref(), Some("0123abcd"));
        assert!(options.hidden);
    }

    #[test]
    fn bad_arguments_are_refused() {
        assert_eq!(
            parse(args("--open")),
            Err(ArgsError::Missing("--open".into()))
        );
        assert_eq!(
            parse(args("https://example.com")),
            Err(ArgsError::Unknown("https://example.com".into()))
        );
        assert_eq!(parse(args("-h")), Ok(Launch::Help));
    }
}
