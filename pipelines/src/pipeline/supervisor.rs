//! The ingestion supervisor: queues documents, runs each attempt as a linked
//! [`DocumentPipeline`] generation (at most `max_documents` at once), kills generations that go
//! stale, and decides what an ended generation means: completed, failed for good, or retried
//! after a capped exponential backoff. It is the only writer of a document's status.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use memvault_actors::{CallFailure, Child, Current};
use ractor::{
    Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SpawnErr,
    SupervisionEvent,
};
use uuid::Uuid;

use super::document::{DocumentArgs, DocumentMsg, DocumentPipeline, Shared};
use super::progress::is_stale;
use super::queue::{FairQueue, Queued};
use super::{
    backoff, Engines, FailureReason, Outcome, Phase, PhaseError, PhaseSlots, PipelineConfig,
    Status, StatusChange,
};

pub struct IngestSupervisor;

pub struct SupervisorArgs {
    pub engines: Engines,
    pub config: PipelineConfig,
}

/// Why the supervisor ended a generation itself.
#[derive(Debug, Clone)]
enum Ending {
    Stale(String),
    Killed(String),
    Cancelled,
    /// The workspace moved to another node of a cluster: nothing is recorded here.
    Released,
}

impl Ending {
    /// Why a generation ended this way failed; `None` when cancelled (not a failure).
    fn failure(self) -> Option<(FailureReason, String)> {
        match self {
            Ending::Stale(message) => Some((FailureReason::Stale, message)),
            Ending::Killed(message) => Some((FailureReason::Killed, message)),
            Ending::Cancelled | Ending::Released => None,
        }
    }
}

struct Generation {
    id: Uuid,
    workspace: Uuid,
    attempt: u32,
    actor: ActorRef<DocumentMsg>,
    shared: Arc<Shared>,
    ending: Option<Ending>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IngestStats {
    pub running: usize,
    pub queued: usize,
    /// Waiting for a retry's backoff.
    pub waiting: usize,
    pub completed: u64,
    pub failed: u64,
    pub retried: u64,
}

pub struct SupervisorState {
    engines: Engines,
    config: Arc<PipelineConfig>,
    slots: PhaseSlots,
    queue: FairQueue,
    running: HashMap<ActorId, Generation>,
    /// Waiting for a retry's backoff.
    /// Documents waiting for a retry's backoff, with their workspace.
    waiting: HashMap<Uuid, Uuid>,
    stats: IngestStats,
}

pub enum SupervisorMsg {
    /// Process a document of `workspace` from its last committed phase, as generation
    /// `attempt` (ignored when it is already queued, running or waiting). A generation past
    /// `max_attempts` is not run: the document is `failed` at once (it was resumed after
    /// attempts that never ended, e.g. because they took the whole server down).
    Submit {
        id: Uuid,
        workspace: Uuid,
        attempt: u32,
    },
    /// Stop a document's work: `true` when there was work to stop (its status becomes
    /// `cancelled`).
    Cancel {
        id: Uuid,
        reply: RpcReplyPort<bool>,
    },
    /// Kill a document's running generation as a crash would (chaos drills): `true` when one
    /// was running. It is retried like any failed generation.
    Kill {
        id: Uuid,
        reply: RpcReplyPort<bool>,
    },
    /// A backoff elapsed: queue generation `attempt`.
    Retry {
        id: Uuid,
        workspace: Uuid,
        attempt: u32,
    },
    /// Drop every document of a workspace, running, queued or waiting, without recording
    /// anything: the workspace moved to another node of a cluster, which resumes them from
    /// storage. Answers how many were dropped.
    Release {
        workspace: Uuid,
        reply: RpcReplyPort<usize>,
    },
    /// Kill generations whose progress went stale (sent on an interval).
    CheckStale,
    GetStats(RpcReplyPort<IngestStats>),
}

impl SupervisorState {
    fn is_known(&self, id: Uuid) -> bool {
        self.waiting.contains_key(&id)
            || self.queue.contains(id)
            || self.running.values().any(|g| g.id == id)
    }

    fn running_of(&mut self, id: Uuid) -> Option<&mut Generation> {
        self.running.values_mut().find(|g| g.id == id)
    }

    fn observe(&self, outcome: Outcome, phase: Option<Phase>, reason: Option<FailureReason>) {
        if let Some(observer) = &self.engines.observer {
            observer.generation_ended(outcome, phase, reason);
        }
    }

    /// Whether the change applied (not when the document left the pipeline meanwhile, or the
    /// store failed: then the status stays as it was, and a restart resumes from storage).
    async fn set_status(&self, id: Uuid, change: StatusChange) -> bool {
        let status = change.status;
        match self.engines.store.set_status(id, change).await {
            Ok(applied) => applied,
            Err(error) => {
                tracing::error!(document_id = %id, status = status.as_str(), %error, "cannot persist a document status");
                false
            }
        }
    }

    /// A generation ended without finishing: retry after a backoff, or fail for good.
    async fn retry_or_fail(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        id: Uuid,
        workspace: Uuid,
        attempt: u32,
        phase: Phase,
        (reason, error): (FailureReason, String),
    ) {
        if attempt >= self.config.max_attempts {
            tracing::error!(document_id = %id, attempt, phase = phase.as_str(), reason = reason.as_str(), %error, "document failed, giving up");
            self.stats.failed += 1;
            self.observe(Outcome::Failed, Some(phase), Some(reason));
            self.set_status(
                id,
                StatusChange {
                    status: Status::Failed,
                    phase: Some(phase),
                    attempts: attempt,
                    message: Some(error),
                },
            )
            .await;
            return;
        }
        let delay = backoff(attempt, self.config.backoff_base, self.config.backoff_cap);
        tracing::warn!(document_id = %id, attempt, phase = phase.as_str(), reason = reason.as_str(), %error, retry_in_ms = delay.as_millis() as u64, "document generation failed, retrying");
        self.stats.retried += 1;
        self.observe(Outcome::Retried, Some(phase), Some(reason));
        self.set_status(
            id,
            StatusChange {
                status: Status::Retrying,
                phase: Some(phase),
                attempts: attempt,
                message: Some(error),
            },
        )
        .await;
        self.waiting.insert(id, workspace);
        myself.send_after(delay, move || SupervisorMsg::Retry {
            id,
            workspace,
            attempt: attempt + 1,
        });
    }

    /// Documents running per workspace.
    fn running_per_workspace(&self) -> HashMap<Uuid, usize> {
        let mut counts = HashMap::new();
        for generation in self.running.values() {
            *counts.entry(generation.workspace).or_insert(0) += 1;
        }
        counts
    }

    /// Starts queued documents while there is room, workspaces taking turns.
    async fn start_ready(&mut self, myself: &ActorRef<SupervisorMsg>) {
        while self.running.len() < self.config.max_documents.max(1) {
            let running = self.running_per_workspace();
            let Some(Queued {
                workspace,
                id,
                attempt,
            }) = self
                .queue
                .next(&running, self.config.max_documents_per_workspace)
            else {
                return;
            };
            // The attempt is persisted before any phase runs: a generation that takes the whole
            // server down still counts, so a restart cannot resume it forever. A document that
            // left the pipeline since it was queued (cancelled or deleted while this supervisor
            // was being restarted, or finished before a resubmission) is not started.
            match self
                .engines
                .store
                .set_status(
                    id,
                    StatusChange {
                        status: Status::Processing,
                        phase: None,
                        attempts: attempt,
                        message: None,
                    },
                )
                .await
            {
                Ok(true) => {}
                Ok(false) => {
                    tracing::info!(document_id = %id, "document no longer in the pipeline; not started");
                    continue;
                }
                Err(error) => {
                    self.retry_or_fail(
                        myself,
                        id,
                        workspace,
                        attempt,
                        Phase::Parse,
                        (FailureReason::Transient, format!("storage: {error}")),
                    )
                    .await;
                    continue;
                }
            }
            let shared = Arc::new(Shared::default());
            let args = DocumentArgs {
                id,
                attempt,
                engines: self.engines.clone(),
                config: self.config.clone(),
                slots: self.slots.clone(),
                shared: shared.clone(),
            };
            match Actor::spawn_linked(None, DocumentPipeline, args, myself.get_cell()).await {
                Ok((actor, _)) => {
                    tracing::debug!(document_id = %id, attempt, "document generation started");
                    self.running.insert(
                        actor.get_id(),
                        Generation {
                            id,
                            workspace,
                            attempt,
                            actor,
                            shared,
                            ending: None,
                        },
                    );
                }
                Err(error) => {
                    self.retry_or_fail(
                        myself,
                        id,
                        workspace,
                        attempt,
                        Phase::Parse,
                        (
                            FailureReason::Transient,
                            format!("cannot start the pipeline: {error}"),
                        ),
                    )
                    .await;
                }
            }
        }
    }

    /// Decides what an ended generation means.
    async fn ended(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        generation: Generation,
        crash: Option<String>,
    ) {
        let Generation {
            id,
            workspace,
            attempt,
            shared,
            ending,
            ..
        } = generation;
        let phase = shared.progress.phase();
        let outcome = shared.outcome.lock().ok().and_then(|mut slot| slot.take());
        let failure = match (ending, outcome) {
            (Some(ending), _) => match ending.failure() {
                Some(failure) => failure,
                None => return,
            },
            (None, Some(Ok(()))) => {
                self.stats.completed += 1;
                self.observe(Outcome::Completed, Some(Phase::Extract), None);
                tracing::info!(document_id = %id, attempt, "document completed");
                self.set_status(
                    id,
                    StatusChange {
                        status: Status::Completed,
                        phase: Some(Phase::Extract),
                        attempts: attempt,
                        message: None,
                    },
                )
                .await;
                return;
            }
            (None, Some(Err(PhaseError::Permanent(error)))) => {
                tracing::warn!(document_id = %id, phase = phase.as_str(), %error, "document failed");
                self.stats.failed += 1;
                self.observe(Outcome::Failed, Some(phase), Some(FailureReason::Permanent));
                self.set_status(
                    id,
                    StatusChange {
                        status: Status::Failed,
                        phase: Some(phase),
                        attempts: attempt,
                        message: Some(error),
                    },
                )
                .await;
                return;
            }
            (None, Some(Err(PhaseError::Transient(error)))) => (FailureReason::Transient, error),
            (None, None) => (
                FailureReason::Crashed,
                format!(
                    "the {} phase crashed: {}",
                    phase.as_str(),
                    crash.unwrap_or_else(|| "stopped unexpectedly".to_string())
                ),
            ),
        };
        self.retry_or_fail(myself, id, workspace, attempt, phase, failure)
            .await;
    }
}

impl Actor for IngestSupervisor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = SupervisorArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: SupervisorArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        myself.send_interval(args.config.check_every, || SupervisorMsg::CheckStale);
        Ok(SupervisorState {
            engines: args.engines,
            slots: PhaseSlots::new(args.config.max_per_phase),
            config: Arc::new(args.config),
            queue: FairQueue::default(),
            running: HashMap::new(),
            waiting: HashMap::new(),
            stats: IngestStats::default(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SupervisorMsg::Submit {
                id,
                workspace,
                attempt,
            } => {
                let attempt = attempt.max(1);
                if state.is_known(id) {
                    // Already queued, running or waiting.
                } else if attempt > state.config.max_attempts {
                    let made = attempt - 1;
                    let applied = state
                        .set_status(
                            id,
                            StatusChange {
                                status: Status::Failed,
                                phase: None,
                                attempts: made,
                                message: Some(format!(
                                    "processing was interrupted {made} times (the server or its ingestion supervisor stopped during it); the document is not resumed again"
                                )),
                            },
                        )
                        .await;
                    // Counted once: a second resubmission finds the document failed already.
                    if applied {
                        tracing::error!(document_id = %id, attempts = made, "document interrupted on every attempt, giving up");
                        state.stats.failed += 1;
                        state.observe(Outcome::Failed, None, Some(FailureReason::Interrupted));
                    }
                } else {
                    state.queue.push(Queued {
                        workspace,
                        id,
                        attempt,
                    });
                }
            }
            SupervisorMsg::Retry {
                id,
                workspace,
                attempt,
            } => {
                // Gone from `waiting`: cancelled during the backoff.
                if state.waiting.remove(&id).is_some() {
                    state.queue.push(Queued {
                        workspace,
                        id,
                        attempt,
                    });
                }
            }
            SupervisorMsg::Cancel { id, reply } => {
                let mut found = state.waiting.remove(&id).is_some();
                found |= state.queue.remove(id);
                let mut attempts = 0;
                if let Some(generation) = state.running_of(id) {
                    generation.ending = Some(Ending::Cancelled);
                    generation.actor.kill();
                    attempts = generation.attempt;
                    found = true;
                }
                if found {
                    state
                        .set_status(
                            id,
                            StatusChange {
                                status: Status::Cancelled,
                                phase: None,
                                attempts,
                                message: Some("cancelled on request".to_string()),
                            },
                        )
                        .await;
                }
                let _ = reply.send(found);
            }
            SupervisorMsg::Release { workspace, reply } => {
                let mut dropped = state.queue.remove_workspace(workspace);
                let before = state.waiting.len();
                state.waiting.retain(|_, w| *w != workspace);
                dropped += before - state.waiting.len();
                for generation in state.running.values_mut() {
                    if generation.workspace == workspace && generation.ending.is_none() {
                        generation.ending = Some(Ending::Released);
                        generation.actor.kill();
                        dropped += 1;
                    }
                }
                let _ = reply.send(dropped);
            }
            SupervisorMsg::Kill { id, reply } => {
                let killed = match state.running_of(id) {
                    Some(generation) if generation.ending.is_none() => {
                        let phase = generation.shared.progress.phase();
                        generation.ending = Some(Ending::Killed(format!(
                            "the {} phase was killed",
                            phase.as_str()
                        )));
                        generation.actor.kill();
                        true
                    }
                    _ => false,
                };
                let _ = reply.send(killed);
            }
            SupervisorMsg::CheckStale => {
                let stale_after = state.config.stale_after;
                for generation in state.running.values_mut() {
                    let progress = &generation.shared.progress;
                    let silent = progress.silent_for();
                    if generation.ending.is_none()
                        && is_stale(silent, progress.is_waiting(), stale_after)
                    {
                        let phase = progress.phase();
                        tracing::warn!(document_id = %generation.id, phase = phase.as_str(), silent_ms = silent.as_millis() as u64, "document generation stale, killing it");
                        generation.ending = Some(Ending::Stale(format!(
                            "the {} phase made no progress for {} s",
                            phase.as_str(),
                            silent.as_secs().max(1)
                        )));
                        generation.actor.kill();
                    }
                }
            }
            SupervisorMsg::GetStats(reply) => {
                let _ = reply.send(IngestStats {
                    running: state.running.len(),
                    queued: state.queue.len(),
                    waiting: state.waiting.len(),
                    ..state.stats
                });
            }
        }
        state.start_ready(&myself).await;
        Ok(())
    }

    /// Overridden: the default would stop the supervisor when a generation dies.
    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, crash) = match event {
            SupervisionEvent::ActorTerminated(cell, _, reason) => (cell, reason),
            SupervisionEvent::ActorFailed(cell, error) => (cell, Some(error.to_string())),
            SupervisionEvent::ActorStarted(_) | SupervisionEvent::ProcessGroupChanged(_) => {
                return Ok(())
            }
        };
        if let Some(generation) = state.running.remove(&cell.get_id()) {
            state.ended(&myself, generation, crash).await;
        }
        state.start_ready(&myself).await;
        Ok(())
    }
}

/// The handle the server uses; every call has a timeout. It follows the supervisor across
/// restarts: a restarted supervisor has forgotten its queue (its generations died with it),
/// and its supervisor's recovery submits every unfinished document again from storage.
#[derive(Clone)]
pub struct Ingestion {
    supervisor: Current<SupervisorMsg>,
    engines: Engines,
    config: PipelineConfig,
    timeout: Duration,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("the ingestion supervisor did not answer")]
pub struct IngestionUnavailable;

impl From<CallFailure> for IngestionUnavailable {
    fn from(_: CallFailure) -> Self {
        IngestionUnavailable
    }
}

impl Ingestion {
    /// A handle with no supervisor yet: the root supervisor spawns it.
    pub fn new(engines: Engines, config: PipelineConfig, call_timeout: Duration) -> Self {
        Ingestion {
            supervisor: Current::default(),
            engines,
            config,
            timeout: call_timeout,
        }
    }

    /// Starts a supervisor of its own, unsupervised (tests; unnamed, so that many can run
    /// side by side).
    pub async fn start(
        engines: Engines,
        config: PipelineConfig,
        call_timeout: Duration,
    ) -> Result<(Self, tokio::task::JoinHandle<()>), SpawnErr> {
        let ingestion = Ingestion::new(engines, config, call_timeout);
        let (supervisor, handle) = Actor::spawn(None, IngestSupervisor, ingestion.args()).await?;
        ingestion.supervisor.set(supervisor);
        Ok((ingestion, handle))
    }

    fn args(&self) -> SupervisorArgs {
        SupervisorArgs {
            engines: self.engines.clone(),
            config: self.config.clone(),
        }
    }

    /// Queues a document of `workspace` (generation `attempt`).
    pub fn submit(
        &self,
        id: Uuid,
        workspace: Uuid,
        attempt: u32,
    ) -> Result<(), IngestionUnavailable> {
        Ok(self.supervisor.cast(SupervisorMsg::Submit {
            id,
            workspace,
            attempt,
        })?)
    }

    /// Stops a document's work; `false` when it had none (finished, failed or unknown).
    pub async fn cancel(&self, id: Uuid) -> Result<bool, IngestionUnavailable> {
        Ok(self
            .supervisor
            .call(|reply| SupervisorMsg::Cancel { id, reply }, self.timeout)
            .await?)
    }

    /// Drops every document of a workspace that moved to another node (nothing recorded).
    pub async fn release(&self, workspace: Uuid) -> Result<usize, IngestionUnavailable> {
        Ok(self
            .supervisor
            .call(
                |reply| SupervisorMsg::Release { workspace, reply },
                self.timeout,
            )
            .await?)
    }

    /// Kills a document's running generation as a crash would; it is retried.
    pub async fn kill(&self, id: Uuid) -> Result<bool, IngestionUnavailable> {
        Ok(self
            .supervisor
            .call(|reply| SupervisorMsg::Kill { id, reply }, self.timeout)
            .await?)
    }

    pub async fn stats(&self) -> Result<IngestStats, IngestionUnavailable> {
        Ok(self
            .supervisor
            .call(SupervisorMsg::GetStats, self.timeout)
            .await?)
    }

    /// Stops a supervisor started with [`Ingestion::start`] (a supervised one is stopped by
    /// its supervisor).
    pub fn stop(&self) {
        if let Some(supervisor) = self.supervisor.get() {
            supervisor.stop(None);
        }
    }
}

#[async_trait]
impl Child for Ingestion {
    async fn spawn_linked(&self, parent: ActorCell) -> Result<ActorCell, SpawnErr> {
        let (supervisor, _) =
            Actor::spawn_linked(None, IngestSupervisor, self.args(), parent).await?;
        self.supervisor.set(supervisor.clone());
        Ok(supervisor.get_cell())
    }

    fn close(&self) {
        self.supervisor.close();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use async_trait::async_trait;

    use super::*;
    use crate::model::{ChunkDraft, FactDraft, Section, SourceKind};
    use crate::pipeline::{
        ChunkVectors, Chunker, DocumentStore, DocumentTask, EmbeddedFact, Embedder, Extractor,
        Fault, Faults, InProcess, Ocr, Progress, StoreError, StoredChunk,
    };

    /// One document in memory, with every status change recorded.
    #[derive(Default)]
    struct Memory {
        bytes: Vec<u8>,
        kind: Option<SourceKind>,
        done: Option<Phase>,
        sections: Vec<Section>,
        chunks: Vec<(StoredChunk, bool, bool)>,
        /// Each embedded chunk's vectors: its own, then its pieces'.
        vectors: HashMap<Uuid, (Vec<f32>, Vec<Vec<f32>>)>,
        facts: Vec<String>,
        statuses: Vec<(Status, u32, Option<String>)>,
    }

    #[derive(Default)]
    struct FakeStore(Mutex<HashMap<Uuid, Memory>>);

    impl FakeStore {
        fn add(&self, bytes: &[u8], kind: SourceKind) -> Uuid {
            let id = Uuid::new_v4();
            self.0.lock().unwrap().insert(
                id,
                Memory {
                    bytes: bytes.to_vec(),
                    kind: Some(kind),
                    ..Memory::default()
                },
            );
            id
        }

        fn with<T>(&self, id: Uuid, f: impl FnOnce(&mut Memory) -> T) -> Result<T, StoreError> {
            let mut all = self.0.lock().unwrap();
            let doc = all.get_mut(&id).ok_or(StoreError("gone".into()))?;
            Ok(f(doc))
        }

        fn statuses(&self, id: Uuid) -> Vec<Status> {
            self.with(id, |d| d.statuses.iter().map(|s| s.0).collect())
                .unwrap()
        }
    }

    #[async_trait]
    impl DocumentStore for FakeStore {
        async fn load(&self, id: Uuid) -> Result<DocumentTask, StoreError> {
            self.with(id, |d| DocumentTask {
                id,
                title: "T".into(),
                kind: d.kind.unwrap_or(SourceKind::Text),
                done: d.done,
            })
        }
        async fn raw(&self, id: Uuid) -> Result<Vec<u8>, StoreError> {
            self.with(id, |d| d.bytes.clone())
        }
        async fn save_sections(
            &self,
            id: Uuid,
            phase: Phase,
            sections: &[Section],
        ) -> Result<(), StoreError> {
            self.with(id, |d| {
                d.sections = sections.to_vec();
                d.done = Some(phase);
            })
        }
        async fn sections(&self, id: Uuid) -> Result<Vec<Section>, StoreError> {
            self.with(id, |d| d.sections.clone())
        }
        async fn save_chunks(&self, id: Uuid, chunks: &[ChunkDraft]) -> Result<(), StoreError> {
            self.with(id, |d| {
                d.chunks = chunks
                    .iter()
                    .map(|c| {
                        let stored = StoredChunk {
                            id: Uuid::new_v4(),
                            index: c.index,
                            section_path: c.section_path.clone(),
                            content: c.content.clone(),
                            contextual_content: c.contextual_content.clone(),
                        };
                        (stored, false, false)
                    })
                    .collect();
                d.done = Some(Phase::Chunk);
            })
        }
        async fn chunks_to_embed(&self, id: Uuid) -> Result<Vec<StoredChunk>, StoreError> {
            self.with(id, |d| {
                d.chunks
                    .iter()
                    .filter(|c| !c.1)
                    .map(|c| c.0.clone())
                    .collect()
            })
        }
        async fn save_chunk_vectors(
            &self,
            id: Uuid,
            vectors: &[ChunkVectors],
        ) -> Result<(), StoreError> {
            self.with(id, |d| {
                for v in vectors {
                    if let Some(c) = d.chunks.iter_mut().find(|c| c.0.id == v.chunk) {
                        c.1 = true;
                        d.vectors
                            .insert(v.chunk, (v.vector.clone(), v.pieces.clone()));
                    }
                }
            })
        }
        async fn chunks_to_extract(&self, id: Uuid) -> Result<Vec<StoredChunk>, StoreError> {
            self.with(id, |d| {
                d.chunks
                    .iter()
                    .filter(|c| !c.2)
                    .map(|c| c.0.clone())
                    .collect()
            })
        }
        async fn save_facts(
            &self,
            id: Uuid,
            chunk: &StoredChunk,
            facts: &[EmbeddedFact],
        ) -> Result<(), StoreError> {
            self.with(id, |d| {
                for f in facts {
                    if !d.facts.contains(&f.fact.content) {
                        d.facts.push(f.fact.content.clone());
                    }
                }
                if let Some(c) = d.chunks.iter_mut().find(|c| c.0.id == chunk.id) {
                    c.2 = true;
                }
            })
        }
        async fn finish_phase(&self, id: Uuid, phase: Phase) -> Result<(), StoreError> {
            self.with(id, |d| d.done = Some(phase))
        }
        async fn record_progress(&self, id: Uuid, _: Progress) -> Result<(), StoreError> {
            self.with(id, |_| ())
        }
        async fn set_status(&self, id: Uuid, change: StatusChange) -> Result<bool, StoreError> {
            self.with(id, |d| {
                // As the database does: a document out of the pipeline stays out.
                let in_pipeline = d.statuses.last().is_none_or(|s| !s.0.is_terminal());
                let guarded = matches!(
                    change.status,
                    Status::Processing | Status::Retrying | Status::Failed
                );
                if guarded && !in_pipeline {
                    return false;
                }
                d.statuses
                    .push((change.status, change.attempts, change.message));
                true
            })
        }
    }

    struct NoOcr;
    impl Ocr for NoOcr {
        fn recognize(&self, _: &[u8]) -> Result<String, String> {
            Err("no ocr here".into())
        }
    }

    /// One chunk per section.
    struct Sections;
    impl Chunker for Sections {
        fn chunk(&self, title: &str, sections: &[Section]) -> Vec<ChunkDraft> {
            sections
                .iter()
                .enumerate()
                .map(|(i, s)| ChunkDraft {
                    index: i as u32,
                    section_path: s.path.clone(),
                    content: s.text.clone(),
                    contextual_content: format!("{title}\n\n{}", s.text),
                })
                .collect()
        }

        /// A chunk of several sentences is also read sentence by sentence.
        fn pieces(&self, title: &str, chunk: &StoredChunk) -> Vec<String> {
            let sentences: Vec<&str> = chunk
                .content
                .split_inclusive(". ")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            if sentences.len() < 2 {
                return Vec::new();
            }
            sentences
                .iter()
                .map(|s| format!("{title}\n\n{s}"))
                .collect()
        }
    }

    struct Zeros;
    #[async_trait]
    impl Embedder for Zeros {
        async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
            Ok(texts.iter().map(|_| vec![0.0; 4]).collect())
        }
    }

    /// A text's vector is its length in bytes, then zeros: which vector went where is visible.
    struct Lengths;
    #[async_trait]
    impl Embedder for Lengths {
        async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
            Ok(texts
                .iter()
                .map(|t| vec![t.len() as f32, 1.0, 0.0, 0.0])
                .collect())
        }
    }

    /// Takes a millisecond per 400 bytes of text in each call, as a model's time grows with
    /// its input.
    struct Slow;
    #[async_trait]
    impl Embedder for Slow {
        async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
            let bytes: usize = texts.iter().map(String::len).sum();
            tokio::time::sleep(Duration::from_millis(bytes as u64 / 400)).await;
            Ok(texts.iter().map(|_| vec![0.0; 4]).collect())
        }
    }

    /// Every chunk is one fact.
    struct Whole;
    #[async_trait]
    impl Extractor for Whole {
        async fn extract(&self, _: &str, chunk: &StoredChunk) -> Result<Vec<FactDraft>, String> {
            Ok(vec![FactDraft {
                content: chunk.content.clone(),
                category: "fact".into(),
                quote: chunk.content.clone(),
                confidence: 0.5,
            }])
        }
    }

    /// `fault` the first `times` times `phase` starts.
    struct Script {
        phase: Phase,
        fault: Fault,
        times: usize,
        fired: Mutex<usize>,
    }

    impl Faults for Script {
        fn at(&self, _: Uuid, phase: Phase, _: u32) -> Option<Fault> {
            let mut fired = self.fired.lock().unwrap();
            (phase == self.phase && *fired < self.times).then(|| {
                *fired += 1;
                self.fault.clone()
            })
        }
    }

    async fn start(store: Arc<FakeStore>, faults: Option<Script>, max_attempts: u32) -> Ingestion {
        start_with(store, faults, max_attempts, Arc::new(Zeros)).await
    }

    async fn start_with(
        store: Arc<FakeStore>,
        faults: Option<Script>,
        max_attempts: u32,
        embedder: Arc<dyn Embedder>,
    ) -> Ingestion {
        let engines = Engines {
            store,
            decoder: Arc::new(InProcess {
                limits: crate::parse::ParseLimits::default(),
                ocr: Arc::new(NoOcr),
            }),
            chunker: Arc::new(Sections),
            embedder,
            extractor: Arc::new(Whole),
            faults: faults.map(|f| Arc::new(f) as Arc<dyn Faults>),
            observer: None,
        };
        let config = PipelineConfig {
            max_attempts,
            backoff_base: Duration::from_millis(5),
            backoff_cap: Duration::from_millis(20),
            stale_after: Duration::from_millis(100),
            check_every: Duration::from_millis(20),
            ..PipelineConfig::default()
        };
        Ingestion::start(engines, config, Duration::from_secs(5))
            .await
            .unwrap()
            .0
    }

    async fn until_terminal(store: &FakeStore, id: Uuid) -> Status {
        for _ in 0..500 {
            if let Some(last) = store.statuses(id).last() {
                if last.is_terminal() {
                    // Nothing may follow a terminal status.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    return *store.statuses(id).last().unwrap();
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no terminal status: {:?}", store.statuses(id));
    }

    const TEXT: &[u8] = b"# One\n\nAlpha is first.\n\n# Two\n\nBeta is second.\n";

    /// A document cancelled, finished or deleted after it was queued (e.g. while the
    /// supervisor was being restarted and its recovery resubmitted it) is not started.
    #[tokio::test]
    async fn a_document_that_left_the_pipeline_is_not_started() {
        let store = Arc::new(FakeStore::default());
        let id = store.add(b"Acme was founded in 1999.", SourceKind::Text);
        store
            .with(id, |d| {
                d.statuses
                    .push((Status::Cancelled, 1, Some("cancelled on request".into())))
            })
            .unwrap();
        let ingestion = start(store.clone(), None, 3).await;
        ingestion.submit(id, Uuid::new_v4(), 1).unwrap();
        // Answered after the submission was handled (one mailbox, in order).
        let stats = ingestion.stats().await.unwrap();
        assert_eq!((stats.running, stats.queued, stats.completed), (0, 0, 0));
        assert_eq!(store.statuses(id), vec![Status::Cancelled]);
    }

    #[tokio::test]
    async fn a_document_walks_every_phase_to_completed() {
        let store = Arc::new(FakeStore::default());
        let ingestion = start(store.clone(), None, 3).await;
        let id = store.add(TEXT, SourceKind::Markdown);
        ingestion.submit(id, Uuid::nil(), 1).unwrap();
        assert_eq!(until_terminal(&store, id).await, Status::Completed);
        assert_eq!(
            store.statuses(id),
            vec![Status::Processing, Status::Completed]
        );
        store
            .with(id, |d| {
                assert_eq!(d.done, Some(Phase::Extract));
                assert_eq!(d.chunks.len(), 2);
                assert!(d.chunks.iter().all(|c| c.1 && c.2));
                assert_eq!(d.facts.len(), 2);
            })
            .unwrap();
        let stats = ingestion.stats().await.unwrap();
        assert_eq!((stats.completed, stats.running), (1, 0));
        ingestion.stop();
    }

    #[tokio::test]
    async fn a_long_chunk_is_embedded_piece_by_piece_and_keeps_their_mean() {
        let store = Arc::new(FakeStore::default());
        let ingestion = start_with(store.clone(), None, 3, Arc::new(Lengths)).await;
        let text = b"# One\n\nAlpha is first. Gamma is third.\n\n# Two\n\nBeta is second.\n";
        let id = store.add(text, SourceKind::Markdown);
        ingestion.submit(id, Uuid::nil(), 1).unwrap();
        assert_eq!(until_terminal(&store, id).await, Status::Completed);
        store
            .with(id, |d| {
                // The fake store names every document "T"; `Lengths` embeds a text as
                // [its length, 1, 0, 0].
                let length = |s: &str| format!("T\n\n{s}").len() as f32;
                let of = |content: &str| {
                    let chunk = d.chunks.iter().find(|c| c.0.content == content).unwrap();
                    d.vectors[&chunk.0.id].clone()
                };
                let (own, pieces) = of("Alpha is first. Gamma is third.");
                let firsts: Vec<f32> = pieces.iter().map(|p| p[0]).collect();
                assert_eq!(
                    firsts,
                    vec![length("Alpha is first."), length("Gamma is third.")]
                );
                // Both pieces are 18 bytes long: their unit mean is [18, 1, 0, 0] / |.|. The
                // whole chunk, embedded, would be [34, 1, 0, 0] / |.|.
                let norm = (18.0f32 * 18.0 + 1.0).sqrt();
                let expected = [18.0 / norm, 1.0 / norm, 0.0, 0.0];
                assert!(
                    own.iter().zip(expected).all(|(a, b)| (a - b).abs() < 1e-6),
                    "{own:?}"
                );
                let (own, pieces) = of("Beta is second.");
                assert_eq!(own, vec![length("Beta is second."), 1.0, 0.0, 0.0]);
                assert!(pieces.is_empty());
            })
            .unwrap();
        ingestion.stop();
    }

    #[tokio::test]
    async fn a_transient_failure_is_retried_from_the_committed_phase() {
        let store = Arc::new(FakeStore::default());
        let faults = Script {
            phase: Phase::Embed,
            fault: Fault::Fail("embedder down".into()),
            times: 1,
            fired: Mutex::new(0),
        };
        let ingestion = start(store.clone(), Some(faults), 3).await;
        let id = store.add(TEXT, SourceKind::Markdown);
        ingestion.submit(id, Uuid::nil(), 1).unwrap();
        assert_eq!(until_terminal(&store, id).await, Status::Completed);
        let statuses = store.with(id, |d| d.statuses.clone()).unwrap();
        assert_eq!(statuses[1].0, Status::Retrying);
        assert_eq!(statuses[1].2.as_deref(), Some("embedder down"));
        assert_eq!(statuses.last().unwrap().1, 2, "completed by generation 2");
        store
            .with(id, |d| assert_eq!((d.chunks.len(), d.facts.len()), (2, 2)))
            .unwrap();
        ingestion.stop();
    }

    /// 100 facts of 1 KB: in one model call they would take 250 ms, past the 100 ms staleness
    /// limit; cut into calls with a heartbeat after each, none is silent for that long.
    #[tokio::test]
    async fn long_facts_are_embedded_in_calls_short_enough_to_keep_a_heartbeat() {
        let store = Arc::new(FakeStore::default());
        let ingestion = start_with(store.clone(), None, 1, Arc::new(Slow)).await;
        let paragraph = "Rows of a long table keep the model busy. ".repeat(24);
        let text: String = (0..100)
            .map(|i| format!("# Part {i}\n\n{i} {paragraph}\n\n"))
            .collect();
        let id = store.add(text.as_bytes(), SourceKind::Markdown);
        ingestion.submit(id, Uuid::nil(), 1).unwrap();
        assert_eq!(until_terminal(&store, id).await, Status::Completed);
        store
            .with(id, |d| {
                assert_eq!((d.chunks.len(), d.facts.len()), (100, 100))
            })
            .unwrap();
        ingestion.stop();
    }

    #[tokio::test]
    async fn a_document_resumed_past_its_attempts_fails_without_running() {
        let store = Arc::new(FakeStore::default());
        let ingestion = start(store.clone(), None, 3).await;
        let id = store.add(TEXT, SourceKind::Markdown);
        // Three attempts were started and none ended (the server died under each): the
        // fourth is not run.
        ingestion.submit(id, Uuid::nil(), 4).unwrap();
        assert_eq!(until_terminal(&store, id).await, Status::Failed);
        let statuses = store.with(id, |d| d.statuses.clone()).unwrap();
        assert_eq!(statuses.len(), 1, "{statuses:?}");
        assert_eq!(statuses[0].1, 3);
        assert!(statuses[0]
            .2
            .as_deref()
            .unwrap()
            .contains("interrupted 3 times"));
        store
            .with(id, |d| assert!(d.chunks.is_empty(), "nothing ran"))
            .unwrap();
        ingestion.stop();
    }

    #[tokio::test]
    async fn a_corrupt_file_fails_at_once_without_retries() {
        let store = Arc::new(FakeStore::default());
        let ingestion = start(store.clone(), None, 3).await;
        let id = store.add(b"%PDF-1.4 this is not a pdf", SourceKind::Pdf);
        ingestion.submit(id, Uuid::nil(), 1).unwrap();
        assert_eq!(until_terminal(&store, id).await, Status::Failed);
        let statuses = store.with(id, |d| d.statuses.clone()).unwrap();
        assert_eq!(statuses.len(), 2, "{statuses:?}");
        assert!(statuses[1].2.as_deref().unwrap().contains("pdf"));
        ingestion.stop();
    }

    #[tokio::test]
    async fn a_stale_generation_is_killed_and_the_last_attempt_fails() {
        let store = Arc::new(FakeStore::default());
        let faults = Script {
            phase: Phase::Extract,
            fault: Fault::Hang,
            times: 10,
            fired: Mutex::new(0),
        };
        let ingestion = start(store.clone(), Some(faults), 2).await;
        let id = store.add(TEXT, SourceKind::Markdown);
        ingestion.submit(id, Uuid::nil(), 1).unwrap();
        assert_eq!(until_terminal(&store, id).await, Status::Failed);
        let statuses = store.with(id, |d| d.statuses.clone()).unwrap();
        let kinds: Vec<Status> = statuses.iter().map(|s| s.0).collect();
        assert_eq!(
            kinds,
            vec![
                Status::Processing,
                Status::Retrying,
                Status::Processing,
                Status::Failed
            ]
        );
        assert!(statuses[3].2.as_deref().unwrap().contains("no progress"));
        assert_eq!(statuses[3].1, 2);
        ingestion.stop();
    }

    #[tokio::test]
    async fn cancel_kills_the_generation_and_nothing_follows() {
        let store = Arc::new(FakeStore::default());
        let faults = Script {
            phase: Phase::Chunk,
            fault: Fault::Hang,
            times: 10,
            fired: Mutex::new(0),
        };
        let ingestion = start(store.clone(), Some(faults), 3).await;
        let id = store.add(TEXT, SourceKind::Markdown);
        ingestion.submit(id, Uuid::nil(), 1).unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(ingestion.cancel(id).await.unwrap());
        assert_eq!(until_terminal(&store, id).await, Status::Cancelled);
        assert!(
            !ingestion.cancel(id).await.unwrap(),
            "nothing left to cancel"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(
            store.statuses(id),
            vec![Status::Processing, Status::Cancelled]
        );
        ingestion.stop();
    }
}
