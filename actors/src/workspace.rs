//! The workspace actor: one per active workspace. It owns the workspace's rate-limit windows
//! and its memory-limit accounting, so that both are exact under any concurrency: every
//! decision is taken in this actor's mailbox, one message at a time.
//!
//! It also keeps the workspace's computed profiles (a moka cache keyed by scope and project).
//! Every write in a scope bumps that scope's generation and drops its profiles; a profile
//! computed before a write (an older generation) is never stored.
//!
//! It never waits on storage in its mailbox: it starts from a snapshot the registry loaded for
//! it, and periodic plan reloads run in a spawned task that reports back.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use uuid::Uuid;

use crate::plan::{EndpointClass, Plan, PlanTable};
use crate::rate_limit::{self, RateStatus, Verdict, Window};
use crate::store::{WorkspaceSnapshot, WorkspaceStore};

/// Configuration of one workspace actor.
#[derive(Clone)]
pub struct WorkspaceArgs {
    pub workspace_id: Uuid,
    /// Plan and memory count as stored when the actor starts.
    pub snapshot: WorkspaceSnapshot,
    pub store: Arc<dyn WorkspaceStore>,
    pub plans: Arc<PlanTable>,
    /// `false` when rate limiting is off (`MEMVAULT_RATE_LIMITS=off`).
    pub rate_limits: bool,
    /// The actor stops itself after this long without a request; the registry forgets it.
    pub idle_timeout: Duration,
    /// How often the plan is reloaded from storage (a plan changed by another process).
    pub refresh_every: Duration,
}

pub struct WorkspaceActor;

/// A profile as computed by the memories service: stable facts and recent context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedProfile {
    pub static_lines: Vec<String>,
    pub dynamic_lines: Vec<String>,
}

/// Which profile: a scope (`""` unscoped) and a project (`None`: the whole scope).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProfileKey {
    pub scope: String,
    pub project: Option<String>,
}

/// A cached profile (if any) and the scope's generation, to hand back with a fresh one.
#[derive(Debug, Clone)]
pub struct ProfileLookup {
    pub profile: Option<Arc<CachedProfile>>,
    pub generation: u64,
}

/// Profiles kept per workspace, and for how long (the recent part depends on the date).
const PROFILES_KEPT: u64 = 256;
const PROFILE_TTL: Duration = Duration::from_secs(600);

pub struct WorkspaceState {
    config: WorkspaceArgs,
    plan: Plan,
    /// Current memories known to be stored.
    memory_count: u64,
    /// Saves admitted against the memory limit whose outcome is not known yet.
    reserved: u64,
    windows: [Window; 5],
    backstop: Window,
    last_activity: Instant,
    reloading_plan: bool,
    profiles: moka::sync::Cache<ProfileKey, Arc<CachedProfile>>,
    /// Per scope, bumped by every write in it.
    generations: HashMap<String, u64>,
}

/// The answer to [`WorkspaceMsg::Admit`].
#[derive(Debug)]
pub enum Admission {
    /// Go ahead. `rate` is `None` when rate limiting is off; `permit` is present when a memory
    /// slot was asked for.
    Allowed {
        rate: Option<RateStatus>,
        permit: Option<SavePermit>,
    },
    /// Over the class's window (or the backstop).
    RateLimited { rate: RateStatus },
    /// The workspace holds as many current memories as its plan allows.
    MemoryLimitReached {
        rate: Option<RateStatus>,
        limit: u64,
    },
}

/// Plan and memory usage of a workspace, as its actor knows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub plan: Plan,
    pub memory_count: u64,
    pub memory_limit: u64,
    pub reserved: u64,
}

pub enum WorkspaceMsg {
    /// Take one request of `class`; with `reserve_memory`, also reserve one memory slot.
    Admit {
        class: EndpointClass,
        reserve_memory: bool,
        reply: RpcReplyPort<Admission>,
    },
    /// Reserve one memory slot without counting a request (the parts of a long note).
    Reserve { reply: RpcReplyPort<Admission> },
    /// A cached profile, with the scope's generation.
    GetProfile {
        key: ProfileKey,
        reply: RpcReplyPort<ProfileLookup>,
    },
    /// Cache a profile computed at `generation` (ignored if a write came since).
    PutProfile {
        key: ProfileKey,
        generation: u64,
        profile: Arc<CachedProfile>,
    },
    /// Something in the scope changed: its profiles are stale.
    InvalidateProfiles { scope: String },
    /// A reserved save finished; `created` when it stored a new current memory.
    FinishSave { created: bool },
    /// Current memories were deleted or forgotten.
    RemoveMemories { count: u64 },
    /// The plan changed (applies at once).
    SetPlan { plan: Plan },
    /// Report plan and usage.
    GetUsage { reply: RpcReplyPort<Usage> },
    /// Periodic: idle check and plan reload.
    Tick,
    /// A plan reload finished.
    PlanLoaded { plan: Plan },
    /// A plan reload failed (logged); the next tick tries again.
    PlanLoadFailed,
}

/// A reserved memory slot. Finish it with the save's outcome; dropping it unfinished (an
/// error, a panic, a cancelled request) releases the slot.
#[derive(Debug)]
pub struct SavePermit {
    actor: Option<ActorRef<WorkspaceMsg>>,
}

impl SavePermit {
    pub fn finish(mut self, created: bool) {
        if let Some(actor) = self.actor.take() {
            // The actor may be gone (restarted); its successor counts from storage.
            let _ = actor.cast(WorkspaceMsg::FinishSave { created });
        }
    }
}

impl Drop for SavePermit {
    fn drop(&mut self) {
        if let Some(actor) = self.actor.take() {
            let _ = actor.cast(WorkspaceMsg::FinishSave { created: false });
        }
    }
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl WorkspaceState {
    fn memory_limit(&self) -> u64 {
        self.config.plans.limits(self.plan).memory_limit
    }

    fn admit(
        &mut self,
        myself: &ActorRef<WorkspaceMsg>,
        class: EndpointClass,
        reserve_memory: bool,
        now: i64,
    ) -> Admission {
        self.last_activity = Instant::now();
        let rate = if self.config.rate_limits {
            let limits = *self.config.plans.limits(self.plan);
            match rate_limit::admit(
                &mut self.windows[class.index()],
                limits.per_minute(class),
                &mut self.backstop,
                limits.backstop_per_minute,
                now,
            ) {
                Verdict::Allowed(status) => Some(status),
                Verdict::Limited(status) => return Admission::RateLimited { rate: status },
            }
        } else {
            None
        };
        if !reserve_memory {
            return Admission::Allowed { rate, permit: None };
        }
        let limit = self.memory_limit();
        if self.memory_count + self.reserved >= limit {
            return Admission::MemoryLimitReached { rate, limit };
        }
        self.reserved += 1;
        Admission::Allowed {
            rate,
            permit: Some(SavePermit {
                actor: Some(myself.clone()),
            }),
        }
    }

    fn reserve(&mut self, myself: &ActorRef<WorkspaceMsg>) -> Admission {
        self.last_activity = Instant::now();
        let limit = self.memory_limit();
        if self.memory_count + self.reserved >= limit {
            return Admission::MemoryLimitReached { rate: None, limit };
        }
        self.reserved += 1;
        Admission::Allowed {
            rate: None,
            permit: Some(SavePermit {
                actor: Some(myself.clone()),
            }),
        }
    }

    fn generation(&self, scope: &str) -> u64 {
        self.generations.get(scope).copied().unwrap_or(0)
    }

    fn usage(&self) -> Usage {
        Usage {
            plan: self.plan,
            memory_count: self.memory_count,
            memory_limit: self.memory_limit(),
            reserved: self.reserved,
        }
    }
}

impl Actor for WorkspaceActor {
    type Msg = WorkspaceMsg;
    type State = WorkspaceState;
    type Arguments = WorkspaceArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        config: WorkspaceArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(WorkspaceState {
            plan: config.snapshot.plan,
            memory_count: config.snapshot.memory_count,
            config,
            reserved: 0,
            windows: [Window::default(); 5],
            backstop: Window::default(),
            last_activity: Instant::now(),
            reloading_plan: false,
            profiles: moka::sync::Cache::builder()
                .max_capacity(PROFILES_KEPT)
                .time_to_live(PROFILE_TTL)
                .build(),
            generations: HashMap::new(),
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        myself.send_interval(state.config.refresh_every, || WorkspaceMsg::Tick);
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            WorkspaceMsg::Admit {
                class,
                reserve_memory,
                reply,
            } => {
                let admission = state.admit(&myself, class, reserve_memory, now_secs());
                // A caller that timed out has dropped its port; the permit inside is then
                // dropped here and releases its slot.
                let _ = reply.send(admission);
            }
            WorkspaceMsg::Reserve { reply } => {
                let _ = reply.send(state.reserve(&myself));
            }
            WorkspaceMsg::GetProfile { key, reply } => {
                state.last_activity = Instant::now();
                let _ = reply.send(ProfileLookup {
                    profile: state.profiles.get(&key),
                    generation: state.generation(&key.scope),
                });
            }
            WorkspaceMsg::PutProfile {
                key,
                generation,
                profile,
            } => {
                if generation == state.generation(&key.scope) {
                    state.profiles.insert(key, profile);
                }
            }
            WorkspaceMsg::InvalidateProfiles { scope } => {
                *state.generations.entry(scope.clone()).or_insert(0) += 1;
                // Few entries: walking them beats an invalidation closure's bookkeeping.
                let stale: Vec<ProfileKey> = state
                    .profiles
                    .iter()
                    .filter(|(key, _)| key.scope == scope)
                    .map(|(key, _)| (*key).clone())
                    .collect();
                for key in stale {
                    state.profiles.invalidate(&key);
                }
            }
            WorkspaceMsg::FinishSave { created } => {
                state.reserved = state.reserved.saturating_sub(1);
                if created {
                    state.memory_count += 1;
                }
            }
            WorkspaceMsg::RemoveMemories { count } => {
                state.memory_count = state.memory_count.saturating_sub(count);
            }
            WorkspaceMsg::SetPlan { plan } => state.plan = plan,
            WorkspaceMsg::PlanLoaded { plan } => {
                state.reloading_plan = false;
                state.plan = plan;
            }
            WorkspaceMsg::PlanLoadFailed => state.reloading_plan = false,
            WorkspaceMsg::GetUsage { reply } => {
                let _ = reply.send(state.usage());
            }
            WorkspaceMsg::Tick => {
                if state.reserved == 0 && state.last_activity.elapsed() >= state.config.idle_timeout
                {
                    tracing::debug!(workspace_id = %state.config.workspace_id, "workspace actor idle, stopping");
                    myself.stop(Some("idle".to_string()));
                    return Ok(());
                }
                if !state.reloading_plan {
                    state.reloading_plan = true;
                    let store = state.config.store.clone();
                    let id = state.config.workspace_id;
                    let me = myself.clone();
                    tokio::spawn(async move {
                        match store.load_workspace_plan(id).await {
                            Ok(plan) => {
                                let _ = me.cast(WorkspaceMsg::PlanLoaded { plan });
                            }
                            Err(error) => {
                                tracing::warn!(workspace_id = %id, %error, "plan reload failed");
                                let _ = me.cast(WorkspaceMsg::PlanLoadFailed);
                            }
                        }
                    });
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use async_trait::async_trait;

    use super::*;
    use crate::store::StoreFailure;

    /// An in-memory store for actor tests.
    #[derive(Default)]
    pub(crate) struct FakeStore {
        pub workspaces: Mutex<HashMap<Uuid, WorkspaceSnapshot>>,
    }

    impl FakeStore {
        pub(crate) fn with(id: Uuid, plan: Plan, memory_count: u64) -> Arc<Self> {
            let store = FakeStore::default();
            store
                .workspaces
                .lock()
                .unwrap()
                .insert(id, WorkspaceSnapshot { plan, memory_count });
            Arc::new(store)
        }
    }

    #[async_trait]
    impl WorkspaceStore for FakeStore {
        async fn load_workspace(&self, id: Uuid) -> Result<WorkspaceSnapshot, StoreFailure> {
            self.workspaces
                .lock()
                .unwrap()
                .get(&id)
                .copied()
                .ok_or(StoreFailure::UnknownWorkspace(id))
        }
        async fn load_workspace_plan(&self, id: Uuid) -> Result<Plan, StoreFailure> {
            self.load_workspace(id).await.map(|s| s.plan)
        }
    }

    pub(crate) fn args(id: Uuid, store: Arc<FakeStore>) -> WorkspaceArgs {
        let snapshot = *store
            .workspaces
            .lock()
            .unwrap()
            .get(&id)
            .expect("seeded workspace");
        WorkspaceArgs {
            workspace_id: id,
            snapshot,
            store,
            plans: Arc::new(PlanTable::default().with_memory_limits(5, 10, 100, 1000)),
            rate_limits: true,
            idle_timeout: Duration::from_secs(600),
            refresh_every: Duration::from_secs(30),
        }
    }

    async fn admit(
        actor: &ActorRef<WorkspaceMsg>,
        class: EndpointClass,
        reserve: bool,
    ) -> Admission {
        actor
            .call(
                |reply| WorkspaceMsg::Admit {
                    class,
                    reserve_memory: reserve,
                    reply,
                },
                Some(Duration::from_secs(5)),
            )
            .await
            .expect("send")
            .expect("reply")
    }

    async fn usage(actor: &ActorRef<WorkspaceMsg>) -> Usage {
        actor
            .call(
                |reply| WorkspaceMsg::GetUsage { reply },
                Some(Duration::from_secs(5)),
            )
            .await
            .expect("send")
            .expect("reply")
    }

    #[tokio::test]
    async fn concurrent_admissions_are_exact() {
        let id = Uuid::new_v4();
        let (actor, handle) = Actor::spawn(
            None,
            WorkspaceActor,
            args(id, FakeStore::with(id, Plan::Free, 0)),
        )
        .await
        .unwrap();
        let tasks: Vec<_> = (0..100)
            .map(|_| {
                let actor = actor.clone();
                tokio::spawn(async move { admit(&actor, EndpointClass::Save, false).await })
            })
            .collect();
        let mut allowed = 0;
        for task in tasks {
            if let Admission::Allowed { rate, .. } = task.await.unwrap() {
                assert_eq!(rate.unwrap().limit, 30);
                allowed += 1;
            }
        }
        assert_eq!(allowed, 30);
        actor.stop(None);
        handle.await.unwrap();
    }

    #[tokio::test]
    async fn memory_slots_are_reserved_and_released() {
        let id = Uuid::new_v4();
        let (actor, handle) = Actor::spawn(
            None,
            WorkspaceActor,
            args(id, FakeStore::with(id, Plan::Free, 3)),
        )
        .await
        .unwrap();
        let Admission::Allowed {
            permit: Some(first),
            ..
        } = admit(&actor, EndpointClass::Save, true).await
        else {
            panic!("first slot")
        };
        let Admission::Allowed {
            permit: Some(second),
            ..
        } = admit(&actor, EndpointClass::Save, true).await
        else {
            panic!("second slot")
        };
        // 3 stored + 2 reserved = the limit of 5.
        assert!(matches!(
            admit(&actor, EndpointClass::Save, true).await,
            Admission::MemoryLimitReached { limit: 5, .. }
        ));
        first.finish(true);
        drop(second); // an abandoned save releases its slot
        let used = usage(&actor).await;
        assert_eq!((used.memory_count, used.reserved), (4, 0));
        actor
            .cast(WorkspaceMsg::RemoveMemories { count: 2 })
            .unwrap();
        actor
            .cast(WorkspaceMsg::SetPlan { plan: Plan::Hobby })
            .unwrap();
        let used = usage(&actor).await;
        assert_eq!(
            (used.plan, used.memory_count, used.memory_limit),
            (Plan::Hobby, 2, 10)
        );
        actor.stop(None);
        handle.await.unwrap();
    }

    #[tokio::test]
    async fn rate_limits_off_admits_everything_without_status() {
        let id = Uuid::new_v4();
        let mut config = args(id, FakeStore::with(id, Plan::Free, 0));
        config.rate_limits = false;
        let (actor, handle) = Actor::spawn(None, WorkspaceActor, config).await.unwrap();
        for _ in 0..50 {
            assert!(matches!(
                admit(&actor, EndpointClass::Save, false).await,
                Admission::Allowed {
                    rate: None,
                    permit: None
                }
            ));
        }
        actor.stop(None);
        handle.await.unwrap();
    }

    #[tokio::test]
    async fn an_idle_actor_stops_itself() {
        let id = Uuid::new_v4();
        let mut config = args(id, FakeStore::with(id, Plan::Free, 0));
        config.idle_timeout = Duration::from_millis(10);
        config.refresh_every = Duration::from_millis(20);
        let (_actor, handle) = Actor::spawn(None, WorkspaceActor, config).await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), handle)
            .await
            .expect("stops")
            .unwrap();
    }
}
