//! Which long-lived actors are running, and how often each was restarted: what `/readyz` and
//! `/metrics` report. A typed handle over the root supervisor, so that adapters never hold
//! another layer's actors.

use memvault_actors::{ChildReport, Root};

/// The root supervisor's children by name.
#[derive(Clone)]
pub struct Liveness {
    root: Root,
}

impl Liveness {
    pub fn new(root: Root) -> Self {
        Liveness { root }
    }

    /// Every supervised actor, in start-up order: whether it runs and its restarts so far.
    pub fn report(&self) -> Vec<ChildReport> {
        self.root.report()
    }

    /// A supervised actor's running generation (tests kill it to see readiness and the
    /// restart follow).
    pub fn cell(&self, name: &str) -> Option<ractor::ActorCell> {
        self.root.child(name)
    }
}
