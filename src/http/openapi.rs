//! The OpenAPI 3.1 document, generated from the handlers' annotations.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::error::ErrorBody;
use super::{accounts, billing, health, memories, vault};
use crate::model::accounts::{Role, SubscriptionStatus};
use crate::model::{Category, Source};
use crate::services::accounts::{
    ApiKeyCreated, ApiKeyList, ApiKeyView, ChangeRole, CreateApiKey, CreateInvitation,
    CreateWorkspace, InvitationAccepted, InvitationCreated, InvitationView, MemberChanged,
    MemberView, SessionInfo, SessionView, SignIn, SignUp, Team, TeamMember, UserView,
    WorkspaceCreated, WorkspaceList, WorkspaceView,
};
use crate::services::billing::{
    ChangePlanBody, ChangePlanView, CheckoutBody, CheckoutView, PortalBody, PortalView,
    SubscriptionView, WebhookAnswer,
};
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
        accounts::sign_up, accounts::sign_in, accounts::sign_out, accounts::session,
        accounts::list_workspaces, accounts::create_workspace, accounts::team,
        accounts::change_role, accounts::remove_member, accounts::invite,
        accounts::revoke_invitation, accounts::accept_invitation, accounts::list_keys,
        accounts::create_key, accounts::revoke_key,
        billing::current, billing::checkout, billing::portal, billing::change_plan,
        billing::webhook,
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
        Role, ApiKeyCreated, ApiKeyList, ApiKeyView, ChangeRole, CreateApiKey, CreateInvitation,
        CreateWorkspace, InvitationAccepted, InvitationCreated, InvitationView, MemberChanged,
        MemberView, SessionInfo, SessionView, SignIn, SignUp, Team, TeamMember, UserView,
        WorkspaceCreated, WorkspaceList, WorkspaceView,
        SubscriptionStatus, SubscriptionView, CheckoutBody, CheckoutView, PortalBody, PortalView,
        ChangePlanBody, ChangePlanView, WebhookAnswer,
    )),
    modifiers(&ApiKeyScheme, &AuthenticatedResponses),
    tags(
        (name = "memories", description = "save, search, list, read, version, forget and rate memories"),
        (name = "context vault", description = "documents (parse, OCR, chunk, embed, extract), cited memories, curated facts and retrieval"),
        (name = "accounts", description = "sign-up, sign-in, sign-out and the session cookie"),
        (name = "workspaces", description = "workspaces, members and roles, invitations, API keys"),
        (name = "subscription", description = "plan and usage, checkout, billing portal, plan changes, the provider's webhook"),
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
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                "memvault.session_token",
                "the dashboard's session cookie (sign in at /api/auth/sign-in); requests that \
                 change something must carry this server's Origin",
            ))),
        );
    }
}

/// Every authenticated operation can answer 401 (no or a bad key or session) and 429 (its
/// rate-limit window is full): added once here rather than on every handler.
struct AuthenticatedResponses;

impl Modify for AuthenticatedResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
        let error = |description: &str| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build()
        };
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ];
            for operation in operations.into_iter().flatten() {
                let secured = operation.security.as_ref().is_some_and(|s| !s.is_empty());
                if !secured {
                    continue;
                }
                let responses = &mut operation.responses.responses;
                responses
                    .entry("401".to_string())
                    .or_insert_with(|| error("no valid API key or session").into());
                responses
                    .entry("429".to_string())
                    .or_insert_with(|| error("rate limit exceeded").into());
            }
        }
    }
}

pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}
