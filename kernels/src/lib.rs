//! CPU kernels of memvault: code whose speed comes from SIMD instructions.
//!
//! It lives in a crate of its own so that the workspace can compile it optimised in every
//! profile (`[profile.dev.package.memvault-kernels]` in the root `Cargo.toml`): unoptimised,
//! each intrinsic is a function call with its operands in memory, tens of times slower, and
//! the test suites, which run the real model, would pay for it. No I/O, no async, no
//! knowledge of models or storage: slices in, slices out.

pub mod activations;
pub mod attention;
pub mod bf16;
pub mod cpu;
pub mod dense;
pub mod f16;
pub mod norm;
mod products;
