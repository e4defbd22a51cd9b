//! Extractors whose rejections speak the error envelope.

use std::error::Error as _;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::Json;
use serde::de::DeserializeOwned;

use super::AppState;
use crate::error::Error;
use crate::services::{Caller, RateSlot};

pub const API_KEY_HEADER: &str = "x-api-key";

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

/// The caller, authenticated by `X-API-Key`.
impl FromRequestParts<AppState> for Caller {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        let key = parts
            .headers
            .get(API_KEY_HEADER)
            .and_then(|v| v.to_str().ok());
        let mut caller = state.accounts.authenticate(key).await?;
        if let Some(slot) = parts.extensions.get::<RateSlot>() {
            caller.rate = slot.clone();
        }
        Ok(caller)
    }
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
