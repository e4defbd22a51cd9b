//! The one integration-test binary: every test drives a real server over HTTP.
//!
//! Backend: SQLite (a fresh file per test) by default; PostgreSQL (a fresh database per test)
//! when `MEMVAULT_TEST_DATABASE_URL` is a `postgres://` URL. The same suite runs on both.

mod helpers;

mod accounts;
mod actors;
mod billing;
mod cli;
mod cluster;
mod corpus;
mod dashboard;
mod edges;
mod envelope;
mod erasure;
mod hostile;
mod keys;
mod mcp;
mod memories;
mod metrics;
mod oauth;
mod operations;
mod retrieval;
mod roles;
mod supervision;
mod vault;
mod vault_store;
