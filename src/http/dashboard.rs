//! The dashboard: a small single-page app in plain HTML, CSS and JavaScript, compiled into the
//! binary (`include_str!`) and served from it; no build step, no CDN, no network at run time.
//! It is a client of the REST API like any other: it signs in for the session cookie and calls
//! `/api/...` from this origin, so the API's roles, scope walls and CSRF check apply to it.
//!
//! `GET /` and `GET /app` redirect to `/app/`; every `/app/...` path serves `index.html` (the
//! app routes on the path itself); `/app/assets/{file}` serves the script and the styles.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use sha2::{Digest, Sha256};

use crate::error::Error;

/// Where the app lives.
pub const APP_PATH: &str = "/app/";

/// One embedded file and its validator.
struct Asset {
    body: &'static str,
    content_type: &'static str,
    etag: String,
}

impl Asset {
    fn new(body: &'static str, content_type: &'static str) -> Asset {
        let digest = Sha256::digest(body.as_bytes());
        Asset {
            body,
            content_type,
            etag: format!("\"{}\"", hex::encode(&digest[..12])),
        }
    }

    /// The file, or `304 Not Modified` when the browser already holds this version. Browsers
    /// revalidate on every load (`no-cache`), so a new binary's assets are picked up at once.
    fn respond(&self, headers: &HeaderMap) -> Response {
        let fresh = headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|tags| {
                tags.split(',')
                    .any(|tag| tag.trim() == self.etag || tag.trim() == "*")
            });
        let status = if fresh {
            StatusCode::NOT_MODIFIED
        } else {
            StatusCode::OK
        };
        let body = if fresh { "" } else { self.body };
        let mut response = (status, body).into_response();
        let out = response.headers_mut();
        out.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(self.content_type),
        );
        out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        if let Ok(etag) = HeaderValue::from_str(&self.etag) {
            out.insert(header::ETAG, etag);
        }
        out.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        response
    }
}

static INDEX: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        include_str!("dashboard/index.html"),
        "text/html; charset=utf-8",
    )
});
static SCRIPT: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        include_str!("dashboard/app.js"),
        "text/javascript; charset=utf-8",
    )
});
static STYLES: LazyLock<Asset> =
    LazyLock::new(|| Asset::new(include_str!("dashboard/app.css"), "text/css; charset=utf-8"));

/// The page may load and reach only this server: its own script, styles and API.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; \
     base-uri 'none'; frame-ancestors 'none'";

/// `GET /` and `GET /app`: to the app.
pub async fn root() -> Redirect {
    Redirect::to(APP_PATH)
}

/// `GET /app/` and `GET /app/{*rest}`: the app's page; the script shows the view the path names.
pub async fn index(headers: HeaderMap) -> Response {
    let mut response = INDEX.respond(&headers);
    let out = response.headers_mut();
    out.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    out.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    out.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    response
}

/// `GET /app/assets/{file}`: `app.js` and `app.css`; anything else is a 404.
pub async fn asset(Path(file): Path<String>, headers: HeaderMap) -> Result<Response, Error> {
    match file.as_str() {
        "app.js" => Ok(SCRIPT.respond(&headers)),
        "app.css" => Ok(STYLES.respond(&headers)),
        _ => Err(Error::NotFound(format!("no dashboard asset named {file}"))),
    }
}
