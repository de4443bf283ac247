#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a panic is the failure report
//! Engine behaviour through the real `plandesk` binary (a new process per call, a real SQLite
//! file) and through the library API. One binary, a module per area.

mod pg;
mod support;

mod agents;
mod approval;
mod audit;
mod call_ids;
mod claims;
mod cli_output;
mod conformance;
mod crash;
mod determinism;
mod durability;
mod edit_write_back;
mod hook_bounds;
mod hostile;
mod hostile_files;
mod hostile_providers;
mod http_server;
mod keys;
mod local_models;
mod mcp;
mod mcp_ids;
mod parking;
mod plan_loop;
mod progress;
mod providers;
mod refusals;
mod review_tools;
mod serve;
mod serve_load;
mod store;
mod suspensions;
mod terminal;
mod views;
mod waiting;
