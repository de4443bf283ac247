//! Plandesk's engine: the agent loop that suspends on `submit_plan`, persists, and resumes; its
//! models, tools, modes and store; and plan rendering and comparison. No GUI code lives here.

// First: its `vocabulary!` serves the modules below.
#[macro_use]
pub mod vocabulary;

pub mod actor;
pub mod audit;
mod blocking;
pub mod chunk;
pub mod clock;
pub mod config;
pub mod desktop;
pub mod engine;
pub mod lease;
pub mod message;
pub mod mode;
pub mod model;
pub mod plan;
pub mod review;
pub mod run;
pub mod secret;
pub mod source;
pub mod store;
pub mod text;
pub mod token;
pub mod tool;
mod untrusted;
pub mod view;
pub mod webhook;
pub mod workspace;

pub use chunk::{Chunk, ChunkKind};
pub use engine::{ChunkSink, Engine, EngineError, Report, RunStream, StartOptions, Verdict};
pub use review::Review;
pub use run::RunStatus;
pub use store::{SqliteStore, Store};
