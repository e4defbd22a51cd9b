//! The storage engine: one [`Store`] trait, implemented over SQLite and PostgreSQL by the same
//! SQL (see `sql.rs`). Every write is committed before the call returns.
//!
//! Representation, identical on both backends: ids are UUIDs, timestamps are Unix epoch
//! microseconds, "no scope" and "no project" are the empty string (so that unique indexes see
//! them), booleans are booleans.

pub mod accounts;
mod accounts_sql;
pub mod cluster;
pub mod erasure;
mod erasure_sql;
pub mod oauth;
mod oauth_sql;
mod sql;
pub mod vault;
mod vault_rows;
mod vault_sql;

use std::collections::HashSet;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use uuid::Uuid;

use crate::config::{Settings, SqliteSync};
use crate::error::StorageError;
use crate::model::{
    ApiKey, Embedded, FieldPatch, JobRecord, Lane, ListFilter, Memory, NewMemory, Plan, Rating,
    Workspace,
};

pub use sql::{PgStore, SqliteStore};

pub type StoreResult<T> = Result<T, StorageError>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// What happened to a supersession.
#[derive(Debug)]
pub enum Superseded {
    /// The new version, now current.
    Created(Memory),
    /// The memory to supersede is not in this lane (or deleted).
    NotFound,
    /// It is no longer the current version of its chain.
    NotCurrent,
    /// The new content duplicates a current memory in the lane: nothing changed.
    Duplicate(Memory),
}

/// A feedback record to store with its effect on the memory.
#[derive(Debug, Clone)]
pub struct FeedbackRecord {
    pub id: Uuid,
    pub rating: Rating,
    pub explanation: Option<String>,
    pub at_micros: i64,
}

/// A current memory with its stored vector, as read to rebuild the search indexes.
#[derive(Debug, Clone)]
pub struct IndexedMemory {
    /// Insertion order; pages of [`Store::current_memories_page`] continue after it.
    pub seq: i64,
    pub memory: Memory,
    /// `(model, vector)` when one is stored.
    pub vector: Option<(String, Vec<f32>)>,
}

#[async_trait]
/// Memories, workspaces and jobs here; the Context Vault's part in [`vault::VaultStore`], users,
/// members, keys and billing in [`accounts::AccountStore`].
pub trait Store:
    vault::VaultStore
    + accounts::AccountStore
    + oauth::OAuthStore
    + erasure::ErasureStore
    + Send
    + Sync
    + 'static
{
    fn backend(&self) -> Backend;
    async fn ping(&self) -> StoreResult<()>;
    async fn close(&self);
    /// Connections of the pools: `(in use, idle)`.
    fn pool_use(&self) -> (u32, u32);
    /// Vault documents by status, over every workspace (metrics).
    async fn document_status_counts(&self) -> StoreResult<Vec<(String, i64)>>;
    /// When the oldest pending vault document was created (microseconds), if any.
    async fn oldest_pending_document(&self) -> StoreResult<Option<i64>>;

    // Workspaces and keys.
    async fn insert_workspace_with_key(
        &self,
        workspace: &Workspace,
        key: &ApiKey,
        key_hash: &str,
    ) -> StoreResult<()>;
    async fn workspace(&self, id: Uuid) -> StoreResult<Option<Workspace>>;
    async fn set_plan(&self, id: Uuid, plan: Plan) -> StoreResult<bool>;
    async fn workspace_count(&self) -> StoreResult<i64>;
    async fn count_current_memories(&self, workspace_id: Uuid) -> StoreResult<i64>;
    async fn touch_api_key(&self, id: Uuid, at_micros: i64) -> StoreResult<()>;

    // Memories. Every read and write is confined to one lane.
    async fn find_duplicate(
        &self,
        lane: &Lane,
        project: &str,
        content_hash: &str,
    ) -> StoreResult<Option<Memory>>;
    /// Which of `content_hashes` a current memory of the lane and project has (what
    /// [`Store::find_duplicate`] would find for each, in one query).
    async fn stored_hashes(
        &self,
        lane: &Lane,
        project: &str,
        content_hashes: &[String],
    ) -> StoreResult<HashSet<String>>;
    /// Inserts version 1 of a new chain; `None` when a current memory with the same content
    /// already exists in the lane (a concurrent duplicate).
    async fn insert_memory(&self, memory: &NewMemory) -> StoreResult<Option<Memory>>;
    /// Inserts version 1 of several new chains in one transaction (one log sync), each as
    /// [`Store::insert_memory`] would; the outcomes in order. If the transaction fails, each
    /// is tried alone, so one failing insert does not fail the others.
    async fn insert_memories(&self, memories: &[NewMemory]) -> Vec<StoreResult<Option<Memory>>>;
    /// In one transaction: retires `old_id` (which must be current) and inserts its next version.
    async fn supersede(
        &self,
        lane: &Lane,
        old_id: Uuid,
        memory: &NewMemory,
    ) -> StoreResult<Superseded>;
    /// A live (non-deleted) memory, current or not.
    async fn memory(&self, lane: &Lane, id: Uuid) -> StoreResult<Option<Memory>>;
    async fn list_memories(&self, filter: &ListFilter) -> StoreResult<(Vec<Memory>, i64)>;
    /// Edits a current memory in place; `None` when there is no such current memory.
    async fn update_memory_fields(
        &self,
        lane: &Lane,
        id: Uuid,
        patch: &FieldPatch,
        at_micros: i64,
    ) -> StoreResult<Option<Memory>>;
    /// Soft-deletes one memory; `Some(was_current)`, or `None` when there is none.
    async fn delete_memory(
        &self,
        lane: &Lane,
        id: Uuid,
        at_micros: i64,
    ) -> StoreResult<Option<bool>>;
    /// Soft-deletes the whole chain of `id`; `Some(current memories removed)`.
    async fn forget_chain(&self, lane: &Lane, id: Uuid, at_micros: i64)
        -> StoreResult<Option<u64>>;
    /// The live versions of a chain, newest first.
    async fn chain(&self, lane: &Lane, root_id: Uuid) -> StoreResult<Vec<Memory>>;
    /// Stores feedback and applies its effect; `false` when the memory is not in the lane.
    async fn record_feedback(
        &self,
        lane: &Lane,
        id: Uuid,
        feedback: &FeedbackRecord,
    ) -> StoreResult<bool>;
    /// The current, live memories of the lane among `ids` (in no particular order).
    async fn current_memories_by_ids(&self, lane: &Lane, ids: &[Uuid]) -> StoreResult<Vec<Memory>>;

    // Search indexes and embeddings.
    /// Current, live memories of one workspace (or of every one) with `seq > after_seq`, in
    /// `seq` order, with their stored vectors (index rebuilds, re-embedding).
    async fn current_memories_page(
        &self,
        workspace: Option<Uuid>,
        after_seq: i64,
        limit: i64,
    ) -> StoreResult<Vec<IndexedMemory>>;
    /// Stores (or replaces) the vectors of memories.
    async fn put_vectors(&self, vectors: &[(Uuid, Embedded)]) -> StoreResult<()>;
    /// Every live memory of a workspace (current or not), or of one of its scopes, with
    /// `seq > after_seq`, in `seq` order (export).
    async fn workspace_memories_page(
        &self,
        workspace_id: Uuid,
        scope: Option<&str>,
        after_seq: i64,
        limit: i64,
    ) -> StoreResult<Vec<(i64, Memory)>>;

    // Jobs of the long-note path.
    async fn insert_job(&self, job: &JobRecord) -> StoreResult<()>;
    async fn job(&self, id: Uuid) -> StoreResult<Option<JobRecord>>;
    /// Jobs not finished yet, oldest first (resumed at start-up).
    async fn unfinished_jobs(&self) -> StoreResult<Vec<JobRecord>>;
    /// Writes a job's state, attempts, result, error and finish time.
    async fn update_job(&self, job: &JobRecord) -> StoreResult<()>;
}

/// Opens the configured database, applies migrations and returns the store.
pub async fn connect(settings: &Settings) -> StoreResult<Arc<dyn Store>> {
    Ok(connect_node(settings, None).await?.0)
}

/// A cluster node's identity on its connections: every write it makes is fenced by its
/// workspace leases (`cluster::fencing_statements`).
#[derive(Debug, Clone, Copy)]
pub struct NodeFence {
    pub node: Uuid,
    pub ttl: Duration,
}

/// Like [`connect`]; with `fence` (PostgreSQL only), the connections carry the node's id, so
/// that writes to a workspace it does not hold fail, and the cluster's store comes with it.
pub async fn connect_node(
    settings: &Settings,
    fence: Option<NodeFence>,
) -> StoreResult<(Arc<dyn Store>, Option<cluster::ClusterStore>)> {
    let url = settings.database_url();
    if settings.is_postgres() {
        // Custom plans: the lane queries' best index depends on the bound values (a generic
        // plan cached on a fresh, unanalysed table picked full lane scans).
        let options =
            PgConnectOptions::from_str(&url)?.options([("plan_cache_mode", "force_custom_plan")]);
        let pool = PgPoolOptions::new()
            .max_connections(settings.storage.max_connections)
            .acquire_timeout(Duration::from_secs(10))
            .after_connect(move |conn, _meta| {
                Box::pin(async move {
                    match fence {
                        Some(fence) => cluster::fence_connection(conn, fence.node, fence.ttl).await,
                        None => Ok(()),
                    }
                })
            })
            .connect_with(options)
            .await?;
        sqlx::migrate!("./migrations/postgres").run(&pool).await?;
        let cluster = fence.map(|_| cluster::ClusterStore::new(pool.clone()));
        Ok((Arc::new(PgStore::new(pool.clone(), pool)), cluster))
    } else if fence.is_some() {
        Err(StorageError::Corrupt(
            "a cluster needs PostgreSQL: SQLite serves one node".into(),
        ))
    } else {
        let options = SqliteConnectOptions::from_str(&url)?;
        if let Some(parent) = options.get_filename().parent() {
            if !parent.as_os_str().is_empty() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| StorageError::DataDir(format!("{}: {e}", parent.display())))?;
            }
        }
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true)
            // Deleted content is overwritten with zeros in the file, not left in free pages
            // (erasure; the write-ahead log is truncated after one: `ErasureStore::scrub`).
            .pragma("secure_delete", "ON")
            .busy_timeout(Duration::from_secs(10))
            .synchronous(match settings.storage.sqlite_synchronous {
                SqliteSync::Normal => SqliteSynchronous::Normal,
                SqliteSync::Full => SqliteSynchronous::Full,
            });
        // One writer connection (SQLite writes are serial anyway; queueing in the pool is fair
        // and avoids the busy handler's sleeps), and read-only connections for the rest.
        // The writer's page cache is 32 MB instead of SQLite's 2 MB: every new memory goes into
        // the dedup index at a place its hash picks, so once that index outgrew the cache most
        // inserts read a page back from the file first (docs/BENCHMARKS.md).
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options.clone().pragma("cache_size", "-32768"))
            .await?;
        sqlx::migrate!("./migrations/sqlite").run(&writer).await?;
        let readers = SqlitePoolOptions::new()
            .max_connections(settings.storage.max_connections)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options.read_only(true))
            .await?;
        Ok((Arc::new(SqliteStore::new(readers, writer)), None))
    }
}

/// The actors reach storage through this adapter.
pub struct ActorStore(pub Arc<dyn Store>);

#[async_trait]
impl memvault_actors::WorkspaceStore for ActorStore {
    async fn load_workspace(
        &self,
        workspace_id: Uuid,
    ) -> Result<memvault_actors::WorkspaceSnapshot, memvault_actors::StoreFailure> {
        let failure = |e: StorageError| memvault_actors::StoreFailure::Other(e.to_string());
        let workspace = self
            .0
            .workspace(workspace_id)
            .await
            .map_err(failure)?
            .ok_or(memvault_actors::StoreFailure::UnknownWorkspace(
                workspace_id,
            ))?;
        let count = self
            .0
            .count_current_memories(workspace_id)
            .await
            .map_err(failure)?;
        Ok(memvault_actors::WorkspaceSnapshot {
            plan: workspace.plan.unwrap_or_default(),
            memory_count: count.max(0) as u64,
        })
    }

    async fn load_workspace_plan(
        &self,
        workspace_id: Uuid,
    ) -> Result<Plan, memvault_actors::StoreFailure> {
        match self.0.workspace(workspace_id).await {
            Ok(Some(workspace)) => Ok(workspace.plan.unwrap_or_default()),
            Ok(None) => Err(memvault_actors::StoreFailure::UnknownWorkspace(
                workspace_id,
            )),
            Err(e) => Err(memvault_actors::StoreFailure::Other(e.to_string())),
        }
    }
}
