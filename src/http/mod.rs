//! The HTTP adapter: routing, the envelope every response goes through, and thin handlers that
//! call the services.

pub mod accounts;
pub mod billing;
pub mod cluster;
pub mod dashboard;
pub mod erasure;
pub mod error;
pub mod extract;
pub mod health;
pub mod memories;
pub mod metrics;
pub mod oauth;
pub mod openapi;
pub mod serve;
pub mod vault;
pub mod web;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, Request};
use axum::routing::{delete, get, patch, post};
use axum::{middleware, Router};
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::RequestBodyDeadlineLayer;
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::Level;
use utoipa_swagger_ui::SwaggerUi;

use crate::services::vault::VaultService;
use crate::services::{AccountsService, MemoryService};
use crate::storage::Store;

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

// What the operations that only confirm answer, every subject's (no doc comment: the OpenAPI
// document shows the schema without a description).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct Success {
    pub success: bool,
}

/// `{"success": true}`.
pub const DONE: Success = Success { success: true };

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub accounts: AccountsService,
    pub memories: MemoryService,
    pub vault: Arc<VaultService>,
    pub erasure: crate::services::erasure::ErasureService,
    pub store: Arc<dyn Store>,
    pub web: web::WebConfig,
    pub billing: Arc<crate::services::billing::BillingService>,
    pub oauth: crate::services::oauth::OAuthService,
    /// Upload bodies read at once (`http.max_uploads`).
    pub uploads: Arc<tokio::sync::Semaphore>,
    /// Where the client's address comes from (`http.trusted_proxy_header`).
    pub client_addr: extract::AddressSource,
    pub metrics: MetricsState,
    /// The supervised actors, for `/readyz`.
    pub liveness: crate::services::liveness::Liveness,
    /// In a cluster: this node's membership and how it reaches the others.
    pub cluster: Option<cluster::ClusterRouting>,
}

/// The server's metrics and the token `/metrics` asks for, if any.
#[derive(Clone)]
pub struct MetricsState {
    pub metrics: Arc<crate::metrics::Metrics>,
    pub token: Option<String>,
}

/// Body limits and the body timeout.
#[derive(Debug, Clone)]
pub struct BodyLimits {
    pub max_body_bytes: usize,
    pub max_upload_bytes: usize,
    /// A request body's deadline from when it is first read.
    pub body_timeout: std::time::Duration,
    /// The same for uploads.
    pub upload_timeout: std::time::Duration,
}

/// A client's `X-Request-Id` is kept only when short and plain (letters, digits, `-_.:`, at
/// most 64): anything else is dropped, and the server makes its own.
fn drop_unfit_request_id<B>(mut request: Request<B>) -> Request<B> {
    let fit = |value: &axum::http::HeaderValue| {
        let bytes = value.as_bytes();
        !bytes.is_empty()
            && bytes.len() <= 64
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(b))
    };
    let values: Vec<_> = request.headers().get_all(&REQUEST_ID).iter().collect();
    if values.len() != 1 || !fit(values[0]) {
        request.headers_mut().remove(&REQUEST_ID);
    }
    request
}

/// No HTML page of this server may be framed by another site (clickjacking of the consent,
/// sign-in and billing pages): `frame-ancestors 'none'` unless the page set its own policy.
async fn no_framing<B>(mut response: axum::http::Response<B>) -> axum::http::Response<B> {
    use axum::http::{header, HeaderValue};
    let html = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    if html {
        let headers = response.headers_mut();
        if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
            headers.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static("frame-ancestors 'none'"),
            );
        }
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    response
}

/// A path as it may be logged: invitation tokens (a secret that grants membership) are
/// replaced by `{token}`, and control characters dropped.
pub fn loggable_path(path: &str) -> String {
    let mut segments: Vec<&str> = path.split('/').collect();
    // "", "api", "invitations", TOKEN, "accept"  /  "", "app", "invitations", TOKEN
    let secret = matches!(
        segments.as_slice(),
        ["", "api", "invitations", _, ..] | ["", "app", "invitations", _, ..]
    );
    if secret {
        segments[3] = "{token}";
    }
    crate::loggable::loggable(&segments.join("/"))
}

/// The API routes, without layers.
fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(oauth::resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(oauth::resource_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(oauth::server_metadata),
        )
        .route("/oauth/register", post(oauth::register))
        .route(
            "/oauth/authorize",
            get(oauth::authorize_page).post(oauth::authorize_decision),
        )
        .route("/oauth/sign-in", post(oauth::sign_in))
        .route("/oauth/token", post(oauth::token))
        .route("/oauth/revoke", post(oauth::revoke))
        .route("/api/subscription/current", get(billing::current))
        .route("/api/subscription/checkout", post(billing::checkout))
        .route("/api/subscription/portal", post(billing::portal))
        .route("/api/subscription/change-plan", post(billing::change_plan))
        .route("/api/webhooks/billing", post(billing::webhook))
        .route("/billing/checkout/{id}", get(billing::checkout_form))
        .route(
            "/billing/checkout/{id}/confirm",
            post(billing::checkout_confirm),
        )
        .route("/billing/portal/{workspace_id}", get(billing::portal_page))
        .route(
            "/billing/portal/{workspace_id}/plan",
            post(billing::portal_change),
        )
        .route("/", get(dashboard::root))
        .route("/app", get(dashboard::root))
        .route("/app/", get(dashboard::index))
        .route("/app/assets/{*file}", get(dashboard::asset))
        .route("/app/{*rest}", get(dashboard::index))
        .route("/api/auth/sign-up", post(accounts::sign_up))
        .route("/api/auth/sign-in", post(accounts::sign_in))
        .route("/api/auth/sign-out", post(accounts::sign_out))
        .route("/api/auth/session", get(accounts::session))
        .route(
            "/api/workspaces",
            get(accounts::list_workspaces).post(accounts::create_workspace),
        )
        .route("/api/workspaces/{workspace_id}/team", get(accounts::team))
        .route(
            "/api/workspaces/{workspace_id}/members/{member_id}",
            patch(accounts::change_role).delete(accounts::remove_member),
        )
        .route(
            "/api/workspaces/{workspace_id}/invitations",
            post(accounts::invite),
        )
        .route(
            "/api/workspaces/{workspace_id}/invitations/{invitation_id}",
            delete(accounts::revoke_invitation),
        )
        .route(
            "/api/invitations/{token}/accept",
            post(accounts::accept_invitation),
        )
        .route(
            "/api/workspaces/{workspace_id}/api-keys",
            get(accounts::list_keys).post(accounts::create_key),
        )
        .route(
            "/api/workspaces/{workspace_id}/api-keys/{key_id}",
            delete(accounts::revoke_key),
        )
        .route(
            "/api/context-vault/vaults",
            get(vault::list_vaults).post(vault::create_vault),
        )
        .route(
            "/api/context-vault/documents",
            get(vault::list_documents).post(vault::create_document),
        )
        .route(
            "/api/context-vault/documents/{id}",
            get(vault::get_document).delete(vault::delete_document),
        )
        .route(
            "/api/context-vault/documents/{id}/memories",
            get(vault::document_memories),
        )
        .route(
            "/api/context-vault/documents/{id}/cancel",
            post(vault::cancel_document),
        )
        .route(
            "/api/context-vault/documents/{id}/retry",
            post(vault::retry_document),
        )
        .route("/api/context-vault/search", get(vault::search))
        .route(
            "/api/context-vault/memories",
            get(vault::browse).post(vault::add_fact),
        )
        .route(
            "/api/context-vault/memories/{id}/feedback",
            post(vault::feedback),
        )
        .route("/api/memories", get(memories::list).post(memories::create))
        .route("/api/memories/search", get(memories::search))
        .route("/api/memories/profile", get(memories::profile))
        .route("/api/memories/graph", get(memories::graph))
        .route("/api/memories/jobs/{job_id}", get(memories::job))
        .route(
            "/api/memories/{id}",
            get(memories::get)
                .patch(memories::update)
                .delete(memories::delete),
        )
        .route("/api/memories/{id}/forget", post(memories::forget))
        .route("/api/memories/{id}/erase", post(erasure::erase_memory))
        .route("/api/scopes/{scope}", delete(erasure::erase_scope))
        .route("/api/scopes/{scope}/export", get(erasure::export_scope))
        .route(
            "/api/workspaces/{workspace_id}/erasures",
            get(erasure::erasures),
        )
        .route("/api/memories/{id}/history", get(memories::history))
        .route("/api/memories/{id}/feedback", post(memories::feedback))
        .route("/healthz", get(health::healthz))
        .route("/metrics", get(metrics::scrape))
        .route("/readyz", get(health::readyz))
}

/// The whole application: routes (plus `extra`, which tests use), the API reference, and the
/// layers every request passes through, outermost first: request id, tracing span, request id
/// echoed on the response, the error envelope and rate-limit headers, panic catching, the body
/// limit.
pub fn app(state: AppState, limits: BodyLimits, extra: Router<AppState>) -> Router {
    let docs = SwaggerUi::new("/api/docs").url("/api/openapi.json", openapi::document());
    let routing = state.clone();
    Router::new()
        .merge(routes())
        .merge(extra)
        // Every body must have arrived by this deadline, however it trickles.
        .layer(RequestBodyDeadlineLayer::new(limits.body_timeout))
        // An upload may be as large as the upload limit (plus its form fields), and has
        // longer to arrive.
        .route(
            "/api/context-vault/documents/upload",
            post(vault::upload).layer(
                ServiceBuilder::new()
                    .layer(RequestBodyDeadlineLayer::new(limits.upload_timeout))
                    .layer(DefaultBodyLimit::max(limits.max_upload_bytes + 64 * 1024)),
            ),
        )
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .layer(middleware::from_fn(refuse_empty_query))
        // After routing, so that the route template is known.
        .layer(middleware::from_fn_with_state(
            state.clone(),
            metrics::record,
        ))
        .with_state(state)
        .merge(docs)
        .layer(
            ServiceBuilder::new()
                .map_request(drop_unfit_request_id)
                .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(|request: &Request<_>| {
                            let request_id = request
                                .headers()
                                .get(REQUEST_ID)
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or_default();
                            tracing::info_span!(
                                "request",
                                method = %request.method(),
                                path = %loggable_path(request.uri().path()),
                                request_id,
                            )
                        })
                        .on_response(
                            DefaultOnResponse::new()
                                .level(Level::INFO)
                                .latency_unit(tower_http::LatencyUnit::Micros),
                        ),
                )
                .layer(PropagateRequestIdLayer::new(REQUEST_ID))
                .layer(middleware::from_fn(error::envelope))
                // Inside the envelope: a forwarded answer passes through untouched (KeepBody),
                // this node's own refusals get the error body.
                .layer(middleware::from_fn_with_state(routing, cluster::route))
                .layer(middleware::map_response(no_framing))
                .layer(CatchPanicLayer::custom(error::PanicResponse))
                .layer(DefaultBodyLimit::max(limits.max_body_bytes)),
        )
}

/// An empty query parameter (`limit=`, or a bare `limit`) of the REST API is refused with 400
/// naming it: omit a parameter to leave it unset (docs/API.md). The OpenAPI document says so
/// (every string query parameter has `minLength: 1`). OAuth's endpoints keep RFC 6749's rule
/// (an empty parameter counts as omitted), so they are not checked here.
async fn refuse_empty_query(
    request: axum::extract::Request,
    next: middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if request.uri().path().starts_with("/api/") {
        if let Some(name) = request.uri().query().and_then(first_empty_parameter) {
            return crate::error::Error::validation(
                name,
                "must not be empty (omit the parameter to leave it unset)",
            )
            .into_response();
        }
    }
    next.run(request).await
}

/// The name of the first parameter of `query` without a value, decoded.
fn first_empty_parameter(query: &str) -> Option<String> {
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(_, value)| value.is_empty())
        .map(|(name, _)| crate::loggable::loggable_up_to(&name, 64))
}

#[cfg(test)]
mod tests {
    use super::{first_empty_parameter, loggable_path};

    #[test]
    fn the_first_empty_query_parameter_is_named() {
        assert_eq!(
            first_empty_parameter("limit=&scope=a").as_deref(),
            Some("limit")
        );
        assert_eq!(
            first_empty_parameter("scope=a&offset").as_deref(),
            Some("offset")
        );
        assert_eq!(first_empty_parameter("a%20b=").as_deref(), Some("a b"));
        assert_eq!(first_empty_parameter("limit=5&scope=a"), None);
        assert_eq!(first_empty_parameter("limit=5&"), None);
        assert_eq!(first_empty_parameter("q=a%3Db"), None);
    }

    #[test]
    fn invitation_tokens_are_redacted_from_logged_paths() {
        assert_eq!(
            loggable_path("/api/invitations/s3cr3t/accept"),
            "/api/invitations/{token}/accept"
        );
        assert_eq!(
            loggable_path("/app/invitations/s3cr3t"),
            "/app/invitations/{token}"
        );
        assert_eq!(loggable_path("/api/memories/abc"), "/api/memories/abc");
        assert_eq!(loggable_path("/api/invitations"), "/api/invitations");
    }
}
