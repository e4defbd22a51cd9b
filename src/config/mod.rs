//! Typed settings grouped by subject: built-in defaults, then an optional `memvault.toml` (or
//! the file named by `MEMVAULT_CONFIG`), then `DATABASE_URL`, then `MEMVAULT_*` variables.

mod aliases;
mod secret;
mod sections;

use std::path::{Path, PathBuf};

use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use serde::{Deserialize, Serialize};

use memvault_actors::PlanTable;

use aliases::{GroupedEnv, GroupedFile};
pub use secret::{mask_url_password, Secret, ServiceUrl};
pub use sections::{
    AbuseLimits, AccountsSettings, BillingProducts, BillingSettings, ClusterSettings,
    EmbeddingSettings, HttpSettings, LlmSettings, MemoryLimits, MemorySettings, SearchSettings,
    ServerSettings, StorageSettings, SupervisionSettings, VaultSettings, WorkerSettings,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Switch {
    On,
    Off,
}

/// How the local model's fully connected layers multiply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbeddingPrecision {
    /// The faster of the two on this CPU: bfloat16 on AMX tiles; where the CPU has
    /// AVX512_BF16 without AMX, bfloat16 when a product timed at load runs at least a tenth
    /// faster in it; `f32` elsewhere.
    Auto,
    /// bfloat16 products summed in `f32` where the CPU has AVX512_BF16; `f32` elsewhere.
    Bf16,
    /// `f32` throughout.
    F32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// SQLite's `synchronous` pragma in WAL mode: `full` syncs the log on every commit (a write
/// acknowledged survives power loss), `normal` syncs at checkpoints (survives a process crash).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SqliteSync {
    Normal,
    Full,
}

/// Every setting, grouped by subject (`[server]`, `[storage]`, ... in the file;
/// `MEMVAULT_SERVER__LISTEN` or the flat `MEMVAULT_LISTEN` in the environment: the table of
/// flat names is `aliases::FLAT`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub server: ServerSettings,
    pub storage: StorageSettings,
    pub embedding: EmbeddingSettings,
    pub llm: LlmSettings,
    pub memories: MemorySettings,
    pub search: SearchSettings,
    pub vault: VaultSettings,
    pub accounts: AccountsSettings,
    pub billing: BillingSettings,
    pub cluster: ClusterSettings,
}

/// Which billing provider is in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BillingKind {
    Local,
    Hosted,
}

/// How keyword and vector results are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fusion {
    Score,
    /// Both sides min-max normalised over the query's candidates, then weighted.
    #[serde(rename = "minmax")]
    MinMax,
    Rrf,
}

impl Settings {
    /// Defaults, then the config file, then the environment.
    pub fn load() -> Result<Self, Box<figment::Error>> {
        let file = std::env::var_os("MEMVAULT_CONFIG")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("memvault.toml"));
        Self::from_file(&file)
    }

    /// Defaults, then `config_file` (when it exists), then the environment. Numbers and
    /// switches given as text (every environment variable) are read as the setting's type asks.
    pub fn from_file(config_file: &Path) -> Result<Self, Box<figment::Error>> {
        Self::figment(config_file).extract_lossy().map_err(Box::new)
    }

    fn figment(config_file: &Path) -> Figment {
        Figment::from(Serialized::defaults(Settings::default()))
            .merge(GroupedFile(Toml::file(config_file)))
            .merge(GroupedEnv {
                env: Env::raw().only(&["DATABASE_URL"]),
                prefix: "",
            })
            .merge(GroupedEnv {
                env: Env::prefixed("MEMVAULT_").ignore(&["CONFIG"]).split("__"),
                prefix: "MEMVAULT_",
            })
    }

    /// The database URL in effect.
    pub fn database_url(&self) -> String {
        match &self.storage.database_url {
            Some(url) if !url.expose().trim().is_empty() => url.expose().to_string(),
            _ => format!(
                "sqlite://{}",
                self.storage.data_dir.join("memvault.db").display()
            ),
        }
    }

    pub fn is_postgres(&self) -> bool {
        let url = self.database_url();
        url.starts_with("postgres://") || url.starts_with("postgresql://")
    }

    pub fn plan_table(&self) -> PlanTable {
        let m = self.accounts.memory_limits;
        PlanTable::default().with_memory_limits(m.free, m.hobby, m.pro, m.ultimate)
    }

    /// The settings as logged at start-up: the database URL in effect, secrets and URL
    /// passwords masked by their types.
    pub fn redacted(&self) -> serde_json::Value {
        let mut shown = self.clone();
        shown.storage.database_url = Some(ServiceUrl::new(self.database_url()));
        serde_json::to_value(shown).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings in a [`figment::Jail`]: its `memvault.toml` and environment.
    #[allow(clippy::result_large_err)] // figment's Jail API returns figment::Error
    fn read() -> figment::Result<Settings> {
        Settings::from_file(Path::new("memvault.toml")).map_err(|e| *e)
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail API returns figment::Error
    fn layers_apply_in_order() {
        figment::Jail::expect_with(|jail| {
            jail.create_file(
                "memvault.toml",
                "listen = \"0.0.0.0:9000\"\nlog_level = \"debug\"\n",
            )?;
            jail.set_env("DATABASE_URL", "postgres://a@h/db1");
            jail.set_env("MEMVAULT_LOG_LEVEL", "warn");
            jail.set_env("MEMVAULT_RATE_LIMITS", "off");
            jail.set_env("MEMVAULT_MEMORY_LIMITS__FREE", "7");
            let s: Settings = read()?;
            assert_eq!(s.server.listen, "0.0.0.0:9000".parse().unwrap());
            assert_eq!(s.server.log_level, "warn");
            assert_eq!(s.accounts.rate_limits, Switch::Off);
            assert_eq!(s.accounts.memory_limits.free, 7);
            assert_eq!(s.accounts.memory_limits.hobby, 10_000);
            assert!(s.is_postgres());
            assert_eq!(s.embedding.precision, EmbeddingPrecision::Auto);
            jail.set_env("MEMVAULT_EMBEDDING_PRECISION", "f32");
            let s: Settings = read()?;
            assert_eq!(s.embedding.precision, EmbeddingPrecision::F32);
            jail.set_env("MEMVAULT_EMBEDDING_PRECISION", "int8");
            let refused = read();
            let refused = refused
                .expect_err("an unknown precision is refused")
                .to_string();
            assert!(
                refused.contains("MEMVAULT_EMBEDDING_PRECISION"),
                "{refused}"
            );
            jail.set_env("MEMVAULT_EMBEDDING_PRECISION", "bf16");
            jail.set_env("MEMVAULT_DATABASE_URL", "sqlite://x.db");
            let s: Settings = read()?;
            assert_eq!(s.database_url(), "sqlite://x.db");
            Ok(())
        });
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail API returns figment::Error
    fn grouped_keys_work_in_the_file_and_the_environment() {
        figment::Jail::expect_with(|jail| {
            jail.create_file(
                "memvault.toml",
                "[server]\nlisten = \"0.0.0.0:9001\"\n[server.http]\nmax_uploads = 3\n\
                 [vault.worker]\nwarm = 0\n[billing]\nkey = \"sk_file\"\n\
                 [accounts.memory_limits]\npro = 5\n",
            )?;
            jail.set_env("MEMVAULT_STORAGE__MAX_CONNECTIONS", "3");
            jail.set_env("MEMVAULT_CLUSTER_SECRET", "0123456789012345");
            jail.set_env("MEMVAULT_CLUSTER__HEARTBEAT_MS", "250");
            jail.set_env("MEMVAULT_WORKER__CPU_SECS", "9");
            jail.set_env("MEMVAULT_SEARCH_SEMANTIC_WEIGHT", "0.5");
            jail.set_env("MEMVAULT_VAULT_CHUNK_PIECES", "false");
            jail.set_env("MEMVAULT_BILLING_PRODUCTS__PRO", "000123");
            let s: Settings = read()?;
            assert_eq!(s.server.listen, "0.0.0.0:9001".parse().unwrap());
            assert_eq!(s.server.http.max_uploads, 3);
            assert_eq!(s.server.http.max_connections, 1_024);
            assert_eq!(s.vault.worker.warm, 0);
            assert_eq!(s.vault.worker.cpu_secs, 9);
            assert_eq!(s.accounts.memory_limits.pro, 5);
            assert_eq!(s.accounts.memory_limits.free, 1_000);
            assert_eq!(s.storage.max_connections, 3);
            assert_eq!(s.cluster.heartbeat_ms, 250);
            assert_eq!(
                s.cluster.secret.as_ref().map(Secret::expose),
                Some("0123456789012345")
            );
            assert_eq!(s.billing.key.as_ref().map(Secret::expose), Some("sk_file"));
            assert_eq!(s.search.semantic_weight, 0.5);
            assert!(!s.vault.chunk_pieces);
            assert_eq!(s.billing.products.pro.as_deref(), Some("000123"));
            // The grouped spelling wins over the flat one from the same source.
            jail.set_env("MEMVAULT_DB_MAX_CONNECTIONS", "4");
            let s: Settings = read()?;
            assert_eq!(s.storage.max_connections, 3);
            jail.set_env("MEMVAULT_SERVER__HTTP__MAX_UPLOADS", "many");
            let refused = read();
            let refused = refused.expect_err("not a number").to_string();
            assert!(
                refused
                    .contains("MEMVAULT_HTTP__MAX_UPLOADS (or MEMVAULT_SERVER__HTTP__MAX_UPLOADS)"),
                "{refused}"
            );
            Ok(())
        });
    }

    #[test]
    fn the_logged_configuration_masks_every_secret_by_type() {
        let mut s = Settings::default();
        s.storage.database_url = Some(ServiceUrl::new("postgres://u:pw1@h/db"));
        s.embedding.url = Some(ServiceUrl::new("https://e:pw2@embed.example"));
        s.embedding.key = Some(Secret::new("pw3"));
        s.llm.key = Some(Secret::new("pw4"));
        s.billing.key = Some(Secret::new("pw5"));
        s.billing.webhook_secret = Some(Secret::new("pw6"));
        s.server.metrics_token = Some(Secret::new("pw7"));
        s.cluster.secret = Some(Secret::new("pw8"));
        let shown = s.redacted().to_string();
        for secret in ["pw1", "pw2", "pw3", "pw4", "pw5", "pw6", "pw7", "pw8"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("postgres://u:***@h/db"), "{shown}");
        assert_eq!(s.redacted()["billing"]["key"], "***");
        assert!(!format!("{s:?}").contains("pw"));
    }

    #[test]
    fn default_database_is_a_sqlite_file_in_the_data_dir() {
        let s = Settings::default();
        assert_eq!(s.database_url(), "sqlite://./data/memvault.db");
        assert!(!s.is_postgres());
        assert_eq!(s.server.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(
            s.redacted()["storage"]["database_url"],
            "sqlite://./data/memvault.db"
        );
    }
}
