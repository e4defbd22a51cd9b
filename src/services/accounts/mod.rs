//! Accounts: users (argon2id passwords), sessions, workspaces, members and roles, invitations
//! and API keys.
//!
//! Secrets are never stored: API keys (`mc_` + 40 random characters, 238 bits), session tokens
//! and invitation tokens are random enough that their SHA-256 is the right hash; passwords are
//! hashed with argon2id on a blocking thread.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::Duration;
use memvault_actors::{EndpointClass, Workspaces};
use rand::distr::{Alphanumeric, SampleString};
use uuid::Uuid;

use super::abuse::Doors;
use super::cluster::events::{ClusterEvent, Events};
use super::{admit, Caller, Gate, Identity, Principal};
use crate::error::{Error, Result};
use crate::model::accounts::Need;
use crate::model::Source;
use crate::storage::Store;

mod inputs;
mod invitations;
mod keys;
mod password;
mod sessions;
mod team;
mod workspaces;

pub use inputs::{
    Credentials, DisplayName, Email, ImageUrl, NewAccount, NewInvitation, NewKey, NewWorkspace,
    Parsed, Password, RequestedRole, Slug, INVITABLE_ROLES, MAX_EMAIL_CHARS, MAX_IMAGE_CHARS,
    MAX_NAME_CHARS, MAX_PASSWORD_CHARS, MAX_SLUG_CHARS, MEMBER_ROLES, MIN_PASSWORD_CHARS,
};
pub use invitations::{IssuedInvitation, Joined};
pub use keys::{generate_key, hash_key, GeneratedKey, IssuedKey, KEY_PREFIX};
pub use sessions::{CurrentSession, SignedIn};
pub use team::TeamRoster;
pub use workspaces::{slugify, WorkspaceRole};

/// Session and invitation tokens: 43 URL-safe characters (256 bits).
const TOKEN_CHARS: usize = 43;

/// What the accounts service is configured with.
#[derive(Debug, Clone)]
pub struct AccountsConfig {
    pub session_ttl: Duration,
    pub invitation_ttl: Duration,
    pub password_memory_kib: u32,
    pub abuse: crate::config::AbuseLimits,
}

impl Default for AccountsConfig {
    fn default() -> Self {
        AccountsConfig {
            session_ttl: Duration::days(30),
            invitation_ttl: Duration::days(7),
            password_memory_kib: 19 * 1024,
            abuse: crate::config::AbuseLimits::default(),
        }
    }
}

/// A random token for sessions and invitations.
fn generate_token() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), TOKEN_CHARS)
}

// ----- path ids ------------------------------------------------------------------------------

fn path_id(what: &str, raw: &str) -> Result<Uuid> {
    Uuid::parse_str(raw.trim()).map_err(|_| Error::NotFound(format!("{what} not found")))
}

// ----- the service ----------------------------------------------------------------------------

#[derive(Clone)]
pub struct AccountsService {
    store: Arc<dyn Store>,
    workspaces: Option<Workspaces>,
    gate: Gate,
    config: AccountsConfig,
    /// Key hash -> key, so that most requests skip the database lookup.
    keys: moka::sync::Cache<String, Arc<keys::CachedKey>>,
    /// The limits of the open doors and the password-hashing slots.
    doors: Arc<Doors>,
    /// A password hash to verify against when the email is unknown, so that an unknown email
    /// and a wrong password take the same time.
    decoy_hash: Arc<tokio::sync::OnceCell<String>>,
    /// Where key and plan changes are announced to the other nodes of a cluster.
    events: Events,
}

impl AccountsService {
    /// Announces key and plan changes through `events` (a cluster node's).
    pub fn with_events(mut self, events: Events) -> Self {
        self.events = events;
        self
    }

    /// `workspaces` is `None` for the command line, which runs without actors.
    pub fn new(
        store: Arc<dyn Store>,
        workspaces: Option<Workspaces>,
        config: AccountsConfig,
    ) -> Self {
        let keys = moka::sync::Cache::builder()
            .max_capacity(10_000)
            .time_to_live(StdDuration::from_secs(keys::KEY_CACHE_SECS))
            .build();
        AccountsService {
            doors: Arc::new(Doors::new(&config.abuse)),
            gate: Gate::new(store.clone()),
            store,
            workspaces,
            config,
            keys,
            decoy_hash: Arc::new(tokio::sync::OnceCell::new()),
            events: Events::default(),
        }
    }

    /// The role gate (the cluster's router asks it which workspace a request acts in).
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// The limits of the open doors (the OAuth service shares them).
    pub fn doors(&self) -> Arc<Doors> {
        self.doors.clone()
    }

    /// Applies an event announced by another node of the cluster (`None`: some may have been
    /// missed, so every cached key is forgotten).
    pub fn apply_cluster_event(&self, event: Option<ClusterEvent>) {
        match event {
            Some(ClusterEvent::KeysChanged) | None => self.keys.invalidate_all(),
            Some(ClusterEvent::PlanChanged { workspace, plan }) => {
                if let Some(workspaces) = &self.workspaces {
                    workspaces.plan_changed(workspace, plan);
                }
            }
        }
    }

    fn signed_in_user(who: &Principal, what: &str) -> Result<(Uuid, Uuid)> {
        match &who.identity {
            Identity::User {
                user_id,
                session_id,
            } => Ok((*user_id, *session_id)),
            Identity::Key { .. } | Identity::Token { .. } => Err(Error::Unauthorized(format!(
                "{what} needs a signed-in user (the session cookie); API keys cannot do it"
            ))),
        }
    }

    /// A request on the workspace named in the path: its id parsed, the caller's access to it
    /// checked (`need`), and the request admitted by the workspace's actor (`class`).
    async fn enter_workspace(
        &self,
        who: &Principal,
        workspace_id: &str,
        need: Need,
        class: EndpointClass,
    ) -> Result<(Uuid, Caller)> {
        let workspace_id = path_id("workspace", workspace_id)?;
        let caller = self.gate.enter(who, Some(workspace_id), need).await?;
        self.admit(&caller, class).await?;
        Ok((workspace_id, caller))
    }

    async fn admit(&self, caller: &Caller, class: EndpointClass) -> Result<()> {
        if let Some(workspaces) = &self.workspaces {
            admit(workspaces, caller, class, false).await?;
        }
        Ok(())
    }

    /// The source recorded for memories this identity saves over REST.
    pub fn rest_source(identity: &Identity) -> Source {
        match identity {
            Identity::Key { .. } => Source::Api,
            Identity::User { .. } => Source::Web,
            Identity::Token { .. } => Source::Mcp,
        }
    }
}
