//! Start-up: storage, actors, services and the HTTP server, wired together; graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::Router;
use memvault_actors::{
    ChildSpec, Heartbeat, Jobs, JobsArgs, Maintainer, RegistryArgs, RestartPolicy, Root, Workspaces,
};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::billing::signature::WebhookSecret;
use crate::billing::{BillingProvider, HostedConfig, HostedProvider, LocalProvider};
use crate::config::{BillingKind, Secret, ServiceUrl, Settings, Switch};
use crate::embedding::{Embedder, Embeddings, LocalEmbedder, RemoteEmbedder};
use crate::http::web::WebConfig;
use crate::http::{self, AppState};
use crate::judge::{HeuristicJudge, LlmJudge, UpdateJudge};
use crate::llm::{ChatClient, LlmExtractor};
use crate::mcp::{self, McpSettings};
use crate::sandbox::{WorkerLimits, Workers, WorkersConfig};
use crate::search::vectors::VectorConfig;
use crate::search::SearchEngine;
use crate::services::accounts::AccountsConfig;
use crate::services::billing::BillingService;
use crate::services::cluster::events::{listen, Events};
use crate::services::cluster::{Cluster, ClusterConfig, ServedWorkspaces};
use crate::services::memories::{MemoryDeps, NoteJobs, Tuning};
use crate::services::oauth::OAuthService;
use crate::services::vault::{FetchPolicy, OfflineExtractor, VaultDeps, VaultService};
use crate::services::{AccountsService, MemoryService};
use crate::storage::{self, ActorStore, Store};
use memvault_pipelines::parse::ParseLimits;
use memvault_pipelines::pipeline::{Decoder, Faults, Ingestion, PipelineConfig};

/// Attempts of a long-note job, and the backoff between them.
const JOB_ATTEMPTS: u32 = 3;
const JOB_BACKOFF_BASE: Duration = Duration::from_millis(500);
const JOB_BACKOFF_CAP: Duration = Duration::from_secs(30);
const JOB_CONCURRENCY: usize = 2;
/// How long a cluster node may take to hand its workspaces over at shutdown.
const CLUSTER_LEAVE_GRACE: Duration = Duration::from_secs(20);
/// How long each supervised actor has to stop at shutdown.
const ACTOR_STOP_GRACE: Duration = Duration::from_secs(5);

/// What a caller may hand to [`Application::build_with`] instead of the defaults.
#[derive(Default)]
pub struct Overrides {
    /// Extra routes behind the same layers (tests use it).
    pub routes: Option<Router<AppState>>,
    /// An embedder already loaded (tests share one model across many servers).
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Skip the start-up index rebuild (`admin reembed` rebuilds them itself).
    pub skip_index_rebuild: bool,
    /// Resume no unfinished job or document (the command line's services: a server, perhaps
    /// a cluster's node, owns that work).
    pub skip_resume: bool,
    /// Failures injected into the ingestion pipeline (tests of retries and chaos).
    pub pipeline_faults: Option<Arc<dyn Faults>>,
    /// Decode documents with this instead of worker processes: only the benchmark that
    /// measures what the workers cost sets it (the server never decodes uploads itself).
    pub decoder: Option<Arc<dyn Decoder>>,
}

pub struct Application {
    listener: TcpListener,
    serve_limits: http::serve::ServeLimits,
    liveness: crate::services::liveness::Liveness,
    router: Router,
    store: Arc<dyn Store>,
    workspaces: Workspaces,
    memories: MemoryService,
    vault: Arc<VaultService>,
    maintainer: Maintainer,
    /// The supervision tree's root, its task, and why it gave up (if it does).
    root: Root,
    root_task: tokio::task::JoinHandle<()>,
    gave_up: oneshot::Receiver<String>,
    /// Ends the MCP server's open streams when shutdown begins.
    mcp_shutdown: CancellationToken,
    /// This node's membership, in a cluster: it hands its workspaces over before it stops.
    cluster: Option<Arc<Cluster>>,
    /// The task applying the other nodes' announcements.
    listening: Option<tokio::task::JoinHandle<()>>,
}

/// This process as a cluster node, when `node_url` is set: its new id, its URL and the secret.
struct NodeIdentity {
    id: uuid::Uuid,
    url: String,
    secret: String,
}

fn node_identity(settings: &Settings) -> anyhow::Result<Option<NodeIdentity>> {
    let Some(raw) = settings
        .cluster
        .node_url
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty())
    else {
        return Ok(None);
    };
    let url = url::Url::parse(raw).with_context(|| format!("node_url '{raw}' is not a URL"))?;
    anyhow::ensure!(
        matches!(url.scheme(), "http" | "https") && url.host().is_some(),
        "node_url '{raw}' must be an http(s) URL that other nodes can reach"
    );
    anyhow::ensure!(
        settings.is_postgres(),
        "a cluster needs PostgreSQL (DATABASE_URL=postgres://...): SQLite serves one node; \
         unset MEMVAULT_NODE_URL to run a single node"
    );
    let secret = settings
        .cluster
        .secret
        .as_ref()
        .map(|s| s.expose().trim())
        .unwrap_or_default();
    anyhow::ensure!(
        secret.len() >= 16,
        "a cluster node needs MEMVAULT_CLUSTER_SECRET (the same on every node, at least 16 \
         characters): node-to-node calls are signed with it"
    );
    Ok(Some(NodeIdentity {
        id: uuid::Uuid::new_v4(),
        url: raw.trim_end_matches('/').to_string(),
        secret: secret.to_string(),
    }))
}

/// A configured secret handed to the client that sends it.
fn exposed(secret: &Option<Secret>) -> Option<String> {
    secret.as_ref().map(|s| s.expose().to_string())
}

/// The configured sentence encoder: an embedding server when `embeddings_url` is set, else
/// the local model (a clear error says how to install it when it is missing).
pub async fn load_embedder(settings: &Settings) -> anyhow::Result<Arc<dyn Embedder>> {
    match settings
        .embedding
        .url
        .as_ref()
        .map(ServiceUrl::expose)
        .filter(|u| !u.trim().is_empty())
    {
        Some(url) => {
            let remote = RemoteEmbedder::connect(
                url,
                &settings.embedding.model,
                exposed(&settings.embedding.key),
            )
            .await
            .with_context(|| {
                format!(
                    "cannot use the embedding server at {}",
                    crate::config::mask_url_password(url)
                )
            })?;
            Ok(Arc::new(remote))
        }
        None => {
            let dir = settings.embedding.model_dir.clone();
            let precision = settings.embedding.precision;
            let started = Instant::now();
            let local = tokio::task::spawn_blocking(move || LocalEmbedder::load(&dir, precision))
                .await
                .context("the model loader stopped")??;
            tracing::info!(
                elapsed_ms = started.elapsed().as_millis() as u64,
                "embedding model loaded"
            );
            Ok(Arc::new(local))
        }
    }
}

impl Application {
    pub async fn build(settings: &Settings) -> anyhow::Result<Self> {
        Self::build_with(settings, Overrides::default()).await
    }

    /// Like [`Application::build`], with extra routes behind the same layers (tests use it).
    pub async fn build_with_routes(
        settings: &Settings,
        extra: Router<AppState>,
    ) -> anyhow::Result<Self> {
        Self::build_with(
            settings,
            Overrides {
                routes: Some(extra),
                ..Overrides::default()
            },
        )
        .await
    }

    pub async fn build_with(settings: &Settings, overrides: Overrides) -> anyhow::Result<Self> {
        for (name, weight) in [
            (
                "search.semantic_weight (MEMVAULT_SEARCH_SEMANTIC_WEIGHT)",
                settings.search.semantic_weight,
            ),
            (
                "vault.search_semantic_weight (MEMVAULT_VAULT_SEARCH_SEMANTIC_WEIGHT)",
                settings.vault.search_semantic_weight,
            ),
            (
                "vault.search_fact_weight (MEMVAULT_VAULT_SEARCH_FACT_WEIGHT)",
                settings.vault.search_fact_weight,
            ),
        ] {
            anyhow::ensure!(
                (0.0..=1.0).contains(&weight),
                "{name} must be between 0 and 1, not {weight}"
            );
        }
        let extra = overrides.routes.unwrap_or_default();
        let metrics = crate::metrics::Metrics::new(settings.server.metrics_per_workspace);
        let embedder = match overrides.embedder {
            Some(embedder) => embedder,
            None => load_embedder(settings).await?,
        };
        let embedder = crate::embedding::Measured::wrap(embedder, metrics.clone());
        let started = Instant::now();
        let node = node_identity(settings)?;
        let ttl = Duration::from_millis(settings.cluster.lease_ttl_ms.max(100));
        let fence = node
            .as_ref()
            .map(|node| storage::NodeFence { node: node.id, ttl });
        let (store, cluster_store) =
            storage::connect_node(settings, fence)
                .await
                .with_context(|| {
                    format!(
                        "cannot open the database at {}",
                        crate::config::mask_url_password(&settings.database_url())
                    )
                })?;
        tracing::info!(backend = ?store.backend(), elapsed_ms = started.elapsed().as_millis() as u64, "database ready, migrations applied");

        // The long-lived actors' handles come first; the root supervisor spawns the actors
        // once every service is built, before the indexes are rebuilt.
        let call_timeout = Duration::from_millis(settings.server.actor_call_timeout_ms);
        let workspaces = Workspaces::new(
            RegistryArgs {
                store: Arc::new(ActorStore(store.clone())),
                plans: Arc::new(settings.plan_table()),
                rate_limits: settings.accounts.rate_limits == Switch::On,
                idle_timeout: Duration::from_secs(settings.accounts.workspace_idle_secs),
                refresh_every: Duration::from_secs(settings.accounts.plan_refresh_secs.max(1)),
            },
            call_timeout,
        );

        let embeddings = Embeddings::new(embedder.clone(), settings.embedding.query_cache_entries);
        let engine = Arc::new(
            SearchEngine::new(embedder.dimensions(), VectorConfig::default())?.keeping_texts(),
        );
        let maintainer = Maintainer::new(call_timeout);
        let judge: Arc<dyn UpdateJudge> = match settings
            .llm
            .url
            .as_ref()
            .map(ServiceUrl::expose)
            .filter(|u| !u.trim().is_empty())
        {
            Some(url) => Arc::new(LlmJudge::new(
                url,
                &settings.llm.model,
                exposed(&settings.llm.key),
            )?),
            None => Arc::new(HeuristicJudge),
        };
        let memories = MemoryService::new(MemoryDeps {
            store: store.clone(),
            workspaces: workspaces.clone(),
            embeddings,
            engine,
            maintainer: maintainer.clone(),
            judge,
            metrics: metrics.clone(),
            tuning: Tuning {
                max_content_chars: settings.memories.max_content_chars,
                dedup_threshold: settings.memories.dedup_threshold,
                supersede_min_similarity: settings.memories.supersede_min_similarity,
                long_note_chars: settings.memories.long_note_chars,
                fusion: settings.search.fusion,
                semantic_weight: settings.search.semantic_weight,
                profile_lines: settings.memories.profile_lines,
            },
        });

        let jobs = Jobs::new(JobsArgs {
            handler: Arc::new(NoteJobs(memories.clone())),
            max_attempts: JOB_ATTEMPTS,
            backoff_base: JOB_BACKOFF_BASE,
            backoff_cap: JOB_BACKOFF_CAP,
            concurrency: JOB_CONCURRENCY,
        });
        memories.attach_jobs(jobs.queue());

        let decoder: Arc<dyn Decoder> = match overrides.decoder {
            Some(decoder) => decoder,
            None => Workers::new(workers_config(settings)?)
                .context("cannot make the workers' directory")?,
        };
        let vault = Arc::new(VaultService::new(VaultDeps {
            store: store.clone(),
            workspaces: workspaces.clone(),
            embeddings: Embeddings::new(embedder.clone(), settings.embedding.query_cache_entries),
            maintainer: maintainer.clone(),
            fetch: FetchPolicy {
                allow_private: settings.vault.fetch_allow_private,
                timeout: Duration::from_secs(settings.vault.fetch_timeout_secs.max(1)),
                max_redirects: settings.vault.fetch_max_redirects,
                max_bytes: settings.vault.max_upload_bytes,
            },
            max_upload_bytes: settings.vault.max_upload_bytes,
            fusion: settings.vault.search_fusion,
            semantic_weight: settings.vault.search_semantic_weight,
            fact_weight: settings.vault.search_fact_weight,
            chunk_pieces: settings.vault.chunk_pieces,
            extractor: match settings
                .llm
                .url
                .as_ref()
                .map(ServiceUrl::expose)
                .filter(|u| !u.trim().is_empty())
            {
                Some(url) => Arc::new(LlmExtractor {
                    chat: ChatClient::new(url, &settings.llm.model, exposed(&settings.llm.key))?,
                }),
                None => Arc::new(OfflineExtractor),
            },
            decoder,
            metrics: metrics.clone(),
        })?);
        let mut engines = vault.pipeline_engines();
        engines.faults = overrides.pipeline_faults;
        let stale_after = Duration::from_millis(settings.vault.ingest_stale_ms.max(1));
        let ingestion = Ingestion::new(
            engines,
            PipelineConfig {
                max_documents: settings.vault.ingest_max_documents.max(1),
                max_documents_per_workspace: settings
                    .vault
                    .ingest_max_documents_per_workspace
                    .max(1),
                max_text_bytes: settings
                    .vault
                    .ingest_max_text_mb
                    .max(1)
                    .saturating_mul(1024 * 1024),
                max_chunks: settings.vault.ingest_max_chunks.max(1),
                max_facts: settings.vault.ingest_max_facts,
                max_attempts: settings.vault.ingest_max_attempts.max(1),
                backoff_base: Duration::from_millis(settings.vault.ingest_backoff_ms),
                backoff_cap: Duration::from_millis(settings.vault.ingest_backoff_cap_ms),
                stale_after,
                check_every: (stale_after / 4)
                    .clamp(Duration::from_millis(10), Duration::from_secs(5)),
                ..PipelineConfig::default()
            },
            call_timeout,
        );
        vault.attach_ingestion(ingestion.clone());

        let cluster = match (&node, cluster_store) {
            (Some(node), Some(cluster_store)) => {
                let cluster = Cluster::join(
                    ClusterConfig {
                        node: node.id,
                        url: node.url.clone(),
                        ttl,
                        heartbeat: Duration::from_millis(settings.cluster.heartbeat_ms.max(10)),
                        takeover_wait: Duration::from_millis(settings.cluster.takeover_wait_ms),
                        handoffs_per_round: settings.cluster.handoffs_per_round.max(1),
                    },
                    cluster_store,
                )
                .await
                .context("cannot join the cluster")?;
                cluster.set_residency(Arc::new(ServedWorkspaces {
                    memories: memories.clone(),
                    vault: vault.clone(),
                }));
                Some(cluster)
            }
            _ => None,
        };

        let mut children = supervised(
            &workspaces,
            &maintainer,
            &jobs,
            &ingestion,
            &memories,
            &vault,
            cluster.clone(),
        );
        children.push(ChildSpec::new(
            "purger",
            Heartbeat::new(
                "purge",
                Arc::new(crate::services::erasure::Purger::new(
                    store.clone(),
                    settings.storage.deleted_retention_days,
                    cluster.clone(),
                )),
                Duration::from_secs(settings.storage.purge_interval_secs.max(1)),
            ),
        ));
        if let Some(cluster) = &cluster {
            // Last to start, first to stop.
            children.push(ChildSpec::new(
                "cluster_heartbeat",
                Heartbeat::new(
                    "cluster heartbeat",
                    cluster.clone(),
                    cluster.config().heartbeat,
                ),
            ));
        }
        let (root, root_task, gave_up) = Root::start(children, restart_policy(settings))
            .await
            .context("cannot start the supervision tree")?;

        // A cluster node holds only the workspaces it serves: each is loaded when it takes it.
        let clustered = cluster.is_some();
        if !overrides.skip_index_rebuild && !clustered {
            let report = memories.rebuild_indexes(false).await?;
            tracing::info!(
                memories = report.indexed,
                embedded = report.embedded,
                elapsed_ms = report.elapsed.as_millis() as u64,
                "search indexes rebuilt from the database"
            );
        }
        let resumed = if clustered || overrides.skip_resume {
            0
        } else {
            memories.resume_jobs().await?
        };
        if resumed > 0 {
            tracing::info!(jobs = resumed, "unfinished long-note jobs resumed");
        }
        if !overrides.skip_index_rebuild && !clustered {
            let started = Instant::now();
            let (chunks, facts) = vault.rebuild_indexes().await?;
            tracing::info!(
                chunks,
                memories = facts,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "vault indexes rebuilt from the database"
            );
        }
        let resumed = if clustered || overrides.skip_resume {
            0
        } else {
            vault.resume().await?
        };
        if resumed > 0 {
            tracing::info!(documents = resumed, "unfinished documents resumed");
        }

        let public_url = match settings.server.public_url.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(raw) => Some(
                url::Url::parse(raw).with_context(|| format!("public_url '{raw}' is not a URL"))?,
            ),
        };
        let events = Events::default();
        let accounts = AccountsService::new(
            store.clone(),
            Some(workspaces.clone()),
            accounts_config(settings),
        )
        .with_events(events.clone());
        let (provider, webhook_secret) = billing_provider(settings, store.clone())?;
        let billing = Arc::new(BillingService::new(
            store.clone(),
            Some(workspaces.clone()),
            provider,
            settings.plan_table(),
            webhook_secret,
            settings.billing.webhook_tolerance_secs,
        ));
        // A cluster node announces key and plan changes, and applies the others'.
        let listening = cluster.as_ref().map(|cluster| {
            events.attach(cluster.store().clone());
            let accounts = accounts.clone();
            listen(cluster.store().clone(), move |event| {
                accounts.apply_cluster_event(event)
            })
        });
        let liveness = crate::services::liveness::Liveness::new(root.clone());
        let state = AppState {
            liveness: liveness.clone(),
            oauth: OAuthService::new(store.clone(), accounts.doors()),
            uploads: Arc::new(tokio::sync::Semaphore::new(
                settings.server.http.max_uploads.max(1),
            )),
            metrics: http::MetricsState {
                metrics,
                token: settings
                    .server
                    .metrics_token
                    .as_ref()
                    .map(|t| t.expose().trim())
                    .filter(|t| !t.is_empty())
                    .map(str::to_string),
            },
            client_addr: http::extract::AddressSource::new(
                settings.server.http.trusted_proxy_header.as_deref(),
            )?,
            billing,
            accounts,
            memories: memories.clone(),
            vault: vault.clone(),
            erasure: crate::services::erasure::ErasureService::new(
                store.clone(),
                workspaces.clone(),
                memories.clone(),
                vault.clone(),
            ),
            store: store.clone(),
            cluster: match (&cluster, &node) {
                (Some(cluster), Some(node)) => Some(http::cluster::ClusterRouting::new(
                    cluster.clone(),
                    &node.secret,
                    Duration::from_secs(settings.cluster.forward_timeout_secs.max(1)),
                    Duration::from_secs(settings.server.http.body_timeout_secs.max(1)),
                    settings.server.max_body_bytes,
                )?),
                _ => None,
            },
            web: WebConfig {
                public_url,
                session_max_age_secs: chrono::Duration::days(
                    settings.accounts.session_ttl_days as i64,
                )
                .num_seconds(),
            },
        };
        let mcp_shutdown = CancellationToken::new();
        let extra = extra.merge(mcp::routes(
            &state,
            mcp_settings(settings),
            mcp_shutdown.clone(),
        ));
        let router = http::app(
            state,
            http::BodyLimits {
                max_body_bytes: settings.server.max_body_bytes,
                max_upload_bytes: settings.vault.max_upload_bytes,
                body_timeout: Duration::from_secs(settings.server.http.body_timeout_secs.max(1)),
                upload_timeout: Duration::from_secs(
                    settings.server.http.upload_timeout_secs.max(1),
                ),
            },
            extra,
        );
        let listener = TcpListener::bind(settings.server.listen)
            .await
            .with_context(|| format!("cannot listen on {}", settings.server.listen))?;

        if store.workspace_count().await? == 0 {
            tracing::warn!(
                "no workspace yet: run `memvault admin create-workspace --name NAME` to create one; \
                 it prints the workspace id and its API key (shown once)"
            );
        }
        Ok(Application {
            liveness,
            serve_limits: http::serve::ServeLimits {
                header_timeout: Duration::from_secs(
                    settings.server.http.header_timeout_secs.max(1),
                ),
                idle_timeout: Duration::from_secs(settings.server.http.idle_timeout_secs.max(1)),
                max_connections: settings.server.http.max_connections.max(1),
            },
            listener,
            router,
            store,
            workspaces,
            memories,
            vault,
            maintainer,
            root,
            root_task,
            gave_up,
            mcp_shutdown,
            cluster,
            listening,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The store (tests and benchmarks seed workspaces through it).
    pub fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// The workspace actors (tests use it to kill one).
    pub fn workspaces(&self) -> &Workspaces {
        &self.workspaces
    }

    /// Waits until the index maintainer has nothing queued or running (benchmarks measure
    /// steady-state search after it); `false` when `timeout` passed first.
    pub async fn wait_for_index_maintenance(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            match self.maintainer.stats().await {
                Ok(stats) if !stats.running && stats.queued == 0 => return true,
                Ok(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                Err(_) => return false,
            }
        }
        false
    }

    /// The supervised actors (tests stop one to see readiness follow).
    pub fn liveness(&self) -> &crate::services::liveness::Liveness {
        &self.liveness
    }

    /// The vault service (tests reach the ingestion supervisor through it).
    pub fn vault(&self) -> &Arc<VaultService> {
        &self.vault
    }

    /// The memories service (the CLI's import and export use it).
    pub fn memories(&self) -> &MemoryService {
        &self.memories
    }

    /// Serves until `shutdown` completes, then finishes in-flight requests, stops the actors
    /// and closes the database. Should the supervision tree give up on an actor that keeps
    /// dying, the same orderly stop follows and the error says which actor (the process then
    /// exits non-zero, for its service manager to start a fresh one).
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        tracing::info!(address = %self.local_addr(), "memvault listening");
        let mcp_shutdown = self.mcp_shutdown.clone();
        let gave_up = self.gave_up;
        let cluster = self.cluster.clone();
        let (fatal, fatal_rx) = oneshot::channel::<String>();
        http::serve::serve(self.listener, self.router, self.serve_limits, async move {
            tokio::select! {
                () = shutdown => {}
                why = gave_up => {
                    // The root keeps its sender until it gives up or stops: a dropped one
                    // means it stopped unasked, and nothing supervises the actors any more.
                    let why = why.unwrap_or_else(|_| "the root supervisor stopped".to_string());
                    tracing::error!(reason = %why, "the supervision tree gave up; stopping the server");
                    let _ = fatal.send(why);
                }
            }
            // A cluster node hands its workspaces over while it still serves (requests that
            // arrive meanwhile are forwarded to the new owners), then leaves.
            if let Some(cluster) = cluster {
                match tokio::time::timeout(CLUSTER_LEAVE_GRACE, cluster.leave()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => tracing::warn!(%error, "leaving the cluster failed; its workspaces move when its heartbeat expires"),
                    Err(_) => tracing::warn!("leaving the cluster took too long; the rest move when its heartbeat expires"),
                }
            }
            // MCP streams stay open until told; requests in flight still finish.
            mcp_shutdown.cancel();
        })
        .await?;
        tracing::info!("in-flight requests finished, stopping");
        if let Some(listening) = self.listening {
            listening.abort();
        }
        self.root.shutdown(ACTOR_STOP_GRACE).await;
        let _ = tokio::time::timeout(ACTOR_STOP_GRACE, self.root_task).await;
        self.store.close().await;
        match fatal_rx.await {
            Ok(why) => Err(anyhow::anyhow!("{why}")),
            Err(_) => Ok(()),
        }
    }
}

/// The long-lived actors under the root supervisor, in start order (they stop in reverse), each
/// with how to get back what a dead generation held: the maintainer's queue from the indexes,
/// the jobs' and documents' work from storage.
fn supervised(
    workspaces: &Workspaces,
    maintainer: &Maintainer,
    jobs: &Jobs,
    ingestion: &Ingestion,
    memories: &MemoryService,
    vault: &Arc<VaultService>,
    cluster: Option<Arc<Cluster>>,
) -> Vec<ChildSpec> {
    let (memories_, vault_) = (memories.clone(), vault.clone());
    let (memories, vault) = (memories.clone(), vault.clone());
    // A cluster node resumes only its own workspaces' work.
    let owned = move || {
        cluster
            .as_ref()
            .map(|c| c.owned().into_iter().map(|(w, _)| w).collect::<Vec<_>>())
    };
    let owned_ = owned.clone();
    vec![
        ChildSpec::new("workspace_registry", workspaces.clone()),
        ChildSpec::new("index_maintainer", maintainer.clone()).recover_with(move || {
            memories_.schedule_maintenance();
            vault_.schedule_maintenance();
            std::future::ready(())
        }),
        ChildSpec::new("jobs_supervisor", jobs.clone()).recover_with(move || {
            let memories = memories.clone();
            let only = owned();
            async move {
                match memories.resume_jobs_in(only.as_deref()).await {
                    Ok(jobs) => tracing::info!(jobs, "unfinished long-note jobs resubmitted after a restart"),
                    Err(error) => tracing::error!(%error, "cannot resubmit long-note jobs after a restart; they resume at the next start"),
                }
            }
        }),
        ChildSpec::new("ingestion_supervisor", ingestion.clone()).recover_with(move || {
            let vault = vault.clone();
            let only = owned_();
            async move {
                match vault.resume_in(only.as_deref()).await {
                    Ok(documents) => tracing::info!(documents, "unfinished documents resubmitted after a restart"),
                    Err(error) => tracing::error!(%error, "cannot resubmit documents after a restart; they resume at the next start"),
                }
            }
        }),
    ]
}

fn restart_policy(settings: &Settings) -> RestartPolicy {
    let s = &settings.server.supervision;
    RestartPolicy {
        backoff_base: Duration::from_millis(s.restart_backoff_ms.max(1)),
        backoff_cap: Duration::from_millis(
            s.restart_backoff_cap_ms.max(s.restart_backoff_ms).max(1),
        ),
        max_restarts: s.max_restarts,
        window: Duration::from_secs(s.restart_window_secs.max(1)),
    }
}

/// The configured billing provider and, for a hosted one, its webhook secret. A hosted
/// provider with a missing setting stops start-up with a message naming it.
pub fn billing_provider(
    settings: &Settings,
    store: Arc<dyn Store>,
) -> anyhow::Result<(Arc<dyn BillingProvider>, Option<WebhookSecret>)> {
    match settings.billing.provider {
        BillingKind::Local => Ok((Arc::new(LocalProvider::new(store)), None)),
        BillingKind::Hosted => {
            let required = |name: &str, value: Option<&str>| -> anyhow::Result<String> {
                value
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(str::to_string)
                    .with_context(|| {
                        format!(
                            "billing_provider is hosted but {name} is not set (MEMVAULT_{})",
                            name.to_uppercase()
                        )
                    })
            };
            let base_url = required("billing_url", settings.billing.url.as_deref())?;
            url::Url::parse(&base_url)
                .with_context(|| format!("billing_url '{base_url}' is not a URL"))?;
            let api_key = required(
                "billing_key",
                settings.billing.key.as_ref().map(Secret::expose),
            )?;
            let secret = required(
                "billing_webhook_secret",
                settings.billing.webhook_secret.as_ref().map(Secret::expose),
            )?;
            let secret = WebhookSecret::parse(&secret)
                .map_err(|e| anyhow::anyhow!("billing_webhook_secret: {e}"))?;
            let products = &settings.billing.products;
            if products.hobby.is_none() && products.pro.is_none() && products.ultimate.is_none() {
                anyhow::bail!(
                    "billing_provider is hosted but no billing_products are set \
                     (MEMVAULT_BILLING_PRODUCTS__PRO=... and the like)"
                );
            }
            let provider = HostedProvider::new(HostedConfig {
                base_url,
                api_key,
                hobby: products.hobby.clone(),
                pro: products.pro.clone(),
                ultimate: products.ultimate.clone(),
            })?;
            Ok((Arc::new(provider), Some(secret)))
        }
    }
}

/// What `/mcp` accepts: loopback names, the address it listens on, and the public URL's host
/// (a deployment behind another name sets `public_url`).
pub fn mcp_settings(settings: &Settings) -> McpSettings {
    let mut allowed_hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    let ip = settings.server.listen.ip();
    if !ip.is_unspecified() && !ip.is_loopback() {
        allowed_hosts.push(ip.to_string());
    }
    if let Some(host) = settings
        .server
        .public_url
        .as_deref()
        .and_then(|raw| url::Url::parse(raw.trim()).ok())
        .and_then(|url| url.host_str().map(str::to_string))
    {
        allowed_hosts.push(host);
    }
    McpSettings {
        allowed_hosts,
        // A JSON-RPC envelope around a body the REST API would accept.
        max_body_bytes: settings.server.max_body_bytes + 16 * 1024,
    }
}

/// The accounts settings.
pub fn accounts_config(settings: &Settings) -> AccountsConfig {
    AccountsConfig {
        session_ttl: chrono::Duration::days(
            settings.accounts.session_ttl_days.clamp(1, 3650) as i64
        ),
        invitation_ttl: chrono::Duration::days(
            settings.accounts.invitation_ttl_days.clamp(1, 365) as i64
        ),
        password_memory_kib: settings.accounts.password_memory_kib,
        abuse: settings.accounts.abuse.clone(),
    }
}

/// The runtime every memvault program runs in (the server, the command line, the benches).
/// Call it from `main` before any thread is started: it first sets the model's environment
/// (see `embedding::set_inference_environment`), the only place the environment is written.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    crate::embedding::set_inference_environment();
    // rayon's global pool (the model's passes when a call has the encoder to itself, the
    // import's look-ahead), started now so that its threads have a name of their own: started
    // on first use, they took the name of the thread that used it first, a tokio worker's, and
    // `top -H` or a profile credited the model's work to the async workers. Sized by
    // `RAYON_NUM_THREADS`, which the line above set. Should it fail to start, rayon starts its
    // pool on first use, as before.
    let _ = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("memvault-cpu-{i}"))
        .build_global();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
}

/// Completes on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutdown signal received");
}

/// How the document workers start, from the settings. A worker directory left by a server that
/// was killed is removed here (each worker removes its own when it ends).
fn workers_config(settings: &Settings) -> anyhow::Result<WorkersConfig> {
    let worker = &settings.vault.worker;
    let dir = worker
        .dir
        .clone()
        .unwrap_or_else(|| settings.storage.data_dir.join("workers"));
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with("worker-") {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let program = match &worker.program {
        Some(program) => program.clone(),
        None => std::env::current_exe().context("cannot find this executable to start workers")?,
    };
    const MB: u64 = 1024 * 1024;
    Ok(WorkersConfig {
        program,
        dir,
        limits: WorkerLimits {
            memory_bytes: worker.memory_mb.max(64).saturating_mul(MB),
            cpu_secs: worker.cpu_secs.max(1),
            deadline: Duration::from_secs(worker.deadline_secs.max(1)),
            output_bytes: worker.output_mb.max(1).saturating_mul(MB),
        },
        parse_limits: ParseLimits {
            // The parsers stop at the text a document may hand to chunking.
            max_text_bytes: settings
                .vault
                .ingest_max_text_mb
                .max(1)
                .saturating_mul(MB as usize),
            ..ParseLimits::default()
        },
        ocr_language: settings.vault.ocr_language.clone(),
        ocr_data_dir: settings.vault.ocr_data_dir.clone(),
        confine: worker.confine,
        faults: worker.test_faults,
        warm: worker.warm,
    })
}
