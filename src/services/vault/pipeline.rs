//! The server's side of the ingestion pipeline: storage, chunking, embedding and extraction
//! behind the traits of `memvault-pipelines`. Every write that makes content searchable updates
//! the vault's indexes right after its commit.

use std::sync::Arc;

use async_trait::async_trait;
use memvault_actors::Maintainer;
use memvault_pipelines::model::{ChunkDraft, FactDraft, Section};
use memvault_pipelines::pipeline::{
    ChunkVectors, Chunker, DocumentStore, DocumentTask, EmbeddedFact, Embedder, Extractor,
    FailureReason, Observer, Outcome, Phase, Progress, StatusChange, StoreError, StoredChunk,
};
use uuid::Uuid;

use super::index::VaultIndexes;
use crate::embedding::Embeddings;
use crate::model::{now, to_micros};
use crate::storage::Store;
use crate::text::chunk::{chunk_pieces, chunk_sections, ChunkConfig};
use crate::text::extract::extract_facts;

fn failed(error: impl std::fmt::Display) -> StoreError {
    StoreError(error.to_string())
}

fn now_micros() -> i64 {
    to_micros(now())
}

/// [`DocumentStore`] over the database and the vault's indexes.
pub struct PipelineStore {
    pub store: Arc<dyn Store>,
    pub indexes: Arc<VaultIndexes>,
    pub maintainer: Maintainer,
    pub model: String,
}

#[async_trait]
impl DocumentStore for PipelineStore {
    async fn load(&self, id: Uuid) -> Result<DocumentTask, StoreError> {
        let document = self
            .store
            .pipeline_document(id)
            .await
            .map_err(failed)?
            .ok_or_else(|| StoreError(format!("document {id} is gone")))?;
        Ok(DocumentTask {
            id,
            title: document.title,
            kind: document.kind,
            done: document.phase_done,
        })
    }

    async fn raw(&self, id: Uuid) -> Result<Vec<u8>, StoreError> {
        self.store
            .document_bytes(id)
            .await
            .map_err(failed)?
            .ok_or_else(|| StoreError(format!("the bytes of document {id} are gone")))
    }

    async fn save_sections(
        &self,
        id: Uuid,
        phase: Phase,
        sections: &[Section],
    ) -> Result<(), StoreError> {
        self.store
            .save_sections(id, phase, sections)
            .await
            .map_err(failed)
    }

    async fn sections(&self, id: Uuid) -> Result<Vec<Section>, StoreError> {
        self.store.sections(id).await.map_err(failed)
    }

    async fn save_chunks(&self, id: Uuid, chunks: &[ChunkDraft]) -> Result<(), StoreError> {
        self.store
            .replace_chunks(id, chunks, now_micros())
            .await
            .map_err(failed)
    }

    async fn chunks_to_embed(&self, id: Uuid) -> Result<Vec<StoredChunk>, StoreError> {
        self.store.chunks_without_vectors(id).await.map_err(failed)
    }

    async fn save_chunk_vectors(
        &self,
        id: Uuid,
        vectors: &[ChunkVectors],
    ) -> Result<(), StoreError> {
        let chunks = self
            .store
            .put_chunk_vectors(id, &self.model, vectors)
            .await
            .map_err(failed)?;
        self.indexes
            .add_chunks(chunks, &self.maintainer)
            .map_err(failed)
    }

    async fn chunks_to_extract(&self, id: Uuid) -> Result<Vec<StoredChunk>, StoreError> {
        self.store.chunks_not_extracted(id).await.map_err(failed)
    }

    async fn save_facts(
        &self,
        id: Uuid,
        chunk: &StoredChunk,
        facts: &[EmbeddedFact],
    ) -> Result<(), StoreError> {
        let created = self
            .store
            .save_chunk_facts(id, chunk.id, &self.model, facts, now_micros())
            .await
            .map_err(failed)?;
        self.indexes
            .add_memories(created, &self.maintainer)
            .map_err(failed)
    }

    async fn finish_phase(&self, id: Uuid, phase: Phase) -> Result<(), StoreError> {
        self.store
            .finish_phase(id, phase, now_micros())
            .await
            .map_err(failed)
    }

    async fn record_progress(&self, id: Uuid, progress: Progress) -> Result<(), StoreError> {
        self.store
            .record_progress(id, progress, now_micros())
            .await
            .map_err(failed)
    }

    async fn set_status(&self, id: Uuid, change: StatusChange) -> Result<bool, StoreError> {
        self.store
            .set_document_status(id, &change, now_micros())
            .await
            .map_err(failed)
    }
}

/// Structure-aware chunking (`text::chunk`): chunks, and the pieces a long chunk is embedded as.
pub struct TextChunker {
    pub chunks: ChunkConfig,
    /// `None`: chunks are embedded whole.
    pub pieces: Option<ChunkConfig>,
}

impl Chunker for TextChunker {
    fn chunk(&self, title: &str, sections: &[Section]) -> Vec<ChunkDraft> {
        chunk_sections(title, sections, &self.chunks)
    }

    fn pieces(&self, title: &str, chunk: &StoredChunk) -> Vec<String> {
        match &self.pieces {
            Some(config) => chunk_pieces(title, &chunk.section_path, &chunk.content, config),
            None => Vec::new(),
        }
    }
}

/// The offline extractor (`text::extract`).
pub struct OfflineExtractor;

#[async_trait]
impl Extractor for OfflineExtractor {
    async fn extract(&self, title: &str, chunk: &StoredChunk) -> Result<Vec<FactDraft>, String> {
        let title = title.to_string();
        let section = chunk.section_path.clone();
        let content = chunk.content.clone();
        tokio::task::spawn_blocking(move || extract_facts(&title, &section, &content))
            .await
            .map_err(|e| format!("extraction worker failed: {e}"))
    }
}

/// The sentence encoder the memories use (batched, off the async workers).
pub struct ModelEmbedder(pub Embeddings);

#[async_trait]
impl Embedder for ModelEmbedder {
    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        self.0
            .embed_documents(texts)
            .await
            .map_err(|e| e.to_string())
    }
}

/// The `phase` label of a failure that happened before any phase ran.
const NO_PHASE: &str = "none";

/// Counts the pipeline's phase times and generation outcomes in the server's metrics.
pub struct PipelineMetrics(Arc<crate::metrics::Metrics>);

impl PipelineMetrics {
    /// Exports every phase's and failure's series at zero first.
    pub fn new(metrics: Arc<crate::metrics::Metrics>) -> Self {
        for phase in Phase::remaining(None) {
            metrics.phase_series(phase.as_str());
            for reason in FailureReason::ALL {
                if reason != FailureReason::Interrupted {
                    metrics.failure_series(phase.as_str(), reason.as_str());
                }
            }
        }
        // Refused at resumption, before any phase ran.
        metrics.failure_series(NO_PHASE, FailureReason::Interrupted.as_str());
        PipelineMetrics(metrics)
    }
}

impl Observer for PipelineMetrics {
    fn phase_done(&self, phase: Phase, elapsed: std::time::Duration) {
        self.0.phase_done(phase.as_str(), elapsed);
    }

    fn generation_ended(
        &self,
        outcome: Outcome,
        phase: Option<Phase>,
        reason: Option<FailureReason>,
    ) {
        self.0.generation_ended(
            outcome.as_str(),
            reason.map(|r| (phase.map_or(NO_PHASE, Phase::as_str), r.as_str())),
        );
    }
}
