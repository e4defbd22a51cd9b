//! The flat names settings had before they were grouped by subject (`listen`,
//! `MEMVAULT_DB_MAX_CONNECTIONS`), each with its place now, and the provider that moves them.
//!
//! Both spellings work in the file and in the environment: `listen` and `[server] listen`,
//! `MEMVAULT_LISTEN` and `MEMVAULT_SERVER__LISTEN`. Where one source gives both, the grouped one
//! wins.

use figment::providers::Env;
use figment::value::{Dict, Map, Value};
use figment::{Error, Metadata, Profile, Provider};

/// Each flat key (a top-level key of the file, or a `MEMVAULT_` variable's name) and the path
/// it stands for. A flat key naming a table (`http`) moves the whole table.
pub const FLAT: &[(&str, &str)] = &[
    ("listen", "server.listen"),
    ("log_format", "server.log_format"),
    ("log_level", "server.log_level"),
    ("max_body_bytes", "server.max_body_bytes"),
    ("public_url", "server.public_url"),
    ("actor_call_timeout_ms", "server.actor_call_timeout_ms"),
    ("metrics_token", "server.metrics_token"),
    ("metrics_per_workspace", "server.metrics_per_workspace"),
    ("http", "server.http"),
    ("supervision", "server.supervision"),
    ("data_dir", "storage.data_dir"),
    ("database_url", "storage.database_url"),
    ("db_max_connections", "storage.max_connections"),
    ("sqlite_synchronous", "storage.sqlite_synchronous"),
    ("deleted_retention_days", "storage.deleted_retention_days"),
    ("purge_interval_secs", "storage.purge_interval_secs"),
    ("embedding_model_dir", "embedding.model_dir"),
    ("embedding_precision", "embedding.precision"),
    ("embeddings_url", "embedding.url"),
    ("embeddings_model", "embedding.model"),
    ("embeddings_key", "embedding.key"),
    ("query_cache_entries", "embedding.query_cache_entries"),
    ("llm_url", "llm.url"),
    ("llm_model", "llm.model"),
    ("llm_key", "llm.key"),
    ("max_content_chars", "memories.max_content_chars"),
    ("dedup_threshold", "memories.dedup_threshold"),
    (
        "supersede_min_similarity",
        "memories.supersede_min_similarity",
    ),
    ("long_note_chars", "memories.long_note_chars"),
    ("profile_lines", "memories.profile_lines"),
    ("search_fusion", "search.fusion"),
    ("search_semantic_weight", "search.semantic_weight"),
    ("vault_search_fusion", "vault.search_fusion"),
    (
        "vault_search_semantic_weight",
        "vault.search_semantic_weight",
    ),
    ("vault_search_fact_weight", "vault.search_fact_weight"),
    ("vault_chunk_pieces", "vault.chunk_pieces"),
    ("max_upload_bytes", "vault.max_upload_bytes"),
    ("ocr_language", "vault.ocr_language"),
    ("ocr_data_dir", "vault.ocr_data_dir"),
    ("fetch_allow_private", "vault.fetch_allow_private"),
    ("fetch_timeout_secs", "vault.fetch_timeout_secs"),
    ("fetch_max_redirects", "vault.fetch_max_redirects"),
    ("ingest_max_documents", "vault.ingest_max_documents"),
    (
        "ingest_max_documents_per_workspace",
        "vault.ingest_max_documents_per_workspace",
    ),
    ("ingest_max_text_mb", "vault.ingest_max_text_mb"),
    ("ingest_max_chunks", "vault.ingest_max_chunks"),
    ("ingest_max_facts", "vault.ingest_max_facts"),
    ("ingest_max_attempts", "vault.ingest_max_attempts"),
    ("ingest_stale_ms", "vault.ingest_stale_ms"),
    ("ingest_backoff_ms", "vault.ingest_backoff_ms"),
    ("ingest_backoff_cap_ms", "vault.ingest_backoff_cap_ms"),
    ("worker", "vault.worker"),
    ("rate_limits", "accounts.rate_limits"),
    ("memory_limits", "accounts.memory_limits"),
    ("workspace_idle_secs", "accounts.workspace_idle_secs"),
    ("plan_refresh_secs", "accounts.plan_refresh_secs"),
    ("session_ttl_days", "accounts.session_ttl_days"),
    ("invitation_ttl_days", "accounts.invitation_ttl_days"),
    ("password_memory_kib", "accounts.password_memory_kib"),
    ("abuse", "accounts.abuse"),
    ("billing_provider", "billing.provider"),
    ("billing_url", "billing.url"),
    ("billing_key", "billing.key"),
    ("billing_webhook_secret", "billing.webhook_secret"),
    (
        "billing_webhook_tolerance_secs",
        "billing.webhook_tolerance_secs",
    ),
    ("billing_products", "billing.products"),
    ("node_url", "cluster.node_url"),
    ("cluster_secret", "cluster.secret"),
];

/// The flat name of the setting at `path` (its first key from the end that has one), e.g.
/// `["accounts", "memory_limits", "free"]` -> `memory_limits.free`.
pub fn flat_name(path: &[&str]) -> Option<String> {
    (1..=path.len()).rev().find_map(|n| {
        let head = path[..n].join(".");
        let (flat, _) = FLAT.iter().find(|(_, grouped)| *grouped == head)?;
        let mut name = vec![flat.to_string()];
        name.extend(path[n..].iter().map(|k| k.to_string()));
        Some(name.join("."))
    })
}

/// A file whose flat keys are moved to their groups.
pub struct GroupedFile<P>(pub P);

impl<P: Provider> Provider for GroupedFile<P> {
    fn metadata(&self) -> Metadata {
        self.0.metadata()
    }

    fn data(&self) -> Result<Map<Profile, Dict>, Error> {
        Ok(self
            .0
            .data()?
            .into_iter()
            .map(|(profile, dict)| (profile, group(dict)))
            .collect())
    }

    fn profile(&self) -> Option<Profile> {
        self.0.profile()
    }
}

/// Environment variables, flat names moved to their groups, each value kept as the text it
/// is (a key `0123` stays `0123`; numbers and switches are read from text as the setting's
/// type asks, by [`super::Settings::from_file`]'s lossy extraction). Errors name the variable.
pub struct GroupedEnv {
    pub env: Env,
    /// `MEMVAULT_`, or empty for `DATABASE_URL`.
    pub prefix: &'static str,
}

impl Provider for GroupedEnv {
    fn metadata(&self) -> Metadata {
        let prefix = self.prefix;
        self.env
            .metadata()
            .interpolater(move |_: &Profile, path: &[&str]| {
                let variable = |name: &str| {
                    format!("{prefix}{}", name.replace('.', "__").to_ascii_uppercase())
                };
                let grouped = variable(&path.join("."));
                match flat_name(path) {
                    // `DATABASE_URL` has one name.
                    Some(flat) if prefix.is_empty() => variable(&flat),
                    Some(flat) => format!("{} (or {grouped})", variable(&flat)),
                    None => grouped,
                }
            })
    }

    fn data(&self) -> Result<Map<Profile, Dict>, Error> {
        let mut dict = Dict::new();
        for (key, value) in self.env.iter() {
            let path: Vec<&str> = key.as_str().split('.').collect();
            if path.iter().any(|k| k.is_empty()) {
                continue;
            }
            place(&mut dict, &path, Value::from(value));
        }
        Ok(Profile::Default.collect(group(dict)))
    }
}

/// Moves each flat key of `dict` to its group; grouped keys given as well win.
pub fn group(dict: Dict) -> Dict {
    let mut out = Dict::new();
    let mut flat = Vec::new();
    for (key, value) in dict {
        match FLAT.iter().find(|(name, _)| *name == key) {
            Some((_, path)) => flat.push((*path, value)),
            None => {
                out.insert(key, value);
            }
        }
    }
    // The grouped keys are in first, so a flat one never overwrites them.
    for (path, value) in flat {
        place(&mut out, &path.split('.').collect::<Vec<_>>(), value);
    }
    out
}

/// Puts `value` at `path` under `dict`, keeping what is there already (tables are merged,
/// their existing keys kept).
fn place(dict: &mut Dict, path: &[&str], value: Value) {
    let (first, rest) = path.split_first().expect("a path has a key");
    if rest.is_empty() {
        match (dict.get_mut(*first), value) {
            (None, value) => {
                dict.insert(first.to_string(), value);
            }
            (Some(Value::Dict(_, existing)), Value::Dict(_, incoming)) => {
                for (key, value) in incoming {
                    place(existing, &[key.as_str()], value);
                }
            }
            // A grouped value given too wins.
            (Some(_), _) => {}
        }
        return;
    }
    let entry = dict
        .entry(first.to_string())
        .or_insert_with(|| Value::from(Dict::new()));
    if let Value::Dict(_, inner) = entry {
        place(inner, rest, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dict(json: serde_json::Value) -> Dict {
        let value: Value = serde_json::from_value(json).unwrap();
        value.into_dict().unwrap()
    }

    #[test]
    fn flat_keys_move_to_their_group_and_grouped_ones_win() {
        let moved = group(dict(serde_json::json!({
            "listen": "0.0.0.0:1",
            "db_max_connections": 3,
            "memory_limits": {"free": 7, "pro": 9},
            "accounts": {"memory_limits": {"free": 8}},
            "log_level": "warn",
            "server": {"log_level": "debug"},
            "cluster": {"heartbeat_ms": 5},
            "cluster_secret": "s",
        })));
        let json = serde_json::to_value(&moved).unwrap();
        assert_eq!(json["server"]["listen"], "0.0.0.0:1");
        assert_eq!(json["server"]["log_level"], "debug");
        assert_eq!(json["storage"]["max_connections"], 3);
        assert_eq!(json["accounts"]["memory_limits"]["free"], 8);
        assert_eq!(json["accounts"]["memory_limits"]["pro"], 9);
        assert_eq!(json["cluster"]["heartbeat_ms"], 5);
        assert_eq!(json["cluster"]["secret"], "s");
        assert!(json.get("listen").is_none() && json.get("memory_limits").is_none());
    }

    #[test]
    fn every_flat_name_is_one_key_with_a_distinct_place() {
        let mut places = std::collections::HashSet::new();
        for (flat, grouped) in FLAT {
            assert!(!flat.contains('.'), "{flat}");
            assert!(places.insert(*grouped), "{grouped} twice");
            assert!(!FLAT.iter().any(|(other, _)| other == grouped), "{grouped}");
        }
        assert_eq!(
            flat_name(&["accounts", "memory_limits", "free"]).as_deref(),
            Some("memory_limits.free")
        );
        assert_eq!(
            flat_name(&["server", "http", "max_uploads"]).as_deref(),
            Some("http.max_uploads")
        );
        assert_eq!(flat_name(&["cluster", "heartbeat_ms"]), None);
    }
}
