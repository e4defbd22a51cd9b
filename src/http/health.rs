//! Liveness and readiness.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::AppState;
use crate::error::Error;
use crate::storage::Backend;

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    pub status: &'static str,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    pub status: &'static str,
    /// `sqlite` or `postgres`.
    pub database: &'static str,
}

/// The process is up.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "alive", body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// The database answers.
#[utoipa::path(get, path = "/readyz", tag = "operations", responses(
    (status = 200, description = "ready to serve", body = Readiness),
    (status = 503, description = "the database does not answer", body = super::error::ErrorBody)))]
pub async fn readyz(State(state): State<AppState>) -> Result<(StatusCode, Json<Readiness>), Error> {
    state
        .store
        .ping()
        .await
        .map_err(|e| Error::Unavailable(format!("database not reachable: {e}")))?;
    let database = match state.store.backend() {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    };
    Ok((
        StatusCode::OK,
        Json(Readiness {
            status: "ready",
            database,
        }),
    ))
}
