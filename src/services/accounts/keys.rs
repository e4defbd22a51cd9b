//! API keys: generating and hashing them (the same hash serves session and invitation tokens),
//! authenticating them through a short-lived cache, and listing, creating and revoking them.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use memvault_actors::EndpointClass;
use rand::distr::{Alphanumeric, SampleString};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{path_id, role_value, text, AccountsService, MAX_NAME_CHARS};
use crate::error::{Error, Result};
use crate::model::accounts::{Need, Role};
use crate::model::{now, to_micros, ApiKey};
use crate::services::cluster::events::ClusterEvent;
use crate::services::memories::Success;
use crate::services::{Identity, Principal};

pub const KEY_PREFIX: &str = "mc_";
const KEY_RANDOM_CHARS: usize = 40;
/// `last_used_at` is written at most this often per key.
const TOUCH_EVERY_SECS: i64 = 60;
/// A key lookup is cached this long. Revocations and member changes made through this server
/// clear the cache at once; a key deleted by another process is refused at most this late.
pub(super) const KEY_CACHE_SECS: u64 = 30;

/// A key as cached for authentication.
pub(super) struct CachedKey {
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

impl AccountsService {
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

    /// Forgets cached keys (after a revocation or a member change, so that it applies to the
    /// next request), here and on every other node of a cluster.
    pub(super) fn forget_cached_keys(&self) {
        self.keys.invalidate_all();
        self.events.publish(ClusterEvent::KeysChanged);
    }

    /// `GET /api/workspaces/{workspaceId}/api-keys`.
    pub async fn list_keys(&self, who: &Principal, workspace_id: &str) -> Result<ApiKeyList> {
        let (workspace_id, _) = self
            .enter_workspace(who, workspace_id, Need::Manage, EndpointClass::Read)
            .await?;
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
        let (workspace_id, caller) = self
            .enter_workspace(who, workspace_id, Need::Manage, EndpointClass::Write)
            .await?;
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
        let (workspace_id, _) = self
            .enter_workspace(who, workspace_id, Need::Manage, EndpointClass::Write)
            .await?;
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
}
