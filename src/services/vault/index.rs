//! The vault's search indexes: one engine for document chunks, one for vault memories, with the
//! same machinery as the memories' (BM25 + vector segments, score fusion). A vault lane
//! (workspace, vault, scope) is an engine lane whose scope is `"{vault_id}/{scope}"`.

use std::sync::Arc;

use memvault_actors::Maintainer;
use uuid::Uuid;

use crate::model::vault::{Chunk, VaultLane, VaultMemory};
use crate::model::{to_micros, Category, Lane};
use crate::search::vectors::VectorConfig;
use crate::search::{Hit, IndexDoc, Query, SearchEngine, SearchError};
use crate::storage::vault::{IndexedChunk, IndexedVaultMemory};

pub struct VaultIndexes {
    pub chunks: SearchEngine,
    pub memories: SearchEngine,
}

/// The engine lane of a vault lane.
pub fn engine_lane(lane: &VaultLane) -> Lane {
    Lane {
        workspace_id: lane.workspace_id,
        scope: format!("{}/{}", lane.vault_id, lane.scope),
    }
}

fn chunk_doc(chunk: &Chunk) -> IndexDoc {
    IndexDoc {
        id: chunk.id,
        lane: engine_lane(&VaultLane {
            workspace_id: chunk.workspace_id,
            vault_id: chunk.vault_id,
            scope: chunk.scope.clone(),
        }),
        text: chunk.contextual_content.clone(),
        project: chunk.project.clone(),
        // Chunks have no category; one value keeps the category filter neutral.
        category: Category::Context,
        created_at: to_micros(chunk.created_at),
        valid_until: None,
        wrong: false,
        helpful: 0,
        not_helpful: 0,
        thread: String::new(),
        speaker: String::new(),
    }
}

pub fn memory_doc(memory: &VaultMemory) -> IndexDoc {
    IndexDoc {
        id: memory.id,
        lane: engine_lane(&VaultLane {
            workspace_id: memory.workspace_id,
            vault_id: memory.vault_id,
            scope: memory.scope.clone(),
        }),
        text: memory.content.clone(),
        project: memory.project.clone(),
        category: memory.category,
        created_at: to_micros(memory.created_at),
        valid_until: None,
        wrong: memory.flagged_wrong,
        helpful: memory.helpful_count,
        not_helpful: memory.not_helpful_count,
        thread: String::new(),
        speaker: String::new(),
    }
}

impl VaultIndexes {
    pub fn new(dims: usize) -> Result<Self, SearchError> {
        Ok(VaultIndexes {
            chunks: SearchEngine::new(dims, VectorConfig::for_vault())?,
            memories: SearchEngine::new(dims, VectorConfig::for_vault())?,
        })
    }

    fn schedule(lanes: Vec<Arc<crate::search::LaneIndex>>, maintainer: &Maintainer) {
        for lane in lanes {
            maintainer.schedule(lane);
        }
    }

    /// Schedules upkeep of every lane that needs it (after the maintainer restarted).
    pub fn schedule_all(&self, maintainer: &Maintainer) {
        Self::schedule(self.chunks.lanes(), maintainer);
        Self::schedule(self.memories.lanes(), maintainer);
    }

    pub fn add_chunks(
        &self,
        chunks: Vec<IndexedChunk>,
        maintainer: &Maintainer,
    ) -> Result<(), SearchError> {
        let grown = self.chunks.stage_in_pieces(
            chunks
                .into_iter()
                .map(|c| (chunk_doc(&c.chunk), c.vector, c.pieces)),
        )?;
        Self::schedule(grown, maintainer);
        Ok(())
    }

    pub fn add_memories(
        &self,
        memories: Vec<IndexedVaultMemory>,
        maintainer: &Maintainer,
    ) -> Result<(), SearchError> {
        let grown = self.memories.stage_docs(
            memories
                .into_iter()
                .map(|m| (memory_doc(&m.memory), m.vector)),
        )?;
        Self::schedule(grown, maintainer);
        Ok(())
    }

    pub fn remove(
        &self,
        lane: &VaultLane,
        chunk_ids: &[Uuid],
        memory_ids: &[Uuid],
    ) -> Result<(), SearchError> {
        let lane = engine_lane(lane);
        self.chunks.remove(&lane, chunk_ids)?;
        self.memories.remove(&lane, memory_ids)
    }

    /// Waits until every staged document is searchable by keyword.
    pub async fn settle(&self) -> Result<(), SearchError> {
        self.chunks.settle().await?;
        self.memories.settle().await
    }

    /// Ranks over several lanes of one engine: each lane's hits, merged by score.
    pub fn search(
        engine: &SearchEngine,
        lanes: &[VaultLane],
        query: &Query<'_>,
    ) -> Result<Vec<Hit>, SearchError> {
        let mut hits = Vec::new();
        for lane in lanes {
            hits.extend(engine.search(&engine_lane(lane), query)?);
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
        hits.truncate(query.limit * 2);
        Ok(hits)
    }
}
