//! memvault: a self-hostable memory and context vault for AI applications.
//!
//! Layers, each importing only downward (see ARCHITECTURE.md):
//! entry (`main`, [`startup`], [`cli`]) -> adapters ([`http`], [`mcp`]) -> [`services`] ->
//! engines ([`storage`], [`billing`], [`search`], [`embedding`], [`judge`], [`text`], the `memvault-actors`
//! crate) -> [`config`], [`error`], [`model`], [`metrics`], [`loggable`].

/// Every binary built on this crate (the server, the benches, the tests) allocates through
/// mimalloc: the embedding model allocates and frees buffers of tens of megabytes for every
/// layer, and glibc's malloc hands those back to the kernel each time, so each pass paid for
/// page faults and zeroed pages (a third of its time; see the history of docs/BENCHMARKS.md,
/// "The allocator"). The packed products also gain from where it put their buffers: on
/// 64-byte boundaries (at every size the encoder uses), so AMX tiles load whole cache lines.
/// Through glibc's malloc (16 bytes past a page) the encoder's four products took 9-22 %
/// longer at 8 to 512 rows (AMX 167, runs interleaved in one process).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod billing;
pub mod cli;
pub mod config;
pub mod embedding;
pub mod error;
pub mod http;
pub mod judge;
pub mod llm;
pub mod loggable;
pub mod mcp;
pub mod metrics;
pub mod model;
pub mod ocr;
pub mod sandbox;
pub mod search;
pub mod services;
pub mod startup;
pub mod storage;
pub mod telemetry;
pub mod text;
