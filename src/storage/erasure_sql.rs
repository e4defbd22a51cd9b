//! The SQL of [`ErasureStore`], written once and instantiated for SQLite and PostgreSQL by
//! `erasure_sql!` (the conventions of `sql.rs`). Rows that hang off memories and documents go
//! by `ON DELETE CASCADE`; counts of cascaded rows are read before the delete, in the same
//! transaction.

use std::collections::{BTreeMap, HashSet};

use async_trait::async_trait;
use sqlx::{FromRow, QueryBuilder};
use uuid::Uuid;

use super::erasure::{Erased, Eraser, ErasureCounts, ErasureRecord, ErasureStore};
use super::sql::{PgStore, SqliteStore};
use super::{Backend, StoreResult};
use crate::error::StorageError;
use crate::model::vault::VaultLane;
use crate::model::{from_micros, to_micros, Lane};

/// Most ids bound in one `IN (...)` list.
const IN_BATCH: usize = 500;

#[derive(FromRow)]
struct ErasureRow {
    id: Uuid,
    workspace_id: Uuid,
    kind: String,
    scope_hash: String,
    memory_id: Option<Uuid>,
    actor_kind: String,
    actor_id: Uuid,
    counts: String,
    at: i64,
}

impl TryFrom<ErasureRow> for ErasureRecord {
    type Error = StorageError;
    fn try_from(row: ErasureRow) -> StoreResult<Self> {
        let by = match row.actor_kind.as_str() {
            "user" => Eraser::User(row.actor_id),
            "key" => Eraser::Key(row.actor_id),
            other => return Err(StorageError::Corrupt(format!("erasure actor kind {other}"))),
        };
        let counts = serde_json::from_str(&row.counts)
            .map_err(|e| StorageError::Corrupt(format!("erasure counts: {e}")))?;
        Ok(ErasureRecord {
            id: row.id,
            workspace_id: row.workspace_id,
            kind: row.kind,
            scope_hash: row.scope_hash,
            memory_id: row.memory_id,
            by,
            counts,
            at: from_micros(row.at),
        })
    }
}

fn actor(by: Eraser) -> (&'static str, Uuid) {
    match by {
        Eraser::User(id) => ("user", id),
        Eraser::Key(id) => ("key", id),
    }
}

/// Memory rows a delete returned (id, whether current and live): every one is a version, the
/// live current ones leave the index and free room.
fn record_deleted(deleted: Vec<(Uuid, bool)>, counts: &mut ErasureCounts, erased: &mut Erased) {
    counts.versions = deleted.len() as u64;
    erased.memory_ids = deleted
        .into_iter()
        .filter(|(_, live)| *live)
        .map(|(id, _)| id)
        .collect();
    counts.memories = erased.memory_ids.len() as u64;
}

fn to_u64(n: i64) -> u64 {
    n.max(0) as u64
}

macro_rules! erasure_sql {
    ($store:ident, $db:ty, $backend:expr) => {
        impl $store {
            async fn count(
                tx: &mut sqlx::Transaction<'static, $db>,
                sql: &'static str,
                lane: &Lane,
            ) -> StoreResult<u64> {
                let n: i64 = sqlx::query_scalar(sql)
                    .bind(lane.workspace_id)
                    .bind(&lane.scope)
                    .fetch_one(&mut **tx)
                    .await?;
                Ok(to_u64(n))
            }

            /// `DELETE FROM {table} WHERE id IN (ids)`, in batches; rows deleted.
            async fn delete_ids(
                tx: &mut sqlx::Transaction<'static, $db>,
                table: &'static str,
                ids: &[Uuid],
            ) -> StoreResult<u64> {
                let mut deleted = 0;
                for batch in ids.chunks(IN_BATCH) {
                    let mut qb = QueryBuilder::<$db>::new(format!("DELETE FROM {table} WHERE id IN ("));
                    let mut list = qb.separated(", ");
                    for id in batch {
                        list.push_bind(*id);
                    }
                    qb.push(")");
                    deleted += qb.build().execute(&mut **tx).await?.rows_affected();
                }
                Ok(deleted)
            }

            async fn log(
                tx: &mut sqlx::Transaction<'static, $db>,
                record: &ErasureRecord,
                counts: &ErasureCounts,
            ) -> StoreResult<()> {
                let (actor_kind, actor_id) = actor(record.by);
                let counts = serde_json::to_string(counts)
                    .map_err(|e| StorageError::Corrupt(format!("erasure counts: {e}")))?;
                sqlx::query(
                    "INSERT INTO erasures (id, workspace_id, kind, scope_hash, memory_id, \
                     actor_kind, actor_id, counts, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                )
                .bind(record.id)
                .bind(record.workspace_id)
                .bind(&record.kind)
                .bind(&record.scope_hash)
                .bind(record.memory_id)
                .bind(actor_kind)
                .bind(actor_id)
                .bind(counts)
                .bind(to_micros(record.at))
                .execute(&mut **tx)
                .await?;
                Ok(())
            }

            /// The vault part of a scope's erasure: its documents (with everything that cascades
            /// from them) and its vault memories that no document of another scope cites.
            async fn erase_vault_scope(
                tx: &mut sqlx::Transaction<'static, $db>,
                lane: &Lane,
                counts: &mut ErasureCounts,
                erased: &mut Erased,
            ) -> StoreResult<()> {
                let memories: Vec<(Uuid, Uuid)> = sqlx::query_as(
                    "SELECT m.id, m.vault_id FROM vault_memories m \
                     WHERE m.workspace_id = $1 AND m.scope = $2 AND NOT EXISTS ( \
                       SELECT 1 FROM vault_evidence e JOIN vault_documents d ON d.id = e.document_id \
                       WHERE e.memory_id = m.id AND d.scope <> $2)",
                )
                .bind(lane.workspace_id)
                .bind(&lane.scope)
                .fetch_all(&mut **tx)
                .await?;
                // Citations of this scope's documents on memories that stay.
                let cited = Self::count(
                    tx,
                    "SELECT COUNT(*) FROM vault_evidence e \
                     JOIN vault_documents d ON d.id = e.document_id \
                     JOIN vault_memories m ON m.id = e.memory_id \
                     WHERE d.workspace_id = $1 AND d.scope = $2 AND (m.scope <> $2 OR EXISTS ( \
                       SELECT 1 FROM vault_evidence e2 JOIN vault_documents d2 ON d2.id = e2.document_id \
                       WHERE e2.memory_id = m.id AND d2.scope <> $2))",
                    lane,
                )
                .await?;
                let memory_ids: Vec<Uuid> = memories.iter().map(|(id, _)| *id).collect();
                counts.vault_memories = Self::delete_ids(tx, "vault_memories", &memory_ids).await?;
                // Deleted with what they return (read before, a chunk written in between would
                // be gone from the table but left in the index).
                let chunks: Vec<(Uuid, Uuid)> = sqlx::query_as(
                    "DELETE FROM vault_chunks WHERE workspace_id = $1 AND scope = $2 \
                     RETURNING id, vault_id",
                )
                .bind(lane.workspace_id)
                .bind(&lane.scope)
                .fetch_all(&mut **tx)
                .await?;
                counts.documents = sqlx::query(
                    "DELETE FROM vault_documents WHERE workspace_id = $1 AND scope = $2",
                )
                .bind(lane.workspace_id)
                .bind(&lane.scope)
                .execute(&mut **tx)
                .await?
                .rows_affected();
                counts.chunks = chunks.len() as u64;
                counts.citations = cited;
                let mut by_vault: BTreeMap<Uuid, (Vec<Uuid>, Vec<Uuid>)> = BTreeMap::new();
                for (id, vault) in chunks {
                    by_vault.entry(vault).or_default().0.push(id);
                }
                for (id, vault) in memories {
                    by_vault.entry(vault).or_default().1.push(id);
                }
                erased.vault = by_vault
                    .into_iter()
                    .map(|(vault_id, (chunks, memories))| {
                        let lane = VaultLane {
                            workspace_id: lane.workspace_id,
                            vault_id,
                            scope: lane.scope.clone(),
                        };
                        (lane, chunks, memories)
                    })
                    .collect();
                Ok(())
            }
        }

        #[async_trait]
        impl ErasureStore for $store {
            async fn erase_scope(&self, lane: &Lane, record: &ErasureRecord) -> StoreResult<Erased> {
                let mut tx = self.writer.begin().await?;
                let mut erased = Erased::default();
                let mut counts = ErasureCounts::default();
                counts.vectors = Self::count(
                    &mut tx,
                    "SELECT COUNT(*) FROM memory_vectors v JOIN memories m ON m.id = v.memory_id \
                     WHERE m.workspace_id = $1 AND m.scope = $2",
                    lane,
                )
                .await?;
                counts.feedback = Self::count(
                    &mut tx,
                    "SELECT COUNT(*) FROM memory_feedback f JOIN memories m ON m.id = f.memory_id \
                     WHERE m.workspace_id = $1 AND m.scope = $2",
                    lane,
                )
                .await?;
                // What was deleted is what it returns: a memory saved between a read and the
                // delete is counted and unindexed too.
                let deleted: Vec<(Uuid, bool)> = sqlx::query_as(
                    "DELETE FROM memories WHERE workspace_id = $1 AND scope = $2 \
                     RETURNING id, (is_current AND deleted_at IS NULL)",
                )
                .bind(lane.workspace_id)
                .bind(&lane.scope)
                .fetch_all(&mut *tx)
                .await?;
                record_deleted(deleted, &mut counts, &mut erased);
                counts.jobs = sqlx::query("DELETE FROM memory_jobs WHERE workspace_id = $1 AND scope = $2")
                    .bind(lane.workspace_id)
                    .bind(&lane.scope)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                Self::erase_vault_scope(&mut tx, lane, &mut counts, &mut erased).await?;
                Self::log(&mut tx, record, &counts).await?;
                tx.commit().await?;
                erased.counts = counts;
                Ok(erased)
            }

            async fn erase_chain(
                &self,
                lane: &Lane,
                id: Uuid,
                record: &ErasureRecord,
            ) -> StoreResult<Option<Erased>> {
                let mut tx = self.writer.begin().await?;
                let root: Option<Uuid> = sqlx::query_scalar(
                    "SELECT root_id FROM memories WHERE id = $1 AND workspace_id = $2 AND scope = $3",
                )
                .bind(id)
                .bind(lane.workspace_id)
                .bind(&lane.scope)
                .fetch_optional(&mut *tx)
                .await?;
                let Some(root) = root else {
                    tx.rollback().await?;
                    return Ok(None);
                };
                let chain_count = |sql: &'static str| {
                    sqlx::query_scalar::<$db, i64>(sql)
                        .bind(root)
                        .bind(lane.workspace_id)
                        .bind(lane.scope.clone())
                };
                let mut erased = Erased::default();
                let mut counts = ErasureCounts::default();
                counts.vectors = to_u64(
                    chain_count(
                        "SELECT COUNT(*) FROM memory_vectors v JOIN memories m ON m.id = v.memory_id \
                         WHERE m.root_id = $1 AND m.workspace_id = $2 AND m.scope = $3",
                    )
                    .fetch_one(&mut *tx)
                    .await?,
                );
                counts.feedback = to_u64(
                    chain_count(
                        "SELECT COUNT(*) FROM memory_feedback f JOIN memories m ON m.id = f.memory_id \
                         WHERE m.root_id = $1 AND m.workspace_id = $2 AND m.scope = $3",
                    )
                    .fetch_one(&mut *tx)
                    .await?,
                );
                let origins: HashSet<Uuid> = sqlx::query_scalar::<$db, Option<Uuid>>(
                    "SELECT origin_id FROM memories WHERE root_id = $1 AND workspace_id = $2 \
                     AND scope = $3 AND origin_id IS NOT NULL",
                )
                .bind(root)
                .bind(lane.workspace_id)
                .bind(&lane.scope)
                .fetch_all(&mut *tx)
                .await?
                .into_iter()
                .flatten()
                .collect();
                let deleted: Vec<(Uuid, bool)> = sqlx::query_as(
                    "DELETE FROM memories WHERE root_id = $1 AND workspace_id = $2 AND scope = $3 \
                     RETURNING id, (is_current AND deleted_at IS NULL)",
                )
                .bind(root)
                .bind(lane.workspace_id)
                .bind(&lane.scope)
                .fetch_all(&mut *tx)
                .await?;
                record_deleted(deleted, &mut counts, &mut erased);
                // The finished notes the chain was split from hold its text, in the note and in
                // the job's result (the memories it made): both are emptied. The job's record
                // stays, with its state and times; its other memories live on, unlisted there.
                // An unfinished one is left to finish.
                for origin in origins {
                    counts.jobs += sqlx::query(
                        "UPDATE memory_jobs SET request = '', result = NULL WHERE id = $1 \
                         AND workspace_id = $2 AND finished_at IS NOT NULL \
                         AND (request <> '' OR result IS NOT NULL)",
                    )
                    .bind(origin)
                    .bind(lane.workspace_id)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                }
                Self::log(&mut tx, record, &counts).await?;
                tx.commit().await?;
                erased.counts = counts;
                Ok(Some(erased))
            }

            async fn erasures(
                &self,
                workspace_id: Uuid,
                limit: i64,
                offset: i64,
            ) -> StoreResult<(Vec<ErasureRecord>, i64)> {
                let rows = sqlx::query_as::<$db, ErasureRow>(
                    "SELECT id, workspace_id, kind, scope_hash, memory_id, actor_kind, actor_id, \
                     counts, at FROM erasures WHERE workspace_id = $1 ORDER BY at DESC, id DESC \
                     LIMIT $2 OFFSET $3",
                )
                .bind(workspace_id)
                .bind(limit)
                .bind(offset)
                .fetch_all(&self.pool)
                .await?;
                let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM erasures WHERE workspace_id = $1")
                    .bind(workspace_id)
                    .fetch_one(&self.pool)
                    .await?;
                let records = rows
                    .into_iter()
                    .map(ErasureRecord::try_from)
                    .collect::<StoreResult<Vec<_>>>()?;
                Ok((records, total))
            }

            async fn purge_deleted(
                &self,
                before_micros: i64,
                limit: i64,
                only: Option<&[Uuid]>,
            ) -> StoreResult<u64> {
                let mut tx = self.writer.begin().await?;
                let mut qb = QueryBuilder::<$db>::new(
                    "SELECT id, origin_id FROM memories WHERE deleted_at IS NOT NULL \
                     AND content <> '' AND deleted_at < ",
                );
                qb.push_bind(before_micros);
                if let Some(only) = only {
                    if only.is_empty() {
                        tx.rollback().await?;
                        return Ok(0);
                    }
                    qb.push(" AND workspace_id IN (");
                    let mut list = qb.separated(", ");
                    for id in only {
                        list.push_bind(*id);
                    }
                    qb.push(")");
                }
                qb.push(" ORDER BY deleted_at LIMIT ");
                qb.push_bind(limit);
                let rows: Vec<(Uuid, Option<Uuid>)> =
                    qb.build_query_as().fetch_all(&mut *tx).await?;
                let ids: Vec<Uuid> = rows.iter().map(|(id, _)| *id).collect();
                let origins: Vec<Uuid> = rows
                    .iter()
                    .filter_map(|(_, origin)| *origin)
                    .collect::<HashSet<_>>()
                    .into_iter()
                    .collect();
                for batch in ids.chunks(IN_BATCH) {
                    for sql in [
                        "UPDATE memories SET content = '', content_norm = '', content_hash = '', \
                         speaker = '', thread = '' WHERE id IN (",
                        "DELETE FROM memory_vectors WHERE memory_id IN (",
                        "UPDATE memory_feedback SET explanation = NULL WHERE memory_id IN (",
                    ] {
                        let mut qb = QueryBuilder::<$db>::new(sql);
                        let mut list = qb.separated(", ");
                        for id in batch {
                            list.push_bind(*id);
                        }
                        qb.push(")");
                        qb.build().execute(&mut *tx).await?;
                    }
                }
                // A finished note none of whose memories is live any more holds only deleted
                // text: it is emptied too.
                for batch in origins.chunks(IN_BATCH) {
                    let mut qb = QueryBuilder::<$db>::new(
                        "UPDATE memory_jobs SET request = '', result = NULL \
                         WHERE finished_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM memories m \
                         WHERE m.origin_id = memory_jobs.id AND m.deleted_at IS NULL) AND id IN (",
                    );
                    let mut list = qb.separated(", ");
                    for id in batch {
                        list.push_bind(*id);
                    }
                    qb.push(")");
                    qb.build().execute(&mut *tx).await?;
                }
                tx.commit().await?;
                Ok(ids.len() as u64)
            }

            async fn scrub(&self) -> StoreResult<bool> {
                if $backend != Backend::Sqlite {
                    return Ok(true);
                }
                // `busy` is 1 when a reader kept the checkpoint from finishing: the log still
                // holds frames then, and the next scrub (each purge round) tries again.
                for attempt in 0..3 {
                    let (busy, _, _): (i64, i64, i64) =
                        sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
                            .fetch_one(&self.writer)
                            .await?;
                    if busy == 0 {
                        return Ok(true);
                    }
                    if attempt < 2 {
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    }
                }
                Ok(false)
            }
        }
    };
}

erasure_sql!(SqliteStore, sqlx::Sqlite, Backend::Sqlite);
erasure_sql!(PgStore, sqlx::Postgres, Backend::Postgres);
