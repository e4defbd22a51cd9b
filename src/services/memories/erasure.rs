//! What the memory side does around an erasure (the rules are in `services/erasure.rs`): the
//! scope's long-note jobs stop before the rows go, and what went leaves the index and the
//! workspace's counts after.

use uuid::Uuid;

use super::MemoryService;
use crate::error::{Error, Result};
use crate::model::Lane;
use crate::storage::erasure::Erased;

impl MemoryService {
    /// Stops the unfinished long-note jobs of `lane` (they would write into it again), and
    /// waits until the running ones have ended; their rows are erased with the scope. (An
    /// insert a killed job had already handed to the store commits within milliseconds, before
    /// the erasure reads the scope in the common case; the window is not closed.)
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
            queue
                .release_jobs(jobs.clone(), std::time::Duration::from_secs(10))
                .await
                .map_err(|e| Error::Unavailable(format!("cannot stop the scope's jobs: {e}")))?;
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
