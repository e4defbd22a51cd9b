//! memvault's actors: one supervised actor per active workspace that owns rate limiting and
//! memory-limit accounting, the registry that spawns and supervises them, and the index
//! maintainer that folds and merges vector segments in the background, and the supervisor of
//! background jobs (long notes) with retries; and the root supervisor that owns them all and
//! restarts a child that dies; and the heartbeat that keeps a cluster node's membership.
//!
//! This crate never imports the web or storage layers: it reaches storage through
//! [`WorkspaceStore`], which the `memvault` crate implements.

pub mod heartbeat;
pub mod jobs;
pub mod maintenance;
pub mod plan;
pub mod rate_limit;
pub mod registry;
pub mod store;
pub mod supervisor;
pub mod workspace;

pub use heartbeat::{Beat, Heartbeat, HeartbeatActor, HeartbeatArgs, HeartbeatMsg};
pub use jobs::{backoff, JobHandler, JobQueue, JobStats, Jobs, JobsArgs, JobsMsg, JobsSupervisor};
pub use maintenance::{
    Maintainable, Maintainer, MaintenanceActor, MaintenanceMsg, MaintenanceStats,
};
pub use plan::{EndpointClass, Limits, Plan, PlanTable, UnknownPlan};
pub use rate_limit::{RateStatus, Verdict};
pub use registry::{RegistryActor, RegistryArgs, RegistryMsg, Workspaces, WorkspacesError};
pub use store::{StoreFailure, WorkspaceSnapshot, WorkspaceStore};
pub use supervisor::{
    CallFailure, Child, ChildReport, ChildSpec, Current, RestartPolicy, Root, RootSupervisor,
};
pub use workspace::{
    Admission, CachedProfile, ProfileKey, ProfileLookup, SavePermit, Usage, WorkspaceActor,
    WorkspaceArgs, WorkspaceMsg,
};
