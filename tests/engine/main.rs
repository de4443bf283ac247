//! Engine behaviour through the real `plandesk` binary (a new process per call, a real SQLite
//! file) and through the library API. One binary, a module per area.

mod support;

mod approval;
mod crash;
mod hostile;
mod plan_loop;
mod refusals;
mod suspensions;
