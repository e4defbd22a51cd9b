//! The error envelope and request ids, for every kind of failure.

use reqwest::Method;
use serde_json::json;

use crate::helpers::{assert_error, json_of, spawn_app};

#[tokio::test]
async fn every_response_carries_a_request_id() {
    let app = spawn_app().await;
    let ok = app.send(Method::GET, "/api/memories").await;
    assert_eq!(ok.status(), 200);
    let id = ok
        .headers()
        .get("x-request-id")
        .expect("X-Request-Id")
        .to_str()
        .unwrap()
        .to_string();
    assert!(uuid::Uuid::parse_str(&id).is_ok());
    let health = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert!(health.headers().contains_key("x-request-id"));
    // A caller's own id is kept.
    let mine = app
        .request(Method::GET, "/api/memories")
        .header("x-request-id", "trace-123")
        .send()
        .await
        .unwrap();
    assert_eq!(mine.headers()["x-request-id"], "trace-123");
    let error = app
        .request(Method::GET, "/api/nope")
        .header("x-request-id", "trace-456")
        .send()
        .await
        .unwrap();
    let body = assert_error(error, 404, "route not found").await;
    assert_eq!(body["requestId"], "trace-456");
}

#[tokio::test]
async fn router_and_extractor_failures_use_the_envelope() {
    let app = spawn_app().await;
    assert_error(
        app.send(Method::GET, "/api/unknown").await,
        404,
        "route not found",
    )
    .await;
    assert_error(app.send(Method::GET, "/nope").await, 404, "route not found").await;
    assert_error(
        app.send(Method::PUT, "/api/memories").await,
        405,
        "method not allowed",
    )
    .await;
    let r = app
        .request(Method::POST, "/api/memories")
        .body(r#"{"content":"x"}"#)
        .send()
        .await
        .unwrap();
    assert_error(r, 415, "application/json").await;
    let r = app
        .request(Method::POST, "/api/memories")
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_error(r, 400, "malformed JSON").await;
    let r = app
        .request(Method::POST, "/api/memories")
        .header("content-type", "application/json")
        .body(r#"["a list"]"#)
        .send()
        .await
        .unwrap();
    assert_error(r, 400, "invalid JSON body").await;
    let r = app.send(Method::GET, "/api/memories?limit=1&limit=2").await;
    assert_error(r, 400, "query").await;
}

#[tokio::test]
async fn bodies_over_50_kb_are_413_and_store_nothing() {
    let app = spawn_app().await;
    let big = json!({"content": "x".repeat(52 * 1024)});
    let r = app.send_json(Method::POST, "/api/memories", &big).await;
    assert_error(r, 413, "too large").await;
    // Just under the limit is read (and then refused by the content rule, naming the field).
    let under = json!({"content": "x".repeat(40 * 1024)});
    let r = app.send_json(Method::POST, "/api/memories", &under).await;
    assert_error(r, 400, "content").await;
    let (_, list) = app.get_json("/api/memories").await;
    assert_eq!(list["total"], 0);
}

#[tokio::test]
async fn a_panic_is_a_500_with_an_error_id_and_the_server_keeps_serving() {
    let app = spawn_app().await;
    app.save("survives", json!({})).await;
    for _ in 0..3 {
        let r = app.send(Method::GET, "/test/panic").await;
        let body = assert_error(r, 500, "internal server error").await;
        let error_id = body["errorId"].as_str().unwrap();
        assert!(
            error_id.starts_with("ERR_") && error_id.len() == 12,
            "{error_id}"
        );
        // No internals leak.
        assert!(!body.to_string().contains("deliberate"), "{body}");
    }
    let (status, list) = app.get_json("/api/memories").await;
    assert_eq!((status, list["total"].as_i64()), (200, Some(1)));
}

#[tokio::test]
async fn error_bodies_have_exactly_the_documented_fields() {
    let app = spawn_app().await;
    let r = app
        .client
        .get(app.url("/api/memories"))
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(r).await;
    assert_eq!(status, 401);
    let mut keys: Vec<_> = body.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, vec!["code", "error", "requestId"]);
}

/// The API's rules for what a request is, as the OpenAPI document states them: an empty query
/// parameter is refused naming it (omit it instead), and every JSON body is an object.
#[tokio::test]
async fn empty_query_parameters_and_non_object_bodies_are_refused_naming_them() {
    let app = spawn_app().await;
    for (path, field) in [
        ("/api/memories?limit=", "limit"),
        ("/api/memories?scope=&limit=5", "scope"),
        ("/api/memories/search?q=tea&mode", "mode"),
        ("/api/context-vault/documents?workspaceId=", "workspaceId"),
    ] {
        let error = assert_error(app.send(Method::GET, path).await, 400, "must not be empty").await;
        assert!(
            error["error"].as_str().unwrap().contains(field),
            "{path}: {error}"
        );
    }
    // Left out, the same parameters are fine.
    let (status, _) = app.get_json("/api/memories?limit=5").await;
    assert_eq!(status, 200);
    for body in [r#"["Maya likes tea", null]"#, "42", r#""text""#] {
        let r = app
            .request(Method::POST, "/api/memories")
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_error(r, 400, "must be a JSON object").await;
    }
    // An optional body too (feedback on a vault memory).
    let r = app
        .request(
            Method::POST,
            &format!("/api/context-vault/memories/{}/feedback", uuid::Uuid::nil()),
        )
        .header("content-type", "application/json")
        .body("[null, \"helpful\"]")
        .send()
        .await
        .unwrap();
    assert_error(r, 400, "must be a JSON object").await;
    let (_, list) = app.get_json("/api/memories").await;
    assert_eq!(list["total"], 0, "nothing was stored: {list}");
}
