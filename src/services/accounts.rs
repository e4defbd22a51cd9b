//! Workspaces and API keys. Keys are `mc_` + 40 random URL-safe characters; only their
//! SHA-256 is stored (a key has 238 bits of entropy, so a fast hash is the right one), with a
//! short prefix kept for display.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::Duration;
use memvault_actors::Workspaces;
use rand::distr::{Alphanumeric, SampleString};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::{now, to_micros, ApiKey, Plan, Workspace};
use crate::services::{Caller, RateSlot};
use crate::storage::Store;

pub const KEY_PREFIX: &str = "mc_";
const KEY_RANDOM_CHARS: usize = 40;
/// `last_used_at` is written at most this often per key.
const TOUCH_EVERY_SECS: i64 = 60;
/// A key lookup is cached this long (a key deleted from the database by another process is
/// refused at most this much later).
const KEY_CACHE_SECS: u64 = 30;

/// A key as cached for authentication.
struct CachedKey {
    key: ApiKey,
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
    let slug = slug.trim_end_matches('-').to_string();
    if slug.is_empty() {
        "workspace".to_string()
    } else {
        slug
    }
}

#[derive(Clone)]
pub struct AccountsService {
    store: Arc<dyn Store>,
    workspaces: Option<Workspaces>,
    /// Key hash -> key, so that most requests skip the database lookup.
    keys: moka::sync::Cache<String, Arc<CachedKey>>,
}

impl AccountsService {
    /// `workspaces` is `None` for the command line, which runs without actors.
    pub fn new(store: Arc<dyn Store>, workspaces: Option<Workspaces>) -> Self {
        let keys = moka::sync::Cache::builder()
            .max_capacity(10_000)
            .time_to_live(StdDuration::from_secs(KEY_CACHE_SECS))
            .build();
        AccountsService {
            store,
            workspaces,
            keys,
        }
    }

    async fn lookup_key(&self, hash: String) -> Result<Option<Arc<CachedKey>>> {
        if let Some(cached) = self.keys.get(&hash) {
            return Ok(Some(cached));
        }
        let Some(key) = self.store.api_key_by_hash(&hash).await? else {
            return Ok(None);
        };
        let touched_at = key.last_used_at.map(to_micros).unwrap_or(i64::MIN);
        let cached = Arc::new(CachedKey {
            key,
            touched_at: AtomicI64::new(touched_at),
        });
        self.keys.insert(hash, cached.clone());
        Ok(Some(cached))
    }

    /// Resolves an `X-API-Key` value to its caller.
    pub async fn authenticate(&self, raw: Option<&str>) -> Result<Caller> {
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
        if key.revoked_at.is_some() {
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
        Ok(Caller {
            workspace_id: key.workspace_id,
            key_id: key.id,
            user_id: format!("key:{}", key.id),
            rate: RateSlot::default(),
        })
    }

    /// Creates a workspace with its first API key; returns the raw key (shown once).
    pub async fn create_workspace(
        &self,
        name: &str,
        plan: Option<Plan>,
    ) -> Result<(Workspace, String)> {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > 100 {
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
                Ok(()) => return Ok((workspace, key.raw)),
                Err(crate::error::StorageError::UniqueViolation) if attempt == 0 => continue,
                Err(error) => return Err(error.into()),
            }
        }
        Err(Error::Conflict(
            "could not choose a unique slug for this workspace".to_string(),
        ))
    }

    pub async fn set_plan(&self, workspace_id: Uuid, plan: Plan) -> Result<()> {
        if !self.store.set_plan(workspace_id, plan).await? {
            return Err(Error::NotFound(format!(
                "workspace {workspace_id} not found"
            )));
        }
        if let Some(workspaces) = &self.workspaces {
            workspaces.plan_changed(workspace_id, plan);
        }
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

    #[test]
    fn slugs_are_url_safe() {
        assert_eq!(slugify("My Team!"), "my-team");
        assert_eq!(slugify("  Ünïcode -- name "), "n-code-name");
        assert_eq!(slugify("!!!"), "workspace");
    }
}
