//! The error envelope. Every error response, whether from a service, an extractor, the router
//! (404, 405) or a panic, leaves as `{error, code, requestId}` (+ `errorId` on 5xx), and every
//! 5xx is logged with its cause while the client sees none of it.

use std::any::Any;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rand::distr::{Distribution, Uniform};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::REQUEST_ID;
use crate::error::Error;
use crate::services::RateSlot;

/// The body of every error response.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    /// What went wrong, for people; validation errors name the field.
    pub error: String,
    /// `HTTP_<status>`, or `INTERNAL_ERROR` for 500.
    pub code: String,
    /// The same value as the `X-Request-Id` header.
    pub request_id: String,
    /// On server errors only: `ERR_` + 8 characters, a reference for support.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_id: Option<String>,
    /// On 429 and on a busy 503: seconds to wait before retrying (the `Retry-After` header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
}

/// Attached to an error response by [`Error::into_response`]; the envelope turns it into the body.
#[derive(Debug, Clone)]
struct ErrorMeta {
    /// Shown to the client.
    message: String,
    /// Logged only (5xx).
    cause: Option<String>,
}

fn code_for(status: StatusCode) -> String {
    crate::error::code_for_status(status.as_u16())
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let message = self.public_message();
        // Server errors keep their cause for the log; the client sees only the message.
        let cause = status.is_server_error().then(|| self.to_string());
        let mut response = status.into_response();
        if let Some(seconds) = self.retry_after(chrono::Utc::now().timestamp()) {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
            .extensions_mut()
            .insert(ErrorMeta { message, cause });
        response
    }
}

/// What a status means when nothing more specific was said (router and layer rejections).
fn default_message(status: StatusCode) -> String {
    match status {
        StatusCode::NOT_FOUND => "route not found".to_string(),
        StatusCode::METHOD_NOT_ALLOWED => "method not allowed".to_string(),
        StatusCode::PAYLOAD_TOO_LARGE => "request body too large".to_string(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported media type".to_string(),
        other => other.canonical_reason().unwrap_or("error").to_lowercase(),
    }
}

fn error_id() -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let pick = Uniform::new(0, CHARS.len()).expect("non-empty alphabet");
    let mut rng = rand::rng();
    let suffix: String = (0..8)
        .map(|_| CHARS[pick.sample(&mut rng)] as char)
        .collect();
    format!("ERR_{suffix}")
}

/// Marks a response whose error body is already in its final shape (OAuth's
/// `{error, error_description}`, an HTML page): the envelope leaves it alone.
#[derive(Debug, Clone, Copy)]
pub struct KeepBody;

/// The middleware: gives each request its rate slot, then writes rate-limit headers and the
/// error envelope on the way out.
pub async fn envelope(mut request: Request, next: Next) -> Response {
    let request_id = request
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let slot = RateSlot::default();
    request.extensions_mut().insert(slot.clone());
    let mut response = next.run(request).await;

    if let Some(rate) = slot.get() {
        let headers = response.headers_mut();
        headers.insert("x-ratelimit-limit", HeaderValue::from(rate.limit));
        headers.insert("x-ratelimit-remaining", HeaderValue::from(rate.remaining));
        headers.insert("x-ratelimit-reset", HeaderValue::from(rate.reset_at));
    }

    let status = response.status();
    if !(status.is_client_error() || status.is_server_error())
        || response.extensions().get::<KeepBody>().is_some()
    {
        return response;
    }
    let meta = response.extensions_mut().remove::<ErrorMeta>();
    let (message, cause) = match meta {
        Some(meta) => (meta.message, meta.cause),
        None => (default_message(status), None),
    };
    let error_id = status.is_server_error().then(error_id);
    if let Some(error_id) = &error_id {
        tracing::error!(
            status = status.as_u16(),
            error_id = %error_id,
            request_id = %request_id,
            cause = cause.as_deref().unwrap_or(&message),
            "request failed"
        );
    }
    let retry_after = response
        .headers()
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let body = ErrorBody {
        error: message,
        code: code_for(status),
        request_id,
        error_id,
        retry_after,
    };
    let json = serde_json::to_vec(&body).unwrap_or_default();
    let (mut parts, _) = response.into_parts();
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(json))
}

pub async fn not_found() -> Error {
    Error::NotFound("route not found".to_string())
}

pub async fn method_not_allowed() -> Error {
    Error::MethodNotAllowed
}

/// Turns a handler panic into a 500 that the envelope completes; the server keeps serving.
#[derive(Clone, Copy)]
pub struct PanicResponse;

impl tower_http::catch_panic::ResponseForPanic for PanicResponse {
    type ResponseBody = Body;

    fn response_for_panic(&mut self, panic: Box<dyn Any + Send + 'static>) -> Response<Body> {
        let detail = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".to_string());
        Error::Internal(format!("handler panicked: {detail}")).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_ids_have_the_documented_shape() {
        let id = error_id();
        assert_eq!(id.len(), 12);
        assert!(id.starts_with("ERR_"));
        assert!(id[4..]
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()));
    }

    #[test]
    fn codes_follow_the_status() {
        assert_eq!(code_for(StatusCode::NOT_FOUND), "HTTP_404");
        assert_eq!(
            code_for(StatusCode::INTERNAL_SERVER_ERROR),
            "INTERNAL_ERROR"
        );
        assert_eq!(code_for(StatusCode::SERVICE_UNAVAILABLE), "HTTP_503");
    }
}
