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
mod tests;
