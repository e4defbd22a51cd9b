//! Routing in a cluster: any node accepts any request; one that touches a workspace is served by
//! the workspace's owner. This middleware tells which workspace a request acts in (from its
//! credentials and what it names, as `Gate::home` decides), asks the cluster where that is
//! served, and either serves it here, holding the workspace until the handler has answered, or
//! forwards it to the owner and relays the answer unchanged, headers included. Requests that
//! touch no workspace (sign-up, sign-in, OAuth, health, the dashboard's files) are served where
//! they arrive.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use uuid::Uuid;

use super::error::KeepBody;
use super::extract::{addressed_workspace, session_cookie, API_KEY_HEADER};
use super::AppState;
use crate::error::Error;
use crate::services::cluster::auth::{NodeAuth, FORWARDED_HEADER};
use crate::services::cluster::{Cluster, Route};
use crate::services::Identity;

/// What the router needs in a cluster.
#[derive(Clone)]
pub struct ClusterRouting {
    pub cluster: Arc<Cluster>,
    pub auth: NodeAuth,
    pub client: reqwest::Client,
    /// How long a JSON body may take to arrive when it must be read to find its workspace.
    pub body_timeout: Duration,
    pub max_body_bytes: usize,
}

impl ClusterRouting {
    pub fn new(
        cluster: Arc<Cluster>,
        secret: &str,
        forward_timeout: Duration,
        body_timeout: Duration,
        max_body_bytes: usize,
    ) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(2))
            .timeout(forward_timeout)
            .pool_idle_timeout(Duration::from_secs(30))
            .build()?;
        Ok(ClusterRouting {
            cluster,
            auth: NodeAuth::new(secret),
            client,
            body_timeout,
            max_body_bytes,
        })
    }
}

/// The header naming the node that served a request (on every answer of a cluster node).
pub const NODE_HEADER: HeaderName = HeaderName::from_static("x-memvault-node");

/// How many nodes a forwarded request has passed (set by the forwarding node; trusted only
/// with a valid signature).
const HOPS_HEADER: &str = "x-memvault-hops";
/// A request is forwarded at most this many times: once to the owner a node knows of, and once
/// more when that owner has just handed the workspace on.
const MAX_HOPS: u8 = 2;

/// Hop-by-hop headers (RFC 9110 7.6.1) are not relayed. `Host` is: the owner checks a signed-in
/// request's `Origin` against the host the client addressed.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Whether a path can touch a workspace (the rest is served where it arrives).
fn routed(path: &str) -> bool {
    path == "/mcp"
        || path.starts_with("/mcp/")
        || path.starts_with("/api/memories")
        || path.starts_with("/api/context-vault/")
        || path.starts_with("/api/subscription/")
        || path.starts_with("/api/workspaces/")
        || path.starts_with("/api/scopes/")
}

/// The workspace a path names (`/api/workspaces/{id}/...`).
fn workspace_in_path(path: &str) -> Option<Uuid> {
    let rest = path.strip_prefix("/api/workspaces/")?;
    Uuid::parse_str(rest.split('/').next()?).ok()
}

pub async fn route(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(routing) = state.cluster.clone() else {
        return next.run(request).await;
    };
    let mut response = match dispatch(&state, &routing, request, next).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    };
    // The serving node names itself (a forwarded answer keeps the owner's name).
    if !response.headers().contains_key(&NODE_HEADER) {
        if let Ok(value) = HeaderValue::from_str(&routing.cluster.node().to_string()) {
            response.headers_mut().insert(NODE_HEADER, value);
        }
    }
    response
}

async fn dispatch(
    state: &AppState,
    routing: &ClusterRouting,
    request: Request,
    next: Next,
) -> Result<Response, Error> {
    let target = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| request.uri().path().to_string());
    let hops: u8 = request
        .headers()
        .get(HOPS_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let forwarded = match request.headers().get(FORWARDED_HEADER) {
        None => false,
        Some(value) => {
            let now = chrono::Utc::now().timestamp();
            let from = value.to_str().ok().and_then(|v| {
                routing
                    .auth
                    .verify(v, now, request.method().as_str(), &target)
            });
            if from.is_none() {
                return Err(Error::Forbidden(
                    "a forwarded request with an invalid cluster signature".to_string(),
                ));
            }
            true
        }
    };
    if !routed(request.uri().path()) {
        return Ok(next.run(request).await);
    }
    let (request, workspace) = workspace_of(state, routing, request).await?;
    let Some(workspace) = workspace else {
        // The service decides (and refuses: no workspace it could act in).
        return Ok(next.run(request).await);
    };
    match routing.cluster.route(workspace, forwarded).await? {
        Route::Local(serving) => {
            // An MCP call is answered as a stream, and its tool runs while the stream is
            // written: the workspace stays here until the stream ends. (A REST handler has
            // done its work when it answers; a standing MCP GET stream does no work.)
            let streams_work = request.method() == axum::http::Method::POST
                && request.uri().path().starts_with("/mcp");
            let response = next.run(request).await;
            if !streams_work {
                drop(serving);
                return Ok(response);
            }
            let (parts, body) = response.into_parts();
            let guarded = futures_util::StreamExt::map(body.into_data_stream(), move |chunk| {
                let _tenure = &serving;
                chunk
            });
            Ok(Response::from_parts(parts, Body::from_stream(guarded)))
        }
        Route::Forward { url, .. } if forwarded && hops >= MAX_HOPS => {
            tracing::info!(%workspace, owner = %url, "a forwarded request reached a node that does not own its workspace");
            Err(Error::Busy {
                message: "the workspace is moving between nodes; retry".to_string(),
                retry_after: 1,
            })
        }
        Route::Forward { url, node } => {
            let hops = if forwarded { hops.saturating_add(1) } else { 1 };
            forward(routing, request, &url, node, &target, hops).await
        }
    }
}

/// The workspace `request` acts in, when it can be told; the request comes back whole (a JSON
/// body read to find `workspaceId` is put back).
async fn workspace_of(
    state: &AppState,
    routing: &ClusterRouting,
    request: Request,
) -> Result<(Request, Option<Uuid>), Error> {
    let headers = request.headers();
    let key = headers
        .get(API_KEY_HEADER)
        .or_else(|| headers.get("memvault-api-key"))
        .map(|v| v.to_str().unwrap_or_default().to_string());
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::to_string);
    let cookie = session_cookie(headers);
    // Credentials that fail are refused where the request arrived, as they would be anywhere.
    let identity: Identity = match (key, bearer, cookie) {
        (Some(key), _, _) => match state.accounts.authenticate_key(Some(&key)).await {
            Ok(identity) => identity,
            Err(_) => return Ok((request, None)),
        },
        (None, Some(token), _) if request.uri().path().starts_with("/mcp") => {
            match state.oauth.authenticate_bearer(&token).await {
                Ok(identity) => identity,
                Err(_) => return Ok((request, None)),
            }
        }
        (None, _, Some(cookie)) => match state.accounts.authenticate_session(&cookie).await {
            Ok(identity) => identity,
            Err(_) => return Ok((request, None)),
        },
        _ => return Ok((request, None)),
    };
    let mut named = workspace_in_path(request.uri().path())
        .or(addressed_workspace(request.uri().query()).unwrap_or(None));
    let mut request = request;
    if named.is_none() && matches!(identity, Identity::User { .. }) && is_json(request.headers()) {
        let (parts, body) = request.into_parts();
        let bytes = match tokio::time::timeout(
            routing.body_timeout,
            axum::body::to_bytes(body, routing.max_body_bytes),
        )
        .await
        {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(_)) => return Err(Error::PayloadTooLarge),
            Err(_) => return Err(Error::BodyTimeout),
        };
        named = workspace_in_body(&bytes);
        request = Request::from_parts(parts, Body::from(bytes));
    }
    let home = state.accounts.gate().home(&identity, named).await?;
    Ok((request, home))
}

/// A body the JSON extractors would read (`ApiJson` takes any content type naming JSON).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("json"))
}

/// A JSON object's top-level `workspaceId`, when it is a UUID.
fn workspace_in_body(bytes: &Bytes) -> Option<Uuid> {
    #[derive(serde::Deserialize)]
    struct Named {
        #[serde(rename = "workspaceId")]
        workspace_id: Option<serde_json::Value>,
    }
    let named: Named = serde_json::from_slice(bytes).ok()?;
    Uuid::parse_str(named.workspace_id?.as_str()?.trim()).ok()
}

/// Sends `request` to the owner at `url` and relays its answer.
async fn forward(
    routing: &ClusterRouting,
    request: Request,
    url: &str,
    owner: Uuid,
    target: &str,
    hops: u8,
) -> Result<Response, Error> {
    let (parts, body) = request.into_parts();
    let method = reqwest::Method::from_bytes(parts.method.as_str().as_bytes())
        .map_err(|e| Error::Internal(e.to_string()))?;
    let mut outgoing = routing
        .client
        .request(method, format!("{}{}", url.trim_end_matches('/'), target));
    for (name, value) in &parts.headers {
        if !HOP_BY_HOP.contains(&name.as_str())
            && name.as_str() != FORWARDED_HEADER
            && name.as_str() != HOPS_HEADER
        {
            outgoing = outgoing.header(name.as_str(), value.as_bytes());
        }
    }
    let signature = routing.auth.sign(
        routing.cluster.node(),
        chrono::Utc::now().timestamp(),
        parts.method.as_str(),
        target,
    );
    outgoing = outgoing
        .header(FORWARDED_HEADER, signature)
        .header(HOPS_HEADER, hops.to_string())
        .body(reqwest::Body::wrap_stream(body.into_data_stream()));
    let answer = match outgoing.send().await {
        Ok(answer) => answer,
        Err(error) => {
            // The owner is unreachable (it may have died): its lease is taken once its
            // heartbeat expires; the client retries.
            tracing::warn!(%owner, owner_url = %url, %error, "cannot forward to the workspace's owner");
            return Err(Error::Busy {
                message: "the node serving this workspace is unreachable; retry".to_string(),
                retry_after: 1,
            });
        }
    };
    let mut response = Response::builder().status(answer.status().as_u16());
    if let Some(headers) = response.headers_mut() {
        for (name, value) in answer.headers() {
            if HOP_BY_HOP.contains(&name.as_str()) {
                continue;
            }
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_str().as_bytes()),
                HeaderValue::from_bytes(value.as_bytes()),
            ) {
                headers.append(name, value);
            }
        }
    }
    let mut response = response
        .body(Body::from_stream(answer.bytes_stream()))
        .map_err(|e| Error::Internal(e.to_string()))?;
    // The owner's answer is complete as it is: no envelope, no rate headers added here.
    response.extensions_mut().insert(KeepBody);
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paths_that_touch_a_workspace() {
        for path in [
            "/mcp",
            "/api/memories",
            "/api/memories/search",
            "/api/context-vault/documents/upload",
            "/api/subscription/current",
            "/api/workspaces/0f8fad5b-d9cb-469f-a165-70867728950e/team",
            "/api/scopes/alice",
        ] {
            assert!(routed(path), "{path}");
        }
        // Every documented route is routed, but those that touch no workspace: a new route
        // cannot be forgotten here.
        let local = [
            "/api/auth/",
            "/api/invitations/",
            "/api/webhooks/",
            "/healthz",
            "/readyz",
        ];
        for path in crate::http::openapi::document().paths.paths.keys() {
            if path == "/api/workspaces" || local.iter().any(|l| path.starts_with(l)) {
                continue;
            }
            assert!(
                routed(path),
                "{path} is not routed to its workspace's owner"
            );
        }
        for path in [
            "/api/auth/sign-in",
            "/api/workspaces",
            "/api/invitations/x/accept",
            "/oauth/token",
            "/healthz",
            "/readyz",
            "/app/",
            "/api/openapi.json",
            "/api/webhooks/billing",
        ] {
            assert!(!routed(path), "{path}");
        }
        assert_eq!(
            workspace_in_path("/api/workspaces/0f8fad5b-d9cb-469f-a165-70867728950e/api-keys"),
            Some(Uuid::parse_str("0f8fad5b-d9cb-469f-a165-70867728950e").unwrap())
        );
        assert_eq!(workspace_in_path("/api/workspaces/nope/team"), None);
        let body =
            Bytes::from(r#"{"workspaceId": " 0f8fad5b-d9cb-469f-a165-70867728950e ", "x": 1}"#);
        assert!(workspace_in_body(&body).is_some());
        assert_eq!(workspace_in_body(&Bytes::from("[1]")), None);
        assert_eq!(
            workspace_in_body(&Bytes::from(r#"{"workspaceId": 3}"#)),
            None
        );
    }
}
