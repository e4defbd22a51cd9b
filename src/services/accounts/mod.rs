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
use crate::model::accounts::{Need, Role};
use crate::model::Source;
use crate::storage::Store;

mod invitations;
mod keys;
mod password;
mod sessions;
mod team;
mod workspaces;

pub use invitations::{CreateInvitation, InvitationAccepted, InvitationCreated, InvitationView};
pub use keys::{
    generate_key, hash_key, ApiKeyCreated, ApiKeyList, ApiKeyView, CreateApiKey, GeneratedKey,
    KEY_PREFIX,
};
pub use sessions::{SessionInfo, SessionView, SignIn, SignUp, SignedIn, UserView};
pub use team::{ChangeRole, MemberChanged, MemberView, Team, TeamMember};
pub use workspaces::{
    slugify, CreateWorkspace, WorkspaceCreated, WorkspaceList, WorkspaceParam, WorkspaceView,
};

/// Session and invitation tokens: 43 URL-safe characters (256 bits).
const TOKEN_CHARS: usize = 43;
const MAX_NAME_CHARS: usize = 100;
const MAX_EMAIL_CHARS: usize = 254;

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

// ----- validation ---------------------------------------------------------------------------

fn email(raw: Option<&str>) -> Result<String> {
    let invalid = || Error::validation("email", "must be an email address like name@example.com");
    // Counted as sent, blanks around it included.
    if raw.is_some_and(|raw| raw.chars().count() > MAX_EMAIL_CHARS) {
        return Err(invalid());
    }
    let email = raw.map(str::trim).unwrap_or_default().to_lowercase();
    if email.is_empty() {
        return Err(Error::validation("email", "is required"));
    }
    if email.chars().count() > MAX_EMAIL_CHARS || email.chars().any(char::is_whitespace) {
        return Err(invalid());
    }
    let (local, domain) = email.split_once('@').ok_or_else(invalid)?;
    if local.is_empty()
        || domain.len() < 3
        || domain.contains('@')
        || !domain.contains('.')
        || domain.starts_with('.')
        || domain.ends_with('.')
    {
        return Err(invalid());
    }
    Ok(email)
}

/// Counted as sent (blanks around it included), then trimmed.
fn text(field: &str, raw: Option<&str>, max: usize) -> Result<Option<String>> {
    if raw.is_some_and(|value| value.chars().count() > max) {
        return Err(Error::validation(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    match raw.map(str::trim) {
        None => Ok(None),
        Some("") => Err(Error::validation(field, "must not be empty")),
        Some(value) if value.chars().any(char::is_control) => Err(Error::validation(
            field,
            "must not contain control characters",
        )),
        Some(value) => Ok(Some(value.to_string())),
    }
}

fn role_value(field: &str, raw: &str, allowed: &[Role]) -> Result<Role> {
    let expected = allowed
        .iter()
        .map(|r| r.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    raw.trim()
        .parse::<Role>()
        .ok()
        .filter(|role| allowed.contains(role))
        .ok_or_else(|| Error::validation(field, format!("must be one of {expected}")))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_normalised_and_checked() {
        assert_eq!(
            email(Some("  Ada@Example.COM ")).unwrap(),
            "ada@example.com"
        );
        for bad in [
            "",
            "ada",
            "ada@",
            "@example.com",
            "a b@example.com",
            "ada@example",
            "a@@b.c",
        ] {
            let error = email(Some(bad)).unwrap_err();
            assert!(error.to_string().contains("email"), "{bad}: {error}");
        }
    }
}
