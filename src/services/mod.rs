//! Services: one per domain, the only place where rules live. The HTTP handlers (and, later,
//! the MCP tools) are thin adapters over these.

pub mod accounts;
pub mod memories;
pub mod validate;
pub mod vault;

use std::sync::{Arc, Mutex};

use memvault_actors::{Admission, EndpointClass, RateStatus, SavePermit, Workspaces};
use uuid::Uuid;

use crate::error::{Error, Result};

pub use accounts::AccountsService;
pub use memories::MemoryService;

/// Where a request's rate-limit status lands, for the adapter to report (`X-RateLimit-*`).
#[derive(Debug, Clone, Default)]
pub struct RateSlot(Arc<Mutex<Option<RateStatus>>>);

impl RateSlot {
    pub fn set(&self, status: RateStatus) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(status);
        }
    }

    pub fn get(&self) -> Option<RateStatus> {
        self.0.lock().ok().and_then(|slot| *slot)
    }
}

/// Who is calling: an authenticated API key, bound to one workspace for life.
#[derive(Debug, Clone)]
pub struct Caller {
    pub workspace_id: Uuid,
    pub key_id: Uuid,
    /// Recorded as `userId` on what this caller saves.
    pub user_id: String,
    pub rate: RateSlot,
}

impl Caller {
    /// A request may name its workspace, but never another one than its key's.
    pub fn check_workspace(&self, requested: Option<Uuid>) -> Result<()> {
        match requested {
            Some(id) if id != self.workspace_id => Err(Error::Forbidden(
                "this API key is bound to another workspace".to_string(),
            )),
            _ => Ok(()),
        }
    }
}

/// Admits one request of `class` through the workspace's actor, recording the rate status for
/// the response headers. Returns the memory permit when one was asked for.
pub(crate) async fn admit(
    workspaces: &Workspaces,
    caller: &Caller,
    class: EndpointClass,
    reserve_memory: bool,
) -> Result<Option<SavePermit>> {
    match workspaces
        .admit(caller.workspace_id, class, reserve_memory)
        .await?
    {
        Admission::Allowed { rate, permit } => {
            if let Some(rate) = rate {
                caller.rate.set(rate);
            }
            Ok(permit)
        }
        Admission::RateLimited { rate } => {
            caller.rate.set(rate);
            Err(Error::RateLimited { rate })
        }
        Admission::MemoryLimitReached { rate, limit } => {
            if let Some(rate) = rate {
                caller.rate.set(rate);
            }
            Err(Error::MemoryLimit { limit })
        }
    }
}
