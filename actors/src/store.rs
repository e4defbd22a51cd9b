//! What the actors need from storage. `memvault` implements it over its database.

use async_trait::async_trait;
use uuid::Uuid;

use crate::plan::Plan;

/// The persisted facts a workspace actor starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkspaceSnapshot {
    pub plan: Plan,
    /// Current (non-deleted, not superseded) memories of the workspace, in every scope.
    pub memory_count: u64,
}

/// A storage failure as the actors see it: a readable message, nothing more.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreFailure {
    #[error("workspace {0} does not exist")]
    UnknownWorkspace(Uuid),
    #[error("storage error: {0}")]
    Other(String),
}

#[async_trait]
pub trait WorkspaceStore: Send + Sync + 'static {
    /// Plan and memory count, read when the actor starts.
    async fn load_workspace(&self, workspace_id: Uuid) -> Result<WorkspaceSnapshot, StoreFailure>;
    /// The plan alone, re-read periodically.
    async fn load_workspace_plan(&self, workspace_id: Uuid) -> Result<Plan, StoreFailure>;
}
