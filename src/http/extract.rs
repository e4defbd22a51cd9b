//! Extractors whose rejections speak the error envelope.

use std::error::Error as _;
use std::net::IpAddr;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderName, StatusCode};
use axum::Json;
use serde::de::DeserializeOwned;

use super::AppState;
use crate::error::Error;
use crate::services::{AccountsService, Principal, RateSlot};

pub const API_KEY_HEADER: &str = "x-api-key";
pub const SESSION_COOKIE: &str = "memvault.session_token";

/// A JSON body; malformed or mistyped bodies are 400 naming the field, a missing JSON content
/// type is 415, an oversized body 413. Every body of this API is a JSON object: serde would
/// also read a struct from an array of its fields in order, which no client means.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = Error;

    async fn from_request(request: Request, state: &S) -> Result<Self, Error> {
        let (parts, body) = request.into_parts();
        let bytes = read_body(Request::from_parts(parts.clone(), body), state).await?;
        let json = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().contains("json"));
        if json {
            must_be_an_object(&bytes)?;
        }
        let request = Request::from_parts(parts, axum::body::Body::from(bytes));
        match Json::<T>::from_request(request, state).await {
            Ok(Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => Err(json_error(rejection)),
        }
    }
}

/// The whole body, or the error that ended reading it (408, 413, 400).
async fn read_body<S: Send + Sync>(
    request: Request,
    state: &S,
) -> Result<axum::body::Bytes, Error> {
    axum::body::Bytes::from_request(request, state)
        .await
        .map_err(|rejection| {
            if body_timed_out(&rejection) {
                Error::BodyTimeout
            } else if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                Error::PayloadTooLarge
            } else {
                Error::BadRequest(format!(
                    "could not read the body: {}",
                    rejection.body_text()
                ))
            }
        })
}

/// 400 unless the body is (or starts as) a JSON object; syntax is left to the parser.
fn must_be_an_object(bytes: &[u8]) -> Result<(), Error> {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') | None => Ok(()),
        Some(_) => Err(Error::BadRequest(
            "invalid JSON body: must be a JSON object".to_string(),
        )),
    }
}

/// Whether reading a body failed because it did not arrive within the body timeout.
pub fn body_timed_out(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        if error.is::<tower_http::timeout::TimeoutError>() {
            return true;
        }
        current = error.source();
    }
    false
}

fn json_error(rejection: JsonRejection) -> Error {
    if body_timed_out(&rejection) {
        return Error::BodyTimeout;
    }
    // The innermost message, e.g. "content: invalid type: integer `5`, expected a string".
    let detail = rejection
        .source()
        .map(|s| s.to_string())
        .unwrap_or_else(|| rejection.body_text());
    match rejection {
        JsonRejection::MissingJsonContentType(_) => Error::UnsupportedMediaType(
            "expected a JSON body with content-type application/json".to_string(),
        ),
        JsonRejection::JsonDataError(_) => {
            Error::BadRequest(format!("invalid JSON body: {detail}"))
        }
        JsonRejection::JsonSyntaxError(_) => {
            Error::BadRequest(format!("malformed JSON body: {detail}"))
        }
        JsonRejection::BytesRejection(ref bytes)
            if bytes.status() == StatusCode::PAYLOAD_TOO_LARGE =>
        {
            Error::PayloadTooLarge
        }
        other => Error::BadRequest(format!("could not read the body: {}", other.body_text())),
    }
}

/// A query string; values that do not fit are 400.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Error> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(value)) => Ok(ApiQuery(value)),
            Err(rejection) => Err(query_error(rejection)),
        }
    }
}

fn query_error(rejection: QueryRejection) -> Error {
    let detail = rejection
        .source()
        .map(|s| s.to_string())
        .unwrap_or_else(|| rejection.body_text());
    Error::BadRequest(format!("invalid query string: {detail}"))
}

/// Who is calling: an `X-API-Key`, else the session cookie. A cookie caller's state-changing
/// requests must come from this server's own origin (CSRF).
impl FromRequestParts<AppState> for Principal {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        let rate = parts
            .extensions
            .get::<RateSlot>()
            .cloned()
            .unwrap_or_default();
        if let Some(key) = parts.headers.get(API_KEY_HEADER) {
            let identity = state.accounts.authenticate_key(key.to_str().ok()).await?;
            return rest_principal(identity, rate, parts);
        }
        if let Some(token) = session_cookie(&parts.headers) {
            let identity = state.accounts.authenticate_session(&token).await?;
            if !parts.method.is_safe() {
                state.web.check_origin(&parts.headers)?;
            }
            return rest_principal(identity, rate, parts);
        }
        Err(Error::Unauthorized(
            "missing API key: send it in the X-API-Key header (or sign in for a session)"
                .to_string(),
        ))
    }
}

/// An authenticated REST caller, with the workspace its query string names.
fn rest_principal(
    identity: crate::services::Identity,
    rate: RateSlot,
    parts: &Parts,
) -> Result<Principal, Error> {
    let source = AccountsService::rest_source(&identity);
    let mut who = Principal::new(identity, rate, source);
    who.addressed = addressed_workspace(parts.uri.query())?;
    Ok(who)
}

/// The `workspaceId` of a query string: at most once, and a UUID (else 400 naming it).
pub fn addressed_workspace(query: Option<&str>) -> Result<Option<uuid::Uuid>, Error> {
    let mut found: Option<uuid::Uuid> = None;
    for (name, value) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if name != "workspaceId" {
            continue;
        }
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        let id = uuid::Uuid::parse_str(value).map_err(|_| {
            Error::validation("workspaceId", format!("'{}' is not a UUID", short(value)))
        })?;
        if found.is_some_and(|earlier| earlier != id) {
            return Err(Error::validation(
                "workspaceId",
                "named twice in the query string with different values",
            ));
        }
        found = Some(id);
    }
    Ok(found)
}

/// A user-supplied value cut short for an error message.
fn short(value: &str) -> String {
    let mut out: String = value.chars().filter(|c| !c.is_control()).take(64).collect();
    if value.chars().count() > 64 {
        out.push('…');
    }
    out
}

/// The session token from the `Cookie` header(s), if any.
pub fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.trim().trim_matches('"').to_string())
        .filter(|value| !value.is_empty())
}

/// An optional JSON body: empty means `T::default()`.
pub struct OptionalJson<T>(pub T);

impl<T: DeserializeOwned + Default, S: Send + Sync> FromRequest<S> for OptionalJson<T> {
    type Rejection = Error;

    async fn from_request(request: Request, state: &S) -> Result<Self, Error> {
        let bytes = read_body(request, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(T::default()));
        }
        must_be_an_object(&bytes)?;
        serde_json::from_slice(&bytes)
            .map(OptionalJson)
            .map_err(|e| Error::BadRequest(format!("invalid JSON body: {e}")))
    }
}

/// Where the client's address comes from: the TCP peer, or (behind a reverse proxy) the one
/// header the operator named; no other header is believed.
#[derive(Debug, Clone, Default)]
pub struct AddressSource {
    pub trusted_header: Option<HeaderName>,
}

impl AddressSource {
    pub fn new(header: Option<&str>) -> anyhow::Result<Self> {
        let trusted_header = match header.map(str::trim).filter(|h| !h.is_empty()) {
            None => None,
            Some(name) => Some(
                HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes()).map_err(|_| {
                    anyhow::anyhow!("http.trusted_proxy_header '{name}' is not a header name")
                })?,
            ),
        };
        Ok(AddressSource { trusted_header })
    }

    /// The client's address: with a trusted header, its last entry (the one the proxy
    /// appended: entries before it are the client's own say); without one, or when the
    /// header is missing or unreadable, the TCP peer.
    pub fn client(&self, headers: &HeaderMap, peer: IpAddr) -> IpAddr {
        let Some(name) = &self.trusted_header else {
            return peer;
        };
        headers
            .get_all(name)
            .iter()
            .next_back()
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit(',').next())
            .and_then(|last| parse_forwarded_ip(last.trim()))
            .unwrap_or(peer)
    }
}

/// `1.2.3.4`, `1.2.3.4:5678`, `2001:db8::1` or `[2001:db8::1]:5678`.
fn parse_forwarded_ip(raw: &str) -> Option<IpAddr> {
    if let Ok(ip) = raw.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(socket) = raw.parse::<std::net::SocketAddr>() {
        return Some(socket.ip());
    }
    None
}

/// The client's address, per [`AddressSource`].
pub struct ClientAddr(pub IpAddr);

impl FromRequestParts<AppState> for ClientAddr {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        let peer = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|info| info.0.ip())
            .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
        Ok(ClientAddr(state.client_addr.client(&parts.headers, peer)))
    }
}

/// Where this request's rate-limit status goes (for the `X-RateLimit-*` headers).
impl<S: Send + Sync> FromRequestParts<S> for RateSlot {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Error> {
        Ok(parts
            .extensions
            .get::<RateSlot>()
            .cloned()
            .unwrap_or_default())
    }
}
