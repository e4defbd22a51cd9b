//! Typed settings: built-in defaults, then an optional `memvault.toml` (or the file named by
//! `MEMVAULT_CONFIG`), then `DATABASE_URL`, then `MEMVAULT_*` environment variables.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use serde::{Deserialize, Serialize};

use memvault_actors::PlanTable;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryLimits {
    pub free: u64,
    pub hobby: u64,
    pub pro: u64,
    pub ultimate: u64,
}

/// Limits of each worker process that parses or recognises an upload (docs/CONFIGURATION.md).
/// Every limit is named in the message of a document that hits it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerSettings {
    /// Address space (`RLIMIT_AS`), MB.
    pub memory_mb: u64,
    /// CPU time (`RLIMIT_CPU`), seconds.
    pub cpu_secs: u64,
    /// Wall-clock time from start to answer, seconds; then the worker is killed.
    pub deadline_secs: u64,
    /// Text and images handed back, MB.
    pub output_mb: u64,
    /// Landlock (file access only beneath the worker's own directory, no TCP) and a seccomp
    /// filter (no sockets, exec or new processes). Where the kernel lacks them the worker runs
    /// without, and the server logs a warning; turn off only for a kernel that misbehaves.
    pub confine: bool,
    /// Where each worker's own directory is made (removed after it); unset: `data_dir/workers`.
    pub dir: Option<PathBuf>,
    /// The memvault binary to start as a worker; unset: this executable.
    pub program: Option<PathBuf>,
    /// Workers started ahead of need, each waiting for its one request: a worker's start
    /// (the binary and its libraries) is then paid off a document's path. 0: each is started
    /// when it is needed.
    pub warm: usize,
    /// Workers obey the test suite's fault inputs (a file that starts with
    /// `MEMVAULT-TEST-FAULT:` makes its worker crash, hoard memory, spin, sleep or flood), so
    /// that the hostile-input and chaos tests can prove the server survives each. Off by
    /// default; harmless if on (a worker can only hurt itself), but never useful in production.
    pub test_faults: bool,
}

/// How often anyone may use the doors open to the internet. Each refusal is a 429 with
/// `Retry-After` naming the setting. Counted by this process, in windows that start at the
/// first attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AbuseLimits {
    /// Sign-ups from one client address per hour.
    pub sign_up_per_address_per_hour: u32,
    /// Sign-ups for one email per hour (a taken email answers 409, and costs a hash).
    pub sign_up_per_email_per_hour: u32,
    /// Sign-in attempts from one client address per minute.
    pub sign_in_per_address_per_minute: u32,
    /// Sign-in attempts for one account (email) per hour, from any address.
    pub sign_in_per_email_per_hour: u32,
    /// Workspaces one user may create per day.
    pub workspaces_per_user_per_day: u32,
    /// OAuth dynamic client registrations from one client address per hour.
    pub oauth_registrations_per_address_per_hour: u32,
    /// Invitations one workspace may send per day.
    pub invitations_per_workspace_per_day: u32,
    /// Password hashes (argon2id, `password_memory_kib` each) computed at once.
    pub password_hashes: usize,
    /// How long a request waits for a hashing slot before it is answered 503.
    pub password_hash_wait_ms: u64,
}

impl Default for AbuseLimits {
    fn default() -> Self {
        AbuseLimits {
            sign_up_per_address_per_hour: 20,
            sign_up_per_email_per_hour: 5,
            sign_in_per_address_per_minute: 10,
            sign_in_per_email_per_hour: 30,
            workspaces_per_user_per_day: 10,
            oauth_registrations_per_address_per_hour: 20,
            invitations_per_workspace_per_day: 100,
            password_hashes: 4,
            password_hash_wait_ms: 2_000,
        }
    }
}

/// The HTTP server's limits on connections and on how slowly a client may send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HttpSettings {
    /// A request's headers must arrive within this many seconds, else the connection closes.
    pub header_timeout_secs: u64,
    /// A request's body must have arrived this many seconds after it is first read, however
    /// it trickles (408 after).
    pub body_timeout_secs: u64,
    /// The same for a document upload.
    pub upload_timeout_secs: u64,
    /// A keep-alive connection with no request for this long is closed.
    pub idle_timeout_secs: u64,
    /// Connections served at once; more wait in the kernel's backlog.
    pub max_connections: usize,
    /// Document uploads read at once; more are answered 503 with `Retry-After`.
    pub max_uploads: usize,
    /// Behind a reverse proxy: the header the proxy sets to the client's address (e.g.
    /// `x-forwarded-for`, whose last entry is used, or `x-real-ip`). Unset: the TCP peer, and
    /// no header is trusted.
    pub trusted_proxy_header: Option<String>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            header_timeout_secs: 10,
            body_timeout_secs: 30,
            upload_timeout_secs: 300,
            idle_timeout_secs: 60,
            max_connections: 1_024,
            max_uploads: 8,
            trusted_proxy_header: None,
        }
    }
}

/// The root supervisor's restart policy (see ARCHITECTURE.md, "Supervision").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SupervisionSettings {
    /// The delay before restarting a dead actor, doubled for each further death in the window.
    pub restart_backoff_ms: u64,
    /// The longest delay before a restart.
    pub restart_backoff_cap_ms: u64,
    /// Restarts of one actor allowed within `restart_window_secs`; one more death and the
    /// process stops and exits non-zero, for its service manager to start a fresh one.
    pub max_restarts: u32,
    pub restart_window_secs: u64,
}

impl Default for SupervisionSettings {
    fn default() -> Self {
        SupervisionSettings {
            restart_backoff_ms: 200,
            restart_backoff_cap_ms: 10_000,
            max_restarts: 5,
            restart_window_secs: 60,
        }
    }
}

/// How the nodes of a cluster keep track of each other (clustering itself is switched on by
/// `node_url`; see ARCHITECTURE.md, "Cluster").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClusterSettings {
    /// A node whose last heartbeat is older than this is dead, and its workspaces move.
    pub lease_ttl_ms: u64,
    /// How often a node renews itself.
    pub heartbeat_ms: u64,
    /// How long a takeover or handover waits for the old owner's writes in flight.
    pub takeover_wait_ms: u64,
    /// Workspaces a node hands to a node that joined, per heartbeat.
    pub handoffs_per_round: usize,
    /// How long a forwarded request may take (an upload's whole transfer included).
    pub forward_timeout_secs: u64,
}

impl Default for ClusterSettings {
    fn default() -> Self {
        ClusterSettings {
            lease_ttl_ms: 5_000,
            heartbeat_ms: 1_000,
            takeover_wait_ms: 2_000,
            handoffs_per_round: 16,
            forward_timeout_secs: 330,
        }
    }
}

impl Default for WorkerSettings {
    fn default() -> Self {
        WorkerSettings {
            memory_mb: 1024,
            cpu_secs: 60,
            deadline_secs: 120,
            output_mb: 64,
            confine: true,
            dir: None,
            program: None,
            warm: 2,
            test_faults: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Where the default SQLite database lives.
    pub data_dir: PathBuf,
    /// `sqlite://...` or `postgres://...`; default a SQLite file in `data_dir`.
    pub database_url: Option<String>,
    /// Connections in the database pool.
    pub db_max_connections: u32,
    pub sqlite_synchronous: SqliteSync,
    /// `off` for single-tenant self-hosting and benchmarks.
    pub rate_limits: Switch,
    pub memory_limits: MemoryLimits,
    pub log_format: LogFormat,
    /// A tracing filter, e.g. `info` or `memvault=debug,info`.
    pub log_level: String,
    /// Timeout of every call to an actor, in milliseconds.
    pub actor_call_timeout_ms: u64,
    /// A workspace actor idle this long stops (and reloads from storage when next needed).
    pub workspace_idle_secs: u64,
    /// How often a workspace actor re-reads its plan from storage.
    pub plan_refresh_secs: u64,
    /// Deleted and forgotten memories keep their content this long, then it is purged (ids
    /// and timestamps stay); 0 purges at the next pass.
    pub deleted_retention_days: u64,
    /// How often the purge of deleted content runs.
    pub purge_interval_secs: u64,
    /// Largest JSON body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Longest memory content, in characters.
    pub max_content_chars: usize,
    /// Where the local embedding model (all-MiniLM-L6-v2) is installed.
    pub embedding_model_dir: PathBuf,
    /// How the local model multiplies (`bf16` where the CPU has it, or `f32`).
    pub embedding_precision: EmbeddingPrecision,
    /// An OpenAI-compatible `/v1/embeddings` base URL; when set it replaces the local model.
    pub embeddings_url: Option<String>,
    pub embeddings_model: String,
    pub embeddings_key: Option<String>,
    /// An OpenAI-compatible chat endpoint (base URL) that judges fact updates; offline
    /// heuristics when unset.
    pub llm_url: Option<String>,
    pub llm_model: String,
    pub llm_key: Option<String>,
    /// Cosine similarity at or above which a new memory is a near-duplicate of one in the same
    /// scope and project.
    pub dedup_threshold: f32,
    /// Nearest memories at or above this similarity are considered for automatic supersession.
    pub supersede_min_similarity: f32,
    /// Notes longer than this (in characters) go the 202 way and are split into atomic memories.
    pub long_note_chars: usize,
    /// How keyword and vector results are fused: `score` (weighted, normalised scores) or `rrf`
    /// (reciprocal-rank fusion).
    pub search_fusion: Fusion,
    /// Share of vector similarity in a `score`-fused hybrid score (the rest is BM25), 0 to 1.
    pub search_semantic_weight: f32,
    /// The same two choices for Context Vault search (`GET /api/context-vault/search`), chosen
    /// apart because documents are not chat memories: their benchmark (SciFact) picks its own.
    pub vault_search_fusion: Fusion,
    pub vault_search_semantic_weight: f32,
    /// How far a chunk's vector similarity moves toward that of its best-matching cited fact
    /// (each fact is embedded alone), 0 to 1; 0 ranks chunks by their own vectors only.
    pub vault_search_fact_weight: f32,
    /// Embed each vault chunk longer than about 128 wordpieces (the length the model was trained
    /// on) piece by piece instead of whole: its vector similarity is then its best piece's, and
    /// its own vector (for the nearest-neighbour candidates) the unit mean of its pieces'. Off:
    /// chunks are embedded whole, ranking lower (docs/BENCHMARKS.md). A document keeps the way
    /// it was ingested.
    pub vault_chunk_pieces: bool,
    /// Query vectors kept in the cache.
    pub query_cache_entries: u64,
    /// Lines of each part of a profile.
    pub profile_lines: usize,

    // Context Vault.
    /// Largest upload (or fetched URL body), bytes.
    pub max_upload_bytes: usize,
    /// Tesseract language(s), e.g. `eng` or `eng+deu`.
    pub ocr_language: String,
    /// Tesseract's tessdata directory; unset = Tesseract's default.
    pub ocr_data_dir: Option<String>,
    /// Let URL ingestion reach loopback, private and link-local addresses (off by default:
    /// server-side request forgery).
    pub fetch_allow_private: bool,
    pub fetch_timeout_secs: u64,
    pub fetch_max_redirects: usize,
    /// Documents processed at once, all workspaces together.
    pub ingest_max_documents: usize,
    /// Documents of one workspace processed at once: the other slots stay free for other
    /// workspaces, which take turns in the queue (one tenant's uploads cannot hold every slot).
    pub ingest_max_documents_per_workspace: usize,
    /// Text one document may hand to chunking, parsed and recognised together (MB).
    pub ingest_max_text_mb: usize,
    /// Chunks one document may make.
    pub ingest_max_chunks: usize,
    /// Facts kept from one document (extraction stops there; the document completes).
    pub ingest_max_facts: usize,
    /// The worker processes that decode uploads (`[worker]` in the file,
    /// `MEMVAULT_WORKER__MEMORY_MB` and so on in the environment).
    pub worker: WorkerSettings,
    /// Attempts per document before it is `failed`.
    pub ingest_max_attempts: u32,
    /// A phase that records no progress for this long is killed and retried.
    pub ingest_stale_ms: u64,
    pub ingest_backoff_ms: u64,
    pub ingest_backoff_cap_ms: u64,

    // Accounts and billing.
    /// The address users reach this server at (links in checkout and invitations, the
    /// session cookie's `Secure` flag when it is `https`, the CSRF origin check). Unset: the
    /// request's own `Host`, over http.
    pub public_url: Option<String>,
    /// How long a sign-in lasts.
    pub session_ttl_days: u64,
    /// How long an invitation can be accepted.
    pub invitation_ttl_days: u64,
    /// Limits on the open doors (sign-up, sign-in, workspaces, OAuth registration,
    /// invitations) and on concurrent password hashing.
    pub abuse: AbuseLimits,
    /// The HTTP server's defences against slow and large clients, and the trusted proxy.
    pub http: HttpSettings,
    /// How the root supervisor restarts a long-lived actor that died, and when it gives up.
    pub supervision: SupervisionSettings,
    /// When set, `GET /metrics` needs `Authorization: Bearer <token>`; unset, it is open on the
    /// listen address.
    pub metrics_token: Option<String>,
    /// The base URL other nodes reach this node at (`MEMVAULT_NODE_URL`): set, this process is
    /// a node of a cluster on its PostgreSQL database (refused on SQLite).
    pub node_url: Option<String>,
    /// The secret node-to-node calls are signed with (`MEMVAULT_CLUSTER_SECRET`), the same on
    /// every node; required with `node_url`.
    pub cluster_secret: Option<String>,
    pub cluster: ClusterSettings,
    /// Also count saves and rate-limit refusals per workspace (a `workspace` label holding its
    /// id): one series per workspace and outcome, so only for a bounded number of tenants.
    pub metrics_per_workspace: bool,
    /// Argon2id memory cost in KiB (OWASP's minimum, 19 MiB, by default).
    pub password_memory_kib: u32,
    /// `local` (plans change on this server, for self-hosting) or `hosted` (a payment
    /// provider's API; needs `billing_url`, `billing_key`, `billing_webhook_secret` and
    /// `billing_products`).
    pub billing_provider: BillingKind,
    pub billing_url: Option<String>,
    pub billing_key: Option<String>,
    /// The Standard Webhooks secret (`whsec_...`) the provider signs webhooks with.
    pub billing_webhook_secret: Option<String>,
    /// Webhooks whose timestamp is further than this from now are refused (replays).
    pub billing_webhook_tolerance_secs: i64,
    /// The provider's product id of each paid plan.
    pub billing_products: BillingProducts,
}

/// Which billing provider is in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BillingKind {
    Local,
    Hosted,
}

/// A payment provider's product id per paid plan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BillingProducts {
    pub hobby: Option<String>,
    pub pro: Option<String>,
    pub ultimate: Option<String>,
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

impl Default for Settings {
    fn default() -> Self {
        Settings {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data_dir: PathBuf::from("./data"),
            database_url: None,
            db_max_connections: 8,
            sqlite_synchronous: SqliteSync::Full,
            rate_limits: Switch::On,
            memory_limits: MemoryLimits {
                free: 1_000,
                hobby: 10_000,
                pro: 100_000,
                ultimate: 1_000_000,
            },
            log_format: LogFormat::Text,
            log_level: "info".to_string(),
            actor_call_timeout_ms: 5_000,
            workspace_idle_secs: 600,
            plan_refresh_secs: 30,
            max_body_bytes: 50 * 1024,
            max_content_chars: 10_000,
            embedding_model_dir: PathBuf::from("./models/all-MiniLM-L6-v2"),
            embedding_precision: EmbeddingPrecision::Bf16,
            embeddings_url: None,
            embeddings_model: "text-embedding-3-small".to_string(),
            embeddings_key: None,
            llm_url: None,
            llm_model: "gpt-4o-mini".to_string(),
            llm_key: None,
            dedup_threshold: 0.95,
            supersede_min_similarity: 0.55,
            long_note_chars: 1_000,
            search_fusion: Fusion::Score,
            search_semantic_weight: 0.7,
            vault_search_fusion: Fusion::Score,
            // The three below were chosen together on SciFact's train queries (the history of
            // docs/BENCHMARKS.md, "Chunks read in pieces"): with chunks read in pieces, vector
            // similarity carries more of the ranking and the facts' lift less.
            vault_search_semantic_weight: 0.75,
            vault_search_fact_weight: 0.3,
            vault_chunk_pieces: true,
            query_cache_entries: 10_000,
            profile_lines: 50,
            max_upload_bytes: 25 * 1024 * 1024,
            ocr_language: "eng".to_string(),
            ocr_data_dir: None,
            fetch_allow_private: false,
            fetch_timeout_secs: 20,
            fetch_max_redirects: 5,
            ingest_max_documents: 3,
            ingest_max_documents_per_workspace: 2,
            ingest_max_text_mb: 10,
            ingest_max_chunks: 20_000,
            ingest_max_facts: 50_000,
            worker: WorkerSettings::default(),
            ingest_max_attempts: 4,
            ingest_stale_ms: 120_000,
            ingest_backoff_ms: 1_000,
            ingest_backoff_cap_ms: 60_000,
            public_url: None,
            session_ttl_days: 30,
            invitation_ttl_days: 7,
            deleted_retention_days: 30,
            purge_interval_secs: 300,
            abuse: AbuseLimits::default(),
            http: HttpSettings::default(),
            supervision: SupervisionSettings::default(),
            metrics_token: None,
            node_url: None,
            cluster_secret: None,
            cluster: ClusterSettings::default(),
            metrics_per_workspace: false,
            password_memory_kib: 19 * 1024,
            billing_provider: BillingKind::Local,
            billing_url: None,
            billing_key: None,
            billing_webhook_secret: None,
            billing_webhook_tolerance_secs: 300,
            billing_products: BillingProducts::default(),
        }
    }
}

impl Settings {
    /// Defaults, then the config file, then the environment.
    pub fn load() -> Result<Self, Box<figment::Error>> {
        let file = std::env::var_os("MEMVAULT_CONFIG")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("memvault.toml"));
        Self::figment(&file).extract().map_err(Box::new)
    }

    pub fn figment(config_file: &Path) -> Figment {
        Figment::from(Serialized::defaults(Settings::default()))
            .merge(Toml::file(config_file))
            .merge(Env::raw().only(&["DATABASE_URL"]))
            .merge(Env::prefixed("MEMVAULT_").ignore(&["CONFIG"]).split("__"))
    }

    /// The database URL in effect.
    pub fn database_url(&self) -> String {
        match &self.database_url {
            Some(url) if !url.trim().is_empty() => url.clone(),
            _ => format!("sqlite://{}", self.data_dir.join("memvault.db").display()),
        }
    }

    pub fn is_postgres(&self) -> bool {
        let url = self.database_url();
        url.starts_with("postgres://") || url.starts_with("postgresql://")
    }

    pub fn plan_table(&self) -> PlanTable {
        let m = self.memory_limits;
        PlanTable::default().with_memory_limits(m.free, m.hobby, m.pro, m.ultimate)
    }

    /// The settings with secrets masked, for the start-up log.
    pub fn redacted(&self) -> serde_json::Value {
        let mut shown = self.clone();
        shown.database_url = Some(mask_url_password(&self.database_url()));
        let hide = |secret: &Option<String>| secret.as_ref().map(|_| "***".to_string());
        shown.embeddings_key = hide(&self.embeddings_key);
        shown.llm_key = hide(&self.llm_key);
        shown.billing_key = hide(&self.billing_key);
        shown.billing_webhook_secret = hide(&self.billing_webhook_secret);
        shown.metrics_token = hide(&self.metrics_token);
        shown.cluster_secret = hide(&self.cluster_secret);
        shown.embeddings_url = self.embeddings_url.as_deref().map(mask_url_password);
        shown.llm_url = self.llm_url.as_deref().map(mask_url_password);
        serde_json::to_value(shown).unwrap_or_default()
    }
}

/// `postgres://user:secret@host/db` -> `postgres://user:***@host/db`.
pub fn mask_url_password(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => raw.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let s: Settings = Settings::figment(Path::new("memvault.toml")).extract()?;
            assert_eq!(s.listen, "0.0.0.0:9000".parse().unwrap());
            assert_eq!(s.log_level, "warn");
            assert_eq!(s.rate_limits, Switch::Off);
            assert_eq!(s.memory_limits.free, 7);
            assert_eq!(s.memory_limits.hobby, 10_000);
            assert!(s.is_postgres());
            assert_eq!(s.embedding_precision, EmbeddingPrecision::Bf16);
            jail.set_env("MEMVAULT_EMBEDDING_PRECISION", "f32");
            let s: Settings = Settings::figment(Path::new("memvault.toml")).extract()?;
            assert_eq!(s.embedding_precision, EmbeddingPrecision::F32);
            jail.set_env("MEMVAULT_EMBEDDING_PRECISION", "int8");
            let refused = Settings::figment(Path::new("memvault.toml")).extract::<Settings>();
            let refused = refused
                .expect_err("an unknown precision is refused")
                .to_string();
            assert!(refused.contains("EMBEDDING_PRECISION"), "{refused}");
            jail.set_env("MEMVAULT_EMBEDDING_PRECISION", "bf16");
            jail.set_env("MEMVAULT_DATABASE_URL", "sqlite://x.db");
            let s: Settings = Settings::figment(Path::new("memvault.toml")).extract()?;
            assert_eq!(s.database_url(), "sqlite://x.db");
            Ok(())
        });
    }

    #[test]
    fn default_database_is_a_sqlite_file_in_the_data_dir() {
        let s = Settings::default();
        assert_eq!(s.database_url(), "sqlite://./data/memvault.db");
        assert!(!s.is_postgres());
        assert_eq!(s.listen.to_string(), "127.0.0.1:8080");
    }

    #[test]
    fn passwords_are_masked() {
        assert_eq!(
            mask_url_password("postgres://u:pw@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(
            mask_url_password("sqlite://./data/m.db"),
            "sqlite://./data/m.db"
        );
    }
}
