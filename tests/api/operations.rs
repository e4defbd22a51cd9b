//! Health, readiness, the OpenAPI document and the API reference page.

use serde_json::Value;

use crate::helpers::{json_of, postgres_url, spawn_app};

#[tokio::test]
async fn health_and_readiness() {
    let app = spawn_app().await;
    let (status, health) = json_of(app.client.get(app.url("/healthz")).send().await.unwrap()).await;
    assert_eq!((status, health["status"].as_str()), (200, Some("ok")));
    let (status, ready) = json_of(app.client.get(app.url("/readyz")).send().await.unwrap()).await;
    assert_eq!(status, 200);
    let expected = if postgres_url().is_some() {
        "postgres"
    } else {
        "sqlite"
    };
    assert_eq!(ready["database"], expected);
    assert_eq!(ready["status"], "ready");
    for part in [
        "database",
        "model",
        "workspace_registry",
        "index_maintainer",
        "jobs_supervisor",
        "ingestion_supervisor",
        "purger",
    ] {
        assert_eq!(ready["parts"][part], "ok", "{ready}");
    }
    // After the database is closed, readiness names it.
    app.store.close().await;
    let (status, ready) = json_of(app.client.get(app.url("/readyz")).send().await.unwrap()).await;
    assert_eq!(status, 503);
    assert_eq!(ready["parts"]["database"], "unreachable", "{ready}");
    assert_eq!(ready["failing"], serde_json::json!(["database"]), "{ready}");
}

#[tokio::test]
async fn the_openapi_document_covers_every_route() {
    let app = spawn_app().await;
    let (status, doc) = json_of(
        app.client
            .get(app.url("/api/openapi.json"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    let paths = doc["paths"].as_object().unwrap();
    let expected: &[(&str, &[&str])] = &[
        ("/api/memories", &["get", "post"]),
        ("/api/memories/search", &["get"]),
        ("/api/memories/profile", &["get"]),
        ("/api/memories/graph", &["get"]),
        ("/api/memories/jobs/{jobId}", &["get"]),
        ("/api/memories/{id}", &["get", "patch", "delete"]),
        ("/api/memories/{id}/forget", &["post"]),
        ("/api/memories/{id}/history", &["get"]),
        ("/api/memories/{id}/feedback", &["post"]),
        ("/api/context-vault/vaults", &["get", "post"]),
        ("/api/context-vault/documents", &["get", "post"]),
        ("/api/context-vault/documents/upload", &["post"]),
        ("/api/context-vault/documents/{id}", &["get", "delete"]),
        ("/api/context-vault/documents/{id}/memories", &["get"]),
        ("/api/context-vault/documents/{id}/cancel", &["post"]),
        ("/api/context-vault/documents/{id}/retry", &["post"]),
        ("/api/context-vault/search", &["get"]),
        ("/api/context-vault/memories", &["get", "post"]),
        ("/api/context-vault/memories/{id}/feedback", &["post"]),
        ("/api/auth/sign-up", &["post"]),
        ("/api/auth/sign-in", &["post"]),
        ("/api/auth/sign-out", &["post"]),
        ("/api/auth/session", &["get"]),
        ("/api/workspaces", &["get", "post"]),
        ("/api/workspaces/{workspaceId}/team", &["get"]),
        (
            "/api/workspaces/{workspaceId}/members/{memberId}",
            &["patch", "delete"],
        ),
        ("/api/workspaces/{workspaceId}/invitations", &["post"]),
        (
            "/api/workspaces/{workspaceId}/invitations/{invitationId}",
            &["delete"],
        ),
        ("/api/invitations/{token}/accept", &["post"]),
        ("/api/workspaces/{workspaceId}/api-keys", &["get", "post"]),
        (
            "/api/workspaces/{workspaceId}/api-keys/{keyId}",
            &["delete"],
        ),
        ("/api/workspaces/{workspaceId}/erasures", &["get"]),
        ("/api/memories/{id}/erase", &["post"]),
        ("/api/scopes/{scope}", &["delete"]),
        ("/api/scopes/{scope}/export", &["get"]),
        ("/api/subscription/current", &["get"]),
        ("/api/subscription/checkout", &["post"]),
        ("/api/subscription/portal", &["post"]),
        ("/api/subscription/change-plan", &["post"]),
        ("/api/webhooks/billing", &["post"]),
        ("/healthz", &["get"]),
        ("/readyz", &["get"]),
    ];
    // Reached without a key or session: they authenticate otherwise (a password, a
    // webhook signature) or not at all.
    let public = [
        "/api/auth/sign-up",
        "/api/auth/sign-in",
        "/api/webhooks/billing",
    ];
    assert_eq!(
        paths.len(),
        expected.len(),
        "documented: {:?}",
        paths.keys().collect::<Vec<_>>()
    );
    for (path, methods) in expected {
        for method in *methods {
            let operation: &Value = &paths[*path][*method];
            assert!(operation.is_object(), "{method} {path} is not documented");
            if path.starts_with("/api/") && !public.contains(path) {
                let responses = operation["responses"].as_object().unwrap();
                for status in ["401", "429"] {
                    assert!(
                        responses.contains_key(status),
                        "{method} {path} lacks {status}"
                    );
                }
                assert!(
                    operation["security"].is_array(),
                    "{method} {path} lacks security"
                );
            }
        }
    }
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for schema in [
        "ErrorBody",
        "CreateMemory",
        "MemoryView",
        "MemoryList",
        "SaveResult",
        "History",
    ] {
        assert!(schemas.contains_key(schema), "schema {schema} missing");
    }
    assert!(doc["components"]["securitySchemes"]["api_key"].is_object());
}

#[tokio::test]
async fn the_api_reference_is_served_without_a_cdn() {
    let app = spawn_app().await;
    let response = app.client.get(app.url("/api/docs/")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let html = response.text().await.unwrap();
    assert!(html.contains("swagger"), "{html}");
    for cdn in ["unpkg.com", "cdn.jsdelivr", "cdnjs"] {
        assert!(!html.contains(cdn), "the page loads from a CDN: {cdn}");
    }
    let bundle = app
        .client
        .get(app.url("/api/docs/swagger-ui-bundle.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(bundle.status(), 200);
}

#[tokio::test]
async fn shutdown_finishes_requests_in_flight() {
    let app = spawn_app().await;
    let request = app.client.get(app.url("/test/slow")).send();
    let in_flight = tokio::spawn(request);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    app.stop().await;
    let response = in_flight
        .await
        .unwrap()
        .expect("the in-flight request completes");
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "finished");
}

#[tokio::test]
async fn sqlite_runs_in_wal_mode() {
    let app = spawn_app().await;
    if postgres_url().is_some() {
        return; // PostgreSQL has no journal mode to check
    }
    use sqlx::Connection;
    let mut conn = sqlx::SqliteConnection::connect(&app.db.url).await.unwrap();
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
}
