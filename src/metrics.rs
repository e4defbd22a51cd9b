//! Prometheus metrics: one [`Metrics`] per server, served at `GET /metrics` in the text format.
//! Label values are bounded: route templates (never raw paths), methods, status codes, endpoint
//! classes, save statuses, document statuses; no ids, scopes or workspace names. Only when an
//! operator turns on `metrics_per_workspace` do two more families count saves and rate-limit
//! refusals by workspace id.
//!
//! Counters and histograms are recorded where things happen (the HTTP layer, the save path, the
//! embedder); gauges that the database knows (documents by status, the pending queue) and the
//! pool's use are read when the metrics are scraped.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The route template (`/api/memories/{id}`), `unmatched` for 404s of no route.
    pub route: String,
    pub method: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    pub route: String,
    pub method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClassLabels {
    /// `save`, `search`, `feedback`, `read` or `write`.
    pub class: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatusLabels {
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabels {
    pub state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WorkspaceStatusLabels {
    /// The workspace's id (never its name).
    pub workspace: String,
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WorkspaceClassLabels {
    pub workspace: String,
    pub class: String,
}

/// The per-workspace families, registered only in that mode.
pub struct PerWorkspace {
    pub saves: Family<WorkspaceStatusLabels, Counter>,
    pub rate_limited: Family<WorkspaceClassLabels, Counter>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActorLabels {
    /// A child of the root supervisor (`workspace_registry`, `index_maintainer`, ...).
    pub actor: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabels {
    /// `parse`, `ocr`, `chunk`, `embed` or `extract`.
    pub phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailureLabels {
    /// The phase a failed generation stopped in (`none`: refused at resumption).
    pub phase: String,
    /// `transient`, `permanent`, `stale`, `killed`, `crashed` or `interrupted`.
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    /// `memories`, `vault_chunks` or `vault_memories`.
    pub kind: String,
}

fn phase_histogram() -> Histogram {
    // 5 ms to about 5 minutes.
    Histogram::new(exponential_buckets(0.005, 2.0, 17))
}

fn latency_histogram() -> Histogram {
    // 0.5 ms to about 16 s.
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// Every metric of one server.
pub struct Metrics {
    registry: Registry,
    pub http_requests: Family<RequestLabels, Counter>,
    pub http_duration: Family<RouteLabels, Histogram, fn() -> Histogram>,
    pub rate_limited: Family<ClassLabels, Counter>,
    pub saves: Family<StatusLabels, Counter>,
    pub embedding_duration: Histogram,
    pub embedding_batch: Histogram,
    pub documents: Family<StatusLabels, Gauge>,
    pub queue_depth: Gauge,
    pub oldest_pending_seconds: Gauge,
    pub db_connections: Family<StateLabels, Gauge>,
    /// Document generations that ended, by outcome (`completed`, `failed`, `retried`).
    pub generations: Family<StatusLabels, Counter>,
    /// Failed generations (retried or not) by phase and reason.
    pub failures: Family<FailureLabels, Counter>,
    /// Time of each phase a generation ran to its end.
    pub phase_duration: Family<PhaseLabels, Histogram, fn() -> Histogram>,
    /// Restarts of each supervised actor, and whether it runs (read at scrape).
    pub actor_restarts: Family<ActorLabels, Counter>,
    pub actor_up: Family<ActorLabels, Gauge>,
    /// Live vectors and HNSW segments of each search index (read at scrape).
    pub index_vectors: Family<KindLabels, Gauge>,
    pub index_segments: Family<KindLabels, Gauge>,
    /// Documents running, queued, and waiting for a retry's backoff in the supervisor.
    pub ingestion: Family<StateLabels, Gauge>,
    /// Saves and refusals by workspace, when `metrics_per_workspace` is on.
    pub per_workspace: Option<PerWorkspace>,
}

impl Metrics {
    /// The families; with `per_workspace`, also saves and refusals by workspace.
    pub fn new(per_workspace: bool) -> Arc<Self> {
        let mut registry = Registry::with_prefix("memvault");
        let per_workspace = per_workspace.then(|| {
            let saves = Family::<WorkspaceStatusLabels, Counter>::default();
            registry.register(
                "workspace_saves",
                "Memories saved, by workspace id and outcome (metrics_per_workspace)",
                saves.clone(),
            );
            let rate_limited = Family::<WorkspaceClassLabels, Counter>::default();
            registry.register(
                "workspace_rate_limited",
                "Requests refused by a rate limit, by workspace id and class (metrics_per_workspace)",
                rate_limited.clone(),
            );
            PerWorkspace {
                saves,
                rate_limited,
            }
        });
        let http_requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests by route template, method and status",
            http_requests.clone(),
        );
        let http_duration =
            Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                latency_histogram,
            );
        registry.register(
            "http_request_duration_seconds",
            "Time to the response's head, by route template and method",
            http_duration.clone(),
        );
        let rate_limited = Family::<ClassLabels, Counter>::default();
        registry.register(
            "rate_limited",
            "Requests refused by a workspace's rate limit, by endpoint class",
            rate_limited.clone(),
        );
        let saves = Family::<StatusLabels, Counter>::default();
        registry.register(
            "saves",
            "Memories saved, by outcome (created, duplicate, superseded)",
            saves.clone(),
        );
        let embedding_duration = latency_histogram();
        registry.register(
            "embedding_duration_seconds",
            "Time of one call to the sentence encoder",
            embedding_duration.clone(),
        );
        let embedding_batch = Histogram::new(exponential_buckets(1.0, 2.0, 9));
        registry.register(
            "embedding_batch_size",
            "Texts per call to the sentence encoder",
            embedding_batch.clone(),
        );
        let documents = Family::<StatusLabels, Gauge>::default();
        registry.register(
            "documents",
            "Vault documents by status (read at scrape)",
            documents.clone(),
        );
        let queue_depth = Gauge::default();
        registry.register(
            "documents_pending",
            "Vault documents waiting to be processed (read at scrape)",
            queue_depth.clone(),
        );
        let oldest_pending_seconds = Gauge::default();
        registry.register(
            "documents_oldest_pending_age_seconds",
            "Age of the oldest pending vault document, 0 when none (read at scrape)",
            oldest_pending_seconds.clone(),
        );
        let db_connections = Family::<StateLabels, Gauge>::default();
        registry.register(
            "db_connections",
            "Database pool connections by state (idle, used)",
            db_connections.clone(),
        );
        let generations = Family::<StatusLabels, Counter>::default();
        registry.register(
            "document_generations",
            "Document generations ended, by outcome (completed, failed for good, retried)",
            generations.clone(),
        );
        let ingestion = Family::<StateLabels, Gauge>::default();
        registry.register(
            "ingestion_documents",
            "Documents in the ingestion supervisor by state (running, queued, waiting_retry)",
            ingestion.clone(),
        );
        let failures = Family::<FailureLabels, Counter>::default();
        registry.register(
            "document_failures",
            "Document generations that failed (retried or for good), by phase and reason",
            failures.clone(),
        );
        let phase_duration =
            Family::<PhaseLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                phase_histogram,
            );
        registry.register(
            "document_phase_duration_seconds",
            "Time of a document phase that ran to its end, by phase",
            phase_duration.clone(),
        );
        let actor_restarts = Family::<ActorLabels, Counter>::default();
        registry.register(
            "actor_restarts",
            "Restarts of a supervised actor by the root supervisor (read at scrape)",
            actor_restarts.clone(),
        );
        let actor_up = Family::<ActorLabels, Gauge>::default();
        registry.register(
            "actor_up",
            "1 when a supervised actor runs, 0 while it is down (read at scrape)",
            actor_up.clone(),
        );
        let index_vectors = Family::<KindLabels, Gauge>::default();
        registry.register(
            "index_vectors",
            "Live vectors in a search index, by kind (read at scrape)",
            index_vectors.clone(),
        );
        let index_segments = Family::<KindLabels, Gauge>::default();
        registry.register(
            "index_segments",
            "HNSW segments of a search index, by kind (read at scrape)",
            index_segments.clone(),
        );
        for outcome in ["completed", "failed", "retried"] {
            let _ = generations.get_or_create(&StatusLabels {
                status: outcome.to_string(),
            });
        }
        for state in ["running", "queued", "waiting_retry"] {
            let _ = ingestion.get_or_create(&StateLabels {
                state: state.to_string(),
            });
        }
        // The bounded label sets start at zero, so that their families are always exported.
        for class in ["save", "search", "feedback", "read", "write"] {
            let _ = rate_limited.get_or_create(&ClassLabels {
                class: class.to_string(),
            });
        }
        for status in ["created", "duplicate", "superseded"] {
            let _ = saves.get_or_create(&StatusLabels {
                status: status.to_string(),
            });
        }
        for state in ["used", "idle"] {
            let _ = db_connections.get_or_create(&StateLabels {
                state: state.to_string(),
            });
        }
        Arc::new(Metrics {
            registry,
            http_requests,
            http_duration,
            rate_limited,
            saves,
            embedding_duration,
            embedding_batch,
            documents,
            queue_depth,
            oldest_pending_seconds,
            db_connections,
            generations,
            ingestion,
            failures,
            phase_duration,
            actor_restarts,
            actor_up,
            index_vectors,
            index_segments,
            per_workspace,
        })
    }

    /// A document generation ended: `outcome` is `completed`, `retried` or `failed`; a failure
    /// is also counted by the phase it stopped in and its reason.
    pub fn generation_ended(&self, outcome: &str, failure: Option<(&str, &str)>) {
        self.generations
            .get_or_create(&StatusLabels {
                status: outcome.to_string(),
            })
            .inc();
        if let Some((phase, reason)) = failure {
            self.failures
                .get_or_create(&FailureLabels {
                    phase: phase.to_string(),
                    reason: reason.to_string(),
                })
                .inc();
        }
    }

    /// Exports a phase's duration series at zero (the label set is bounded, and a dashboard's
    /// query should find it before the first document).
    pub fn phase_series(&self, phase: &str) {
        let _ = self.phase_duration.get_or_create(&PhaseLabels {
            phase: phase.to_string(),
        });
    }

    /// Exports a failure series at zero.
    pub fn failure_series(&self, phase: &str, reason: &str) {
        let _ = self.failures.get_or_create(&FailureLabels {
            phase: phase.to_string(),
            reason: reason.to_string(),
        });
    }

    pub fn phase_done(&self, phase: &str, took: Duration) {
        self.phase_duration
            .get_or_create(&PhaseLabels {
                phase: phase.to_string(),
            })
            .observe(took.as_secs_f64());
    }

    /// A supervised actor's state, as the root supervisor reports it. Its restarts only grow
    /// for the life of the process; two scrapes at the same instant may both add the same
    /// difference (scrapes are expected one at a time).
    pub fn actor(&self, actor: &str, alive: bool, restarts: u64) {
        let labels = ActorLabels {
            actor: actor.to_string(),
        };
        self.actor_up.get_or_create(&labels).set(i64::from(alive));
        let counter = self.actor_restarts.get_or_create(&labels);
        let seen = counter.get();
        if restarts > seen {
            counter.inc_by(restarts - seen);
        }
    }

    pub fn index(&self, kind: &str, vectors: usize, segments: usize) {
        let labels = KindLabels {
            kind: kind.to_string(),
        };
        self.index_vectors
            .get_or_create(&labels)
            .set(i64::try_from(vectors).unwrap_or(i64::MAX));
        self.index_segments
            .get_or_create(&labels)
            .set(i64::try_from(segments).unwrap_or(i64::MAX));
    }

    pub fn ingestion_state(&self, state: &str, value: usize) {
        self.ingestion
            .get_or_create(&StateLabels {
                state: state.to_string(),
            })
            .set(i64::try_from(value).unwrap_or(i64::MAX));
    }

    pub fn request(&self, route: &str, method: &str, status: u16, took: Duration) {
        self.http_requests
            .get_or_create(&RequestLabels {
                route: route.to_string(),
                method: method.to_string(),
                status,
            })
            .inc();
        self.http_duration
            .get_or_create(&RouteLabels {
                route: route.to_string(),
                method: method.to_string(),
            })
            .observe(took.as_secs_f64());
    }

    pub fn rate_limited(&self, class: &str, workspace: uuid::Uuid) {
        self.rate_limited
            .get_or_create(&ClassLabels {
                class: class.to_string(),
            })
            .inc();
        if let Some(per) = &self.per_workspace {
            per.rate_limited
                .get_or_create(&WorkspaceClassLabels {
                    workspace: workspace.to_string(),
                    class: class.to_string(),
                })
                .inc();
        }
    }

    pub fn saved(&self, status: &str, workspace: uuid::Uuid) {
        self.saves
            .get_or_create(&StatusLabels {
                status: status.to_string(),
            })
            .inc();
        if let Some(per) = &self.per_workspace {
            per.saves
                .get_or_create(&WorkspaceStatusLabels {
                    workspace: workspace.to_string(),
                    status: status.to_string(),
                })
                .inc();
        }
    }

    pub fn embedded(&self, texts: usize, took: Duration) {
        self.embedding_batch.observe(texts as f64);
        self.embedding_duration.observe(took.as_secs_f64());
    }

    /// The text format (OpenMetrics text, which Prometheus reads).
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
