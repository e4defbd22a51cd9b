//! `GET /metrics` (Prometheus text) and the layer that counts and times every request by its
//! route template.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use crate::error::Error;
use crate::services::RateSlot;

/// Counts and times a request under its route template (never the raw path), and a refusal
/// by a workspace's rate limit under its endpoint class.
pub async fn record(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let method = request.method().as_str().to_string();
    let slot = request.extensions().get::<RateSlot>().cloned();
    let started = Instant::now();
    let response = next.run(request).await;
    let metrics = &state.metrics.metrics;
    metrics.request(
        &route,
        &method,
        response.status().as_u16(),
        started.elapsed(),
    );
    if let Some((class, workspace)) = slot.and_then(|s| s.refused()) {
        metrics.rate_limited(class, workspace);
    }
    response
}

/// `GET /metrics`: the gauges the database knows are read now, then everything is rendered.
pub async fn scrape(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, Error> {
    if let Some(token) = &state.metrics.token {
        let sent = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let matches = sent.is_some_and(|sent| {
            use sha2::{Digest, Sha256};
            // Compared as digests: no early exit on the first differing byte.
            Sha256::digest(sent.as_bytes()) == Sha256::digest(token.as_bytes())
        });
        if !matches {
            return Err(Error::Unauthorized(
                "metrics need Authorization: Bearer <metrics_token>".to_string(),
            ));
        }
    }
    let metrics = &state.metrics.metrics;
    let counts = state.store.document_status_counts().await?;
    for status in [
        "pending",
        "processing",
        "retrying",
        "completed",
        "failed",
        "cancelled",
    ] {
        let count = counts
            .iter()
            .find(|(s, _)| s == status)
            .map_or(0, |(_, n)| *n);
        metrics
            .documents
            .get_or_create(&crate::metrics::StatusLabels {
                status: status.to_string(),
            })
            .set(count);
    }
    metrics.queue_depth.set(
        counts
            .iter()
            .find(|(s, _)| s == "pending")
            .map_or(0, |(_, n)| *n),
    );
    let oldest = state.store.oldest_pending_document().await?;
    let age = oldest.map_or(0, |created| {
        (crate::model::to_micros(crate::model::now()) - created).max(0) / 1_000_000
    });
    metrics.oldest_pending_seconds.set(age);
    // The supervisor's own counts; a supervisor that does not answer is left out (readiness
    // says it is down).
    if let Some(stats) = state.vault.ingestion_stats().await {
        metrics.ingestion_state("running", stats.running);
        metrics.ingestion_state("queued", stats.queued);
        metrics.ingestion_state("waiting_retry", stats.waiting);
    }
    for child in state.liveness.report() {
        metrics.actor(child.name, child.alive, child.restarts);
    }
    for (kind, size) in state
        .memories
        .index_size()
        .into_iter()
        .chain(state.vault.index_sizes())
    {
        metrics.index(kind, size.vectors, size.segments);
    }
    let (used, idle) = state.store.pool_use();
    for (name, value) in [("used", used), ("idle", idle)] {
        metrics
            .db_connections
            .get_or_create(&crate::metrics::StateLabels {
                state: name.to_string(),
            })
            .set(i64::from(value));
    }
    let mut response = metrics.render().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    Ok(response)
}
