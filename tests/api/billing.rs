//! Subscriptions: plan and usage, the local provider (change-plan at once, checkout pages
//! confirmed by the owner), and the hosted provider against a fake payment API on loopback
//! (checkout, portal, plan changes, signed webhooks, replays).

use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::{patch, post};
use axum::{Json, Router};
use memvault::billing::signature::WebhookSecret;
use memvault::config::{BillingKind, BillingProducts, Secret};
use reqwest::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::helpers::{assert_error, json_of, spawn_app, spawn_app_with, TestApp, TestUser};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

async fn current(app: &TestApp, user: &TestUser, ws: Uuid) -> Value {
    let (status, body) = json_of(
        app.as_user(
            user,
            Method::GET,
            &format!("/api/subscription/current?workspaceId={ws}"),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn post_json(app: &TestApp, user: &TestUser, path: &str, body: Value) -> reqwest::Response {
    app.as_user(user, Method::POST, path)
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// The save window's limit, as the next request with `key` reports it.
async fn save_limit(app: &TestApp, key: &str, content: &str) -> u64 {
    let response = app
        .with_key(key, Method::POST, "/api/memories")
        .json(&json!({ "content": content }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    response.headers()["x-ratelimit-limit"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn the_local_provider_changes_plans_at_once_for_owners_only() {
    let app = spawn_app().await;
    let owner = app.sign_up("owner@billing.example").await;
    let ws = owner.workspace_id;
    let sub = current(&app, &owner, ws).await;
    assert_eq!(sub["plan"], "free");
    assert_eq!(sub["status"], "active");
    assert_eq!(sub["provider"], "local");
    assert_eq!(sub["memoryLimit"], 1000);
    assert_eq!(sub["memoryCount"], 0);
    assert_eq!(sub["workspaceId"], ws.to_string());
    assert_eq!(sub["id"], Value::Null);

    // Usage follows saves; the free plan's save window is 30 a minute.
    let key = app.create_key(&owner, ws, None).await;
    assert_eq!(save_limit(&app, &key, "Our office is in Lyon").await, 30);
    assert_eq!(current(&app, &owner, ws).await["memoryCount"], 1);

    // A key is refused on every subscription endpoint: 401.
    for (method, path) in [
        (Method::GET, "/api/subscription/current"),
        (Method::POST, "/api/subscription/checkout"),
        (Method::POST, "/api/subscription/portal"),
        (Method::POST, "/api/subscription/change-plan"),
    ] {
        let response = app
            .with_key(&key, method, path)
            .json(&json!({"workspaceId": ws, "plan": "pro"}))
            .send()
            .await
            .unwrap();
        assert_error(response, 401, "session cookie").await;
    }

    // Bad input names the field and changes nothing.
    let response = post_json(
        &app,
        &owner,
        "/api/subscription/change-plan",
        json!({"workspaceId": ws, "plan": "gold"}),
    )
    .await;
    assert_error(response, 400, "invalid plan").await;
    let response = post_json(
        &app,
        &owner,
        "/api/subscription/change-plan",
        json!({"workspaceId": ws}),
    )
    .await;
    assert_error(response, 400, "invalid plan").await;
    let response = post_json(
        &app,
        &owner,
        "/api/subscription/change-plan",
        json!({"workspaceId": "nope", "plan": "pro"}),
    )
    .await;
    assert_error(response, 400, "invalid workspaceId").await;
    assert_eq!(current(&app, &owner, ws).await["plan"], "free");

    // Members and admins read the subscription but may not change it.
    let admin = app.sign_up("admin@billing.example").await;
    app.add_member(&owner, ws, &admin, "admin").await;
    assert_eq!(current(&app, &admin, ws).await["plan"], "free");
    for path in [
        "/api/subscription/change-plan",
        "/api/subscription/checkout",
        "/api/subscription/portal",
    ] {
        let response = post_json(
            &app,
            &admin,
            path,
            json!({"workspaceId": ws, "plan": "pro"}),
        )
        .await;
        assert_error(response, 403, "your role (admin)").await;
    }
    // A stranger is not a member.
    let stranger = app.sign_up("stranger@billing.example").await;
    let response = app
        .as_user(
            &stranger,
            Method::GET,
            &format!("/api/subscription/current?workspaceId={ws}"),
        )
        .send()
        .await
        .unwrap();
    assert_error(response, 403, "not a member").await;

    // The owner changes the plan: stored, and the very next request has the new limits.
    let (status, changed) = json_of(
        post_json(
            &app,
            &owner,
            "/api/subscription/change-plan",
            json!({"workspaceId": ws, "plan": "pro"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["success"], true);
    assert!(changed["message"].as_str().unwrap().contains("pro"));
    assert_eq!(
        save_limit(&app, &key, "Deploys happen on Fridays").await,
        300
    );
    let sub = current(&app, &owner, ws).await;
    assert_eq!(sub["plan"], "pro");
    assert_eq!(sub["memoryLimit"], 100_000);
    assert_eq!(sub["memoryCount"], 2);
    assert_eq!(sub["userId"], owner.user_id.to_string());
    assert!(sub["id"].is_string(), "{sub}");
    // The workspace list shows it too.
    let (_, list) = json_of(
        app.as_user(&owner, Method::GET, "/api/workspaces")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(list["workspaces"][0]["billingOwnerPlan"], "pro");

    // Back to free: the save window follows.
    let response = post_json(
        &app,
        &owner,
        "/api/subscription/change-plan",
        json!({"workspaceId": ws, "plan": "free"}),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(save_limit(&app, &key, "Standups are at 9:30").await, 30);
}

#[tokio::test]
async fn a_local_checkout_completes_once_when_its_owner_confirms() {
    let app = spawn_app().await;
    let owner = app.sign_up("checkout@billing.example").await;
    let ws = owner.workspace_id;
    let response = post_json(
        &app,
        &owner,
        "/api/subscription/checkout",
        json!({"workspaceId": ws, "plan": "free"}),
    )
    .await;
    assert_error(response, 400, "invalid plan").await;

    let (status, checkout) = json_of(
        post_json(
            &app,
            &owner,
            "/api/subscription/checkout",
            json!({"workspaceId": ws, "plan": "ultimate"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{checkout}");
    let session = checkout["sessionId"].as_str().unwrap().to_string();
    let url = checkout["url"].as_str().unwrap().to_string();
    assert_eq!(url, app.url(&format!("/billing/checkout/{session}")));
    // Opening a checkout changes nothing yet.
    assert_eq!(current(&app, &owner, ws).await["plan"], "free");

    // The page, for its owner only.
    let page = app
        .as_user(&owner, Method::GET, &format!("/billing/checkout/{session}"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(
        html.contains("ultimate") && html.contains("<form"),
        "{html}"
    );
    let other = app.sign_up("other@billing.example").await;
    let response = app
        .as_user(&other, Method::GET, &format!("/billing/checkout/{session}"))
        .send()
        .await
        .unwrap();
    assert_error(response, 404, "checkout not found").await;
    let response = app
        .as_user(
            &other,
            Method::POST,
            &format!("/billing/checkout/{session}/confirm"),
        )
        .send()
        .await
        .unwrap();
    assert_error(response, 404, "checkout not found").await;

    // A confirmation from another site is refused (CSRF), and changes nothing.
    let response = app
        .client
        .post(app.url(&format!("/billing/checkout/{session}/confirm")))
        .header("Cookie", &owner.cookie)
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_error(response, 403, "cross-site").await;
    assert_eq!(current(&app, &owner, ws).await["plan"], "free");

    // Confirmed: the plan applies; a second confirmation is 410.
    let confirmed = app
        .as_user(
            &owner,
            Method::POST,
            &format!("/billing/checkout/{session}/confirm"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(confirmed.status(), 200);
    assert!(confirmed.text().await.unwrap().contains("Done"));
    let sub = current(&app, &owner, ws).await;
    assert_eq!(
        (sub["plan"].as_str(), sub["memoryLimit"].as_u64()),
        (Some("ultimate"), Some(1_000_000))
    );
    let response = app
        .as_user(
            &owner,
            Method::POST,
            &format!("/billing/checkout/{session}/confirm"),
        )
        .send()
        .await
        .unwrap();
    assert_error(response, 410, "already completed").await;

    // The portal page: usage, and a form per other plan; a switch redirects back to it.
    let (status, portal) = json_of(
        post_json(
            &app,
            &owner,
            "/api/subscription/portal",
            json!({"workspaceId": ws}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{portal}");
    assert_eq!(portal["url"], app.url(&format!("/billing/portal/{ws}")));
    let html = app
        .as_user(&owner, Method::GET, &format!("/billing/portal/{ws}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("Switch to hobby") && !html.contains("Switch to ultimate"),
        "{html}"
    );
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let switched = no_redirects
        .post(app.url(&format!("/billing/portal/{ws}/plan")))
        .header("Cookie", &owner.cookie)
        .header("Origin", &app.address)
        .form(&[("plan", "hobby")])
        .send()
        .await
        .unwrap();
    assert_eq!(switched.status(), 303);
    assert_eq!(
        switched.headers()["location"],
        format!("/billing/portal/{ws}")
    );
    assert_eq!(current(&app, &owner, ws).await["plan"], "hobby");
}

// ----- the hosted provider ---------------------------------------------------------------------

/// A request the fake provider received.
#[derive(Debug, Clone)]
struct Received {
    method: String,
    path: String,
    authorization: String,
    body: Value,
}

#[derive(Clone, Default)]
struct Fake {
    received: Arc<Mutex<Vec<Received>>>,
}

impl Fake {
    fn record(&self, method: &str, path: String, headers: &HeaderMap, body: Value) {
        self.received.lock().unwrap().push(Received {
            method: method.to_string(),
            path,
            authorization: headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string(),
            body,
        });
    }

    fn last(&self) -> Received {
        self.received
            .lock()
            .unwrap()
            .last()
            .cloned()
            .expect("a request")
    }

    fn count(&self) -> usize {
        self.received.lock().unwrap().len()
    }
}

/// A payment provider on loopback speaking the API the hosted adapter uses.
async fn fake_provider() -> (String, Fake) {
    let fake = Fake::default();
    let app = Router::new()
        .route(
            "/checkouts",
            post(
                |State(fake): State<Fake>, headers: HeaderMap, Json(body): Json<Value>| async move {
                    fake.record("POST", "/checkouts".into(), &headers, body);
                    Json(json!({"session_id": "cks_42", "checkout_url": "https://pay.example/cks_42"}))
                },
            ),
        )
        .route(
            "/customers/{customer}/customer-portal/session",
            post(
                |State(fake): State<Fake>, Path(customer): Path<String>, headers: HeaderMap| async move {
                    fake.record("POST", format!("/customers/{customer}/customer-portal/session"), &headers, Value::Null);
                    Json(json!({"link": format!("https://pay.example/portal/{customer}")}))
                },
            ),
        )
        .route(
            "/subscriptions/{id}/change-plan",
            post(
                |State(fake): State<Fake>, Path(id): Path<String>, headers: HeaderMap, Json(body): Json<Value>| async move {
                    fake.record("POST", format!("/subscriptions/{id}/change-plan"), &headers, body);
                    Json(json!({}))
                },
            ),
        )
        .route(
            "/subscriptions/{id}",
            patch(
                |State(fake): State<Fake>, Path(id): Path<String>, headers: HeaderMap, Json(body): Json<Value>| async move {
                    fake.record("PATCH", format!("/subscriptions/{id}"), &headers, body);
                    Json(json!({}))
                },
            ),
        )
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, fake)
}

async fn hosted_app(provider_url: &str) -> TestApp {
    let provider_url = provider_url.to_string();
    spawn_app_with(move |s| {
        s.billing.provider = BillingKind::Hosted;
        s.billing.url = Some(provider_url);
        s.billing.key = Some(Secret::new("sk_test_memvault"));
        s.billing.webhook_secret = Some(Secret::new(SECRET));
        s.billing.products = BillingProducts {
            hobby: Some("prod_hobby".to_string()),
            pro: Some("prod_pro".to_string()),
            ultimate: Some("prod_ultimate".to_string()),
        };
    })
    .await
}

/// Sends a webhook signed at `timestamp` (now when `None`) with `secret`.
async fn webhook(
    app: &TestApp,
    id: &str,
    body: &Value,
    timestamp: Option<i64>,
    secret: &str,
) -> reqwest::Response {
    let body = serde_json::to_vec(body).unwrap();
    let timestamp = timestamp.unwrap_or_else(|| chrono::Utc::now().timestamp());
    let signature = WebhookSecret::parse(secret)
        .unwrap()
        .sign(id, timestamp, &body);
    app.client
        .post(app.url("/api/webhooks/billing"))
        .header("webhook-id", id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap()
}

fn event(kind: &str, ws: Option<Uuid>, product: &str) -> Value {
    let mut metadata = json!({});
    if let Some(ws) = ws {
        metadata["workspace_id"] = Value::from(ws.to_string());
    }
    json!({
        "business_id": "bus_1",
        "type": kind,
        "timestamp": "2026-11-24T12:00:00Z",
        "data": {
            "payload_type": "Subscription",
            "subscription_id": "sub_7",
            "product_id": product,
            "status": kind.trim_start_matches("subscription."),
            "customer": {"customer_id": "cus_9", "email": "payer@billing.example", "name": "payer"},
            "next_billing_date": "2026-12-24T12:00:00Z",
            "cancelled_at": null,
            "metadata": metadata,
        }
    })
}

async fn received(response: reqwest::Response) -> Value {
    let (status, body) = json_of(response).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["received"], true);
    body
}

#[tokio::test]
async fn the_hosted_provider_is_driven_by_signed_webhooks_applied_once() {
    let (provider_url, fake) = fake_provider().await;
    let app = hosted_app(&provider_url).await;
    let owner = app.sign_up("payer@billing.example").await;
    let ws = owner.workspace_id;
    let key = app.create_key(&owner, ws, None).await;
    assert_eq!(current(&app, &owner, ws).await["provider"], "hosted");

    // Nothing to manage before a subscription exists.
    let response = post_json(
        &app,
        &owner,
        "/api/subscription/portal",
        json!({"workspaceId": ws}),
    )
    .await;
    assert_error(response, 409, "checkout").await;
    let response = post_json(
        &app,
        &owner,
        "/api/subscription/change-plan",
        json!({"workspaceId": ws, "plan": "pro"}),
    )
    .await;
    assert_error(response, 409, "checkout").await;
    assert_eq!(fake.count(), 0);

    // Checkout: the provider's page, for the configured product, naming the workspace.
    let (status, checkout) = json_of(
        post_json(
            &app,
            &owner,
            "/api/subscription/checkout",
            json!({"workspaceId": ws, "plan": "pro"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{checkout}");
    assert_eq!(checkout["url"], "https://pay.example/cks_42");
    assert_eq!(checkout["sessionId"], "cks_42");
    let call = fake.last();
    assert_eq!(
        (call.method.as_str(), call.path.as_str()),
        ("POST", "/checkouts")
    );
    assert_eq!(call.authorization, "Bearer sk_test_memvault");
    assert_eq!(call.body["product_cart"][0]["product_id"], "prod_pro");
    assert_eq!(call.body["metadata"]["workspace_id"], ws.to_string());
    assert_eq!(call.body["customer"]["email"], "payer@billing.example");
    // The local pages do not exist with a hosted provider.
    let response = app
        .as_user(
            &owner,
            Method::GET,
            &format!("/billing/checkout/{}", Uuid::new_v4()),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert_eq!(current(&app, &owner, ws).await["plan"], "free");

    // Bad webhooks are refused and change nothing: wrong secret, stale or future timestamp,
    // missing headers, a body that is not the signed one.
    let active = event("subscription.active", Some(ws), "prod_pro");
    let response = webhook(&app, "wh_1", &active, None, "whsec_b3RoZXIgc2VjcmV0").await;
    assert_error(response, 401, "no webhook-signature matches").await;
    let old = chrono::Utc::now().timestamp() - 3600;
    let response = webhook(&app, "wh_1", &active, Some(old), SECRET).await;
    assert_error(response, 401, "too far from now").await;
    let future = chrono::Utc::now().timestamp() + 3600;
    let response = webhook(&app, "wh_1", &active, Some(future), SECRET).await;
    assert_error(response, 401, "too far from now").await;
    let response = app
        .client
        .post(app.url("/api/webhooks/billing"))
        .json(&active)
        .send()
        .await
        .unwrap();
    assert_error(response, 401, "missing webhook-id").await;
    let body = serde_json::to_vec(&active).unwrap();
    let now = chrono::Utc::now().timestamp();
    let signature = WebhookSecret::parse(SECRET)
        .unwrap()
        .sign("wh_1", now, &body);
    let tampered =
        serde_json::to_vec(&event("subscription.active", Some(ws), "prod_ultimate")).unwrap();
    let response = app
        .client
        .post(app.url("/api/webhooks/billing"))
        .header("webhook-id", "wh_1")
        .header("webhook-timestamp", now.to_string())
        .header("webhook-signature", signature)
        .body(tampered)
        .send()
        .await
        .unwrap();
    assert_error(response, 401, "no webhook-signature matches").await;
    assert_eq!(current(&app, &owner, ws).await["plan"], "free");

    // `active`: the product's plan applies, at once for the workspace's limits.
    let first = received(webhook(&app, "wh_1", &active, None, SECRET).await).await;
    assert_eq!(first["duplicate"], false);
    let sub = current(&app, &owner, ws).await;
    assert_eq!(sub["plan"], "pro");
    assert_eq!(sub["status"], "active");
    assert_eq!(sub["memoryLimit"], 100_000);
    assert!(
        sub["renewsAt"].as_str().unwrap().starts_with("2026-12-24"),
        "{sub}"
    );
    assert_eq!(
        save_limit(&app, &key, "The invoice address is in Ghent").await,
        300
    );

    // `on_hold` keeps the plan while the provider retries the payment.
    received(
        webhook(
            &app,
            "wh_2",
            &event("subscription.on_hold", None, "prod_pro"),
            None,
            SECRET,
        )
        .await,
    )
    .await;
    let sub = current(&app, &owner, ws).await;
    assert_eq!(
        (sub["plan"].as_str(), sub["status"].as_str()),
        (Some("pro"), Some("on_hold"))
    );

    // The portal is the provider's, for the customer the webhook named.
    let (status, portal) = json_of(
        post_json(
            &app,
            &owner,
            "/api/subscription/portal",
            json!({"workspaceId": ws}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{portal}");
    assert_eq!(portal["url"], "https://pay.example/portal/cus_9");

    // A plan change is asked of the provider and applies when its webhook confirms.
    let (status, changed) = json_of(
        post_json(
            &app,
            &owner,
            "/api/subscription/change-plan",
            json!({"workspaceId": ws, "plan": "ultimate"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{changed}");
    assert!(
        changed["message"].as_str().unwrap().contains("provider"),
        "{changed}"
    );
    let call = fake.last();
    assert_eq!(call.path, "/subscriptions/sub_7/change-plan");
    assert_eq!(call.body["product_id"], "prod_ultimate");
    assert_eq!(current(&app, &owner, ws).await["plan"], "pro");
    received(
        webhook(
            &app,
            "wh_3",
            &event("subscription.plan_changed", None, "prod_ultimate"),
            None,
            SECRET,
        )
        .await,
    )
    .await;
    let sub = current(&app, &owner, ws).await;
    assert_eq!(
        (sub["plan"].as_str(), sub["status"].as_str()),
        (Some("ultimate"), Some("active"))
    );

    // A replay of the first webhook is acknowledged and ignored: the plan stays ultimate.
    let replay = received(webhook(&app, "wh_1", &active, None, SECRET).await).await;
    assert_eq!(replay["duplicate"], true);
    assert_eq!(current(&app, &owner, ws).await["plan"], "ultimate");

    // Going free cancels at the provider; `cancelled` keeps the plan until `expired`.
    let response = post_json(
        &app,
        &owner,
        "/api/subscription/change-plan",
        json!({"workspaceId": ws, "plan": "free"}),
    )
    .await;
    assert_eq!(response.status(), 200);
    let call = fake.last();
    assert_eq!(
        (call.method.as_str(), call.path.as_str()),
        ("PATCH", "/subscriptions/sub_7")
    );
    assert_eq!(call.body["status"], "cancelled");
    received(
        webhook(
            &app,
            "wh_4",
            &event("subscription.cancelled", None, "prod_ultimate"),
            None,
            SECRET,
        )
        .await,
    )
    .await;
    let sub = current(&app, &owner, ws).await;
    assert_eq!(
        (sub["plan"].as_str(), sub["status"].as_str()),
        (Some("ultimate"), Some("cancelled"))
    );
    assert!(sub["cancelledAt"].is_string(), "{sub}");
    received(
        webhook(
            &app,
            "wh_5",
            &event("subscription.expired", None, "prod_ultimate"),
            None,
            SECRET,
        )
        .await,
    )
    .await;
    let sub = current(&app, &owner, ws).await;
    assert_eq!(
        (sub["plan"].as_str(), sub["status"].as_str()),
        (Some("free"), Some("expired"))
    );
    assert_eq!(save_limit(&app, &key, "The team moved to Ghent").await, 30);

    // Events for no known workspace, and other kinds of events, are acknowledged and ignored.
    let mut stranger = event("subscription.active", None, "prod_ultimate");
    stranger["data"]["subscription_id"] = Value::from("sub_unknown");
    received(webhook(&app, "wh_6", &stranger, None, SECRET).await).await;
    received(
        webhook(
            &app,
            "wh_7",
            &json!({"type": "payment.succeeded", "data": {}}),
            None,
            SECRET,
        )
        .await,
    )
    .await;
    assert_eq!(current(&app, &owner, ws).await["plan"], "free");
    // A signed body that is not an event is a 400.
    let response = webhook(&app, "wh_8", &json!(["not", "an", "event"]), None, SECRET).await;
    assert_error(response, 400, "invalid webhook body").await;
}

#[tokio::test]
async fn webhooks_are_not_served_by_the_local_provider() {
    let app = spawn_app().await;
    let response = webhook(
        &app,
        "wh_1",
        &event("subscription.active", None, "p"),
        None,
        SECRET,
    )
    .await;
    assert_error(response, 404, "not configured").await;
}

#[tokio::test]
async fn a_webhook_older_than_the_last_applied_cannot_roll_the_subscription_back() {
    let (provider_url, _fake) = fake_provider().await;
    let app = hosted_app(&provider_url).await;
    let owner = app.sign_up("order@billing.example").await;
    let ws = owner.workspace_id;
    let mut cancelled = event("subscription.cancelled", Some(ws), "prod_pro");
    cancelled["timestamp"] = Value::from("2026-11-25T10:00:00Z");
    let mut active = event("subscription.active", Some(ws), "prod_pro");
    active["timestamp"] = Value::from("2026-11-25T09:00:00Z");
    let mut renewed = event("subscription.active", Some(ws), "prod_ultimate");
    renewed["timestamp"] = Value::from("2026-11-25T11:00:00Z");
    // The cancellation (10:00) is delivered first, then the older activation (09:00), retried
    // late by the provider: it is acknowledged and changes nothing.
    received(webhook(&app, "wh_c", &cancelled, None, SECRET).await).await;
    let before = current(&app, &owner, ws).await;
    assert_eq!(before["status"], "cancelled", "{before}");
    let late = received(webhook(&app, "wh_a", &active, None, SECRET).await).await;
    assert_eq!(late["duplicate"], false);
    let after = current(&app, &owner, ws).await;
    assert_eq!(
        (after["status"].as_str(), after["plan"].as_str()),
        (before["status"].as_str(), before["plan"].as_str()),
        "{after}"
    );
    // A newer event applies.
    received(webhook(&app, "wh_r", &renewed, None, SECRET).await).await;
    let now = current(&app, &owner, ws).await;
    assert_eq!(
        (now["status"].as_str(), now["plan"].as_str()),
        (Some("active"), Some("ultimate")),
        "{now}"
    );
}
