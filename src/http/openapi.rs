//! The OpenAPI 3.1 document, generated from the handlers' annotations.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::accounts::dto::{
    ApiKeyCreated, ApiKeyList, ApiKeyView, ChangeRole, CreateApiKey, CreateInvitation,
    CreateWorkspace, InvitationAccepted, InvitationCreated, InvitationView, MemberChanged,
    MemberView, SessionInfo, SessionView, SignIn, SignUp, Team, TeamMember, UserView,
    WorkspaceCreated, WorkspaceList, WorkspaceView,
};
use super::billing::dto::{
    ChangePlanBody, ChangePlanView, CheckoutBody, CheckoutView, PortalBody, PortalView,
    SubscriptionView, WebhookAnswer,
};
use super::error::ErrorBody;
use super::memories::dto::{
    CreateMemory, FeedbackInput, ForgetInput, Graph, GraphLink, GraphMeta, GraphNode, History,
    HistoryEntry, JobAccepted, JobPart, JobView, MemoryList, MemoryListItem, MemoryView, Profile,
    SaveResult, SaveStatus, SearchHit, SearchResults, UpdateMemory,
};
use super::vault::dto::{
    ChunkView, CompanyFactCreated, CreateCompanyFact, CreateDocument, CreateVault,
    DocumentAccepted, DocumentDeleted, DocumentDetail, DocumentEventView, DocumentList,
    DocumentMemories, DocumentRef, DocumentView, EvidenceView, VaultCreated, VaultFeedbackInput,
    VaultList, VaultMemoryList, VaultMemoryView, VaultSearchResults, VaultView,
};
use super::Success;
use super::{accounts, billing, erasure, health, memories, vault};
use crate::model::accounts::{Role, SubscriptionStatus};
use crate::model::vault::{DocumentSourceType, MemoryType, VaultSearchMode};
use crate::model::{Category, PlanName, Ranking, Rating, Source};

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
        erasure::erase_scope, erasure::export_scope, erasure::erase_memory, erasure::erasures,
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
        Category, Source, Rating, Ranking, MemoryType, VaultSearchMode, DocumentSourceType, PlanName,
        SearchHit, SearchResults, JobAccepted, JobView, JobPart, Profile,
        Graph, GraphNode, GraphLink, GraphMeta,
        erasure::Erasure, erasure::ErasedCounts, erasure::ErasureList,
        health::Health, health::Readiness, health::ClusterView, health::NodeView,
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
    modifiers(&ApiKeyScheme, &CommonResponses, &StrictStrings),
    tags(
        (name = "memories", description = "save, search, list, read, version, forget and rate memories"),
        (name = "erasure", description = "erase an end user (a scope) or one memory for good, the erasure log, export before erasing"),
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

/// The answers every operation of a kind can give, added once here rather than on every
/// handler (each in the error envelope): 400 when it takes parameters or a body (a malformed or
/// out-of-range value; the error names it), 404 when its path names something, 408, 413 and 415
/// when it reads a JSON body (too slow, too large, not JSON), and 401, 403 and 429 when it is
/// authenticated (no valid key or session; a role or a key bound to another workspace; a full
/// rate-limit window).
struct CommonResponses;

impl Modify for CommonResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::path::ParameterIn;
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
                let parameters = operation.parameters.as_deref().unwrap_or_default();
                let in_path = parameters
                    .iter()
                    .any(|p| matches!(p.parameter_in, ParameterIn::Path));
                let json_body = operation
                    .request_body
                    .as_ref()
                    .is_some_and(|b| b.content.contains_key("application/json"));
                let takes_input = !parameters.is_empty() || operation.request_body.is_some();
                let secured = operation.security.as_ref().is_some_and(|s| !s.is_empty());
                let mut add = |status: &str, description: &str| {
                    operation
                        .responses
                        .responses
                        .entry(status.to_string())
                        .or_insert_with(|| error(description).into());
                };
                if takes_input {
                    add(
                        "400",
                        "a parameter or the body is malformed or out of range (named in the error)",
                    );
                }
                if in_path {
                    add("404", "not found (or not visible to this caller)");
                }
                if json_body {
                    add("408", "the body did not arrive in time");
                    add("413", "the body is larger than the limit");
                    add(
                        "415",
                        "the body is not JSON (content-type application/json)",
                    );
                }
                if secured {
                    add("401", "no valid API key or session");
                    add(
                        "403",
                        "the role may not do this, or the key is bound to another workspace",
                    );
                    add("429", "rate limit exceeded");
                }
            }
        }
    }
}

/// What the server checks, stated in the document where an attribute cannot say it:
/// - a `uuid` or `date-time` value matches its pattern (`""` is refused, and the document says
///   so);
/// - in a pattern, `\s` and `\S` mean the server's whitespace (Unicode `White_Space`, what
///   Rust's `trim` removes), not ECMAScript's, which differs (U+0085 is blank to the server);
/// - a string query parameter is never empty (`refuse_empty_query`);
/// - a memory update changes something: `content` or `category` given, or `project`,
///   `validFrom` or `validUntil` present (`null` clears them).
struct StrictStrings;

/// The characters Rust's `char::is_whitespace` accepts (Unicode `White_Space`), for a
/// regular-expression class.
const WHITESPACE: &str =
    "\\t\\n\\x0b\\x0c\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";

/// `pattern` with `\s` and `\S` spelled out as [`WHITESPACE`] (inside a class too).
fn server_whitespace(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 64);
    let mut in_class = false;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('s') if in_class => out.push_str(WHITESPACE),
                Some('s') => {
                    out.push('[');
                    out.push_str(WHITESPACE);
                    out.push(']');
                }
                Some('S') if !in_class => {
                    out.push_str("[^");
                    out.push_str(WHITESPACE);
                    out.push(']');
                }
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            },
            '[' if !in_class => {
                in_class = true;
                out.push(c);
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// A UUID as the server reads it (hyphenated).
const UUID_PATTERN: &str =
    "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
/// An RFC 3339 date-time (what `DateTime::parse_from_rfc3339` accepts).
const DATE_TIME_PATTERN: &str = "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt ]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$";

impl Modify for StrictStrings {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use serde_json::Value;
        fn patterns(value: &mut Value) {
            match value {
                Value::Object(map) => {
                    let pattern = match map.get("format").and_then(Value::as_str) {
                        Some("uuid") => Some(UUID_PATTERN),
                        Some("date-time") => Some(DATE_TIME_PATTERN),
                        _ => None,
                    };
                    if let Some(pattern) = pattern {
                        map.entry("pattern")
                            .or_insert_with(|| Value::String(pattern.to_string()));
                    }
                    if let Some(Value::String(pattern)) = map.get_mut("pattern") {
                        *pattern = server_whitespace(pattern);
                    }
                    map.values_mut().for_each(patterns);
                }
                Value::Array(items) => items.iter_mut().for_each(patterns),
                _ => {}
            }
        }
        fn is_string(schema: &Value) -> bool {
            match schema.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(types)) => types.iter().any(|t| t == "string"),
                _ => false,
            }
        }
        let Ok(mut value) = serde_json::to_value(&*openapi) else {
            return;
        };
        patterns(&mut value);
        if let Some(paths) = value.get_mut("paths").and_then(Value::as_object_mut) {
            for item in paths.values_mut().filter_map(Value::as_object_mut) {
                for operation in item.values_mut() {
                    let Some(parameters) = operation
                        .get_mut("parameters")
                        .and_then(Value::as_array_mut)
                    else {
                        continue;
                    };
                    for parameter in parameters {
                        if parameter.get("in").and_then(Value::as_str) != Some("query") {
                            continue;
                        }
                        if let Some(schema) = parameter.get_mut("schema") {
                            if is_string(schema) {
                                let min = schema.get("minLength").and_then(Value::as_u64);
                                schema["minLength"] = Value::from(min.unwrap_or(0).max(1));
                            }
                        }
                    }
                }
            }
        }
        if let Some(update) = value.pointer_mut("/components/schemas/UpdateMemory") {
            let not_null = serde_json::json!({"not": {"type": "null"}});
            update["anyOf"] = serde_json::json!([
                {"required": ["content"], "properties": {"content": not_null}},
                {"required": ["category"], "properties": {"category": not_null}},
                {"required": ["project"]},
                {"required": ["validFrom"]},
                {"required": ["validUntil"]},
            ]);
        }
        match serde_json::from_value(value) {
            Ok(strict) => *openapi = strict,
            Err(error) => tracing::error!(%error, "the OpenAPI document could not be made strict"),
        }
    }
}

pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

#[cfg(test)]
mod conformance;

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::{document, server_whitespace, WHITESPACE};
    use crate::services::validate::{
        MAX_OFFSET, MAX_PROJECT_CHARS, MAX_SCOPE_CHARS, MAX_SPEAKER_CHARS, MAX_THREAD_CHARS,
    };

    fn doc() -> Value {
        serde_json::to_value(document()).unwrap()
    }

    fn property(doc: &Value, schema: &str, name: &str, key: &str) -> Value {
        doc["components"]["schemas"][schema]["properties"][name][key].clone()
    }

    fn parameter(doc: &Value, path: &str, name: &str, key: &str) -> Value {
        doc["paths"][path]["get"]["parameters"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == name))
            .map(|p| p["schema"][key].clone())
            .unwrap_or(Value::Null)
    }

    /// The numbers the document states are the ones the services enforce (kept once: a change
    /// to a limit that forgets its attribute fails here).
    #[test]
    fn the_documented_limits_are_the_servers() {
        use crate::services::memories::search::{MAX_QUERY_CHARS, MAX_SEARCH_LIMIT};
        use crate::services::memories::MAX_SEARCH_CHARS;
        use crate::services::vault::{
            MAX_EXPLANATION_CHARS, MAX_FACT_CHARS, MAX_TITLE_CHARS, MAX_VAULT_NAME_CHARS,
        };
        let d = doc();
        let content = crate::config::Settings::default()
            .memories
            .max_content_chars;
        for (schema, name, key, expected) in [
            ("CreateMemory", "content", "maxLength", content as i64),
            ("CreateMemory", "scope", "maxLength", MAX_SCOPE_CHARS as i64),
            (
                "CreateMemory",
                "project",
                "maxLength",
                MAX_PROJECT_CHARS as i64,
            ),
            (
                "CreateMemory",
                "thread",
                "maxLength",
                MAX_THREAD_CHARS as i64,
            ),
            (
                "CreateMemory",
                "speaker",
                "maxLength",
                MAX_SPEAKER_CHARS as i64,
            ),
            ("UpdateMemory", "content", "maxLength", content as i64),
            (
                "FeedbackInput",
                "explanation",
                "maxLength",
                MAX_EXPLANATION_CHARS as i64,
            ),
            (
                "CreateDocument",
                "title",
                "maxLength",
                MAX_TITLE_CHARS as i64,
            ),
            (
                "CreateCompanyFact",
                "content",
                "maxLength",
                MAX_FACT_CHARS as i64,
            ),
            (
                "CreateVault",
                "name",
                "maxLength",
                MAX_VAULT_NAME_CHARS as i64,
            ),
        ] {
            assert_eq!(
                property(&d, schema, name, key),
                Value::from(expected),
                "{schema}.{name}.{key}"
            );
        }
        for (path, name, key, expected) in [
            (
                "/api/memories/search",
                "q",
                "maxLength",
                MAX_QUERY_CHARS as i64,
            ),
            ("/api/memories/search", "limit", "maximum", MAX_SEARCH_LIMIT),
            (
                "/api/memories",
                "search",
                "maxLength",
                MAX_SEARCH_CHARS as i64,
            ),
            ("/api/memories", "offset", "maximum", MAX_OFFSET),
            (
                "/api/context-vault/documents",
                "offset",
                "maximum",
                MAX_OFFSET,
            ),
            (
                "/api/context-vault/memories",
                "offset",
                "maximum",
                MAX_OFFSET,
            ),
            (
                "/api/context-vault/search",
                "q",
                "maxLength",
                crate::services::vault::search::MAX_QUERY_CHARS as i64,
            ),
            (
                "/api/context-vault/search",
                "limit",
                "maximum",
                crate::services::vault::search::MAX_LIMIT,
            ),
        ] {
            assert_eq!(
                parameter(&d, path, name, key),
                Value::from(expected),
                "{path} {name}.{key}"
            );
        }
    }

    /// Every string query parameter refuses `""`, and every id or date-time states its shape.
    #[test]
    fn strings_state_what_the_server_accepts() {
        fn walk(value: &Value, found: &mut Vec<String>) {
            match value {
                Value::Object(map) => {
                    if let Some(format @ ("uuid" | "date-time")) =
                        map.get("format").and_then(Value::as_str)
                    {
                        if !map.contains_key("pattern") {
                            found.push(format.to_string());
                        }
                    }
                    map.values().for_each(|v| walk(v, found));
                }
                Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
                _ => {}
            }
        }
        let d = doc();
        let mut without_pattern = Vec::new();
        walk(&d, &mut without_pattern);
        assert!(without_pattern.is_empty(), "{without_pattern:?}");
        let mut checked = 0;
        for (path, item) in d["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                for p in operation["parameters"].as_array().into_iter().flatten() {
                    let schema = &p["schema"];
                    let string = schema["type"] == "string"
                        || schema["type"]
                            .as_array()
                            .is_some_and(|t| t.iter().any(|t| t == "string"));
                    if p["in"] == "query" && string {
                        assert!(
                            schema["minLength"].as_u64() >= Some(1),
                            "{method} {path} {}",
                            p["name"]
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 20, "{checked}");
    }

    #[test]
    fn blanks_in_patterns_are_the_servers_blanks() {
        let class = format!("[{WHITESPACE}]");
        assert_eq!(server_whitespace(r"^\s*x$"), format!("^{class}*x$"));
        assert_eq!(server_whitespace(r"\S"), format!("[^{WHITESPACE}]"));
        assert_eq!(
            server_whitespace(r"^[^@\s]+$"),
            format!("^[^@{WHITESPACE}]+$")
        );
        assert_eq!(server_whitespace(r"a\.b\\s"), r"a\.b\\s");
    }
}
