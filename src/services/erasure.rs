//! Erasure (issue 33): removing an end user's data for good, recording that it was done
//! without recording who the end user was, and handing their data out before.
//!
//! Rules: erasing a scope takes an owner or admin (`Need::Manage`); erasing one memory's chain
//! takes what deleting it takes (`Need::Write`); reading the erasure log and exporting a scope
//! take an owner (`Need::Own`). Before the rows go, the scope's jobs and documents in progress
//! are stopped; after, the indexes, the workspace's counts and cached profiles forget them and
//! the store scrubs what it can (`ErasureStore::scrub`).

use std::sync::Arc;

use futures_util::TryStreamExt;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::access::Gate;
use super::memories::{lane, MemoryService};
use super::vault::VaultService;
use super::{admit, Caller, Identity, Principal};
use crate::error::{Error, Result};
use crate::model::accounts::Need;
use crate::model::{now, Lane};
use crate::storage::erasure::{Eraser, ErasureCounts, ErasureRecord};
use crate::storage::Store;
use memvault_actors::{EndpointClass, Workspaces};

/// Erasures listed per page, at most.
pub const MAX_ERASURES_PAGE: i64 = 100;
/// Memories read per database page while exporting.
const EXPORT_PAGE: i64 = 500;

#[derive(Clone)]
pub struct ErasureService {
    store: Arc<dyn Store>,
    gate: Gate,
    workspaces: Workspaces,
    memories: MemoryService,
    vault: Arc<VaultService>,
}

/// Hex SHA-256 of `"<workspace id>:<scope>"`: lets an operator who is given a scope check
/// whether it was erased, without the log naming anyone.
pub fn scope_hash(workspace_id: Uuid, scope: &str) -> String {
    hex::encode(Sha256::digest(format!("{workspace_id}:{scope}").as_bytes()))
}

fn eraser(who: &Principal) -> Eraser {
    match &who.identity {
        Identity::Key { key_id, .. } => Eraser::Key(*key_id),
        Identity::User { user_id, .. } | Identity::Token { user_id, .. } => Eraser::User(*user_id),
    }
}

impl ErasureService {
    pub fn new(
        store: Arc<dyn Store>,
        workspaces: Workspaces,
        memories: MemoryService,
        vault: Arc<VaultService>,
    ) -> Self {
        ErasureService {
            gate: Gate::new(store.clone()),
            store,
            workspaces,
            memories,
            vault,
        }
    }

    /// The lane of a named, non-empty scope.
    fn scope_lane(caller: &Caller, scope: &str) -> Result<Lane> {
        if scope.trim().is_empty() {
            return Err(Error::validation(
                "scope",
                "is required: name the scope to erase (the unscoped lane is not an end user's)",
            ));
        }
        lane(caller, Some(scope))
    }

    fn record(who: &Principal, lane: &Lane, kind: &str, memory_id: Option<Uuid>) -> ErasureRecord {
        ErasureRecord {
            id: Uuid::now_v7(),
            workspace_id: lane.workspace_id,
            kind: kind.to_string(),
            scope_hash: scope_hash(lane.workspace_id, &lane.scope),
            memory_id,
            by: eraser(who),
            counts: ErasureCounts::default(),
            at: now(),
        }
    }

    /// `DELETE /api/scopes/{scope}`: every memory (all versions), vector, feedback, job, vault
    /// document (with its bytes, text, chunks) and extracted memory of the scope; what it
    /// removed, as recorded in the log.
    pub async fn erase_scope(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        scope: &str,
    ) -> Result<ErasureRecord> {
        let caller = &self.gate.enter(who, workspace_id, Need::Manage).await?;
        admit(&self.workspaces, caller, EndpointClass::Write, false).await?;
        let lane = Self::scope_lane(caller, scope)?;
        self.memories.release_jobs_of(&lane).await?;
        self.vault.cancel_documents_of(&lane).await?;
        let mut record = Self::record(who, &lane, "scope", None);
        let erased = self.store.erase_scope(&lane, &record).await?;
        // Committed: what follows cannot undo it, so it only logs what fails.
        self.memories.forget_erased(&lane, &erased);
        if let Err(error) = self.vault.forget_erased(&erased) {
            tracing::error!(%error, erasure_id = %record.id, "cannot remove erased vault entries from the index");
        }
        self.scrub().await;
        record.counts = erased.counts;
        tracing::info!(
            workspace_id = %lane.workspace_id,
            erasure_id = %record.id,
            memories = erased.counts.versions,
            documents = erased.counts.documents,
            "scope erased"
        );
        Ok(record)
    }

    /// `POST /api/memories/{id}/erase`: the memory's whole chain, every version, deleted ones
    /// included, and the text of the finished note it was split from.
    pub async fn erase_memory(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        scope: Option<&str>,
        raw_id: &str,
    ) -> Result<ErasureRecord> {
        let caller = &self.gate.enter(who, workspace_id, Need::Write).await?;
        admit(&self.workspaces, caller, EndpointClass::Write, false).await?;
        let lane = lane(caller, scope)?;
        let id = Uuid::parse_str(raw_id).map_err(|_| Error::memory_not_found())?;
        let mut record = Self::record(who, &lane, "memory", Some(id));
        let erased = self
            .store
            .erase_chain(&lane, id, &record)
            .await?
            .ok_or_else(Error::memory_not_found)?;
        self.memories.forget_erased(&lane, &erased);
        self.scrub().await;
        record.counts = erased.counts;
        Ok(record)
    }

    async fn scrub(&self) {
        // The erasure is committed; an unfinished scrub is done again by the next purge round.
        match self.store.scrub().await {
            Ok(true) => {}
            Ok(false) => tracing::warn!("readers kept the write-ahead log from being truncated after an erasure; the next purge round tries again"),
            Err(error) => tracing::warn!(%error, "cannot scrub the database after an erasure"),
        }
    }

    /// `GET /api/workspaces/{id}/erasures`: newest first, and how many there are.
    pub async fn erasures(
        &self,
        who: &Principal,
        workspace_id: Uuid,
        limit: Option<i64>,
        offset: Option<i64>,
    ) -> Result<(Vec<ErasureRecord>, i64)> {
        let caller = &self.gate.enter(who, Some(workspace_id), Need::Own).await?;
        admit(&self.workspaces, caller, EndpointClass::Read, false).await?;
        let limit = limit.unwrap_or(20);
        if !(1..=MAX_ERASURES_PAGE).contains(&limit) {
            return Err(Error::validation(
                "limit",
                format!("must be between 1 and {MAX_ERASURES_PAGE}"),
            ));
        }
        let offset = offset.unwrap_or(0);
        if !(0..=i32::MAX as i64).contains(&offset) {
            return Err(Error::validation(
                "offset",
                format!("must be between 0 and {}", i32::MAX),
            ));
        }
        Ok(self
            .store
            .erasures(caller.workspace_id, limit, offset)
            .await?)
    }

    /// `GET /api/scopes/{scope}/export`: the scope's memories, every live version, oldest first,
    /// as JSON lines in the format `memvault admin import` reads, one page at a time.
    pub async fn export_scope(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        scope: &str,
    ) -> Result<impl futures_util::Stream<Item = Result<Vec<u8>>> + Send + 'static> {
        let caller = &self.gate.enter(who, workspace_id, Need::Own).await?;
        admit(&self.workspaces, caller, EndpointClass::Read, false).await?;
        let lane = Self::scope_lane(caller, scope)?;
        let store = self.store.clone();
        Ok(futures_util::stream::try_unfold(Some(0i64), move |after| {
            let (store, lane) = (store.clone(), lane.clone());
            async move {
                let Some(after) = after else { return Ok(None) };
                let page = store
                    .workspace_memories_page(
                        lane.workspace_id,
                        Some(&lane.scope),
                        after,
                        EXPORT_PAGE,
                    )
                    .await?;
                let Some((last, _)) = page.last() else {
                    return Ok(None);
                };
                let next = (page.len() as i64 == EXPORT_PAGE).then_some(*last);
                let mut lines = Vec::new();
                for (_, memory) in &page {
                    super::memories::export_line(memory, &mut lines)?;
                }
                Ok(Some((lines, next)))
            }
        })
        // The answer is already 200 when a page fails: the stream is cut (the client sees an
        // incomplete body) and the cause is logged here.
        .inspect_err(|error| tracing::error!(%error, "a scope export failed midway")))
    }
}

/// Rows purged per statement, and statements per round: a round stays short, and a backlog
/// is worked off over the following rounds.
const PURGE_BATCH: i64 = 200;
const PURGE_BATCHES_PER_ROUND: usize = 10;

/// The purge of deleted content: every round empties the content of memories deleted or
/// forgotten more than `retention` ago (ids and timestamps stay). On a cluster node, only in
/// the workspaces it serves (their writes are its alone).
pub struct Purger {
    store: Arc<dyn Store>,
    retention: chrono::Duration,
    cluster: Option<Arc<super::cluster::Cluster>>,
}

impl Purger {
    pub fn new(
        store: Arc<dyn Store>,
        retention_days: u64,
        cluster: Option<Arc<super::cluster::Cluster>>,
    ) -> Self {
        Purger {
            store,
            retention: chrono::Duration::days(retention_days.min(36_500) as i64),
            cluster,
        }
    }

    /// One round; how many memories were purged.
    pub async fn round(&self) -> Result<u64> {
        let before = crate::model::to_micros(now() - self.retention);
        let only: Option<Vec<Uuid>> = self
            .cluster
            .as_ref()
            .map(|cluster| cluster.owned().into_iter().map(|(w, _)| w).collect());
        let mut purged = 0;
        for _ in 0..PURGE_BATCHES_PER_ROUND {
            let n = self
                .store
                .purge_deleted(before, PURGE_BATCH, only.as_deref())
                .await?;
            purged += n;
            if n < PURGE_BATCH as u64 {
                break;
            }
        }
        if purged > 0 {
            tracing::info!(purged, "purged the content of deleted memories");
        }
        // Every round, so that a scrub readers kept from finishing (after an erasure or a
        // purge) is done soon after.
        if !self.store.scrub().await? {
            tracing::debug!("readers kept the write-ahead log from being truncated; next round");
        }
        Ok(purged)
    }
}

#[async_trait::async_trait]
impl memvault_actors::Beat for Purger {
    async fn beat(&self) -> std::result::Result<(), String> {
        self.round().await.map(|_| ()).map_err(|e| e.to_string())
    }
}
