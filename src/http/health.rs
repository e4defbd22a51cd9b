//! Liveness and readiness.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::AppState;
use crate::storage::Backend;

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    pub status: &'static str,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    /// `ready`, or `not ready` (503).
    pub status: &'static str,
    /// `sqlite` or `postgres`.
    pub database: &'static str,
    /// Each part and its state: `database` (`ok` or `unreachable`), `model` (`ok`), and every
    /// supervised actor (`ok` or `down`).
    pub parts: BTreeMap<String, String>,
    /// The parts that are not `ok`.
    pub failing: Vec<String>,
    /// In a cluster: this node and the members it knows (absent on a single node).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterView>,
}

/// A cluster as one node sees it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterView {
    /// This node's id.
    pub node: uuid::Uuid,
    /// Workspaces this node serves now.
    pub serving: usize,
    pub nodes: Vec<NodeView>,
}

/// A registered node. Its URL, an internal address, is not shown here (an unauthenticated
/// route): `memvault admin cluster` shows it to operators.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeView {
    pub id: uuid::Uuid,
    /// `serving`, `draining` (handing its workspaces over) or `dead` (heartbeat expired).
    pub state: &'static str,
    /// Milliseconds since its last heartbeat.
    pub heartbeat_age_ms: i64,
    /// Workspaces whose lease names it.
    pub workspaces: i64,
}

/// The process is up.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "alive", body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// Ready when the database answers, the sentence encoder is loaded and every supervised actor
/// runs; otherwise 503 with the same body naming the failing parts.
#[utoipa::path(get, path = "/readyz", tag = "operations", responses(
    (status = 200, description = "ready to serve", body = Readiness),
    (status = 503, description = "a part is not ready (named in `failing`)", body = Readiness)))]
pub async fn readyz(State(state): State<AppState>) -> Response {
    let mut parts = BTreeMap::new();
    let database = match state.store.ping().await {
        Ok(()) => "ok",
        Err(error) => {
            tracing::warn!(%error, "readiness: the database does not answer");
            "unreachable"
        }
    };
    parts.insert("database".to_string(), database.to_string());
    // Start-up fails without an encoder: once serving, it is loaded.
    parts.insert("model".to_string(), "ok".to_string());
    for child in state.liveness.report() {
        parts.insert(
            child.name.to_string(),
            if child.alive { "ok" } else { "down" }.to_string(),
        );
    }
    let cluster = match &state.cluster {
        None => None,
        Some(routing) => {
            let cluster = &routing.cluster;
            parts.insert(
                "cluster".to_string(),
                if cluster.alive() { "ok" } else { "down" }.to_string(),
            );
            let now = chrono::Utc::now().timestamp_micros();
            let nodes = cluster.nodes().await.unwrap_or_default();
            Some(ClusterView {
                node: cluster.node(),
                serving: cluster.owned().len(),
                nodes: nodes
                    .into_iter()
                    .map(|n| NodeView {
                        id: n.id,
                        state: if !n.alive {
                            "dead"
                        } else if n.draining {
                            "draining"
                        } else {
                            "serving"
                        },
                        heartbeat_age_ms: (now - n.heartbeat_at) / 1000,
                        workspaces: n.workspaces,
                    })
                    .collect(),
            })
        }
    };
    let failing: Vec<String> = parts
        .iter()
        .filter(|(_, v)| *v != "ok")
        .map(|(k, _)| k.clone())
        .collect();
    let ready = failing.is_empty();
    let body = Readiness {
        status: if ready { "ready" } else { "not ready" },
        database: match state.store.backend() {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        },
        parts,
        failing,
        cluster,
    };
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let mut response = (status, Json(body)).into_response();
    // The body is already the answer: the error envelope leaves it alone.
    response.extensions_mut().insert(super::error::KeepBody);
    response
}
