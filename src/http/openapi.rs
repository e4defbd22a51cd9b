//! The OpenAPI 3.1 document, generated from the handlers' annotations.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::error::ErrorBody;
use super::{health, memories, vault};
use crate::model::{Category, Source};
use crate::services::memories::{
    CreateMemory, FeedbackInput, ForgetInput, Graph, GraphLink, GraphMeta, GraphNode, History,
    HistoryEntry, JobAccepted, JobPart, JobView, MemoryList, MemoryListItem, MemoryView, Profile,
    SaveResult, SaveStatus, SearchHit, SearchResults, Success, UpdateMemory,
};
use crate::services::vault::{
    ChunkView, CompanyFactCreated, CreateCompanyFact, CreateDocument, CreateVault,
    DocumentAccepted, DocumentDeleted, DocumentDetail, DocumentEventView, DocumentList,
    DocumentMemories, DocumentRef, DocumentView, EvidenceView, VaultCreated, VaultFeedbackInput,
    VaultList, VaultMemoryList, VaultMemoryView, VaultSearchResults, VaultView,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "memvault",
        version = "1.1.0",
        description = "Persistent, versioned, deduplicated memory for AI applications. Every \
            response carries X-Request-Id; every error is {error, code, requestId} (+ errorId on \
            5xx). `scope` is a hard isolation boundary: omitted, it selects the unscoped lane."
    ),
    paths(
        memories::create, memories::list, memories::search, memories::profile, memories::graph,
        memories::job, memories::get,
        memories::update, memories::delete, memories::forget, memories::history,
        memories::feedback,
        vault::list_vaults, vault::create_vault, vault::upload, vault::create_document,
        vault::list_documents, vault::get_document, vault::delete_document,
        vault::document_memories, vault::cancel_document, vault::retry_document, vault::search,
        vault::browse, vault::add_fact, vault::feedback,
        health::healthz, health::readyz,
    ),
    components(schemas(
        ErrorBody, CreateMemory, UpdateMemory, FeedbackInput, ForgetInput, MemoryView,
        MemoryListItem, MemoryList, SaveResult, SaveStatus, History, HistoryEntry, Success,
        Category, Source, SearchHit, SearchResults, JobAccepted, JobView, JobPart, Profile,
        Graph, GraphNode, GraphLink, GraphMeta,
        health::Health, health::Readiness,
        ChunkView, CompanyFactCreated, CreateCompanyFact, CreateDocument, CreateVault,
        DocumentAccepted, DocumentDeleted, DocumentDetail, DocumentEventView, DocumentList,
        DocumentMemories, DocumentRef, DocumentView, EvidenceView, VaultCreated,
        VaultFeedbackInput, VaultList, VaultMemoryList, VaultMemoryView, VaultSearchResults,
        VaultView,
    )),
    modifiers(&ApiKeyScheme),
    tags(
        (name = "memories", description = "save, search, list, read, version, forget and rate memories"),
        (name = "context vault", description = "documents (parse, OCR, chunk, embed, extract), cited memories, curated facts and retrieval"),
        (name = "operations", description = "health and readiness"),
    )
)]
pub struct ApiDoc;

struct ApiKeyScheme;

impl Modify for ApiKeyScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-API-Key",
                "a workspace API key, mc_...",
            ))),
        );
    }
}

pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}
