//! Erasure, purge and the erasure log: what removes an end user's data for good, as opposed to
//! the soft deletes of `Store`. Implemented for SQLite and PostgreSQL by `erasure_sql.rs`.
//!
//! An erasure is one transaction: the rows go, with everything that cascades from them, and the
//! log row that says so is written in the same commit. A purge empties the content of rows
//! deleted long enough ago and keeps their ids and timestamps.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::StoreResult;
use crate::model::vault::VaultLane;
use crate::model::Lane;

/// What an erasure removed, per kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErasureCounts {
    /// Memories that were current and live (what the workspace's memory limit counts).
    pub memories: u64,
    /// Rows of memories: every version of every chain, deleted ones included.
    pub versions: u64,
    pub vectors: u64,
    pub feedback: u64,
    /// Long-note jobs, with their notes.
    pub jobs: u64,
    /// Vault documents, with their stored bytes, parsed text and status history.
    pub documents: u64,
    pub chunks: u64,
    pub vault_memories: u64,
    /// Citations removed from vault memories that stay (cited by a document of another scope).
    pub citations: u64,
}

/// What erasing removed from the search indexes' point of view.
#[derive(Debug, Clone, Default)]
pub struct Erased {
    pub counts: ErasureCounts,
    /// Current memories removed (the memory index holds only those).
    pub memory_ids: Vec<Uuid>,
    /// Per vault lane: the chunks and vault memories removed.
    pub vault: Vec<(VaultLane, Vec<Uuid>, Vec<Uuid>)>,
}

/// Who asked for an erasure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eraser {
    User(Uuid),
    Key(Uuid),
}

/// A row of the erasure log.
#[derive(Debug, Clone, PartialEq)]
pub struct ErasureRecord {
    pub id: Uuid,
    pub workspace_id: Uuid,
    /// `scope` or `memory`.
    pub kind: String,
    /// Hex SHA-256 of `"<workspace id>:<scope>"`.
    pub scope_hash: String,
    /// The memory id a `memory` erasure named (any version of its chain).
    pub memory_id: Option<Uuid>,
    pub by: Eraser,
    pub counts: ErasureCounts,
    pub at: DateTime<Utc>,
}

#[async_trait]
pub trait ErasureStore: Send + Sync + 'static {
    /// Removes every row of `lane`'s scope in its workspace (see [`ErasureCounts`]) and writes
    /// `record` (its counts filled in) in the same transaction. Vault memories of the scope
    /// that a document of another scope also cites stay, without this scope's citations.
    async fn erase_scope(&self, lane: &Lane, record: &ErasureRecord) -> StoreResult<Erased>;
    /// Removes the whole chain of memory `id` (every version, deleted ones included) from
    /// `lane`, and writes `record`; `None` when the lane holds no such memory (live or not).
    async fn erase_chain(
        &self,
        lane: &Lane,
        id: Uuid,
        record: &ErasureRecord,
    ) -> StoreResult<Option<Erased>>;
    /// The workspace's erasures, newest first, and how many there are.
    async fn erasures(
        &self,
        workspace_id: Uuid,
        limit: i64,
        offset: i64,
    ) -> StoreResult<(Vec<ErasureRecord>, i64)>;
    /// Empties the content of up to `limit` memories deleted before `before_micros` (in the
    /// workspaces `only`, or all): content, its normal form and hash, speaker and thread, the
    /// vector and feedback explanations go; ids and timestamps stay. How many were purged.
    async fn purge_deleted(
        &self,
        before_micros: i64,
        limit: i64,
        only: Option<&[Uuid]>,
    ) -> StoreResult<u64>;
    /// After an erasure: make what it removed unreadable on disk where the backend allows
    /// (SQLite: a checkpoint that truncates the write-ahead log; PostgreSQL keeps dead tuples
    /// until VACUUM, which this does not run). `false` when readers kept it from finishing.
    async fn scrub(&self) -> StoreResult<bool>;
}
