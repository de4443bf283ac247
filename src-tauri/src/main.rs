//! `plandesk-app [--data-dir DIR] [--workspace DIR] [--open RUN]`: the desktop app.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut options = plandesk_app::Options::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let target = match arg.as_str() {
            "--data-dir" => &mut options.data_dir,
            "--workspace" => &mut options.workspace,
            "--open" => match args.next() {
                Some(run) => {
                    options.open = Some(run);
                    continue;
                }
                None => {
                    eprintln!("plandesk-app: --open needs a run id");
                    return ExitCode::from(2);
                }
            },
            "--help" | "-h" => {
                println!("plandesk-app [--data-dir DIR] [--workspace DIR] [--open RUN]");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("plandesk-app: unknown argument {other} (try --help)");
                return ExitCode::from(2);
            }
        };
        match args.next() {
            Some(value) => *target = Some(PathBuf::from(value)),
            None => {
                eprintln!("plandesk-app: {arg} needs a folder");
                return ExitCode::from(2);
            }
        }
    }
    match plandesk_app::run(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("plandesk-app: {err}");
            ExitCode::FAILURE
        }
    }
}
