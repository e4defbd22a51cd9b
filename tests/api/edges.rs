//! The open edges under abuse (issue 28): limits on the doors open to anyone, bounded password
//! hashing, the trusted proxy header, the scope wall in the vault (REST and MCP), workspace
//! addressing, SSRF spellings, slow clients, and the smaller holes (request ids, framing,
//! replayed authorization codes, stale billing webhooks).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{
    assert_error, json_of, spawn_app, spawn_app_with, TestApp, TestUser, TEST_PASSWORD,
};
use crate::mcp::{call, key, open_session};
use crate::vault::settle_in;

async fn sign_up_as(app: &TestApp, email: &str, forwarded: Option<&str>) -> reqwest::Response {
    let mut request = app
        .client
        .post(app.url("/api/auth/sign-up"))
        .json(&json!({"email": email, "password": TEST_PASSWORD}));
    if let Some(address) = forwarded {
        request = request.header("X-Forwarded-For", address);
    }
    request.send().await.unwrap()
}

async fn sign_in_as(
    app: &TestApp,
    email: &str,
    password: &str,
    forwarded: Option<&str>,
) -> reqwest::Response {
    let mut request = app
        .client
        .post(app.url("/api/auth/sign-in"))
        .json(&json!({"email": email, "password": password}));
    if let Some(address) = forwarded {
        request = request.header("X-Forwarded-For", address);
    }
    request.send().await.unwrap()
}

/// A 429 in the envelope, naming its setting, with `Retry-After` as header and field.
async fn assert_throttled(response: reqwest::Response, setting: &str) {
    let header: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(header >= 1);
    let body = assert_error(response, 429, setting).await;
    assert_eq!(body["retryAfter"], header, "{body}");
}

// ----- the doors ------------------------------------------------------------------------------

/// Peak resident memory of a process, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

#[tokio::test]
async fn three_hundred_parallel_sign_ups_from_one_address_are_mostly_refused_in_bounded_memory() {
    // A real `memvault serve` with the default limits, so that its memory is its own.
    let db = crate::helpers::fresh_database().await;
    let dir = tempfile::tempdir().unwrap();
    let mut server = crate::cli::Server::start_with(&db, dir.path(), &[]);
    let line: Value = serde_json::from_str(&server.wait_for("memvault listening")).unwrap();
    let address = line["address"].as_str().unwrap().to_string();
    let client = reqwest::Client::new();
    let attempts = (0..300).map(|i| {
        let client = client.clone();
        let url = format!("http://{address}/api/auth/sign-up");
        async move {
            let response = client
                .post(url)
                .json(&json!({"email": format!("flood{i}@example.com"), "password": TEST_PASSWORD}))
                .send()
                .await
                .unwrap();
            response.status().as_u16()
        }
    });
    let statuses = futures::future::join_all(attempts).await;
    let created = statuses.iter().filter(|s| **s == 201).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    let busy = statuses.iter().filter(|s| **s == 503).count();
    assert_eq!(created + refused + busy, 300, "{statuses:?}");
    // The default is 20 sign-ups an hour from one address.
    assert!(created <= 20, "{created} created");
    assert!(refused >= 280, "{refused} refused");
    let peak_mb = peak_rss_kib(server.child.id()) / 1024;
    assert!(peak_mb < 400, "server peak RSS {peak_mb} MB");
    // The server still serves.
    let health = client
        .get(format!("http://{address}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
}

#[tokio::test]
async fn sign_up_and_sign_in_are_limited_per_address_and_per_account_behind_a_trusted_proxy() {
    let app = spawn_app_with(|s| {
        s.server.http.trusted_proxy_header = Some("X-Forwarded-For".to_string());
        s.accounts.abuse.sign_up_per_address_per_hour = 2;
        s.accounts.abuse.sign_up_per_email_per_hour = 2;
        s.accounts.abuse.sign_in_per_address_per_minute = 3;
        s.accounts.abuse.sign_in_per_email_per_hour = 4;
    })
    .await;
    // Per address: the proxy's last entry is the client; what the client wrote before it is
    // not believed.
    assert_eq!(
        sign_up_as(&app, "a1@example.com", Some("203.0.113.7"))
            .await
            .status(),
        201
    );
    assert_eq!(
        sign_up_as(&app, "a2@example.com", Some("1.1.1.1, 203.0.113.7"))
            .await
            .status(),
        201
    );
    let third = sign_up_as(&app, "a3@example.com", Some("9.9.9.9, 203.0.113.7")).await;
    assert_throttled(third, "abuse.sign_up_per_address_per_hour").await;
    // Another address has its own window.
    assert_eq!(
        sign_up_as(&app, "a3@example.com", Some("198.51.100.1"))
            .await
            .status(),
        201
    );
    // Per email: a taken email costs a hash each time; from ever new addresses it is still
    // limited.
    assert_eq!(
        sign_up_as(&app, "a3@example.com", Some("198.51.100.2"))
            .await
            .status(),
        409
    );
    let again = sign_up_as(&app, "a3@example.com", Some("198.51.100.3")).await;
    assert_throttled(again, "abuse.sign_up_per_email_per_hour").await;

    // Sign-in per address.
    for _ in 0..3 {
        let wrong = sign_in_as(
            &app,
            "a1@example.com",
            "wrong password!",
            Some("192.0.2.50"),
        )
        .await;
        assert_eq!(wrong.status(), 401);
    }
    let fourth = sign_in_as(&app, "a2@example.com", TEST_PASSWORD, Some("192.0.2.50")).await;
    assert_throttled(fourth, "abuse.sign_in_per_address_per_minute").await;
    // Per account, from many addresses (a distributed guess at one password): 3 were spent
    // above, one more fits, then the account's window is full even for the right password.
    let one_more = sign_in_as(
        &app,
        "a1@example.com",
        "wrong password!",
        Some("192.0.2.51"),
    )
    .await;
    assert_eq!(one_more.status(), 401);
    let spread = sign_in_as(&app, "a1@example.com", TEST_PASSWORD, Some("192.0.2.52")).await;
    assert_throttled(spread, "abuse.sign_in_per_email_per_hour").await;
    // Another account is not affected, and its own successes never fill its window.
    for i in 0..6 {
        let address = format!("192.0.2.{}", 60 + i);
        let ok = sign_in_as(&app, "a2@example.com", TEST_PASSWORD, Some(&address)).await;
        assert_eq!(ok.status(), 200);
    }
}

#[tokio::test]
async fn without_a_trusted_proxy_header_forwarded_addresses_are_ignored() {
    let app = spawn_app_with(|s| s.accounts.abuse.sign_up_per_address_per_hour = 1).await;
    assert_eq!(
        sign_up_as(&app, "b1@example.com", Some("203.0.113.1"))
            .await
            .status(),
        201
    );
    // A client cannot buy a fresh window by naming another address.
    let second = sign_up_as(&app, "b2@example.com", Some("203.0.113.2")).await;
    assert_throttled(second, "abuse.sign_up_per_address_per_hour").await;
}

#[tokio::test]
async fn concurrent_password_hashes_are_capped_and_the_excess_is_told_to_retry() {
    let app = spawn_app_with(|s| {
        s.accounts.abuse.password_hashes = 1;
        s.accounts.abuse.password_hash_wait_ms = 0;
    })
    .await;
    let attempts = (0..8).map(|i| sign_up_as_status(&app, i));
    let answers = futures::future::join_all(attempts).await;
    let created = answers.iter().filter(|(s, _)| *s == 201).count();
    let busy: Vec<&Value> = answers
        .iter()
        .filter(|(s, _)| *s == 503)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(created + busy.len(), 8, "{answers:?}");
    assert!(created >= 1, "{answers:?}");
    assert!(
        !busy.is_empty(),
        "one hashing slot for 8 sign-ups at once: {answers:?}"
    );
    for body in busy {
        assert_eq!(body["code"], "HTTP_503");
        assert_eq!(body["retryAfter"], 1, "{body}");
        assert!(body["error"]
            .as_str()
            .unwrap()
            .contains("abuse.password_hashes"));
    }
}

async fn sign_up_as_status(app: &TestApp, i: usize) -> (u16, Value) {
    json_of(sign_up_as(app, &format!("hash{i}@example.com"), None).await).await
}

#[tokio::test]
async fn workspaces_invitations_and_oauth_registrations_are_limited() {
    let app = spawn_app_with(|s| {
        s.accounts.abuse.workspaces_per_user_per_day = 2;
        s.accounts.abuse.invitations_per_workspace_per_day = 2;
        s.accounts.abuse.oauth_registrations_per_address_per_hour = 2;
    })
    .await;
    let user = app.sign_up("maker@example.com").await;
    for i in 0..2 {
        let made = app
            .as_user(&user, Method::POST, "/api/workspaces")
            .json(&json!({"name": format!("extra {i}")}))
            .send()
            .await
            .unwrap();
        assert_eq!(made.status(), 201);
    }
    let third = app
        .as_user(&user, Method::POST, "/api/workspaces")
        .json(&json!({"name": "one too many"}))
        .send()
        .await
        .unwrap();
    assert_throttled(third, "abuse.workspaces_per_user_per_day").await;

    let path = format!("/api/workspaces/{}/invitations", user.workspace_id);
    for i in 0..2 {
        let sent = app
            .as_user(&user, Method::POST, &path)
            .json(&json!({"email": format!("guest{i}@example.com")}))
            .send()
            .await
            .unwrap();
        assert_eq!(sent.status(), 201);
    }
    let third = app
        .as_user(&user, Method::POST, &path)
        .json(&json!({"email": "guest9@example.com"}))
        .send()
        .await
        .unwrap();
    assert_throttled(third, "abuse.invitations_per_workspace_per_day").await;

    let register = || {
        app.client
            .post(app.url("/oauth/register"))
            .json(&json!({"client_name": "probe", "redirect_uris": ["http://127.0.0.1:9/cb"]}))
            .send()
    };
    for _ in 0..2 {
        assert_eq!(register().await.unwrap().status(), 201);
    }
    assert_throttled(
        register().await.unwrap(),
        "abuse.oauth_registrations_per_address_per_hour",
    )
    .await;
}

// ----- workspace addressing -------------------------------------------------------------------

/// `viewer` is a viewer in `owner`'s workspace and owns their own.
async fn viewer_of_two(app: &TestApp) -> (TestUser, TestUser) {
    let owner = app.sign_up("owner2@example.com").await;
    let viewer = app.sign_up("viewer2@example.com").await;
    app.add_member(&owner, owner.workspace_id, &viewer, "viewer")
        .await;
    (owner, viewer)
}

async fn memories_in(app: &TestApp, user: &TestUser, workspace: uuid::Uuid) -> i64 {
    let (status, list) = json_of(
        app.as_user(
            user,
            Method::GET,
            &format!("/api/memories?workspaceId={workspace}"),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{list}");
    list["total"].as_i64().unwrap()
}

#[tokio::test]
async fn a_write_never_lands_in_a_workspace_the_caller_did_not_name() {
    let app = spawn_app().await;
    let (owner, viewer) = viewer_of_two(&app).await;
    let theirs = owner.workspace_id;
    let own = viewer.workspace_id;

    // Named in the query only, where they are a viewer: refused, written nowhere.
    let refused = app
        .as_user(
            &viewer,
            Method::POST,
            &format!("/api/memories?workspaceId={theirs}"),
        )
        .json(&json!({"content": "the viewer's note goes nowhere"}))
        .send()
        .await
        .unwrap();
    assert_error(refused, 403, "viewer").await;
    // Query and body disagree: 400 naming workspaceId.
    let disagree = app
        .as_user(
            &viewer,
            Method::POST,
            &format!("/api/memories?workspaceId={theirs}"),
        )
        .json(&json!({"content": "which one?", "workspaceId": own}))
        .send()
        .await
        .unwrap();
    assert_error(disagree, 400, "workspaceId").await;
    // Named nowhere by a member of two: 400 naming workspaceId.
    let ambiguous = app
        .as_user(&viewer, Method::POST, "/api/memories")
        .json(&json!({"content": "somewhere?"}))
        .send()
        .await
        .unwrap();
    assert_error(ambiguous, 400, "workspaceId").await;
    // A query value that is not a UUID, or two different ones.
    let garbled = app
        .as_user(&viewer, Method::GET, "/api/memories?workspaceId=nope")
        .send()
        .await
        .unwrap();
    assert_error(garbled, 400, "workspaceId").await;
    let twice = app
        .as_user(
            &viewer,
            Method::GET,
            &format!("/api/memories?workspaceId={own}&workspaceId={theirs}"),
        )
        .send()
        .await
        .unwrap();
    assert_error(twice, 400, "workspaceId").await;
    assert_eq!(memories_in(&app, &viewer, own).await, 0);
    assert_eq!(memories_in(&app, &owner, theirs).await, 0);

    // Named in the query where they may write: it lands there, and only there.
    let saved = app
        .as_user(
            &viewer,
            Method::POST,
            &format!("/api/memories?workspaceId={own}"),
        )
        .json(&json!({"content": "the viewer keeps a note in their own workspace"}))
        .send()
        .await
        .unwrap();
    assert_eq!(saved.status(), 201);
    assert_eq!(memories_in(&app, &viewer, own).await, 1);
    assert_eq!(memories_in(&app, &owner, theirs).await, 0);

    // A key names its own workspace or none; another is 403.
    let other = app
        .with_key(
            &app.api_key,
            Method::GET,
            &format!("/api/memories?workspaceId={own}"),
        )
        .send()
        .await
        .unwrap();
    assert_error(other, 403, "another workspace").await;
}

/// Sends `head` on a fresh connection (no body) and returns the first answer bytes, within
/// 10 seconds.
async fn raw_exchange(app: &TestApp, head: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = app.address.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut answer))
        .await
        .map(|read| read.unwrap_or(0))
        .unwrap_or(0);
    String::from_utf8_lossy(&answer[..n]).to_string()
}

/// Sends headers announcing a large upload and no body; the answer must come before any body.
async fn upload_headers_only(app: &TestApp, path: &str, auth: &str) -> String {
    let host = app.address.trim_start_matches("http://");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\n{auth}\r\n\
         Content-Type: multipart/form-data; boundary=XYZ\r\nContent-Length: 20000000\r\n\r\n",
        origin = app.address
    );
    raw_exchange(app, &head).await
}

#[tokio::test]
async fn an_upload_is_authorised_and_rate_checked_before_its_body_is_read() {
    let app = spawn_app().await;
    let (owner, viewer) = viewer_of_two(&app).await;
    // A viewer key: refused at once, with 20 MB announced and none sent.
    let viewer_key = app
        .create_key(&owner, owner.workspace_id, Some("viewer"))
        .await;
    let answer = upload_headers_only(
        &app,
        "/api/context-vault/documents/upload",
        &format!("X-API-Key: {viewer_key}"),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    // A session naming, in the query, the workspace where they are a viewer.
    let answer = upload_headers_only(
        &app,
        &format!(
            "/api/context-vault/documents/upload?workspaceId={}",
            owner.workspace_id
        ),
        &format!("Cookie: {}", viewer.cookie),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    // No credentials at all.
    let answer =
        upload_headers_only(&app, "/api/context-vault/documents/upload", "X-Nothing: 1").await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
}

#[tokio::test]
async fn an_upload_past_the_rate_limit_is_refused_before_its_body_is_read() {
    let app = spawn_app().await;
    // The free plan's write window (uploads count in it), spent on cheap writes.
    app.spend_write_window().await;
    let answer = upload_headers_only(
        &app,
        "/api/context-vault/documents/upload",
        &format!("X-API-Key: {}", app.api_key),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
}

// ----- the scope wall in the vault ------------------------------------------------------------

#[tokio::test]
async fn a_vault_document_is_invisible_from_another_scope_in_rest_and_mcp() {
    let app = spawn_app().await;
    let (status, accepted) = json_of(
        app.with_key(&app.api_key, Method::POST, "/api/context-vault/documents")
            .json(&json!({
                "sourceType": "text",
                "title": "Tenant A handbook",
                "scope": "tenant-a",
                "content": "# Handbook\n\nThe Zephyr project ships on Fridays. Our \
                            support desk answers within four hours. The Zephyr team \
                            prefers written design reviews.",
            }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["document"]["id"].as_str().unwrap().to_string();
    let detail = settle_in(&app, &id, "tenant-a").await;
    assert_eq!(detail["document"]["status"], "completed", "{detail}");

    // Its own scope sees it all.
    let (_, listed) = app
        .get_json("/api/context-vault/documents?scope=tenant-a")
        .await;
    assert_eq!(listed["total"], 1, "{listed}");
    let (status, memories) = app
        .get_json(&format!(
            "/api/context-vault/documents/{id}/memories?scope=tenant-a"
        ))
        .await;
    assert_eq!(status, 200, "{memories}");
    let memory_id = memories["memories"][0]["id"]
        .as_str()
        .expect("an extracted memory")
        .to_string();
    let (_, found) = app
        .get_json("/api/context-vault/search?q=Zephyr%20ships&scope=tenant-a")
        .await;
    assert!(!found["chunks"].as_array().unwrap().is_empty(), "{found}");

    // Another scope, and the unscoped lane, see nothing, and direct ids are 404.
    for other in ["tenant-b", ""] {
        let (_, listed) = app
            .get_json(&crate::helpers::with_scope(
                "/api/context-vault/documents",
                other,
            ))
            .await;
        assert_eq!(listed["total"], 0, "{other}: {listed}");
        assert!(listed["documents"].as_array().unwrap().is_empty());
        for (method, path) in [
            (Method::GET, format!("/api/context-vault/documents/{id}")),
            (
                Method::GET,
                format!("/api/context-vault/documents/{id}/memories"),
            ),
            (
                Method::POST,
                format!("/api/context-vault/documents/{id}/cancel"),
            ),
            (
                Method::POST,
                format!("/api/context-vault/documents/{id}/retry"),
            ),
            (Method::DELETE, format!("/api/context-vault/documents/{id}")),
        ] {
            let response = app
                .with_key(
                    &app.api_key,
                    method.clone(),
                    &crate::helpers::with_scope(&path, other),
                )
                .send()
                .await
                .unwrap();
            assert_error(response, 404, "not found").await;
        }
        let (_, found) = app
            .get_json(&crate::helpers::with_scope(
                "/api/context-vault/search?q=Zephyr%20ships",
                other,
            ))
            .await;
        assert!(found["chunks"].as_array().unwrap().is_empty(), "{found}");
        assert!(found["memories"].as_array().unwrap().is_empty(), "{found}");
        let (_, browsed) = app
            .get_json(&crate::helpers::with_scope(
                "/api/context-vault/memories",
                other,
            ))
            .await;
        assert_eq!(browsed["total"], 0, "{browsed}");
        let rated = app
            .with_key(
                &app.api_key,
                Method::POST,
                &format!("/api/context-vault/memories/{memory_id}/feedback"),
            )
            .json(&json!({"rating": "wrong", "scope": other}))
            .send()
            .await
            .unwrap();
        assert_error(rated, 404, "not found").await;
    }
    // `scopes` widens to the named lanes only.
    let (_, widened) = app
        .get_json("/api/context-vault/search?q=Zephyr%20ships&scopes=tenant-b,tenant-c")
        .await;
    assert!(
        widened["chunks"].as_array().unwrap().is_empty(),
        "{widened}"
    );
    let (_, widened) = app
        .get_json("/api/context-vault/search?q=Zephyr%20ships&scopes=tenant-b,tenant-a")
        .await;
    assert!(
        !widened["chunks"].as_array().unwrap().is_empty(),
        "{widened}"
    );
    // Every citation of a memory comes from its own scope.
    for memory in memories["memories"].as_array().unwrap() {
        for evidence in memory["evidence"].as_array().unwrap() {
            assert_eq!(evidence["sourceId"], id.as_str(), "{memory}");
        }
    }

    // MCP: the same wall.
    let auth = key(&app.api_key);
    let session = open_session(&app, auth).await;
    let listed = call(
        &app,
        auth,
        &session,
        2,
        "vault_list_documents",
        json!({"scope": "tenant-b"}),
    )
    .await;
    let text = listed["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("0 of 0 documents"), "{text}");
    let status = call(
        &app,
        auth,
        &session,
        3,
        "vault_document_status",
        json!({"documentId": id, "scope": "tenant-b"}),
    )
    .await;
    assert_eq!(status["isError"], true, "{status}");
    assert!(status["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("not found"));
    let searched = call(
        &app,
        auth,
        &session,
        4,
        "vault_search",
        json!({"q": "Zephyr ships", "scope": "tenant-b"}),
    )
    .await;
    let text = searched["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("0 passages, 0 facts"), "{text}");
    let own = call(
        &app,
        auth,
        &session,
        5,
        "vault_document_status",
        json!({"documentId": id, "scope": "tenant-a"}),
    )
    .await;
    assert_ne!(own["isError"], true, "{own}");

    // The document's own scope still rates and deletes it.
    let rated = app
        .with_key(
            &app.api_key,
            Method::POST,
            &format!("/api/context-vault/memories/{memory_id}/feedback"),
        )
        .json(&json!({"rating": "helpful", "scope": "tenant-a"}))
        .send()
        .await
        .unwrap();
    assert_eq!(rated.status(), 200);
    let deleted = app
        .with_key(
            &app.api_key,
            Method::DELETE,
            &format!("/api/context-vault/documents/{id}?scope=tenant-a"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
}

// ----- SSRF -----------------------------------------------------------------------------------

#[tokio::test]
async fn every_internal_spelling_of_a_url_is_refused_naming_url() {
    let app = spawn_app_with(|s| s.vault.fetch_allow_private = false).await;
    for url in [
        "http://127.0.0.1:9/x",
        "http://localhost:9/x",
        "http://2130706433/x",
        "http://0x7f.1/x",
        "http://[::1]/x",
        "http://[::ffff:127.0.0.1]/x",
        "http://[64:ff9b::7f00:1]/x",
        "http://[64:ff9b::a9fe:a9fe]/x",
        "http://[::127.0.0.1]/x",
        "http://[2002:7f00:1::1]/x",
        "http://198.18.0.1/x",
        "http://192.0.0.8/x",
        "http://[fec0::1]/x",
        "http://169.254.169.254/latest/meta-data",
        "http://[fd00::1]/x",
        "http://100.64.0.1/x",
    ] {
        let response = app
            .with_key(&app.api_key, Method::POST, "/api/context-vault/documents")
            .json(&json!({"sourceType": "url", "url": url}))
            .send()
            .await
            .unwrap();
        let body = assert_error(response, 400, "url").await;
        let message = body["error"].as_str().unwrap();
        assert!(
            message.contains("not allowed") || message.contains("resolved"),
            "{url}: {message}"
        );
    }
}

// ----- slow clients ---------------------------------------------------------------------------

#[tokio::test]
async fn a_client_sending_headers_a_byte_a_second_is_cut_off_while_others_are_served() {
    let app = spawn_app_with(|s| s.server.http.header_timeout_secs = 2).await;
    let host = app.address.trim_start_matches("http://").to_string();
    let slow = std::thread::spawn(move || {
        let mut stream = TcpStream::connect(&host).unwrap();
        let started = Instant::now();
        let head = format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\nX-Slow: ");
        for byte in head.bytes().chain(std::iter::repeat(b'a')) {
            if stream.write_all(&[byte]).is_err() {
                break;
            }
            if started.elapsed() > Duration::from_secs(20) {
                break;
            }
            std::thread::sleep(Duration::from_millis(1000));
        }
        // The server closed it: reading gives EOF (or the connection was reset).
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest);
        started.elapsed()
    });
    // Meanwhile others are served.
    for _ in 0..5 {
        assert_eq!(app.get("/healthz").await.status(), 200);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let lasted = tokio::task::spawn_blocking(move || slow.join().unwrap())
        .await
        .unwrap();
    assert!(
        lasted < Duration::from_secs(8),
        "the slow client was held {lasted:?}"
    );
}

#[tokio::test]
async fn a_body_that_does_not_arrive_is_answered_408_and_idle_connections_close() {
    let app = spawn_app_with(|s| {
        s.server.http.body_timeout_secs = 1;
        s.server.http.idle_timeout_secs = 2;
    })
    .await;
    let host = app.address.trim_start_matches("http://").to_string();
    let head = format!(
        "POST /api/memories HTTP/1.1\r\nHost: {host}\r\nX-API-Key: {}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"content\":",
        app.api_key
    );
    let answer = raw_exchange(&app, &head).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("http.body_timeout_secs"), "{answer}");

    // A body that trickles in, a byte every 300 ms, meets the same deadline.
    let trickle = {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(&host).await.unwrap();
        let head = format!(
            "POST /api/memories HTTP/1.1\r\nHost: {host}\r\nX-API-Key: {}\r\n\
             Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n",
            app.api_key
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let started = Instant::now();
        let mut answer = vec![0u8; 4096];
        let mut got = 0;
        while started.elapsed() < Duration::from_secs(10) {
            let _ = stream.write_all(b" ").await;
            if let Ok(Ok(n)) =
                tokio::time::timeout(Duration::from_millis(300), stream.read(&mut answer)).await
            {
                got = n;
                break;
            }
        }
        (
            String::from_utf8_lossy(&answer[..got]).to_string(),
            started.elapsed(),
        )
    };
    assert!(trickle.0.starts_with("HTTP/1.1 408"), "{trickle:?}");
    assert!(trickle.1 < Duration::from_secs(5), "{trickle:?}");

    // A connection that sends nothing at all is closed by the idle watchdog.
    let started = Instant::now();
    let answer = raw_exchange(&app, "").await;
    assert!(answer.is_empty(), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[tokio::test]
async fn connections_past_the_cap_wait_until_one_is_free() {
    let app = spawn_app_with(|s| {
        s.server.http.max_connections = 2;
        s.server.http.header_timeout_secs = 30;
        s.server.http.idle_timeout_secs = 30;
    })
    .await;
    let host = app.address.trim_start_matches("http://").to_string();
    let first = tokio::net::TcpStream::connect(&host).await.unwrap();
    let second = tokio::net::TcpStream::connect(&host).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let fresh = reqwest::Client::builder()
        .timeout(Duration::from_millis(1500))
        .build()
        .unwrap();
    let waited = fresh.get(app.url("/healthz")).send().await;
    assert!(
        waited.is_err(),
        "a third connection was served past the cap"
    );
    drop(first);
    drop(second);
    let fresh = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let served = fresh.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(served.status(), 200);
}

// ----- smaller holes --------------------------------------------------------------------------

#[tokio::test]
async fn only_short_plain_request_ids_are_kept() {
    let app = spawn_app().await;
    let echoed = |value: &'static str| {
        let request = app
            .client
            .get(app.url("/healthz"))
            .header("X-Request-Id", value);
        async move {
            let response = request.send().await.unwrap();
            response.headers()["x-request-id"]
                .to_str()
                .unwrap()
                .to_string()
        }
    };
    assert_eq!(echoed("trace-42.a:b_c").await, "trace-42.a:b_c");
    let long = echoed(
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    )
    .await;
    assert!(long.len() <= 64 && !long.starts_with("aaaa"), "{long}");
    let odd = echoed("<script>alert(1)</script>").await;
    assert!(!odd.contains('<'), "{odd}");
}

#[tokio::test]
async fn html_pages_cannot_be_framed() {
    let app = spawn_app().await;
    for path in ["/oauth/authorize?client_id=nope", "/app/"] {
        let response = app.get(path).await;
        let csp = response
            .headers()
            .get("content-security-policy")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert_eq!(response.headers()["x-frame-options"], "DENY", "{path}");
    }
}

#[tokio::test]
async fn invitation_tokens_never_reach_the_log() {
    let db = crate::helpers::fresh_database().await;
    let dir = tempfile::tempdir().unwrap();
    let mut server = crate::cli::Server::start_with(&db, dir.path(), &[]);
    let line: Value = serde_json::from_str(&server.wait_for("memvault listening")).unwrap();
    let base = format!("http://{}", line["address"].as_str().unwrap());
    let client = reqwest::Client::new();
    let sign_up = |email: &'static str| {
        let client = client.clone();
        let url = format!("{base}/api/auth/sign-up");
        async move {
            let response = client
                .post(url)
                .json(&json!({"email": email, "password": TEST_PASSWORD}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 201);
            let cookie = crate::helpers::session_cookie_of(&response);
            let body: Value = response.json().await.unwrap();
            (
                cookie,
                body["workspaces"][0]["id"].as_str().unwrap().to_string(),
            )
        }
    };
    let (owner, workspace) = sign_up("host@example.com").await;
    let (guest, _) = sign_up("guest@example.com").await;
    let invited: Value = client
        .post(format!("{base}/api/workspaces/{workspace}/invitations"))
        .header("Cookie", &owner)
        .header("Origin", &base)
        .json(&json!({"email": "guest@example.com"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = invited["token"].as_str().unwrap().to_string();
    let page = client
        .get(format!("{base}/app/invitations/{token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let accepted = client
        .post(format!("{base}/api/invitations/{token}/accept"))
        .header("Cookie", &guest)
        .header("Origin", &base)
        .send()
        .await
        .unwrap();
    assert_eq!(accepted.status(), 200);
    // The request was logged, with the token replaced.
    server.wait_for("/api/invitations/{token}/accept");
    let leaked: Vec<&String> = server
        .lines_so_far()
        .iter()
        .filter(|line| line.contains(&token))
        .collect();
    assert!(leaked.is_empty(), "{leaked:?}");
}

async fn small_upload(app: &TestApp) -> reqwest::Response {
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(b"a small note".to_vec()).file_name("note.txt"),
    );
    app.with_key(
        &app.api_key,
        Method::POST,
        "/api/context-vault/documents/upload",
    )
    .multipart(form)
    .send()
    .await
    .unwrap()
}

#[tokio::test]
async fn uploads_past_the_concurrent_cap_are_told_to_retry() {
    use tokio::io::AsyncWriteExt;
    let app = spawn_app_with(|s| s.server.http.max_uploads = 1).await;
    let host = app.address.trim_start_matches("http://").to_string();
    // One upload holds the only slot: its body trickles in.
    let mut holder = tokio::net::TcpStream::connect(&host).await.unwrap();
    let head = format!(
        "POST /api/context-vault/documents/upload HTTP/1.1\r\nHost: {host}\r\nX-API-Key: {}\r\n\
         Content-Type: multipart/form-data; boundary=XYZ\r\nContent-Length: 100000\r\n\r\n--XYZ\r\n",
        app.api_key
    );
    holder.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refused = small_upload(&app).await;
    assert!(refused.headers().contains_key("retry-after"));
    let body = assert_error(refused, 503, "http.max_uploads").await;
    assert!(body["retryAfter"].as_u64().unwrap() >= 1, "{body}");
    // The slot comes back when the holder goes.
    drop(holder);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let response = small_upload(&app).await;
        if response.status() == 202 {
            break;
        }
        assert_eq!(response.status(), 503);
        assert!(Instant::now() < deadline, "the upload slot never came back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
