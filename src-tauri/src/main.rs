//! `plandesk-app [--data-dir DIR] [--workspace DIR] [--open REVISION|RUN] [--hidden]
//! [plandesk://plan/KEY]`: the desktop app.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::process::ExitCode;

use plandesk_app::instance::{self, Launch};

fn main() -> ExitCode {
    plandesk_app::rendering::choose();
    let options = match instance::parse(std::env::args().skip(1)) {
        Ok(Launch::Run(options)) => options,
        Ok(Launch::Help) => {
            println!("{}", instance::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            eprintln!("plandesk-app: {err}");
            return ExitCode::from(2);
        }
    };
    match plandesk_app::run(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("plandesk-app: {err}");
            ExitCode::FAILURE
        }
    }
}
