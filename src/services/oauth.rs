//! OAuth 2.1 for MCP connectors (the MCP authorization spec): memvault is both the protected
//! resource (`/mcp`) and its authorization server. Public clients register themselves
//! (RFC 7591), a signed-in user approves a workspace and scopes on a consent page, the client
//! exchanges the code with its PKCE verifier (S256 only), and gets an access token bound to that
//! user and workspace plus a refresh token that rotates on every use. Codes and tokens are
//! random, stored only as their SHA-256, and single-use where the spec says so.

use std::str::FromStr;
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::Duration;
use rand::distr::{Alphanumeric, SampleString};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::accounts::hash_key;
use super::{Identity, Principal};
use crate::error::{Error, Result};
use crate::model::accounts::{Membership, Scope};
use crate::model::{now, to_micros};
use crate::storage::oauth::{CodeGrant, NewToken, OAuthClient, Rotation, TokenKind, TokenRecord};
use crate::storage::Store;

/// How long an access token lives.
pub const ACCESS_TOKEN_SECS: i64 = 3_600;
/// How long a refresh token lives (each use replaces it).
pub const REFRESH_TOKEN_DAYS: i64 = 30;
/// How long an authorization code can be exchanged.
pub const CODE_SECS: i64 = 120;
const CLIENT_PREFIX: &str = "mcl_";
const ACCESS_PREFIX: &str = "mat_";
const REFRESH_PREFIX: &str = "mrt_";
const CODE_PREFIX: &str = "mco_";
const MAX_REDIRECT_URIS: usize = 10;
const MAX_CLIENT_NAME: usize = 200;

fn random(prefix: &str, chars: usize) -> String {
    format!(
        "{prefix}{}",
        Alphanumeric.sample_string(&mut rand::rng(), chars)
    )
}

/// An OAuth protocol error (RFC 6749 section 5.2, RFC 7591 section 3.2.2): answered as
/// `{error, error_description}` with its status, not in the API's envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthError {
    pub status: u16,
    pub error: &'static str,
    pub description: String,
}

impl OAuthError {
    fn new(status: u16, error: &'static str, description: impl Into<String>) -> Self {
        OAuthError {
            status,
            error,
            description: description.into(),
        }
    }

    fn request(description: impl Into<String>) -> Self {
        Self::new(400, "invalid_request", description)
    }

    fn grant(description: impl Into<String>) -> Self {
        Self::new(400, "invalid_grant", description)
    }

    pub fn body(&self) -> Value {
        json!({"error": self.error, "error_description": self.description})
    }
}

impl From<crate::error::StorageError> for OAuthError {
    fn from(error: crate::error::StorageError) -> Self {
        tracing::error!(%error, "oauth storage failed");
        OAuthError::new(
            500,
            "server_error",
            "the server could not complete the request",
        )
    }
}

impl From<Error> for OAuthError {
    fn from(error: Error) -> Self {
        if error.status() >= 500 {
            tracing::error!(%error, "oauth request failed");
        }
        OAuthError::new(
            error.status().max(400),
            if error.status() >= 500 {
                "server_error"
            } else {
                "invalid_request"
            },
            error.public_message(),
        )
    }
}

/// Why an authorization request cannot go on.
#[derive(Debug, Clone, PartialEq)]
pub enum AuthorizeFailure {
    /// The client or its redirect URI cannot be trusted: shown on the page, never redirected.
    Page(String),
    /// Sent back to the client: the redirect URL with `error` (and `state`).
    Redirect(String),
}

/// The parameters of an authorization request (query of the GET, fields of the POST).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct AuthorizeParams {
    pub response_type: Option<String>,
    pub client_id: Option<String>,
    pub redirect_uri: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub state: Option<String>,
    pub scope: Option<String>,
    pub resource: Option<String>,
}

/// A checked authorization request.
#[derive(Debug, Clone)]
pub struct AuthorizeRequest {
    pub client: OAuthClient,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub state: Option<String>,
    pub scopes: Vec<Scope>,
    pub resource: Option<String>,
}

/// The token endpoint's form.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TokenForm {
    pub grant_type: Option<String>,
    pub code: Option<String>,
    pub redirect_uri: Option<String>,
    pub client_id: Option<String>,
    pub code_verifier: Option<String>,
    pub refresh_token: Option<String>,
    pub scope: Option<String>,
    pub resource: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TokenAnswer {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
    pub refresh_token: String,
    pub scope: String,
}

/// The revocation endpoint's form (RFC 7009).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RevokeForm {
    pub token: Option<String>,
    pub token_type_hint: Option<String>,
    pub client_id: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClientRegistered {
    pub client_id: String,
    pub client_id_issued_at: i64,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub grant_types: Vec<&'static str>,
    pub response_types: Vec<&'static str>,
    pub token_endpoint_auth_method: &'static str,
    pub scope: String,
}

/// Scopes from a space-separated list; none means all of them.
pub fn parse_scopes(raw: Option<&str>) -> std::result::Result<Vec<Scope>, String> {
    let raw = raw.unwrap_or_default().trim();
    if raw.is_empty() {
        return Ok(Scope::ALL.to_vec());
    }
    let mut scopes = Vec::new();
    for part in raw.split_whitespace() {
        let scope = Scope::from_str(part)
            .map_err(|()| format!("unknown scope '{part}'; known: {}", scope_list(Scope::ALL)))?;
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    Ok(scopes)
}

pub fn scope_list(scopes: &[Scope]) -> String {
    scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The S256 challenge of a PKCE verifier.
pub fn pkce_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A PKCE verifier: 43 to 128 unreserved characters (RFC 7636 section 4.1).
fn valid_verifier(verifier: &str) -> bool {
    (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// A redirect URI a public client may register: `https`, `http` on a loopback host, or a
/// private-use scheme of a native app (RFC 8252); never with a fragment.
pub fn valid_redirect_uri(raw: &str) -> std::result::Result<(), String> {
    let url = url::Url::parse(raw).map_err(|_| format!("'{raw}' is not an absolute URL"))?;
    if url.fragment().is_some() {
        return Err(format!("'{raw}' has a fragment"));
    }
    match url.scheme() {
        "https" => Ok(()),
        "http" => match url.host_str() {
            Some("localhost" | "127.0.0.1" | "[::1]") => Ok(()),
            _ => Err(format!(
                "'{raw}': http is allowed only on a loopback host (localhost, 127.0.0.1, [::1])"
            )),
        },
        "javascript" | "data" | "file" | "vbscript" | "about" | "blob" | "ftp" | "ws" | "wss" => {
            Err(format!(
                "'{raw}': the scheme {} is not allowed",
                url.scheme()
            ))
        }
        _ => Ok(()),
    }
}

/// `uri` with `pairs` appended to its query.
fn with_query(uri: &str, pairs: &[(&str, &str)]) -> String {
    match url::Url::parse(uri) {
        Ok(mut url) => {
            {
                let mut query = url.query_pairs_mut();
                for (k, v) in pairs {
                    query.append_pair(k, v);
                }
            }
            url.to_string()
        }
        Err(_) => uri.to_string(),
    }
}

/// The token family of the tokens an authorization code buys: derived from the code's hash,
/// so that a replay of the code finds them without storing the link.
fn code_family(code_hash: &str) -> Uuid {
    let digest = Sha256::digest(format!("memvault token family {code_hash}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes).into_uuid()
}

#[derive(Clone)]
pub struct OAuthService {
    store: Arc<dyn Store>,
    /// Shared with the accounts service: registrations per address.
    doors: Arc<crate::services::abuse::Doors>,
}

impl OAuthService {
    pub fn new(store: Arc<dyn Store>, doors: Arc<crate::services::abuse::Doors>) -> Self {
        OAuthService { store, doors }
    }

    /// Dynamic client registration is open to anyone: limited per client address.
    pub fn admit_registration(&self, from: std::net::IpAddr) -> Result<()> {
        self.doors
            .registrations_by_address
            .check(crate::services::abuse::address_key(from))
    }

    /// The protected resource's URL: what tokens are for.
    pub fn resource(base: &str) -> String {
        format!("{base}/mcp")
    }

    /// RFC 9728 protected-resource metadata of `/mcp`.
    pub fn resource_metadata(&self, base: &str) -> Value {
        json!({
            "resource": Self::resource(base),
            "authorization_servers": [base],
            "scopes_supported": Scope::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
            "bearer_methods_supported": ["header"],
            "resource_name": "memvault",
        })
    }

    /// RFC 8414 authorization-server metadata.
    pub fn server_metadata(&self, base: &str) -> Value {
        json!({
            "issuer": base,
            "authorization_endpoint": format!("{base}/oauth/authorize"),
            "token_endpoint": format!("{base}/oauth/token"),
            "registration_endpoint": format!("{base}/oauth/register"),
            "revocation_endpoint": format!("{base}/oauth/revoke"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": Scope::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
            "authorization_response_iss_parameter_supported": true,
        })
    }

    /// `POST /oauth/register` (RFC 7591): a public client (no secret; PKCE protects it).
    pub async fn register(&self, body: &[u8]) -> std::result::Result<ClientRegistered, OAuthError> {
        let metadata = |d: String| OAuthError::new(400, "invalid_client_metadata", d);
        let input: Value = serde_json::from_slice(body)
            .map_err(|e| metadata(format!("the body is not JSON: {e}")))?;
        let uris = input
            .get("redirect_uris")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                OAuthError::new(
                    400,
                    "invalid_redirect_uri",
                    "redirect_uris is required: a list of 1 to 10 URLs",
                )
            })?;
        if uris.is_empty() || uris.len() > MAX_REDIRECT_URIS {
            return Err(OAuthError::new(
                400,
                "invalid_redirect_uri",
                "redirect_uris must hold 1 to 10 URLs",
            ));
        }
        let mut redirect_uris = Vec::new();
        for uri in uris {
            let uri = uri.as_str().ok_or_else(|| {
                OAuthError::new(
                    400,
                    "invalid_redirect_uri",
                    "a redirect URI is not a string",
                )
            })?;
            valid_redirect_uri(uri)
                .map_err(|why| OAuthError::new(400, "invalid_redirect_uri", why))?;
            redirect_uris.push(uri.to_string());
        }
        if let Some(method) = input.get("token_endpoint_auth_method") {
            if method.as_str() != Some("none") {
                return Err(metadata(
                    "token_endpoint_auth_method must be \"none\": clients are public and use PKCE"
                        .to_string(),
                ));
            }
        }
        for (field, allowed) in [
            ("grant_types", &["authorization_code", "refresh_token"][..]),
            ("response_types", &["code"][..]),
        ] {
            if let Some(values) = input.get(field) {
                let ok = values.as_array().is_some_and(|list| {
                    list.iter()
                        .all(|v| v.as_str().is_some_and(|v| allowed.contains(&v)))
                });
                if !ok {
                    return Err(metadata(format!(
                        "{field} may only hold {}",
                        allowed.join(", ")
                    )));
                }
            }
        }
        let scope = match input.get("scope").and_then(Value::as_str) {
            Some(raw) => parse_scopes(Some(raw)).map_err(metadata)?,
            None => Scope::ALL.to_vec(),
        };
        let name = input
            .get("client_name")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .unwrap_or("MCP client");
        if name.chars().count() > MAX_CLIENT_NAME {
            return Err(metadata(
                "client_name is longer than 200 characters".to_string(),
            ));
        }
        let client = OAuthClient {
            id: random(CLIENT_PREFIX, 32),
            name: name.to_string(),
            redirect_uris,
            created_at: now(),
        };
        self.store.insert_oauth_client(&client).await?;
        tracing::info!(client_id = %client.id, name = %crate::loggable::loggable(&client.name), "oauth client registered");
        Ok(ClientRegistered {
            client_id: client.id,
            client_id_issued_at: client.created_at.timestamp(),
            client_name: client.name,
            redirect_uris: client.redirect_uris,
            grant_types: vec!["authorization_code", "refresh_token"],
            response_types: vec!["code"],
            token_endpoint_auth_method: "none",
            scope: scope_list(&scope),
        })
    }

    /// Checks an authorization request. A bad client or redirect URI is shown, never followed;
    /// anything else goes back to the client's redirect URI as an error.
    pub async fn check_authorize(
        &self,
        p: &AuthorizeParams,
        base: &str,
    ) -> std::result::Result<AuthorizeRequest, AuthorizeFailure> {
        let client_id = p
            .client_id
            .as_deref()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| AuthorizeFailure::Page("client_id is missing".to_string()))?;
        let client = self
            .store
            .oauth_client(client_id)
            .await
            .map_err(|_| {
                AuthorizeFailure::Page("the server could not read the client".to_string())
            })?
            .ok_or_else(|| {
                AuthorizeFailure::Page(
                    "unknown client: register it first (POST /oauth/register)".to_string(),
                )
            })?;
        let redirect_uri = match p.redirect_uri.as_deref() {
            // One registered URI may be left out (RFC 6749 section 3.1.2.3).
            None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
            None => {
                return Err(AuthorizeFailure::Page(
                    "redirect_uri is missing and the client registered several".to_string(),
                ))
            }
            Some(uri) if client.redirect_uris.iter().any(|r| r == uri) => uri.to_string(),
            Some(_) => {
                return Err(AuthorizeFailure::Page(
                    "redirect_uri does not match any URI this client registered".to_string(),
                ))
            }
        };
        let state = p.state.clone();
        let fail = |error: &str, description: &str| {
            let mut pairs = vec![
                ("error", error),
                ("error_description", description),
                ("iss", base),
            ];
            if let Some(state) = state.as_deref() {
                pairs.push(("state", state));
            }
            AuthorizeFailure::Redirect(with_query(&redirect_uri, &pairs))
        };
        if p.response_type.as_deref() != Some("code") {
            return Err(fail(
                "unsupported_response_type",
                "response_type must be code",
            ));
        }
        let challenge = match p.code_challenge.as_deref() {
            Some(c) if (43..=128).contains(&c.len()) => c.to_string(),
            _ => {
                return Err(fail(
                    "invalid_request",
                    "code_challenge is required (PKCE, 43 to 128 characters)",
                ))
            }
        };
        if p.code_challenge_method.as_deref() != Some("S256") {
            return Err(fail(
                "invalid_request",
                "code_challenge_method must be S256",
            ));
        }
        let scopes = parse_scopes(p.scope.as_deref()).map_err(|why| fail("invalid_scope", &why))?;
        let resource = match p.resource.as_deref() {
            None => None,
            Some(r) if r.trim_end_matches('/') == Self::resource(base) => Some(r.to_string()),
            Some(_) => {
                return Err(fail(
                    "invalid_target",
                    "resource must be this server's MCP endpoint",
                ))
            }
        };
        Ok(AuthorizeRequest {
            client,
            redirect_uri,
            code_challenge: challenge,
            state: p.state.clone(),
            scopes,
            resource,
        })
    }

    /// The workspaces a signed-in user may connect.
    pub async fn workspaces_of(&self, who: &Principal) -> Result<Vec<Membership>> {
        match &who.identity {
            Identity::User { user_id, .. } => Ok(self.store.memberships(*user_id).await?),
            Identity::Key { .. } | Identity::Token { .. } => Err(Error::Unauthorized(
                "sign in to connect an application".to_string(),
            )),
        }
    }

    /// The user's answer on the consent page: the redirect URL that carries the code (or the
    /// refusal) back to the client.
    pub async fn decide(
        &self,
        who: &Principal,
        request: &AuthorizeRequest,
        approve: bool,
        workspace_id: Option<&str>,
        chosen: &[String],
        base: &str,
    ) -> Result<String> {
        let state_pairs = |mut pairs: Vec<(&'static str, String)>| {
            pairs.push(("iss", base.to_string()));
            if let Some(state) = &request.state {
                pairs.push(("state", state.clone()));
            }
            let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
            with_query(&request.redirect_uri, &borrowed)
        };
        let Identity::User { user_id, .. } = who.identity else {
            return Err(Error::Unauthorized(
                "sign in to connect an application".to_string(),
            ));
        };
        if !approve {
            tracing::info!(client_id = %request.client.id, %user_id, "oauth consent denied");
            return Ok(state_pairs(vec![
                ("error", "access_denied".to_string()),
                (
                    "error_description",
                    "the user denied the request".to_string(),
                ),
            ]));
        }
        let workspace_id = workspace_id
            .and_then(|w| Uuid::parse_str(w.trim()).ok())
            .ok_or_else(|| Error::validation("workspace_id", "choose a workspace"))?;
        if self.store.member_of(workspace_id, user_id).await?.is_none() {
            return Err(Error::Forbidden(
                "you are not a member of this workspace".to_string(),
            ));
        }
        let mut scopes = Vec::new();
        for raw in chosen {
            let scope = Scope::from_str(raw)
                .map_err(|()| Error::validation("scopes", format!("unknown scope '{raw}'")))?;
            if !request.scopes.contains(&scope) {
                return Err(Error::validation(
                    "scopes",
                    format!("{scope} was not requested by the application"),
                ));
            }
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        if scopes.is_empty() {
            return Err(Error::validation("scopes", "approve at least one scope"));
        }
        let code = random(CODE_PREFIX, 43);
        let created_at = now();
        let grant = CodeGrant {
            client_id: request.client.id.clone(),
            user_id,
            workspace_id,
            redirect_uri: request.redirect_uri.clone(),
            code_challenge: request.code_challenge.clone(),
            scopes: scope_list(&scopes),
            resource: request.resource.clone(),
            created_at,
            expires_at: created_at + Duration::seconds(CODE_SECS),
        };
        self.store.insert_code(&hash_key(&code), &grant).await?;
        tracing::info!(client_id = %request.client.id, %user_id, %workspace_id, scopes = %grant.scopes, "oauth consent given");
        Ok(state_pairs(vec![("code", code)]))
    }

    fn pair(
        family_id: Uuid,
        client_id: &str,
        user_id: Uuid,
        workspace_id: Uuid,
        scopes: &str,
    ) -> (String, String, Vec<NewToken>) {
        let at = now();
        let access = random(ACCESS_PREFIX, 43);
        let refresh = random(REFRESH_PREFIX, 43);
        let record = |kind, expires_at| TokenRecord {
            id: Uuid::now_v7(),
            family_id,
            kind,
            client_id: client_id.to_string(),
            user_id,
            workspace_id,
            scopes: scopes.to_string(),
            created_at: at,
            expires_at,
            revoked_at: None,
        };
        let tokens = vec![
            NewToken {
                hash: hash_key(&access),
                record: record(TokenKind::Access, at + Duration::seconds(ACCESS_TOKEN_SECS)),
            },
            NewToken {
                hash: hash_key(&refresh),
                record: record(TokenKind::Refresh, at + Duration::days(REFRESH_TOKEN_DAYS)),
            },
        ];
        (access, refresh, tokens)
    }

    /// `POST /oauth/token`: an authorization code (with its PKCE verifier) or a refresh token
    /// for a new pair.
    pub async fn token(&self, form: TokenForm) -> std::result::Result<TokenAnswer, OAuthError> {
        let required = |value: &Option<String>, name: &str| {
            value
                .as_deref()
                .filter(|v| !v.is_empty())
                .map(str::to_string)
                .ok_or_else(|| OAuthError::request(format!("{name} is required")))
        };
        let client_id = required(&form.client_id, "client_id")?;
        if self.store.oauth_client(&client_id).await?.is_none() {
            return Err(OAuthError::new(401, "invalid_client", "unknown client"));
        }
        match form.grant_type.as_deref() {
            Some("authorization_code") => {
                let code = required(&form.code, "code")?;
                let verifier = required(&form.code_verifier, "code_verifier")?;
                let redirect_uri = required(&form.redirect_uri, "redirect_uri")?;
                let code_hash = hash_key(&code);
                let family = code_family(&code_hash);
                let Some(grant) = self.store.take_code(&code_hash, to_micros(now())).await? else {
                    // A code presented twice was stolen or leaked: the tokens issued from it
                    // are revoked (RFC 6749 4.1.2), and the mark makes an exchange still in
                    // flight revoke what it issues. An unknown code has nothing to end.
                    if self.store.mark_code_replayed(&code_hash, to_micros(now())).await? {
                        let revoked = self.store.revoke_family(family, to_micros(now())).await?;
                        tracing::warn!(%client_id, family_id = %family, revoked, "authorization code replayed: the tokens issued from it are revoked");
                    }
                    return Err(OAuthError::grant("the code is unknown, expired or already used"));
                };
                if grant.client_id != client_id {
                    return Err(OAuthError::grant("the code was issued to another client"));
                }
                if grant.redirect_uri != redirect_uri {
                    return Err(OAuthError::grant(
                        "redirect_uri differs from the authorization request's",
                    ));
                }
                if !valid_verifier(&verifier) || pkce_challenge(&verifier) != grant.code_challenge
                {
                    return Err(OAuthError::grant("code_verifier does not match the challenge"));
                }
                if let (Some(asked), Some(granted)) = (form.resource.as_deref(), grant.resource.as_deref()) {
                    if asked.trim_end_matches('/') != granted.trim_end_matches('/') {
                        return Err(OAuthError::new(400, "invalid_target", "resource differs from the authorization request's"));
                    }
                }
                if self
                    .store
                    .member_of(grant.workspace_id, grant.user_id)
                    .await?
                    .is_none()
                {
                    return Err(OAuthError::grant("the user is no longer a member of the workspace"));
                }
                let (access, refresh, tokens) = Self::pair(
                    family,
                    &client_id,
                    grant.user_id,
                    grant.workspace_id,
                    &grant.scopes,
                );
                self.store.insert_tokens(&tokens).await?;
                // Replayed while these were being issued: they die with the replay.
                if self.store.code_replayed(&code_hash).await? {
                    self.store.revoke_family(family, to_micros(now())).await?;
                    return Err(OAuthError::grant("the code was presented twice: the connection is revoked"));
                }
                tracing::info!(%client_id, user_id = %grant.user_id, workspace_id = %grant.workspace_id, "oauth tokens issued");
                Ok(TokenAnswer {
                    access_token: access,
                    token_type: "Bearer",
                    expires_in: ACCESS_TOKEN_SECS,
                    refresh_token: refresh,
                    scope: grant.scopes,
                })
            }
            Some("refresh_token") => {
                let presented = required(&form.refresh_token, "refresh_token")?;
                let hash = hash_key(&presented);
                let old = self
                    .store
                    .token_by_hash(&hash)
                    .await?
                    .filter(|t| t.kind == TokenKind::Refresh && t.client_id == client_id)
                    .ok_or_else(|| OAuthError::grant("unknown refresh token"))?;
                let scopes = match form.scope.as_deref().filter(|s| !s.trim().is_empty()) {
                    None => old.scopes.clone(),
                    Some(raw) => {
                        let held = parse_scopes(Some(&old.scopes)).unwrap_or_default();
                        let asked = parse_scopes(Some(raw))
                            .map_err(|why| OAuthError::new(400, "invalid_scope", why))?;
                        if asked.iter().any(|s| !held.contains(s)) {
                            return Err(OAuthError::new(400, "invalid_scope", "a refresh cannot widen the scopes"));
                        }
                        scope_list(&asked)
                    }
                };
                let (access, refresh, tokens) = Self::pair(
                    old.family_id,
                    &client_id,
                    old.user_id,
                    old.workspace_id,
                    &scopes,
                );
                match self
                    .store
                    .rotate_refresh(&hash, &client_id, &tokens, to_micros(now()))
                    .await?
                {
                    Rotation::Rotated(_) => Ok(TokenAnswer {
                        access_token: access,
                        token_type: "Bearer",
                        expires_in: ACCESS_TOKEN_SECS,
                        refresh_token: refresh,
                        scope: scopes,
                    }),
                    Rotation::Reused => {
                        tracing::warn!(%client_id, family_id = %old.family_id, "refresh token reused: its family is revoked");
                        Err(OAuthError::grant(
                            "this refresh token was already used: the connection is revoked; reconnect",
                        ))
                    }
                    Rotation::Invalid => Err(OAuthError::grant("the refresh token has expired")),
                }
            }
            Some(other) => Err(OAuthError::new(
                400,
                "unsupported_grant_type",
                format!("grant_type '{other}' is not supported: use authorization_code or refresh_token"),
            )),
            None => Err(OAuthError::request("grant_type is required")),
        }
    }

    /// `POST /oauth/revoke` (RFC 7009): an unknown token is not an error.
    pub async fn revoke(&self, form: RevokeForm) -> std::result::Result<(), OAuthError> {
        let token = form
            .token
            .filter(|t| !t.is_empty())
            .ok_or_else(|| OAuthError::request("token is required"))?;
        let hash = hash_key(&token);
        if let Some(found) = self.store.token_by_hash(&hash).await? {
            if form
                .client_id
                .as_deref()
                .is_some_and(|c| c != found.client_id)
            {
                return Err(OAuthError::new(
                    401,
                    "invalid_client",
                    "the token was issued to another client",
                ));
            }
            self.store.revoke_token(&hash, to_micros(now())).await?;
            tracing::info!(client_id = %found.client_id, kind = found.kind.as_str(), "oauth token revoked");
        }
        let _ = form.token_type_hint;
        Ok(())
    }

    /// A bearer access token -> who is calling.
    pub async fn authenticate_bearer(&self, raw: &str) -> Result<Identity> {
        let invalid = || {
            Error::Unauthorized(
                "invalid, expired or revoked access token: refresh it or reconnect".to_string(),
            )
        };
        let raw = raw.trim();
        if !raw.starts_with(ACCESS_PREFIX) || raw.len() > 200 {
            return Err(invalid());
        }
        let token = self
            .store
            .token_by_hash(&hash_key(raw))
            .await?
            .filter(|t| {
                t.kind == TokenKind::Access && t.revoked_at.is_none() && t.expires_at > now()
            })
            .ok_or_else(invalid)?;
        let scopes = parse_scopes(Some(&token.scopes)).map_err(|_| invalid())?;
        Ok(Identity::Token {
            token_id: token.id,
            user_id: token.user_id,
            workspace_id: token.workspace_id,
            scopes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_matches_rfc_7636() {
        // RFC 7636 appendix B.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert!(valid_verifier(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
        ));
        assert!(!valid_verifier("short"));
        assert!(!valid_verifier(&"a b".repeat(20)));
    }

    #[test]
    fn redirect_uris_are_https_loopback_or_native() {
        for ok in [
            "https://claude.ai/api/mcp/auth_callback",
            "http://127.0.0.1:33418/callback",
            "http://localhost/cb",
            "cursor://anysphere.cursor-retrieval/oauth/callback",
        ] {
            assert!(valid_redirect_uri(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://evil.example/cb",
            "https://example.com/cb#frag",
            "javascript:alert(1)",
            "/relative",
            "data:text/html,hi",
        ] {
            assert!(valid_redirect_uri(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn scopes_parse_strictly() {
        assert_eq!(parse_scopes(None).unwrap(), Scope::ALL.to_vec());
        assert_eq!(
            parse_scopes(Some("memories:read  memories:read vault:read")).unwrap(),
            vec![Scope::MemoriesRead, Scope::VaultRead]
        );
        assert!(parse_scopes(Some("memories:admin")).is_err());
    }

    #[test]
    fn error_redirects_keep_the_client_query() {
        assert_eq!(
            with_query(
                "https://app.example/cb?x=1",
                &[("error", "access_denied"), ("state", "a b")]
            ),
            "https://app.example/cb?x=1&error=access_denied&state=a+b"
        );
    }
}
