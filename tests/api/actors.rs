//! The workspace actors through HTTP: rate limits, memory limits, supervision.

use std::time::Duration;

use memvault::config::Switch;
use memvault::model::Plan;
use reqwest::Method;
use serde_json::json;

use crate::helpers::{assert_error, json_of, spawn_app, spawn_app_with};

fn header(response: &reqwest::Response, name: &str) -> Option<i64> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

// Under load this once admitted 42 of 30: a workspace actor just spawned was still `Starting`,
// the registry took it for dead and spawned a second one, and each counted its own window
// (fixed by `is_live` in `actors/src/supervisor.rs`; unit test `a_burst_at_first_contact_...`).
#[tokio::test]
async fn hundred_parallel_saves_against_a_limit_of_thirty_give_exactly_thirty() {
    let app = spawn_app().await; // free plan: 30 saves per minute
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let request = app
                .request(Method::POST, "/api/memories")
                .json(&json!({"content": format!("parallel {i}")}));
            tokio::spawn(async move { request.send().await.unwrap() })
        })
        .collect();
    // Counted per one-minute window (`X-RateLimit-Reset`): a run that straddles a window
    // boundary is admitted up to the limit in each window.
    let mut windows: std::collections::BTreeMap<i64, (u64, u64)> = Default::default();
    for task in tasks {
        let response = task.await.unwrap();
        assert_eq!(header(&response, "x-ratelimit-limit"), Some(30));
        let window = header(&response, "x-ratelimit-reset").expect("X-RateLimit-Reset");
        match response.status().as_u16() {
            201 => windows.entry(window).or_default().0 += 1,
            429 => {
                let retry_after = header(&response, "retry-after").expect("Retry-After on 429");
                assert!((1..=60).contains(&retry_after));
                assert_eq!(header(&response, "x-ratelimit-remaining"), Some(0));
                assert_error(response, 429, "rate limit").await;
                windows.entry(window).or_default().1 += 1;
            }
            other => panic!("unexpected status {other}"),
        }
    }
    for (window, (created, limited)) in &windows {
        if *limited > 0 {
            assert_eq!(*created, 30, "window {window}: {windows:?}");
        } else {
            assert!(*created <= 30, "window {window}: {windows:?}");
        }
    }
    let created: u64 = windows.values().map(|w| w.0).sum();
    assert_eq!(created + windows.values().map(|w| w.1).sum::<u64>(), 100);
    if windows.len() == 1 {
        assert_eq!(created, 30);
    }
    let (_, list) = app.get_json("/api/memories?limit=100").await;
    assert_eq!(list["total"], created);
}

#[tokio::test]
async fn limited_responses_carry_the_headers_of_their_class() {
    let app = spawn_app().await;
    let response = app
        .send_json(Method::POST, "/api/memories", &json!({"content": "one"}))
        .await;
    assert_eq!(header(&response, "x-ratelimit-limit"), Some(30));
    assert_eq!(header(&response, "x-ratelimit-remaining"), Some(29));
    let reset = header(&response, "x-ratelimit-reset").unwrap();
    let now = chrono::Utc::now().timestamp();
    assert!(
        reset > now - 1 && reset <= now + 60 && reset % 60 == 0,
        "reset {reset} now {now}"
    );
    let id = json_of(response).await.1["memory"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let read = app.send(Method::GET, "/api/memories").await;
    assert_eq!(header(&read, "x-ratelimit-limit"), Some(600));
    let write = app
        .send(Method::DELETE, &format!("/api/memories/{id}"))
        .await;
    assert_eq!(header(&write, "x-ratelimit-limit"), Some(120));
    // Feedback is its own class (on a missing memory: still counted and reported).
    let feedback = app
        .send_json(
            Method::POST,
            &format!("/api/memories/{id}/feedback"),
            &json!({"rating": "helpful"}),
        )
        .await;
    assert_eq!(header(&feedback, "x-ratelimit-limit"), Some(30));
    // Unauthenticated requests are not counted against anyone.
    let anonymous = app
        .client
        .get(app.url("/api/memories"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    assert!(anonymous.headers().get("x-ratelimit-limit").is_none());
}

#[tokio::test]
async fn a_plan_change_applies_to_the_next_request() {
    let app = spawn_app().await;
    let response = app
        .send_json(Method::POST, "/api/memories", &json!({"content": "a"}))
        .await;
    assert_eq!(header(&response, "x-ratelimit-limit"), Some(30));
    app.set_plan(Plan::Pro).await;
    let response = app
        .send_json(Method::POST, "/api/memories", &json!({"content": "b"}))
        .await;
    assert_eq!(header(&response, "x-ratelimit-limit"), Some(300));
}

#[tokio::test]
async fn rate_limits_off_means_no_limit_and_no_headers() {
    let app = spawn_app_with(|s| s.accounts.rate_limits = Switch::Off).await;
    for i in 0..40 {
        let response = app
            .send_json(
                Method::POST,
                "/api/memories",
                &json!({"content": format!("m {i}")}),
            )
            .await;
        assert_eq!(response.status(), 201);
        assert!(response.headers().get("x-ratelimit-limit").is_none());
    }
}

#[tokio::test]
async fn concurrent_saves_never_overshoot_the_memory_limit() {
    let app = spawn_app_with(|s| {
        s.accounts.rate_limits = Switch::Off;
        s.accounts.memory_limits.free = 5;
    })
    .await;
    let tasks: Vec<_> = (0..25)
        .map(|i| {
            let request = app
                .request(Method::POST, "/api/memories")
                .json(&json!({"content": format!("limited {i}")}));
            tokio::spawn(async move { request.send().await.unwrap() })
        })
        .collect();
    let (mut created, mut refused) = (0, 0);
    for task in tasks {
        let response = task.await.unwrap();
        match response.status().as_u16() {
            201 => created += 1,
            403 => {
                assert_error(response, 403, "memory limit").await;
                refused += 1;
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!((created, refused), (5, 20));
    // A duplicate is not a new memory: still answered at the limit.
    let response = app
        .request(Method::POST, "/api/memories")
        .json(&json!({"content": "limited 0"}))
        .send()
        .await;
    let (status, body) = json_of(response.unwrap()).await;
    if status == 201 {
        assert_eq!(body["status"], "duplicate");
    } else {
        // "limited 0" may have been one of the refused ones.
        assert_eq!(status, 403);
    }
    // Deleting frees a slot.
    let (_, list) = app.get_json("/api/memories").await;
    let id = list["memories"][0]["id"].as_str().unwrap().to_string();
    let response = app
        .send(Method::DELETE, &format!("/api/memories/{id}"))
        .await;
    assert_eq!(response.status(), 200);
    let response = app
        .send_json(
            Method::POST,
            "/api/memories",
            &json!({"content": "fits again"}),
        )
        .await;
    assert_eq!(response.status(), 201);
    let response = app
        .send_json(
            Method::POST,
            "/api/memories",
            &json!({"content": "one too many"}),
        )
        .await;
    assert_error(response, 403, "memory limit").await;
    // Superseding at the limit keeps the count and is allowed.
    let response = app
        .send_json(
            Method::POST,
            "/api/memories",
            &json!({"content": "fits again, revised", "supersedes": list["memories"][1]["id"]}),
        )
        .await;
    assert_eq!(response.status(), 201);
}

#[tokio::test]
async fn the_memory_count_survives_an_actor_restart() {
    let app = spawn_app_with(|s| {
        s.accounts.rate_limits = Switch::Off;
        s.accounts.memory_limits.free = 3;
    })
    .await;
    for i in 0..3 {
        app.save(&format!("kept {i}"), json!({})).await;
    }
    let actor = app.workspaces.resolve(app.workspace_id).await.unwrap();
    actor.kill();
    let response = app
        .send_json(Method::POST, "/api/memories", &json!({"content": "fourth"}))
        .await;
    assert_error(response, 403, "memory limit").await;
}

#[tokio::test]
async fn a_dead_workspace_actor_is_replaced_and_serving_continues() {
    let app = spawn_app().await;
    app.save("before", json!({})).await;
    let first = app.workspaces.resolve(app.workspace_id).await.unwrap();
    first.kill();
    // The very next request is served (by a fresh actor).
    let response = app
        .send_json(Method::POST, "/api/memories", &json!({"content": "after"}))
        .await;
    assert_eq!(response.status(), 201);
    let second = app.workspaces.resolve(app.workspace_id).await.unwrap();
    assert_ne!(first.get_id(), second.get_id());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(app.workspaces.live_count().await.unwrap(), 1);
    let (_, list) = app.get_json("/api/memories").await;
    assert_eq!(list["total"], 2);
}

#[tokio::test]
async fn invalid_requests_count_against_the_limit_too() {
    let app = spawn_app().await;
    for _ in 0..30 {
        let response = app
            .send_json(Method::POST, "/api/memories", &json!({"content": ""}))
            .await;
        assert_eq!(header(&response, "x-ratelimit-limit"), Some(30));
        assert_error(response, 400, "content").await;
    }
    let response = app
        .send_json(Method::POST, "/api/memories", &json!({"content": "valid"}))
        .await;
    assert_error(response, 429, "rate limit").await;
}
