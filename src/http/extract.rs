//! Extractors whose rejections speak the error envelope.

use std::error::Error as _;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::Json;
use serde::de::DeserializeOwned;

use super::AppState;
use crate::error::Error;
use crate::services::{AccountsService, Principal, RateSlot};

pub const API_KEY_HEADER: &str = "x-api-key";
pub const SESSION_COOKIE: &str = "memvault.session_token";

/// A JSON body; malformed or mistyped bodies are 400 naming the field, a missing JSON content
/// type is 415, an oversized body 413.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = Error;

    async fn from_request(request: Request, state: &S) -> Result<Self, Error> {
        match Json::<T>::from_request(request, state).await {
            Ok(Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => Err(json_error(rejection)),
        }
    }
}

fn json_error(rejection: JsonRejection) -> Error {
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
            return Ok(Principal {
                source: AccountsService::rest_source(&identity),
                identity,
                rate,
            });
        }
        if let Some(token) = session_cookie(&parts.headers) {
            let identity = state.accounts.authenticate_session(&token).await?;
            if !parts.method.is_safe() {
                state.web.check_origin(&parts.headers)?;
            }
            return Ok(Principal {
                source: AccountsService::rest_source(&identity),
                identity,
                rate,
            });
        }
        Err(Error::Unauthorized(
            "missing API key: send it in the X-API-Key header (or sign in for a session)"
                .to_string(),
        ))
    }
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
        let bytes = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    Error::PayloadTooLarge
                } else {
                    Error::BadRequest(format!(
                        "could not read the body: {}",
                        rejection.body_text()
                    ))
                }
            })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(T::default()));
        }
        serde_json::from_slice(&bytes)
            .map(OptionalJson)
            .map_err(|e| Error::BadRequest(format!("invalid JSON body: {e}")))
    }
}

/// The client's address (the TCP peer; behind a reverse proxy, the proxy's).
pub struct ClientAddr(pub std::net::IpAddr);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Error> {
        let addr = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|info| info.0.ip())
            .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
        Ok(ClientAddr(addr))
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
