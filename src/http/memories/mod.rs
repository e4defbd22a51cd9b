//! Memory handlers: extract, parse the request and call
//! [`MemoryService`](crate::services::MemoryService) ([`calls`]), answer the view ([`dto`]).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::accounts::dto::WorkspaceParam;
use super::error::ErrorBody;
use super::extract::{ApiJson, ApiQuery, OptionalJson};
use super::AppState;
use crate::error::Error;
use crate::services::Principal;

pub mod calls;
pub mod dto;

use super::Success;
use dto::{
    CreateMemory, FeedbackInput, ForgetInput, Graph, GraphParams, History, JobAccepted, JobView,
    ListParams, MemoryList, MemoryView, Profile, ProfileParams, SaveAnswer, SaveResult,
    ScopeParams, SearchParams, SearchResults, UpdateMemory,
};

/// Saves a memory. An exact or near duplicate (same scope and project) returns the existing
/// memory with status `duplicate`; a memory that updates a fact (or names it in `supersedes`)
/// is stored as the next version of that memory, status `superseded`. A note longer than
/// 1,000 characters is accepted (202) and split into atomic memories by a job.
#[utoipa::path(post, path = "/api/memories", tag = "memories", request_body = CreateMemory,
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 201, description = "saved (or an existing duplicate)", body = SaveResult,
            headers(("X-RateLimit-Limit" = u32), ("X-RateLimit-Remaining" = u32), ("X-RateLimit-Reset" = i64))),
        (status = 202, description = "a long note, accepted as a job", body = JobAccepted),
        (status = 400, description = "invalid field (named in `error`) or malformed JSON", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "memory limit of the plan reached, or another workspace", body = ErrorBody),
        (status = 404, description = "the memory to supersede is not in this scope", body = ErrorBody),
        (status = 409, description = "the memory to supersede is no longer current", body = ErrorBody),
        (status = 413, description = "body over 50 KB", body = ErrorBody),
        (status = 415, description = "body is not application/json", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody),
        (status = 500, description = "server error (with errorId)", body = ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    who: Principal,
    ApiJson(input): ApiJson<CreateMemory>,
) -> Result<Response, Error> {
    Ok(match calls::create(&state.memories, &who, input).await? {
        SaveAnswer::Saved(saved) => (StatusCode::CREATED, Json(saved)).into_response(),
        SaveAnswer::Accepted(job) => (StatusCode::ACCEPTED, Json(job)).into_response(),
    })
}

/// Searches current memories of one scope by meaning and by keywords (hybrid), best first.
/// Deleted, superseded, expired and `wrong`-rated memories are never returned.
#[utoipa::path(get, path = "/api/memories/search", tag = "memories", params(SearchParams),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "ranked memories with a score in [0, 1]", body = SearchResults,
            headers(("X-RateLimit-Limit" = u32), ("X-RateLimit-Remaining" = u32), ("X-RateLimit-Reset" = i64))),
        (status = 400, description = "invalid parameter (named in `error`)", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody),
        (status = 500, description = "server error (with errorId)", body = ErrorBody)))]
pub async fn search(
    State(state): State<AppState>,
    who: Principal,
    ApiQuery(params): ApiQuery<SearchParams>,
) -> Result<Json<SearchResults>, Error> {
    Ok(Json(calls::search(&state.memories, &who, params).await?))
}

/// Stable preferences and facts (`static`) and the context and decisions of the last 14 days
/// (`dynamic`) of one scope, optionally one project. Cached until the next write in the scope.
#[utoipa::path(get, path = "/api/memories/profile", tag = "memories", params(ProfileParams),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "the profile", body = Profile),
        (status = 400, description = "invalid parameter (named in `error`)", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody)))]
pub async fn profile(
    State(state): State<AppState>,
    who: Principal,
    ApiQuery(params): ApiQuery<ProfileParams>,
) -> Result<Json<Profile>, Error> {
    Ok(Json(calls::profile(&state.memories, &who, params).await?))
}

/// Current memories of one scope as a graph: nodes, derived (similarity) links and relation
/// (same note, same entity) links, with exact counts.
#[utoipa::path(get, path = "/api/memories/graph", tag = "memories", params(GraphParams),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "the graph", body = Graph),
        (status = 400, description = "invalid parameter (named in `error`)", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody)))]
pub async fn graph(
    State(state): State<AppState>,
    who: Principal,
    ApiQuery(params): ApiQuery<GraphParams>,
) -> Result<Json<Graph>, Error> {
    Ok(Json(calls::graph(&state.memories, &who, params).await?))
}

/// The state of a long-note job and, once completed, the memories it made.
#[utoipa::path(get, path = "/api/memories/jobs/{jobId}", tag = "memories",
    params(("jobId" = String, Path, description = "job id from a 202 answer"), WorkspaceParam),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "the job", body = JobView),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 404, description = "no such job in this workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody)))]
pub async fn job(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    ApiQuery(params): ApiQuery<WorkspaceParam>,
) -> Result<Json<JobView>, Error> {
    Ok(Json(
        calls::job(&state.memories, &who, &id, params.workspace_id).await?,
    ))
}

/// Lists current, non-deleted, non-expired memories of one scope, newest first.
#[utoipa::path(get, path = "/api/memories", tag = "memories", params(ListParams),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "a page of memories", body = MemoryList),
        (status = 400, description = "invalid parameter (named in `error`)", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    who: Principal,
    ApiQuery(params): ApiQuery<ListParams>,
) -> Result<Json<MemoryList>, Error> {
    Ok(Json(calls::list(&state.memories, &who, params).await?))
}

/// Reads one memory (any live version) of the given scope.
#[utoipa::path(get, path = "/api/memories/{id}", tag = "memories",
    params(("id" = String, Path, description = "memory id"), ScopeParams),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "the memory", body = MemoryView),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 404, description = "no such memory in this workspace and scope", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    ApiQuery(params): ApiQuery<ScopeParams>,
) -> Result<Json<MemoryView>, Error> {
    Ok(Json(calls::get(&state.memories, &who, &id, params).await?))
}

/// Updates the current version of a memory: a new `content` makes the next version; other
/// fields are edited in place. Returns the memory as it now is.
#[utoipa::path(patch, path = "/api/memories/{id}", tag = "memories", request_body = UpdateMemory,
    params(("id" = String, Path, description = "memory id"), ScopeParams),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "the updated memory (a new version when content changed)", body = MemoryView),
        (status = 400, description = "invalid field (named in `error`)", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 404, description = "no such memory in this workspace and scope", body = ErrorBody),
        (status = 409, description = "not the current version, or the content duplicates another memory", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody)))]
pub async fn update(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    ApiQuery(params): ApiQuery<ScopeParams>,
    ApiJson(input): ApiJson<UpdateMemory>,
) -> Result<Json<MemoryView>, Error> {
    Ok(Json(
        calls::update(&state.memories, &who, &id, params, input).await?,
    ))
}

/// Soft-deletes one memory: it is excluded from all later retrieval.
#[utoipa::path(delete, path = "/api/memories/{id}", tag = "memories",
    params(("id" = String, Path, description = "memory id"), ScopeParams),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "deleted", body = Success),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 404, description = "no such memory in this workspace and scope", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody)))]
pub async fn delete(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    ApiQuery(params): ApiQuery<ScopeParams>,
) -> Result<Json<Success>, Error> {
    Ok(Json(
        calls::delete(&state.memories, &who, &id, params).await?,
    ))
}

/// Forgets a memory: soft-deletes its whole version chain.
#[utoipa::path(post, path = "/api/memories/{id}/forget", tag = "memories",
    request_body(content = ForgetInput, description = "optional"),
    params(("id" = String, Path, description = "memory id"), ScopeParams),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "forgotten", body = Success),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 404, description = "no such memory in this workspace and scope", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody)))]
pub async fn forget(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    ApiQuery(params): ApiQuery<ScopeParams>,
    OptionalJson(input): OptionalJson<ForgetInput>,
) -> Result<Json<Success>, Error> {
    Ok(Json(
        calls::forget(&state.memories, &who, &id, params, input).await?,
    ))
}

/// The version chain of a memory: the current version and the earlier ones, newest first.
#[utoipa::path(get, path = "/api/memories/{id}/history", tag = "memories",
    params(("id" = String, Path, description = "memory id (any version of the chain)"), ScopeParams),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "the chain", body = History),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 404, description = "no such memory in this workspace and scope", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody)))]
pub async fn history(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    ApiQuery(params): ApiQuery<ScopeParams>,
) -> Result<Json<History>, Error> {
    Ok(Json(
        calls::history(&state.memories, &who, &id, params).await?,
    ))
}

/// Rates a memory: `helpful` ranks it higher, `not_helpful` lower, `outdated` expires it now,
/// `wrong` excludes it from search and profile until its content changes.
#[utoipa::path(post, path = "/api/memories/{id}/feedback", tag = "memories", request_body = FeedbackInput,
    params(("id" = String, Path, description = "memory id"), ScopeParams),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "recorded", body = Success),
        (status = 400, description = "invalid field (named in `error`)", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 404, description = "no such memory in this workspace and scope", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody)))]
pub async fn feedback(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    ApiQuery(params): ApiQuery<ScopeParams>,
    ApiJson(input): ApiJson<FeedbackInput>,
) -> Result<Json<Success>, Error> {
    Ok(Json(
        calls::feedback(&state.memories, &who, &id, params, input).await?,
    ))
}
