//! API keys: generating and hashing them (the same hash serves session and invitation tokens),
//! authenticating them through a short-lived cache, and listing, creating and revoking them.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use chrono::Duration;
use memvault_actors::EndpointClass;
use rand::distr::{Alphanumeric, SampleString};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::inputs::{NewKey, Parsed};
use super::{path_id, AccountsService};
use crate::error::{Error, Result};
use crate::model::accounts::{Need, Role};
use crate::model::{now, to_micros, ApiKey};
use crate::services::cluster::events::ClusterEvent;
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

/// A new key: its record, and the raw key (shown once).
#[derive(Debug, Clone)]
pub struct IssuedKey {
    pub api_key: ApiKey,
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
    pub async fn list_keys(&self, who: &Principal, workspace_id: &str) -> Result<Vec<ApiKey>> {
        let (workspace_id, _) = self
            .enter_workspace(who, workspace_id, Need::Manage, EndpointClass::Read)
            .await?;
        Ok(self.store.api_keys(workspace_id).await?)
    }

    /// `POST /api/workspaces/{workspaceId}/api-keys`: the key is shown once.
    pub async fn create_key(
        &self,
        who: &Principal,
        workspace_id: &str,
        input: Parsed<NewKey>,
    ) -> Result<IssuedKey> {
        let (workspace_id, caller) = self
            .enter_workspace(who, workspace_id, Need::Manage, EndpointClass::Write)
            .await?;
        let input = input?;
        let name = input.name.into_string();
        let allowed: Vec<Role> = Role::ALL
            .iter()
            .copied()
            .filter(|r| r.rank() <= caller.role.rank())
            .collect();
        let role = match input.role {
            None => caller.role,
            Some(requested) => requested.within("role", &allowed)?,
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
        Ok(IssuedKey {
            api_key,
            key: key.raw,
        })
    }

    /// `DELETE /api/workspaces/{workspaceId}/api-keys/{keyId}`: refused from the next request.
    pub async fn revoke_key(
        &self,
        who: &Principal,
        workspace_id: &str,
        key_id: &str,
    ) -> Result<()> {
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
        Ok(())
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
