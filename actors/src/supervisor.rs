//! The root of the supervision tree: it owns every long-lived actor (the workspace registry,
//! the index maintainer, the jobs supervisor, the ingestion supervisor), restarts a child that
//! dies after a capped exponential backoff, and gives up when one dies more than
//! `max_restarts` times within `window`: it restarts nothing more and reports why on its
//! give-up channel; the server then stops in order (the root stopping the children left, last
//! started first) and exits non-zero, so its service manager starts a fresh process.
//!
//! Handles never hold a child's `ActorRef` directly: they hold a [`Current`], which each new
//! generation is installed into, so a handle made at start-up keeps reaching the child after
//! any number of restarts. A restarted child may have lost work its dead generation held in
//! memory; its spec's recovery (run after every restart, off the root's mailbox) gets it back
//! from storage.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use ractor::{
    Actor, ActorCell, ActorProcessingErr, ActorRef, ActorStatus, Message, RpcReplyPort, SpawnErr,
    SupervisionEvent,
};
use tokio::sync::{oneshot, watch};

use crate::jobs::backoff;

/// Whether an actor in `status` takes messages. A freshly spawned actor is `Starting` until its
/// processing task first runs (ractor's `spawn` returns before that): it must count as live, or
/// a burst of requests right after a workspace actor's spawn would replace it with a second
/// actor, and each actor would count its own rate-limit window.
pub fn is_live(status: ActorStatus) -> bool {
    match status {
        ActorStatus::Starting | ActorStatus::Running | ActorStatus::Upgrading => true,
        ActorStatus::Unstarted
        | ActorStatus::Draining
        | ActorStatus::Stopping
        | ActorStatus::Stopped => false,
    }
}

/// The current generation of a supervised actor, as its handle sees it.
pub struct Current<M: Message> {
    slot: Arc<watch::Sender<Option<ActorRef<M>>>>,
    /// No generation will follow (the root gave up on this child).
    closed: Arc<AtomicBool>,
}

impl<M: Message> Clone for Current<M> {
    fn clone(&self) -> Self {
        Current {
            slot: self.slot.clone(),
            closed: self.closed.clone(),
        }
    }
}

impl<M: Message> Default for Current<M> {
    fn default() -> Self {
        Current {
            slot: Arc::new(watch::channel(None).0),
            closed: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// Why a call through a [`Current`] did not get an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CallFailure {
    #[error("the actor did not answer in time")]
    Timeout,
    #[error("the actor is not running")]
    Unavailable,
}

impl<M: Message> Current<M> {
    /// Installs a new generation (its spawner calls this).
    pub fn set(&self, actor: ActorRef<M>) {
        self.slot.send_replace(Some(actor));
    }

    /// The generation installed last, live or not.
    pub fn get(&self) -> Option<ActorRef<M>> {
        self.slot.borrow().clone()
    }

    /// No generation follows the installed one: a call waiting for a successor fails at once.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.slot.send_modify(|_| {});
    }

    /// Whether the installed generation takes messages.
    pub fn is_live(&self) -> bool {
        self.get().is_some_and(|a| is_live(a.get_status()))
    }

    /// A live generation: the installed one, or, while it is dead, the next one the supervisor
    /// starts within `wait`.
    pub async fn live(&self, wait: Duration) -> Option<ActorRef<M>> {
        self.live_other_than(None, wait).await
    }

    /// [`Current::live`], skipping generation `failed` (one that dropped a question: ractor
    /// drops a failing actor's mailbox before it marks the actor stopping).
    async fn live_other_than(
        &self,
        failed: Option<ractor::ActorId>,
        wait: Duration,
    ) -> Option<ActorRef<M>> {
        let mut changes = self.slot.subscribe();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(actor) = changes.borrow_and_update().clone() {
                if is_live(actor.get_status()) && Some(actor.get_id()) != failed {
                    return Some(actor);
                }
            }
            if self.closed.load(Ordering::SeqCst) {
                return None;
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => continue,
                Ok(Err(_)) | Err(_) => return None,
            }
        }
    }

    /// Sends `message` to the installed generation; `Unavailable` when none takes messages
    /// (the message is dropped: its sender knows how to get the work back after a restart).
    pub fn cast(&self, message: M) -> Result<(), CallFailure> {
        let actor = self.get().ok_or(CallFailure::Unavailable)?;
        actor.cast(message).map_err(|_| CallFailure::Unavailable)
    }

    /// Asks the live generation, waiting for a restart when it is dead, and asking the next
    /// generation once when the asked one dies before answering. `timeout` bounds the whole.
    pub async fn call<T: Send + 'static>(
        &self,
        build: impl Fn(RpcReplyPort<T>) -> M,
        timeout: Duration,
    ) -> Result<T, CallFailure> {
        let deadline = Instant::now() + timeout;
        let mut failed = None;
        for _ in 0..2 {
            let left = deadline.saturating_duration_since(Instant::now());
            let actor = self
                .live_other_than(failed, left)
                .await
                .ok_or(CallFailure::Unavailable)?;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(CallFailure::Timeout);
            }
            match actor.call(&build, Some(left)).await {
                Ok(ractor::rpc::CallResult::Success(value)) => return Ok(value),
                Ok(ractor::rpc::CallResult::Timeout) => return Err(CallFailure::Timeout),
                // It died with the question in its mailbox: ask its successor.
                Ok(ractor::rpc::CallResult::SenderError) | Err(_) => {
                    failed = Some(actor.get_id());
                }
            }
        }
        Err(CallFailure::Unavailable)
    }
}

/// Something the root supervises: it spawns a generation linked to the root and installs it
/// into its handle's [`Current`].
#[async_trait]
pub trait Child: Send + Sync + 'static {
    async fn spawn_linked(&self, supervisor: ActorCell) -> Result<ActorCell, SpawnErr>;
    /// The root gave up on this child: no generation follows (close its [`Current`]).
    fn close(&self);
}

/// Work run after a child's restart (not after its first start).
pub type Recovery = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// A child of the root: its name (in logs, `/readyz` and metrics), how to spawn it, and how to
/// recover what a dead generation held.
pub struct ChildSpec {
    name: &'static str,
    child: Arc<dyn Child>,
    recover: Option<Recovery>,
}

impl ChildSpec {
    pub fn new(name: &'static str, child: impl Child) -> Self {
        ChildSpec {
            name,
            child: Arc::new(child),
            recover: None,
        }
    }

    /// Runs `recover` after each restart, in a task of its own.
    pub fn recover_with<F, Fut>(mut self, recover: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.recover = Some(Arc::new(move || Box::pin(recover())));
        self
    }
}

/// When the root restarts a child, and when it gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// The delay before the first restart; doubled for each further death in the window.
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    /// Restarts allowed within `window`; one more death and the root gives up.
    pub max_restarts: u32,
    pub window: Duration,
}

/// What the root knows of a child, shared with its handle.
#[derive(Clone)]
struct Entry {
    name: &'static str,
    cell: Option<ActorCell>,
    restarts: u64,
}

type Board = Arc<RwLock<Vec<Entry>>>;

/// A child's state, for readiness and metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildReport {
    pub name: &'static str,
    pub alive: bool,
    /// Restarts since the process started.
    pub restarts: u64,
}

pub struct RootSupervisor;

pub struct RootArgs {
    children: Vec<ChildSpec>,
    policy: RestartPolicy,
    board: Board,
    gave_up: oneshot::Sender<String>,
}

struct Slot {
    spec: ChildSpec,
    /// Deaths within the policy's window, oldest first.
    deaths: VecDeque<Instant>,
}

pub struct RootState {
    slots: Vec<Slot>,
    policy: RestartPolicy,
    board: Board,
    gave_up: Option<oneshot::Sender<String>>,
    /// Shutting down, or given up: nothing is restarted.
    stopping: bool,
}

pub enum RootMsg {
    /// A backoff elapsed: start child `index` again.
    Restart(usize),
    /// Stop every child, last started first, each given `grace` to finish; then the root.
    Shutdown {
        grace: Duration,
        reply: RpcReplyPort<()>,
    },
}

impl RootState {
    fn publish(&self, index: usize, cell: Option<ActorCell>, restarted: bool) {
        let mut board = self.board.write().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = board.get_mut(index) {
            entry.cell = cell;
            if restarted {
                entry.restarts += 1;
            }
        }
    }

    fn cell_of(&self, index: usize) -> Option<ActorCell> {
        let board = self.board.read().unwrap_or_else(|e| e.into_inner());
        board.get(index).and_then(|e| e.cell.clone())
    }

    fn index_of(&self, cell: &ActorCell) -> Option<usize> {
        let board = self.board.read().unwrap_or_else(|e| e.into_inner());
        board
            .iter()
            .position(|e| e.cell.as_ref().is_some_and(|c| c.get_id() == cell.get_id()))
    }

    /// Child `index` died (or could not be started): restart it after a backoff, or give up.
    fn died(&mut self, myself: &ActorRef<RootMsg>, index: usize, why: String) {
        self.publish(index, None, false);
        let policy = self.policy;
        let slot = &mut self.slots[index];
        let now = Instant::now();
        while slot
            .deaths
            .front()
            .is_some_and(|d| now.duration_since(*d) > policy.window)
        {
            slot.deaths.pop_front();
        }
        slot.deaths.push_back(now);
        let deaths = slot.deaths.len() as u32;
        let name = slot.spec.name;
        if deaths > policy.max_restarts {
            let message = format!(
                "{name} died {deaths} times within {} s; giving up (last: {why})",
                policy.window.as_secs().max(1)
            );
            tracing::error!(actor = name, deaths, window_secs = policy.window.as_secs(), reason = %why, "a supervised actor keeps dying; giving up so that the process exits and its service manager restarts it");
            slot.spec.child.close();
            self.stopping = true;
            // The root stays up: the server's orderly stop asks it to stop the others.
            if let Some(gave_up) = self.gave_up.take() {
                let _ = gave_up.send(message);
            }
            return;
        }
        let delay = backoff(deaths, policy.backoff_base, policy.backoff_cap);
        tracing::warn!(actor = name, deaths, reason = %why, restart_in_ms = delay.as_millis() as u64, "a supervised actor died; restarting it");
        myself.send_after(delay, move || RootMsg::Restart(index));
    }
}

impl Actor for RootSupervisor {
    type Msg = RootMsg;
    type State = RootState;
    type Arguments = RootArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: RootArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let state = RootState {
            slots: args
                .children
                .into_iter()
                .map(|spec| Slot {
                    spec,
                    deaths: VecDeque::new(),
                })
                .collect(),
            policy: args.policy,
            board: args.board,
            gave_up: Some(args.gave_up),
            stopping: false,
        };
        for (index, slot) in state.slots.iter().enumerate() {
            let cell = slot
                .spec
                .child
                .spawn_linked(myself.get_cell())
                .await
                .map_err(|e| format!("cannot start {}: {e}", slot.spec.name))?;
            state.publish(index, Some(cell), false);
        }
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            RootMsg::Restart(index) => {
                if state.stopping || state.cell_of(index).is_some() {
                    return Ok(());
                }
                let spec = &state.slots[index].spec;
                let (name, child, recover) = (spec.name, spec.child.clone(), spec.recover.clone());
                match child.spawn_linked(myself.get_cell()).await {
                    Ok(cell) => {
                        tracing::info!(actor = name, "a supervised actor restarted");
                        state.publish(index, Some(cell), true);
                        if let Some(recover) = recover {
                            tokio::spawn(recover());
                        }
                    }
                    Err(error) => state.died(&myself, index, format!("cannot restart: {error}")),
                }
            }
            RootMsg::Shutdown { grace, reply } => {
                state.stopping = true;
                for index in (0..state.slots.len()).rev() {
                    if let Some(cell) = state.cell_of(index) {
                        if cell.stop_and_wait(None, Some(grace)).await.is_err() {
                            cell.kill();
                        }
                    }
                }
                let _ = reply.send(());
                myself.stop(None);
            }
        }
        Ok(())
    }

    /// Overridden: the default would stop the root when a child dies.
    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, why) = match event {
            SupervisionEvent::ActorTerminated(cell, _, reason) => (
                cell,
                reason.unwrap_or_else(|| "stopped without a reason".to_string()),
            ),
            SupervisionEvent::ActorFailed(cell, error) => (cell, format!("failed: {error}")),
            SupervisionEvent::ActorStarted(_) | SupervisionEvent::ProcessGroupChanged(_) => {
                return Ok(())
            }
        };
        if state.stopping {
            return Ok(());
        }
        if let Some(index) = state.index_of(&cell) {
            state.died(&myself, index, why);
        }
        Ok(())
    }
}

/// The handle of the root supervisor.
#[derive(Clone)]
pub struct Root {
    actor: ActorRef<RootMsg>,
    board: Board,
}

impl Root {
    /// Starts the root and, in order, each child. Returns the handle, the root's join handle,
    /// and the channel on which it says why it gave up (never, if all goes well).
    pub async fn start(
        children: Vec<ChildSpec>,
        policy: RestartPolicy,
    ) -> Result<(Root, tokio::task::JoinHandle<()>, oneshot::Receiver<String>), SpawnErr> {
        let board: Board = Arc::new(RwLock::new(
            children
                .iter()
                .map(|spec| Entry {
                    name: spec.name,
                    cell: None,
                    restarts: 0,
                })
                .collect(),
        ));
        let (gave_up, gave_up_rx) = oneshot::channel();
        let (actor, handle) = Actor::spawn(
            None,
            RootSupervisor,
            RootArgs {
                children,
                policy,
                board: board.clone(),
                gave_up,
            },
        )
        .await?;
        Ok((Root { actor, board }, handle, gave_up_rx))
    }

    /// Every child, in start order.
    pub fn report(&self) -> Vec<ChildReport> {
        let board = self.board.read().unwrap_or_else(|e| e.into_inner());
        board
            .iter()
            .map(|entry| ChildReport {
                name: entry.name,
                alive: entry.cell.as_ref().is_some_and(|c| is_live(c.get_status())),
                restarts: entry.restarts,
            })
            .collect()
    }

    /// The running generation of a child (tests kill it).
    pub fn child(&self, name: &str) -> Option<ActorCell> {
        let board = self.board.read().unwrap_or_else(|e| e.into_inner());
        board
            .iter()
            .find(|e| e.name == name)
            .and_then(|e| e.cell.clone())
    }

    /// Stops every child (last started first, each given `grace`) and then the root.
    pub async fn shutdown(&self, grace: Duration) {
        let children = self.board.read().map(|b| b.len()).unwrap_or(1) as u32;
        let wait = grace.saturating_mul(children.max(1)) + Duration::from_secs(1);
        let _ = self
            .actor
            .call(|reply| RootMsg::Shutdown { grace, reply }, Some(wait))
            .await;
        self.actor.stop(None);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A child that answers `Ping` and counts its generations.
    struct Echo;

    enum EchoMsg {
        Ping(RpcReplyPort<usize>),
    }

    impl Actor for Echo {
        type Msg = EchoMsg;
        type State = usize;
        type Arguments = usize;

        async fn pre_start(
            &self,
            _myself: ActorRef<EchoMsg>,
            generation: usize,
        ) -> Result<usize, ActorProcessingErr> {
            Ok(generation)
        }

        async fn handle(
            &self,
            _myself: ActorRef<EchoMsg>,
            message: EchoMsg,
            generation: &mut usize,
        ) -> Result<(), ActorProcessingErr> {
            match message {
                EchoMsg::Ping(reply) => {
                    let _ = reply.send(*generation);
                }
            }
            Ok(())
        }
    }

    #[derive(Clone, Default)]
    struct EchoHandle {
        current: Current<EchoMsg>,
        generations: Arc<AtomicUsize>,
    }

    #[async_trait]
    impl Child for EchoHandle {
        async fn spawn_linked(&self, supervisor: ActorCell) -> Result<ActorCell, SpawnErr> {
            let generation = self.generations.fetch_add(1, Ordering::SeqCst) + 1;
            let (actor, _) = Actor::spawn_linked(None, Echo, generation, supervisor).await?;
            self.current.set(actor.clone());
            Ok(actor.get_cell())
        }

        fn close(&self) {
            self.current.close();
        }
    }

    fn policy(max_restarts: u32) -> RestartPolicy {
        RestartPolicy {
            backoff_base: Duration::from_millis(20),
            backoff_cap: Duration::from_millis(100),
            max_restarts,
            window: Duration::from_secs(60),
        }
    }

    #[test]
    fn a_starting_actor_is_live_and_a_stopping_one_is_not() {
        assert!(is_live(ActorStatus::Starting));
        assert!(is_live(ActorStatus::Running));
        assert!(!is_live(ActorStatus::Stopping));
        assert!(!is_live(ActorStatus::Stopped));
        assert!(!is_live(ActorStatus::Draining));
    }

    #[tokio::test]
    async fn a_killed_child_is_restarted_and_its_handle_follows() {
        let echo = EchoHandle::default();
        let recovered = Arc::new(AtomicUsize::new(0));
        let counter = recovered.clone();
        let spec = ChildSpec::new("echo", echo.clone()).recover_with(move || {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
            }
        });
        let (root, handle, _gave_up) = Root::start(vec![spec], policy(3)).await.unwrap();
        assert_eq!(
            echo.current
                .call(EchoMsg::Ping, Duration::from_secs(5))
                .await,
            Ok(1)
        );
        root.child("echo")
            .unwrap()
            .kill_and_wait(Some(Duration::from_secs(5)))
            .await
            .unwrap();
        // The call made while it is dead waits for the next generation.
        assert_eq!(
            echo.current
                .call(EchoMsg::Ping, Duration::from_secs(5))
                .await,
            Ok(2)
        );
        assert_eq!(root.report()[0].restarts, 1);
        for _ in 0..100 {
            if recovered.load(Ordering::SeqCst) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(recovered.load(Ordering::SeqCst), 1);
        root.shutdown(Duration::from_secs(1)).await;
        handle.await.unwrap();
        assert!(!echo.current.is_live());
        assert_eq!(root.report()[0].restarts, 1, "no restart during shutdown");
    }

    #[tokio::test]
    async fn a_child_that_keeps_dying_makes_the_root_give_up() {
        let echo = EchoHandle::default();
        let (root, handle, gave_up) =
            Root::start(vec![ChildSpec::new("echo", echo.clone())], policy(2))
                .await
                .unwrap();
        for generation in 1..=3 {
            let actor = echo
                .current
                .live(Duration::from_secs(5))
                .await
                .expect("a live generation");
            assert_eq!(
                echo.current
                    .call(EchoMsg::Ping, Duration::from_secs(5))
                    .await,
                Ok(generation)
            );
            actor
                .kill_and_wait(Some(Duration::from_secs(5)))
                .await
                .unwrap();
        }
        let why = gave_up.await.expect("the root says why it gave up");
        assert!(why.starts_with("echo died 3 times"), "{why}");
        // Nothing follows: a call fails at once instead of waiting for a successor.
        assert_eq!(
            echo.current
                .call(EchoMsg::Ping, Duration::from_secs(30))
                .await,
            Err(CallFailure::Unavailable)
        );
        assert!(!root.report()[0].alive);
        assert_eq!(
            echo.generations.load(Ordering::SeqCst),
            3,
            "no fourth generation"
        );
        // The root is still up, for the orderly stop.
        root.shutdown(Duration::from_secs(1)).await;
        handle.await.unwrap();
    }
}
