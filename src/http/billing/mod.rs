//! Subscription handlers (cookie only), the hosted provider's webhook, and the two pages of
//! the local provider: a checkout to confirm and a portal to switch plans. Extract, parse
//! ([`dto`]), call [`BillingService`](crate::services::billing::BillingService), answer.

pub mod dto;

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Form, Path, State};
use axum::http::HeaderMap;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Json;

use super::error::ErrorBody;
use super::extract::{ApiJson, ApiQuery};
use super::web::escape_html as esc;
use super::AppState;
use crate::billing::ProviderKind;
use crate::error::Error;
use crate::model::Plan;
use crate::services::billing::{plan_choice, LocalCheckout, PortalPage, WebhookHeaders};
use crate::services::Principal;
use dto::{
    ChangePlanBody, ChangePlanView, CheckoutBody, CheckoutView, PortalBody, PortalView,
    SubscriptionQuery, SubscriptionView, WebhookAnswer,
};

/// The workspace's plan, status and usage against `memoryLimit`. Cookie only; every member.
#[utoipa::path(get, path = "/api/subscription/current", tag = "subscription",
    params(SubscriptionQuery),
    security(("session" = [])),
    responses(
        (status = 200, description = "the subscription", body = SubscriptionView),
        (status = 401, description = "not signed in (API keys are refused here)", body = ErrorBody),
        (status = 403, description = "not a member of this workspace", body = ErrorBody)))]
pub async fn current(
    State(state): State<AppState>,
    who: Principal,
    ApiQuery(query): ApiQuery<SubscriptionQuery>,
) -> Result<Json<SubscriptionView>, Error> {
    let workspace = query.parse()?;
    Ok(Json(state.billing.current(&who, workspace).await?.into()))
}

/// Opens a checkout for a paid plan (`plan`, default `pro`). Owners only. With the local
/// provider the URL is a page on this server that confirms the change; with a hosted provider,
/// the provider's payment page.
#[utoipa::path(post, path = "/api/subscription/checkout", tag = "subscription",
    request_body = CheckoutBody,
    security(("session" = [])),
    responses(
        (status = 200, description = "where to pay or confirm", body = CheckoutView),
        (status = 400, description = "invalid field (named in `error`)", body = ErrorBody),
        (status = 401, description = "not signed in (API keys are refused here)", body = ErrorBody),
        (status = 403, description = "not an owner of this workspace", body = ErrorBody),
        (status = 409, description = "the plan is not offered by the provider", body = ErrorBody),
        (status = 502, description = "the billing provider failed", body = ErrorBody)))]
pub async fn checkout(
    State(state): State<AppState>,
    who: Principal,
    headers: HeaderMap,
    ApiJson(input): ApiJson<CheckoutBody>,
) -> Result<Json<CheckoutView>, Error> {
    let (workspace, plan) = input.parse()?;
    let base = state.web.base_url(&headers);
    let opened = state.billing.checkout(&who, workspace, plan, &base).await?;
    Ok(Json(opened.into()))
}

/// The billing portal's address. Owners only.
#[utoipa::path(post, path = "/api/subscription/portal", tag = "subscription",
    request_body = PortalBody,
    security(("session" = [])),
    responses(
        (status = 200, description = "the portal", body = PortalView),
        (status = 401, description = "not signed in (API keys are refused here)", body = ErrorBody),
        (status = 403, description = "not an owner of this workspace", body = ErrorBody),
        (status = 409, description = "no paid subscription at the provider yet", body = ErrorBody),
        (status = 502, description = "the billing provider failed", body = ErrorBody)))]
pub async fn portal(
    State(state): State<AppState>,
    who: Principal,
    headers: HeaderMap,
    ApiJson(input): ApiJson<PortalBody>,
) -> Result<Json<PortalView>, Error> {
    let workspace = input.parse()?;
    let base = state.web.base_url(&headers);
    let url = state.billing.portal(&who, workspace, &base).await?;
    Ok(Json(PortalView { url }))
}

/// Changes the plan (`plan`: `free`, `hobby`, `pro`, `ultimate`). Owners only. Local provider:
/// at once; hosted: sent to the provider, applied when its webhook confirms.
#[utoipa::path(post, path = "/api/subscription/change-plan", tag = "subscription",
    request_body = ChangePlanBody,
    security(("session" = [])),
    responses(
        (status = 200, description = "done or sent", body = ChangePlanView),
        (status = 400, description = "invalid field (named in `error`)", body = ErrorBody),
        (status = 401, description = "not signed in (API keys are refused here)", body = ErrorBody),
        (status = 403, description = "not an owner of this workspace", body = ErrorBody),
        (status = 409, description = "no paid subscription to change yet (use checkout)", body = ErrorBody),
        (status = 502, description = "the billing provider failed", body = ErrorBody)))]
pub async fn change_plan(
    State(state): State<AppState>,
    who: Principal,
    ApiJson(input): ApiJson<ChangePlanBody>,
) -> Result<Json<ChangePlanView>, Error> {
    let (workspace, plan) = input.parse()?;
    Ok(Json(
        state
            .billing
            .change_plan(&who, workspace, plan)
            .await?
            .into(),
    ))
}

fn header_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The hosted provider's webhook, signed with Standard Webhooks (`webhook-id`,
/// `webhook-timestamp`, `webhook-signature`). A webhook id is applied once.
#[utoipa::path(post, path = "/api/webhooks/billing", tag = "subscription",
    request_body(content = String, description = "the provider's event (JSON), exactly as signed"),
    responses(
        (status = 200, description = "received (`duplicate`: seen before, nothing applied)", body = WebhookAnswer),
        (status = 400, description = "the signed body is not an event", body = ErrorBody),
        (status = 401, description = "missing or wrong signature, or a timestamp outside the tolerance", body = ErrorBody),
        (status = 404, description = "webhooks are not configured (local provider)", body = ErrorBody)))]
pub async fn webhook(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<WebhookAnswer>, Error> {
    let signed = WebhookHeaders {
        id: header_value(&headers, "webhook-id"),
        timestamp: header_value(&headers, "webhook-timestamp"),
        signature: header_value(&headers, "webhook-signature"),
    };
    Ok(Json(state.billing.webhook(signed, &body).await?.into()))
}

// ----- the local provider's pages --------------------------------------------------------------

fn page(title: &str, body: &str) -> Html<String> {
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · memvault</title>\
         <style>body{{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;\
         padding:0 1rem;line-height:1.5}}button{{font:inherit;padding:.4rem 1rem;\
         margin:.2rem 0}}table{{border-collapse:collapse}}td,th{{padding:.2rem .8rem .2rem 0;\
         text-align:left}}</style></head><body><main><h1>{title}</h1>{body}</main></body></html>",
        title = esc(title),
    ))
}

fn checkout_page(checkout: &LocalCheckout) -> Html<String> {
    let action = if checkout.completed {
        format!(
            "<p role=\"status\">Done: the workspace is on the <strong>{}</strong> plan.</p>\
             <p><a href=\"/billing/portal/{}\">Back to billing</a></p>",
            checkout.plan, checkout.workspace_id
        )
    } else {
        format!(
            "<form method=\"post\" action=\"/billing/checkout/{}/confirm\">\
             <button type=\"submit\">Confirm: change to {}</button></form>\
             <p>This self-hosted server takes no payment. The link expires at {}.</p>",
            checkout.id,
            checkout.plan,
            checkout.expires_at.format("%Y-%m-%d %H:%M UTC")
        )
    };
    page(
        "Change plan",
        &format!(
            "<p>Workspace <strong>{}</strong>: from the <strong>{}</strong> plan to the \
             <strong>{}</strong> plan.</p>{action}",
            esc(&checkout.workspace_name),
            checkout.current_plan,
            checkout.plan
        ),
    )
}

/// The confirmation page of a local checkout (the owner who opened it).
pub async fn checkout_form(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
) -> Result<Html<String>, Error> {
    let checkout = state.billing.local_checkout(&who, &id).await?;
    Ok(checkout_page(&checkout))
}

/// Confirms a local checkout (a form post from the page above; CSRF-checked by origin).
pub async fn checkout_confirm(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
) -> Result<Html<String>, Error> {
    let checkout = state.billing.confirm_checkout(&who, &id).await?;
    Ok(checkout_page(&checkout))
}

fn portal_body(portal: &PortalPage) -> String {
    let s = &portal.subscription;
    let mut body = format!(
        "<p>Workspace <strong>{}</strong></p><table>\
         <tr><th scope=\"row\">Plan</th><td>{}</td></tr>\
         <tr><th scope=\"row\">Status</th><td>{}</td></tr>\
         <tr><th scope=\"row\">Memories</th><td>{} of {}</td></tr></table>",
        esc(&portal.workspace_name),
        s.plan,
        s.status,
        s.memory_count,
        s.memory_limit
    );
    match (portal.provider, portal.can_change) {
        (ProviderKind::Local, true) => {
            body.push_str("<h2>Switch plan</h2>");
            for plan in Plan::ALL {
                if plan == s.plan {
                    continue;
                }
                body.push_str(&format!(
                    "<form method=\"post\" action=\"/billing/portal/{}/plan\">\
                     <input type=\"hidden\" name=\"plan\" value=\"{plan}\">\
                     <button type=\"submit\">Switch to {plan}</button></form>",
                    portal.workspace_id
                ));
            }
        }
        (ProviderKind::Local, false) => {
            body.push_str("<p>Only an owner of this workspace can change its plan.</p>")
        }
        (ProviderKind::Hosted, _) => body.push_str(
            "<p>Payments and invoices are managed by the billing provider; an owner opens its \
             portal from the dashboard.</p>",
        ),
    }
    body
}

/// The local billing portal: plan, status and usage; owners switch plans here.
pub async fn portal_page(
    State(state): State<AppState>,
    who: Principal,
    Path(workspace_id): Path<String>,
) -> Result<Html<String>, Error> {
    let portal = state.billing.portal_page(&who, &workspace_id).await?;
    Ok(page("Billing", &portal_body(&portal)))
}

/// A plan switch from the local portal (form post; CSRF-checked by origin).
pub async fn portal_change(
    State(state): State<AppState>,
    who: Principal,
    Path(workspace_id): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> Result<Response, Error> {
    let workspace_id = uuid::Uuid::parse_str(workspace_id.trim())
        .map_err(|_| Error::NotFound("workspace not found".to_string()))?;
    let plan = plan_choice(form.get("plan").map(String::as_str), None)?;
    state
        .billing
        .change_plan(&who, Some(workspace_id), plan)
        .await?;
    Ok(Redirect::to(&format!("/billing/portal/{workspace_id}")).into_response())
}
