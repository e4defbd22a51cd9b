//! The registry: spawns one [`WorkspaceActor`] per active workspace and supervises them. When a
//! workspace actor dies (a panic, a kill, an idle stop), the registry forgets it and the next
//! request for that workspace is served by a fresh one, started from storage.
//!
//! Spawning a workspace actor reads storage, so it runs in a task of its own: the registry's
//! mailbox never waits on I/O. Requests for a workspace whose actor is still starting wait in
//! `starting` and are answered together.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use ractor::{
    Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SpawnErr,
    SupervisionEvent,
};
use uuid::Uuid;

use crate::plan::{EndpointClass, Plan, PlanTable};
use crate::store::{StoreFailure, WorkspaceStore};
use crate::supervisor::{is_live, CallFailure, Child, Current};
use crate::workspace::{
    Admission, CachedProfile, ProfileKey, ProfileLookup, Usage, WorkspaceActor, WorkspaceArgs,
    WorkspaceMsg,
};

/// Configuration of the registry and of every workspace actor it spawns.
#[derive(Clone)]
pub struct RegistryArgs {
    pub store: Arc<dyn WorkspaceStore>,
    pub plans: Arc<PlanTable>,
    pub rate_limits: bool,
    pub idle_timeout: Duration,
    pub refresh_every: Duration,
}

pub struct RegistryActor;

type Resolved = Result<ActorRef<WorkspaceMsg>, WorkspacesError>;

pub struct RegistryState {
    config: RegistryArgs,
    live: HashMap<Uuid, ActorRef<WorkspaceMsg>>,
    by_actor: HashMap<ActorId, Uuid>,
    starting: HashMap<Uuid, Vec<RpcReplyPort<Resolved>>>,
}

pub enum RegistryMsg {
    /// The actor of a workspace, spawned if needed.
    Resolve {
        workspace_id: Uuid,
        reply: RpcReplyPort<Resolved>,
    },
    /// A spawn task finished.
    Spawned {
        workspace_id: Uuid,
        result: Resolved,
    },
    /// Deliver a message to a workspace's actor if it is live; a workspace without a live actor
    /// needs none (its next actor starts from storage).
    Forward {
        workspace_id: Uuid,
        message: WorkspaceMsg,
    },
    /// How many workspace actors are live.
    CountLive { reply: RpcReplyPort<usize> },
    /// Stops a workspace's actor (its windows and counts are forgotten; a later request starts
    /// a fresh one from storage): the workspace moved to another node of a cluster.
    Evict { workspace_id: Uuid },
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum WorkspacesError {
    #[error("workspace {0} does not exist")]
    UnknownWorkspace(Uuid),
    #[error("workspace actor did not answer in time")]
    Timeout,
    #[error("workspace actor unavailable: {0}")]
    Unavailable(String),
}

impl RegistryState {
    fn forget(&mut self, actor: ActorId) {
        if let Some(workspace_id) = self.by_actor.remove(&actor) {
            if self
                .live
                .get(&workspace_id)
                .is_some_and(|a| a.get_id() == actor)
            {
                self.live.remove(&workspace_id);
            }
        }
    }

    /// Loads the workspace and spawns its actor in a task of its own, which reports back with
    /// [`RegistryMsg::Spawned`].
    fn spawn_child(&self, myself: &ActorRef<RegistryMsg>, workspace_id: Uuid) {
        let config = self.config.clone();
        let registry = myself.clone();
        tokio::spawn(async move {
            let result = match config.store.load_workspace(workspace_id).await {
                Ok(snapshot) => {
                    let args = WorkspaceArgs {
                        workspace_id,
                        snapshot,
                        store: config.store,
                        plans: config.plans,
                        rate_limits: config.rate_limits,
                        idle_timeout: config.idle_timeout,
                        refresh_every: config.refresh_every,
                    };
                    Actor::spawn_linked(None, WorkspaceActor, args, registry.get_cell())
                        .await
                        .map(|(actor, _handle)| actor)
                        .map_err(|error| WorkspacesError::Unavailable(error.to_string()))
                }
                Err(StoreFailure::UnknownWorkspace(id)) => {
                    Err(WorkspacesError::UnknownWorkspace(id))
                }
                Err(error @ StoreFailure::Other(_)) => {
                    Err(WorkspacesError::Unavailable(error.to_string()))
                }
            };
            let _ = registry.cast(RegistryMsg::Spawned {
                workspace_id,
                result,
            });
        });
    }
}

impl Actor for RegistryActor {
    type Msg = RegistryMsg;
    type State = RegistryState;
    type Arguments = RegistryArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        config: RegistryArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(RegistryState {
            config,
            live: HashMap::new(),
            by_actor: HashMap::new(),
            starting: HashMap::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            RegistryMsg::Resolve {
                workspace_id,
                reply,
            } => {
                if let Some(actor) = state.live.get(&workspace_id) {
                    if is_live(actor.get_status()) {
                        let _ = reply.send(Ok(actor.clone()));
                        return Ok(());
                    }
                    // Stopping or dead, and its exit not yet reported: replace it now.
                    let dead = actor.get_id();
                    state.forget(dead);
                }
                let first = !state.starting.contains_key(&workspace_id);
                state.starting.entry(workspace_id).or_default().push(reply);
                if first {
                    state.spawn_child(&myself, workspace_id);
                }
            }
            RegistryMsg::Spawned {
                workspace_id,
                result,
            } => {
                if let Ok(actor) = &result {
                    tracing::debug!(%workspace_id, actor = %actor.get_id(), "workspace actor started");
                    state.by_actor.insert(actor.get_id(), workspace_id);
                    state.live.insert(workspace_id, actor.clone());
                }
                for waiter in state.starting.remove(&workspace_id).unwrap_or_default() {
                    let _ = waiter.send(result.clone());
                }
            }
            RegistryMsg::Forward {
                workspace_id,
                message,
            } => {
                if let Some(actor) = state.live.get(&workspace_id) {
                    let _ = actor.cast(message);
                }
            }
            RegistryMsg::CountLive { reply } => {
                let _ = reply.send(state.live.len());
            }
            RegistryMsg::Evict { workspace_id } => {
                if let Some(actor) = state.live.remove(&workspace_id) {
                    state.by_actor.remove(&actor.get_id());
                    actor.stop(Some("the workspace moved to another node".to_string()));
                }
            }
        }
        Ok(())
    }

    // Overridden: the default stops the registry when a child dies.
    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                tracing::debug!(actor = %cell.get_id(), ?reason, "workspace actor stopped");
                state.forget(cell.get_id());
            }
            SupervisionEvent::ActorFailed(cell, error) => {
                tracing::warn!(actor = %cell.get_id(), %error, "workspace actor failed; the next request starts a fresh one");
                state.forget(cell.get_id());
            }
            SupervisionEvent::ActorStarted(_) | SupervisionEvent::ProcessGroupChanged(_) => {}
        }
        Ok(())
    }
}

/// The handle the rest of memvault uses: every call has a timeout. It follows the registry
/// across restarts (a registry's workspace actors die with it; the next request for a
/// workspace starts a fresh actor from storage, whose rate-limit windows start empty).
#[derive(Clone)]
pub struct Workspaces {
    registry: Current<RegistryMsg>,
    args: RegistryArgs,
    timeout: Duration,
    rate_limits: bool,
    /// Actors resolved before, so that most requests skip the registry hop. An entry whose
    /// actor has stopped is dropped when next used.
    known: Arc<RwLock<HashMap<Uuid, ActorRef<WorkspaceMsg>>>>,
}

impl Workspaces {
    /// A handle with no registry yet: the root supervisor spawns it.
    pub fn new(args: RegistryArgs, call_timeout: Duration) -> Self {
        Workspaces {
            rate_limits: args.rate_limits,
            registry: Current::default(),
            args,
            timeout: call_timeout,
            known: Arc::new(RwLock::new(HashMap::new())),
        }
    }

    /// Starts a registry of its own, unsupervised (tests and tools; unnamed, so that many can
    /// run side by side).
    pub async fn start(
        args: RegistryArgs,
        call_timeout: Duration,
    ) -> Result<(Self, tokio::task::JoinHandle<()>), ractor::SpawnErr> {
        let workspaces = Workspaces::new(args, call_timeout);
        let (registry, handle) = Actor::spawn(None, RegistryActor, workspaces.args.clone()).await?;
        workspaces.registry.set(registry);
        Ok((workspaces, handle))
    }

    async fn call<T: Send + 'static>(
        &self,
        actor: &ActorRef<WorkspaceMsg>,
        build: impl FnOnce(RpcReplyPort<T>) -> WorkspaceMsg,
    ) -> Result<Option<T>, WorkspacesError> {
        match actor.call(build, Some(self.timeout)).await {
            Ok(ractor::rpc::CallResult::Success(value)) => Ok(Some(value)),
            Ok(ractor::rpc::CallResult::Timeout) => Err(WorkspacesError::Timeout),
            // The actor died between resolve and call: the caller resolves again.
            Ok(ractor::rpc::CallResult::SenderError) | Err(_) => Ok(None),
        }
    }

    fn forget_known(&self, workspace_id: Uuid) {
        if let Ok(mut known) = self.known.write() {
            known.remove(&workspace_id);
        }
    }

    /// The live actor of a workspace, started if needed.
    pub async fn resolve(
        &self,
        workspace_id: Uuid,
    ) -> Result<ActorRef<WorkspaceMsg>, WorkspacesError> {
        let cached = self
            .known
            .read()
            .ok()
            .and_then(|known| known.get(&workspace_id).cloned());
        if let Some(actor) = cached {
            if is_live(actor.get_status()) {
                return Ok(actor);
            }
            self.forget_known(workspace_id);
        }
        let actor = self.resolve_through_registry(workspace_id).await?;
        if let Ok(mut known) = self.known.write() {
            known.insert(workspace_id, actor.clone());
        }
        Ok(actor)
    }

    async fn resolve_through_registry(
        &self,
        workspace_id: Uuid,
    ) -> Result<ActorRef<WorkspaceMsg>, WorkspacesError> {
        self.registry
            .call(
                |reply| RegistryMsg::Resolve {
                    workspace_id,
                    reply,
                },
                self.timeout,
            )
            .await
            .map_err(registry_failure)?
    }

    /// Asks the workspace's actor, resolving once more if the actor died in between.
    async fn ask<T: Send + 'static>(
        &self,
        workspace_id: Uuid,
        build: impl Fn(RpcReplyPort<T>) -> WorkspaceMsg,
    ) -> Result<T, WorkspacesError> {
        for _ in 0..2 {
            let actor = self.resolve(workspace_id).await?;
            if let Some(value) = self.call(&actor, &build).await? {
                return Ok(value);
            }
            self.forget_known(workspace_id);
        }
        Err(WorkspacesError::Unavailable(
            "workspace actor keeps stopping".to_string(),
        ))
    }

    /// Admits one request of `class`, reserving a memory slot when asked.
    pub async fn admit(
        &self,
        workspace_id: Uuid,
        class: EndpointClass,
        reserve_memory: bool,
    ) -> Result<Admission, WorkspacesError> {
        if !self.rate_limits && !reserve_memory {
            // Nothing to count: no need to ask the actor.
            return Ok(Admission::Allowed {
                rate: None,
                permit: None,
            });
        }
        self.ask(workspace_id, |reply| WorkspaceMsg::Admit {
            class,
            reserve_memory,
            reply,
        })
        .await
    }

    /// Reserves one memory slot without counting a request (parts of a long note, imports).
    pub async fn reserve_memory(&self, workspace_id: Uuid) -> Result<Admission, WorkspacesError> {
        self.ask(workspace_id, |reply| WorkspaceMsg::Reserve { reply })
            .await
    }

    /// The cached profile of a scope and project, with the generation to cache a fresh one at.
    pub async fn profile(
        &self,
        workspace_id: Uuid,
        key: ProfileKey,
    ) -> Result<ProfileLookup, WorkspacesError> {
        self.ask(workspace_id, |reply| WorkspaceMsg::GetProfile {
            key: key.clone(),
            reply,
        })
        .await
    }

    /// Caches a profile computed at `generation`.
    pub fn cache_profile(
        &self,
        workspace_id: Uuid,
        key: ProfileKey,
        generation: u64,
        profile: Arc<CachedProfile>,
    ) {
        self.tell(
            workspace_id,
            WorkspaceMsg::PutProfile {
                key,
                generation,
                profile,
            },
        );
    }

    /// A write happened in `scope`: its cached profiles are dropped.
    pub fn scope_changed(&self, workspace_id: Uuid, scope: &str) {
        self.tell(
            workspace_id,
            WorkspaceMsg::InvalidateProfiles {
                scope: scope.to_string(),
            },
        );
    }

    pub async fn usage(&self, workspace_id: Uuid) -> Result<Usage, WorkspacesError> {
        self.ask(workspace_id, |reply| WorkspaceMsg::GetUsage { reply })
            .await
    }

    /// Delivers a message to the workspace's actor if one is live. Straight to a known actor,
    /// so that it arrives before anything this caller asks next; through the registry
    /// otherwise, which delivers it to a live actor (a workspace without one needs nothing:
    /// its next actor starts from storage).
    fn tell(&self, workspace_id: Uuid, message: WorkspaceMsg) {
        let known = self
            .known
            .read()
            .ok()
            .and_then(|known| known.get(&workspace_id).cloned());
        let message = match known {
            Some(actor) => match actor.cast(message) {
                Ok(()) => return,
                Err(ractor::MessagingErr::SendErr(message)) => message,
                Err(_) => return,
            },
            None => message,
        };
        // No registry running: nothing to deliver to (its workspace actors died with it).
        let _ = self.registry.cast(RegistryMsg::Forward {
            workspace_id,
            message,
        });
    }

    /// Current memories were removed (deleted, forgotten).
    pub fn memories_removed(&self, workspace_id: Uuid, count: u64) {
        if count > 0 {
            self.tell(workspace_id, WorkspaceMsg::RemoveMemories { count });
        }
    }

    /// The plan changed: applies to the next request.
    pub fn plan_changed(&self, workspace_id: Uuid, plan: Plan) {
        self.tell(workspace_id, WorkspaceMsg::SetPlan { plan });
    }

    /// Stops the workspace's actor, if live (it moved to another node of a cluster).
    pub fn evict(&self, workspace_id: Uuid) {
        let _ = self.registry.cast(RegistryMsg::Evict { workspace_id });
    }

    pub async fn live_count(&self) -> Result<usize, WorkspacesError> {
        self.registry
            .call(|reply| RegistryMsg::CountLive { reply }, self.timeout)
            .await
            .map_err(registry_failure)
    }

    /// Stops a registry started with [`Workspaces::start`] (a supervised one is stopped by
    /// its supervisor).
    pub fn stop(&self) {
        if let Some(registry) = self.registry.get() {
            registry.stop(None);
        }
    }
}

fn registry_failure(failure: CallFailure) -> WorkspacesError {
    match failure {
        CallFailure::Timeout => WorkspacesError::Timeout,
        CallFailure::Unavailable => WorkspacesError::Unavailable("registry stopped".to_string()),
    }
}

#[async_trait]
impl Child for Workspaces {
    async fn spawn_linked(&self, supervisor: ActorCell) -> Result<ActorCell, SpawnErr> {
        let (registry, _) =
            Actor::spawn_linked(None, RegistryActor, self.args.clone(), supervisor).await?;
        // The dead registry's workspace actors died with it.
        if let Ok(mut known) = self.known.write() {
            known.clear();
        }
        self.registry.set(registry.clone());
        Ok(registry.get_cell())
    }

    fn close(&self) {
        self.registry.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::tests::FakeStore;

    fn registry_args(store: Arc<FakeStore>) -> RegistryArgs {
        RegistryArgs {
            store,
            plans: Arc::new(PlanTable::default()),
            rate_limits: true,
            idle_timeout: Duration::from_secs(600),
            refresh_every: Duration::from_secs(30),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_burst_at_first_contact_spawns_one_actor_and_admits_exactly_the_limit() {
        let id = Uuid::new_v4();
        let (workspaces, handle) = Workspaces::start(
            registry_args(FakeStore::with(id, Plan::Free, 0)),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        let tasks: Vec<_> = (0..100)
            .map(|_| {
                let workspaces = workspaces.clone();
                tokio::spawn(async move {
                    workspaces
                        .admit(id, EndpointClass::Save, false)
                        .await
                        .unwrap()
                })
            })
            .collect();
        // Counted per window: a burst that straddles a minute boundary gets 30 in each.
        let mut windows: HashMap<i64, (u32, u32)> = HashMap::new();
        for task in tasks {
            match task.await.unwrap() {
                Admission::Allowed {
                    rate: Some(rate), ..
                } => windows.entry(rate.reset_at).or_default().0 += 1,
                Admission::RateLimited { rate } => windows.entry(rate.reset_at).or_default().1 += 1,
                other => panic!("unexpected admission {other:?}"),
            }
        }
        for (allowed, limited) in windows.values() {
            assert!(*allowed <= 30, "{windows:?}");
            if *limited > 0 {
                assert_eq!(*allowed, 30, "{windows:?}");
            }
        }
        assert_eq!(workspaces.live_count().await.unwrap(), 1);
        workspaces.stop();
        handle.await.unwrap();
    }

    #[tokio::test]
    async fn a_dead_workspace_actor_is_replaced_on_the_next_request() {
        let id = Uuid::new_v4();
        let (workspaces, handle) = Workspaces::start(
            registry_args(FakeStore::with(id, Plan::Free, 0)),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        let first = workspaces.resolve(id).await.unwrap();
        assert_eq!(
            workspaces.resolve(id).await.unwrap().get_id(),
            first.get_id()
        );
        first.kill();
        // The registry survives its child's death and serves the next request with a new one.
        assert!(matches!(
            workspaces
                .admit(id, EndpointClass::Read, false)
                .await
                .unwrap(),
            Admission::Allowed { .. }
        ));
        let second = workspaces.resolve(id).await.unwrap();
        assert_ne!(second.get_id(), first.get_id());
        assert_eq!(workspaces.live_count().await.unwrap(), 1);
        workspaces.stop();
        handle.await.unwrap();
    }

    #[tokio::test]
    async fn concurrent_first_requests_share_one_actor() {
        let id = Uuid::new_v4();
        let (workspaces, _handle) = Workspaces::start(
            registry_args(FakeStore::with(id, Plan::Free, 0)),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let w = workspaces.clone();
                tokio::spawn(async move { w.resolve(id).await.unwrap().get_id() })
            })
            .collect();
        let mut ids = Vec::new();
        for task in tasks {
            ids.push(task.await.unwrap());
        }
        ids.dedup();
        assert_eq!(ids.len(), 1);
        workspaces.stop();
    }

    #[tokio::test]
    async fn an_unknown_workspace_is_reported() {
        let (workspaces, _handle) = Workspaces::start(
            registry_args(Arc::new(FakeStore::default())),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        let id = Uuid::new_v4();
        assert!(
            matches!(workspaces.resolve(id).await, Err(WorkspacesError::UnknownWorkspace(w)) if w == id)
        );
        assert_eq!(workspaces.live_count().await.unwrap(), 0);
        workspaces.stop();
    }

    #[tokio::test]
    async fn forwarded_plan_changes_reach_a_live_actor() {
        let id = Uuid::new_v4();
        let (workspaces, _handle) = Workspaces::start(
            registry_args(FakeStore::with(id, Plan::Free, 0)),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        assert_eq!(workspaces.usage(id).await.unwrap().plan, Plan::Free);
        workspaces.plan_changed(id, Plan::Pro);
        assert_eq!(workspaces.usage(id).await.unwrap().plan, Plan::Pro);
        workspaces.stop();
    }
}
