//! Accounts handlers: sign-up, sign-in, sign-out and the session; workspaces, team, members,
//! invitations and API keys. Extract, parse the body ([`dto`]), call
//! [`AccountsService`](crate::services::AccountsService), answer the view (setting or clearing
//! the session cookie where that is the answer).

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::error::ErrorBody;
use super::extract::{ApiJson, ClientAddr};
use super::{AppState, Success, DONE};
use crate::error::Error;
use crate::services::Principal;

pub mod dto;

use dto::{
    ApiKeyCreated, ApiKeyList, ChangeRole, CreateApiKey, CreateInvitation, CreateWorkspace,
    InvitationAccepted, InvitationCreated, MemberChanged, SessionView, SignIn, SignUp, Team,
    WorkspaceCreated, WorkspaceList,
};

/// Creates an account and its first workspace (the new user owns it), and signs in: the
/// session cookie `memvault.session_token` is set.
#[utoipa::path(post, path = "/api/auth/sign-up", tag = "accounts", request_body = SignUp,
    responses(
        (status = 201, description = "signed up and signed in (Set-Cookie)", body = SessionView),
        (status = 400, description = "invalid field (named in `error`)", body = ErrorBody),
        (status = 403, description = "a cross-site request", body = ErrorBody),
        (status = 409, description = "the email already has an account", body = ErrorBody),
        (status = 429, description = "too many sign-ups from this address or for this email (Retry-After)", body = ErrorBody),
        (status = 503, description = "too many password hashes at once (Retry-After)", body = ErrorBody)))]
pub async fn sign_up(
    State(state): State<AppState>,
    ClientAddr(from): ClientAddr,
    headers: axum::http::HeaderMap,
    ApiJson(input): ApiJson<SignUp>,
) -> Result<Response, Error> {
    state.web.check_origin_if_sent(&headers)?;
    let signed_in = state.accounts.sign_up(from, input.parse()).await?;
    let cookie = state.web.session_cookie(&signed_in.token);
    Ok((
        StatusCode::CREATED,
        [(header::SET_COOKIE, cookie)],
        Json(SessionView::from(signed_in.session)),
    )
        .into_response())
}

/// Signs in with email and password: the session cookie is set. Limited per client address
/// (10 a minute) and per account (30 an hour); an unknown email and a wrong password get the
/// same answer.
#[utoipa::path(post, path = "/api/auth/sign-in", tag = "accounts", request_body = SignIn,
    responses(
        (status = 200, description = "signed in (Set-Cookie)", body = SessionView),
        (status = 400, description = "invalid field (named in `error`)", body = ErrorBody),
        (status = 401, description = "invalid email or password", body = ErrorBody),
        (status = 403, description = "a cross-site request", body = ErrorBody),
        (status = 429, description = "too many attempts from this address or for this account (Retry-After)", body = ErrorBody),
        (status = 503, description = "too many password hashes at once (Retry-After)", body = ErrorBody)))]
pub async fn sign_in(
    State(state): State<AppState>,
    ClientAddr(from): ClientAddr,
    headers: axum::http::HeaderMap,
    ApiJson(input): ApiJson<SignIn>,
) -> Result<Response, Error> {
    state.web.check_origin_if_sent(&headers)?;
    let signed_in = state.accounts.sign_in(from, input.parse()).await?;
    let cookie = state.web.session_cookie(&signed_in.token);
    Ok((
        [(header::SET_COOKIE, cookie)],
        Json(SessionView::from(signed_in.session)),
    )
        .into_response())
}

/// Ends the session and clears the cookie.
#[utoipa::path(post, path = "/api/auth/sign-out", tag = "accounts",
    security(("session" = [])),
    responses(
        (status = 200, description = "signed out", body = Success),
        (status = 401, description = "not signed in (or an API key)", body = ErrorBody),
        (status = 403, description = "a cross-site request", body = ErrorBody)))]
pub async fn sign_out(State(state): State<AppState>, who: Principal) -> Result<Response, Error> {
    state.accounts.sign_out(&who).await?;
    let cookie = state.web.clear_session_cookie();
    Ok(([(header::SET_COOKIE, cookie)], Json(DONE)).into_response())
}

/// The signed-in user, their session and workspaces.
#[utoipa::path(get, path = "/api/auth/session", tag = "accounts",
    security(("session" = [])),
    responses(
        (status = 200, description = "the session", body = SessionView),
        (status = 401, description = "not signed in, or the session ended", body = ErrorBody)))]
pub async fn session(
    State(state): State<AppState>,
    who: Principal,
) -> Result<Json<SessionView>, Error> {
    Ok(Json(state.accounts.session(&who).await?.into()))
}

/// The signed-in user's workspaces with their role and plan (a key: its own workspace).
#[utoipa::path(get, path = "/api/workspaces", tag = "workspaces",
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "workspaces", body = WorkspaceList),
        (status = 401, description = "no key or session", body = ErrorBody)))]
pub async fn list_workspaces(
    State(state): State<AppState>,
    who: Principal,
) -> Result<Json<WorkspaceList>, Error> {
    let workspaces = state.accounts.list_workspaces(&who).await?;
    Ok(Json(WorkspaceList {
        workspaces: workspaces.into_iter().map(Into::into).collect(),
    }))
}

/// Creates a workspace owned by the signed-in user, with its default vault.
#[utoipa::path(post, path = "/api/workspaces", tag = "workspaces", request_body = CreateWorkspace,
    security(("session" = [])),
    responses(
        (status = 201, description = "created", body = WorkspaceCreated),
        (status = 400, description = "invalid field (named in `error`)", body = ErrorBody),
        (status = 401, description = "not signed in (keys cannot create workspaces)", body = ErrorBody),
        (status = 409, description = "the slug is taken", body = ErrorBody)))]
pub async fn create_workspace(
    State(state): State<AppState>,
    who: Principal,
    ApiJson(input): ApiJson<CreateWorkspace>,
) -> Result<(StatusCode, Json<WorkspaceCreated>), Error> {
    let workspace = state
        .accounts
        .create_workspace_for(&who, input.parse())
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(WorkspaceCreated {
            workspace: workspace.into(),
        }),
    ))
}

/// The caller's role, the members (with email, name, image) and, for owners and admins, the
/// pending invitations.
#[utoipa::path(get, path = "/api/workspaces/{workspaceId}/team", tag = "workspaces",
    params(("workspaceId" = uuid::Uuid, Path)),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "the team", body = Team),
        (status = 401, description = "no key or session", body = ErrorBody),
        (status = 403, description = "not a member of this workspace", body = ErrorBody)))]
pub async fn team(
    State(state): State<AppState>,
    who: Principal,
    Path(workspace_id): Path<String>,
) -> Result<Json<Team>, Error> {
    Ok(Json(state.accounts.team(&who, &workspace_id).await?.into()))
}

/// Changes a member's role (`{role}`: `admin`, `member`, `viewer`; an owner may also give or
/// take `owner`). A workspace always keeps an owner.
#[utoipa::path(patch, path = "/api/workspaces/{workspaceId}/members/{memberId}", tag = "workspaces",
    params(("workspaceId" = uuid::Uuid, Path), ("memberId" = uuid::Uuid, Path)),
    request_body = ChangeRole,
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "the member with the new role", body = MemberChanged),
        (status = 400, description = "invalid role", body = ErrorBody),
        (status = 403, description = "the caller's role may not do this", body = ErrorBody),
        (status = 404, description = "no such member", body = ErrorBody),
        (status = 409, description = "it would leave the workspace without an owner", body = ErrorBody)))]
pub async fn change_role(
    State(state): State<AppState>,
    who: Principal,
    Path((workspace_id, member_id)): Path<(String, String)>,
    ApiJson(input): ApiJson<ChangeRole>,
) -> Result<Json<MemberChanged>, Error> {
    let member = state
        .accounts
        .change_role(&who, &workspace_id, &member_id, input.parse())
        .await?;
    Ok(Json(MemberChanged {
        member: (&member).into(),
    }))
}

/// Removes a member (or, for oneself, leaves). Their API keys in this workspace are revoked.
#[utoipa::path(delete, path = "/api/workspaces/{workspaceId}/members/{memberId}", tag = "workspaces",
    params(("workspaceId" = uuid::Uuid, Path), ("memberId" = uuid::Uuid, Path)),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "removed", body = Success),
        (status = 403, description = "the caller's role may not do this", body = ErrorBody),
        (status = 404, description = "no such member", body = ErrorBody),
        (status = 409, description = "the last owner cannot be removed", body = ErrorBody)))]
pub async fn remove_member(
    State(state): State<AppState>,
    who: Principal,
    Path((workspace_id, member_id)): Path<(String, String)>,
) -> Result<Json<Success>, Error> {
    state
        .accounts
        .remove_member(&who, &workspace_id, &member_id)
        .await?;
    Ok(Json(DONE))
}

/// Invites an email with a role (`admin`, `member` or `viewer`); valid 7 days. The single-use
/// token is in the answer (shown once); a new invitation for the same email replaces the old.
#[utoipa::path(post, path = "/api/workspaces/{workspaceId}/invitations", tag = "workspaces",
    params(("workspaceId" = uuid::Uuid, Path)),
    request_body = CreateInvitation,
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 201, description = "invited", body = InvitationCreated),
        (status = 400, description = "invalid field (named in `error`)", body = ErrorBody),
        (status = 403, description = "the caller's role may not invite", body = ErrorBody),
        (status = 409, description = "already a member", body = ErrorBody)))]
pub async fn invite(
    State(state): State<AppState>,
    who: Principal,
    Path(workspace_id): Path<String>,
    ApiJson(input): ApiJson<CreateInvitation>,
) -> Result<(StatusCode, Json<InvitationCreated>), Error> {
    let issued = state
        .accounts
        .invite(&who, &workspace_id, input.parse())
        .await?;
    Ok((StatusCode::CREATED, Json(issued.into())))
}

/// Revokes a pending invitation.
#[utoipa::path(delete, path = "/api/workspaces/{workspaceId}/invitations/{invitationId}", tag = "workspaces",
    params(("workspaceId" = uuid::Uuid, Path), ("invitationId" = uuid::Uuid, Path)),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "revoked", body = Success),
        (status = 403, description = "the caller's role may not do this", body = ErrorBody),
        (status = 404, description = "no such pending invitation", body = ErrorBody)))]
pub async fn revoke_invitation(
    State(state): State<AppState>,
    who: Principal,
    Path((workspace_id, invitation_id)): Path<(String, String)>,
) -> Result<Json<Success>, Error> {
    state
        .accounts
        .revoke_invitation(&who, &workspace_id, &invitation_id)
        .await?;
    Ok(Json(DONE))
}

/// Accepts an invitation: the signed-in user, whose email must be the invited one, joins.
#[utoipa::path(post, path = "/api/invitations/{token}/accept", tag = "workspaces",
    params(("token" = String, Path)),
    security(("session" = [])),
    responses(
        (status = 200, description = "joined", body = InvitationAccepted),
        (status = 401, description = "not signed in (keys cannot accept)", body = ErrorBody),
        (status = 403, description = "the invitation is for another email", body = ErrorBody),
        (status = 404, description = "no such invitation", body = ErrorBody),
        (status = 410, description = "used, revoked or expired", body = ErrorBody)))]
pub async fn accept_invitation(
    State(state): State<AppState>,
    who: Principal,
    Path(token): Path<String>,
) -> Result<Json<InvitationAccepted>, Error> {
    Ok(Json(
        state.accounts.accept_invitation(&who, &token).await?.into(),
    ))
}

/// The workspace's live API keys (name, prefix, role, created, last used).
#[utoipa::path(get, path = "/api/workspaces/{workspaceId}/api-keys", tag = "workspaces",
    params(("workspaceId" = uuid::Uuid, Path)),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "keys", body = ApiKeyList),
        (status = 403, description = "the caller's role may not manage keys", body = ErrorBody)))]
pub async fn list_keys(
    State(state): State<AppState>,
    who: Principal,
    Path(workspace_id): Path<String>,
) -> Result<Json<ApiKeyList>, Error> {
    Ok(Json(
        state.accounts.list_keys(&who, &workspace_id).await?.into(),
    ))
}

/// Creates an API key bound to this workspace for life; the `mc_` key is shown once. Its role
/// defaults to (and never exceeds) the caller's.
#[utoipa::path(post, path = "/api/workspaces/{workspaceId}/api-keys", tag = "workspaces",
    params(("workspaceId" = uuid::Uuid, Path)),
    request_body = CreateApiKey,
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 201, description = "created; `key` is shown only now", body = ApiKeyCreated),
        (status = 400, description = "invalid field (named in `error`)", body = ErrorBody),
        (status = 403, description = "the caller's role may not manage keys", body = ErrorBody)))]
pub async fn create_key(
    State(state): State<AppState>,
    who: Principal,
    Path(workspace_id): Path<String>,
    ApiJson(input): ApiJson<CreateApiKey>,
) -> Result<(StatusCode, Json<ApiKeyCreated>), Error> {
    let issued = state
        .accounts
        .create_key(&who, &workspace_id, input.parse())
        .await?;
    Ok((StatusCode::CREATED, Json(issued.into())))
}

/// Revokes a key: refused from the next request.
#[utoipa::path(delete, path = "/api/workspaces/{workspaceId}/api-keys/{keyId}", tag = "workspaces",
    params(("workspaceId" = uuid::Uuid, Path), ("keyId" = uuid::Uuid, Path)),
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "revoked", body = Success),
        (status = 403, description = "the caller's role may not manage keys", body = ErrorBody),
        (status = 404, description = "no such key", body = ErrorBody)))]
pub async fn revoke_key(
    State(state): State<AppState>,
    who: Principal,
    Path((workspace_id, key_id)): Path<(String, String)>,
) -> Result<Json<Success>, Error> {
    state
        .accounts
        .revoke_key(&who, &workspace_id, &key_id)
        .await?;
    Ok(Json(DONE))
}
