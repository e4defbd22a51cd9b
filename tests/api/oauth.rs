//! OAuth 2.1 for MCP connectors: discovery metadata, dynamic client registration, the
//! authorization page (sign-in, consent), the code exchange with PKCE, tokens bound to one user
//! and workspace, refresh rotation with reuse detection, revocation, and the refusals.

use chrono::{Duration, Utc};
use memvault::services::accounts::hash_key;
use memvault::services::oauth::pkce_challenge;
use memvault::storage::oauth::{NewToken, TokenKind, TokenRecord};
use reqwest::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::helpers::{json_of, spawn_app, TestApp, TestUser};
use crate::mcp::{call, open_session, Auth};

const REDIRECT: &str = "http://127.0.0.1:9/callback";
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn register(app: &TestApp, body: Value) -> (u16, Value) {
    json_of(
        app.client
            .post(app.url("/oauth/register"))
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn client_id(app: &TestApp) -> String {
    let (status, client) = register(
        app,
        json!({"redirect_uris": [REDIRECT], "client_name": "Test connector",
               "token_endpoint_auth_method": "none"}),
    )
    .await;
    assert_eq!(status, 201, "{client}");
    client["client_id"].as_str().unwrap().to_string()
}

fn authorize_query(client: &str, challenge: &str, scope: &str) -> Vec<(&'static str, String)> {
    vec![
        ("response_type", "code".to_string()),
        ("client_id", client.to_string()),
        ("redirect_uri", REDIRECT.to_string()),
        ("code_challenge", challenge.to_string()),
        ("code_challenge_method", "S256".to_string()),
        ("state", "xyz".to_string()),
        ("scope", scope.to_string()),
    ]
}

/// A user's consent for `workspace`: the `Location` the decision redirects to.
async fn consent(
    app: &TestApp,
    user: &TestUser,
    client: &str,
    workspace: Uuid,
    scope: &str,
) -> url::Url {
    let mut form = authorize_query(client, &pkce_challenge(VERIFIER), scope);
    form.push(("workspace_id", workspace.to_string()));
    form.push(("decision", "approve".to_string()));
    for s in scope.split_whitespace() {
        form.push(("scopes", s.to_string()));
    }
    let response = no_redirects()
        .post(app.url("/oauth/authorize"))
        .header("Cookie", &user.cookie)
        .header("Origin", &app.address)
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303, "{}", response.text().await.unwrap());
    url::Url::parse(response.headers()["location"].to_str().unwrap()).unwrap()
}

fn param(url: &url::Url, name: &str) -> Option<String> {
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.to_string())
}

async fn code(
    app: &TestApp,
    user: &TestUser,
    client: &str,
    workspace: Uuid,
    scope: &str,
) -> String {
    let back = consent(app, user, client, workspace, scope).await;
    assert_eq!(param(&back, "state").as_deref(), Some("xyz"));
    assert_eq!(param(&back, "iss").as_deref(), Some(app.address.as_str()));
    param(&back, "code").expect("a code")
}

async fn token(app: &TestApp, form: &[(&str, &str)]) -> (u16, Value) {
    let response = app
        .client
        .post(app.url("/oauth/token"))
        .form(form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["cache-control"], "no-store");
    json_of(response).await
}

async fn exchange(app: &TestApp, client: &str, code: &str) -> (u16, Value) {
    token(
        app,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("client_id", client),
            ("code_verifier", VERIFIER),
        ],
    )
    .await
}

async fn connect(
    app: &TestApp,
    user: &TestUser,
    client: &str,
    workspace: Uuid,
    scope: &str,
) -> Value {
    let code = code(app, user, client, workspace, scope).await;
    let (status, tokens) = exchange(app, client, &code).await;
    assert_eq!(status, 200, "{tokens}");
    tokens
}

fn bearer(value: &str) -> String {
    format!("Bearer {value}")
}

/// Calls one tool with an access token in a fresh session.
async fn tool(app: &TestApp, access: &str, name: &str, arguments: Value) -> Value {
    let header = bearer(access);
    let auth: Auth = ("Authorization", &header);
    let session = open_session(app, auth).await;
    call(app, auth, &session, 2, name, arguments).await
}

/// The status of an MCP `initialize` with an access token (200: the token is accepted).
async fn mcp_status(app: &TestApp, access: &str) -> (u16, String) {
    let response = app
        .client
        .post(app.url("/mcp"))
        .header("Authorization", bearer(access))
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-06-18")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "memvault-test", "version": "1"}}}),
        )
        .send()
        .await
        .unwrap();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (response.status().as_u16(), challenge)
}

const ALL: &str = "memories:read memories:write vault:read vault:write";

#[tokio::test]
async fn discovery_and_registration_follow_the_rfcs() {
    let app = spawn_app().await;
    // An unauthenticated MCP request points at the protected-resource metadata.
    let response = app
        .client
        .post(app.url("/mcp"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let challenge = response.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_string();
    let metadata_url = format!("{}/.well-known/oauth-protected-resource/mcp", app.address);
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{metadata_url}\"")
    );
    let (status, resource) = json_of(app.client.get(&metadata_url).send().await.unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(resource["resource"], app.url("/mcp"));
    assert_eq!(resource["authorization_servers"], json!([app.address]));
    let (status, server) = json_of(
        app.client
            .get(app.url("/.well-known/oauth-authorization-server"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(server["issuer"], app.address);
    assert_eq!(server["code_challenge_methods_supported"], json!(["S256"]));
    for endpoint in [
        "authorization_endpoint",
        "token_endpoint",
        "registration_endpoint",
        "revocation_endpoint",
    ] {
        assert!(
            server[endpoint].as_str().unwrap().starts_with(&app.address),
            "{endpoint}"
        );
    }

    // Registration: public clients with safe redirect URIs only.
    let (status, client) = register(
        &app,
        json!({"redirect_uris": [REDIRECT], "client_name": "Desk"}),
    )
    .await;
    assert_eq!(status, 201, "{client}");
    assert!(client["client_id"].as_str().unwrap().starts_with("mcl_"));
    assert_eq!(client["token_endpoint_auth_method"], "none");
    assert_eq!(client["redirect_uris"], json!([REDIRECT]));
    for (body, error) in [
        (
            json!({"redirect_uris": ["http://evil.example/cb"]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"redirect_uris": ["https://app.example/cb#x"]}),
            "invalid_redirect_uri",
        ),
        (json!({"client_name": "no uris"}), "invalid_redirect_uri"),
        (
            json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic"}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": [REDIRECT], "grant_types": ["password"]}),
            "invalid_client_metadata",
        ),
    ] {
        let (status, answer) = register(&app, body.clone()).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (400, Some(error)),
            "{body}: {answer}"
        );
        assert!(answer["error_description"].is_string());
    }
}

#[tokio::test]
async fn the_authorization_page_signs_in_asks_consent_and_refuses_bad_requests() {
    let app = spawn_app().await;
    let client = client_id(&app).await;
    let ada = app.sign_up("ada@oauth.example").await;
    let query = authorize_query(&client, &pkce_challenge(VERIFIER), ALL);
    let http = no_redirects();

    // Not signed in: a sign-in form that comes back here.
    let page = http
        .get(app.url("/oauth/authorize"))
        .query(&query)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(
        html.contains("Sign in") && html.contains("Test connector"),
        "{html}"
    );
    let signed = http
        .post(app.url("/oauth/sign-in"))
        .header("Origin", &app.address)
        .form(&[
            ("email", "ada@oauth.example"),
            ("password", crate::helpers::TEST_PASSWORD),
            (
                "next",
                &format!(
                    "/oauth/authorize?{}",
                    serde_urlencoded::to_string(&query).unwrap()
                ),
            ),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(signed.status(), 303);
    assert!(signed.headers()["location"]
        .to_str()
        .unwrap()
        .starts_with("/oauth/authorize?"));
    assert!(signed.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .contains("memvault.session_token="));
    let wrong = http
        .post(app.url("/oauth/sign-in"))
        .form(&[
            ("email", "ada@oauth.example"),
            ("password", "not the password"),
            ("next", "/oauth/authorize?x=1"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert!(wrong
        .text()
        .await
        .unwrap()
        .contains("invalid email or password"));

    // Signed in: the consent page names the client and offers the user's workspaces.
    let page = http
        .get(app.url("/oauth/authorize"))
        .query(&query)
        .header("Cookie", &ada.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(
        html.contains(&ada.workspace_id.to_string()) && html.contains("memories:write"),
        "{html}"
    );

    // A foreign redirect URI or an unknown client is shown, never followed.
    let mut foreign = query.clone();
    foreign[2].1 = "https://evil.example/cb".to_string();
    let page = http
        .get(app.url("/oauth/authorize"))
        .query(&foreign)
        .header("Cookie", &ada.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 400);
    assert!(page.headers().get("location").is_none());
    assert!(page
        .text()
        .await
        .unwrap()
        .contains("redirect_uri does not match"));
    let mut unknown = query.clone();
    unknown[1].1 = "mcl_unknown".to_string();
    let page = http
        .get(app.url("/oauth/authorize"))
        .query(&unknown)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 400);

    // Other mistakes go back to the client as errors, with its state.
    for (index, value, error) in [
        (3, "", "invalid_request"),      // no PKCE challenge
        (4, "plain", "invalid_request"), // PKCE plain is refused
        (6, "memories:admin", "invalid_scope"),
        (0, "token", "unsupported_response_type"),
    ] {
        let mut bad = query.clone();
        bad[index].1 = value.to_string();
        let response = http
            .get(app.url("/oauth/authorize"))
            .query(&bad)
            .header("Cookie", &ada.cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 303, "{value}");
        let back = url::Url::parse(response.headers()["location"].to_str().unwrap()).unwrap();
        assert!(back.as_str().starts_with(REDIRECT));
        assert_eq!(param(&back, "error").as_deref(), Some(error), "{value}");
        assert_eq!(param(&back, "state").as_deref(), Some("xyz"));
    }

    // The decision is a cookie write: another site cannot make it (CSRF).
    let mut form = query.clone();
    form.push(("workspace_id", ada.workspace_id.to_string()));
    form.push(("decision", "approve".to_string()));
    form.push(("scopes", "memories:read".to_string()));
    let response = http
        .post(app.url("/oauth/authorize"))
        .header("Cookie", &ada.cookie)
        .header("Origin", "https://evil.example")
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    // A workspace the user is not in is refused.
    let other = app.sign_up("other@oauth.example").await;
    let mut foreign_ws = form.clone();
    foreign_ws
        .iter_mut()
        .find(|(k, _)| *k == "workspace_id")
        .unwrap()
        .1 = other.workspace_id.to_string();
    let response = http
        .post(app.url("/oauth/authorize"))
        .header("Cookie", &ada.cookie)
        .header("Origin", &app.address)
        .form(&foreign_ws)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    // Denied: the client hears access_denied.
    let mut denied = form.clone();
    denied.iter_mut().find(|(k, _)| *k == "decision").unwrap().1 = "deny".to_string();
    let response = http
        .post(app.url("/oauth/authorize"))
        .header("Cookie", &ada.cookie)
        .header("Origin", &app.address)
        .form(&denied)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    let back = url::Url::parse(response.headers()["location"].to_str().unwrap()).unwrap();
    assert_eq!(param(&back, "error").as_deref(), Some("access_denied"));
    assert_eq!(param(&back, "code"), None);
}

#[tokio::test]
async fn the_code_exchange_checks_pkce_and_codes_are_single_use() {
    let app = spawn_app().await;
    let client = client_id(&app).await;
    let ada = app.sign_up("pkce@oauth.example").await;

    // A wrong verifier fails, and the code is spent by the attempt.
    let first = code(&app, &ada, &client, ada.workspace_id, ALL).await;
    let wrong_verifier = "x".repeat(43);
    let (status, answer) = token(
        &app,
        &[
            ("grant_type", "authorization_code"),
            ("code", &first),
            ("redirect_uri", REDIRECT),
            ("client_id", &client),
            ("code_verifier", &wrong_verifier),
        ],
    )
    .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_grant")),
        "{answer}"
    );
    let (status, answer) = exchange(&app, &client, &first).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_grant")),
        "{answer}"
    );

    // A redirect URI other than the request's fails.
    let second = code(&app, &ada, &client, ada.workspace_id, ALL).await;
    let (status, answer) = token(
        &app,
        &[
            ("grant_type", "authorization_code"),
            ("code", &second),
            ("redirect_uri", "http://127.0.0.1:9/other"),
            ("client_id", &client),
            ("code_verifier", VERIFIER),
        ],
    )
    .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_grant")),
        "{answer}"
    );

    // Another client cannot use the code.
    let other_client = client_id(&app).await;
    let third = code(&app, &ada, &client, ada.workspace_id, ALL).await;
    let (status, answer) = exchange(&app, &other_client, &third).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_grant")),
        "{answer}"
    );

    // The right exchange works once; the same code again is refused.
    let fourth = code(&app, &ada, &client, ada.workspace_id, ALL).await;
    let (status, tokens) = exchange(&app, &client, &fourth).await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 3600);
    assert_eq!(tokens["scope"], ALL);
    assert!(tokens["access_token"].as_str().unwrap().starts_with("mat_"));
    let (status, answer) = exchange(&app, &client, &fourth).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_grant")),
        "{answer}"
    );

    // Malformed requests.
    let (status, answer) = token(&app, &[("grant_type", "password"), ("client_id", &client)]).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("unsupported_grant_type"))
    );
    let (status, answer) = token(
        &app,
        &[
            ("grant_type", "authorization_code"),
            ("client_id", "mcl_nobody"),
            ("code", "x"),
        ],
    )
    .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (401, Some("invalid_client"))
    );
    let (status, answer) = token(
        &app,
        &[("grant_type", "authorization_code"), ("client_id", &client)],
    )
    .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_request"))
    );
}

#[tokio::test]
async fn a_token_acts_as_its_user_in_its_workspace_and_nowhere_else() {
    let app = spawn_app().await;
    let client = client_id(&app).await;
    let ada = app.sign_up("ada@walls.example").await;
    let bob = app.sign_up("bob@walls.example").await;
    let tokens = connect(&app, &ada, &client, ada.workspace_id, ALL).await;
    let access = tokens["access_token"].as_str().unwrap();

    let saved = tool(
        &app,
        access,
        "memory_save",
        json!({"content": "Ada's team ships on Mondays"}),
    )
    .await;
    assert_eq!(saved["isError"], false, "{saved}");
    assert_eq!(saved["structuredContent"]["memory"]["source"], "mcp");
    assert_eq!(
        saved["structuredContent"]["memory"]["userId"],
        ada.user_id.to_string()
    );
    // It landed in Ada's workspace.
    let (status, list) = json_of(
        app.as_user(
            &ada,
            Method::GET,
            &format!("/api/memories?workspaceId={}", ada.workspace_id),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!((status, list["total"].as_i64()), (200, Some(1)), "{list}");

    // Bob's workspace is out of reach: his memories are not found, his document is a 404.
    let bob_key = app.create_key(&bob, bob.workspace_id, None).await;
    let response = app
        .with_key(&bob_key, Method::POST, "/api/memories")
        .json(&json!({"content": "Bob's launch code is Zebra-77"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let (status, doc) = json_of(
        app.with_key(&bob_key, Method::POST, "/api/context-vault/documents")
            .json(&json!({"sourceType": "text", "title": "Bob notes", "content": "Bob's vault text."}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 202, "{doc}");
    let found = tool(
        &app,
        access,
        "memory_search",
        json!({"q": "Zebra-77 launch code"}),
    )
    .await;
    assert!(!found.to_string().contains("Zebra"), "{found}");
    let status = tool(
        &app,
        access,
        "vault_document_status",
        json!({"documentId": doc["document"]["id"]}),
    )
    .await;
    assert_eq!(status["isError"], true);
    assert_eq!(status["structuredContent"]["code"], "HTTP_404");
    // The token is for MCP only: the REST API does not take it.
    let response = app
        .client
        .get(app.url("/api/memories"))
        .header("Authorization", bearer(access))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);

    // Scopes narrow what a connection may do, and the user's role still applies.
    let read_only = connect(
        &app,
        &ada,
        &client,
        ada.workspace_id,
        "memories:read vault:read",
    )
    .await;
    let refused = tool(
        &app,
        read_only["access_token"].as_str().unwrap(),
        "memory_save",
        json!({"content": "Nope"}),
    )
    .await;
    assert_eq!(refused["isError"], true);
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("not granted memories:write"),
        "{refused}"
    );
    let viewer = app.sign_up("viewer@walls.example").await;
    app.add_member(&ada, ada.workspace_id, &viewer, "viewer")
        .await;
    let viewer_tokens = connect(&app, &viewer, &client, ada.workspace_id, ALL).await;
    let viewer_access = viewer_tokens["access_token"].as_str().unwrap();
    let refused = tool(
        &app,
        viewer_access,
        "memory_save",
        json!({"content": "Viewers write nothing"}),
    )
    .await;
    assert_eq!(refused["structuredContent"]["code"], "HTTP_403");
    assert!(refused["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("your role (viewer)"));
    let allowed = tool(&app, viewer_access, "memory_search", json!({"q": "ships"})).await;
    assert_eq!(allowed["isError"], false, "{allowed}");
    // A member who leaves loses the connection's workspace.
    let (_, team) = json_of(
        app.as_user(
            &ada,
            Method::GET,
            &format!("/api/workspaces/{}/team", ada.workspace_id),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    let member_id = team["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["email"] == "viewer@walls.example")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let response = app
        .as_user(
            &ada,
            Method::DELETE,
            &format!("/api/workspaces/{}/members/{member_id}", ada.workspace_id),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let gone = tool(&app, viewer_access, "memory_search", json!({"q": "ships"})).await;
    assert_eq!(gone["structuredContent"]["code"], "HTTP_403");
}

#[tokio::test]
async fn refresh_tokens_rotate_reuse_revokes_and_revocation_is_immediate() {
    let app = spawn_app().await;
    let client = client_id(&app).await;
    let ada = app.sign_up("refresh@oauth.example").await;
    let tokens = connect(&app, &ada, &client, ada.workspace_id, ALL).await;
    let first_refresh = tokens["refresh_token"].as_str().unwrap().to_string();

    // A refresh gives a new pair; the new access token works.
    let (status, renewed) = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &first_refresh),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!(status, 200, "{renewed}");
    let access = renewed["access_token"].as_str().unwrap().to_string();
    assert_ne!(renewed["refresh_token"], tokens["refresh_token"]);
    assert_eq!(mcp_status(&app, &access).await.0, 200);
    // It cannot widen the scopes.
    let narrow = connect(&app, &ada, &client, ada.workspace_id, "memories:read").await;
    let (status, answer) = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", narrow["refresh_token"].as_str().unwrap()),
            ("client_id", &client),
            ("scope", "memories:read memories:write"),
        ],
    )
    .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_scope"))
    );

    // Presenting the first refresh token again: refused, and the whole family is revoked.
    let (status, answer) = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &first_refresh),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_grant")),
        "{answer}"
    );
    let (status, challenge) = mcp_status(&app, &access).await;
    assert_eq!(status, 401);
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    let (status, _) = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", renewed["refresh_token"].as_str().unwrap()),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!(status, 400);

    // Revocation (RFC 7009): an access token stops at once; a refresh token ends its family.
    let fresh = connect(&app, &ada, &client, ada.workspace_id, ALL).await;
    let fresh_access = fresh["access_token"].as_str().unwrap();
    assert_eq!(mcp_status(&app, fresh_access).await.0, 200);
    let response = app
        .client
        .post(app.url("/oauth/revoke"))
        .form(&[("token", fresh_access), ("client_id", &client)])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(mcp_status(&app, fresh_access).await.0, 401);
    let (status, refreshed) = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", fresh["refresh_token"].as_str().unwrap()),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!(status, 200, "{refreshed}");
    let response = app
        .client
        .post(app.url("/oauth/revoke"))
        .form(&[("token", refreshed["refresh_token"].as_str().unwrap())])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        mcp_status(&app, refreshed["access_token"].as_str().unwrap())
            .await
            .0,
        401
    );
    // An unknown token revokes nothing and is not an error.
    let response = app
        .client
        .post(app.url("/oauth/revoke"))
        .form(&[("token", "mat_nothing")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    // An expired access token is refused.
    let raw = "mat_expired_token_for_the_test_0000000000000000";
    let at = Utc::now() - Duration::hours(2);
    let record = TokenRecord {
        id: Uuid::now_v7(),
        family_id: Uuid::now_v7(),
        kind: TokenKind::Access,
        client_id: client.clone(),
        user_id: ada.user_id,
        workspace_id: ada.workspace_id,
        scopes: ALL.to_string(),
        created_at: at,
        expires_at: at + Duration::hours(1),
        revoked_at: None,
    };
    app.store
        .insert_tokens(&[NewToken {
            hash: hash_key(raw),
            record,
        }])
        .await
        .unwrap();
    assert_eq!(mcp_status(&app, raw).await.0, 401);
}

#[tokio::test]
async fn a_replayed_authorization_code_revokes_the_tokens_issued_from_it() {
    let app = spawn_app().await;
    let client = client_id(&app).await;
    let ada = app.sign_up("replay@oauth.example").await;
    let stolen = code(&app, &ada, &client, ada.workspace_id, ALL).await;
    let (status, tokens) = exchange(&app, &client, &stolen).await;
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap().to_string();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_string();
    assert_eq!(mcp_status(&app, &access).await.0, 200);
    // Someone presents the same code again (RFC 6749 4.1.2): refused, and what it bought dies.
    let (status, answer) = exchange(&app, &client, &stolen).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_grant")),
        "{answer}"
    );
    assert_eq!(mcp_status(&app, &access).await.0, 401);
    let (status, answer) = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    // Another connection of the same user is untouched.
    let other = connect(&app, &ada, &client, ada.workspace_id, ALL).await;
    assert_eq!(
        mcp_status(&app, other["access_token"].as_str().unwrap())
            .await
            .0,
        200
    );
}
