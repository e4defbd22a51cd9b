//! The memories service: saving with deduplication and version chains, listing, reading,
//! editing, deleting, forgetting and feedback. Every operation is confined to one lane
//! (workspace + scope) and admitted by the workspace's actor first.

use std::collections::HashMap;
use std::sync::Arc;

use memvault_actors::{EndpointClass, Maintainer, Workspaces};
use uuid::Uuid;

use crate::config::Fusion;
use crate::embedding::{EmbedError, Embeddings};
use crate::error::{Error, Result};
use crate::judge::UpdateJudge;
use crate::model::accounts::Need;
use crate::model::{
    content_hash, now, to_micros, Category, Embedded, Lane, ListFilter, Memory, NewMemory, Source,
};
use crate::search::{speaker_key, Filter, Kept, NearestAhead, SearchEngine, SearchError};
use crate::services::validate::*;
use crate::services::{admit, Caller, Gate, Principal};
use crate::storage::{FeedbackRecord, Store, Superseded};
use crate::text::specifics::specifics;
use crate::text::supersession::UpdateJudgement;

mod erasure;
pub mod graph;
pub mod inputs;
mod notes;
mod pending;
mod profile;
mod rebuild;
mod records;
pub mod search;
mod transfer;

pub(crate) use transfer::export_line;

pub use graph::{Graph, GraphLink, GraphMeta, GraphNode};
pub use inputs::{
    forget_reason, GraphQuery, ListFields, ListQuery, MemoryAt, MemoryEdit, NewFeedback, NewSave,
    Parsed, ProfileQuery, Save, SaveFields, Scope, SearchFields, SearchQuery,
};
pub use notes::{NoteJobs, COMPLETED, FAILED, QUEUED, RUNNING};
pub(crate) use pending::{Pending, Settled};
pub use profile::Profile;
pub use rebuild::RebuildReport;
pub use records::{
    none_if_empty, Chain, CreateOutcome, Found, MemoryPage, MemoryRecord, NoteAccepted, NoteJob,
    NotePart, SaveStatus, Saved,
};
pub use transfer::{export, ImportReport, IMPORT_BATCH};

pub use crate::services::validate::{MAX_PROJECT_CHARS, MAX_SCOPE_CHARS};
pub const MAX_SEARCH_CHARS: usize = 200;
pub const MAX_EXPLANATION_CHARS: usize = 1_000;
pub const DEFAULT_LIST_LIMIT: i64 = 20;
pub const DEFAULT_CATEGORY: Category = Category::Fact;

// ----- validation ---------------------------------------------------------------------------

/// The lane named by an optional `scope` (absent or empty = unscoped).
pub fn lane(caller: &Caller, scope: Option<&str>) -> Result<Lane> {
    Ok(Scope::parse(scope)?.lane(caller))
}

// ----- the service --------------------------------------------------------------------------

/// Tuning of saving and retrieval (from the settings).
#[derive(Debug, Clone, Copy)]
pub struct Tuning {
    pub max_content_chars: usize,
    pub dedup_threshold: f32,
    pub supersede_min_similarity: f32,
    pub long_note_chars: usize,
    pub fusion: Fusion,
    pub semantic_weight: f32,
    pub profile_lines: usize,
}

/// What the memories service is built from.
pub struct MemoryDeps {
    pub store: Arc<dyn Store>,
    pub workspaces: Workspaces,
    pub embeddings: Embeddings,
    pub engine: Arc<SearchEngine>,
    pub maintainer: Maintainer,
    pub judge: Arc<dyn UpdateJudge>,
    pub metrics: Arc<crate::metrics::Metrics>,
    pub tuning: Tuning,
}

#[derive(Clone)]
pub struct MemoryService {
    store: Arc<dyn Store>,
    workspaces: Workspaces,
    embeddings: Embeddings,
    engine: Arc<SearchEngine>,
    maintainer: Maintainer,
    judge: Arc<dyn UpdateJudge>,
    metrics: Arc<crate::metrics::Metrics>,
    tuning: Tuning,
    jobs: notes::JobsSlot,
    gate: Gate,
}

/// Nearest memories looked at when saving (near-duplicates and supersession candidates).
pub(crate) const SAVE_NEIGHBOURS: usize = 5;

/// A duration in milliseconds, for the debug timings of saves, searches and imports.
fn millis(duration: std::time::Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

impl MemoryService {
    pub fn new(deps: MemoryDeps) -> Self {
        MemoryService {
            gate: Gate::new(deps.store.clone()),
            store: deps.store,
            workspaces: deps.workspaces,
            embeddings: deps.embeddings,
            engine: deps.engine,
            maintainer: deps.maintainer,
            judge: deps.judge,
            metrics: deps.metrics,
            tuning: deps.tuning,
            jobs: Arc::new(std::sync::OnceLock::new()),
        }
    }

    /// Connects the jobs supervisor (start-up; it is built from this service).
    pub fn attach_jobs(&self, jobs: memvault_actors::JobQueue) {
        let _ = self.jobs.set(jobs);
    }

    /// The memories' vector index size, by kind (metrics).
    pub fn index_size(&self) -> [(&'static str, crate::search::IndexSize); 1] {
        [("memories", self.engine.size())]
    }

    /// Schedules upkeep of every index lane that needs it (start-up, and after the
    /// maintainer restarted with an empty queue).
    pub fn schedule_maintenance(&self) {
        for lane in self.engine.lanes() {
            self.maintainer.schedule(lane);
        }
    }

    pub fn tuning(&self) -> Tuning {
        self.tuning
    }

    /// The embedding of a memory's content, tagged with its model.
    async fn embed(&self, content: &str) -> Result<Embedded> {
        let vector = self
            .embeddings
            .embed_document(content.to_string())
            .await
            .map_err(embed_error)?;
        Ok(Embedded {
            model: Arc::from(self.embeddings.model()),
            vector: Arc::from(vector),
        })
    }

    /// Makes memories searchable and schedules index upkeep. Vectors are searchable at once;
    /// the keyword index commits in the background, and a search waits for that commit when
    /// it is pending (`SearchEngine::settle`), so a memory is found by any search made after
    /// its save answered. `flush` waits for the commit here instead (start-up, tests).
    pub(crate) async fn index(
        &self,
        memories: Vec<(Memory, Option<Vec<f32>>)>,
        flush: bool,
    ) -> Result<()> {
        let grown = self.engine.stage(memories).map_err(search_error)?;
        if flush {
            self.engine.flush().await.map_err(search_error)?;
        }
        for lane in grown {
            self.maintainer.schedule(lane);
        }
        Ok(())
    }

    /// Indexes a memory just stored, with the vector it was stored with.
    async fn index_saved(&self, memory: &Memory, embedded: &Embedded, flush: bool) -> Result<()> {
        self.workspaces
            .scope_changed(memory.workspace_id, &memory.scope);
        self.index(
            vec![(memory.clone(), Some(embedded.vector.to_vec()))],
            flush,
        )
        .await
    }

    fn unindex(&self, lane: &Lane, ids: &[Uuid]) {
        self.workspaces
            .scope_changed(lane.workspace_id, &lane.scope);
        if let Err(e) = self.engine.remove(lane, ids) {
            tracing::error!(error = %e, "search index update failed");
        }
    }

    /// A memory changed in place (fields, feedback).
    fn reindex_fields(&self, memory: &Memory) {
        self.workspaces
            .scope_changed(memory.workspace_id, &memory.scope);
        self.engine.refresh(memory);
    }

    /// `POST /api/memories`: a short memory is saved at once (201); a long note is accepted as
    /// a job that splits it into atomic memories (202).
    pub async fn create(&self, who: &Principal, input: Save) -> Result<CreateOutcome> {
        let _writing = self.embeddings.writing();
        let caller = &self
            .gate
            .enter(who, input.workspace_id, Need::Write)
            .await?;
        // Every request admitted counts, valid or not. A new version (`supersedes`) leaves the
        // count of current memories unchanged, so only a plain save reserves a memory slot.
        let permit = admit(
            &self.workspaces,
            caller,
            EndpointClass::Save,
            !input.new_version,
        )
        .await?;
        let draft = self.draft(caller, input.memory?, caller.source);
        if draft.infer
            && draft.supersedes.is_none()
            && chars(&draft.memory.content) > self.tuning.long_note_chars
        {
            drop(permit);
            return self
                .accept_note(caller, draft)
                .await
                .map(CreateOutcome::Accepted);
        }
        let result = self.save_draft(draft).await?;
        if let Some(permit) = permit {
            permit.finish(result.status == SaveStatus::Created);
        }
        self.metrics.saved(
            match result.status {
                SaveStatus::Created => "created",
                SaveStatus::Duplicate => "duplicate",
                SaveStatus::Superseded => "superseded",
            },
            caller.workspace_id,
        );
        Ok(CreateOutcome::Saved(Box::new(result)))
    }

    /// A parsed save as a memory to store in the caller's lane.
    fn draft(&self, caller: &Caller, save: NewSave, source: Source) -> Draft {
        let lane = save.scope.lane(caller);
        Draft {
            memory: NewMemory {
                id: Uuid::now_v7(),
                workspace_id: caller.workspace_id,
                user_id: caller.user_id.clone(),
                category: save.category.unwrap_or(DEFAULT_CATEGORY),
                content: save.content,
                source,
                scope: lane.scope.clone(),
                project: save.project.clone().unwrap_or_default(),
                valid_from: save.valid_from,
                valid_until: save.valid_until,
                created_at: now(),
                origin_id: None,
                thread: save.thread,
                speaker: save.speaker,
                embedding: None,
            },
            lane,
            category_given: save.category.is_some(),
            project_given: save.project.is_some(),
            supersedes: save.supersedes,
            infer: save.infer,
            flush: false,
            ahead: LookedUp::default(),
        }
    }

    /// The save path shared by short saves, the parts of long notes and imports: exact
    /// duplicates, then the nearest memories (fact updates become new versions, near-duplicates
    /// return the existing memory), then a new memory. Every stored memory is searchable
    /// before this returns.
    pub(crate) async fn save_draft(&self, draft: Draft) -> Result<Saved> {
        self.save_draft_in(draft, None).await
    }

    /// Saves a draft as [`Self::save_draft`] does; with `pending` (an import), a new memory is
    /// indexed and added to `pending` instead of being inserted (its status `Created` until
    /// committed, see [`Pending`]), and whatever must read or change stored memories commits
    /// `pending` first.
    pub(crate) async fn save_draft_in(
        &self,
        draft: Draft,
        mut pending: Option<&mut Pending>,
    ) -> Result<Saved> {
        let Draft {
            mut memory,
            lane,
            category_given,
            project_given,
            supersedes,
            infer,
            flush,
            ahead,
        } = draft;

        if let Some(old_id) = supersedes {
            self.commit_pending(pending.as_deref_mut()).await?;
            let old = self.store.memory(&lane, old_id).await?.ok_or_else(|| {
                Error::NotFound(format!("memory to supersede ({old_id}) not found"))
            })?;
            if !project_given {
                memory.project = old.project.clone();
            }
            if !category_given {
                memory.category = old.category;
            }
            if memory.thread.is_empty() {
                memory.thread = old.thread.clone();
            }
            if memory.speaker.is_empty() {
                memory.speaker = old.speaker.clone();
            }
            return self.supersede(&lane, &old, memory, flush).await;
        }

        // An exact duplicate costs one indexed lookup and no embedding; a text that no live
        // memory of the lane's index has costs no lookup.
        let hash = content_hash(&memory.content_norm());
        let existing = match pending
            .as_deref()
            .and_then(|p| p.duplicate(&lane, &memory.project, &hash))
        {
            Some(existing) => Some(existing.clone()),
            None if ahead.new_text => None,
            None if !self.engine.may_hold(&lane, &memory.project, &hash) => None,
            None => {
                self.store
                    .find_duplicate(&lane, &memory.project, &hash)
                    .await?
            }
        };
        if let Some(existing) = existing {
            if !existing.is_expired(memory.created_at) {
                return Ok(saved(&existing, SaveStatus::Duplicate));
            }
            // Saving again what had expired renews it as its next version.
            self.commit_pending(pending.as_deref_mut()).await?;
            return self.supersede(&lane, &existing, memory, flush).await;
        }

        let started = std::time::Instant::now();
        let embedded = match memory.embedding.take() {
            Some(embedded) => embedded,
            None => self.embed(&memory.content).await?,
        };
        let embedded_at = started.elapsed();
        let filter = neighbour_filter(&memory);
        let now = ahead
            .nearest
            .as_ref()
            .filter(|_| infer)
            .and_then(|nearest| {
                self.engine
                    .nearest_now(&lane, &embedded.vector, &filter, nearest)
            });
        let (neighbours, read_ahead) = match now {
            Some(now) => (now.neighbours, now.unedited),
            None if infer => (
                self.engine
                    .nearest(&lane, &embedded.vector, SAVE_NEIGHBOURS, &filter),
                false,
            ),
            None => (Vec::new(), false),
        };
        let searched_at = started.elapsed();
        // The neighbours that a rule below may use (only current, live ones: neither rule uses
        // any other): as the import read them ahead, else as the index keeps them (re-read
        // before a rule acts on one), else read in one query.
        let mut current: HashMap<Uuid, Memory> = HashMap::new();
        let mut kept: HashMap<Uuid, Kept> = HashMap::new();
        let mut wanted: Vec<Uuid> = Vec::new();
        for (rank, n) in neighbours.iter().enumerate() {
            if n.similarity >= self.tuning.supersede_min_similarity
                || (rank == 0 && n.similarity >= self.tuning.dedup_threshold)
            {
                let known = pending
                    .as_deref()
                    .and_then(|p| p.get(&n.id))
                    .or_else(|| ahead.memories.get(&n.id).filter(|_| read_ahead));
                match known {
                    Some(m) => {
                        current.insert(m.id, m.clone());
                    }
                    None => match self.engine.kept(&lane, n.id) {
                        Some(k) => {
                            kept.insert(n.id, k);
                        }
                        None => wanted.push(n.id),
                    },
                }
            }
        }
        if !wanted.is_empty() {
            for m in self.store.current_memories_by_ids(&lane, &wanted).await? {
                current.insert(m.id, m);
            }
        }
        let compared_at = started.elapsed();
        let voice = speaker_key(&memory.speaker);
        // A fact update: the nearest related memory whose value the new one replaces.
        for neighbour in neighbours
            .iter()
            .filter(|n| n.similarity >= self.tuning.supersede_min_similarity)
        {
            let old_text = match (current.get(&neighbour.id), kept.get(&neighbour.id)) {
                (Some(old), _) => {
                    if !related(old, &memory) {
                        continue;
                    }
                    old.content.as_str()
                }
                // Of the new memory's project: the neighbours' filter.
                (None, Some(k)) if same_voice_keys(&k.speaker_key, &voice) => &*k.text,
                _ => continue,
            };
            let judgement = match ahead.verdicts.get(&neighbour.id).filter(|_| read_ahead) {
                Some(judgement) => judgement.clone(),
                None => self.judge.judge(old_text, &memory.content).await,
            };
            if judgement.is_update {
                let old = match current.get(&neighbour.id) {
                    Some(old) => old.clone(),
                    None => match self.reread(&lane, neighbour.id).await? {
                        Some(old) if related(&old, &memory) => old,
                        _ => continue,
                    },
                };
                tracing::debug!(old = %old.id, similarity = neighbour.similarity, reason = %judgement.reason, "fact update detected");
                if !category_given {
                    memory.category = old.category;
                }
                memory.embedding = Some(embedded.clone());
                self.commit_pending(pending.as_deref_mut()).await?;
                match self.supersede(&lane, &old, memory.clone(), flush).await {
                    // A concurrent save retired (or a delete removed) that memory first: this
                    // save goes on as if it had not been a candidate.
                    Err(Error::Conflict(_) | Error::NotFound(_)) => {
                        tracing::debug!(old = %old.id, "fact update raced another change; saving as new");
                        break;
                    }
                    outcome => return outcome,
                }
            }
        }
        // A near-duplicate: the same thing said slightly differently (but with the same
        // numbers and names).
        if let Some(top) = neighbours.first() {
            if top.similarity >= self.tuning.dedup_threshold {
                let existing = match (current.remove(&top.id), kept.get(&top.id)) {
                    (Some(existing), _) => Some(existing),
                    (None, Some(k))
                        if same_voice_keys(&k.speaker_key, &voice)
                            && specifics(&k.text) == specifics(&memory.content) =>
                    {
                        self.reread(&lane, top.id).await?
                    }
                    _ => None,
                };
                if let Some(existing) = existing {
                    if !existing.is_expired(memory.created_at)
                        && same_voice(&existing.speaker, &memory.speaker)
                        && specifics(&existing.content) == specifics(&memory.content)
                    {
                        return Ok(saved(&existing, SaveStatus::Duplicate));
                    }
                }
            }
        }

        if !category_given && infer {
            memory.category = inferred_category(&memory.content);
        }
        memory.embedding = Some(embedded.clone());
        let judged_at = started.elapsed();
        // An import's new memory joins its pending set (committed with it); a save's is
        // inserted now, and the dedup index refuses a concurrent exact duplicate, looked up then.
        let project = memory.project.clone();
        let deferred = pending.is_some();
        let created = match pending {
            Some(pending) => Some(pending.push(&lane, hash.clone(), memory)),
            None => self.store.insert_memory(&memory).await?,
        };
        if let Some(created) = created {
            let stored_at = started.elapsed();
            self.index_saved(&created, &embedded, flush).await?;
            tracing::debug!(
                embed_ms = millis(embedded_at),
                neighbours_ms = millis(searched_at - embedded_at),
                read_ms = millis(compared_at - searched_at),
                judge_ms = millis(judged_at - compared_at),
                insert_ms = millis(stored_at - judged_at),
                index_ms = millis(started.elapsed() - stored_at),
                commit_pending = deferred,
                "memory saved"
            );
            return Ok(saved(&created, SaveStatus::Created));
        }
        match self.store.find_duplicate(&lane, &project, &hash).await? {
            Some(existing) => Ok(saved(&existing, SaveStatus::Duplicate)),
            // The duplicate was deleted in between.
            None => Err(Error::Conflict(
                "a concurrent change to this memory won; retry".to_string(),
            )),
        }
    }

    /// A memory as stored now, when it is still current and live (a rule is about to act on
    /// what the index kept of it).
    async fn reread(&self, lane: &Lane, id: Uuid) -> Result<Option<Memory>> {
        Ok(self.store.current_memories_by_ids(lane, &[id]).await?.pop())
    }

    /// Commits the pending memories in one transaction and records what became of each: one
    /// refused as a concurrent duplicate leaves the indexes again.
    pub(crate) async fn commit_pending(&self, pending: Option<&mut Pending>) -> Result<()> {
        let Some(pending) = pending else {
            return Ok(());
        };
        if pending.is_empty() {
            return Ok(());
        }
        let new = pending.take();
        let rows = self.store.insert_memories(&new).await;
        let mut lanes: Vec<Lane> = Vec::new();
        let mut failed = None;
        for (m, row) in new.iter().zip(rows) {
            let lane = lane_of(m);
            let outcome = match row {
                Ok(Some(_)) => Settled::Created,
                // Not stored: out of the indexes again; the first error is returned (it stops
                // an import) once the others are settled.
                Err(e) => {
                    self.unindex(&lane, &[m.id]);
                    failed.get_or_insert(e);
                    continue;
                }
                Ok(None) => {
                    self.unindex(&lane, &[m.id]);
                    let hash = content_hash(&m.content_norm());
                    match self.store.find_duplicate(&lane, &m.project, &hash).await {
                        Ok(Some(existing)) => Settled::Duplicate(existing.id),
                        Ok(None) => Settled::Lost,
                        Err(e) => {
                            failed.get_or_insert(e);
                            Settled::Lost
                        }
                    }
                }
            };
            pending.settle(m.id, outcome);
            if !lanes.contains(&lane) {
                lanes.push(lane);
            }
        }
        // What was read from the lanes while these were pending (a cached profile) is stale.
        for lane in lanes {
            self.workspaces
                .scope_changed(lane.workspace_id, &lane.scope);
        }
        match failed {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    async fn supersede(
        &self,
        lane: &Lane,
        old: &Memory,
        mut memory: NewMemory,
        flush: bool,
    ) -> Result<Saved> {
        let hash = content_hash(&memory.content_norm());
        if let Some(existing) = self
            .store
            .find_duplicate(lane, &memory.project, &hash)
            .await?
        {
            if existing.id != old.id || !old.is_expired(memory.created_at) {
                return Ok(saved(&existing, SaveStatus::Duplicate));
            }
        }
        let embedded = match memory.embedding.clone() {
            Some(embedded) => embedded,
            None => self.embed(&memory.content).await?,
        };
        memory.embedding = Some(embedded.clone());
        match self.store.supersede(lane, old.id, &memory).await? {
            Superseded::Created(created) => {
                self.unindex(lane, &[old.id]);
                self.index_saved(&created, &embedded, flush).await?;
                Ok(saved(&created, SaveStatus::Superseded))
            }
            Superseded::Duplicate(existing) => Ok(saved(&existing, SaveStatus::Duplicate)),
            Superseded::NotFound => Err(Error::NotFound(format!(
                "memory to supersede ({}) not found",
                old.id
            ))),
            Superseded::NotCurrent => Err(not_current(old.id)),
        }
    }

    /// `GET /api/memories`.
    pub async fn list(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        query: Parsed<ListQuery>,
    ) -> Result<MemoryPage> {
        let caller = &self.gate.enter(who, workspace_id, Need::Read).await?;
        admit(&self.workspaces, caller, EndpointClass::Read, false).await?;
        let query = query?;
        let (limit, offset) = (query.limit, query.offset);
        let filter = ListFilter {
            lane: query.scope.lane(caller),
            categories: query.categories,
            projects: query.projects,
            search: query.search,
            include_expired: query.include_expired,
            exclude_wrong: false,
            created_since: None,
            thread: query.thread,
            now: now(),
            limit,
            offset,
        };
        let (memories, total) = self.store.list_memories(&filter).await?;
        Ok(MemoryPage {
            has_more: offset + (memories.len() as i64) < total,
            memories,
            total,
        })
    }

    /// `GET /api/memories/{id}`.
    pub async fn get(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        at: Parsed<MemoryAt>,
    ) -> Result<Memory> {
        let caller = &self.gate.enter(who, workspace_id, Need::Read).await?;
        admit(&self.workspaces, caller, EndpointClass::Read, false).await?;
        let at = at?;
        self.store
            .memory(&at.scope.lane(caller), at.id)
            .await?
            .ok_or_else(Error::memory_not_found)
    }

    /// `PATCH /api/memories/{id}`.
    pub async fn update(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        at: Parsed<MemoryAt>,
        edit: Parsed<MemoryEdit>,
    ) -> Result<Memory> {
        let caller = &self.gate.enter(who, workspace_id, Need::Write).await?;
        admit(&self.workspaces, caller, EndpointClass::Write, false).await?;
        let at = at?;
        let (lane, id) = (at.scope.lane(caller), at.id);
        let MemoryEdit { content, patch } = edit?;
        let current = self
            .store
            .memory(&lane, id)
            .await?
            .ok_or_else(Error::memory_not_found)?;
        if !current.is_current {
            return Err(not_current(id));
        }
        let valid_from = patch.valid_from.unwrap_or(current.valid_from);
        let valid_until = patch.valid_until.unwrap_or(current.valid_until);
        validity(valid_from, valid_until)?;

        match content.filter(|c| *c != current.content) {
            Some(content) => {
                let embedded = self.embed(&content).await?;
                let next = NewMemory {
                    id: Uuid::now_v7(),
                    workspace_id: caller.workspace_id,
                    user_id: caller.user_id.clone(),
                    content,
                    source: current.source,
                    category: patch.category.unwrap_or(current.category),
                    scope: lane.scope.clone(),
                    project: patch
                        .project
                        .clone()
                        .unwrap_or_else(|| current.project.clone()),
                    valid_from,
                    valid_until,
                    created_at: now(),
                    origin_id: current.origin_id,
                    thread: current.thread.clone(),
                    speaker: current.speaker.clone(),
                    embedding: Some(embedded.clone()),
                };
                match self.store.supersede(&lane, id, &next).await? {
                    Superseded::Created(created) => {
                        self.unindex(&lane, &[id]);
                        self.index_saved(&created, &embedded, false).await?;
                        Ok(created)
                    }
                    Superseded::Duplicate(existing) => Err(Error::Conflict(format!(
                        "memory {} already holds this content in this scope and project",
                        existing.id
                    ))),
                    Superseded::NotFound => Err(Error::memory_not_found()),
                    Superseded::NotCurrent => Err(not_current(id)),
                }
            }
            None if patch.is_empty() => Ok(current),
            None => match self
                .store
                .update_memory_fields(&lane, id, &patch, to_micros(now()))
                .await?
            {
                Some(updated) => {
                    self.reindex_fields(&updated);
                    Ok(updated)
                }
                None => Err(not_current(id)),
            },
        }
    }

    /// `DELETE /api/memories/{id}`: soft-deletes this one memory.
    pub async fn delete(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        at: Parsed<MemoryAt>,
    ) -> Result<()> {
        let caller = &self.gate.enter(who, workspace_id, Need::Write).await?;
        admit(&self.workspaces, caller, EndpointClass::Write, false).await?;
        let at = at?;
        let (lane, id) = (at.scope.lane(caller), at.id);
        let was_current = self
            .store
            .delete_memory(&lane, id, to_micros(now()))
            .await?
            .ok_or_else(Error::memory_not_found)?;
        if was_current {
            self.unindex(&lane, &[id]);
            self.workspaces.memories_removed(caller.workspace_id, 1);
        }
        Ok(())
    }

    /// `POST /api/memories/{id}/forget`: soft-deletes the whole chain.
    pub async fn forget(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        at: Parsed<MemoryAt>,
        reason: Parsed<Option<String>>,
    ) -> Result<()> {
        let caller = &self.gate.enter(who, workspace_id, Need::Write).await?;
        admit(&self.workspaces, caller, EndpointClass::Write, false).await?;
        let at = at?;
        let (lane, id) = (at.scope.lane(caller), at.id);
        let reason = reason?;
        // The chain's current version leaves the index (the others are not in it).
        let chain: Vec<Uuid> = match self.store.memory(&lane, id).await? {
            Some(memory) => self
                .store
                .chain(&lane, memory.root_id)
                .await?
                .iter()
                .map(|m| m.id)
                .collect(),
            None => Vec::new(),
        };
        let removed = self
            .store
            .forget_chain(&lane, id, to_micros(now()))
            .await?
            .ok_or_else(Error::memory_not_found)?;
        self.unindex(&lane, &chain);
        tracing::info!(memory_id = %id, reason = %crate::loggable::loggable(reason.as_deref().unwrap_or("")), "memory chain forgotten");
        self.workspaces
            .memories_removed(caller.workspace_id, removed);
        Ok(())
    }

    /// `GET /api/memories/{id}/history`.
    pub async fn history(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        at: Parsed<MemoryAt>,
    ) -> Result<Chain> {
        let caller = &self.gate.enter(who, workspace_id, Need::Read).await?;
        admit(&self.workspaces, caller, EndpointClass::Read, false).await?;
        let at = at?;
        let (lane, id) = (at.scope.lane(caller), at.id);
        let memory = self
            .store
            .memory(&lane, id)
            .await?
            .ok_or_else(Error::memory_not_found)?;
        // Newest first; the current version is taken out, or the newest when it was deleted.
        let mut chain = self.store.chain(&lane, memory.root_id).await?;
        if chain.is_empty() {
            return Err(Error::memory_not_found());
        }
        let current = chain.remove(chain.iter().position(|m| m.is_current).unwrap_or(0));
        Ok(Chain {
            current,
            history: chain,
        })
    }

    /// `POST /api/memories/{id}/feedback`.
    pub async fn feedback(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        at: Parsed<MemoryAt>,
        feedback: Parsed<NewFeedback>,
    ) -> Result<()> {
        let caller = &self.gate.enter(who, workspace_id, Need::Write).await?;
        admit(&self.workspaces, caller, EndpointClass::Feedback, false).await?;
        let at = at?;
        let (lane, id) = (at.scope.lane(caller), at.id);
        let NewFeedback {
            rating,
            explanation,
        } = feedback?;
        let record = FeedbackRecord {
            id: Uuid::now_v7(),
            rating,
            explanation,
            at_micros: to_micros(now()),
        };
        if !self.store.record_feedback(&lane, id, &record).await? {
            return Err(Error::memory_not_found());
        }
        // Ratings change ranking and `wrong` / `outdated` take it out of search.
        if let Some(memory) = self.store.memory(&lane, id).await? {
            self.reindex_fields(&memory);
        }
        Ok(())
    }
}

/// A validated save, ready for the save path.
#[derive(Debug, Clone)]
pub(crate) struct Draft {
    pub memory: NewMemory,
    pub lane: Lane,
    pub category_given: bool,
    pub project_given: bool,
    pub supersedes: Option<Uuid>,
    /// Near-duplicates, fact updates, category inference and long-note splitting apply.
    pub infer: bool,
    /// Wait for the keyword index commit before returning (searches wait for it anyway).
    pub flush: bool,
    /// What its import batch looked up for it before saving its lines.
    pub ahead: LookedUp,
}

/// What an import batch looks up for its lines at once, before it saves them one after the
/// other (`search_ahead` and `read_ahead` in `transfer.rs`); each line uses it only where
/// nothing changed since.
#[derive(Debug, Clone, Default)]
pub(crate) struct LookedUp {
    /// Its nearest memories, searched with the rest of the batch.
    pub nearest: Option<NearestAhead>,
    /// Current memories near the batch's lines, read after their nearest were searched: used
    /// when no memory of the lane was edited since
    /// ([`crate::search::NearestNow::unedited`]).
    pub memories: Arc<HashMap<Uuid, Memory>>,
    /// No current memory of its lane and project had its text when the batch was read, and
    /// no line before it in the batch has it: the exact-duplicate lookup is skipped (the dedup
    /// index still refuses a duplicate stored since, at the commit).
    pub new_text: bool,
    /// The judge's verdicts on it against memories of `memories` (an offline judge's, given
    /// in parallel ahead), used with them.
    pub verdicts: HashMap<Uuid, UpdateJudgement>,
}

/// The memories a new one is compared with: live ones of its project, unexpired when it was
/// made.
pub(crate) fn neighbour_filter(memory: &NewMemory) -> Filter {
    Filter {
        projects: vec![memory.project.clone()],
        categories: Vec::new(),
        now_micros: to_micros(memory.created_at),
    }
}

/// Whether two memories may be one fact (a near-duplicate, or an update of the other): not when
/// both name a speaker and the speakers differ ("I live in Paris" said by two people is two
/// facts). Names compare as search matches them (`speaker_key`: case and punctuation aside).
fn same_voice(a: &str, b: &str) -> bool {
    same_voice_keys(&speaker_key(a), &speaker_key(b))
}

/// [`same_voice`] of two speakers' keys ([`speaker_key`]).
fn same_voice_keys(a: &str, b: &str) -> bool {
    a.is_empty() || b.is_empty() || a == b
}

/// Whether a stored memory may be the one a new memory updates: of its project, and in the
/// same voice.
fn related(old: &Memory, new: &NewMemory) -> bool {
    old.project == new.project && same_voice(&old.speaker, &new.speaker)
}

fn inferred_category(content: &str) -> Category {
    crate::text::category::infer_category(content)
        .parse()
        .unwrap_or(DEFAULT_CATEGORY)
}

fn embed_error(error: EmbedError) -> Error {
    match error {
        EmbedError::Remote(_) => Error::Unavailable(error.to_string()),
        EmbedError::ModelMissing { .. } | EmbedError::Load(_) | EmbedError::Inference(_) => {
            Error::Internal(error.to_string())
        }
    }
}

fn search_error(error: SearchError) -> Error {
    Error::Internal(error.to_string())
}

fn lane_of(memory: &NewMemory) -> Lane {
    Lane {
        workspace_id: memory.workspace_id,
        scope: memory.scope.clone(),
    }
}

fn saved(memory: &Memory, status: SaveStatus) -> Saved {
    Saved {
        memory: memory.clone(),
        status,
    }
}

fn not_current(id: Uuid) -> Error {
    Error::Conflict(format!(
        "memory {id} is not the current version of its chain; use its current version (see its history)"
    ))
}
