//! Which long-lived actors are running: what `/readyz` reports. A typed handle over the cells
//! start-up made, so that adapters never hold another layer's `ActorRef`s.

use ractor::{ActorCell, ActorStatus};

/// The supervised actors by name.
#[derive(Clone, Default)]
pub struct Liveness {
    parts: Vec<(&'static str, ActorCell)>,
}

impl Liveness {
    pub fn new(parts: Vec<(&'static str, ActorCell)>) -> Self {
        Liveness { parts }
    }

    /// Every part with whether it runs, in start-up order.
    pub fn report(&self) -> Vec<(&'static str, bool)> {
        self.parts
            .iter()
            .map(|(name, cell)| {
                let alive = matches!(
                    cell.get_status(),
                    ActorStatus::Starting | ActorStatus::Running | ActorStatus::Upgrading
                );
                (*name, alive)
            })
            .collect()
    }

    /// A part by name (tests stop one to see readiness follow).
    pub fn cell(&self, name: &str) -> Option<ActorCell> {
        self.parts
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| c.clone())
    }
}
