//! memvault's Context Vault ingestion, without the web or SQL layers.
//!
//! - [`parse`]: file bytes -> text sections with a `sectionPath` (PDF, DOCX, spreadsheets, CSV,
//!   Markdown, HTML, plain text) plus the images that need OCR.
//! - [`model`]: the types that cross the crate boundary (sections, chunk and fact drafts).
//! - [`pipeline`]: the supervised actors that walk a document through parse -> OCR -> chunk ->
//!   embed -> extract, with heartbeats from recorded progress, retries with capped backoff and
//!   persisted status. Storage, OCR, chunking, embedding and extraction are traits that the
//!   server implements.

#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod model;
pub mod parse;
pub mod pipeline;
