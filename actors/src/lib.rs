//! memvault's actors: one supervised actor per active workspace that owns rate limiting and
//! memory-limit accounting, and the registry that spawns and supervises them.
//!
//! This crate never imports the web or storage layers: it reaches storage through
//! [`WorkspaceStore`], which the `memvault` crate implements.

pub mod plan;
pub mod rate_limit;
pub mod registry;
pub mod store;
pub mod workspace;

pub use plan::{EndpointClass, Limits, Plan, PlanTable, UnknownPlan};
pub use rate_limit::{RateStatus, Verdict};
pub use registry::{RegistryActor, RegistryArgs, RegistryMsg, Workspaces, WorkspacesError};
pub use store::{StoreFailure, WorkspaceSnapshot, WorkspaceStore};
pub use workspace::{Admission, SavePermit, Usage, WorkspaceActor, WorkspaceArgs, WorkspaceMsg};
