//! What the Context Vault needs from storage. Implemented for SQLite and PostgreSQL by the same
//! SQL in `vault_sql.rs`. Every read and write of vault content is confined to one workspace
//! (and, for memories and chunks, to a vault lane) except the pipeline's calls, which name a
//! document by id: the document row carries its workspace, vault and lane.

use async_trait::async_trait;
use memvault_pipelines::model::{ChunkDraft, Section};
use memvault_pipelines::pipeline::{
    ChunkVectors, EmbeddedFact, Phase, Progress, Status, StatusChange, StoredChunk,
};
use uuid::Uuid;

use super::StoreResult;
use crate::model::vault::{
    Chunk, DeletedDocument, Document, DocumentEvent, Evidence, NewDocument, Vault, VaultLane,
    VaultMemory, VaultMemoryFilter,
};
use crate::model::{Category, Embedded, Rating};

/// The document a pipeline call is about, as the pipeline needs it.
#[derive(Debug, Clone)]
pub struct PipelineDocument {
    pub title: String,
    pub kind: memvault_pipelines::model::SourceKind,
    pub phase_done: Option<Phase>,
}

/// A vault memory written by extraction or curation, as the search index needs it.
#[derive(Debug, Clone)]
pub struct IndexedVaultMemory {
    pub memory: VaultMemory,
    pub vector: Option<Vec<f32>>,
}

/// A chunk with its vectors, as the search index needs it.
#[derive(Debug, Clone)]
pub struct IndexedChunk {
    pub chunk: Chunk,
    pub vector: Option<Vec<f32>>,
    /// Its pieces' vectors (none when it is read whole only).
    pub pieces: Vec<Vec<f32>>,
}

/// A new curated (`company`) fact.
#[derive(Debug, Clone)]
pub struct NewCompanyFact {
    pub id: Uuid,
    pub lane: VaultLane,
    pub project: String,
    pub content: String,
    pub content_hash: String,
    pub category: Category,
    pub embedding: Embedded,
    pub at_micros: i64,
}

/// What deleting a document removed, for the indexes.
#[derive(Debug, Clone)]
pub struct DocumentRemoval {
    pub lane: VaultLane,
    pub counts: DeletedDocument,
    pub chunk_ids: Vec<Uuid>,
    pub memory_ids: Vec<Uuid>,
}

/// A document a stop left unfinished, as start-up resumes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unfinished {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub status: Status,
    /// Attempts started so far (the one running when the server stopped included).
    pub attempts: u32,
}

#[async_trait]
pub trait VaultStore: Send + Sync + 'static {
    // Vaults.
    /// The workspace's default vault, created (named `default`) on first use.
    async fn default_vault(&self, workspace_id: Uuid) -> StoreResult<Vault>;
    async fn vault(&self, workspace_id: Uuid, id: Uuid) -> StoreResult<Option<Vault>>;
    /// Oldest first.
    async fn list_vaults(&self, workspace_id: Uuid) -> StoreResult<Vec<Vault>>;
    /// `false` when the workspace already has a vault of that name.
    async fn insert_vault(&self, vault: &Vault) -> StoreResult<bool>;

    // Documents.
    /// Stores the document (status `pending`, one history event) and its bytes in one
    /// transaction.
    async fn insert_document(&self, document: &NewDocument) -> StoreResult<Document>;
    async fn document(&self, workspace_id: Uuid, id: Uuid) -> StoreResult<Option<Document>>;
    /// Newest first.
    async fn list_documents(
        &self,
        workspace_id: Uuid,
        vault_id: Uuid,
        scope: &str,
        limit: i64,
        offset: i64,
    ) -> StoreResult<(Vec<Document>, i64)>;
    /// Oldest first.
    async fn document_events(&self, id: Uuid) -> StoreResult<Vec<DocumentEvent>>;
    /// Documents in `pending`, `processing` or `retrying`, oldest first.
    async fn unfinished_documents(&self) -> StoreResult<Vec<Unfinished>>;
    /// Back to `pending` with no attempts and no error (a retry on request); the committed
    /// phases stay, so the work resumes after them. Only from `failed` or `cancelled`, in the
    /// same statement (the supervisor owns every other status): `false` when there is no such
    /// document or it is in another status.
    async fn reset_document(
        &self,
        workspace_id: Uuid,
        id: Uuid,
        at_micros: i64,
    ) -> StoreResult<bool>;
    /// Deletes the document, its bytes, text, chunks and evidence; memories cited only by it
    /// are deleted, memories cited by another document too are kept. One transaction.
    async fn delete_document(
        &self,
        workspace_id: Uuid,
        id: Uuid,
    ) -> StoreResult<Option<DocumentRemoval>>;

    // The pipeline's calls (by document id).
    async fn pipeline_document(&self, id: Uuid) -> StoreResult<Option<PipelineDocument>>;
    async fn document_bytes(&self, id: Uuid) -> StoreResult<Option<Vec<u8>>>;
    /// Replaces the stored sections and sets `phase_done = phase`.
    async fn save_sections(&self, id: Uuid, phase: Phase, sections: &[Section]) -> StoreResult<()>;
    async fn sections(&self, id: Uuid) -> StoreResult<Vec<Section>>;
    /// Replaces the document's chunks, sets `chunk_count`, `total_chunks` and
    /// `phase_done = chunk`.
    async fn replace_chunks(
        &self,
        id: Uuid,
        chunks: &[ChunkDraft],
        at_micros: i64,
    ) -> StoreResult<()>;
    /// Chunks without a vector, in index order.
    async fn chunks_without_vectors(&self, id: Uuid) -> StoreResult<Vec<StoredChunk>>;
    /// Stores chunk vectors; returns the chunks (for the index).
    async fn put_chunk_vectors(
        &self,
        id: Uuid,
        model: &str,
        vectors: &[ChunkVectors],
    ) -> StoreResult<Vec<IndexedChunk>>;
    /// Chunks not extracted yet, in index order.
    async fn chunks_not_extracted(&self, id: Uuid) -> StoreResult<Vec<StoredChunk>>;
    /// In one transaction: each fact becomes a `document` memory of the document's lane and
    /// project (or joins an equal one: same normalised content), with one evidence item for
    /// this chunk; the chunk is marked extracted and `extracted_count` recomputed. Returns the
    /// memories that are new (for the index).
    async fn save_chunk_facts(
        &self,
        id: Uuid,
        chunk_id: Uuid,
        model: &str,
        facts: &[EmbeddedFact],
        at_micros: i64,
    ) -> StoreResult<Vec<IndexedVaultMemory>>;
    async fn finish_phase(&self, id: Uuid, phase: Phase, at_micros: i64) -> StoreResult<()>;
    /// Sets `processing_phase` and `heartbeat_at`; for the embed and extract phases also
    /// `processed_chunks` and `total_chunks`.
    async fn record_progress(
        &self,
        id: Uuid,
        progress: Progress,
        at_micros: i64,
    ) -> StoreResult<()>;
    /// Sets status, attempts and error (completed clears it and sets `completed_at`), and
    /// appends the change to the history. `processing`, `retrying` and `failed` apply only to
    /// a document still in the pipeline (`pending`, `processing` or `retrying`): a document
    /// cancelled, finished or deleted meanwhile is left as it is. Returns whether it applied.
    async fn set_document_status(
        &self,
        id: Uuid,
        change: &StatusChange,
        at_micros: i64,
    ) -> StoreResult<bool>;

    // Reading vault content.
    /// Chunks among `ids` in the workspace (any lane: the caller filters), with their
    /// document's title and source type.
    async fn chunks_by_ids(&self, workspace_id: Uuid, ids: &[Uuid]) -> StoreResult<Vec<Chunk>>;
    /// Vault memories among `ids` in the workspace (flagged ones included: the caller
    /// filters), with their first source.
    async fn vault_memories_by_ids(
        &self,
        workspace_id: Uuid,
        ids: &[Uuid],
    ) -> StoreResult<Vec<VaultMemory>>;
    /// The evidence of each memory among `ids`: `(memory_id, evidence)`, best confidence
    /// first.
    async fn evidence_of(&self, memory_ids: &[Uuid]) -> StoreResult<Vec<(Uuid, Evidence)>>;
    /// The chunks each memory among `ids` is cited from: `(memory_id, chunk_id)`.
    async fn cited_chunks(&self, memory_ids: &[Uuid]) -> StoreResult<Vec<(Uuid, Uuid)>>;
    /// Browse: newest first, with the exact total.
    async fn list_vault_memories(
        &self,
        filter: &VaultMemoryFilter,
    ) -> StoreResult<(Vec<VaultMemory>, i64)>;
    /// The memories a document is cited by (oldest first).
    async fn document_memories(
        &self,
        workspace_id: Uuid,
        document_id: Uuid,
    ) -> StoreResult<Vec<VaultMemory>>;
    /// Inserts a curated fact; `(memory, false)` when an equal fact exists in the lane and
    /// project (the existing one is returned).
    async fn insert_company_fact(&self, fact: &NewCompanyFact) -> StoreResult<(VaultMemory, bool)>;
    /// Stores feedback; `helpful`/`not_helpful` count, `wrong` flags the memory out of search,
    /// `outdated` flags it out too (vault memories have no validity window). `false` when the memory is not in the workspace.
    async fn vault_memory_feedback(
        &self,
        workspace_id: Uuid,
        id: Uuid,
        rating: Rating,
        explanation: Option<&str>,
        at_micros: i64,
    ) -> StoreResult<bool>;
    // Index rebuilds (at start-up, or of one workspace a cluster node takes): every chunk /
    // live memory with a vector, of one workspace or of all, after `after` (ordered by id),
    // `limit` at a time.
    async fn chunks_page(
        &self,
        workspace: Option<Uuid>,
        after: Option<Uuid>,
        limit: i64,
    ) -> StoreResult<Vec<IndexedChunk>>;
    async fn vault_memories_page(
        &self,
        workspace: Option<Uuid>,
        after: Option<Uuid>,
        limit: i64,
    ) -> StoreResult<Vec<IndexedVaultMemory>>;
}
