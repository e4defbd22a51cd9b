//! What the benchmarks share: a fresh database, memvault served in-process, the HTTP client,
//! CPU and machine readings, error samples, settings from the environment and SciFact.

pub mod client;
pub mod cpu;
pub mod database;
pub mod env;
pub mod errors;
pub mod machine;
pub mod pass_cpu;
pub mod scifact;
pub mod server;
