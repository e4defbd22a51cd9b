//! A heartbeat: at a fixed interval, one round of periodic work, run by a supervised actor so
//! that a round that panics is restarted like any other child. Two beat: the cluster's
//! membership (renew this node's registration, notice that it was declared dead, hand over or
//! take workspaces) and the purge of deleted content.
//!
//! A round runs in a task of its own, never in the mailbox, and at most one runs at a time: a
//! slow database delays the next round instead of stacking them. The work lives behind
//! [`Beat`], implemented by the cluster engine and the purger.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, SpawnErr};

use crate::supervisor::{Child, Current};

/// One round of membership work.
#[async_trait]
pub trait Beat: Send + Sync + 'static {
    /// Runs one round; an error is logged and the next round comes at the usual time.
    async fn beat(&self) -> Result<(), String>;
}

pub struct HeartbeatActor;

pub struct HeartbeatArgs {
    /// What beats, for logs (`cluster heartbeat`, `purge`).
    pub what: &'static str,
    pub beat: Arc<dyn Beat>,
    pub interval: Duration,
}

pub struct HeartbeatState {
    what: &'static str,
    beat: Arc<dyn Beat>,
    interval: Duration,
    running: bool,
    failures: u64,
}

pub enum HeartbeatMsg {
    /// Time for a round (skipped while one runs).
    Tick,
    /// A round ended (sent by the round's own task).
    Done {
        outcome: Result<(), String>,
        elapsed: Duration,
    },
}

impl Actor for HeartbeatActor {
    type Msg = HeartbeatMsg;
    type State = HeartbeatState;
    type Arguments = HeartbeatArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: HeartbeatArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        // The first round at once: a restarted heartbeat renews before the TTL runs out.
        myself.cast(HeartbeatMsg::Tick)?;
        Ok(HeartbeatState {
            what: args.what,
            beat: args.beat,
            interval: args.interval,
            running: false,
            failures: 0,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            HeartbeatMsg::Tick if state.running => {}
            HeartbeatMsg::Tick => {
                state.running = true;
                let beat = state.beat.clone();
                let timeout = state.interval.max(Duration::from_secs(1)) * 4;
                let myself = myself.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let outcome = match tokio::time::timeout(timeout, beat.beat()).await {
                        Ok(outcome) => outcome,
                        Err(_) => Err(format!("the round took longer than {timeout:?}")),
                    };
                    let _ = myself.cast(HeartbeatMsg::Done {
                        outcome,
                        elapsed: started.elapsed(),
                    });
                });
            }
            HeartbeatMsg::Done { outcome, elapsed } => {
                state.running = false;
                if let Err(error) = outcome {
                    state.failures += 1;
                    tracing::warn!(
                        what = state.what,
                        %error,
                        failures = state.failures,
                        elapsed_ms = elapsed.as_millis() as u64,
                        "periodic round failed"
                    );
                }
                let next = state.interval.saturating_sub(elapsed);
                myself.send_after(next, || HeartbeatMsg::Tick);
            }
        }
        Ok(())
    }
}

/// The handle the root supervisor spawns the heartbeat through.
#[derive(Clone)]
pub struct Heartbeat {
    current: Current<HeartbeatMsg>,
    what: &'static str,
    beat: Arc<dyn Beat>,
    interval: Duration,
}

impl Heartbeat {
    pub fn new(what: &'static str, beat: Arc<dyn Beat>, interval: Duration) -> Self {
        Heartbeat {
            current: Current::default(),
            what,
            beat,
            interval,
        }
    }
}

#[async_trait]
impl Child for Heartbeat {
    async fn spawn_linked(&self, supervisor: ActorCell) -> Result<ActorCell, SpawnErr> {
        let args = HeartbeatArgs {
            what: self.what,
            beat: self.beat.clone(),
            interval: self.interval,
        };
        let (actor, _) = Actor::spawn_linked(None, HeartbeatActor, args, supervisor).await?;
        self.current.set(actor.clone());
        Ok(actor.get_cell())
    }

    fn close(&self) {
        self.current.close();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    struct Counting {
        rounds: AtomicU32,
        fail: bool,
    }

    #[async_trait]
    impl Beat for Counting {
        async fn beat(&self) -> Result<(), String> {
            self.rounds.fetch_add(1, Ordering::SeqCst);
            if self.fail {
                Err("down".into())
            } else {
                Ok(())
            }
        }
    }

    /// Rounds come one after another, failed or not, until the actor stops.
    #[tokio::test]
    async fn rounds_repeat_and_survive_failures() {
        for fail in [false, true] {
            let counting = Arc::new(Counting {
                rounds: AtomicU32::new(0),
                fail,
            });
            let args = HeartbeatArgs {
                what: "test",
                beat: counting.clone(),
                interval: Duration::from_millis(10),
            };
            let (actor, handle) = Actor::spawn(None, HeartbeatActor, args).await.unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            while counting.rounds.load(Ordering::SeqCst) < 3 && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            assert!(counting.rounds.load(Ordering::SeqCst) >= 3, "fail={fail}");
            actor.stop(None);
            handle.await.unwrap();
        }
    }
}
