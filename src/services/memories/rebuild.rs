//! Start-up: the search indexes are derived data, rebuilt from the database. Memories whose
//! stored vector is missing or was made by another model are (re-)embedded on the way, and
//! `memvault admin reembed` re-embeds every current memory.

use std::time::{Duration, Instant};

use uuid::Uuid;

use super::{embed_error, search_error, MemoryService};
use crate::error::Result;
use crate::model::Embedded;
use crate::storage::IndexedMemory;

/// Memories read per page.
const PAGE: i64 = 2_000;

/// What a rebuild did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RebuildReport {
    pub indexed: usize,
    /// Memories embedded because their vector was missing, stale or `force` was given.
    pub embedded: usize,
    pub elapsed: Duration,
}

impl MemoryService {
    /// Indexes every current memory of the database; with `force`, re-embeds them all.
    pub async fn rebuild_indexes(&self, force: bool) -> Result<RebuildReport> {
        self.rebuild(None, force).await
    }

    /// Makes a workspace this cluster node just took servable: its indexes rebuilt from the
    /// database, its unfinished long-note jobs resumed.
    pub async fn load_workspace(&self, workspace_id: Uuid) -> Result<RebuildReport> {
        self.engine
            .drop_workspace(workspace_id)
            .map_err(search_error)?;
        let report = self.rebuild(Some(workspace_id), false).await?;
        self.resume_jobs_in(Some(&[workspace_id])).await?;
        Ok(report)
    }

    /// Forgets what this node held for a workspace that moved to another node: its long-note
    /// jobs (stopped, left unfinished for the new owner), its indexes and its actor (rate
    /// windows, counts, cached profiles).
    pub fn unload_workspace(&self, workspace_id: Uuid) {
        if let Some(jobs) = self.jobs.get() {
            if let Err(error) = jobs.release(workspace_id) {
                // A restarting supervisor resumes only the jobs of workspaces this node owns.
                tracing::warn!(%workspace_id, %error, "cannot release a workspace's jobs");
            }
        }
        if let Err(error) = self.engine.drop_workspace(workspace_id) {
            tracing::warn!(%workspace_id, %error, "cannot drop a workspace's indexes");
        }
        self.workspaces.evict(workspace_id);
    }

    async fn rebuild(&self, workspace: Option<Uuid>, force: bool) -> Result<RebuildReport> {
        let started = Instant::now();
        let model = self.embeddings.model().to_string();
        let dims = self.embeddings.dimensions();
        let mut report = RebuildReport::default();
        let mut after = 0;
        loop {
            let page = self
                .store
                .current_memories_page(workspace, after, PAGE)
                .await?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            let (ready, stale): (Vec<IndexedMemory>, Vec<IndexedMemory>) =
                page.into_iter().partition(|row| {
                    !force
                        && row
                            .vector
                            .as_ref()
                            .is_some_and(|(m, v)| *m == model && v.len() == dims)
                });
            let mut items: Vec<_> = ready
                .into_iter()
                .map(|row| (row.seq, row.memory, row.vector.map(|(_, v)| v)))
                .collect();
            if !stale.is_empty() {
                let texts = stale.iter().map(|row| row.memory.content.clone()).collect();
                let vectors = self
                    .embeddings
                    .embed_documents(texts)
                    .await
                    .map_err(embed_error)?;
                let stored: Vec<(Uuid, Embedded)> = stale
                    .iter()
                    .zip(&vectors)
                    .map(|(row, vector)| {
                        (
                            row.memory.id,
                            Embedded {
                                model: model.as_str().into(),
                                vector: vector.as_slice().into(),
                            },
                        )
                    })
                    .collect();
                self.store.put_vectors(&stored).await?;
                report.embedded += stale.len();
                items.extend(
                    stale
                        .into_iter()
                        .zip(vectors)
                        .map(|(row, vector)| (row.seq, row.memory, Some(vector))),
                );
            }
            report.indexed += items.len();
            // In save order, re-embedded or not: a thread's turns are linked in that order.
            items.sort_by_key(|(seq, _, _)| *seq);
            self.engine
                .stage(
                    items
                        .into_iter()
                        .map(|(_, memory, vector)| (memory, vector)),
                )
                .map_err(search_error)?;
        }
        self.engine.flush().await.map_err(search_error)?;
        self.schedule_maintenance();
        report.elapsed = started.elapsed();
        Ok(report)
    }
}
