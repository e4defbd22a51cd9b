//! The SQL of [`VaultStore`], written once and instantiated for SQLite and PostgreSQL by
//! `vault_sql!` (the same conventions as `sql.rs`: `$N` placeholders, UUIDs bound directly,
//! integer microsecond timestamps, empty-string "none", vectors as little-endian bytes).

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use memvault_pipelines::model::{ChunkDraft, Section};
use memvault_pipelines::pipeline::{
    ChunkVectors, EmbeddedFact, Phase, Progress, StatusChange, StoredChunk,
};
use sqlx::{FromRow, QueryBuilder};
use uuid::Uuid;

use super::sql::{PgStore, SqliteStore};
use super::vault::{
    DocumentRemoval, IndexedChunk, IndexedVaultMemory, NewCompanyFact, PipelineDocument,
    Unfinished, VaultStore,
};
#[allow(clippy::wildcard_imports)] // the rows and column lists `vault_sql!` expands with
use super::vault_rows::*;
use super::StoreResult;
use crate::embedding;
use crate::error::StorageError;
use crate::model::vault::{
    Chunk, DeletedDocument, Document, DocumentEvent, Evidence, MemorySource, MemoryType,
    NewDocument, Status, Vault, VaultLane, VaultMemory, VaultMemoryFilter,
};
use crate::model::{content_hash, normalize, to_micros, Category, Rating};

macro_rules! vault_sql {
    ($store:ident, $db:ty) => {
        vault_sql_helpers!($store, $db);

        #[async_trait]
        impl VaultStore for $store {
            async fn default_vault(&self, workspace_id: Uuid) -> StoreResult<Vault> {
                if let Some(row) = Self::select_default_vault(&self.pool, workspace_id).await? {
                    return Ok(row.into());
                }
                // Two callers may race here: the partial unique index keeps one default, and
                // both read back the winner. A non-default vault already named `default` takes
                // the name: the default is then named after its id.
                for attempt in 0..2 {
                    let id = Uuid::now_v7();
                    let name = if attempt == 0 {
                        "default".to_string()
                    } else {
                        format!("default-{}", &id.simple().to_string()[24..])
                    };
                    sqlx::query(
                        "INSERT INTO vaults (id, workspace_id, name, is_default, created_at) \
                         VALUES ($1, $2, $3, TRUE, $4) ON CONFLICT DO NOTHING",
                    )
                    .bind(id)
                    .bind(workspace_id)
                    .bind(name)
                    .bind(to_micros(chrono::Utc::now()))
                    .execute(&self.writer)
                    .await
                    .map_err(StorageError::from_db)?;
                    if let Some(row) = Self::select_default_vault(&self.writer, workspace_id).await? {
                        return Ok(row.into());
                    }
                }
                Err(StorageError::Corrupt(format!(
                    "workspace {workspace_id}: the default vault cannot be created"
                )))
            }

            async fn vault(&self, workspace_id: Uuid, id: Uuid) -> StoreResult<Option<Vault>> {
                let sql = format!("SELECT {VAULT_COLUMNS} FROM vaults WHERE id = $1 AND workspace_id = $2");
                Ok(sqlx::query_as::<$db, VaultRow>(sqlx::AssertSqlSafe(sql))
                    .bind(id)
                    .bind(workspace_id)
                    .fetch_optional(&self.pool)
                    .await?
                    .map(Vault::from))
            }

            async fn list_vaults(&self, workspace_id: Uuid) -> StoreResult<Vec<Vault>> {
                let sql = format!(
                    "SELECT {VAULT_COLUMNS} FROM vaults WHERE workspace_id = $1 ORDER BY created_at, id"
                );
                Ok(sqlx::query_as::<$db, VaultRow>(sqlx::AssertSqlSafe(sql))
                    .bind(workspace_id)
                    .fetch_all(&self.pool)
                    .await?
                    .into_iter()
                    .map(Vault::from)
                    .collect())
            }

            async fn insert_vault(&self, vault: &Vault) -> StoreResult<bool> {
                let done = sqlx::query(
                    "INSERT INTO vaults (id, workspace_id, name, is_default, created_at) \
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                )
                .bind(vault.id)
                .bind(vault.workspace_id)
                .bind(&vault.name)
                .bind(vault.is_default)
                .bind(to_micros(vault.created_at))
                .execute(&self.writer)
                .await
                .map_err(StorageError::from_db)?;
                Ok(done.rows_affected() > 0)
            }

            async fn insert_document(&self, d: &NewDocument) -> StoreResult<Document> {
                let at = to_micros(d.created_at);
                let mut tx = self.writer.begin().await?;
                let row = sqlx::query_as::<$db, DocumentRow>(concat!(
                    "INSERT INTO vault_documents (id, workspace_id, vault_id, title, source_type, \
                     kind, scope, project, source_url, byte_size, status, attempts, created_at, \
                     updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending', 0, \
                     $11, $11) RETURNING ",
                    document_columns!()
                ))
                .bind(d.id)
                .bind(d.workspace_id)
                .bind(d.vault_id)
                .bind(&d.title)
                .bind(&d.source_type)
                .bind(d.kind.as_str())
                .bind(&d.scope)
                .bind(&d.project)
                .bind(&d.source_url)
                .bind(d.bytes.len() as i64)
                .bind(at)
                .fetch_one(&mut *tx)
                .await
                .map_err(StorageError::from_db)?;
                sqlx::query("INSERT INTO vault_document_blobs (document_id, bytes) VALUES ($1, $2)")
                    .bind(d.id)
                    .bind(&d.bytes)
                    .execute(&mut *tx)
                    .await
                    .map_err(StorageError::from_db)?;
                Self::insert_document_event(&mut tx, d.id, at, Status::Pending.as_str(), None, 0, None)
                    .await?;
                tx.commit().await?;
                Document::try_from(row)
            }

            async fn document(&self, workspace_id: Uuid, id: Uuid) -> StoreResult<Option<Document>> {
                sqlx::query_as::<$db, DocumentRow>(concat!(
                    "SELECT ",
                    document_columns!(),
                    " FROM vault_documents WHERE id = $1 AND workspace_id = $2"
                ))
                .bind(id)
                .bind(workspace_id)
                .fetch_optional(&self.pool)
                .await?
                .map(Document::try_from)
                .transpose()
            }

            async fn list_documents(
                &self,
                workspace_id: Uuid,
                vault_id: Uuid,
                scope: &str,
                limit: i64,
                offset: i64,
            ) -> StoreResult<(Vec<Document>, i64)> {
                let rows = sqlx::query_as::<$db, DocumentRow>(concat!(
                    "SELECT ",
                    document_columns!(),
                    " FROM vault_documents WHERE workspace_id = $1 AND vault_id = $2 \
                     AND scope = $3 ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5"
                ))
                .bind(workspace_id)
                .bind(vault_id)
                .bind(scope)
                .bind(limit)
                .bind(offset)
                .fetch_all(&self.pool)
                .await?;
                let total: i64 = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM vault_documents WHERE workspace_id = $1 \
                     AND vault_id = $2 AND scope = $3",
                )
                .bind(workspace_id)
                .bind(vault_id)
                .bind(scope)
                .fetch_one(&self.pool)
                .await?;
                Ok((documents(rows)?, total))
            }

            async fn document_events(&self, id: Uuid) -> StoreResult<Vec<DocumentEvent>> {
                Ok(sqlx::query_as::<$db, EventRow>(
                    "SELECT at, status, phase, attempt, message FROM vault_document_events \
                     WHERE document_id = $1 ORDER BY at, id",
                )
                .bind(id)
                .fetch_all(&self.pool)
                .await?
                .into_iter()
                .map(DocumentEvent::from)
                .collect())
            }

            async fn unfinished_documents(&self) -> StoreResult<Vec<Unfinished>> {
                let rows = sqlx::query_as::<$db, (Uuid, Uuid, String, i64)>(
                    "SELECT id, workspace_id, status, attempts FROM vault_documents \
                     WHERE status IN ('pending', 'processing', 'retrying') ORDER BY created_at, id",
                )
                .fetch_all(&self.pool)
                .await?;
                Ok(rows
                    .into_iter()
                    .map(|(id, workspace_id, status, attempts)| Unfinished {
                        id,
                        workspace_id,
                        status: Status::parse(&status).unwrap_or(Status::Pending),
                        attempts: u32::try_from(attempts.max(0)).unwrap_or(u32::MAX),
                    })
                    .collect())
            }

            async fn reset_document(
                &self,
                workspace_id: Uuid,
                id: Uuid,
                at_micros: i64,
            ) -> StoreResult<bool> {
                let mut tx = self.writer.begin().await?;
                let done = sqlx::query(
                    "UPDATE vault_documents SET status = 'pending', attempts = 0, error = NULL, \
                     completed_at = NULL, updated_at = $1 WHERE id = $2 AND workspace_id = $3 \
                     AND status IN ('failed', 'cancelled')",
                )
                .bind(at_micros)
                .bind(id)
                .bind(workspace_id)
                .execute(&mut *tx)
                .await?;
                if done.rows_affected() == 0 {
                    tx.rollback().await?;
                    return Ok(false);
                }
                Self::insert_document_event(
                    &mut tx,
                    id,
                    at_micros,
                    Status::Pending.as_str(),
                    None,
                    0,
                    Some("retry requested"),
                )
                .await?;
                tx.commit().await?;
                Ok(true)
            }

            async fn delete_document(
                &self,
                workspace_id: Uuid,
                id: Uuid,
            ) -> StoreResult<Option<DocumentRemoval>> {
                let mut tx = self.writer.begin().await?;
                let lane = sqlx::query_as::<$db, DocumentLaneRow>(
                    "SELECT workspace_id, vault_id, scope, project FROM vault_documents \
                     WHERE id = $1 AND workspace_id = $2",
                )
                .bind(id)
                .bind(workspace_id)
                .fetch_optional(&mut *tx)
                .await?;
                let Some(lane) = lane else {
                    tx.rollback().await?;
                    return Ok(None);
                };
                let cited: Vec<Uuid> = sqlx::query_scalar(
                    "SELECT DISTINCT memory_id FROM vault_evidence WHERE document_id = $1",
                )
                .bind(id)
                .fetch_all(&mut *tx)
                .await?;
                // Memories another document cites too keep living (their evidence from this
                // document goes with it).
                let preserved: HashSet<Uuid> = sqlx::query_scalar::<$db, Uuid>(
                    "SELECT DISTINCT memory_id FROM vault_evidence WHERE document_id <> $1 \
                     AND memory_id IN (SELECT memory_id FROM vault_evidence WHERE document_id = $1)",
                )
                .bind(id)
                .fetch_all(&mut *tx)
                .await?
                .into_iter()
                .collect();
                let mut deleted: Vec<Uuid> = cited
                    .iter()
                    .copied()
                    .filter(|memory_id| !preserved.contains(memory_id))
                    .collect();
                deleted.sort();
                for batch in deleted.chunks(IN_BATCH) {
                    let mut qb = QueryBuilder::<$db>::new("DELETE FROM vault_memories WHERE id IN (");
                    let mut list = qb.separated(", ");
                    for memory_id in batch {
                        list.push_bind(*memory_id);
                    }
                    qb.push(")");
                    qb.build().execute(&mut *tx).await?;
                }
                let chunk_ids: Vec<Uuid> = sqlx::query_scalar(
                    "SELECT id FROM vault_chunks WHERE document_id = $1 ORDER BY chunk_index",
                )
                .bind(id)
                .fetch_all(&mut *tx)
                .await?;
                // Cascades: bytes, text, history, chunks, evidence.
                sqlx::query("DELETE FROM vault_documents WHERE id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(Some(DocumentRemoval {
                    lane: VaultLane {
                        workspace_id: lane.workspace_id,
                        vault_id: lane.vault_id,
                        scope: lane.scope,
                    },
                    counts: DeletedDocument {
                        deleted_memories: deleted.len() as i64,
                        preserved_memories: preserved.len() as i64,
                    },
                    chunk_ids,
                    memory_ids: deleted,
                }))
            }

            async fn pipeline_document(&self, id: Uuid) -> StoreResult<Option<PipelineDocument>> {
                let row = sqlx::query_as::<$db, PipelineRow>(
                    "SELECT id, title, kind, phase_done FROM vault_documents WHERE id = $1",
                )
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
                row.map(|row| {
                    Ok(PipelineDocument {
                        kind: parse_kind(row.id, &row.kind)?,
                        phase_done: parse_phase(row.id, row.phase_done)?,
                        title: row.title,
                    })
                })
                .transpose()
            }

            async fn document_bytes(&self, id: Uuid) -> StoreResult<Option<Vec<u8>>> {
                Ok(sqlx::query_scalar::<$db, Vec<u8>>(
                    "SELECT bytes FROM vault_document_blobs WHERE document_id = $1",
                )
                .bind(id)
                .fetch_optional(&self.pool)
                .await?)
            }

            async fn save_sections(
                &self,
                id: Uuid,
                phase: Phase,
                sections: &[Section],
            ) -> StoreResult<()> {
                let json = serde_json::to_string(sections)
                    .map_err(|e| StorageError::Corrupt(format!("document {id}: sections: {e}")))?;
                let mut tx = self.writer.begin().await?;
                let done = sqlx::query(
                    "UPDATE vault_documents SET phase_done = $1, updated_at = $2 WHERE id = $3",
                )
                .bind(phase.as_str())
                .bind(to_micros(chrono::Utc::now()))
                .bind(id)
                .execute(&mut *tx)
                .await?;
                if done.rows_affected() == 0 {
                    // The document is gone (deleted meanwhile): nothing to keep.
                    tx.rollback().await?;
                    return Ok(());
                }
                sqlx::query(
                    "INSERT INTO vault_document_text (document_id, sections) VALUES ($1, $2) \
                     ON CONFLICT (document_id) DO UPDATE SET sections = excluded.sections",
                )
                .bind(id)
                .bind(json)
                .execute(&mut *tx)
                .await
                .map_err(StorageError::from_db)?;
                tx.commit().await?;
                Ok(())
            }

            async fn sections(&self, id: Uuid) -> StoreResult<Vec<Section>> {
                let json: Option<String> = sqlx::query_scalar(
                    "SELECT sections FROM vault_document_text WHERE document_id = $1",
                )
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
                match json {
                    Some(json) => serde_json::from_str(&json).map_err(|e| {
                        StorageError::Corrupt(format!("document {id}: sections: {e}"))
                    }),
                    None => Ok(Vec::new()),
                }
            }

            async fn replace_chunks(
                &self,
                id: Uuid,
                chunks: &[ChunkDraft],
                at_micros: i64,
            ) -> StoreResult<()> {
                let mut tx = self.writer.begin().await?;
                let lane = sqlx::query_as::<$db, DocumentLaneRow>(
                    "SELECT workspace_id, vault_id, scope, project FROM vault_documents WHERE id = $1",
                )
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
                let Some(lane) = lane else {
                    tx.rollback().await?;
                    return Ok(());
                };
                // Evidence of the old chunks cascades.
                sqlx::query("DELETE FROM vault_chunks WHERE document_id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                for chunk in chunks {
                    sqlx::query(
                        "INSERT INTO vault_chunks (id, document_id, workspace_id, vault_id, scope, \
                         project, chunk_index, section_path, content, contextual_content, \
                         extracted, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
                         FALSE, $11)",
                    )
                    .bind(Uuid::now_v7())
                    .bind(id)
                    .bind(lane.workspace_id)
                    .bind(lane.vault_id)
                    .bind(&lane.scope)
                    .bind(&lane.project)
                    .bind(i64::from(chunk.index))
                    .bind(&chunk.section_path)
                    .bind(&chunk.content)
                    .bind(&chunk.contextual_content)
                    .bind(at_micros)
                    .execute(&mut *tx)
                    .await
                    .map_err(StorageError::from_db)?;
                }
                sqlx::query(
                    "UPDATE vault_documents SET chunk_count = $1, total_chunks = $1, \
                     processed_chunks = 0, phase_done = 'chunk', extracted_count = (SELECT \
                     COUNT(DISTINCT memory_id) FROM vault_evidence WHERE document_id = $2), \
                     updated_at = $3 WHERE id = $2",
                )
                .bind(chunks.len() as i64)
                .bind(id)
                .bind(at_micros)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(())
            }

            async fn chunks_without_vectors(&self, id: Uuid) -> StoreResult<Vec<StoredChunk>> {
                Ok(sqlx::query_as::<$db, StoredChunkRow>(concat!(
                    "SELECT ",
                    stored_chunk_columns!(),
                    " FROM vault_chunks WHERE document_id = $1 AND vector IS NULL ORDER BY chunk_index"
                ))
                .bind(id)
                .fetch_all(&self.pool)
                .await?
                .into_iter()
                .map(StoredChunk::from)
                .collect())
            }

            async fn put_chunk_vectors(
                &self,
                id: Uuid,
                model: &str,
                vectors: &[ChunkVectors],
            ) -> StoreResult<Vec<IndexedChunk>> {
                if vectors.is_empty() {
                    return Ok(Vec::new());
                }
                let mut tx = self.writer.begin().await?;
                for chunk in vectors {
                    let pieces = (!chunk.pieces.is_empty())
                        .then(|| embedding::to_bytes(&chunk.pieces.concat()));
                    sqlx::query(
                        "UPDATE vault_chunks SET model = $1, vector = $2, piece_vectors = $3 \
                         WHERE id = $4 AND document_id = $5",
                    )
                    .bind(model)
                    .bind(embedding::to_bytes(&chunk.vector))
                    .bind(pieces)
                    .bind(chunk.chunk)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                }
                let mut rows: Vec<IndexedChunkRow> = Vec::with_capacity(vectors.len());
                for batch in vectors.chunks(IN_BATCH) {
                    let mut qb = QueryBuilder::<$db>::new(concat!(
                        "SELECT ",
                        chunk_columns!(),
                        ", c.vector, c.piece_vectors FROM vault_chunks c JOIN vault_documents d ON d.id = c.document_id \
                         WHERE c.document_id = "
                    ));
                    qb.push_bind(id);
                    qb.push(" AND c.id IN (");
                    let mut list = qb.separated(", ");
                    for chunk in batch {
                        list.push_bind(chunk.chunk);
                    }
                    qb.push(")");
                    rows.extend(qb.build_query_as::<IndexedChunkRow>().fetch_all(&mut *tx).await?);
                }
                tx.commit().await?;
                rows.sort_by_key(|row| row.chunk.chunk_index);
                Ok(rows.into_iter().map(IndexedChunk::from).collect())
            }

            async fn chunks_not_extracted(&self, id: Uuid) -> StoreResult<Vec<StoredChunk>> {
                Ok(sqlx::query_as::<$db, StoredChunkRow>(concat!(
                    "SELECT ",
                    stored_chunk_columns!(),
                    " FROM vault_chunks WHERE document_id = $1 AND NOT extracted ORDER BY chunk_index"
                ))
                .bind(id)
                .fetch_all(&self.pool)
                .await?
                .into_iter()
                .map(StoredChunk::from)
                .collect())
            }

            async fn save_chunk_facts(
                &self,
                id: Uuid,
                chunk_id: Uuid,
                model: &str,
                facts: &[EmbeddedFact],
                at_micros: i64,
            ) -> StoreResult<Vec<IndexedVaultMemory>> {
                #[derive(FromRow)]
                struct FactDocumentRow {
                    workspace_id: Uuid,
                    vault_id: Uuid,
                    scope: String,
                    project: String,
                    title: String,
                    source_url: Option<String>,
                }
                let mut tx = self.writer.begin().await?;
                let document = sqlx::query_as::<$db, FactDocumentRow>(
                    "SELECT d.workspace_id, d.vault_id, d.scope, d.project, d.title, d.source_url \
                     FROM vault_documents d JOIN vault_chunks c ON c.document_id = d.id \
                     WHERE d.id = $1 AND c.id = $2",
                )
                .bind(id)
                .bind(chunk_id)
                .fetch_optional(&mut *tx)
                .await?;
                let Some(document) = document else {
                    // The document or the chunk is gone (deleted, or re-chunked meanwhile).
                    tx.rollback().await?;
                    return Ok(Vec::new());
                };
                let source = MemorySource {
                    id,
                    title: document.title.clone(),
                    url: document.source_url.clone(),
                };
                let memory_type = MemoryType::Document.as_str();
                let mut created = Vec::new();
                for fact in facts {
                    let draft = &fact.fact;
                    let hash = content_hash(&normalize(&draft.content));
                    let category = draft
                        .category
                        .trim()
                        .to_ascii_lowercase()
                        .parse::<Category>()
                        .unwrap_or(Category::Fact);
                    let inserted = sqlx::query_as::<$db, VaultMemoryRow>(INSERT_VAULT_MEMORY)
                        .bind(Uuid::now_v7())
                        .bind(document.workspace_id)
                        .bind(document.vault_id)
                        .bind(memory_type)
                        .bind(&draft.content)
                        .bind(&hash)
                        .bind(category.as_str())
                        .bind(&document.scope)
                        .bind(&document.project)
                        .bind(model)
                        .bind(embedding::to_bytes(&fact.vector))
                        .bind(at_micros)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(StorageError::from_db)?;
                    let memory_id = match inserted {
                        Some(row) => {
                            let memory_id = row.id;
                            let mut memory = VaultMemory::try_from(row)?;
                            memory.source = Some(source.clone());
                            created.push(IndexedVaultMemory {
                                memory,
                                vector: Some(fact.vector.clone()),
                            });
                            memory_id
                        }
                        None => {
                            sqlx::query_as::<$db, VaultMemoryRow>(VAULT_MEMORY_BY_KEY)
                                .bind(document.workspace_id)
                                .bind(document.vault_id)
                                .bind(&document.scope)
                                .bind(&document.project)
                                .bind(memory_type)
                                .bind(&hash)
                                .fetch_one(&mut *tx)
                                .await?
                                .id
                        }
                    };
                    sqlx::query(
                        "INSERT INTO vault_evidence (id, memory_id, document_id, chunk_id, quote, \
                         confidence, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                         ON CONFLICT DO NOTHING",
                    )
                    .bind(Uuid::now_v7())
                    .bind(memory_id)
                    .bind(id)
                    .bind(chunk_id)
                    .bind(&draft.quote)
                    .bind(f64::from(draft.confidence))
                    .bind(at_micros)
                    .execute(&mut *tx)
                    .await
                    .map_err(StorageError::from_db)?;
                }
                sqlx::query("UPDATE vault_chunks SET extracted = TRUE WHERE id = $1")
                    .bind(chunk_id)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query(
                    "UPDATE vault_documents SET extracted_count = (SELECT COUNT(DISTINCT memory_id) \
                     FROM vault_evidence WHERE document_id = $1), updated_at = $2 WHERE id = $1",
                )
                .bind(id)
                .bind(at_micros)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(created)
            }

            async fn finish_phase(&self, id: Uuid, phase: Phase, at_micros: i64) -> StoreResult<()> {
                sqlx::query("UPDATE vault_documents SET phase_done = $1, updated_at = $2 WHERE id = $3")
                    .bind(phase.as_str())
                    .bind(at_micros)
                    .bind(id)
                    .execute(&self.writer)
                    .await?;
                Ok(())
            }

            async fn record_progress(
                &self,
                id: Uuid,
                progress: Progress,
                at_micros: i64,
            ) -> StoreResult<()> {
                match progress.phase {
                    Phase::Embed | Phase::Extract => {
                        sqlx::query(
                            "UPDATE vault_documents SET processing_phase = $1, heartbeat_at = $2, \
                             updated_at = $2, processed_chunks = $3, \
                             total_chunks = CASE WHEN $4 > 0 THEN $4 ELSE total_chunks END \
                             WHERE id = $5",
                        )
                        .bind(progress.phase.as_str())
                        .bind(at_micros)
                        .bind(i64::from(progress.processed))
                        .bind(i64::from(progress.total))
                        .bind(id)
                        .execute(&self.writer)
                        .await?;
                    }
                    _ => {
                        sqlx::query(
                            "UPDATE vault_documents SET processing_phase = $1, heartbeat_at = $2, \
                             updated_at = $2 WHERE id = $3",
                        )
                        .bind(progress.phase.as_str())
                        .bind(at_micros)
                        .bind(id)
                        .execute(&self.writer)
                        .await?;
                    }
                }
                Ok(())
            }

            async fn set_document_status(
                &self,
                id: Uuid,
                change: &StatusChange,
                at_micros: i64,
            ) -> StoreResult<bool> {
                let attempts = i64::from(change.attempts);
                let message = change.message.as_deref();
                let mut tx = self.writer.begin().await?;
                let done = match change.status {
                    Status::Completed => {
                        sqlx::query(
                            "UPDATE vault_documents SET status = 'completed', attempts = $1, \
                             error = NULL, completed_at = $2, updated_at = $2, \
                             processing_phase = 'extract', processed_chunks = total_chunks \
                             WHERE id = $3",
                        )
                        .bind(attempts)
                        .bind(at_micros)
                        .bind(id)
                        .execute(&mut *tx)
                        .await?
                    }
                    Status::Failed | Status::Retrying | Status::Cancelled => {
                        // Without a message the last error stays visible. Cancelling applies to
                        // any document; failing and retrying only to one still in the pipeline.
                        let sql = if change.status == Status::Cancelled {
                            "UPDATE vault_documents SET status = $1, attempts = $2, \
                             error = COALESCE($3, error), updated_at = $4 WHERE id = $5"
                        } else {
                            "UPDATE vault_documents SET status = $1, attempts = $2, \
                             error = COALESCE($3, error), updated_at = $4 WHERE id = $5 \
                             AND status IN ('pending', 'processing', 'retrying')"
                        };
                        sqlx::query(sql)
                            .bind(change.status.as_str())
                            .bind(attempts)
                            .bind(message)
                            .bind(at_micros)
                            .bind(id)
                            .execute(&mut *tx)
                            .await?
                    }
                    Status::Processing => {
                        // A first attempt starts clean; a retry keeps the error that caused it
                        // visible until the document completes.
                        let sql = if attempts <= 1 {
                            "UPDATE vault_documents SET status = 'processing', attempts = $1, \
                             error = NULL, heartbeat_at = $2, updated_at = $2 WHERE id = $3 \
                             AND status IN ('pending', 'processing', 'retrying')"
                        } else {
                            "UPDATE vault_documents SET status = 'processing', attempts = $1, \
                             heartbeat_at = $2, updated_at = $2 WHERE id = $3 \
                             AND status IN ('pending', 'processing', 'retrying')"
                        };
                        sqlx::query(sql)
                            .bind(attempts)
                            .bind(at_micros)
                            .bind(id)
                            .execute(&mut *tx)
                            .await?
                    }
                    Status::Pending => {
                        sqlx::query(
                            "UPDATE vault_documents SET status = 'pending', attempts = $1, \
                             updated_at = $2 WHERE id = $3",
                        )
                        .bind(attempts)
                        .bind(at_micros)
                        .bind(id)
                        .execute(&mut *tx)
                        .await?
                    }
                };
                if done.rows_affected() == 0 {
                    // The document is gone, or no longer in the pipeline: nothing to record.
                    tx.rollback().await?;
                    return Ok(false);
                }
                Self::insert_document_event(
                    &mut tx,
                    id,
                    at_micros,
                    change.status.as_str(),
                    change.phase.map(Phase::as_str),
                    attempts,
                    message,
                )
                .await?;
                tx.commit().await?;
                Ok(true)
            }

            async fn chunks_by_ids(&self, workspace_id: Uuid, ids: &[Uuid]) -> StoreResult<Vec<Chunk>> {
                let mut chunks = Vec::with_capacity(ids.len());
                for batch in ids.chunks(IN_BATCH) {
                    let mut qb = QueryBuilder::<$db>::new(concat!(
                        "SELECT ",
                        chunk_columns!(),
                        " FROM vault_chunks c JOIN vault_documents d ON d.id = c.document_id \
                         WHERE c.workspace_id = "
                    ));
                    qb.push_bind(workspace_id);
                    qb.push(" AND c.id IN (");
                    let mut list = qb.separated(", ");
                    for id in batch {
                        list.push_bind(*id);
                    }
                    qb.push(")");
                    let rows: Vec<ChunkRow> = qb.build_query_as().fetch_all(&self.pool).await?;
                    chunks.extend(rows.into_iter().map(Chunk::from));
                }
                Ok(chunks)
            }

            async fn vault_memories_by_ids(
                &self,
                workspace_id: Uuid,
                ids: &[Uuid],
            ) -> StoreResult<Vec<VaultMemory>> {
                let mut rows = Vec::with_capacity(ids.len());
                for batch in ids.chunks(IN_BATCH) {
                    let mut qb = QueryBuilder::<$db>::new(concat!(
                        "SELECT ",
                        vault_memory_columns!(),
                        " FROM vault_memories WHERE workspace_id = "
                    ));
                    qb.push_bind(workspace_id);
                    qb.push(" AND id IN (");
                    let mut list = qb.separated(", ");
                    for id in batch {
                        list.push_bind(*id);
                    }
                    qb.push(")");
                    rows.extend(qb.build_query_as::<VaultMemoryRow>().fetch_all(&self.pool).await?);
                }
                self.vault_memories_with_sources(rows).await
            }

            async fn cited_chunks(&self, memory_ids: &[Uuid]) -> StoreResult<Vec<(Uuid, Uuid)>> {
                let mut cited = Vec::new();
                for batch in memory_ids.chunks(IN_BATCH) {
                    let mut qb = QueryBuilder::<$db>::new(
                        "SELECT memory_id, chunk_id FROM vault_evidence WHERE memory_id IN (",
                    );
                    let mut list = qb.separated(", ");
                    for id in batch {
                        list.push_bind(*id);
                    }
                    qb.push(")");
                    let rows: Vec<(Uuid, Uuid)> = qb.build_query_as().fetch_all(&self.pool).await?;
                    cited.extend(rows);
                }
                Ok(cited)
            }

            async fn evidence_of(&self, memory_ids: &[Uuid]) -> StoreResult<Vec<(Uuid, Evidence)>> {
                let mut evidence = Vec::new();
                for batch in memory_ids.chunks(IN_BATCH) {
                    let mut qb = QueryBuilder::<$db>::new(
                        "SELECT e.memory_id, e.document_id, e.chunk_id, e.quote, e.confidence, \
                         d.title, c.section_path, c.chunk_index, d.scope FROM vault_evidence e \
                         JOIN vault_chunks c ON c.id = e.chunk_id \
                         JOIN vault_documents d ON d.id = e.document_id WHERE e.memory_id IN (",
                    );
                    let mut list = qb.separated(", ");
                    for id in batch {
                        list.push_bind(*id);
                    }
                    qb.push(") ORDER BY e.memory_id, e.confidence DESC, e.created_at, e.id");
                    let rows: Vec<EvidenceRow> = qb.build_query_as().fetch_all(&self.pool).await?;
                    evidence.extend(rows.into_iter().map(|row| {
                        (
                            row.memory_id,
                            Evidence {
                                source_id: row.document_id,
                                chunk_id: row.chunk_id,
                                quote: row.quote,
                                confidence: row.confidence,
                                title: row.title,
                                section_path: row.section_path,
                                chunk_index: row.chunk_index,
                                scope: row.scope,
                            },
                        )
                    }));
                }
                Ok(evidence)
            }

            async fn list_vault_memories(
                &self,
                f: &VaultMemoryFilter,
            ) -> StoreResult<(Vec<VaultMemory>, i64)> {
                let mut page = QueryBuilder::<$db>::new(concat!("SELECT ", vault_memory_columns!()));
                Self::push_vault_memory_filters(&mut page, f);
                page.push(" ORDER BY created_at DESC, id DESC LIMIT ");
                page.push_bind(f.limit);
                page.push(" OFFSET ");
                page.push_bind(f.offset);
                let rows: Vec<VaultMemoryRow> = page.build_query_as().fetch_all(&self.pool).await?;
                let mut count = QueryBuilder::<$db>::new("SELECT COUNT(*)");
                Self::push_vault_memory_filters(&mut count, f);
                let total: i64 = count.build_query_scalar().fetch_one(&self.pool).await?;
                Ok((self.vault_memories_with_sources(rows).await?, total))
            }

            async fn document_memories(
                &self,
                workspace_id: Uuid,
                document_id: Uuid,
            ) -> StoreResult<Vec<VaultMemory>> {
                let rows = sqlx::query_as::<$db, VaultMemoryRow>(concat!(
                    "SELECT ",
                    vault_memory_columns_m!(),
                    " FROM vault_memories m WHERE m.workspace_id = $1 AND m.id IN \
                     (SELECT memory_id FROM vault_evidence WHERE document_id = $2) \
                     ORDER BY m.created_at, m.id"
                ))
                .bind(workspace_id)
                .bind(document_id)
                .fetch_all(&self.pool)
                .await?;
                self.vault_memories_with_sources(rows).await
            }

            async fn insert_company_fact(
                &self,
                fact: &NewCompanyFact,
            ) -> StoreResult<(VaultMemory, bool)> {
                let memory_type = MemoryType::Company.as_str();
                let mut tx = self.writer.begin().await?;
                let inserted = sqlx::query_as::<$db, VaultMemoryRow>(INSERT_VAULT_MEMORY)
                    .bind(fact.id)
                    .bind(fact.lane.workspace_id)
                    .bind(fact.lane.vault_id)
                    .bind(memory_type)
                    .bind(&fact.content)
                    .bind(&fact.content_hash)
                    .bind(fact.category.as_str())
                    .bind(&fact.lane.scope)
                    .bind(&fact.project)
                    .bind(&*fact.embedding.model)
                    .bind(embedding::to_bytes(&fact.embedding.vector))
                    .bind(fact.at_micros)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(StorageError::from_db)?;
                let (row, created) = match inserted {
                    Some(row) => (row, true),
                    None => {
                        let existing = sqlx::query_as::<$db, VaultMemoryRow>(VAULT_MEMORY_BY_KEY)
                            .bind(fact.lane.workspace_id)
                            .bind(fact.lane.vault_id)
                            .bind(&fact.lane.scope)
                            .bind(&fact.project)
                            .bind(memory_type)
                            .bind(&fact.content_hash)
                            .fetch_optional(&mut *tx)
                            .await?;
                        // No equal fact: the insert failed on another constraint (the id).
                        let Some(existing) = existing else {
                            tx.rollback().await?;
                            return Err(StorageError::UniqueViolation);
                        };
                        (existing, false)
                    }
                };
                tx.commit().await?;
                let mut memories = self.vault_memories_with_sources(vec![row]).await?;
                Ok((memories.remove(0), created))
            }

            async fn vault_memory_feedback(
                &self,
                workspace_id: Uuid,
                id: Uuid,
                rating: Rating,
                explanation: Option<&str>,
                at_micros: i64,
            ) -> StoreResult<bool> {
                let mut tx = self.writer.begin().await?;
                let done = sqlx::query(vault_feedback_update(rating))
                    .bind(at_micros)
                    .bind(id)
                    .bind(workspace_id)
                    .execute(&mut *tx)
                    .await?;
                if done.rows_affected() == 0 {
                    tx.rollback().await?;
                    return Ok(false);
                }
                sqlx::query(
                    "INSERT INTO vault_memory_feedback (id, memory_id, workspace_id, rating, \
                     explanation, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(Uuid::now_v7())
                .bind(id)
                .bind(workspace_id)
                .bind(rating.as_str())
                .bind(explanation)
                .bind(at_micros)
                .execute(&mut *tx)
                .await
                .map_err(StorageError::from_db)?;
                tx.commit().await?;
                Ok(true)
            }

            async fn chunks_page(
                &self,
                workspace: Option<Uuid>,
                after: Option<Uuid>,
                limit: i64,
            ) -> StoreResult<Vec<IndexedChunk>> {
                // `$1`: the workspace, or NULL for every one; `$2` the limit, `$3` the id to continue after.
                const SELECT: &str = concat!(
                    "SELECT ",
                    chunk_columns!(),
                    ", c.vector, c.piece_vectors FROM vault_chunks c JOIN vault_documents d ON d.id = c.document_id \
                     WHERE c.vector IS NOT NULL AND ($1 IS NULL OR c.workspace_id = $1)"
                );
                let rows: Vec<IndexedChunkRow> = match after {
                    None => {
                        let sql = format!("{SELECT} ORDER BY c.id LIMIT $2");
                        sqlx::query_as::<$db, IndexedChunkRow>(sqlx::AssertSqlSafe(sql))
                            .bind(workspace)
                            .bind(limit)
                            .fetch_all(&self.pool)
                            .await?
                    }
                    Some(after) => {
                        let sql = format!("{SELECT} AND c.id > $3 ORDER BY c.id LIMIT $2");
                        sqlx::query_as::<$db, IndexedChunkRow>(sqlx::AssertSqlSafe(sql))
                            .bind(workspace)
                            .bind(limit)
                            .bind(after)
                            .fetch_all(&self.pool)
                            .await?
                    }
                };
                Ok(rows.into_iter().map(IndexedChunk::from).collect())
            }

            async fn vault_memories_page(
                &self,
                workspace: Option<Uuid>,
                after: Option<Uuid>,
                limit: i64,
            ) -> StoreResult<Vec<IndexedVaultMemory>> {
                // `$1`: the workspace, or NULL for every one; `$2` the limit, `$3` the id to continue after.
                const SELECT: &str = concat!(
                    "SELECT ",
                    vault_memory_columns!(),
                    ", vector FROM vault_memories WHERE NOT flagged_wrong \
                     AND ($1 IS NULL OR workspace_id = $1)"
                );
                let rows: Vec<IndexedVaultMemoryRow> = match after {
                    None => {
                        let sql = format!("{SELECT} ORDER BY id LIMIT $2");
                        sqlx::query_as::<$db, IndexedVaultMemoryRow>(sqlx::AssertSqlSafe(sql))
                            .bind(workspace)
                            .bind(limit)
                            .fetch_all(&self.pool)
                            .await?
                    }
                    Some(after) => {
                        let sql = format!("{SELECT} AND id > $3 ORDER BY id LIMIT $2");
                        sqlx::query_as::<$db, IndexedVaultMemoryRow>(sqlx::AssertSqlSafe(sql))
                            .bind(workspace)
                            .bind(limit)
                            .bind(after)
                            .fetch_all(&self.pool)
                            .await?
                    }
                };
                let mut vectors = Vec::with_capacity(rows.len());
                let mut memory_rows = Vec::with_capacity(rows.len());
                for row in rows {
                    vectors.push(row.vector.map(|bytes| embedding::from_bytes(&bytes)));
                    memory_rows.push(row.memory);
                }
                let memories = self.vault_memories_with_sources(memory_rows).await?;
                Ok(memories
                    .into_iter()
                    .zip(vectors)
                    .map(|(memory, vector)| IndexedVaultMemory { memory, vector })
                    .collect())
            }
        }
    };
}

vault_sql!(SqliteStore, sqlx::Sqlite);
vault_sql!(PgStore, sqlx::Postgres);
