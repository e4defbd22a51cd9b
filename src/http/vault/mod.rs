//! Context Vault handlers: extract, parse the request and call the vault service
//! ([`calls`]), answer the view ([`dto`]).

use axum::extract::{FromRequest, Multipart, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::accounts::dto::WorkspaceParam;
use super::error::ErrorBody;
use super::extract::{ApiJson, ApiQuery, OptionalJson};
use super::{AppState, Success, DONE};
use crate::error::Error;
use crate::services::vault::UploadInput;
use crate::services::Principal;

pub mod calls;
pub mod dto;

use dto::{
    BrowseParams, CompanyFactCreated, CreateCompanyFact, CreateDocument, CreateVault,
    DocumentAccepted, DocumentAt, DocumentDeleted, DocumentDetail, DocumentList, DocumentMemories,
    DocumentMemoriesParams, VaultCreated, VaultFeedbackInput, VaultList, VaultMemoryList,
    VaultParams, VaultSearchParams, VaultSearchResults,
};

/// The vaults of the workspace (the default one is made on first use).
#[utoipa::path(get, path = "/api/context-vault/vaults", tag = "context vault", params(WorkspaceParam),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "the vaults, oldest first", body = VaultList),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody),
        (status = 500, description = "server error (with errorId)", body = ErrorBody)))]
pub async fn list_vaults(
    State(state): State<AppState>,
    who: Principal,
    ApiQuery(params): ApiQuery<WorkspaceParam>,
) -> Result<Json<VaultList>, Error> {
    Ok(Json(
        calls::list_vaults(&state.vault, &who, params.workspace_id).await?,
    ))
}

/// Creates a named vault.
#[utoipa::path(post, path = "/api/context-vault/vaults", tag = "context vault", request_body = CreateVault,
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 201, description = "created", body = VaultCreated),
        (status = 400, description = "invalid field (named in `error`)", body = ErrorBody),
        (status = 409, description = "a vault of that name exists", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody),
        (status = 500, description = "server error (with errorId)", body = ErrorBody)))]
pub async fn create_vault(
    State(state): State<AppState>,
    who: Principal,
    ApiJson(input): ApiJson<CreateVault>,
) -> Result<(StatusCode, Json<VaultCreated>), Error> {
    Ok((
        StatusCode::CREATED,
        Json(calls::create_vault(&state.vault, &who, input).await?),
    ))
}

/// The multipart form of an upload, as the OpenAPI document states it (the handler reads the
/// parts one by one; unknown parts are ignored).
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct UploadForm {
    /// The document: PDF, DOCX, XLSX, XLS, ODS, CSV, HTML, Markdown, text or an image (PNG,
    /// JPEG, WebP, TIFF); at most `max_upload_bytes` (25 MiB by default).
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    #[schema(value_type = uuid::Uuid, required = false)]
    workspace_id: Option<uuid::Uuid>,
    #[schema(value_type = uuid::Uuid, required = false)]
    vault_id: Option<uuid::Uuid>,
    /// At most 300 characters; defaults to the file name.
    #[schema(value_type = String, required = false, max_length = 300)]
    title: Option<String>,
    /// The file's kind when its name does not say (`pdf`, `docx`, `md`, `png`, ...).
    #[schema(value_type = String, required = false)]
    source_type: Option<String>,
    /// Text already extracted by the client, used instead of parsing the file.
    #[schema(value_type = String, required = false)]
    extracted_text: Option<String>,
    #[schema(value_type = String, required = false, max_length = 200)]
    scope: Option<String>,
    #[schema(value_type = String, required = false, max_length = 100)]
    project: Option<String>,
}

/// Uploads a file (multipart: `file`, `title`, `sourceType`, `extractedText`, `vaultId`,
/// `scope`, `project`, `workspaceId`). The file is stored before the 202; processing runs in
/// the background.
#[utoipa::path(post, path = "/api/context-vault/documents/upload", tag = "context vault",
    request_body(content_type = "multipart/form-data", content = UploadForm, description = "the file and its fields"),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 404, description = "the vault (`vaultId`) does not exist in this workspace", body = ErrorBody),
        (status = 202, description = "accepted", body = DocumentAccepted),
        (status = 400, description = "invalid field (named in `error`)", body = ErrorBody),
        (status = 413, description = "file over the upload limit (25 MiB by default)", body = ErrorBody),
        (status = 415, description = "unsupported file type", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody),
        (status = 500, description = "server error (with errorId)", body = ErrorBody)))]
pub async fn upload(
    State(state): State<AppState>,
    who: Principal,
    request: axum::extract::Request,
) -> Result<(StatusCode, Json<DocumentAccepted>), Error> {
    // Before a byte of the body is read: an upload slot, then who may write where, and the
    // rate limit, so that no one makes the server buffer 25 MB it would refuse.
    let _slot = state
        .uploads
        .clone()
        .try_acquire_owned()
        .map_err(|_| Error::Busy {
            message: "too many uploads in progress (setting http.max_uploads); retry shortly"
                .to_string(),
            retry_after: 2,
        })?;
    let ticket = state.vault.begin_upload(&who).await?;
    let mut form = Multipart::from_request(request, &state)
        .await
        .map_err(|rejection| {
            Error::BadRequest(format!(
                "expected a multipart form: {}",
                rejection.body_text()
            ))
        })?;
    let mut input = UploadInput::default();
    while let Some(field) = form.next_field().await.map_err(multipart_error)? {
        let name = field.name().unwrap_or_default().to_string();
        if name == "file" {
            input.file_name = field.file_name().map(str::to_string);
            input.content_type = field.content_type().map(str::to_string);
            input.file = Some(field.bytes().await.map_err(multipart_error)?.to_vec());
            continue;
        }
        let text = field.text().await.map_err(multipart_error)?;
        match name.as_str() {
            "workspaceId" => input.workspace_id = Some(text),
            "vaultId" => input.vault_id = Some(text),
            "title" => input.title = Some(text),
            "sourceType" => input.source_type = Some(text),
            "extractedText" => input.extracted_text = Some(text),
            "scope" => input.scope = Some(text),
            "project" => input.project = Some(text),
            // Unknown parts are ignored, as unknown JSON fields are.
            _ => {}
        }
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(calls::upload(&state.vault, &who, ticket, input).await?),
    ))
}

fn multipart_error(error: axum::extract::multipart::MultipartError) -> Error {
    if super::extract::body_timed_out(&error) {
        Error::BodyTimeout
    } else if error.status() == StatusCode::PAYLOAD_TOO_LARGE {
        Error::PayloadTooLarge
    } else {
        Error::BadRequest(format!(
            "could not read the multipart body: {}",
            error.body_text()
        ))
    }
}

/// Queues a text document (`sourceType` `text` or `markdown`, with `content`) or a URL
/// (`url` or `remote_file`, with `url`; fetched now, stored before the 202).
#[utoipa::path(post, path = "/api/context-vault/documents", tag = "context vault", request_body = CreateDocument,
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 404, description = "the vault (`vaultId`) does not exist in this workspace", body = ErrorBody),
        (status = 202, description = "accepted", body = DocumentAccepted),
        (status = 400, description = "invalid field (named in `error`), or the URL was refused or could not be fetched", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody),
        (status = 500, description = "server error (with errorId)", body = ErrorBody)))]
pub async fn create_document(
    State(state): State<AppState>,
    who: Principal,
    ApiJson(input): ApiJson<CreateDocument>,
) -> Result<(StatusCode, Json<DocumentAccepted>), Error> {
    Ok((
        StatusCode::ACCEPTED,
        Json(calls::create_document(&state.vault, &who, input).await?),
    ))
}

/// The documents of a vault, newest first.
#[utoipa::path(get, path = "/api/context-vault/documents", tag = "context vault", params(VaultParams),
    security(("api_key" = []), ("session" = [])),
    responses((status = 200, description = "documents", body = DocumentList),
        (status = 404, description = "the vault (`vaultId`) does not exist in this workspace", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody),
        (status = 500, description = "server error (with errorId)", body = ErrorBody)))]
pub async fn list_documents(
    State(state): State<AppState>,
    who: Principal,
    ApiQuery(params): ApiQuery<VaultParams>,
) -> Result<Json<DocumentList>, Error> {
    Ok(Json(
        calls::list_documents(&state.vault, &who, params).await?,
    ))
}

/// A document: status, phase, progress, attempts, error, and its status history.
#[utoipa::path(get, path = "/api/context-vault/documents/{id}", tag = "context vault", params(DocumentAt),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "the document", body = DocumentDetail),
        (status = 404, description = "no such document in this workspace", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody),
        (status = 500, description = "server error (with errorId)", body = ErrorBody)))]
pub async fn get_document(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    ApiQuery(params): ApiQuery<DocumentAt>,
) -> Result<Json<DocumentDetail>, Error> {
    Ok(Json(
        calls::document(&state.vault, &who, &id, params).await?,
    ))
}

/// Deletes a document, its chunks and citations. Memories cited only by it are deleted; those
/// also cited by another document are kept.
#[utoipa::path(delete, path = "/api/context-vault/documents/{id}", tag = "context vault", params(DocumentAt),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "deleted", body = DocumentDeleted),
        (status = 404, description = "no such document in this workspace", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody),
        (status = 500, description = "server error (with errorId)", body = ErrorBody)))]
pub async fn delete_document(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    ApiQuery(params): ApiQuery<DocumentAt>,
) -> Result<Json<DocumentDeleted>, Error> {
    Ok(Json(
        calls::delete_document(&state.vault, &who, &id, params).await?,
    ))
}

/// The memories extracted from a document, with their evidence.
#[utoipa::path(get, path = "/api/context-vault/documents/{id}/memories", tag = "context vault", params(DocumentMemoriesParams),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "memories", body = DocumentMemories),
        (status = 404, description = "no such document in this workspace", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody),
        (status = 500, description = "server error (with errorId)", body = ErrorBody)))]
pub async fn document_memories(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    ApiQuery(params): ApiQuery<DocumentMemoriesParams>,
) -> Result<Json<DocumentMemories>, Error> {
    Ok(Json(
        calls::document_memories(&state.vault, &who, &id, params).await?,
    ))
}

/// Stops a pending, processing or retrying document: status `cancelled`.
#[utoipa::path(post, path = "/api/context-vault/documents/{id}/cancel", tag = "context vault", params(DocumentAt),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "cancelled", body = DocumentDetail),
        (status = 404, description = "no such document", body = ErrorBody),
        (status = 409, description = "already completed, failed or cancelled", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody),
        (status = 500, description = "server error (with errorId)", body = ErrorBody)))]
pub async fn cancel_document(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    ApiQuery(params): ApiQuery<DocumentAt>,
) -> Result<Json<DocumentDetail>, Error> {
    Ok(Json(calls::cancel(&state.vault, &who, &id, params).await?))
}

/// Runs a failed or cancelled document again, from its last finished phase.
#[utoipa::path(post, path = "/api/context-vault/documents/{id}/retry", tag = "context vault", params(DocumentAt),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "queued again", body = DocumentDetail),
        (status = 404, description = "no such document", body = ErrorBody),
        (status = 409, description = "not failed or cancelled", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody),
        (status = 500, description = "server error (with errorId)", body = ErrorBody)))]
pub async fn retry_document(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    ApiQuery(params): ApiQuery<DocumentAt>,
) -> Result<Json<DocumentDetail>, Error> {
    Ok(Json(calls::retry(&state.vault, &who, &id, params).await?))
}

/// Ranked passages (`documents`), ranked memories with evidence (`memories`), or both in two
/// lists (`hybrid`). No synthesised answer.
#[utoipa::path(get, path = "/api/context-vault/search", tag = "context vault", params(VaultSearchParams),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 404, description = "the vault (`vaultId`) does not exist in this workspace", body = ErrorBody),
        (status = 200, description = "results", body = VaultSearchResults),
        (status = 400, description = "invalid parameter (named in `error`)", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody),
        (status = 500, description = "server error (with errorId)", body = ErrorBody)))]
pub async fn search(
    State(state): State<AppState>,
    who: Principal,
    ApiQuery(params): ApiQuery<VaultSearchParams>,
) -> Result<Json<VaultSearchResults>, Error> {
    Ok(Json(calls::search(&state.vault, &who, params).await?))
}

/// Browses extracted and curated memories of a vault, newest first.
#[utoipa::path(get, path = "/api/context-vault/memories", tag = "context vault", params(BrowseParams),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 404, description = "the vault (`vaultId`) does not exist in this workspace", body = ErrorBody),
        (status = 200, description = "memories", body = VaultMemoryList),
        (status = 400, description = "invalid parameter (named in `error`)", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody),
        (status = 500, description = "server error (with errorId)", body = ErrorBody)))]
pub async fn browse(
    State(state): State<AppState>,
    who: Principal,
    ApiQuery(params): ApiQuery<BrowseParams>,
) -> Result<Json<VaultMemoryList>, Error> {
    Ok(Json(calls::browse(&state.vault, &who, params).await?))
}

/// Adds a curated company fact (1 to 800 characters). An equal fact in the same scope and
/// project is returned as it is (200) instead of being stored twice.
#[utoipa::path(post, path = "/api/context-vault/memories", tag = "context vault", request_body = CreateCompanyFact,
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 404, description = "the vault (`vaultId`) does not exist in this workspace", body = ErrorBody),
        (status = 201, description = "created", body = CompanyFactCreated),
        (status = 200, description = "an equal fact already exists", body = CompanyFactCreated),
        (status = 400, description = "invalid field (named in `error`)", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody),
        (status = 500, description = "server error (with errorId)", body = ErrorBody)))]
pub async fn add_fact(
    State(state): State<AppState>,
    who: Principal,
    ApiJson(input): ApiJson<CreateCompanyFact>,
) -> Result<Response, Error> {
    let (created, new) = calls::add_fact(&state.vault, &who, input).await?;
    let status = if new {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(created)).into_response())
}

/// Rates a vault memory: `helpful`, `not_helpful`, `outdated` or `wrong` (the last two take it
/// out of search).
#[utoipa::path(post, path = "/api/context-vault/memories/{id}/feedback", tag = "context vault", request_body = VaultFeedbackInput,
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "recorded", body = Success),
        (status = 400, description = "invalid field (named in `error`)", body = ErrorBody),
        (status = 404, description = "no such vault memory", body = ErrorBody),
        (status = 401, description = "missing or invalid API key", body = ErrorBody),
        (status = 403, description = "another workspace", body = ErrorBody),
        (status = 429, description = "rate limit exceeded", body = ErrorBody),
        (status = 500, description = "server error (with errorId)", body = ErrorBody)))]
pub async fn feedback(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    OptionalJson(input): OptionalJson<VaultFeedbackInput>,
) -> Result<Json<Success>, Error> {
    calls::feedback(&state.vault, &who, &id, input).await?;
    Ok(Json(DONE))
}
