//! The OAuth 2.1 endpoints of MCP connectors: metadata (RFC 9728, RFC 8414), client
//! registration (RFC 7591), the authorization page (sign-in, then consent: a workspace and
//! scopes), the token endpoint (PKCE S256, refresh rotation) and revocation (RFC 7009).
//! Protocol errors are answered in OAuth's own shape (`{error, error_description}`), not the
//! API's envelope; pages are HTML.

use axum::body::Bytes;
use axum::extract::{Form, FromRequest, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Json;

use super::accounts::dto::SignIn;
use super::error::KeepBody;
use super::extract::{session_cookie, ClientAddr};
use super::web::escape_html as esc;
use super::AppState;
use crate::model::accounts::{Membership, Scope};
use crate::services::accounts::AccountsService;
use crate::services::oauth::{
    AuthorizeFailure, AuthorizeParams, AuthorizeRequest, OAuthError, RevokeForm, TokenForm,
};
use crate::services::{Principal, RateSlot};

/// A response the envelope leaves as it is.
fn kept(status: StatusCode, response: impl IntoResponse) -> Response {
    let mut response = (status, response).into_response();
    response.extensions_mut().insert(KeepBody);
    response
}

fn no_store(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

fn oauth_error(error: OAuthError) -> Response {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::BAD_REQUEST);
    no_store(kept(status, Json(error.body())))
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`.
pub async fn resource_metadata(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let base = state.web.base_url(&headers);
    Json(state.oauth.resource_metadata(&base)).into_response()
}

/// `GET /.well-known/oauth-authorization-server`.
pub async fn server_metadata(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let base = state.web.base_url(&headers);
    Json(state.oauth.server_metadata(&base)).into_response()
}

/// `POST /oauth/register`.
pub async fn register(
    State(state): State<AppState>,
    ClientAddr(from): ClientAddr,
    request: axum::extract::Request,
) -> Response {
    // Counted before the body is read.
    if let Err(refused) = state.oauth.admit_registration(from) {
        return refused.into_response();
    }
    let body = match Bytes::from_request(request, &state).await {
        Ok(body) => body,
        Err(rejection) => return rejection.into_response(),
    };
    match state.oauth.register(&body).await {
        Ok(client) => no_store((StatusCode::CREATED, Json(client)).into_response()),
        Err(error) => oauth_error(error),
    }
}

/// A form body, or OAuth's `invalid_request`.
fn form<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, OAuthError> {
    serde_urlencoded::from_bytes(body).map_err(|e| OAuthError {
        status: 400,
        error: "invalid_request",
        description: format!("the body is not a form: {e}"),
    })
}

/// `POST /oauth/token` (form).
pub async fn token(State(state): State<AppState>, body: Bytes) -> Response {
    let form: TokenForm = match form(&body) {
        Ok(form) => form,
        Err(refused) => return oauth_error(refused),
    };
    match state.oauth.token(form).await {
        Ok(answer) => no_store(Json(answer).into_response()),
        Err(error) => oauth_error(error),
    }
}

/// `POST /oauth/revoke` (form).
pub async fn revoke(State(state): State<AppState>, body: Bytes) -> Response {
    let form: RevokeForm = match form(&body) {
        Ok(form) => form,
        Err(refused) => return oauth_error(refused),
    };
    match state.oauth.revoke(form).await {
        Ok(()) => no_store(Json(serde_json::json!({})).into_response()),
        Err(error) => oauth_error(error),
    }
}

// ----- pages -------------------------------------------------------------------------------------

fn page(status: StatusCode, title: &str, body: &str) -> Response {
    kept(
        status,
        Html(format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{t} · memvault</title><style>body{{font-family:system-ui,sans-serif;\
             max-width:32rem;margin:2rem auto;padding:0 1rem;line-height:1.5}}label{{display:block;\
             margin:.6rem 0}}input[type=email],input[type=password],select{{width:100%;\
             padding:.4rem;font:inherit}}button{{font:inherit;padding:.4rem 1rem;margin:.4rem .4rem 0 0}}\
             .error{{color:#a00}}</style></head><body><main><h1>{t}</h1>{body}</main></body></html>",
            t = esc(title)
        )),
    )
}

fn hidden(p: &AuthorizeParams) -> String {
    let fields = [
        ("response_type", &p.response_type),
        ("client_id", &p.client_id),
        ("redirect_uri", &p.redirect_uri),
        ("code_challenge", &p.code_challenge),
        ("code_challenge_method", &p.code_challenge_method),
        ("state", &p.state),
        ("scope", &p.scope),
        ("resource", &p.resource),
    ];
    fields
        .iter()
        .filter_map(|(name, value)| {
            value.as_ref().map(|v| {
                format!(
                    "<input type=\"hidden\" name=\"{name}\" value=\"{}\">",
                    esc(v)
                )
            })
        })
        .collect()
}

fn authorize_path(p: &AuthorizeParams) -> String {
    format!(
        "/oauth/authorize?{}",
        serde_urlencoded::to_string(p).unwrap_or_default()
    )
}

fn sign_in_page(p: &AuthorizeParams, client: &str, error: Option<&str>) -> Response {
    let status = if error.is_some() {
        StatusCode::UNAUTHORIZED
    } else {
        StatusCode::OK
    };
    let error = error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", esc(e)))
        .unwrap_or_default();
    page(
        status,
        "Sign in to memvault",
        &format!(
            "<p><strong>{}</strong> wants to connect to your memvault. Sign in first.</p>{error}\
             <form method=\"post\" action=\"/oauth/sign-in\">\
             <input type=\"hidden\" name=\"next\" value=\"{}\">\
             <label>Email <input type=\"email\" name=\"email\" autocomplete=\"username\" required></label>\
             <label>Password <input type=\"password\" name=\"password\" autocomplete=\"current-password\" required></label>\
             <button type=\"submit\">Sign in</button></form>",
            esc(client),
            esc(&authorize_path(p))
        ),
    )
}

fn scope_words(scope: Scope) -> &'static str {
    match scope {
        Scope::MemoriesRead => "read your memories, profile and history",
        Scope::MemoriesWrite => "save, change and forget memories",
        Scope::VaultRead => "search the Context Vault and see its documents",
        Scope::VaultWrite => "add company facts and documents to the Context Vault",
    }
}

fn consent_page(
    p: &AuthorizeParams,
    request: &AuthorizeRequest,
    workspaces: &[Membership],
) -> Response {
    let redirect_host = url::Url::parse(&request.redirect_uri)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| request.redirect_uri.clone());
    let options: String = workspaces
        .iter()
        .map(|w| {
            format!(
                "<option value=\"{}\">{} ({})</option>",
                w.workspace_id,
                esc(&w.name),
                w.role
            )
        })
        .collect();
    let scopes: String = request
        .scopes
        .iter()
        .map(|s| {
            format!(
                "<label><input type=\"checkbox\" name=\"scopes\" value=\"{s}\" checked> \
                 {} <code>{s}</code></label>",
                scope_words(*s)
            )
        })
        .collect();
    page(
        StatusCode::OK,
        "Connect an application",
        &format!(
            "<p><strong>{}</strong> (returning to <code>{}</code>) asks to use your memvault.</p>\
             <form method=\"post\" action=\"/oauth/authorize\">{}\
             <label>Workspace <select name=\"workspace_id\" required>{options}</select></label>\
             <fieldset><legend>It may</legend>{scopes}</fieldset>\
             <p>What it may do is also limited by your role in the workspace.</p>\
             <button type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>\
             <button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></form>",
            esc(&request.client.name),
            esc(&redirect_host),
            hidden(p),
        ),
    )
}

fn failure(failure: AuthorizeFailure) -> Response {
    match failure {
        AuthorizeFailure::Page(why) => page(
            StatusCode::BAD_REQUEST,
            "This connection cannot go on",
            &format!("<p class=\"error\" role=\"alert\">{}</p>", esc(&why)),
        ),
        AuthorizeFailure::Redirect(url) => Redirect::to(&url).into_response(),
    }
}

/// The signed-in user of the session cookie, if any.
async fn signed_in(state: &AppState, headers: &HeaderMap, rate: RateSlot) -> Option<Principal> {
    let token = session_cookie(headers)?;
    let identity = state.accounts.authenticate_session(&token).await.ok()?;
    let source = AccountsService::rest_source(&identity);
    Some(Principal::new(identity, rate, source))
}

/// `GET /oauth/authorize`: sign-in, then the consent page.
pub async fn authorize_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    rate: RateSlot,
    Query(params): Query<AuthorizeParams>,
) -> Response {
    let base = state.web.base_url(&headers);
    let request = match state.oauth.check_authorize(&params, &base).await {
        Ok(request) => request,
        Err(f) => return failure(f),
    };
    let Some(who) = signed_in(&state, &headers, rate).await else {
        return sign_in_page(&params, &request.client.name, None);
    };
    match state.oauth.workspaces_of(&who).await {
        Ok(workspaces) if !workspaces.is_empty() => consent_page(&params, &request, &workspaces),
        Ok(_) => page(
            StatusCode::FORBIDDEN,
            "No workspace",
            "<p class=\"error\">You are not a member of any workspace yet.</p>",
        ),
        Err(error) => error.into_response(),
    }
}

/// `POST /oauth/sign-in`: signs in from the authorization page and goes back to it.
pub async fn sign_in(
    State(state): State<AppState>,
    ClientAddr(from): ClientAddr,
    headers: HeaderMap,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    if let Err(error) = state.web.check_origin_if_sent(&headers) {
        return error.into_response();
    }
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let next = field("next").unwrap_or_default();
    let Some(query) = next.strip_prefix("/oauth/authorize?") else {
        return page(
            StatusCode::BAD_REQUEST,
            "Sign in",
            "<p class=\"error\">This sign-in form is only for connecting applications.</p>",
        );
    };
    let params: AuthorizeParams = serde_urlencoded::from_str(query).unwrap_or_default();
    let input = SignIn {
        email: field("email"),
        password: field("password"),
    };
    match state.accounts.sign_in(from, input.parse()).await {
        Ok(signed) => {
            let cookie = state.web.session_cookie(&signed.token);
            let mut response = Redirect::to(&authorize_path(&params)).into_response();
            response.headers_mut().insert(header::SET_COOKIE, cookie);
            response
        }
        Err(error) => {
            let client = match params.client_id.as_deref() {
                Some(id) => state
                    .store
                    .oauth_client(id)
                    .await
                    .ok()
                    .flatten()
                    .map(|c| c.name)
                    .unwrap_or_else(|| "An application".to_string()),
                None => "An application".to_string(),
            };
            let mut response = sign_in_page(&params, &client, Some(&error.public_message()));
            // A refusal keeps its status (429, 503, 400) and its Retry-After.
            if error.status() != 401 {
                *response.status_mut() = StatusCode::from_u16(error.status())
                    .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            }
            if let Some(seconds) = error.retry_after(chrono::Utc::now().timestamp()) {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            }
            response
        }
    }
}

/// `POST /oauth/authorize`: the consent decision (a signed-in user; CSRF-checked by origin).
pub async fn authorize_decision(
    State(state): State<AppState>,
    who: Principal,
    headers: HeaderMap,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    let base = state.web.base_url(&headers);
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let params = AuthorizeParams {
        response_type: field("response_type"),
        client_id: field("client_id"),
        redirect_uri: field("redirect_uri"),
        code_challenge: field("code_challenge"),
        code_challenge_method: field("code_challenge_method"),
        state: field("state"),
        scope: field("scope"),
        resource: field("resource"),
    };
    let request = match state.oauth.check_authorize(&params, &base).await {
        Ok(request) => request,
        Err(f) => return failure(f),
    };
    let chosen: Vec<String> = form
        .iter()
        .filter(|(k, _)| k == "scopes")
        .map(|(_, v)| v.clone())
        .collect();
    let approve = field("decision").as_deref() == Some("approve");
    match state
        .oauth
        .decide(
            &who,
            &request,
            approve,
            field("workspace_id").as_deref(),
            &chosen,
            &base,
        )
        .await
    {
        Ok(url) => Redirect::to(&url).into_response(),
        Err(error) => error.into_response(),
    }
}
