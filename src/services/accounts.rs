//! Accounts: users (argon2id passwords), sessions, workspaces, members and roles, invitations
//! and API keys.
//!
//! Secrets are never stored: API keys (`mc_` + 40 random characters, 238 bits), session tokens
//! and invitation tokens are random enough that their SHA-256 is the right hash; passwords are
//! hashed with argon2id on a blocking thread.

use super::cluster::events::{ClusterEvent, Events};
use std::net::IpAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use chrono::{DateTime, Duration, Utc};
use memvault_actors::{EndpointClass, Workspaces};
use rand::distr::{Alphanumeric, SampleString};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::abuse::{address_key, Doors};
use super::access::{forbidden_role, not_a_member};
use super::memories::Success;
use super::{admit, Caller, Gate, Identity, Principal};
use crate::error::{Error, Result, StorageError};
use crate::model::accounts::{
    InvitationRecord, MemberRecord, Membership, Need, Role, SessionRecord, User,
};
use crate::model::{now, to_micros, ApiKey, Plan, Source, Workspace};
use crate::storage::accounts::{Acceptance, MemberChange};
use crate::storage::Store;

pub const KEY_PREFIX: &str = "mc_";
const KEY_RANDOM_CHARS: usize = 40;
/// Session and invitation tokens: 43 URL-safe characters (256 bits).
const TOKEN_CHARS: usize = 43;
/// `last_used_at` is written at most this often per key.
const TOUCH_EVERY_SECS: i64 = 60;
/// A key lookup is cached this long. Revocations and member changes made through this server
/// clear the cache at once; a key deleted by another process is refused at most this late.
const KEY_CACHE_SECS: u64 = 30;
const MIN_PASSWORD_CHARS: usize = 8;
const MAX_PASSWORD_CHARS: usize = 128;
const MAX_NAME_CHARS: usize = 100;
const MAX_EMAIL_CHARS: usize = 254;
const MAX_SLUG_CHARS: usize = 60;
const MAX_IMAGE_CHARS: usize = 2_000;

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

/// A key as cached for authentication.
struct CachedKey {
    key: ApiKey,
    /// The role it acts with: its own, capped by its maker's current role.
    role: Role,
    /// Set when the key's maker is no longer a member (the key no longer works).
    orphaned: bool,
    /// When `last_used_at` was last written (Unix microseconds).
    touched_at: AtomicI64,
}

/// A freshly generated key: the raw value (shown once) and what is stored.
pub struct GeneratedKey {
    pub raw: String,
    pub prefix: String,
    pub hash: String,
}

pub fn generate_key() -> GeneratedKey {
    let raw = format!(
        "{KEY_PREFIX}{}",
        Alphanumeric.sample_string(&mut rand::rng(), KEY_RANDOM_CHARS)
    );
    GeneratedKey {
        prefix: raw[..KEY_PREFIX.len() + 6].to_string(),
        hash: hash_key(&raw),
        raw,
    }
}

pub fn hash_key(raw: &str) -> String {
    hex::encode(Sha256::digest(raw.as_bytes()))
}

/// A random token for sessions and invitations.
fn generate_token() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), TOKEN_CHARS)
}

/// `My Team!` -> `my-team`.
pub fn slugify(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    let slug: String = slug
        .trim_end_matches('-')
        .chars()
        .take(MAX_SLUG_CHARS)
        .collect();
    let slug = slug.trim_end_matches('-').to_string();
    if slug.is_empty() {
        "workspace".to_string()
    } else {
        slug
    }
}

// ----- request and response bodies ----------------------------------------------------------

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignUp {
    /// An email address (at most 254 characters); case does not matter.
    #[schema(value_type = String, required = true, max_length = 254, pattern = r"^\s*[^@\s]+@[^@\s.][^@\s]*\.[^@\s]*[^@\s.]\s*$")]
    pub email: Option<String>,
    /// 8 to 128 characters.
    #[schema(value_type = String, required = true, min_length = 8, max_length = 128)]
    pub password: Option<String>,
    /// Shown to teammates (1 to 100 characters, no control characters); defaults to the part
    /// of the email before `@`.
    #[schema(
        max_length = 100,
        pattern = r"^\s*[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?\s*$"
    )]
    pub name: Option<String>,
    /// A picture's URL (at most 2,000 characters, no control characters).
    #[schema(
        max_length = 2000,
        pattern = r"^\s*[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?\s*$"
    )]
    pub image: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignIn {
    #[schema(value_type = String, required = true, max_length = 254, pattern = r"^\s*[^@\s]+@[^@\s.][^@\s]*\.[^@\s]*[^@\s.]\s*$")]
    pub email: Option<String>,
    #[schema(value_type = String, required = true, min_length = 1, max_length = 128)]
    pub password: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    pub id: Uuid,
    pub email: String,
    pub name: String,
    pub image: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl From<User> for UserView {
    fn from(user: User) -> Self {
        UserView {
            id: user.id,
            email: user.email,
            name: user.name,
            image: user.image,
            created_at: user.created_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// `GET /api/auth/session`, and what sign-up and sign-in answer.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    pub user: UserView,
    pub session: SessionInfo,
    /// The user's workspaces, with their role (sign-up makes one).
    pub workspaces: Vec<WorkspaceView>,
}

/// A new session: what the client sees, and the token for the cookie.
pub struct SignedIn {
    pub view: SessionView,
    pub token: String,
}

/// A workspace as one caller sees it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceView {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    pub role: Role,
    /// `free`, `hobby`, `pro` or `ultimate`; `null` reads as free.
    #[schema(value_type = Option<crate::model::PlanName>)]
    pub billing_owner_plan: Option<Plan>,
    pub created_at: DateTime<Utc>,
}

impl From<Membership> for WorkspaceView {
    fn from(m: Membership) -> Self {
        WorkspaceView {
            id: m.workspace_id,
            name: m.name,
            slug: m.slug,
            role: m.role,
            billing_owner_plan: m.plan,
            created_at: m.created_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceList {
    pub workspaces: Vec<WorkspaceView>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceCreated {
    pub workspace: WorkspaceView,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateWorkspace {
    /// 1 to 100 characters (no control characters).
    #[schema(value_type = String, required = true, max_length = 100, pattern = r"^\s*[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?\s*$")]
    pub name: Option<String>,
    /// 1 to 60 lower-case letters, digits and dashes, not starting or ending with a dash;
    /// made from the name when absent. Unique.
    #[schema(pattern = r"^\s*(?:[a-z0-9](?:[a-z0-9-]{0,58}[a-z0-9])?)?\s*$")]
    pub slug: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberView {
    pub id: Uuid,
    pub user_id: String,
    pub role: Role,
    pub created_at: DateTime<Utc>,
}

impl From<&MemberRecord> for MemberView {
    fn from(m: &MemberRecord) -> Self {
        MemberView {
            id: m.id,
            user_id: m.user_id.to_string(),
            role: m.role,
            created_at: m.created_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MemberChanged {
    pub member: MemberView,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TeamMember {
    pub id: Uuid,
    pub user_id: String,
    pub role: Role,
    pub created_at: DateTime<Utc>,
    pub email: String,
    pub name: String,
    pub image: Option<String>,
}

impl From<MemberRecord> for TeamMember {
    fn from(m: MemberRecord) -> Self {
        TeamMember {
            id: m.id,
            user_id: m.user_id.to_string(),
            role: m.role,
            created_at: m.created_at,
            email: m.email,
            name: m.name,
            image: m.image,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvitationView {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub email: String,
    pub role: Role,
    pub expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

impl From<InvitationRecord> for InvitationView {
    fn from(i: InvitationRecord) -> Self {
        InvitationView {
            id: i.id,
            workspace_id: i.workspace_id,
            email: i.email,
            role: i.role,
            expires_at: i.expires_at,
            created_at: i.created_at,
        }
    }
}

/// `GET /api/workspaces/{workspaceId}/team`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Team {
    pub current_user_role: Role,
    pub members: Vec<TeamMember>,
    /// Pending invitations; shown to owners and admins (empty for other roles).
    pub invitations: Vec<InvitationView>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangeRole {
    /// `admin`, `member` or `viewer`; `owner` too when an owner asks.
    #[schema(value_type = Role, required = true)]
    pub role: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateInvitation {
    #[schema(value_type = String, required = true, max_length = 254, pattern = r"^\s*[^@\s]+@[^@\s.][^@\s]*\.[^@\s]*[^@\s.]\s*$")]
    pub email: Option<String>,
    /// `admin`, `member` or `viewer` (default `member`).
    #[schema(pattern = r"^\s*(?:admin|member|viewer)\s*$")]
    pub role: Option<String>,
}

/// A new invitation and its single-use token (shown once: share it with the invitee, who
/// accepts it signed in with the invited email at `POST /api/invitations/{token}/accept`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvitationCreated {
    pub invitation: InvitationView,
    pub token: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct InvitationAccepted {
    pub workspace: WorkspaceView,
    pub member: MemberView,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyView {
    pub id: Uuid,
    pub name: String,
    /// The first characters of the key, for telling keys apart.
    pub prefix: String,
    /// The role the key acts with (never above its maker's).
    pub role: Role,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
}

impl From<ApiKey> for ApiKeyView {
    fn from(k: ApiKey) -> Self {
        ApiKeyView {
            id: k.id,
            name: k.name,
            prefix: k.prefix,
            role: k.role,
            created_at: k.created_at,
            last_used_at: k.last_used_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyList {
    pub api_keys: Vec<ApiKeyView>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateApiKey {
    /// 1 to 100 characters (no control characters).
    #[schema(value_type = String, required = true, max_length = 100, pattern = r"^\s*[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?\s*$")]
    pub name: Option<String>,
    /// The role the key acts with; default and most: the caller's own.
    #[schema(value_type = Option<Role>)]
    pub role: Option<String>,
}

/// A new key: shown once.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyCreated {
    pub api_key: ApiKeyView,
    pub key: String,
}

/// An optional `workspaceId` in the query string.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct WorkspaceParam {
    pub workspace_id: Option<Uuid>,
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

// ----- passwords ------------------------------------------------------------------------------

fn hasher(memory_kib: u32) -> Result<Argon2<'static>> {
    let params = Params::new(memory_kib.max(8 * 1024), 2, 1, None)
        .map_err(|e| Error::Internal(format!("argon2 parameters: {e}")))?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// `slot`, when given, is held until the hash is done (on its blocking thread).
async fn hash_password(
    password: String,
    memory_kib: u32,
    slot: Option<tokio::sync::OwnedSemaphorePermit>,
) -> Result<String> {
    tokio::task::spawn_blocking(move || {
        let _slot = slot;
        let mut salt = [0u8; 16];
        rand::rng().fill_bytes(&mut salt);
        let salt = SaltString::encode_b64(&salt)
            .map_err(|e| Error::Internal(format!("password salt: {e}")))?;
        hasher(memory_kib)?
            .hash_password(password.as_bytes(), &salt)
            .map(|hash| hash.to_string())
            .map_err(|e| Error::Internal(format!("password hashing: {e}")))
    })
    .await
    .map_err(|e| Error::Internal(format!("password hashing stopped: {e}")))?
}

/// Whether `password` matches the stored `hash` (its own parameters apply).
async fn verify_password(
    password: String,
    hash: String,
    slot: Option<tokio::sync::OwnedSemaphorePermit>,
) -> Result<bool> {
    tokio::task::spawn_blocking(move || {
        let _slot = slot;
        let parsed = PasswordHash::new(&hash)
            .map_err(|e| Error::Internal(format!("stored password hash unreadable: {e}")))?;
        Ok(Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok())
    })
    .await
    .map_err(|e| Error::Internal(format!("password check stopped: {e}")))?
}

// ----- the service ----------------------------------------------------------------------------

#[derive(Clone)]
pub struct AccountsService {
    store: Arc<dyn Store>,
    workspaces: Option<Workspaces>,
    gate: Gate,
    config: AccountsConfig,
    /// Key hash -> key, so that most requests skip the database lookup.
    keys: moka::sync::Cache<String, Arc<CachedKey>>,
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
            .time_to_live(StdDuration::from_secs(KEY_CACHE_SECS))
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

    // ----- authentication ---------------------------------------------------------------------

    async fn lookup_key(&self, hash: String) -> Result<Option<Arc<CachedKey>>> {
        if let Some(cached) = self.keys.get(&hash) {
            return Ok(Some(cached));
        }
        let Some(found) = self.store.key_by_hash(&hash).await? else {
            return Ok(None);
        };
        let key = found.key;
        let (role, orphaned) = match (key.created_by, found.maker_role) {
            (None, _) => (key.role, false),
            (Some(_), Some(maker)) => (key.role.min(maker), false),
            (Some(_), None) => (key.role, true),
        };
        let touched_at = key.last_used_at.map(to_micros).unwrap_or(i64::MIN);
        let cached = Arc::new(CachedKey {
            key,
            role,
            orphaned,
            touched_at: AtomicI64::new(touched_at),
        });
        self.keys.insert(hash, cached.clone());
        Ok(Some(cached))
    }

    /// Resolves an `X-API-Key` value to who is calling.
    pub async fn authenticate_key(&self, raw: Option<&str>) -> Result<Identity> {
        let raw = raw
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .ok_or_else(|| {
                Error::Unauthorized("missing API key: send it in the X-API-Key header".to_string())
            })?;
        let invalid = || Error::Unauthorized("invalid API key".to_string());
        if !raw.starts_with(KEY_PREFIX) || raw.len() > 200 {
            return Err(invalid());
        }
        let cached = self.lookup_key(hash_key(raw)).await?.ok_or_else(invalid)?;
        let key = &cached.key;
        if key.revoked_at.is_some() || cached.orphaned {
            return Err(Error::Unauthorized(
                "this API key has been revoked".to_string(),
            ));
        }
        // Record the use at most once a minute per key (one caller wins the swap).
        let at = to_micros(now());
        let last = cached.touched_at.load(Ordering::Relaxed);
        let every = Duration::seconds(TOUCH_EVERY_SECS)
            .num_microseconds()
            .unwrap_or(i64::MAX);
        let due = last == i64::MIN || at.saturating_sub(last) >= every;
        if due
            && cached
                .touched_at
                .compare_exchange(last, at, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let store = self.store.clone();
            let key_id = key.id;
            tokio::spawn(async move {
                if let Err(error) = store.touch_api_key(key_id, at).await {
                    tracing::warn!(%key_id, %error, "could not record key use");
                }
            });
        }
        Ok(Identity::Key {
            key_id: key.id,
            workspace_id: key.workspace_id,
            role: cached.role,
            made_by: key.created_by,
        })
    }

    /// Resolves a session cookie's token to who is calling.
    pub async fn authenticate_session(&self, token: &str) -> Result<Identity> {
        let expired =
            || Error::Unauthorized("your session has expired or ended: sign in again".to_string());
        if token.is_empty() || token.len() > 200 {
            return Err(expired());
        }
        let (session, user) = self
            .store
            .session_by_hash(&hash_key(token))
            .await?
            .ok_or_else(expired)?;
        if session.revoked_at.is_some() || session.expires_at <= now() {
            return Err(expired());
        }
        Ok(Identity::User {
            user_id: user.id,
            session_id: session.id,
        })
    }

    /// Forgets cached keys (after a revocation or a member change, so that it applies to the
    /// next request), here and on every other node of a cluster.
    fn forget_cached_keys(&self) {
        self.keys.invalidate_all();
        self.events.publish(ClusterEvent::KeysChanged);
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

    // ----- sign-up, sign-in, sign-out ---------------------------------------------------------

    async fn open_session(&self, user: User) -> Result<SignedIn> {
        let token = generate_token();
        let created_at = now();
        let session = SessionRecord {
            id: Uuid::now_v7(),
            user_id: user.id,
            created_at,
            expires_at: created_at + self.config.session_ttl,
            revoked_at: None,
        };
        self.store
            .insert_session(&session, &hash_key(&token))
            .await?;
        let workspaces = self
            .store
            .memberships(user.id)
            .await?
            .into_iter()
            .map(WorkspaceView::from)
            .collect();
        Ok(SignedIn {
            view: SessionView {
                user: user.into(),
                session: SessionInfo {
                    id: session.id,
                    created_at: session.created_at,
                    expires_at: session.expires_at,
                },
                workspaces,
            },
            token,
        })
    }

    /// The limits of the open doors (the OAuth service shares them).
    /// The role gate (the cluster's router asks it which workspace a request acts in).
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    pub fn doors(&self) -> Arc<Doors> {
        self.doors.clone()
    }

    /// A password hash, in one of the bounded hashing slots.
    async fn hash_password(&self, password: String) -> Result<String> {
        let slot = self.doors.hashing_slot().await?;
        hash_password(password, self.config.password_memory_kib, Some(slot)).await
    }

    /// A password check, in one of the bounded hashing slots.
    async fn verify_password(&self, password: String, hash: String) -> Result<bool> {
        let slot = self.doors.hashing_slot().await?;
        verify_password(password, hash, Some(slot)).await
    }

    /// `POST /api/auth/sign-up`: a user, their first workspace (they own it) and a session.
    /// Limited per client address and per email.
    pub async fn sign_up(&self, from: IpAddr, input: SignUp) -> Result<SignedIn> {
        self.doors.sign_up_by_address.check(address_key(from))?;
        let email = email(input.email.as_deref())?;
        self.doors.sign_up_by_email.check(email.clone())?;
        let password = input.password.unwrap_or_default();
        let length = password.chars().count();
        if !(MIN_PASSWORD_CHARS..=MAX_PASSWORD_CHARS).contains(&length) {
            return Err(Error::validation(
                "password",
                format!("must be {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters"),
            ));
        }
        let name = match text("name", input.name.as_deref(), MAX_NAME_CHARS)? {
            Some(name) => name,
            None => email.split('@').next().unwrap_or("user").to_string(),
        };
        let image = text("image", input.image.as_deref(), MAX_IMAGE_CHARS)?;
        let hash = self.hash_password(password).await?;
        let user = User {
            id: Uuid::now_v7(),
            email,
            name,
            image,
            created_at: now(),
        };
        match self.store.insert_user(&user, &hash).await {
            Ok(()) => {}
            Err(StorageError::UniqueViolation) => {
                return Err(Error::Conflict(
                    "an account with this email already exists: sign in instead".to_string(),
                ))
            }
            Err(error) => return Err(error.into()),
        }
        let workspace_name = format!("{}'s workspace", user.name);
        self.insert_owned_workspace(&user, &workspace_name, None)
            .await?;
        tracing::info!(user_id = %user.id, "user signed up");
        self.open_session(user).await
    }

    /// `POST /api/auth/sign-in`. An unknown email and a wrong password get the same answer,
    /// in the same time. Limited per client address and per account (email).
    pub async fn sign_in(&self, from: IpAddr, input: SignIn) -> Result<SignedIn> {
        self.doors.sign_in_by_address.check(address_key(from))?;
        let email = email(input.email.as_deref())?;
        // Per account, only failures count: a guesser spread over many addresses is stopped,
        // and the owner's own sign-ins never fill the window.
        self.doors.sign_in_by_email.check(email.clone())?;
        let password = input
            .password
            .filter(|p| !p.is_empty())
            .ok_or_else(|| Error::validation("password", "is required"))?;
        if password.chars().count() > MAX_PASSWORD_CHARS {
            return Err(Error::validation(
                "password",
                format!("must be at most {MAX_PASSWORD_CHARS} characters"),
            ));
        }
        let found = self.store.user_by_email(&email).await?;
        let hash = match &found {
            Some((_, hash)) => hash.clone(),
            None => self.decoy().await?,
        };
        let matches = self.verify_password(password, hash).await?;
        match found {
            Some((user, _)) if matches => {
                self.doors.sign_in_by_email.refund(&email);
                self.open_session(user).await
            }
            _ => Err(Error::Unauthorized("invalid email or password".to_string())),
        }
    }

    async fn decoy(&self) -> Result<String> {
        self.decoy_hash
            .get_or_try_init(|| self.hash_password(generate_token()))
            .await
            .cloned()
    }

    /// `POST /api/auth/sign-out`: ends the session.
    pub async fn sign_out(&self, who: &Principal) -> Result<Success> {
        let (_, session_id) = Self::signed_in_user(who, "signing out")?;
        self.store
            .revoke_session(session_id, to_micros(now()))
            .await?;
        Ok(Success { success: true })
    }

    /// `GET /api/auth/session`.
    pub async fn session(&self, who: &Principal) -> Result<SessionView> {
        let (user_id, session_id) = Self::signed_in_user(who, "reading the session")?;
        let user = self
            .store
            .user(user_id)
            .await?
            .ok_or_else(|| Error::Unauthorized("your account no longer exists".to_string()))?;
        // The identity was read with the session a moment ago; read its times again.
        let workspaces = self
            .store
            .memberships(user_id)
            .await?
            .into_iter()
            .map(WorkspaceView::from)
            .collect();
        let token_session = self.store.session(session_id).await?.ok_or_else(|| {
            Error::Unauthorized("your session has expired or ended: sign in again".to_string())
        })?;
        Ok(SessionView {
            user: user.into(),
            session: SessionInfo {
                id: token_session.id,
                created_at: token_session.created_at,
                expires_at: token_session.expires_at,
            },
            workspaces,
        })
    }

    // ----- workspaces -------------------------------------------------------------------------

    /// Inserts a workspace owned by `user`; a slug clash on a slug made from the name gets a
    /// short suffix.
    async fn insert_owned_workspace(
        &self,
        user: &User,
        name: &str,
        slug: Option<String>,
    ) -> Result<Membership> {
        let created_at = now();
        let id = Uuid::now_v7();
        let chosen = slug.is_some();
        let base = slug.unwrap_or_else(|| slugify(name));
        let owner = MemberRecord {
            id: Uuid::now_v7(),
            workspace_id: id,
            user_id: user.id,
            role: Role::Owner,
            created_at,
            email: user.email.clone(),
            name: user.name.clone(),
            image: user.image.clone(),
        };
        for attempt in 0..2 {
            let slug = if attempt == 0 {
                base.clone()
            } else {
                format!("{base}-{}", &id.simple().to_string()[24..])
            };
            let workspace = Workspace {
                id,
                name: name.to_string(),
                slug,
                plan: None,
                created_at,
            };
            match self
                .store
                .insert_workspace_with_owner(&workspace, &owner)
                .await
            {
                // The default vault is made on the workspace's first vault request (by its
                // owner node, in a cluster: this node may not own the new workspace).
                Ok(()) => {
                    return Ok(Membership {
                        workspace_id: id,
                        name: workspace.name,
                        slug: workspace.slug,
                        plan: None,
                        created_at,
                        role: Role::Owner,
                        member_id: owner.id,
                    });
                }
                Err(StorageError::UniqueViolation) if attempt == 0 && !chosen => continue,
                Err(StorageError::UniqueViolation) => {
                    return Err(Error::Conflict(
                        "a workspace with this slug already exists: choose another slug"
                            .to_string(),
                    ))
                }
                Err(error) => return Err(error.into()),
            }
        }
        Err(Error::Conflict(
            "could not choose a unique slug for this workspace".to_string(),
        ))
    }

    /// `GET /api/workspaces`: a signed-in user's workspaces; a key's own workspace.
    pub async fn list_workspaces(&self, who: &Principal) -> Result<WorkspaceList> {
        let workspaces = match &who.identity {
            Identity::User { user_id, .. } => self
                .store
                .memberships(*user_id)
                .await?
                .into_iter()
                .map(WorkspaceView::from)
                .collect(),
            Identity::Key { .. } | Identity::Token { .. } => {
                let caller = self.gate.enter(who, None, Need::Read).await?;
                self.admit(&caller, EndpointClass::Read).await?;
                let workspace = self
                    .store
                    .workspace(caller.workspace_id)
                    .await?
                    .ok_or_else(|| Error::Unauthorized("invalid API key".to_string()))?;
                vec![WorkspaceView {
                    id: workspace.id,
                    name: workspace.name,
                    slug: workspace.slug,
                    role: caller.role,
                    billing_owner_plan: workspace.plan,
                    created_at: workspace.created_at,
                }]
            }
        };
        Ok(WorkspaceList { workspaces })
    }

    /// `POST /api/workspaces`: the signed-in user owns the new workspace.
    pub async fn create_workspace_for(
        &self,
        who: &Principal,
        input: CreateWorkspace,
    ) -> Result<WorkspaceCreated> {
        let (user_id, _) = Self::signed_in_user(who, "creating a workspace")?;
        let name = text("name", input.name.as_deref(), MAX_NAME_CHARS)?
            .ok_or_else(|| Error::validation("name", "is required"))?;
        self.doors.workspaces_by_user.check(user_id)?;
        let slug = match input.slug.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(raw) => {
                let valid = raw.len() <= MAX_SLUG_CHARS
                    && raw
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !raw.starts_with('-')
                    && !raw.ends_with('-');
                if !valid {
                    return Err(Error::validation(
                        "slug",
                        format!("must be 1 to {MAX_SLUG_CHARS} lower-case letters, digits and dashes, not starting or ending with a dash"),
                    ));
                }
                Some(raw.to_string())
            }
        };
        let user = self
            .store
            .user(user_id)
            .await?
            .ok_or_else(|| Error::Unauthorized("your account no longer exists".to_string()))?;
        let membership = self.insert_owned_workspace(&user, &name, slug).await?;
        Ok(WorkspaceCreated {
            workspace: membership.into(),
        })
    }

    /// Creates a workspace with its first API key (the command line); returns the raw key
    /// (shown once). The key acts as owner.
    pub async fn create_workspace(
        &self,
        name: &str,
        plan: Option<Plan>,
    ) -> Result<(Workspace, String)> {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
            return Err(Error::validation("name", "must be 1 to 100 characters"));
        }
        let created_at = now();
        let id = Uuid::now_v7();
        let base = slugify(name);
        let key = generate_key();
        let api_key = ApiKey {
            id: Uuid::now_v7(),
            workspace_id: id,
            name: "default".to_string(),
            prefix: key.prefix.clone(),
            role: Role::Owner,
            created_by: None,
            created_at,
            last_used_at: None,
            revoked_at: None,
        };
        // Slugs are unique: on a clash, a short suffix from the id.
        for attempt in 0..2 {
            let slug = if attempt == 0 {
                base.clone()
            } else {
                format!("{base}-{}", &id.simple().to_string()[24..])
            };
            let workspace = Workspace {
                id,
                name: name.to_string(),
                slug,
                plan,
                created_at,
            };
            match self
                .store
                .insert_workspace_with_key(&workspace, &api_key, &key.hash)
                .await
            {
                Ok(()) => {
                    return Ok((workspace, key.raw));
                }
                Err(StorageError::UniqueViolation) if attempt == 0 => continue,
                Err(error) => return Err(error.into()),
            }
        }
        Err(Error::Conflict(
            "could not choose a unique slug for this workspace".to_string(),
        ))
    }

    /// Sets a workspace's plan (the command line and billing); the workspace actor follows at
    /// once.
    pub async fn set_plan(&self, workspace_id: Uuid, plan: Plan) -> Result<()> {
        if !self.store.set_plan(workspace_id, plan).await? {
            return Err(Error::NotFound(format!(
                "workspace {workspace_id} not found"
            )));
        }
        self.plan_changed(workspace_id, plan);
        Ok(())
    }

    /// Tells the workspace's actor here about a plan already stored; the database announces
    /// it to the other nodes of a cluster (migration `0011_plan_notify.sql`).
    pub fn plan_changed(&self, workspace_id: Uuid, plan: Plan) {
        if let Some(workspaces) = &self.workspaces {
            workspaces.plan_changed(workspace_id, plan);
        }
    }

    async fn admit(&self, caller: &Caller, class: EndpointClass) -> Result<()> {
        if let Some(workspaces) = &self.workspaces {
            admit(workspaces, caller, class, false).await?;
        }
        Ok(())
    }

    // ----- team -------------------------------------------------------------------------------

    /// `GET /api/workspaces/{workspaceId}/team`.
    pub async fn team(&self, who: &Principal, workspace_id: &str) -> Result<Team> {
        let workspace_id = path_id("workspace", workspace_id)?;
        let caller = self.gate.enter(who, Some(workspace_id), Need::Read).await?;
        self.admit(&caller, EndpointClass::Read).await?;
        let members = self
            .store
            .members(workspace_id)
            .await?
            .into_iter()
            .map(TeamMember::from)
            .collect();
        let invitations = if caller.role.allows(Need::Manage) {
            self.store
                .pending_invitations(workspace_id, to_micros(now()))
                .await?
                .into_iter()
                .map(InvitationView::from)
                .collect()
        } else {
            Vec::new()
        };
        Ok(Team {
            current_user_role: caller.role,
            members,
            invitations,
        })
    }

    /// `PATCH /api/workspaces/{workspaceId}/members/{memberId}`.
    pub async fn change_role(
        &self,
        who: &Principal,
        workspace_id: &str,
        member_id: &str,
        input: ChangeRole,
    ) -> Result<MemberChanged> {
        let workspace_id = path_id("workspace", workspace_id)?;
        let caller = self
            .gate
            .enter(who, Some(workspace_id), Need::Manage)
            .await?;
        self.admit(&caller, EndpointClass::Write).await?;
        let member_id = path_id("member", member_id)?;
        let raw = input
            .role
            .ok_or_else(|| Error::validation("role", "is required"))?;
        let role = role_value(
            "role",
            &raw,
            &[Role::Owner, Role::Admin, Role::Member, Role::Viewer],
        )?;
        // Giving the owner role is an owner's decision: a wrong role, not a wrong value.
        if role == Role::Owner && !caller.role.allows(Need::Own) {
            return Err(forbidden_role(caller.role, Need::Own));
        }
        let target = self
            .store
            .member(workspace_id, member_id)
            .await?
            .ok_or_else(|| Error::NotFound("member not found".to_string()))?;
        if target.role == Role::Owner && !caller.role.allows(Need::Own) {
            return Err(forbidden_role(caller.role, Need::Own));
        }
        match self
            .store
            .set_member_role(workspace_id, member_id, role)
            .await?
        {
            MemberChange::Done(member) => {
                self.forget_cached_keys();
                Ok(MemberChanged {
                    member: MemberView::from(&member),
                })
            }
            MemberChange::NotFound => Err(Error::NotFound("member not found".to_string())),
            MemberChange::LastOwner => Err(last_owner()),
        }
    }

    /// `DELETE /api/workspaces/{workspaceId}/members/{memberId}`. Members may remove
    /// themselves (leave); owners and admins may remove others (an owner only by an owner).
    /// The keys the member made in the workspace are revoked with them.
    pub async fn remove_member(
        &self,
        who: &Principal,
        workspace_id: &str,
        member_id: &str,
    ) -> Result<Success> {
        let workspace_id = path_id("workspace", workspace_id)?;
        let member_id = path_id("member", member_id)?;
        let caller = self.gate.enter(who, Some(workspace_id), Need::Read).await?;
        self.admit(&caller, EndpointClass::Write).await?;
        let target = self
            .store
            .member(workspace_id, member_id)
            .await?
            .ok_or_else(|| Error::NotFound("member not found".to_string()))?;
        let leaving = who.user_id() == Some(target.user_id);
        if !leaving {
            if !caller.role.allows(Need::Manage) {
                return Err(forbidden_role(caller.role, Need::Manage));
            }
            if target.role == Role::Owner && !caller.role.allows(Need::Own) {
                return Err(forbidden_role(caller.role, Need::Own));
            }
        }
        match self
            .store
            .remove_member(workspace_id, member_id, to_micros(now()))
            .await?
        {
            MemberChange::Done(_) => {
                self.forget_cached_keys();
                Ok(Success { success: true })
            }
            MemberChange::NotFound => Err(Error::NotFound("member not found".to_string())),
            MemberChange::LastOwner => Err(last_owner()),
        }
    }

    // ----- invitations ------------------------------------------------------------------------

    /// `POST /api/workspaces/{workspaceId}/invitations`.
    pub async fn invite(
        &self,
        who: &Principal,
        workspace_id: &str,
        input: CreateInvitation,
    ) -> Result<InvitationCreated> {
        let workspace_id = path_id("workspace", workspace_id)?;
        let caller = self
            .gate
            .enter(who, Some(workspace_id), Need::Manage)
            .await?;
        self.admit(&caller, EndpointClass::Write).await?;
        let email = email(input.email.as_deref())?;
        let role = match input.role.as_deref() {
            None => Role::Member,
            Some(raw) => role_value("role", raw, &[Role::Admin, Role::Member, Role::Viewer])?,
        };
        self.doors.invitations_by_workspace.check(workspace_id)?;
        let members = self.store.members(workspace_id).await?;
        if members.iter().any(|m| m.email == email) {
            return Err(Error::Conflict(format!(
                "{email} is already a member of this workspace"
            )));
        }
        let token = generate_token();
        let created_at = now();
        let invitation = InvitationRecord {
            id: Uuid::now_v7(),
            workspace_id,
            email,
            role,
            invited_by: who.user_id().or(match &who.identity {
                Identity::Key { made_by, .. } => *made_by,
                Identity::User { .. } | Identity::Token { .. } => None,
            }),
            created_at,
            expires_at: created_at + self.config.invitation_ttl,
            accepted_at: None,
            revoked_at: None,
        };
        self.store
            .insert_invitation(&invitation, &hash_key(&token))
            .await?;
        Ok(InvitationCreated {
            invitation: invitation.into(),
            token,
        })
    }

    /// `DELETE /api/workspaces/{workspaceId}/invitations/{invitationId}`.
    pub async fn revoke_invitation(
        &self,
        who: &Principal,
        workspace_id: &str,
        invitation_id: &str,
    ) -> Result<Success> {
        let workspace_id = path_id("workspace", workspace_id)?;
        let caller = self
            .gate
            .enter(who, Some(workspace_id), Need::Manage)
            .await?;
        self.admit(&caller, EndpointClass::Write).await?;
        let id = path_id("invitation", invitation_id)?;
        if !self
            .store
            .revoke_invitation(workspace_id, id, to_micros(now()))
            .await?
        {
            return Err(Error::NotFound(
                "invitation not found (or no longer pending)".to_string(),
            ));
        }
        Ok(Success { success: true })
    }

    /// `POST /api/invitations/{token}/accept`: the signed-in user whose email was invited
    /// joins with the invitation's role.
    pub async fn accept_invitation(
        &self,
        who: &Principal,
        token: &str,
    ) -> Result<InvitationAccepted> {
        let (user_id, _) = Self::signed_in_user(who, "accepting an invitation")?;
        let not_found = || Error::NotFound("invitation not found".to_string());
        if token.is_empty() || token.len() > 200 {
            return Err(not_found());
        }
        let invitation = self
            .store
            .invitation_by_hash(&hash_key(token))
            .await?
            .ok_or_else(not_found)?;
        let at = now();
        if invitation.revoked_at.is_some() {
            return Err(Error::Gone("this invitation was revoked".to_string()));
        }
        if invitation.accepted_at.is_some() {
            return Err(Error::Gone(
                "this invitation has already been used".to_string(),
            ));
        }
        if invitation.expires_at <= at {
            return Err(Error::Gone(format!(
                "this invitation expired at {}: ask for a new one",
                invitation.expires_at.to_rfc3339()
            )));
        }
        let user = self
            .store
            .user(user_id)
            .await?
            .ok_or_else(|| Error::Unauthorized("your account no longer exists".to_string()))?;
        if user.email != invitation.email {
            return Err(Error::Forbidden(
                "this invitation was sent to another email address: sign in with that one"
                    .to_string(),
            ));
        }
        let member = MemberRecord {
            id: Uuid::now_v7(),
            workspace_id: invitation.workspace_id,
            user_id,
            role: invitation.role,
            created_at: at,
            email: user.email.clone(),
            name: user.name.clone(),
            image: user.image.clone(),
        };
        let member = match self
            .store
            .accept_invitation(invitation.id, &member, to_micros(at))
            .await?
        {
            Acceptance::Joined(member) | Acceptance::AlreadyMember(member) => member,
            Acceptance::Gone => {
                return Err(Error::Gone(
                    "this invitation is no longer valid".to_string(),
                ))
            }
        };
        let workspace = self
            .store
            .memberships(user_id)
            .await?
            .into_iter()
            .find(|m| m.workspace_id == invitation.workspace_id)
            .ok_or_else(not_a_member)?;
        Ok(InvitationAccepted {
            workspace: workspace.into(),
            member: MemberView::from(&member),
        })
    }

    // ----- API keys ---------------------------------------------------------------------------

    /// `GET /api/workspaces/{workspaceId}/api-keys`.
    pub async fn list_keys(&self, who: &Principal, workspace_id: &str) -> Result<ApiKeyList> {
        let workspace_id = path_id("workspace", workspace_id)?;
        let caller = self
            .gate
            .enter(who, Some(workspace_id), Need::Manage)
            .await?;
        self.admit(&caller, EndpointClass::Read).await?;
        Ok(ApiKeyList {
            api_keys: self
                .store
                .api_keys(workspace_id)
                .await?
                .into_iter()
                .map(ApiKeyView::from)
                .collect(),
        })
    }

    /// `POST /api/workspaces/{workspaceId}/api-keys`: the key is shown once.
    pub async fn create_key(
        &self,
        who: &Principal,
        workspace_id: &str,
        input: CreateApiKey,
    ) -> Result<ApiKeyCreated> {
        let workspace_id = path_id("workspace", workspace_id)?;
        let caller = self
            .gate
            .enter(who, Some(workspace_id), Need::Manage)
            .await?;
        self.admit(&caller, EndpointClass::Write).await?;
        let name = text("name", input.name.as_deref(), MAX_NAME_CHARS)?
            .ok_or_else(|| Error::validation("name", "is required"))?;
        let allowed: Vec<Role> = Role::ALL
            .iter()
            .copied()
            .filter(|r| r.rank() <= caller.role.rank())
            .collect();
        let role = match input.role.as_deref() {
            None => caller.role,
            Some(raw) => role_value("role", raw, &allowed)?,
        };
        let created_by = match &who.identity {
            Identity::User { user_id, .. } | Identity::Token { user_id, .. } => Some(*user_id),
            Identity::Key { made_by, .. } => *made_by,
        };
        let key = generate_key();
        let api_key = ApiKey {
            id: Uuid::now_v7(),
            workspace_id,
            name,
            prefix: key.prefix.clone(),
            role,
            created_by,
            created_at: now(),
            last_used_at: None,
            revoked_at: None,
        };
        self.store.insert_api_key(&api_key, &key.hash).await?;
        Ok(ApiKeyCreated {
            api_key: api_key.into(),
            key: key.raw,
        })
    }

    /// `DELETE /api/workspaces/{workspaceId}/api-keys/{keyId}`: refused from the next request.
    pub async fn revoke_key(
        &self,
        who: &Principal,
        workspace_id: &str,
        key_id: &str,
    ) -> Result<Success> {
        let workspace_id = path_id("workspace", workspace_id)?;
        let caller = self
            .gate
            .enter(who, Some(workspace_id), Need::Manage)
            .await?;
        self.admit(&caller, EndpointClass::Write).await?;
        let id = path_id("API key", key_id)?;
        if !self
            .store
            .revoke_api_key(workspace_id, id, to_micros(now()))
            .await?
        {
            return Err(Error::NotFound("API key not found".to_string()));
        }
        self.forget_cached_keys();
        Ok(Success { success: true })
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

fn last_owner() -> Error {
    Error::Conflict("a workspace must keep an owner: make another member owner first".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_prefix_and_enough_randomness() {
        let a = generate_key();
        let b = generate_key();
        assert!(a.raw.starts_with("mc_"));
        assert_eq!(a.raw.len(), 43);
        assert!(a.raw[3..].chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a.raw, b.raw);
        assert_eq!(a.hash, hash_key(&a.raw));
        assert!(a.raw.starts_with(&a.prefix));
        assert!(!a.hash.contains(&a.raw[3..]));
    }

    #[test]
    fn slugs_are_url_safe() {
        assert_eq!(slugify("My Team!"), "my-team");
        assert_eq!(slugify("  Ünïcode -- name "), "n-code-name");
        assert_eq!(slugify("!!!"), "workspace");
        assert!(slugify(&"a".repeat(500)).len() <= MAX_SLUG_CHARS);
    }

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

    #[tokio::test]
    async fn passwords_hash_with_argon2id_and_verify() {
        let hash = hash_password("correct horse".to_string(), 8 * 1024, None)
            .await
            .unwrap();
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        assert!(
            verify_password("correct horse".to_string(), hash.clone(), None)
                .await
                .unwrap()
        );
        assert!(!verify_password("wrong horse".to_string(), hash, None)
            .await
            .unwrap());
    }
}
