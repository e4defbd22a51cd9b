//! The index maintainer: in the background, folds each lane's exact vector tail into HNSW
//! segments (appending to a segment with room) and rebuilds segments that are mostly dead.
//! Lanes are maintained one at a time, on a blocking thread, so neither the async workers nor
//! this actor's mailbox wait on the CPU work; a lane asked for twice is queued once.
//!
//! The work itself lives behind [`Maintainable`], implemented by the search engine.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, RpcReplyPort, SpawnErr};

use crate::supervisor::{CallFailure, Child, Current};

/// A unit of index upkeep (a lane's vectors).
pub trait Maintainable: Send + Sync + 'static {
    /// Identifies the unit: a request for one already queued or running is dropped.
    fn key(&self) -> u64;
    fn needs_maintenance(&self) -> bool;
    /// Runs the upkeep to completion; blocking and CPU heavy. Returns segments built.
    fn maintain(&self) -> usize;
}

/// What the maintainer has done, for logs and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaintenanceStats {
    pub runs: u64,
    pub segments_built: u64,
    pub failures: u64,
    pub queued: usize,
    pub running: bool,
}

pub struct MaintenanceActor;

pub struct MaintenanceState {
    queue: VecDeque<Arc<dyn Maintainable>>,
    queued: HashSet<u64>,
    running: Option<u64>,
    stats: MaintenanceStats,
}

pub enum MaintenanceMsg {
    /// Maintain this unit if it needs it.
    Schedule(Arc<dyn Maintainable>),
    /// A run ended (sent by the run's own task).
    Finished {
        unit: Arc<dyn Maintainable>,
        outcome: Result<usize, String>,
        elapsed: Duration,
    },
    /// The counters so far.
    GetStats(RpcReplyPort<MaintenanceStats>),
}

impl Actor for MaintenanceActor {
    type Msg = MaintenanceMsg;
    type State = MaintenanceState;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        _args: (),
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(MaintenanceState {
            queue: VecDeque::new(),
            queued: HashSet::new(),
            running: None,
            stats: MaintenanceStats::default(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            MaintenanceMsg::Schedule(unit) => {
                let key = unit.key();
                if state.running != Some(key)
                    && !state.queued.contains(&key)
                    && unit.needs_maintenance()
                {
                    state.queued.insert(key);
                    state.queue.push_back(unit);
                }
            }
            MaintenanceMsg::Finished {
                unit,
                outcome,
                elapsed,
            } => {
                state.running = None;
                state.stats.runs += 1;
                match outcome {
                    Ok(built) => {
                        state.stats.segments_built += built as u64;
                        tracing::info!(
                            unit = unit.key(),
                            segments = built,
                            elapsed_ms = elapsed.as_millis() as u64,
                            "vector index maintained"
                        );
                    }
                    Err(error) => {
                        state.stats.failures += 1;
                        tracing::error!(unit = unit.key(), %error, "vector index maintenance failed");
                    }
                }
                // More may have arrived while it ran.
                if unit.needs_maintenance() && state.queued.insert(unit.key()) {
                    state.queue.push_back(unit);
                }
            }
            MaintenanceMsg::GetStats(reply) => {
                let _ = reply.send(MaintenanceStats {
                    queued: state.queue.len(),
                    running: state.running.is_some(),
                    ..state.stats
                });
            }
        }
        start_next(&myself, state);
        Ok(())
    }
}

/// The handle the rest of memvault uses; it follows the maintainer across restarts. A
/// restarted maintainer has forgotten its queue: its supervisor's recovery schedules every
/// lane that still needs upkeep (a run the dead generation left going finishes on its own; a
/// second run of the same lane finds nothing left to install).
#[derive(Clone)]
pub struct Maintainer {
    current: Current<MaintenanceMsg>,
    timeout: Duration,
}

impl Maintainer {
    /// A handle with no maintainer yet: the root supervisor spawns it.
    pub fn new(call_timeout: Duration) -> Self {
        Maintainer {
            current: Current::default(),
            timeout: call_timeout,
        }
    }

    /// Maintains `unit` if it needs it.
    pub fn schedule(&self, unit: Arc<dyn Maintainable>) {
        if unit.needs_maintenance() {
            // Not running: the restart's recovery schedules the lanes again.
            let _ = self.current.cast(MaintenanceMsg::Schedule(unit));
        }
    }

    pub async fn stats(&self) -> Result<MaintenanceStats, CallFailure> {
        self.current
            .call(MaintenanceMsg::GetStats, self.timeout)
            .await
    }
}

#[async_trait]
impl Child for Maintainer {
    async fn spawn_linked(&self, supervisor: ActorCell) -> Result<ActorCell, SpawnErr> {
        let (actor, _) = Actor::spawn_linked(None, MaintenanceActor, (), supervisor).await?;
        self.current.set(actor.clone());
        Ok(actor.get_cell())
    }

    fn close(&self) {
        self.current.close();
    }
}

/// Starts the next queued run when none is running.
fn start_next(myself: &ActorRef<MaintenanceMsg>, state: &mut MaintenanceState) {
    if state.running.is_some() {
        return;
    }
    let Some(unit) = state.queue.pop_front() else {
        return;
    };
    state.queued.remove(&unit.key());
    state.running = Some(unit.key());
    let myself = myself.clone();
    tokio::spawn(async move {
        let started = Instant::now();
        let worker = unit.clone();
        let outcome = tokio::task::spawn_blocking(move || worker.maintain())
            .await
            .map_err(|e| e.to_string());
        let _ = myself.cast(MaintenanceMsg::Finished {
            unit,
            outcome,
            elapsed: started.elapsed(),
        });
    });
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Needs `pending` runs; panics on its run number `panic_on` (if any).
    struct Unit {
        key: u64,
        pending: AtomicUsize,
        runs: AtomicUsize,
        panic_on: Option<usize>,
    }

    impl Maintainable for Unit {
        fn key(&self) -> u64 {
            self.key
        }
        fn needs_maintenance(&self) -> bool {
            self.pending.load(Ordering::SeqCst) > 0
        }
        fn maintain(&self) -> usize {
            let run = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
            self.pending.fetch_sub(1, Ordering::SeqCst);
            if Some(run) == self.panic_on {
                panic!("injected failure");
            }
            std::thread::sleep(Duration::from_millis(5));
            1
        }
    }

    fn unit(key: u64, pending: usize, panic_on: Option<usize>) -> Arc<Unit> {
        Arc::new(Unit {
            key,
            pending: AtomicUsize::new(pending),
            runs: AtomicUsize::new(0),
            panic_on,
        })
    }

    async fn settle(actor: &ActorRef<MaintenanceMsg>) -> MaintenanceStats {
        for _ in 0..400 {
            let stats = ractor::call_t!(actor, MaintenanceMsg::GetStats, 1_000).unwrap();
            if !stats.running && stats.queued == 0 {
                return stats;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("maintenance did not settle");
    }

    #[tokio::test]
    async fn runs_until_no_work_is_left_and_dedupes_requests() {
        let (actor, handle) = Actor::spawn(None, MaintenanceActor, ()).await.unwrap();
        let a = unit(1, 3, None);
        let idle = unit(2, 0, None);
        for _ in 0..5 {
            actor.cast(MaintenanceMsg::Schedule(a.clone())).unwrap();
        }
        actor.cast(MaintenanceMsg::Schedule(idle.clone())).unwrap();
        let stats = settle(&actor).await;
        assert_eq!(a.runs.load(Ordering::SeqCst), 3);
        assert_eq!(idle.runs.load(Ordering::SeqCst), 0);
        assert_eq!(stats.segments_built, 3);
        actor.stop(None);
        handle.await.unwrap();
    }

    #[tokio::test]
    async fn a_panicking_run_is_counted_and_the_actor_keeps_working() {
        let (actor, handle) = Actor::spawn(None, MaintenanceActor, ()).await.unwrap();
        let flaky = unit(7, 2, Some(1));
        actor.cast(MaintenanceMsg::Schedule(flaky.clone())).unwrap();
        let stats = settle(&actor).await;
        assert_eq!(stats.failures, 1);
        assert_eq!(flaky.runs.load(Ordering::SeqCst), 2);
        let other = unit(8, 1, None);
        actor.cast(MaintenanceMsg::Schedule(other.clone())).unwrap();
        settle(&actor).await;
        assert_eq!(other.runs.load(Ordering::SeqCst), 1);
        actor.stop(None);
        handle.await.unwrap();
    }
}
