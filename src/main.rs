//! `plandesk`: the engine from the terminal. Every call is a new process over the shared store,
//! so a run started here can be decided in the app, and the other way round.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
