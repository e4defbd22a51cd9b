//! The row types of the Context Vault's tables and their conversions to the model, and the
//! helper queries `vault_sql!` builds on (`vault_sql_helpers!`), for SQLite and PostgreSQL.

use memvault_pipelines::model::SourceKind;
use memvault_pipelines::pipeline::{Phase, StoredChunk};
use sqlx::FromRow;
use uuid::Uuid;

use super::vault::IndexedChunk;
use super::StoreResult;
use crate::embedding;
use crate::error::StorageError;
use crate::model::vault::{Chunk, Document, DocumentEvent, MemoryType, Status, Vault, VaultMemory};
use crate::model::{from_micros, Category, Rating};

/// Most ids bound in one `IN (...)` list.
pub(super) const IN_BATCH: usize = 500;

pub(super) const VAULT_COLUMNS: &str = "id, workspace_id, name, is_default, created_at";

macro_rules! document_columns {
    () => {
        "id, workspace_id, vault_id, title, source_type, kind, scope, project, source_url, \
         byte_size, status, processing_phase, phase_done, attempts, error, total_chunks, \
         processed_chunks, chunk_count, extracted_count, created_at, updated_at, heartbeat_at, \
         completed_at"
    };
}

/// The chunk columns (alias `c`) with the document's title and source type (alias `d`).
macro_rules! chunk_columns {
    () => {
        "c.id, c.document_id, c.workspace_id, c.vault_id, c.scope, c.project, c.chunk_index, \
         c.section_path, c.content, c.contextual_content, c.created_at, d.title, d.source_type"
    };
}

macro_rules! stored_chunk_columns {
    () => {
        "id, chunk_index, section_path, content, contextual_content"
    };
}

macro_rules! vault_memory_columns {
    () => {
        "id, workspace_id, vault_id, memory_type, content, category, scope, project, \
         helpful_count, not_helpful_count, flagged_wrong, created_at"
    };
}

macro_rules! vault_memory_columns_m {
    () => {
        "m.id, m.workspace_id, m.vault_id, m.memory_type, m.content, m.category, m.scope, \
         m.project, m.helpful_count, m.not_helpful_count, m.flagged_wrong, m.created_at"
    };
}

pub(super) const INSERT_VAULT_MEMORY: &str = concat!(
    "INSERT INTO vault_memories (id, workspace_id, vault_id, memory_type, content, content_hash, \
     category, scope, project, model, vector, created_at, updated_at) VALUES ($1, $2, $3, $4, \
     $5, $6, $7, $8, $9, $10, $11, $12, $12) ON CONFLICT DO NOTHING RETURNING ",
    vault_memory_columns!()
);

/// The id of the memory that holds a dedup key.
pub(super) const VAULT_MEMORY_BY_KEY: &str = concat!(
    "SELECT ",
    vault_memory_columns!(),
    " FROM vault_memories WHERE workspace_id = $1 AND vault_id = $2 AND scope = $3 \
     AND project = $4 AND memory_type = $5 AND content_hash = $6"
);

#[derive(FromRow)]
pub(super) struct VaultRow {
    pub(super) id: Uuid,
    pub(super) workspace_id: Uuid,
    pub(super) name: String,
    pub(super) is_default: bool,
    pub(super) created_at: i64,
}

impl From<VaultRow> for Vault {
    fn from(row: VaultRow) -> Self {
        Vault {
            id: row.id,
            workspace_id: row.workspace_id,
            name: row.name,
            is_default: row.is_default,
            created_at: from_micros(row.created_at),
        }
    }
}

#[derive(FromRow)]
pub(super) struct DocumentRow {
    pub(super) id: Uuid,
    pub(super) workspace_id: Uuid,
    pub(super) vault_id: Uuid,
    pub(super) title: String,
    pub(super) source_type: String,
    pub(super) kind: String,
    pub(super) scope: String,
    pub(super) project: String,
    pub(super) source_url: Option<String>,
    pub(super) byte_size: i64,
    pub(super) status: String,
    pub(super) processing_phase: Option<String>,
    pub(super) phase_done: Option<String>,
    pub(super) attempts: i64,
    pub(super) error: Option<String>,
    pub(super) total_chunks: i64,
    pub(super) processed_chunks: i64,
    pub(super) chunk_count: i64,
    pub(super) extracted_count: i64,
    pub(super) created_at: i64,
    pub(super) updated_at: i64,
    pub(super) heartbeat_at: Option<i64>,
    pub(super) completed_at: Option<i64>,
}

pub(super) fn corrupt(what: &str, id: Uuid, field: &str, value: &str) -> StorageError {
    StorageError::Corrupt(format!("{what} {id}: bad {field} '{value}'"))
}

pub(super) fn parse_kind(id: Uuid, value: &str) -> StoreResult<SourceKind> {
    SourceKind::parse(value).ok_or_else(|| corrupt("document", id, "kind", value))
}

pub(super) fn parse_phase(id: Uuid, value: Option<String>) -> StoreResult<Option<Phase>> {
    value
        .map(|v| Phase::parse(&v).ok_or_else(|| corrupt("document", id, "phase", &v)))
        .transpose()
}

impl TryFrom<DocumentRow> for Document {
    type Error = StorageError;
    fn try_from(row: DocumentRow) -> Result<Self, StorageError> {
        let id = row.id;
        Ok(Document {
            kind: parse_kind(id, &row.kind)?,
            status: Status::parse(&row.status)
                .ok_or_else(|| corrupt("document", id, "status", &row.status))?,
            processing_phase: parse_phase(id, row.processing_phase)?,
            phase_done: parse_phase(id, row.phase_done)?,
            id,
            workspace_id: row.workspace_id,
            vault_id: row.vault_id,
            title: row.title,
            source_type: row.source_type,
            scope: row.scope,
            project: row.project,
            source_url: row.source_url,
            byte_size: row.byte_size,
            attempts: row.attempts,
            error: row.error,
            total_chunks: row.total_chunks,
            processed_chunks: row.processed_chunks,
            chunk_count: row.chunk_count,
            extracted_count: row.extracted_count,
            created_at: from_micros(row.created_at),
            updated_at: from_micros(row.updated_at),
            heartbeat_at: row.heartbeat_at.map(from_micros),
            completed_at: row.completed_at.map(from_micros),
        })
    }
}

pub(super) fn documents(rows: Vec<DocumentRow>) -> StoreResult<Vec<Document>> {
    rows.into_iter().map(Document::try_from).collect()
}

#[derive(FromRow)]
pub(super) struct EventRow {
    pub(super) at: i64,
    pub(super) status: String,
    pub(super) phase: Option<String>,
    pub(super) attempt: i64,
    pub(super) message: Option<String>,
}

impl From<EventRow> for DocumentEvent {
    fn from(row: EventRow) -> Self {
        DocumentEvent {
            at: from_micros(row.at),
            status: row.status,
            phase: row.phase,
            attempt: row.attempt,
            message: row.message,
        }
    }
}

#[derive(FromRow)]
pub(super) struct ChunkRow {
    pub(super) id: Uuid,
    pub(super) document_id: Uuid,
    pub(super) workspace_id: Uuid,
    pub(super) vault_id: Uuid,
    pub(super) scope: String,
    pub(super) project: String,
    pub(super) chunk_index: i64,
    pub(super) section_path: String,
    pub(super) content: String,
    pub(super) contextual_content: String,
    pub(super) created_at: i64,
    pub(super) title: String,
    pub(super) source_type: String,
}

impl From<ChunkRow> for Chunk {
    fn from(row: ChunkRow) -> Self {
        Chunk {
            id: row.id,
            document_id: row.document_id,
            workspace_id: row.workspace_id,
            vault_id: row.vault_id,
            scope: row.scope,
            project: row.project,
            chunk_index: row.chunk_index,
            section_path: row.section_path,
            content: row.content,
            contextual_content: row.contextual_content,
            created_at: from_micros(row.created_at),
            title: row.title,
            source_type: row.source_type,
        }
    }
}

#[derive(FromRow)]
pub(super) struct IndexedChunkRow {
    #[sqlx(flatten)]
    pub(super) chunk: ChunkRow,
    pub(super) vector: Option<Vec<u8>>,
    pub(super) piece_vectors: Option<Vec<u8>>,
}

impl From<IndexedChunkRow> for IndexedChunk {
    fn from(row: IndexedChunkRow) -> Self {
        let vector = row.vector.map(|bytes| embedding::from_bytes(&bytes));
        // Pieces are stored one after the other, each as long as the chunk's own vector.
        let dims = vector.as_ref().map_or(0, Vec::len);
        let pieces = match row.piece_vectors {
            Some(bytes) if dims > 0 => embedding::from_bytes(&bytes)
                .chunks_exact(dims)
                .map(<[f32]>::to_vec)
                .collect(),
            _ => Vec::new(),
        };
        IndexedChunk {
            chunk: Chunk::from(row.chunk),
            vector,
            pieces,
        }
    }
}

#[derive(FromRow)]
pub(super) struct StoredChunkRow {
    pub(super) id: Uuid,
    pub(super) chunk_index: i64,
    pub(super) section_path: String,
    pub(super) content: String,
    pub(super) contextual_content: String,
}

impl From<StoredChunkRow> for StoredChunk {
    fn from(row: StoredChunkRow) -> Self {
        StoredChunk {
            id: row.id,
            index: row.chunk_index.max(0) as u32,
            section_path: row.section_path,
            content: row.content,
            contextual_content: row.contextual_content,
        }
    }
}

#[derive(FromRow)]
pub(super) struct VaultMemoryRow {
    pub(super) id: Uuid,
    pub(super) workspace_id: Uuid,
    pub(super) vault_id: Uuid,
    pub(super) memory_type: String,
    pub(super) content: String,
    pub(super) category: String,
    pub(super) scope: String,
    pub(super) project: String,
    pub(super) helpful_count: i64,
    pub(super) not_helpful_count: i64,
    pub(super) flagged_wrong: bool,
    pub(super) created_at: i64,
}

impl TryFrom<VaultMemoryRow> for VaultMemory {
    type Error = StorageError;
    fn try_from(row: VaultMemoryRow) -> Result<Self, StorageError> {
        let id = row.id;
        Ok(VaultMemory {
            memory_type: row
                .memory_type
                .parse::<MemoryType>()
                .map_err(|_| corrupt("vault memory", id, "memory_type", &row.memory_type))?,
            category: row
                .category
                .parse::<Category>()
                .map_err(|_| corrupt("vault memory", id, "category", &row.category))?,
            id,
            workspace_id: row.workspace_id,
            vault_id: row.vault_id,
            content: row.content,
            scope: row.scope,
            project: row.project,
            helpful_count: row.helpful_count,
            not_helpful_count: row.not_helpful_count,
            flagged_wrong: row.flagged_wrong,
            created_at: from_micros(row.created_at),
            source: None,
        })
    }
}

#[derive(FromRow)]
pub(super) struct IndexedVaultMemoryRow {
    #[sqlx(flatten)]
    pub(super) memory: VaultMemoryRow,
    pub(super) vector: Option<Vec<u8>>,
}

/// A memory's evidence document, oldest evidence first.
#[derive(FromRow)]
pub(super) struct SourceRow {
    pub(super) memory_id: Uuid,
    pub(super) document_id: Uuid,
    pub(super) title: String,
    pub(super) source_url: Option<String>,
}

#[derive(FromRow)]
pub(super) struct EvidenceRow {
    pub(super) memory_id: Uuid,
    pub(super) document_id: Uuid,
    pub(super) chunk_id: Uuid,
    pub(super) quote: String,
    pub(super) confidence: f64,
    pub(super) title: String,
    pub(super) section_path: String,
    pub(super) chunk_index: i64,
    pub(super) scope: String,
}

/// The lane and project of a document (what its chunks and memories inherit).
#[derive(FromRow)]
pub(super) struct DocumentLaneRow {
    pub(super) workspace_id: Uuid,
    pub(super) vault_id: Uuid,
    pub(super) scope: String,
    pub(super) project: String,
}

#[derive(FromRow)]
pub(super) struct PipelineRow {
    pub(super) id: Uuid,
    pub(super) title: String,
    pub(super) kind: String,
    pub(super) phase_done: Option<String>,
}

/// The update that applies a rating's effect to a vault memory.
pub(super) fn vault_feedback_update(rating: Rating) -> &'static str {
    macro_rules! update {
        ($effect:literal) => {
            concat!(
                "UPDATE vault_memories SET ",
                $effect,
                ", updated_at = $1 WHERE id = $2 AND workspace_id = $3"
            )
        };
    }
    match rating {
        Rating::Helpful => update!("helpful_count = helpful_count + 1"),
        Rating::NotHelpful => update!("not_helpful_count = not_helpful_count + 1"),
        // Vault memories have no validity window: outdated and wrong both hide them.
        Rating::Outdated | Rating::Wrong => update!("flagged_wrong = TRUE"),
    }
}

/// The store's own helpers (sources of vault memories, filters, events, the default vault),
/// expanded inside `vault_sql!` for each database.
macro_rules! vault_sql_helpers {
    ($store:ident, $db:ty) => {
        impl $store {
            /// Fills each memory's `source`: the document of its oldest evidence.
            async fn fill_sources(&self, memories: &mut [VaultMemory]) -> StoreResult<()> {
                if memories.is_empty() {
                    return Ok(());
                }
                let ids: Vec<Uuid> = memories.iter().map(|m| m.id).collect();
                let mut sources: HashMap<Uuid, MemorySource> = HashMap::new();
                for batch in ids.chunks(IN_BATCH) {
                    let mut qb = QueryBuilder::<$db>::new(
                        "SELECT e.memory_id, d.id AS document_id, d.title, d.source_url \
                         FROM vault_evidence e JOIN vault_documents d ON d.id = e.document_id \
                         WHERE e.memory_id IN (",
                    );
                    let mut list = qb.separated(", ");
                    for id in batch {
                        list.push_bind(*id);
                    }
                    qb.push(") ORDER BY e.created_at, e.id");
                    let rows: Vec<SourceRow> = qb.build_query_as().fetch_all(&self.pool).await?;
                    for row in rows {
                        sources.entry(row.memory_id).or_insert(MemorySource {
                            id: row.document_id,
                            title: row.title,
                            url: row.source_url,
                        });
                    }
                }
                for memory in memories.iter_mut() {
                    memory.source = sources.remove(&memory.id);
                }
                Ok(())
            }

            async fn vault_memories_with_sources(
                &self,
                rows: Vec<VaultMemoryRow>,
            ) -> StoreResult<Vec<VaultMemory>> {
                let mut memories = rows
                    .into_iter()
                    .map(VaultMemory::try_from)
                    .collect::<StoreResult<Vec<_>>>()?;
                self.fill_sources(&mut memories).await?;
                Ok(memories)
            }

            fn push_vault_memory_filters(qb: &mut QueryBuilder<$db>, f: &VaultMemoryFilter) {
                qb.push(" FROM vault_memories WHERE workspace_id = ");
                qb.push_bind(f.lane.workspace_id);
                qb.push(" AND vault_id = ");
                qb.push_bind(f.lane.vault_id);
                qb.push(" AND scope = ");
                qb.push_bind(f.lane.scope.clone());
                qb.push(" AND NOT flagged_wrong");
                if let Some(memory_type) = f.memory_type {
                    qb.push(" AND memory_type = ");
                    qb.push_bind(memory_type.as_str());
                }
                if !f.projects.is_empty() {
                    qb.push(" AND project IN (");
                    let mut list = qb.separated(", ");
                    for project in &f.projects {
                        list.push_bind(project.clone());
                    }
                    qb.push(")");
                }
                if !f.categories.is_empty() {
                    qb.push(" AND category IN (");
                    let mut list = qb.separated(", ");
                    for category in &f.categories {
                        list.push_bind(category.as_str());
                    }
                    qb.push(")");
                }
            }

            async fn insert_document_event(
                tx: &mut sqlx::Transaction<'_, $db>,
                document_id: Uuid,
                at_micros: i64,
                status: &str,
                phase: Option<&str>,
                attempt: i64,
                message: Option<&str>,
            ) -> StoreResult<()> {
                sqlx::query(
                    "INSERT INTO vault_document_events (id, document_id, at, status, phase, \
                     attempt, message) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .bind(Uuid::now_v7())
                .bind(document_id)
                .bind(at_micros)
                .bind(status)
                .bind(phase)
                .bind(attempt)
                .bind(message)
                .execute(&mut **tx)
                .await
                .map_err(StorageError::from_db)?;
                Ok(())
            }

            async fn select_default_vault<'e, E>(executor: E, workspace_id: Uuid) -> StoreResult<Option<VaultRow>>
            where
                E: sqlx::Executor<'e, Database = $db>,
            {
                let sql = format!(
                    "SELECT {VAULT_COLUMNS} FROM vaults WHERE workspace_id = $1 AND is_default"
                );
                Ok(sqlx::query_as::<$db, VaultRow>(sqlx::AssertSqlSafe(sql))
                    .bind(workspace_id)
                    .fetch_optional(executor)
                    .await?)
            }
        }
    };
}

pub(super) use {
    chunk_columns, document_columns, stored_chunk_columns, vault_memory_columns,
    vault_memory_columns_m, vault_sql_helpers,
};
