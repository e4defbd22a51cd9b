//! The MCP adapter: memvault as a Model Context Protocol server at `/mcp` (streamable HTTP,
//! rmcp), mounted in the same axum router as the REST API. Like the HTTP handlers, every tool
//! is a thin call into the same services (same validation, roles, scope walls and rate
//! limits); errors come back as tool errors carrying the REST message and code.
//!
//! Authentication runs before rmcp sees the request: `Memvault-API-Key` or `X-API-Key`, else
//! 401 with `WWW-Authenticate`. The caller travels to the tools in the request's extensions.

pub mod args;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{tool, tool_handler, tool_router, ErrorData as McpError, RoleServer, ServerHandler};
use serde::Serialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::http::memories::calls;
use crate::http::memories::dto::SaveAnswer;
use crate::http::vault::calls as vault_calls;
use crate::http::AppState;
use crate::model::accounts::Scope;
use crate::model::Source;
use crate::services::memories::MemoryService;
use crate::services::vault::VaultService;
use crate::services::{Principal, RateSlot};
use args::*;

/// The MCP key header of `decisions.md` (headers are case-insensitive); `X-API-Key` works too.
pub const MCP_KEY_HEADER: &str = "memvault-api-key";
const API_KEY_HEADER: &str = "x-api-key";
/// How much of a refused request's body is read (and dropped) before answering.
const REFUSED_BODY_LIMIT: usize = 256 * 1024;

const INSTRUCTIONS: &str = "memvault keeps long-term memory for this user and the company's \
documents. Save short, self-contained memories (one fact, preference, decision or piece of \
context each) with memory_save; look things up with memory_search before answering questions \
about the user, and with vault_search for company knowledge (results carry citations). Use the \
same `scope` for one user's memories every time: it is a hard wall.";

/// What `/mcp` is built with.
#[derive(Debug, Clone)]
pub struct McpSettings {
    /// `Host` values accepted (DNS-rebinding protection).
    pub allowed_hosts: Vec<String>,
    /// Largest JSON-RPC body.
    pub max_body_bytes: usize,
}

/// The MCP server: one per session (cheap: it holds the services' handles).
#[derive(Clone)]
pub struct MemvaultMcp {
    memories: MemoryService,
    vault: Arc<VaultService>,
}

/// The routes of `/mcp`, behind key authentication.
pub fn routes(
    state: &AppState,
    settings: McpSettings,
    shutdown: CancellationToken,
) -> Router<AppState> {
    let server = MemvaultMcp {
        memories: state.memories.clone(),
        vault: state.vault.clone(),
    };
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(settings.allowed_hosts)
        .with_max_request_body_bytes(settings.max_body_bytes)
        .with_cancellation_token(shutdown);
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new()
        .nest_service("/mcp", service)
        .route_layer(middleware::from_fn(session_end_is_ok))
        .route_layer(middleware::from_fn_with_state(state.clone(), authenticate))
}

/// rmcp answers a session's end (`DELETE /mcp`) with 202; the specification leaves the success
/// status open and the official Python SDK logs a warning for anything but 200 or 204 (the
/// TypeScript SDK takes any 2xx): an ended session is answered 200.
async fn session_end_is_ok(request: Request, next: Next) -> Response {
    let ending = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    if ending && response.status() == axum::http::StatusCode::ACCEPTED {
        *response.status_mut() = axum::http::StatusCode::OK;
    }
    response
}

/// `Memvault-API-Key` or `X-API-Key`, else an OAuth access token (`Authorization: Bearer`) ->
/// the caller, in the request's extensions. A refusal points at the protected-resource
/// metadata, where a connector starts the OAuth flow.
async fn authenticate(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let headers = request.headers();
    let key = headers
        .get(MCP_KEY_HEADER)
        .or_else(|| headers.get(API_KEY_HEADER))
        .map(|v| v.to_str().unwrap_or_default().to_string());
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::to_string);
    let base = state.web.base_url(headers);
    let identity = match (key, &bearer) {
        (Some(key), _) => state.accounts.authenticate_key(Some(&key)).await,
        (None, Some(token)) => state.oauth.authenticate_bearer(token).await,
        (None, None) => Err(Error::Unauthorized(
            "missing credentials: send an API key in the Memvault-API-Key (or X-API-Key) \
             header, or an OAuth access token as Authorization: Bearer"
                .to_string(),
        )),
    };
    match identity {
        Ok(identity) => {
            let rate = request
                .extensions()
                .get::<RateSlot>()
                .cloned()
                .unwrap_or_default();
            request
                .extensions_mut()
                .insert(Principal::new(identity, rate, Source::Mcp));
            next.run(request).await
        }
        Err(error) => {
            // Read what the client sent before refusing it, so that the connection stays
            // usable: a client retries on it with credentials (the OAuth flow starts here).
            let _ = axum::body::to_bytes(request.into_body(), REFUSED_BODY_LIMIT).await;
            let mut challenge = format!(
                "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
            );
            if bearer.is_some() && error.status() == 401 {
                challenge.push_str(", error=\"invalid_token\"");
            }
            let mut response = error.into_response();
            if let Ok(value) = HeaderValue::from_str(&challenge) {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, value);
            }
            response
        }
    }
}

/// The caller the middleware put in the request, when it may use `scope` (an OAuth token
/// carries the scopes its user approved; keys are limited by their role only).
fn caller(ctx: &RequestContext<RoleServer>, scope: Scope) -> Result<Principal, Error> {
    let who = ctx
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Principal>().cloned())
        .ok_or_else(|| {
            Error::Unauthorized(
                "missing credentials: send an API key in the Memvault-API-Key header".to_string(),
            )
        })?;
    who.require_scope(scope)?;
    Ok(who)
}

/// A service answer as a tool result: readable text plus the same JSON REST returns as
/// structured content; an error as a tool error with the REST message and code.
fn answer<T: Serialize>(
    result: Result<T, Error>,
    text: impl FnOnce(&T) -> String,
) -> CallToolResult {
    match result {
        Ok(value) => {
            let summary = text(&value);
            let structured = serde_json::to_value(&value).unwrap_or_default();
            let mut result = CallToolResult::success(vec![ContentBlock::text(summary)]);
            result.structured_content = Some(structured);
            result
        }
        Err(error) => {
            if error.status() >= 500 {
                tracing::error!(%error, "mcp tool failed");
            }
            let message = error.public_message();
            let mut result = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
            result.structured_content = Some(json!({"error": message, "code": error.code()}));
            result
        }
    }
}

fn lines<I: IntoIterator<Item = String>>(header: String, items: I) -> String {
    let mut out = header;
    for item in items {
        out.push('\n');
        out.push_str(&item);
    }
    out
}

#[tool_router]
impl MemvaultMcp {
    #[tool(
        description = "Save a memory: one fact, preference, decision or piece of context about \
        the user or the work. Duplicates are recognised and a memory that updates a fact \
        replaces it (the old version stays in its history)."
    )]
    async fn memory_save(
        &self,
        Parameters(args): Parameters<SaveArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let who = caller(&ctx, Scope::MemoriesWrite)?;
            calls::create(&self.memories, &who, args.into()).await
        }
        .await;
        Ok(answer(result, |outcome| match outcome {
            SaveAnswer::Saved(saved) => format!(
                "{} memory {}: {}",
                serde_json::to_value(saved.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                saved.memory.id,
                saved.memory.content
            ),
            SaveAnswer::Accepted(job) => {
                format!("long note accepted as job {}: {}", job.job_id, job.message)
            }
        }))
    }

    #[tool(
        description = "Search the user's memories by meaning and by exact terms, best first. \
        Only current memories of the given scope come back.",
        annotations(read_only_hint = true)
    )]
    async fn memory_search(
        &self,
        Parameters(args): Parameters<SearchArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let who = caller(&ctx, Scope::MemoriesRead)?;
            calls::search(&self.memories, &who, args.into()).await
        }
        .await;
        Ok(answer(result, |found| {
            lines(
                format!("{} memories found", found.results.len()),
                found.results.iter().map(|hit| {
                    format!(
                        "- [{:.2}] {} (id {})",
                        hit.score, hit.memory.content, hit.memory.id
                    )
                }),
            )
        }))
    }

    #[tool(
        description = "List current memories of a scope, newest first, with filters and paging.",
        annotations(read_only_hint = true)
    )]
    async fn memory_list(
        &self,
        Parameters(args): Parameters<ListArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let who = caller(&ctx, Scope::MemoriesRead)?;
            calls::list(&self.memories, &who, args.into()).await
        }
        .await;
        Ok(answer(result, |list| {
            lines(
                format!("{} of {} memories", list.memories.len(), list.total),
                list.memories
                    .iter()
                    .map(|m| format!("- {} (id {})", m.content, m.id)),
            )
        }))
    }

    #[tool(
        description = "Read one memory with its version, chain and validity.",
        annotations(read_only_hint = true)
    )]
    async fn memory_get(
        &self,
        Parameters(args): Parameters<MemoryRef>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let who = caller(&ctx, Scope::MemoriesRead)?;
            calls::get(&self.memories, &who, &args.id, args.scope_params()).await
        }
        .await;
        Ok(answer(result, |m| {
            format!("{} (version {}, id {})", m.content, m.version, m.id)
        }))
    }

    #[tool(
        description = "Change a memory. New content makes a new version (the old one stays in \
        its history); category, project and validity are edited in place."
    )]
    async fn memory_update(
        &self,
        Parameters(args): Parameters<UpdateArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let (target, input) = args.split();
        let result = async {
            let who = caller(&ctx, Scope::MemoriesWrite)?;
            let (id, params) = (target.id.as_str(), target.scope_params());
            calls::update(&self.memories, &who, id, params, input).await
        }
        .await;
        Ok(answer(result, |m| {
            format!(
                "updated: {} (version {}, id {})",
                m.content, m.version, m.id
            )
        }))
    }

    #[tool(
        description = "Forget a memory and all its versions: it is never returned again.",
        annotations(destructive_hint = true)
    )]
    async fn memory_forget(
        &self,
        Parameters(args): Parameters<ForgetArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let (target, input) = args.split();
        let result = async {
            let who = caller(&ctx, Scope::MemoriesWrite)?;
            let (id, params) = (target.id.as_str(), target.scope_params());
            calls::forget(&self.memories, &who, id, params, input).await
        }
        .await;
        Ok(answer(result, |_| format!("forgot memory {}", target.id)))
    }

    #[tool(
        description = "The versions of a memory: the current one and the earlier ones it \
        replaced.",
        annotations(read_only_hint = true)
    )]
    async fn memory_history(
        &self,
        Parameters(args): Parameters<MemoryRef>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let who = caller(&ctx, Scope::MemoriesRead)?;
            calls::history(&self.memories, &who, &args.id, args.scope_params()).await
        }
        .await;
        Ok(answer(result, |h| {
            lines(
                format!("current (v{}): {}", h.current.version, h.current.content),
                h.history
                    .iter()
                    .map(|e| format!("- v{}: {}", e.version, e.content)),
            )
        }))
    }

    #[tool(
        description = "Rate a memory: helpful, not_helpful, outdated (expires it) or wrong \
        (never returned again). Ratings change what search returns."
    )]
    async fn memory_feedback(
        &self,
        Parameters(args): Parameters<FeedbackArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let (target, input) = args.split();
        let result = async {
            let who = caller(&ctx, Scope::MemoriesWrite)?;
            let (id, params) = (target.id.as_str(), target.scope_params());
            calls::feedback(&self.memories, &who, id, params, input).await
        }
        .await;
        Ok(answer(result, |_| {
            format!("feedback recorded for memory {}", target.id)
        }))
    }

    #[tool(
        description = "The user's profile: stable facts and preferences (static) and the \
        context and decisions of the last 14 days (dynamic). Good to read at the start of a \
        conversation.",
        annotations(read_only_hint = true)
    )]
    async fn memory_profile(
        &self,
        Parameters(args): Parameters<ProfileArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let who = caller(&ctx, Scope::MemoriesRead)?;
            calls::profile(&self.memories, &who, args.into()).await
        }
        .await;
        Ok(answer(result, |p| {
            let mut text = lines(
                "static:".to_string(),
                p.static_lines.iter().map(|l| format!("- {l}")),
            );
            text.push('\n');
            text.push_str(&lines(
                "dynamic:".to_string(),
                p.dynamic_lines.iter().map(|l| format!("- {l}")),
            ));
            text
        }))
    }

    #[tool(
        description = "Search the company's Context Vault: document passages and extracted or \
        curated facts with citations (quotes from their sources). Returns grounded context, \
        not an answer.",
        annotations(read_only_hint = true)
    )]
    async fn vault_search(
        &self,
        Parameters(args): Parameters<VaultSearchArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let who = caller(&ctx, Scope::VaultRead)?;
            vault_calls::search(&self.vault, &who, args.into()).await
        }
        .await;
        Ok(answer(result, |r| {
            let passages = r.chunks.iter().map(|c| {
                let place = if c.section_path.is_empty() {
                    c.title.clone()
                } else {
                    format!("{}, {}", c.title, c.section_path)
                };
                format!("- passage [{:.2}] ({place}): {}", c.relevance, c.content)
            });
            let facts = r.memories.iter().map(|m| {
                let cited = m
                    .evidence
                    .first()
                    .map(|e| format!(" [\"{}\", {}]", e.quote, e.title))
                    .unwrap_or_default();
                format!("- fact: {}{cited}", m.content)
            });
            lines(
                format!("{} passages, {} facts", r.chunks.len(), r.memories.len()),
                passages.chain(facts),
            )
        }))
    }

    #[tool(
        description = "Add a curated company fact to the Context Vault (a short statement that \
        needs no document behind it)."
    )]
    async fn vault_add_fact(
        &self,
        Parameters(args): Parameters<FactArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let who = caller(&ctx, Scope::VaultWrite)?;
            vault_calls::add_fact(&self.vault, &who, args.into())
                .await
                .map(|(created, _)| created)
        }
        .await;
        Ok(answer(result, |c| {
            format!("company fact {}: {}", c.memory.id, c.memory.content)
        }))
    }

    #[tool(
        description = "Ingest a document into the Context Vault from text or a URL. It is \
        parsed, chunked, embedded and its facts extracted in the background: check progress \
        with vault_document_status."
    )]
    async fn vault_ingest(
        &self,
        Parameters(args): Parameters<IngestArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let who = caller(&ctx, Scope::VaultWrite)?;
            vault_calls::create_document(&self.vault, &who, args.into()).await
        }
        .await;
        Ok(answer(result, |a| {
            format!(
                "document {} accepted ({}): {}",
                a.document.id, a.document.status, a.message
            )
        }))
    }

    #[tool(
        description = "List the documents of the Context Vault with their processing status.",
        annotations(read_only_hint = true)
    )]
    async fn vault_list_documents(
        &self,
        Parameters(args): Parameters<DocumentsArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let who = caller(&ctx, Scope::VaultRead)?;
            vault_calls::list_documents(&self.vault, &who, args.into()).await
        }
        .await;
        Ok(answer(result, |list| {
            lines(
                format!("{} of {} documents", list.documents.len(), list.total),
                list.documents
                    .iter()
                    .map(|d| format!("- {} [{}] (id {})", d.title, d.status, d.id)),
            )
        }))
    }

    #[tool(
        description = "A document's processing status: phase, progress, attempts, error and its \
        timestamped history.",
        annotations(read_only_hint = true)
    )]
    async fn vault_document_status(
        &self,
        Parameters(args): Parameters<DocumentRefArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let who = caller(&ctx, Scope::VaultRead)?;
            vault_calls::document(&self.vault, &who, &args.document_id, args.at()).await
        }
        .await;
        Ok(answer(result, |d| {
            format!(
                "{}: {} ({} of {} chunks processed, {} facts extracted)",
                d.document.title,
                d.document.status,
                d.document.processed_chunks,
                d.document.total_chunks,
                d.document.extracted_count
            )
        }))
    }
}

#[tool_handler]
impl ServerHandler for MemvaultMcp {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("memvault", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(INSTRUCTIONS.to_string());
        info
    }
}
