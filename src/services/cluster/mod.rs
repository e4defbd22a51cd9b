//! One node of a cluster (issue 29; ARCHITECTURE.md, "Cluster"): several `memvault serve`
//! processes on one PostgreSQL database, each started with its own `MEMVAULT_NODE_URL`.
//!
//! - **Membership.** The node registers in `cluster_nodes` and renews itself every heartbeat;
//!   a node whose registration is older than the TTL is dead. Each round also reads the member
//!   list that placement uses.
//! - **Ownership.** A workspace is served by the node its lease names (`workspace_leases`), at
//!   an epoch that grows with every change of hands. A node takes a workspace when asked for one
//!   that no serving node holds, if placement (rendezvous hashing over the serving nodes) puts
//!   it there or the request was forwarded to it; it hands a workspace to the node placement
//!   prefers (a node that joined) in an orderly way: it stops taking requests for it, waits for
//!   the ones in flight, forgets what it held, then moves the lease.
//! - **Fencing.** The node's connections carry its id, and the database refuses a write to a
//!   workspace whose lease names another node or whose node has expired (`memvault_fence`), in
//!   the writing transaction; a takeover waits for the writes in flight under the old owner.
//! - **Death and revival.** A node that finds its registration expired (it was paused, or cut
//!   off from the database, past its TTL) forgets the workspaces that moved meanwhile and
//!   registers again; one that cannot reach the database past its TTL serves no workspace.
//!
//! What "held in memory" means is the [`Residency`] the services provide: a workspace's
//! indexes, its actor, its background work.

pub mod auth;
pub mod events;
pub mod placement;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::{OnceCell, OwnedRwLockReadGuard, RwLock};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::storage::cluster::{Acquired, ClusterStore, LeaseRow, NodeRow};

/// How a node takes part in the cluster.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// This node's id: new at every start (a restarted process is a new member).
    pub node: Uuid,
    /// The base URL other nodes reach this node at (`MEMVAULT_NODE_URL`).
    pub url: String,
    /// A node whose last heartbeat is older than this is dead.
    pub ttl: Duration,
    /// How often the node renews itself and looks at the members.
    pub heartbeat: Duration,
    /// How long a takeover or handover waits for writes in flight under the old owner.
    pub takeover_wait: Duration,
    /// Workspaces handed to a preferred node per heartbeat round (a join moves its share
    /// gradually instead of all at once).
    pub handoffs_per_round: usize,
}

/// What a node holds for a workspace it serves.
#[async_trait]
pub trait Residency: Send + Sync + 'static {
    /// Makes the workspace servable here (its indexes rebuilt from the database, its unfinished
    /// work resumed). Runs once per tenure, before the first request is served.
    async fn load(&self, workspace: Uuid) -> Result<()>;
    /// Forgets what is held for the workspace and stops its background work.
    async fn unload(&self, workspace: Uuid);
}

/// Where a request for a workspace is served.
pub enum Route {
    /// Here: the workspace stays here until the request ends.
    Local(Serving),
    /// On another node.
    Forward { node: Uuid, url: String },
}

/// A request being served for a workspace this node owns (keeps the workspace from being handed
/// over until it ends).
pub struct Serving {
    _tenure: OwnedRwLockReadGuard<()>,
    pub epoch: i64,
}

/// A workspace this node serves.
struct Slot {
    epoch: i64,
    /// Requests hold it shared; a handover takes it exclusively.
    gate: Arc<RwLock<()>>,
    loaded: OnceCell<()>,
    /// Handed over or lost: a request that waited on the gate starts again.
    gone: AtomicBool,
}

/// A serving member, from the last heartbeat round.
#[derive(Debug, Clone)]
struct Member {
    id: Uuid,
    url: String,
    /// Started longer than a TTL ago: steady enough to receive workspaces by handover.
    settled: bool,
}

pub struct Cluster {
    /// Itself, for work that must outlive the round that started it (a handover is never cut
    /// off halfway by a round's timeout).
    me: std::sync::Weak<Cluster>,
    config: ClusterConfig,
    store: ClusterStore,
    residency: OnceLock<Arc<dyn Residency>>,
    slots: Mutex<HashMap<Uuid, Arc<Slot>>>,
    members: Mutex<Vec<Member>>,
    /// Until when this node may believe itself alive (its last renewal's start plus most of
    /// the TTL: the database's expiry is never earlier).
    alive_until: Mutex<Option<Instant>>,
    draining: AtomicBool,
    /// Left the cluster: the heartbeat renews nothing more (and never registers it again).
    left: AtomicBool,
    /// Held while this node's own row is written (a renewal, a revival, the leaving delete): a
    /// round that began before the node left can never register it again after its row is gone.
    row: tokio::sync::Mutex<()>,
}

/// Answered while a workspace changes hands.
fn moving() -> Error {
    Error::Busy {
        message: "the workspace is moving between nodes; retry".to_string(),
        retry_after: 1,
    }
}

impl Cluster {
    /// Registers this node (alive for one TTL from now).
    pub async fn join(config: ClusterConfig, store: ClusterStore) -> Result<Arc<Cluster>> {
        let started = Instant::now();
        store.register(config.node, &config.url, config.ttl).await?;
        let cluster = Arc::new_cyclic(|me| Cluster {
            me: me.clone(),
            alive_until: Mutex::new(Some(started + config.ttl.mul_f64(0.75))),
            config,
            store,
            residency: OnceLock::new(),
            slots: Mutex::new(HashMap::new()),
            members: Mutex::new(Vec::new()),
            draining: AtomicBool::new(false),
            left: AtomicBool::new(false),
            row: tokio::sync::Mutex::new(()),
        });
        cluster.refresh_members().await?;
        tracing::info!(node = %cluster.config.node, url = %cluster.config.url, "joined the cluster");
        Ok(cluster)
    }

    /// Sets what the node holds per workspace (once, after the services are built).
    pub fn set_residency(&self, residency: Arc<dyn Residency>) {
        let _ = self.residency.set(residency);
    }

    pub fn node(&self) -> Uuid {
        self.config.node
    }

    pub fn config(&self) -> &ClusterConfig {
        &self.config
    }

    pub fn store(&self) -> &ClusterStore {
        &self.store
    }

    /// Whether this node may serve: its registration was renewed recently enough.
    pub fn alive(&self) -> bool {
        let until = *self.alive_until.lock().expect("alive_until");
        until.is_some_and(|t| Instant::now() < t)
    }

    /// The workspaces this node serves, with their epochs.
    pub fn owned(&self) -> Vec<(Uuid, i64)> {
        let slots = self.slots.lock().expect("slots");
        let mut owned: Vec<_> = slots.iter().map(|(w, s)| (*w, s.epoch)).collect();
        owned.sort();
        owned
    }

    /// Every registered node (for `/readyz` and `memvault admin cluster`).
    pub async fn nodes(&self) -> Result<Vec<NodeRow>> {
        Ok(self.store.nodes().await?)
    }

    /// Where `workspace`'s requests are served. `forwarded`: the request came from another
    /// node, which found no serving owner and chose this one; it is never forwarded again.
    pub async fn route(&self, workspace: Uuid, forwarded: bool) -> Result<Route> {
        if !self.alive() {
            return Err(Error::Unavailable(
                "this node has lost its cluster membership".to_string(),
            ));
        }
        for _ in 0..4 {
            let slot = self.slots.lock().expect("slots").get(&workspace).cloned();
            if let Some(slot) = slot {
                let tenure = slot.gate.clone().read_owned().await;
                if slot.gone.load(Ordering::SeqCst) {
                    continue;
                }
                self.load(workspace, &slot).await?;
                return Ok(Route::Local(Serving {
                    _tenure: tenure,
                    epoch: slot.epoch,
                }));
            }
            let draining = self.draining.load(Ordering::SeqCst);
            match self.store.lease(workspace).await? {
                Some(lease) if lease.node_id == self.config.node && !draining => {
                    self.adopt(workspace, lease.epoch);
                    continue;
                }
                Some(LeaseRow {
                    node_id,
                    url: Some(url),
                    serving: true,
                    ..
                }) if node_id != self.config.node => {
                    return Ok(Route::Forward { node: node_id, url });
                }
                _ => {}
            }
            // No serving owner: placement decides, or this node takes it when asked directly.
            let target = if draining {
                self.placement(workspace, Some(self.config.node))
            } else {
                self.placement(workspace, None)
            };
            match target {
                Some(member) if member.id != self.config.node && !forwarded => {
                    return Ok(Route::Forward {
                        node: member.id,
                        url: member.url,
                    });
                }
                None if draining => return Err(moving()),
                _ => {}
            }
            if draining {
                return Err(moving());
            }
            match self
                .store
                .acquire(workspace, self.config.node, self.config.takeover_wait)
                .await
            {
                Ok(Acquired::Held(epoch)) => {
                    tracing::info!(%workspace, epoch, "took ownership of a workspace");
                    self.adopt(workspace, epoch);
                }
                Ok(Acquired::Taken(lease)) => match lease.url {
                    Some(url) if lease.serving && !forwarded => {
                        return Ok(Route::Forward {
                            node: lease.node_id,
                            url,
                        })
                    }
                    _ => return Err(moving()),
                },
                // Writes in flight under the old owner outlasted the wait.
                Err(error) => {
                    tracing::warn!(%workspace, %error, "cannot take a workspace yet");
                    return Err(moving());
                }
            }
        }
        Err(moving())
    }

    /// One heartbeat round: renew (or revive) this node, read the members, hand over what
    /// belongs elsewhere.
    pub async fn round(&self) -> Result<()> {
        let sent = Instant::now();
        let revived = {
            let _row = self.row.lock().await;
            if self.left.load(Ordering::SeqCst) {
                return Ok(());
            }
            if self.store.beat(self.config.node, self.config.ttl).await? {
                None
            } else if self.draining.load(Ordering::SeqCst) {
                // Declared dead while leaving: its workspaces are the others' already.
                return Ok(());
            } else {
                *self.alive_until.lock().expect("alive_until") = None;
                Some(
                    self.store
                        .revive(self.config.node, &self.config.url, self.config.ttl)
                        .await?,
                )
            }
        };
        match revived {
            None => self.renewed(sent),
            Some(kept) => self.revived(sent, kept.into_iter().collect()).await,
        }
        let draining = self.draining.load(Ordering::SeqCst);
        self.refresh_members().await?;
        self.check_leases().await?;
        if !draining {
            self.rebalance().await;
            self.claim_orphans().await?;
        }
        let _ = self.store.forget_dead(self.config.ttl * 60).await;
        Ok(())
    }

    /// Forgets the workspaces whose lease no longer names this node at the epoch it took them
    /// at (taken while this node was slow to renew, or by a race of two takeovers): it would
    /// otherwise serve them from stale state, and fail every write at the fence.
    async fn check_leases(&self) -> Result<()> {
        // The slots first: each was adopted after its lease committed, so the leases read
        // next include it (read the other way round, a workspace taken in between would look
        // lost).
        let serving: Vec<(Uuid, i64)> = {
            let slots = self.slots.lock().expect("slots");
            slots
                .iter()
                .filter(|(_, slot)| !slot.gone.load(Ordering::SeqCst))
                .map(|(w, slot)| (*w, slot.epoch))
                .collect()
        };
        let held: HashMap<Uuid, i64> = self
            .store
            .leases_of(self.config.node)
            .await?
            .into_iter()
            .collect();
        let lost: Vec<(Uuid, i64)> = serving
            .into_iter()
            .filter(|(w, epoch)| held.get(w) != Some(epoch))
            .collect();
        for (workspace, epoch) in lost {
            tracing::warn!(%workspace, epoch, "a workspace's lease moved away from this node; forgetting it");
            self.detached(move |cluster| async move { cluster.forget(workspace, epoch).await })
                .await;
        }
        Ok(())
    }

    /// Takes, in the background, the orphaned workspaces placement puts here (their owner died
    /// or left): their unfinished documents and jobs resume without waiting for a request.
    async fn claim_orphans(&self) -> Result<()> {
        let orphans = self
            .store
            .orphans(self.config.handoffs_per_round as i64)
            .await?;
        for workspace in orphans {
            let here = self
                .placement(workspace, None)
                .is_some_and(|m| m.id == self.config.node);
            if !here {
                continue;
            }
            if let Some(cluster) = self.me.upgrade() {
                tokio::spawn(async move {
                    if let Err(error) = cluster.route(workspace, true).await {
                        tracing::info!(%workspace, %error, "cannot take an orphaned workspace yet");
                    }
                });
            }
        }
        Ok(())
    }

    /// Runs `work` in a task of its own and waits for it: if the caller is cancelled (a round
    /// that timed out), the work still finishes.
    async fn detached<F, Fut>(&self, work: F)
    where
        F: FnOnce(Arc<Cluster>) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        if let Some(cluster) = self.me.upgrade() {
            let _ = tokio::spawn(work(cluster)).await;
        }
    }

    /// Hands every workspace over (or releases it) and leaves the cluster: the graceful end.
    pub async fn leave(&self) -> Result<()> {
        self.draining.store(true, Ordering::SeqCst);
        let result = self.hand_everything_over().await;
        {
            let _row = self.row.lock().await;
            self.left.store(true, Ordering::SeqCst);
            self.store.leave(self.config.node).await?;
        }
        result
    }

    async fn hand_everything_over(&self) -> Result<()> {
        self.store.drain(self.config.node).await?;
        self.refresh_members().await?;
        let owned: Vec<Uuid> = self.owned().into_iter().map(|(w, _)| w).collect();
        let count = owned.len();
        for workspace in owned {
            let target = self.placement(workspace, Some(self.config.node));
            self.hand_over(workspace, target.map(|m| m.id)).await;
        }
        tracing::info!(
            workspaces = count,
            "left the cluster, workspaces handed over"
        );
        Ok(())
    }

    fn renewed(&self, sent: Instant) {
        *self.alive_until.lock().expect("alive_until") = Some(sent + self.config.ttl.mul_f64(0.75));
    }

    /// This node was declared dead and has registered again, still holding the leases in
    /// `kept`: it forgets the workspaces that moved.
    async fn revived(&self, sent: Instant, kept: HashSet<Uuid>) {
        let lost: Vec<(Uuid, i64)> = self
            .owned()
            .into_iter()
            .filter(|(w, _)| !kept.contains(w))
            .collect();
        tracing::warn!(
            lost = lost.len(),
            kept = kept.len(),
            "this node had been declared dead; it forgets the workspaces that moved and rejoins"
        );
        for (workspace, epoch) in lost {
            self.detached(move |cluster| async move { cluster.forget(workspace, epoch).await })
                .await;
        }
        self.renewed(sent);
    }

    async fn refresh_members(&self) -> Result<()> {
        let nodes = self.store.nodes().await?;
        let settle = self.config.ttl.as_millis() as i64;
        let members = nodes
            .into_iter()
            .filter(|n| n.alive && !n.draining)
            .map(|n| Member {
                id: n.id,
                url: n.url,
                settled: n.age_ms >= settle,
            })
            .collect();
        *self.members.lock().expect("members") = members;
        Ok(())
    }

    /// The serving member `workspace` belongs on (without `except`).
    fn placement(&self, workspace: Uuid, except: Option<Uuid>) -> Option<Member> {
        let members = self.members.lock().expect("members");
        let ids: Vec<Uuid> = members
            .iter()
            .map(|m| m.id)
            .filter(|id| Some(*id) != except)
            .collect();
        let owner = placement::owner(workspace, &ids)?;
        members.iter().find(|m| m.id == owner).cloned()
    }

    /// Hands over, a few per round, the workspaces placement puts on a settled other node.
    async fn rebalance(&self) {
        let mut moves = Vec::new();
        for (workspace, _) in self.owned() {
            if let Some(target) = self.placement(workspace, None) {
                if target.id != self.config.node && target.settled {
                    moves.push((workspace, target.id));
                }
            }
            if moves.len() >= self.config.handoffs_per_round {
                break;
            }
        }
        for (workspace, target) in moves {
            self.detached(move |cluster| async move {
                cluster.hand_over(workspace, Some(target)).await
            })
            .await;
        }
    }

    /// Stops serving `workspace` and gives its lease to `target` (or releases it).
    async fn hand_over(&self, workspace: Uuid, target: Option<Uuid>) {
        let Some(slot) = self.slots.lock().expect("slots").get(&workspace).cloned() else {
            return;
        };
        // Requests in flight finish first; new ones wait here, then start again.
        let exclusive =
            match tokio::time::timeout(self.config.takeover_wait, slot.gate.clone().write_owned())
                .await
            {
                Ok(exclusive) => exclusive,
                Err(_) => {
                    tracing::info!(%workspace, "handover postponed: requests still running");
                    return;
                }
            };
        slot.gone.store(true, Ordering::SeqCst);
        if let Some(residency) = self.residency.get() {
            residency.unload(workspace).await;
        }
        let moved = match target {
            Some(to) => self
                .store
                .hand_over(workspace, self.config.node, to, self.config.takeover_wait)
                .await
                .map(|epoch| epoch.is_some()),
            None => self.store.release(workspace, self.config.node).await,
        };
        match moved {
            Ok(true) => {
                tracing::info!(%workspace, to = ?target, "handed a workspace over")
            }
            Ok(false) => {
                // The target could not take it: release it for whichever node is asked next.
                let _ = self.store.release(workspace, self.config.node).await;
            }
            Err(error) => {
                tracing::warn!(%workspace, %error, "handover failed; releasing the workspace");
                let _ = self.store.release(workspace, self.config.node).await;
            }
        }
        let mut slots = self.slots.lock().expect("slots");
        if slots.get(&workspace).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
            slots.remove(&workspace);
        }
        drop(slots);
        drop(exclusive);
    }

    /// Forgets a workspace served here at `epoch` whose lease moved (a later tenure of it is
    /// left alone).
    async fn forget(&self, workspace: Uuid, epoch: i64) {
        let slot = self.slots.lock().expect("slots").get(&workspace).cloned();
        let Some(slot) = slot.filter(|s| s.epoch == epoch) else {
            return;
        };
        slot.gone.store(true, Ordering::SeqCst);
        // Requests still running under the old tenure fail at the fence; wait for them, within
        // reason, before the state they use is dropped. New ones wait on the gate meanwhile and
        // then start again (the slot stays in the table until it is unloaded, so none can load
        // a new tenure that this unload would then drop).
        let exclusive =
            tokio::time::timeout(self.config.takeover_wait, slot.gate.clone().write_owned()).await;
        if let Some(residency) = self.residency.get() {
            residency.unload(workspace).await;
        }
        let mut slots = self.slots.lock().expect("slots");
        if slots.get(&workspace).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
            slots.remove(&workspace);
        }
        drop(slots);
        drop(exclusive);
    }

    fn adopt(&self, workspace: Uuid, epoch: i64) {
        let mut slots = self.slots.lock().expect("slots");
        slots.entry(workspace).or_insert_with(|| {
            Arc::new(Slot {
                epoch,
                gate: Arc::new(RwLock::new(())),
                loaded: OnceCell::new(),
                gone: AtomicBool::new(false),
            })
        });
    }

    async fn load(&self, workspace: Uuid, slot: &Slot) -> Result<()> {
        slot.loaded
            .get_or_try_init(|| async {
                let started = Instant::now();
                if let Some(residency) = self.residency.get() {
                    residency.load(workspace).await?;
                }
                tracing::info!(
                    %workspace,
                    epoch = slot.epoch,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "workspace loaded"
                );
                Ok::<(), Error>(())
            })
            .await
            .map(|_| ())
    }
}

#[async_trait]
impl memvault_actors::Beat for Cluster {
    async fn beat(&self) -> std::result::Result<(), String> {
        self.round().await.map_err(|e| e.to_string())
    }
}

/// What a node holds for a workspace it serves: the memories' and the vault's indexes, its
/// actor, its long-note jobs and its documents in ingestion.
pub struct ServedWorkspaces {
    pub memories: crate::services::MemoryService,
    pub vault: Arc<crate::services::vault::VaultService>,
}

#[async_trait]
impl Residency for ServedWorkspaces {
    async fn load(&self, workspace: Uuid) -> Result<()> {
        let memories = self.memories.load_workspace(workspace).await?;
        let (chunks, facts) = self.vault.load_workspace(workspace).await?;
        tracing::info!(
            %workspace,
            memories = memories.indexed,
            chunks,
            vault_memories = facts,
            "workspace indexes rebuilt from the database"
        );
        Ok(())
    }

    async fn unload(&self, workspace: Uuid) {
        self.memories.unload_workspace(workspace);
        self.vault.unload_workspace(workspace).await;
    }
}
