//! Prometheus metrics: one [`Metrics`] per server, served at `GET /metrics` in the text format.
//! Label values are bounded: route templates (never raw paths), methods, status codes, endpoint
//! classes, save statuses, document statuses; no ids, scopes or workspace names.
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
    /// Generations of the ingestion supervisor that ended, by outcome (`completed`, `failed`,
    /// `retried`), brought up to the supervisor's own totals at each scrape.
    pub generations: Family<StatusLabels, Counter>,
    /// Documents running, queued, and waiting for a retry's backoff in the supervisor.
    pub ingestion: Family<StateLabels, Gauge>,
}

impl Metrics {
    pub fn new() -> Arc<Self> {
        let mut registry = Registry::with_prefix("memvault");
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
        })
    }

    /// Brings the generation counters up to the supervisor's totals. A counter never goes
    /// down: should the supervisor start afresh (counting from zero), its new ends show only
    /// once its totals pass the exported ones. Two scrapes at the same instant may both add
    /// the same difference (scrapes are expected one at a time).
    pub fn generations_up_to(&self, outcome: &str, total: u64) {
        let counter = self.generations.get_or_create(&StatusLabels {
            status: outcome.to_string(),
        });
        let seen = counter.get();
        if total > seen {
            counter.inc_by(total - seen);
        }
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

    pub fn rate_limited(&self, class: &str) {
        self.rate_limited
            .get_or_create(&ClassLabels {
                class: class.to_string(),
            })
            .inc();
    }

    pub fn saved(&self, status: &str) {
        self.saves
            .get_or_create(&StatusLabels {
                status: status.to_string(),
            })
            .inc();
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
