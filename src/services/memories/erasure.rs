//! What the memory side does around an erasure (the rules are in `services/erasure.rs`): the
//! scope's long-note jobs stop before the rows go, and what went leaves the index and the
//! workspace's counts after.

use uuid::Uuid;

use super::MemoryService;
use crate::error::Result;
use crate::model::Lane;
use crate::storage::erasure::Erased;

impl MemoryService {
    /// Stops the unfinished long-note jobs of `lane` (they would write into it again); their
    /// rows are erased with the scope.
    pub(crate) async fn release_jobs_of(&self, lane: &Lane) -> Result<usize> {
        let jobs: Vec<Uuid> = self
            .store
            .unfinished_jobs()
            .await?
            .into_iter()
            .filter(|job| job.workspace_id == lane.workspace_id && job.scope == lane.scope)
            .map(|job| job.id)
            .collect();
        if let (Some(queue), false) = (self.jobs.get(), jobs.is_empty()) {
            if let Err(error) = queue.release_jobs(jobs.clone()) {
                tracing::warn!(workspace_id = %lane.workspace_id, %error, "cannot stop the jobs of an erased scope");
            }
        }
        Ok(jobs.len())
    }

    /// After an erasure in `lane`: the removed memories leave the index, the scope's cached
    /// profiles are dropped and the workspace's memory count frees their room.
    pub(crate) fn forget_erased(&self, lane: &Lane, erased: &Erased) {
        self.unindex(lane, &erased.memory_ids);
        self.workspaces
            .memories_removed(lane.workspace_id, erased.counts.memories);
    }
}
