//! Background jobs (the long-note path): a supervisor runs each job in a worker actor of its
//! own. A worker that fails (an error or a panic) is reported to the supervisor, which runs
//! the job again after a capped exponential backoff, up to `max_attempts`; then the job is
//! given up and the handler records why. Jobs must be idempotent: a retry may find part of
//! the work done.
//!
//! What a job does, and how its state is persisted, is behind [`JobHandler`]. A workspace's
//! jobs can be released (its node no longer owns it): queued ones are dropped, running ones
//! killed, retries forgotten; the new owner resumes them from storage.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ractor::{
    Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SpawnErr,
    SupervisionEvent,
};
use uuid::Uuid;

use crate::supervisor::{CallFailure, Child, Current};

#[async_trait]
pub trait JobHandler: Send + Sync + 'static {
    /// Runs job `id` (attempt 1, 2, ...) to completion, persisting its outcome.
    async fn run(&self, id: Uuid, attempt: u32) -> Result<(), String>;
    /// The last attempt failed: record the job as failed with `error`.
    async fn give_up(&self, id: Uuid, attempts: u32, error: String);
}

/// The delay before attempt `attempt + 1` after `attempt` failed: `base × 2^(attempt-1)`,
/// capped.
pub fn backoff(attempt: u32, base: Duration, cap: Duration) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
    base.saturating_mul(factor).min(cap)
}

#[derive(Clone)]
pub struct JobsArgs {
    pub handler: Arc<dyn JobHandler>,
    pub max_attempts: u32,
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    /// Jobs run at once, at most.
    pub concurrency: usize,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobStats {
    pub running: usize,
    pub queued: usize,
    pub succeeded: u64,
    pub retried: u64,
    pub given_up: u64,
}

pub struct JobsSupervisor;

pub struct JobsState {
    config: JobsArgs,
    queue: VecDeque<(Uuid, u32)>,
    /// Queued, waiting for a retry, or running: each job's workspace.
    known: HashMap<Uuid, Uuid>,
    running: HashMap<ActorId, Running>,
    stats: JobStats,
}

/// A job attempt running in a worker.
struct Running {
    worker: ActorCell,
    id: Uuid,
    attempt: u32,
}

pub enum JobsMsg {
    /// Run a job of `workspace` (ignored when it is already queued or running).
    Submit { id: Uuid, workspace: Uuid },
    /// A backoff elapsed: queue attempt `attempt` of job `id` (unless it was released).
    Retry { id: Uuid, attempt: u32 },
    /// Stop every job of a workspace: queued ones are dropped, running ones killed, retries
    /// forgotten. Nothing is written: the jobs stay unfinished in storage.
    Release(Uuid),
    /// Stop these jobs, as [`JobsMsg::Release`] does (their scope is being erased), and
    /// answer once the running ones have ended: how many were known.
    ReleaseJobs(Vec<Uuid>, RpcReplyPort<usize>),
    /// Counters.
    GetStats(RpcReplyPort<JobStats>),
}

impl Actor for JobsSupervisor {
    type Msg = JobsMsg;
    type State = JobsState;
    type Arguments = JobsArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        config: JobsArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(JobsState {
            config,
            queue: VecDeque::new(),
            known: HashMap::new(),
            running: HashMap::new(),
            stats: JobStats::default(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            JobsMsg::Submit { id, workspace } => {
                if let std::collections::hash_map::Entry::Vacant(entry) = state.known.entry(id) {
                    entry.insert(workspace);
                    state.queue.push_back((id, 1));
                }
            }
            JobsMsg::Retry { id, attempt } => {
                if state.known.contains_key(&id) {
                    state.queue.push_back((id, attempt));
                }
            }
            JobsMsg::Release(workspace) => {
                let released: HashSet<Uuid> = state
                    .known
                    .iter()
                    .filter(|(_, ws)| **ws == workspace)
                    .map(|(id, _)| *id)
                    .collect();
                release(state, &released);
            }
            JobsMsg::ReleaseJobs(ids, reply) => {
                let ids: HashSet<Uuid> = ids.into_iter().collect();
                let known = ids.iter().filter(|id| state.known.contains_key(id)).count();
                for worker in release(state, &ids) {
                    // Killed already; bounded, so a stuck stop cannot hold the mailbox.
                    let _ = worker.kill_and_wait(Some(Duration::from_secs(2))).await;
                }
                let _ = reply.send(known);
            }
            JobsMsg::GetStats(reply) => {
                let _ = reply.send(JobStats {
                    running: state.running.len(),
                    queued: state.queue.len(),
                    ..state.stats
                });
            }
        }
        start_ready(&myself, state).await;
        Ok(())
    }

    /// A worker ended: done, or failed and retried or given up. The supervisor itself never
    /// stops because a worker died.
    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, failure) = match event {
            SupervisionEvent::ActorTerminated(cell, _, _) => (cell, None),
            SupervisionEvent::ActorFailed(cell, error) => (cell, Some(error.to_string())),
            _ => return Ok(()),
        };
        // A released job's worker is no longer listed: its end changes nothing.
        let Some(Running { id, attempt, .. }) = state.running.remove(&cell.get_id()) else {
            return Ok(());
        };
        match failure {
            None => {
                state.known.remove(&id);
                state.stats.succeeded += 1;
            }
            Some(error) if attempt < state.config.max_attempts => {
                // Released meanwhile? Then `Retry` finds it unknown and drops it.
                let delay = backoff(attempt, state.config.backoff_base, state.config.backoff_cap);
                tracing::warn!(job_id = %id, attempt, %error, retry_in_ms = delay.as_millis() as u64, "job failed, retrying");
                state.stats.retried += 1;
                myself.send_after(delay, move || JobsMsg::Retry {
                    id,
                    attempt: attempt + 1,
                });
            }
            Some(error) => {
                tracing::error!(job_id = %id, attempt, %error, "job failed, giving up");
                state.known.remove(&id);
                state.stats.given_up += 1;
                state.config.handler.give_up(id, attempt, error).await;
            }
        }
        start_ready(&myself, state).await;
        Ok(())
    }
}

/// How the root supervisor spawns the jobs supervisor (it holds the handler). Callers get a
/// [`JobQueue`], which holds no handler: the handler holds the service that submits jobs, and a
/// queue holding the handler would make a cycle that is never freed.
#[derive(Clone)]
pub struct Jobs {
    current: Current<JobsMsg>,
    args: JobsArgs,
}

impl Jobs {
    /// A handle with no supervisor yet: the root supervisor spawns it.
    pub fn new(args: JobsArgs) -> Self {
        Jobs {
            current: Current::default(),
            args,
        }
    }

    /// Where jobs are submitted, following the supervisor across restarts.
    pub fn queue(&self) -> JobQueue {
        JobQueue {
            current: self.current.clone(),
        }
    }
}

/// The handle the rest of memvault uses; it follows the supervisor across restarts. A
/// restarted supervisor has forgotten its queue (its workers died with it): its supervisor's
/// recovery submits every unfinished job again from storage.
#[derive(Clone)]
pub struct JobQueue {
    current: Current<JobsMsg>,
}

impl JobQueue {
    /// Runs job `id` of `workspace` (ignored when it is already queued or running).
    pub fn submit(&self, id: Uuid, workspace: Uuid) -> Result<(), CallFailure> {
        self.current.cast(JobsMsg::Submit { id, workspace })
    }

    /// Stops every job of `workspace` ([`JobsMsg::Release`]).
    pub fn release(&self, workspace: Uuid) -> Result<(), CallFailure> {
        self.current.cast(JobsMsg::Release(workspace))
    }

    /// Stops these jobs and waits until the running ones have ended ([`JobsMsg::ReleaseJobs`]).
    pub async fn release_jobs(
        &self,
        ids: Vec<Uuid>,
        timeout: Duration,
    ) -> Result<usize, CallFailure> {
        self.current
            .call(|reply| JobsMsg::ReleaseJobs(ids.clone(), reply), timeout)
            .await
    }
}

#[async_trait]
impl Child for Jobs {
    async fn spawn_linked(&self, supervisor: ActorCell) -> Result<ActorCell, SpawnErr> {
        let (actor, _) =
            Actor::spawn_linked(None, JobsSupervisor, self.args.clone(), supervisor).await?;
        self.current.set(actor.clone());
        Ok(actor.get_cell())
    }

    fn close(&self) {
        self.current.close();
    }
}

/// Forgets the jobs `released`: queued ones are dropped, running ones killed (their worker's
/// end is then ignored), pending retries find them unknown. Returns the killed workers.
fn release(state: &mut JobsState, released: &HashSet<Uuid>) -> Vec<ActorCell> {
    state.known.retain(|id, _| !released.contains(id));
    state.queue.retain(|(id, _)| !released.contains(id));
    let mut killed = Vec::new();
    state.running.retain(|_, running| {
        if released.contains(&running.id) {
            tracing::info!(job_id = %running.id, "job released");
            running.worker.kill();
            killed.push(running.worker.clone());
            return false;
        }
        true
    });
    killed
}

/// Starts queued jobs while there is room.
async fn start_ready(myself: &ActorRef<JobsMsg>, state: &mut JobsState) {
    while state.running.len() < state.config.concurrency.max(1) {
        let Some((id, attempt)) = state.queue.pop_front() else {
            return;
        };
        let worker = JobWorker {
            handler: state.config.handler.clone(),
        };
        match Actor::spawn_linked(None, worker, (id, attempt), myself.get_cell()).await {
            Ok((actor, _)) => {
                state.running.insert(
                    actor.get_id(),
                    Running {
                        worker: actor.get_cell(),
                        id,
                        attempt,
                    },
                );
            }
            Err(error) => {
                tracing::error!(job_id = %id, %error, "cannot start a job worker");
                state.known.remove(&id);
                state
                    .config
                    .handler
                    .give_up(id, attempt, format!("cannot start a worker: {error}"))
                    .await;
            }
        }
    }
}

/// Runs one attempt of one job, then stops; fails (reported to the supervisor) when the
/// attempt fails.
struct JobWorker {
    handler: Arc<dyn JobHandler>,
}

enum WorkerMsg {
    Run,
}

impl Actor for JobWorker {
    type Msg = WorkerMsg;
    type State = (Uuid, u32);
    type Arguments = (Uuid, u32);

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        job: (Uuid, u32),
    ) -> Result<Self::State, ActorProcessingErr> {
        myself.cast(WorkerMsg::Run)?;
        Ok(job)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            WorkerMsg::Run => {
                let (id, attempt) = *state;
                self.handler.run(id, attempt).await?;
                myself.stop(None);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let base = Duration::from_millis(100);
        let cap = Duration::from_secs(1);
        assert_eq!(backoff(1, base, cap), Duration::from_millis(100));
        assert_eq!(backoff(2, base, cap), Duration::from_millis(200));
        assert_eq!(backoff(4, base, cap), Duration::from_millis(800));
        assert_eq!(backoff(5, base, cap), cap);
        assert_eq!(backoff(60, base, cap), cap);
    }

    /// Fails (or panics) on the attempts listed; records what happened.
    #[derive(Default)]
    struct Script {
        fail_on: Vec<u32>,
        panic_on: Vec<u32>,
        /// How long each run takes.
        takes: Duration,
        runs: Mutex<Vec<(Uuid, u32)>>,
        given_up: Mutex<Vec<(Uuid, u32, String)>>,
    }

    #[async_trait]
    impl JobHandler for Script {
        async fn run(&self, id: Uuid, attempt: u32) -> Result<(), String> {
            self.runs.lock().unwrap().push((id, attempt));
            tokio::time::sleep(self.takes).await;
            if self.panic_on.contains(&attempt) {
                panic!("injected panic");
            }
            if self.fail_on.contains(&attempt) {
                return Err(format!("injected failure {attempt}"));
            }
            Ok(())
        }
        async fn give_up(&self, id: Uuid, attempts: u32, error: String) {
            self.given_up.lock().unwrap().push((id, attempts, error));
        }
    }

    async fn start(script: Arc<Script>) -> ActorRef<JobsMsg> {
        let (actor, _) = Actor::spawn(
            None,
            JobsSupervisor,
            JobsArgs {
                handler: script,
                max_attempts: 3,
                backoff_base: Duration::from_millis(5),
                backoff_cap: Duration::from_millis(20),
                concurrency: 2,
            },
        )
        .await
        .unwrap();
        actor
    }

    async fn settle(actor: &ActorRef<JobsMsg>) -> JobStats {
        for _ in 0..400 {
            let stats = ractor::call_t!(actor, JobsMsg::GetStats, 1_000).unwrap();
            if stats.running == 0
                && stats.queued == 0
                && stats.retried + stats.succeeded + stats.given_up > 0
            {
                tokio::time::sleep(Duration::from_millis(30)).await;
                let again = ractor::call_t!(actor, JobsMsg::GetStats, 1_000).unwrap();
                if again == stats {
                    return stats;
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("jobs did not settle");
    }

    #[tokio::test]
    async fn failures_and_panics_are_retried_with_backoff() {
        let script = Arc::new(Script {
            fail_on: vec![1],
            panic_on: vec![2],
            ..Script::default()
        });
        let actor = start(script.clone()).await;
        let id = Uuid::new_v4();
        let workspace = Uuid::new_v4();
        actor.cast(JobsMsg::Submit { id, workspace }).unwrap();
        // A duplicate submit is ignored.
        actor.cast(JobsMsg::Submit { id, workspace }).unwrap();
        let stats = settle(&actor).await;
        assert_eq!(stats.succeeded, 1);
        assert_eq!(stats.retried, 2);
        assert_eq!(
            *script.runs.lock().unwrap(),
            vec![(id, 1), (id, 2), (id, 3)]
        );
        assert!(script.given_up.lock().unwrap().is_empty());
        actor.stop(None);
    }

    #[tokio::test]
    async fn the_last_failure_gives_up_with_the_error() {
        let script = Arc::new(Script {
            fail_on: vec![1, 2, 3],
            ..Script::default()
        });
        let actor = start(script.clone()).await;
        let (id, workspace) = (Uuid::new_v4(), Uuid::new_v4());
        actor.cast(JobsMsg::Submit { id, workspace }).unwrap();
        let stats = settle(&actor).await;
        assert_eq!(stats.given_up, 1);
        {
            let given_up = script.given_up.lock().unwrap();
            assert_eq!(given_up.len(), 1);
            assert_eq!(given_up[0].1, 3);
            assert!(given_up[0].2.contains("injected failure 3"));
        }
        // The supervisor is still alive and takes new work.
        let other = Uuid::new_v4();
        script.runs.lock().unwrap().clear();
        actor
            .cast(JobsMsg::Submit {
                id: other,
                workspace,
            })
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(script.runs.lock().unwrap().contains(&(other, 1)));
        actor.stop(None);
    }

    /// Releasing a workspace kills its running jobs and drops its queued ones, without a
    /// retry or a give-up; other workspaces' jobs go on; a released job can be submitted again.
    #[tokio::test]
    async fn a_released_workspace_stops_its_jobs_only() {
        let script = Arc::new(Script {
            takes: Duration::from_secs(3_600),
            ..Script::default()
        });
        let actor = start(script.clone()).await;
        let (moved, stays) = (Uuid::new_v4(), Uuid::new_v4());
        let jobs: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
        for &id in &jobs {
            actor
                .cast(JobsMsg::Submit {
                    id,
                    workspace: moved,
                })
                .unwrap();
        }
        let other = Uuid::new_v4();
        actor
            .cast(JobsMsg::Submit {
                id: other,
                workspace: stays,
            })
            .unwrap();
        // Two run (the concurrency), two wait.
        let stats = ractor::call_t!(actor, JobsMsg::GetStats, 1_000).unwrap();
        assert_eq!((stats.running, stats.queued), (2, 2));
        actor.cast(JobsMsg::Release(moved)).unwrap();
        let stats = ractor::call_t!(actor, JobsMsg::GetStats, 1_000).unwrap();
        assert_eq!((stats.running, stats.queued), (1, 0), "{stats:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        let stats = ractor::call_t!(actor, JobsMsg::GetStats, 1_000).unwrap();
        assert_eq!((stats.retried, stats.given_up, stats.succeeded), (0, 0, 0));
        assert!(script.given_up.lock().unwrap().is_empty());
        // The queued job of the moved workspace never ran; the other workspace's did.
        let runs = script.runs.lock().unwrap().clone();
        assert!(!runs.iter().any(|(id, _)| *id == jobs[2]), "{runs:?}");
        assert!(runs.contains(&(other, 1)), "{runs:?}");
        // Resumed later (the workspace came back): it runs again.
        actor
            .cast(JobsMsg::Submit {
                id: jobs[0],
                workspace: moved,
            })
            .unwrap();
        let stats = ractor::call_t!(actor, JobsMsg::GetStats, 1_000).unwrap();
        assert_eq!(stats.running, 2);
        actor.stop(None);
    }
}
