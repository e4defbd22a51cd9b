//! Erasure handlers and their wire types: extract, call
//! [`ErasureService`](crate::services::erasure::ErasureService), answer.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::accounts::dto::WorkspaceParam;
use super::error::ErrorBody;
use super::extract::ApiQuery;
use super::memories::dto::ScopeParams;
use super::AppState;
use crate::error::Error;
use crate::services::Principal;
use crate::storage::erasure::{Eraser, ErasureCounts, ErasureRecord};

/// What an erasure removed, per kind.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErasedCounts {
    /// Memories that were current (the room freed under the plan's memory limit).
    pub memories: u64,
    /// Rows of memories: every version of every chain, deleted ones included.
    pub versions: u64,
    pub vectors: u64,
    pub feedback: u64,
    /// Long-note jobs with their notes (for one memory: finished notes it came from, emptied).
    pub jobs: u64,
    /// Vault documents with their stored bytes, parsed text and status history.
    pub documents: u64,
    pub chunks: u64,
    pub vault_memories: u64,
    /// Citations removed from vault memories that stay (a document of another scope cites
    /// them too).
    pub citations: u64,
}

impl From<ErasureCounts> for ErasedCounts {
    fn from(c: ErasureCounts) -> Self {
        ErasedCounts {
            memories: c.memories,
            versions: c.versions,
            vectors: c.vectors,
            feedback: c.feedback,
            jobs: c.jobs,
            documents: c.documents,
            chunks: c.chunks,
            vault_memories: c.vault_memories,
            citations: c.citations,
        }
    }
}

/// An erasure as recorded: no personal data (the scope only as a hash).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Erasure {
    pub id: Uuid,
    pub workspace_id: Uuid,
    /// `scope` or `memory`.
    pub kind: String,
    /// Hex SHA-256 of `"<workspaceId>:<scope>"`: given a scope, an operator can tell whether
    /// it was erased.
    pub scope_hash: String,
    /// The memory id the erasure named (`memory` erasures; any version of the chain).
    pub memory_id: Option<Uuid>,
    /// `user` or `key`.
    pub by_kind: String,
    /// The user's or the API key's id.
    pub by_id: Uuid,
    pub erased: ErasedCounts,
    pub at: DateTime<Utc>,
}

impl From<ErasureRecord> for Erasure {
    fn from(r: ErasureRecord) -> Self {
        let (by_kind, by_id) = match r.by {
            Eraser::User(id) => ("user", id),
            Eraser::Key(id) => ("key", id),
        };
        Erasure {
            id: r.id,
            workspace_id: r.workspace_id,
            kind: r.kind,
            scope_hash: r.scope_hash,
            memory_id: r.memory_id,
            by_kind: by_kind.to_string(),
            by_id,
            erased: r.counts.into(),
            at: r.at,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErasureList {
    pub erasures: Vec<Erasure>,
    pub total: i64,
    pub has_more: bool,
}

#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ErasureListParams {
    /// 1 to 100, default 20.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// 0 or more, default 0.
    #[param(minimum = 0, maximum = 2147483647)]
    pub offset: Option<i64>,
}

/// Erases an end user: every memory of the scope (all versions), its vectors, feedback and
/// long-note jobs, and every vault document of the scope with its stored bytes, chunks and
/// extracted memories. Owners and admins. The scope is usable again at once.
#[utoipa::path(delete, path = "/api/scopes/{scope}", tag = "erasure",
    params(("scope" = String, Path, description = "the scope to erase (1 to 200 characters)"), WorkspaceParam),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "erased; what was removed", body = Erasure),
        (status = 400, description = "invalid scope or workspaceId", body = ErrorBody),
        (status = 401, description = "not signed in or invalid API key", body = ErrorBody),
        (status = 403, description = "not an owner or admin of the workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody)))]
pub async fn erase_scope(
    State(state): State<AppState>,
    who: Principal,
    Path(scope): Path<String>,
    ApiQuery(params): ApiQuery<WorkspaceParam>,
) -> Result<Json<Erasure>, Error> {
    let record = state
        .erasure
        .erase_scope(&who, params.workspace_id, &scope)
        .await?;
    Ok(Json(record.into()))
}

/// Erases one memory for good: every version of its chain (deleted ones included), their
/// vectors and feedback, and the text of the finished note it was split from.
#[utoipa::path(post, path = "/api/memories/{id}/erase", tag = "erasure",
    params(("id" = String, Path, description = "memory id (any version of the chain)"), ScopeParams),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "erased; what was removed", body = Erasure),
        (status = 401, description = "not signed in or invalid API key", body = ErrorBody),
        (status = 403, description = "the role may not write", body = ErrorBody),
        (status = 404, description = "no such memory in this workspace and scope", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody)))]
pub async fn erase_memory(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    ApiQuery(params): ApiQuery<ScopeParams>,
) -> Result<Json<Erasure>, Error> {
    let record = state
        .erasure
        .erase_memory(&who, params.workspace_id, params.scope.as_deref(), &id)
        .await?;
    Ok(Json(record.into()))
}

/// The workspace's erasures, newest first. Owners.
#[utoipa::path(get, path = "/api/workspaces/{workspaceId}/erasures", tag = "erasure",
    params(("workspaceId" = Uuid, Path, description = "workspace id"), ErasureListParams),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "the erasure log", body = ErasureList),
        (status = 400, description = "invalid limit or offset", body = ErrorBody),
        (status = 401, description = "not signed in or invalid API key", body = ErrorBody),
        (status = 403, description = "not an owner of the workspace", body = ErrorBody)))]
pub async fn erasures(
    State(state): State<AppState>,
    who: Principal,
    Path(workspace_id): Path<String>,
    ApiQuery(params): ApiQuery<ErasureListParams>,
) -> Result<Json<ErasureList>, Error> {
    let workspace_id = Uuid::parse_str(&workspace_id)
        .map_err(|_| Error::NotFound("workspace not found".to_string()))?;
    let offset = params.offset.unwrap_or(0);
    let (records, total) = state
        .erasure
        .erasures(&who, workspace_id, params.limit, params.offset)
        .await?;
    let has_more = offset + (records.len() as i64) < total;
    Ok(Json(ErasureList {
        erasures: records.into_iter().map(Erasure::from).collect(),
        total,
        has_more,
    }))
}

/// Downloads a scope's memories (every live version, oldest first) as JSON lines, the format
/// `memvault admin import` reads: what an end user gets before their data is erased. Owners.
#[utoipa::path(get, path = "/api/scopes/{scope}/export", tag = "erasure",
    params(("scope" = String, Path, description = "the scope to export"), WorkspaceParam),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "one memory per line", content_type = "application/x-ndjson", body = String),
        (status = 400, description = "invalid scope or workspaceId", body = ErrorBody),
        (status = 401, description = "not signed in or invalid API key", body = ErrorBody),
        (status = 403, description = "not an owner of the workspace", body = ErrorBody)))]
pub async fn export_scope(
    State(state): State<AppState>,
    who: Principal,
    Path(scope): Path<String>,
    ApiQuery(params): ApiQuery<WorkspaceParam>,
) -> Result<Response, Error> {
    let lines = state
        .erasure
        .export_scope(&who, params.workspace_id, &scope)
        .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"memories.jsonl\"",
            ),
        ],
        Body::from_stream(lines.map_ok(axum::body::Bytes::from)),
    )
        .into_response())
}
