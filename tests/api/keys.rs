//! API keys: required, hashed at rest, bound to one workspace.

use reqwest::Method;
use serde_json::json;
use sqlx::Connection;

use crate::helpers::{assert_error, spawn_app, TestApp};

#[tokio::test]
async fn a_missing_or_wrong_key_is_401() {
    let app = spawn_app().await;
    let endpoints = [
        (Method::GET, "/api/memories".to_string()),
        (Method::POST, "/api/memories".to_string()),
        (
            Method::GET,
            format!("/api/memories/{}", uuid::Uuid::new_v4()),
        ),
        (
            Method::GET,
            format!("/api/memories/{}/history", uuid::Uuid::new_v4()),
        ),
    ];
    let extended = format!("{}x", app.api_key);
    for (method, path) in &endpoints {
        let r = app
            .client
            .request(method.clone(), app.url(path))
            .json(&json!({"content": "x"}))
            .send()
            .await
            .unwrap();
        assert_error(r, 401, "API key").await;
        for wrong in ["mc_wrong", "not-even-prefixed", "", extended.as_str()] {
            let r = app
                .client
                .request(method.clone(), app.url(path))
                .header("X-API-Key", wrong)
                .json(&json!({"content": "x"}))
                .send()
                .await
                .unwrap();
            assert_error(r, 401, "API key").await;
        }
    }
}

#[tokio::test]
async fn a_key_never_reaches_another_workspace() {
    let app = spawn_app().await;
    let (other_id, _) = app.other_workspace(None).await;
    let r = app
        .send(
            Method::GET,
            &format!("/api/memories?workspaceId={other_id}"),
        )
        .await;
    assert_error(r, 403, "another workspace").await;
    let r = app
        .send_json(
            Method::POST,
            "/api/memories",
            &json!({"content": "x", "workspaceId": other_id}),
        )
        .await;
    assert_error(r, 403, "another workspace").await;
    // Naming its own workspace is fine.
    let r = app
        .send_json(
            Method::POST,
            "/api/memories",
            &json!({"content": "x", "workspaceId": app.workspace_id}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let r = app
        .send(
            Method::GET,
            &format!("/api/memories?workspaceId={}", app.workspace_id),
        )
        .await;
    assert_eq!(r.status(), 200);
}

/// Every text column of `api_keys`, as stored.
async fn stored_key_columns(app: &TestApp) -> Vec<String> {
    let sql = "SELECT name || ' ' || prefix || ' ' || key_hash FROM api_keys";
    if app.db.url.starts_with("postgres") {
        let mut conn = sqlx::PgConnection::connect(&app.db.url).await.unwrap();
        sqlx::query_scalar(sql).fetch_all(&mut conn).await.unwrap()
    } else {
        let mut conn = sqlx::SqliteConnection::connect(&app.db.url).await.unwrap();
        sqlx::query_scalar(sql).fetch_all(&mut conn).await.unwrap()
    }
}

#[tokio::test]
async fn keys_are_stored_only_as_a_hash() {
    let app = spawn_app().await;
    assert!(app.api_key.starts_with("mc_") && app.api_key.len() >= 35);
    let rows = stored_key_columns(&app).await;
    assert_eq!(rows.len(), 1);
    let secret = &app.api_key[3..];
    assert!(
        !rows[0].contains(secret),
        "the key itself is stored: {}",
        rows[0]
    );
    assert!(
        rows[0].contains(&app.api_key[..9]),
        "the display prefix is kept: {}",
        rows[0]
    );
}
