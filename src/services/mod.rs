//! Services: one per domain, the only place where rules live. The HTTP handlers (and, later,
//! the MCP tools) are thin adapters over these.

pub mod abuse;
pub mod access;
pub mod accounts;
pub mod billing;
pub mod cluster;
pub mod erasure;
pub mod liveness;
pub mod memories;
pub mod oauth;
pub mod validate;
pub mod vault;

use std::sync::{Arc, Mutex};

use memvault_actors::{Admission, EndpointClass, RateStatus, SavePermit, Workspaces};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::accounts::{Role, Scope};
use crate::model::Source;

pub use access::Gate;
pub use accounts::AccountsService;
pub use memories::MemoryService;

/// Where a request's rate-limit status lands, for the adapter to report (`X-RateLimit-*`).
#[derive(Debug, Clone, Default)]
pub struct RateSlot(Arc<Mutex<(Option<RateStatus>, Option<Refusal>)>>);

/// A refusal by a rate limit: the endpoint class and the workspace whose limit it was.
type Refusal = (&'static str, Uuid);

impl RateSlot {
    pub fn set(&self, status: RateStatus) {
        if let Ok(mut slot) = self.0.lock() {
            slot.0 = Some(status);
        }
    }

    pub fn get(&self) -> Option<RateStatus> {
        self.0.lock().ok().and_then(|slot| slot.0)
    }

    /// Records that the request was refused by `workspace`'s limit of `class` (for metrics).
    pub fn refuse(&self, class: &'static str, workspace: Uuid) {
        if let Ok(mut slot) = self.0.lock() {
            slot.1 = Some((class, workspace));
        }
    }

    /// The class whose limit refused the request, and whose workspace, if one did.
    pub fn refused(&self) -> Option<Refusal> {
        self.0.lock().ok().and_then(|slot| slot.1)
    }
}

/// How a request authenticated.
#[derive(Debug, Clone, PartialEq)]
pub enum Identity {
    /// An API key: bound to one workspace for life, acting with its role.
    Key {
        key_id: Uuid,
        workspace_id: Uuid,
        role: Role,
        /// The user who made the key (`None`: the command line).
        made_by: Option<Uuid>,
    },
    /// A signed-in user (session cookie): acts in any workspace they are a member of.
    User { user_id: Uuid, session_id: Uuid },
    /// An OAuth access token of an MCP connector: a user acting in the one workspace they
    /// approved, within the approved scopes, with their current role there.
    Token {
        token_id: Uuid,
        user_id: Uuid,
        workspace_id: Uuid,
        scopes: Vec<Scope>,
    },
}

/// Who is calling, as the adapter authenticated them; not yet tied to a workspace.
#[derive(Debug, Clone)]
pub struct Principal {
    pub identity: Identity,
    /// Where the request's rate-limit status lands.
    pub rate: RateSlot,
    /// Recorded on memories this caller saves (`api` for keys over REST, `web` for the
    /// dashboard's cookie, `mcp` for MCP tools).
    pub source: Source,
    /// The workspace the request's query string names (`workspaceId`), if any. A body or form
    /// that names one too must agree ([`Gate::enter`]).
    pub addressed: Option<Uuid>,
}

impl Principal {
    pub fn new(identity: Identity, rate: RateSlot, source: Source) -> Self {
        Principal {
            identity,
            rate,
            source,
            addressed: None,
        }
    }

    pub fn user_id(&self) -> Option<Uuid> {
        match &self.identity {
            Identity::User { user_id, .. } | Identity::Token { user_id, .. } => Some(*user_id),
            Identity::Key { .. } => None,
        }
    }

    /// An OAuth token must carry `scope`; keys and sessions are limited by their role only.
    pub fn require_scope(&self, scope: Scope) -> Result<()> {
        match &self.identity {
            Identity::Token { scopes, .. } if !scopes.contains(&scope) => Err(Error::Forbidden(
                format!("this connection was not granted {scope}; reconnect and approve it"),
            )),
            Identity::Token { .. } | Identity::Key { .. } | Identity::User { .. } => Ok(()),
        }
    }
}

/// A caller acting in one workspace with one role, as [`Gate::enter`] admitted them.
#[derive(Debug, Clone)]
pub struct Caller {
    pub workspace_id: Uuid,
    pub role: Role,
    /// Recorded as `userId` on what this caller saves: the user's id, or `key:<id>` for keys.
    pub user_id: String,
    pub rate: RateSlot,
    pub source: Source,
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
            caller.rate.refuse(class.name(), caller.workspace_id);
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
