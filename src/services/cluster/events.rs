//! Cluster-wide invalidation: what one node changes that others cache or hold is announced to
//! every node (PostgreSQL `NOTIFY` on one channel, `LISTEN`ed by each node), so that a revoked
//! key, a removed member's keys or a plan change take effect on every node within moments, not
//! at the end of a cache's lifetime. Sessions and roles are read from the database on every
//! request, so signing out and role changes need no announcement.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use uuid::Uuid;

use crate::model::Plan;
use crate::storage::cluster::ClusterStore;

/// Something every node must learn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterEvent {
    /// API keys were revoked or their makers' roles changed: forget cached keys.
    KeysChanged,
    /// A workspace's plan changed: its actor (wherever it runs) applies it.
    PlanChanged { workspace: Uuid, plan: Plan },
}

impl ClusterEvent {
    pub fn encode(&self) -> String {
        match self {
            ClusterEvent::KeysChanged => "keys".to_string(),
            ClusterEvent::PlanChanged { workspace, plan } => format!("plan:{workspace}:{plan}"),
        }
    }

    pub fn decode(payload: &str) -> Option<ClusterEvent> {
        if payload == "keys" {
            return Some(ClusterEvent::KeysChanged);
        }
        let mut parts = payload.strip_prefix("plan:")?.splitn(2, ':');
        let workspace = Uuid::parse_str(parts.next()?).ok()?;
        let plan = parts.next()?.parse().ok()?;
        Some(ClusterEvent::PlanChanged { workspace, plan })
    }
}

/// Where the services announce events: nowhere on a single node; to the cluster once attached.
#[derive(Clone, Default)]
pub struct Events {
    publisher: Arc<OnceLock<ClusterStore>>,
}

impl Events {
    /// From now on, events go to every node of the cluster.
    pub fn attach(&self, store: ClusterStore) {
        let _ = self.publisher.set(store);
    }

    /// Announces `event` to every node (the caller has already applied it here).
    pub fn publish(&self, event: ClusterEvent) {
        let Some(store) = self.publisher.get().cloned() else {
            return;
        };
        tokio::spawn(async move {
            if let Err(error) = store.notify(&event.encode()).await {
                tracing::warn!(%error, event = %event.encode(), "cannot announce a change to the cluster");
            }
        });
    }
}

/// Applies the events announced by any node, as they come; `None` means some may have been
/// missed (the listening connection was lost), so everything cached must be forgotten. Runs
/// until the task is aborted, reconnecting after a second when the connection drops.
pub fn listen(
    store: ClusterStore,
    apply: impl Fn(Option<ClusterEvent>) + Send + Sync + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match store.listener().await {
                Ok(mut listener) => {
                    // Listening again: whatever was announced meanwhile is forgotten here too.
                    apply(None);
                    loop {
                        // `try_recv` says when the connection was lost (`recv` would reconnect
                        // silently, dropping what was announced in between).
                        match listener.try_recv().await {
                            Ok(Some(notification)) => {
                                match ClusterEvent::decode(notification.payload()) {
                                    Some(event) => apply(Some(event)),
                                    None => tracing::warn!(
                                        payload = notification.payload(),
                                        "an unknown cluster event"
                                    ),
                                }
                            }
                            Ok(None) => {
                                tracing::warn!("the cluster's event connection dropped");
                                break;
                            }
                            Err(error) => {
                                tracing::warn!(%error, "the cluster's event connection failed");
                                break;
                            }
                        }
                    }
                }
                Err(error) => tracing::warn!(%error, "cannot listen for cluster events"),
            }
            apply(None);
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_back_as_written() {
        let workspace = Uuid::new_v4();
        for event in [
            ClusterEvent::KeysChanged,
            ClusterEvent::PlanChanged {
                workspace,
                plan: Plan::Ultimate,
            },
        ] {
            assert_eq!(ClusterEvent::decode(&event.encode()), Some(event));
        }
        for junk in [
            "",
            "plan:",
            "plan:x:pro",
            &format!("plan:{workspace}:gold"),
            "keyss",
        ] {
            assert_eq!(ClusterEvent::decode(junk), None, "{junk}");
        }
    }
}
