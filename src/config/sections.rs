//! The settings of each subject (server, storage, embedding, chat model, memories, search,
//! vault, accounts, billing, cluster), each with its defaults.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::secret::{Secret, ServiceUrl};
use super::{BillingKind, EmbeddingPrecision, Fusion, LogFormat, SqliteSync, Switch};

/// The HTTP server: where it listens, what it logs, its limits and its supervision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerSettings {
    /// Address to listen on.
    pub listen: SocketAddr,
    pub log_format: LogFormat,
    /// A tracing filter, e.g. `info` or `memvault=debug,info`.
    pub log_level: String,
    /// Largest JSON body accepted, in bytes.
    pub max_body_bytes: usize,
    /// The address users reach this server at (links in checkout and invitations, the
    /// session cookie's `Secure` flag when it is `https`, the CSRF origin check). Unset: the
    /// request's own `Host`, over http.
    pub public_url: Option<String>,
    /// Timeout of every call to an actor, in milliseconds.
    pub actor_call_timeout_ms: u64,
    /// When set, `GET /metrics` needs `Authorization: Bearer <token>`; unset, it is open on the
    /// listen address.
    pub metrics_token: Option<Secret>,
    /// Also count saves and rate-limit refusals per workspace (a `workspace` label holding its
    /// id): one series per workspace and outcome, so only for a bounded number of tenants.
    pub metrics_per_workspace: bool,
    /// The HTTP server's defences against slow and large clients, and the trusted proxy.
    pub http: HttpSettings,
    /// How the root supervisor restarts a long-lived actor that died, and when it gives up.
    pub supervision: SupervisionSettings,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            log_format: LogFormat::Text,
            log_level: "info".to_string(),
            max_body_bytes: 50 * 1024,
            public_url: None,
            actor_call_timeout_ms: 5_000,
            metrics_token: None,
            metrics_per_workspace: false,
            http: HttpSettings::default(),
            supervision: SupervisionSettings::default(),
        }
    }
}

/// The database, and how long deleted content is kept in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StorageSettings {
    /// Where the default SQLite database lives.
    pub data_dir: PathBuf,
    /// `sqlite://...` or `postgres://...`; default a SQLite file in `data_dir`.
    pub database_url: Option<ServiceUrl>,
    /// Connections in the database pool.
    pub max_connections: u32,
    pub sqlite_synchronous: SqliteSync,
    /// Deleted and forgotten memories keep their content this long, then it is purged (ids
    /// and timestamps stay); 0 purges at the next pass.
    pub deleted_retention_days: u64,
    /// How often the purge of deleted content runs.
    pub purge_interval_secs: u64,
}

impl Default for StorageSettings {
    fn default() -> Self {
        StorageSettings {
            data_dir: PathBuf::from("./data"),
            database_url: None,
            max_connections: 8,
            sqlite_synchronous: SqliteSync::Full,
            deleted_retention_days: 30,
            purge_interval_secs: 300,
        }
    }
}

/// The sentence encoder: the local model, or an embedding server instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EmbeddingSettings {
    /// Where the local embedding model (all-MiniLM-L6-v2) is installed.
    pub model_dir: PathBuf,
    /// How the local model multiplies (`auto`: the faster of bfloat16 and `f32` here; `bf16`
    /// where the CPU has it; `f32`).
    pub precision: EmbeddingPrecision,
    /// An OpenAI-compatible `/v1/embeddings` base URL; when set it replaces the local model.
    pub url: Option<ServiceUrl>,
    pub model: String,
    pub key: Option<Secret>,
    /// Query vectors kept in the cache.
    pub query_cache_entries: u64,
}

impl Default for EmbeddingSettings {
    fn default() -> Self {
        EmbeddingSettings {
            model_dir: PathBuf::from("./models/all-MiniLM-L6-v2"),
            precision: EmbeddingPrecision::Auto,
            url: None,
            model: "text-embedding-3-small".to_string(),
            key: None,
            query_cache_entries: 10_000,
        }
    }
}

/// An OpenAI-compatible chat endpoint (base URL) that judges fact updates and extracts
/// document facts; offline rules when unset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmSettings {
    pub url: Option<ServiceUrl>,
    pub model: String,
    pub key: Option<Secret>,
}

impl Default for LlmSettings {
    fn default() -> Self {
        LlmSettings {
            url: None,
            model: "gpt-4o-mini".to_string(),
            key: None,
        }
    }
}

/// How memories are saved: their size, deduplication, fact updates, long notes, profiles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemorySettings {
    /// Longest memory content, in characters.
    pub max_content_chars: usize,
    /// Cosine similarity at or above which a new memory is a near-duplicate of one in the same
    /// scope and project.
    pub dedup_threshold: f32,
    /// Nearest memories at or above this similarity are considered for automatic supersession.
    pub supersede_min_similarity: f32,
    /// Notes longer than this (in characters) go the 202 way and are split into atomic memories.
    pub long_note_chars: usize,
    /// Lines of each part of a profile.
    pub profile_lines: usize,
}

impl Default for MemorySettings {
    fn default() -> Self {
        MemorySettings {
            max_content_chars: 10_000,
            dedup_threshold: 0.95,
            supersede_min_similarity: 0.55,
            long_note_chars: 1_000,
            profile_lines: 50,
        }
    }
}

/// How memory search fuses its keyword and vector halves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchSettings {
    /// `score` (weighted, normalised scores), `minmax` or `rrf` (reciprocal-rank fusion).
    pub fusion: Fusion,
    /// Share of vector similarity in a `score`-fused hybrid score (the rest is BM25), 0 to 1.
    pub semantic_weight: f32,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            fusion: Fusion::Score,
            semantic_weight: 0.7,
        }
    }
}

/// The Context Vault: its search, uploads, URL fetching, OCR and the ingestion pipeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct VaultSettings {
    /// The fusion for Context Vault search (`GET /api/context-vault/search`), chosen apart
    /// from the memories' because documents are not chat memories: their benchmark (SciFact)
    /// picks its own.
    pub search_fusion: Fusion,
    pub search_semantic_weight: f32,
    /// How far a chunk's vector similarity moves toward that of its best-matching cited fact
    /// (each fact is embedded alone), 0 to 1; 0 ranks chunks by their own vectors only.
    pub search_fact_weight: f32,
    /// Embed each vault chunk longer than about 128 wordpieces (the length the model was trained
    /// on) piece by piece instead of whole: its vector similarity is then its best piece's, and
    /// its own vector (for the nearest-neighbour candidates) the unit mean of its pieces'. Off:
    /// chunks are embedded whole, ranking lower (docs/BENCHMARKS.md). A document keeps the way
    /// it was ingested.
    pub chunk_pieces: bool,
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
    /// Attempts per document before it is `failed`.
    pub ingest_max_attempts: u32,
    /// A phase that records no progress for this long is killed and retried.
    pub ingest_stale_ms: u64,
    pub ingest_backoff_ms: u64,
    pub ingest_backoff_cap_ms: u64,
    /// The worker processes that decode uploads (`[vault.worker]` in the file,
    /// `MEMVAULT_WORKER__MEMORY_MB` and so on in the environment).
    pub worker: WorkerSettings,
}

impl Default for VaultSettings {
    fn default() -> Self {
        VaultSettings {
            search_fusion: Fusion::Score,
            // The three below were chosen together on SciFact's train queries (the history of
            // docs/BENCHMARKS.md, "Chunks read in pieces"): with chunks read in pieces, vector
            // similarity carries more of the ranking and the facts' lift less.
            search_semantic_weight: 0.75,
            search_fact_weight: 0.3,
            chunk_pieces: true,
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
            ingest_max_attempts: 4,
            ingest_stale_ms: 120_000,
            ingest_backoff_ms: 1_000,
            ingest_backoff_cap_ms: 60_000,
            worker: WorkerSettings::default(),
        }
    }
}

/// Users, workspaces and their plans: rate and memory limits, sessions, invitations,
/// password hashing and the limits of the doors open to anyone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AccountsSettings {
    /// `off` for single-tenant self-hosting and benchmarks.
    pub rate_limits: Switch,
    pub memory_limits: MemoryLimits,
    /// A workspace actor idle this long stops (and reloads from storage when next needed).
    pub workspace_idle_secs: u64,
    /// How often a workspace actor re-reads its plan from storage.
    pub plan_refresh_secs: u64,
    /// How long a sign-in lasts.
    pub session_ttl_days: u64,
    /// How long an invitation can be accepted.
    pub invitation_ttl_days: u64,
    /// Argon2id memory cost in KiB (OWASP's minimum, 19 MiB, by default).
    pub password_memory_kib: u32,
    /// Limits on the open doors (sign-up, sign-in, workspaces, OAuth registration,
    /// invitations) and on concurrent password hashing.
    pub abuse: AbuseLimits,
}

impl Default for AccountsSettings {
    fn default() -> Self {
        AccountsSettings {
            rate_limits: Switch::On,
            memory_limits: MemoryLimits::default(),
            workspace_idle_secs: 600,
            plan_refresh_secs: 30,
            session_ttl_days: 30,
            invitation_ttl_days: 7,
            password_memory_kib: 19 * 1024,
            abuse: AbuseLimits::default(),
        }
    }
}

/// Payments: `local` (plans change on this server, for self-hosting) or `hosted` (a payment
/// provider's API; needs `url`, `key`, `webhook_secret` and `products`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BillingSettings {
    pub provider: BillingKind,
    pub url: Option<String>,
    pub key: Option<Secret>,
    /// The Standard Webhooks secret (`whsec_...`) the provider signs webhooks with.
    pub webhook_secret: Option<Secret>,
    /// Webhooks whose timestamp is further than this from now are refused (replays).
    pub webhook_tolerance_secs: i64,
    /// The provider's product id of each paid plan.
    pub products: BillingProducts,
}

impl Default for BillingSettings {
    fn default() -> Self {
        BillingSettings {
            provider: BillingKind::Local,
            url: None,
            key: None,
            webhook_secret: None,
            webhook_tolerance_secs: 300,
            products: BillingProducts::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryLimits {
    pub free: u64,
    pub hobby: u64,
    pub pro: u64,
    pub ultimate: u64,
}

impl Default for MemoryLimits {
    fn default() -> Self {
        MemoryLimits {
            free: 1_000,
            hobby: 10_000,
            pro: 100_000,
            ultimate: 1_000_000,
        }
    }
}

/// Limits of each worker process that parses or recognises an upload (README, "Configuration").
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
    /// Where each worker's own directory is made (removed after it); unset:
    /// `storage.data_dir/workers`.
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
    /// Password hashes (argon2id, `accounts.password_memory_kib` each) computed at once.
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
/// `cluster.node_url`; see ARCHITECTURE.md, "Cluster").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClusterSettings {
    /// The base URL other nodes reach this node at (`MEMVAULT_NODE_URL`): set, this process is
    /// a node of a cluster on its PostgreSQL database (refused on SQLite).
    pub node_url: Option<String>,
    /// The secret node-to-node calls are signed with (`MEMVAULT_CLUSTER_SECRET`), the same on
    /// every node; required with `node_url`.
    pub secret: Option<Secret>,
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
            node_url: None,
            secret: None,
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

/// A payment provider's product id per paid plan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BillingProducts {
    pub hobby: Option<String>,
    pub pro: Option<String>,
    pub ultimate: Option<String>,
}
