//! The SQL of [`Store`], written once and instantiated for SQLite and PostgreSQL by
//! `sql_store!`. Both accept `$N` placeholders; dialect differences are kept out of the SQL
//! (integer timestamps, empty-string "none", `ON CONFLICT DO NOTHING ... RETURNING`).

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use sqlx::{FromRow, QueryBuilder};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use super::{Backend, FeedbackRecord, IndexedMemory, Store, StoreResult, Superseded};
use crate::embedding;
use crate::error::StorageError;
use crate::model::{
    content_hash, from_micros, to_micros, ApiKey, Category, Embedded, FieldPatch, JobRecord, Lane,
    ListFilter, Memory, NewMemory, Plan, Rating, Source, Workspace,
};

macro_rules! memory_columns {
    () => {
        "id, workspace_id, user_id, content, source, category, scope, project, version, \
         is_current, root_id, supersedes_id, valid_from, valid_until, created_at, updated_at, \
         flagged_wrong, helpful_count, not_helpful_count, origin_id, thread, speaker"
    };
}

/// The memory columns qualified by the alias `m`, for joins.
macro_rules! memory_columns_m {
    () => {
        "m.id, m.workspace_id, m.user_id, m.content, m.source, m.category, m.scope, m.project, \
         m.version, m.is_current, m.root_id, m.supersedes_id, m.valid_from, m.valid_until, \
         m.created_at, m.updated_at, m.flagged_wrong, m.helpful_count, m.not_helpful_count, \
         m.origin_id, m.thread, m.speaker"
    };
}

/// What storing a memory's vector does when it has one already: replaces it.
macro_rules! upsert_vector_tail {
    () => {
        "ON CONFLICT (memory_id) DO UPDATE SET model = excluded.model, dims = excluded.dims, \
         vector = excluded.vector, created_at = excluded.created_at"
    };
}

#[derive(FromRow)]
struct MemoryRow {
    id: Uuid,
    workspace_id: Uuid,
    user_id: String,
    content: String,
    source: String,
    category: String,
    scope: String,
    project: String,
    version: i64,
    is_current: bool,
    root_id: Uuid,
    supersedes_id: Option<Uuid>,
    valid_from: Option<i64>,
    valid_until: Option<i64>,
    created_at: i64,
    updated_at: i64,
    flagged_wrong: bool,
    helpful_count: i64,
    not_helpful_count: i64,
    origin_id: Option<Uuid>,
    thread: String,
    speaker: String,
}

/// A current memory with its stored vector (index rebuilds).
#[derive(FromRow)]
struct IndexRow {
    seq: i64,
    #[sqlx(flatten)]
    memory: MemoryRow,
    model: Option<String>,
    vector: Option<Vec<u8>>,
}

#[derive(FromRow)]
struct JobRow {
    id: Uuid,
    workspace_id: Uuid,
    user_id: String,
    scope: String,
    state: String,
    request: String,
    result: Option<String>,
    error: Option<String>,
    attempts: i64,
    created_at: i64,
    updated_at: i64,
    finished_at: Option<i64>,
}

impl From<JobRow> for JobRecord {
    fn from(row: JobRow) -> Self {
        JobRecord {
            id: row.id,
            workspace_id: row.workspace_id,
            user_id: row.user_id,
            scope: row.scope,
            state: row.state,
            request: row.request,
            result: row.result,
            error: row.error,
            attempts: row.attempts,
            created_at: from_micros(row.created_at),
            updated_at: from_micros(row.updated_at),
            finished_at: row.finished_at.map(from_micros),
        }
    }
}

const JOB_COLUMNS: &str = "id, workspace_id, user_id, scope, state, request, result, error, \
                           attempts, created_at, updated_at, finished_at";

impl TryFrom<MemoryRow> for Memory {
    type Error = StorageError;
    fn try_from(row: MemoryRow) -> Result<Self, StorageError> {
        let corrupt = |what: &str, value: &str| {
            StorageError::Corrupt(format!("memory {}: bad {what} '{value}'", row.id))
        };
        Ok(Memory {
            source: row
                .source
                .parse::<Source>()
                .map_err(|_| corrupt("source", &row.source))?,
            category: row
                .category
                .parse::<Category>()
                .map_err(|_| corrupt("category", &row.category))?,
            id: row.id,
            workspace_id: row.workspace_id,
            user_id: row.user_id,
            content: row.content,
            scope: row.scope,
            project: row.project,
            version: row.version,
            is_current: row.is_current,
            root_id: row.root_id,
            supersedes_id: row.supersedes_id,
            valid_from: row.valid_from.map(from_micros),
            valid_until: row.valid_until.map(from_micros),
            created_at: from_micros(row.created_at),
            updated_at: from_micros(row.updated_at),
            flagged_wrong: row.flagged_wrong,
            helpful_count: row.helpful_count,
            not_helpful_count: row.not_helpful_count,
            origin_id: row.origin_id,
            thread: row.thread,
            speaker: row.speaker,
        })
    }
}

fn memories(rows: Vec<MemoryRow>) -> StoreResult<Vec<Memory>> {
    rows.into_iter().map(Memory::try_from).collect()
}

fn memory(row: Option<MemoryRow>) -> StoreResult<Option<Memory>> {
    row.map(Memory::try_from).transpose()
}

#[derive(FromRow)]
struct WorkspaceRow {
    id: Uuid,
    name: String,
    slug: String,
    plan: Option<String>,
    created_at: i64,
}

impl TryFrom<WorkspaceRow> for Workspace {
    type Error = StorageError;
    fn try_from(row: WorkspaceRow) -> Result<Self, StorageError> {
        let plan = match row.plan {
            Some(plan) => Some(
                plan.parse::<Plan>()
                    .map_err(|e| StorageError::Corrupt(e.to_string()))?,
            ),
            None => None,
        };
        Ok(Workspace {
            id: row.id,
            name: row.name,
            slug: row.slug,
            plan,
            created_at: from_micros(row.created_at),
        })
    }
}

/// `%`, `_` and `\` escaped for `LIKE ... ESCAPE '\'`, wrapped for a substring match.
fn like_pattern(needle: &str) -> String {
    let mut pattern = String::with_capacity(needle.len() + 2);
    pattern.push('%');
    for c in needle.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

macro_rules! feedback_update {
    ($effect:literal) => {
        concat!(
            "UPDATE memories SET ",
            $effect,
            ", updated_at = $1 WHERE id = $2 AND workspace_id = $3 AND scope = $4 \
             AND deleted_at IS NULL"
        )
    };
}

/// The update that applies a rating's effect to its memory.
fn feedback_update(rating: Rating) -> &'static str {
    match rating {
        Rating::Helpful => feedback_update!("helpful_count = helpful_count + 1"),
        Rating::NotHelpful => feedback_update!("not_helpful_count = not_helpful_count + 1"),
        // Expires now, unless it already expired earlier.
        Rating::Outdated => feedback_update!(
            "valid_until = CASE WHEN valid_until IS NULL OR valid_until > $1 THEN $1 ELSE valid_until END"
        ),
        Rating::Wrong => feedback_update!("flagged_wrong = TRUE"),
    }
}

/// Most new memories one commit carries (group commit).
const INSERT_BATCH: usize = 64;
/// Most rows one multi-row insert carries: 19 parameters a memory, far under SQLite's limit
/// (32,766) and PostgreSQL's (65,535).
const ROWS_PER_STATEMENT: usize = 64;

/// A new memory waiting for the group commit, with where to send its outcome.
struct InsertJob {
    memory: NewMemory,
    reply: oneshot::Sender<StoreResult<Option<MemoryRow>>>,
}

macro_rules! sql_store {
    ($store:ident, $db:ty, $backend:expr) => {
        /// The store over this backend: `pool` serves reads, `writer` every write (for SQLite
        /// a single connection, so writers queue in the pool instead of sleeping in SQLite's
        /// busy handler; for PostgreSQL the same pool).
        ///
        /// New memories (the common save) go through a group commit: a task takes every insert
        /// waiting, up to [`INSERT_BATCH`], and commits them in one transaction, so concurrent
        /// saves share one log sync instead of queueing for one each. Each is answered after
        /// the commit.
        #[derive(Clone)]
        pub struct $store {
            pub(super) pool: sqlx::Pool<$db>,
            pub(super) writer: sqlx::Pool<$db>,
            inserts: mpsc::Sender<InsertJob>,
        }

        impl $store {
            /// Must be called inside a tokio runtime (it starts the group-commit task).
            pub fn new(pool: sqlx::Pool<$db>, writer: sqlx::Pool<$db>) -> Self {
                let (inserts, queue) = mpsc::channel(1024);
                tokio::spawn(Self::group_commit(writer.clone(), queue));
                Self { pool, writer, inserts }
            }

            /// Runs until every store handle is dropped.
            async fn group_commit(writer: sqlx::Pool<$db>, mut queue: mpsc::Receiver<InsertJob>) {
                let mut batch = Vec::with_capacity(INSERT_BATCH);
                while queue.recv_many(&mut batch, INSERT_BATCH).await > 0 {
                    let jobs = std::mem::take(&mut batch);
                    let memories: Vec<&NewMemory> = jobs.iter().map(|job| &job.memory).collect();
                    let started = std::time::Instant::now();
                    let committed = Self::insert_batch(&writer, &memories).await;
                    tracing::debug!(
                        memories = memories.len(),
                        commit_ms = started.elapsed().as_secs_f64() * 1e3,
                        failed = committed.is_err(),
                        "group commit"
                    );
                    match committed {
                        Ok(rows) => {
                            for (job, row) in jobs.into_iter().zip(rows) {
                                let _ = job.reply.send(Ok(row));
                            }
                        }
                        // One failing insert must not fail the others: each on its own.
                        Err(_) => {
                            for job in jobs {
                                let row = Self::insert_one(&writer, &job.memory).await;
                                let _ = job.reply.send(row);
                            }
                        }
                    }
                }
            }

            async fn insert_one(
                writer: &sqlx::Pool<$db>,
                m: &NewMemory,
            ) -> StoreResult<Option<MemoryRow>> {
                let mut tx = writer.begin().await?;
                let row = Self::insert_version(&mut tx, m, 1, m.id, None).await?;
                tx.commit().await?;
                Ok(row)
            }

            /// New memories (first versions) and their vectors in one transaction, as
            /// [`Self::insert_version`] inserts one, but a statement for up to
            /// [`ROWS_PER_STATEMENT`] of them: each statement is a round trip to the database
            /// (for SQLite, to its connection's thread), and two statements a memory made a
            /// commit of 7 memories 16 round trips. `None` for each memory the dedup index
            /// refused.
            async fn insert_batch(
                writer: &sqlx::Pool<$db>,
                memories: &[&NewMemory],
            ) -> StoreResult<Vec<Option<MemoryRow>>> {
                let mut tx = writer.begin().await?;
                let mut inserted: HashMap<Uuid, MemoryRow> =
                    HashMap::with_capacity(memories.len());
                for chunk in memories.chunks(ROWS_PER_STATEMENT) {
                    let first_versions: Vec<_> =
                        chunk.iter().map(|m| (*m, 1, m.id, None)).collect();
                    let mut insert = Self::insert_rows(&first_versions);
                    let rows = insert
                        .build_query_as::<MemoryRow>()
                        .fetch_all(&mut *tx)
                        .await
                        .map_err(StorageError::from_db)?;
                    inserted.extend(rows.into_iter().map(|row| (row.id, row)));
                    let vectors: Vec<(&NewMemory, &Embedded)> = chunk
                        .iter()
                        .filter(|m| inserted.contains_key(&m.id))
                        .filter_map(|m| Some((*m, m.embedding.as_ref()?)))
                        .collect();
                    if vectors.is_empty() {
                        continue;
                    }
                    let mut put = QueryBuilder::<$db>::new(
                        "INSERT INTO memory_vectors (memory_id, model, dims, vector, created_at) ",
                    );
                    put.push_values(vectors, |mut row, (m, embedded)| {
                        row.push_bind(m.id)
                            .push_bind(embedded.model.to_string())
                            .push_bind(embedded.vector.len() as i64)
                            .push_bind(embedding::to_bytes(&embedded.vector))
                            .push_bind(to_micros(m.created_at));
                    });
                    put.push(concat!(" ", upsert_vector_tail!()));
                    put.build()
                        .execute(&mut *tx)
                        .await
                        .map_err(StorageError::from_db)?;
                }
                tx.commit().await?;
                Ok(memories.iter().map(|m| inserted.remove(&m.id)).collect())
            }

            fn push_list_filters(qb: &mut QueryBuilder<$db>, f: &ListFilter) {
                qb.push(" FROM memories WHERE workspace_id = ");
                qb.push_bind(f.lane.workspace_id);
                qb.push(" AND scope = ");
                qb.push_bind(f.lane.scope.clone());
                qb.push(" AND is_current AND deleted_at IS NULL");
                if !f.include_expired {
                    qb.push(" AND (valid_until IS NULL OR valid_until > ");
                    qb.push_bind(to_micros(f.now));
                    qb.push(")");
                }
                if f.exclude_wrong {
                    qb.push(" AND NOT flagged_wrong");
                }
                if let Some(since) = f.created_since {
                    qb.push(" AND created_at >= ");
                    qb.push_bind(to_micros(since));
                }
                if let Some(thread) = &f.thread {
                    // The redundant `<> ''` lets the planner use the partial index on threads.
                    qb.push(" AND thread <> '' AND thread = ");
                    qb.push_bind(thread.clone());
                }
                if !f.categories.is_empty() {
                    qb.push(" AND category IN (");
                    let mut list = qb.separated(", ");
                    for category in &f.categories {
                        list.push_bind(category.as_str());
                    }
                    qb.push(")");
                }
                if !f.projects.is_empty() {
                    qb.push(" AND project IN (");
                    let mut list = qb.separated(", ");
                    for project in &f.projects {
                        list.push_bind(project.clone());
                    }
                    qb.push(")");
                }
                if let Some(search) = &f.search {
                    qb.push(" AND content_norm LIKE ");
                    qb.push_bind(like_pattern(search));
                    qb.push(" ESCAPE '\\'");
                }
            }

            /// `INSERT` of new memory rows, each `(memory, version, root_id, supersedes_id)`,
            /// returning the rows stored: a row the dedup index (or an existing id) refuses is
            /// skipped, not an error.
            fn insert_rows(
                rows: &[(&NewMemory, i64, Uuid, Option<Uuid>)],
            ) -> QueryBuilder<$db> {
                let mut insert = QueryBuilder::<$db>::new(
                    "INSERT INTO memories (id, workspace_id, user_id, content, content_norm, \
                     content_hash, source, category, scope, project, version, is_current, \
                     root_id, supersedes_id, valid_from, valid_until, created_at, updated_at, \
                     origin_id, thread, speaker) ",
                );
                insert.push_values(rows, |mut row, &(m, version, root_id, supersedes_id)| {
                    let norm = m.content_norm();
                    let hash = content_hash(&norm);
                    row.push_bind(m.id)
                        .push_bind(m.workspace_id)
                        .push_bind(m.user_id.clone())
                        .push_bind(m.content.clone())
                        .push_bind(norm)
                        .push_bind(hash)
                        .push_bind(m.source.as_str())
                        .push_bind(m.category.as_str())
                        .push_bind(m.scope.clone())
                        .push_bind(m.project.clone())
                        .push_bind(version)
                        .push("TRUE")
                        .push_bind(root_id)
                        .push_bind(supersedes_id)
                        .push_bind(m.valid_from.map(to_micros))
                        .push_bind(m.valid_until.map(to_micros))
                        .push_bind(to_micros(m.created_at))
                        .push_bind(to_micros(m.created_at))
                        .push_bind(m.origin_id)
                        .push_bind(m.thread.clone())
                        .push_bind(m.speaker.clone());
                });
                insert.push(concat!(" ON CONFLICT DO NOTHING RETURNING ", memory_columns!()));
                insert
            }

            /// Inserts a memory (and its vector, when it has one) on `conn`, which the caller
            /// holds in a transaction; `None` when the dedup index refused it.
            async fn insert_version(
                conn: &mut sqlx::Transaction<'_, $db>,
                m: &NewMemory,
                version: i64,
                root_id: Uuid,
                supersedes_id: Option<Uuid>,
            ) -> StoreResult<Option<MemoryRow>> {
                let row = Self::insert_rows(&[(m, version, root_id, supersedes_id)])
                    .build_query_as::<MemoryRow>()
                    .fetch_optional(&mut **conn)
                    .await
                    .map_err(StorageError::from_db)?;
                if let (Some(_), Some(embedded)) = (&row, &m.embedding) {
                    Self::put_vector(conn, m.id, embedded, to_micros(m.created_at)).await?;
                }
                Ok(row)
            }

            async fn put_vector(
                conn: &mut sqlx::Transaction<'_, $db>,
                id: Uuid,
                embedded: &Embedded,
                at_micros: i64,
            ) -> StoreResult<()> {
                sqlx::query(concat!(
                    "INSERT INTO memory_vectors (memory_id, model, dims, vector, created_at) \
                     VALUES ($1, $2, $3, $4, $5) ",
                    upsert_vector_tail!()
                ))
                .bind(id)
                .bind(&*embedded.model)
                .bind(embedded.vector.len() as i64)
                .bind(embedding::to_bytes(&embedded.vector))
                .bind(at_micros)
                .execute(&mut **conn)
                .await
                .map_err(StorageError::from_db)?;
                Ok(())
            }
        }

        #[async_trait]
        impl Store for $store {
            fn backend(&self) -> Backend {
                $backend
            }

            async fn ping(&self) -> StoreResult<()> {
                sqlx::query("SELECT 1").execute(&self.pool).await?;
                Ok(())
            }

            async fn close(&self) {
                self.pool.close().await;
                self.writer.close().await;
            }

            fn pool_use(&self) -> (u32, u32) {
                let mut used = 0u32;
                let mut idle = 0u32;
                // PostgreSQL's writer is the same pool as its readers.
                let pools: &[&sqlx::Pool<$db>] = if matches!($backend, Backend::Postgres) {
                    &[&self.pool]
                } else {
                    &[&self.pool, &self.writer]
                };
                for pool in pools {
                    let size = pool.size();
                    let free = u32::try_from(pool.num_idle()).unwrap_or(size);
                    used += size.saturating_sub(free);
                    idle += free;
                }
                (used, idle)
            }

            async fn document_status_counts(&self) -> StoreResult<Vec<(String, i64)>> {
                Ok(sqlx::query_as::<$db, (String, i64)>(
                    "SELECT status, COUNT(*) FROM vault_documents GROUP BY status",
                )
                .fetch_all(&self.pool)
                .await?)
            }

            async fn oldest_pending_document(&self) -> StoreResult<Option<i64>> {
                Ok(sqlx::query_scalar::<$db, Option<i64>>(
                    "SELECT MIN(created_at) FROM vault_documents WHERE status = 'pending'",
                )
                .fetch_one(&self.pool)
                .await?)
            }

            async fn insert_workspace_with_key(
                &self,
                w: &Workspace,
                key: &ApiKey,
                key_hash: &str,
            ) -> StoreResult<()> {
                let mut tx = self.writer.begin().await?;
                sqlx::query("INSERT INTO workspaces (id, name, slug, plan, created_at) VALUES ($1, $2, $3, $4, $5)")
                    .bind(w.id)
                    .bind(&w.name)
                    .bind(&w.slug)
                    .bind(w.plan.map(Plan::as_str))
                    .bind(to_micros(w.created_at))
                    .execute(&mut *tx)
                    .await
                    .map_err(StorageError::from_db)?;
                sqlx::query(
                    "INSERT INTO api_keys (id, workspace_id, name, prefix, key_hash, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(key.id)
                .bind(key.workspace_id)
                .bind(&key.name)
                .bind(&key.prefix)
                .bind(key_hash)
                .bind(to_micros(key.created_at))
                .execute(&mut *tx)
                .await
                .map_err(StorageError::from_db)?;
                tx.commit().await?;
                Ok(())
            }

            async fn workspace(&self, id: Uuid) -> StoreResult<Option<Workspace>> {
                sqlx::query_as::<$db, WorkspaceRow>(
                    "SELECT id, name, slug, plan, created_at FROM workspaces WHERE id = $1",
                )
                .bind(id)
                .fetch_optional(&self.pool)
                .await?
                .map(Workspace::try_from)
                .transpose()
            }

            async fn set_plan(&self, id: Uuid, plan: Plan) -> StoreResult<bool> {
                let done = sqlx::query("UPDATE workspaces SET plan = $1 WHERE id = $2")
                    .bind(plan.as_str())
                    .bind(id)
                    .execute(&self.writer)
                    .await?;
                Ok(done.rows_affected() == 1)
            }

            async fn workspace_count(&self) -> StoreResult<i64> {
                Ok(sqlx::query_scalar::<$db, i64>("SELECT COUNT(*) FROM workspaces")
                    .fetch_one(&self.pool)
                    .await?)
            }

            async fn count_current_memories(&self, workspace_id: Uuid) -> StoreResult<i64> {
                Ok(sqlx::query_scalar::<$db, i64>(
                    "SELECT COUNT(*) FROM memories WHERE workspace_id = $1 AND is_current AND deleted_at IS NULL",
                )
                .bind(workspace_id)
                .fetch_one(&self.pool)
                .await?)
            }

            async fn touch_api_key(&self, id: Uuid, at_micros: i64) -> StoreResult<()> {
                sqlx::query("UPDATE api_keys SET last_used_at = $1 WHERE id = $2")
                    .bind(at_micros)
                    .bind(id)
                    .execute(&self.writer)
                    .await?;
                Ok(())
            }

            async fn find_duplicate(
                &self,
                lane: &Lane,
                project: &str,
                content_hash: &str,
            ) -> StoreResult<Option<Memory>> {
                let row = sqlx::query_as::<$db, MemoryRow>(concat!(
                    "SELECT ",
                    memory_columns!(),
                    " FROM memories WHERE workspace_id = $1 AND scope = $2 AND project = $3 \
                     AND content_hash = $4 AND is_current AND deleted_at IS NULL"
                ))
                .bind(lane.workspace_id)
                .bind(&lane.scope)
                .bind(project)
                .bind(content_hash)
                .fetch_optional(&self.pool)
                .await?;
                memory(row)
            }

            async fn stored_hashes(
                &self,
                lane: &Lane,
                project: &str,
                content_hashes: &[String],
            ) -> StoreResult<HashSet<String>> {
                if content_hashes.is_empty() {
                    return Ok(HashSet::new());
                }
                let mut qb = QueryBuilder::<$db>::new(
                    "SELECT content_hash FROM memories WHERE workspace_id = ",
                );
                qb.push_bind(lane.workspace_id)
                    .push(" AND scope = ")
                    .push_bind(&lane.scope)
                    .push(" AND project = ")
                    .push_bind(project)
                    .push(" AND is_current AND deleted_at IS NULL AND content_hash IN (");
                let mut list = qb.separated(", ");
                for hash in content_hashes {
                    list.push_bind(hash);
                }
                qb.push(")");
                let rows: Vec<(String,)> = qb.build_query_as().fetch_all(&self.pool).await?;
                Ok(rows.into_iter().map(|(hash,)| hash).collect())
            }

            async fn insert_memory(&self, m: &NewMemory) -> StoreResult<Option<Memory>> {
                let (reply, outcome) = oneshot::channel();
                let job = InsertJob { memory: m.clone(), reply };
                self.inserts.send(job).await.map_err(|_| StorageError::Closed)?;
                let row = outcome.await.map_err(|_| StorageError::Closed)??;
                memory(row)
            }

            async fn insert_memories(
                &self,
                memories: &[NewMemory],
            ) -> Vec<StoreResult<Option<Memory>>> {
                let refs: Vec<&NewMemory> = memories.iter().collect();
                match Self::insert_batch(&self.writer, &refs).await {
                    Ok(rows) => rows.into_iter().map(memory).collect(),
                    // As in the group commit: one failing insert must not fail the others.
                    Err(_) => {
                        let mut rows = Vec::with_capacity(memories.len());
                        for m in memories {
                            rows.push(Self::insert_one(&self.writer, m).await.and_then(memory));
                        }
                        rows
                    }
                }
            }

            async fn supersede(&self, lane: &Lane, old_id: Uuid, m: &NewMemory) -> StoreResult<Superseded> {
                let mut tx = self.writer.begin().await?;
                // The write comes first: it takes the write lock (SQLite) or the row lock
                // (PostgreSQL), so a concurrent supersession of the same memory waits here and
                // then finds it no longer current.
                let retired: Option<(i64, Uuid)> = sqlx::query_as(
                    "UPDATE memories SET is_current = FALSE, updated_at = $1 WHERE id = $2 \
                     AND workspace_id = $3 AND scope = $4 AND is_current AND deleted_at IS NULL \
                     RETURNING version, root_id",
                )
                .bind(to_micros(m.created_at))
                .bind(old_id)
                .bind(lane.workspace_id)
                .bind(&lane.scope)
                .fetch_optional(&mut *tx)
                .await?;
                let Some((version, root_id)) = retired else {
                    let exists: Option<bool> = sqlx::query_scalar(
                        "SELECT is_current FROM memories WHERE id = $1 AND workspace_id = $2 \
                         AND scope = $3 AND deleted_at IS NULL",
                    )
                    .bind(old_id)
                    .bind(lane.workspace_id)
                    .bind(&lane.scope)
                    .fetch_optional(&mut *tx)
                    .await?;
                    tx.rollback().await?;
                    return Ok(match exists {
                        Some(_) => Superseded::NotCurrent,
                        None => Superseded::NotFound,
                    });
                };
                match Self::insert_version(&mut tx, m, version + 1, root_id, Some(old_id)).await? {
                    Some(row) => {
                        tx.commit().await?;
                        Ok(Superseded::Created(Memory::try_from(row)?))
                    }
                    None => {
                        tx.rollback().await?;
                        let hash = content_hash(&m.content_norm());
                        match self.find_duplicate(lane, &m.project, &hash).await? {
                            Some(existing) => Ok(Superseded::Duplicate(existing)),
                            None => Err(StorageError::UniqueViolation),
                        }
                    }
                }
            }

            async fn memory(&self, lane: &Lane, id: Uuid) -> StoreResult<Option<Memory>> {
                let row = sqlx::query_as::<$db, MemoryRow>(concat!(
                    "SELECT ",
                    memory_columns!(),
                    " FROM memories WHERE id = $1 AND workspace_id = $2 AND scope = $3 AND deleted_at IS NULL"
                ))
                .bind(id)
                .bind(lane.workspace_id)
                .bind(&lane.scope)
                .fetch_optional(&self.pool)
                .await?;
                memory(row)
            }

            async fn list_memories(&self, f: &ListFilter) -> StoreResult<(Vec<Memory>, i64)> {
                let mut page = QueryBuilder::<$db>::new(concat!("SELECT ", memory_columns!()));
                Self::push_list_filters(&mut page, f);
                page.push(" ORDER BY seq DESC LIMIT ");
                page.push_bind(f.limit);
                page.push(" OFFSET ");
                page.push_bind(f.offset);
                let rows: Vec<MemoryRow> = page.build_query_as().fetch_all(&self.pool).await?;
                // A short, non-empty page (or a short first page) ends the list: its total
                // is known without counting.
                let shown = rows.len() as i64;
                let total = if shown < f.limit && (shown > 0 || f.offset == 0) {
                    f.offset + shown
                } else {
                    let mut count = QueryBuilder::<$db>::new("SELECT COUNT(*)");
                    Self::push_list_filters(&mut count, f);
                    count.build_query_scalar().fetch_one(&self.pool).await?
                };
                Ok((memories(rows)?, total))
            }

            async fn update_memory_fields(
                &self,
                lane: &Lane,
                id: Uuid,
                patch: &FieldPatch,
                at_micros: i64,
            ) -> StoreResult<Option<Memory>> {
                let mut qb = QueryBuilder::<$db>::new("UPDATE memories SET updated_at = ");
                qb.push_bind(at_micros);
                if let Some(category) = patch.category {
                    qb.push(", category = ");
                    qb.push_bind(category.as_str());
                }
                if let Some(project) = &patch.project {
                    qb.push(", project = ");
                    qb.push_bind(project.clone());
                }
                if let Some(valid_from) = patch.valid_from {
                    qb.push(", valid_from = ");
                    qb.push_bind(valid_from.map(to_micros));
                }
                if let Some(valid_until) = patch.valid_until {
                    qb.push(", valid_until = ");
                    qb.push_bind(valid_until.map(to_micros));
                }
                qb.push(" WHERE id = ");
                qb.push_bind(id);
                qb.push(" AND workspace_id = ");
                qb.push_bind(lane.workspace_id);
                qb.push(" AND scope = ");
                qb.push_bind(lane.scope.clone());
                qb.push(concat!(" AND is_current AND deleted_at IS NULL RETURNING ", memory_columns!()));
                let row: Option<MemoryRow> = qb
                    .build_query_as()
                    .fetch_optional(&self.writer)
                    .await
                    .map_err(StorageError::from_db)?;
                memory(row)
            }

            async fn delete_memory(&self, lane: &Lane, id: Uuid, at_micros: i64) -> StoreResult<Option<bool>> {
                Ok(sqlx::query_scalar::<$db, bool>(
                    "UPDATE memories SET deleted_at = $1, updated_at = $1 WHERE id = $2 \
                     AND workspace_id = $3 AND scope = $4 AND deleted_at IS NULL RETURNING is_current",
                )
                .bind(at_micros)
                .bind(id)
                .bind(lane.workspace_id)
                .bind(&lane.scope)
                .fetch_optional(&self.writer)
                .await?)
            }

            async fn forget_chain(&self, lane: &Lane, id: Uuid, at_micros: i64) -> StoreResult<Option<u64>> {
                let removed: Vec<bool> = sqlx::query_scalar::<$db, bool>(
                    "UPDATE memories SET deleted_at = $1, updated_at = $1 WHERE workspace_id = $2 \
                     AND scope = $3 AND deleted_at IS NULL AND root_id = (SELECT root_id FROM \
                     memories WHERE id = $4 AND workspace_id = $2 AND scope = $3 AND deleted_at IS NULL) \
                     RETURNING is_current",
                )
                .bind(at_micros)
                .bind(lane.workspace_id)
                .bind(&lane.scope)
                .bind(id)
                .fetch_all(&self.writer)
                .await?;
                if removed.is_empty() {
                    return Ok(None);
                }
                Ok(Some(removed.into_iter().filter(|current| *current).count() as u64))
            }

            async fn chain(&self, lane: &Lane, root_id: Uuid) -> StoreResult<Vec<Memory>> {
                let rows = sqlx::query_as::<$db, MemoryRow>(concat!(
                    "SELECT ",
                    memory_columns!(),
                    " FROM memories WHERE root_id = $1 AND workspace_id = $2 AND scope = $3 \
                     AND deleted_at IS NULL ORDER BY version DESC"
                ))
                .bind(root_id)
                .bind(lane.workspace_id)
                .bind(&lane.scope)
                .fetch_all(&self.pool)
                .await?;
                memories(rows)
            }

            async fn record_feedback(&self, lane: &Lane, id: Uuid, fb: &FeedbackRecord) -> StoreResult<bool> {
                let mut tx = self.writer.begin().await?;
                let done = sqlx::query(feedback_update(fb.rating))
                    .bind(fb.at_micros)
                    .bind(id)
                    .bind(lane.workspace_id)
                    .bind(&lane.scope)
                    .execute(&mut *tx)
                    .await?;
                if done.rows_affected() == 0 {
                    tx.rollback().await?;
                    return Ok(false);
                }
                sqlx::query(
                    "INSERT INTO memory_feedback (id, memory_id, workspace_id, rating, explanation, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(fb.id)
                .bind(id)
                .bind(lane.workspace_id)
                .bind(fb.rating.as_str())
                .bind(&fb.explanation)
                .bind(fb.at_micros)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(true)
            }

            async fn current_memories_by_ids(&self, lane: &Lane, ids: &[Uuid]) -> StoreResult<Vec<Memory>> {
                if ids.is_empty() {
                    return Ok(Vec::new());
                }
                // By id alone, so that both planners use the id index (with the lane in the
                // WHERE clause, SQLite preferred the lane's partial index and scanned the
                // lane); the lane and currency are checked on the rows.
                let mut qb = QueryBuilder::<$db>::new(concat!("SELECT ", memory_columns!(), " FROM memories WHERE id IN ("));
                let mut list = qb.separated(", ");
                for id in ids {
                    list.push_bind(*id);
                }
                qb.push(") AND deleted_at IS NULL");
                let rows: Vec<MemoryRow> = qb.build_query_as().fetch_all(&self.pool).await?;
                Ok(memories(rows)?
                    .into_iter()
                    .filter(|m| {
                        m.is_current && m.workspace_id == lane.workspace_id && m.scope == lane.scope
                    })
                    .collect())
            }

            async fn current_memories_page(&self, workspace: Option<Uuid>, after_seq: i64, limit: i64) -> StoreResult<Vec<IndexedMemory>> {
                let rows = sqlx::query_as::<$db, IndexRow>(concat!(
                    "SELECT m.seq, ",
                    memory_columns_m!(),
                    ", v.model, v.vector FROM memories m LEFT JOIN memory_vectors v ON v.memory_id = m.id \
                     WHERE m.seq > $1 AND ($3 IS NULL OR m.workspace_id = $3) AND m.is_current \
                     AND m.deleted_at IS NULL ORDER BY m.seq LIMIT $2"
                ))
                .bind(after_seq)
                .bind(limit)
                .bind(workspace)
                .fetch_all(&self.pool)
                .await?;
                rows.into_iter()
                    .map(|row| {
                        let vector = match (row.model, row.vector) {
                            (Some(model), Some(bytes)) => Some((model, embedding::from_bytes(&bytes))),
                            _ => None,
                        };
                        Ok(IndexedMemory { seq: row.seq, memory: Memory::try_from(row.memory)?, vector })
                    })
                    .collect()
            }

            async fn put_vectors(&self, vectors: &[(Uuid, Embedded)]) -> StoreResult<()> {
                let mut tx = self.writer.begin().await?;
                let at = to_micros(chrono::Utc::now());
                for (id, embedded) in vectors {
                    Self::put_vector(&mut tx, *id, embedded, at).await?;
                }
                tx.commit().await?;
                Ok(())
            }

            async fn workspace_memories_page(
                &self,
                workspace_id: Uuid,
                scope: Option<&str>,
                after_seq: i64,
                limit: i64,
            ) -> StoreResult<Vec<(i64, Memory)>> {
                #[derive(FromRow)]
                struct SeqRow {
                    seq: i64,
                    #[sqlx(flatten)]
                    memory: MemoryRow,
                }
                let rows = sqlx::query_as::<$db, SeqRow>(concat!(
                    "SELECT seq, ",
                    memory_columns!(),
                    " FROM memories WHERE workspace_id = $1 AND seq > $2 AND deleted_at IS NULL \
                     AND ($4 IS NULL OR scope = $4) ORDER BY seq LIMIT $3"
                ))
                .bind(workspace_id)
                .bind(after_seq)
                .bind(limit)
                .bind(scope)
                .fetch_all(&self.pool)
                .await?;
                rows.into_iter()
                    .map(|row| Ok((row.seq, Memory::try_from(row.memory)?)))
                    .collect()
            }

            async fn insert_job(&self, job: &JobRecord) -> StoreResult<()> {
                sqlx::query(
                    "INSERT INTO memory_jobs (id, workspace_id, user_id, scope, state, request, result, \
                     error, attempts, created_at, updated_at, finished_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                )
                .bind(job.id)
                .bind(job.workspace_id)
                .bind(&job.user_id)
                .bind(&job.scope)
                .bind(&job.state)
                .bind(&job.request)
                .bind(&job.result)
                .bind(&job.error)
                .bind(job.attempts)
                .bind(to_micros(job.created_at))
                .bind(to_micros(job.updated_at))
                .bind(job.finished_at.map(to_micros))
                .execute(&self.writer)
                .await
                .map_err(StorageError::from_db)?;
                Ok(())
            }

            async fn job(&self, id: Uuid) -> StoreResult<Option<JobRecord>> {
                let sql = format!("SELECT {JOB_COLUMNS} FROM memory_jobs WHERE id = $1");
                Ok(sqlx::query_as::<$db, JobRow>(sqlx::AssertSqlSafe(sql))
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await?
                    .map(JobRecord::from))
            }

            async fn unfinished_jobs(&self) -> StoreResult<Vec<JobRecord>> {
                let sql = format!("SELECT {JOB_COLUMNS} FROM memory_jobs WHERE finished_at IS NULL ORDER BY created_at");
                Ok(sqlx::query_as::<$db, JobRow>(sqlx::AssertSqlSafe(sql))
                    .fetch_all(&self.pool)
                    .await?
                    .into_iter()
                    .map(JobRecord::from)
                    .collect())
            }

            async fn update_job(&self, job: &JobRecord) -> StoreResult<()> {
                sqlx::query(
                    "UPDATE memory_jobs SET state = $1, result = $2, error = $3, attempts = $4, \
                     updated_at = $5, finished_at = $6 WHERE id = $7",
                )
                .bind(&job.state)
                .bind(&job.result)
                .bind(&job.error)
                .bind(job.attempts)
                .bind(to_micros(job.updated_at))
                .bind(job.finished_at.map(to_micros))
                .bind(job.id)
                .execute(&self.writer)
                .await?;
                Ok(())
            }
        }
    };
}

sql_store!(SqliteStore, sqlx::Sqlite, Backend::Sqlite);
sql_store!(PgStore, sqlx::Postgres, Backend::Postgres);

#[cfg(test)]
mod tests {
    use super::like_pattern;

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(like_pattern("50%_off\\"), "%50\\%\\_off\\\\%");
        assert_eq!(like_pattern("tea"), "%tea%");
    }
}
