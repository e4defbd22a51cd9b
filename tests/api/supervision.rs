//! The supervision tree (issue 31): every long-lived actor is restarted when it dies, readiness
//! names it while it is down, the work it held completes, and one that keeps dying stops the
//! server with an error naming it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use memvault_pipelines::pipeline::{Fault, Faults, Phase};
use reqwest::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::helpers::{json_of, spawn_app_with, TestApp};
use crate::metrics::sample;

/// The first generation of every document hangs when its parse phase starts.
struct FirstAttemptHangs;

impl Faults for FirstAttemptHangs {
    fn at(&self, _document: Uuid, phase: Phase, attempt: u32) -> Option<Fault> {
        (phase == Phase::Parse && attempt == 1).then_some(Fault::Hang)
    }
}

const PARTS: [&str; 4] = [
    "workspace_registry",
    "index_maintainer",
    "jobs_supervisor",
    "ingestion_supervisor",
];

/// A restart backoff long enough for readiness to be seen down, short enough for a test.
fn slow_restarts(settings: &mut memvault::config::Settings) {
    settings.server.supervision.restart_backoff_ms = 500;
    settings.server.supervision.restart_backoff_cap_ms = 500;
}

async fn ready(app: &TestApp) -> (u16, Value) {
    json_of(app.client.get(app.url("/readyz")).send().await.unwrap()).await
}

/// Polls `/readyz` until `check` holds, failing after 10 seconds.
async fn readiness_until(app: &TestApp, what: &str, check: impl Fn(u16, &Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body) = ready(app).await;
        if check(status, &body) {
            return body;
        }
        assert!(Instant::now() < deadline, "never {what}: {status} {body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn kill(app: &TestApp, part: &str) {
    app.liveness
        .cell(part)
        .unwrap_or_else(|| panic!("{part} runs"))
        .kill_and_wait(Some(Duration::from_secs(5)))
        .await
        .unwrap();
}

#[tokio::test]
async fn each_supervised_actor_is_restarted_and_readiness_follows() {
    for part in PARTS {
        let app = spawn_app_with(slow_restarts).await;
        let (status, body) = ready(&app).await;
        assert_eq!(status, 200, "{body}");
        kill(&app, part).await;
        let down = readiness_until(&app, &format!("reported {part} down"), |status, _| {
            status == 503
        })
        .await;
        assert_eq!(down["status"], "not ready");
        assert_eq!(down["parts"][part], "down", "{down}");
        assert_eq!(down["failing"], json!([part]), "{down}");
        readiness_until(&app, &format!("restarted {part}"), |status, _| {
            status == 200
        })
        .await;
        let text = app.get("/metrics").await.text().await.unwrap();
        for child in PARTS {
            let restarts = if child == part { 1.0 } else { 0.0 };
            assert_eq!(
                sample(
                    &text,
                    &format!(r#"memvault_actor_restarts_total{{actor="{child}"}}"#)
                ),
                Some(restarts),
                "{part}: {text}"
            );
            assert_eq!(
                sample(&text, &format!(r#"memvault_actor_up{{actor="{child}"}}"#)),
                Some(1.0),
                "{part}: {text}"
            );
        }
    }
}

#[tokio::test]
async fn work_in_flight_completes_across_restarts() {
    // The first generation of every document hangs in its parse phase (and is never deemed
    // stale): only the restart of the ingestion supervisor gets the document going again. Tied
    // to the attempt, not to the first parse: the kill may come before the first generation
    // reaches its parse phase.
    let db = crate::helpers::fresh_database().await;
    let mut settings = crate::helpers::test_settings(&db);
    slow_restarts(&mut settings);
    settings.vault.ingest_stale_ms = 600_000;
    // The test polls; a slow run must not meet the read limit.
    settings.accounts.rate_limits = memvault::config::Switch::Off;
    let app =
        crate::helpers::spawn_with_faults(db, settings, Some(Arc::new(FirstAttemptHangs))).await;
    let (status, accepted) = json_of(
        app.send_json(
            Method::POST,
            "/api/context-vault/documents",
            &json!({"sourceType": "text", "content": "The kitchen closes at nine."}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["document"]["id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, detail) = app
            .get_json(&format!("/api/context-vault/documents/{id}"))
            .await;
        if detail["document"]["status"] == "processing" {
            break;
        }
        assert!(Instant::now() < deadline, "never processing: {detail}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    kill(&app, "ingestion_supervisor").await;
    let detail = crate::vault::settle_in(&app, &id, "").await;
    assert_eq!(detail["document"]["status"], "completed", "{detail}");
    assert_eq!(detail["document"]["attempts"], 2, "{detail}");

    // A long note's job, its supervisor killed as it starts: resubmitted and finished.
    let (status, accepted) = json_of(
        app.send_json(
            Method::POST,
            "/api/memories",
            &json!({"content": crate::retrieval::long_note(), "scope": "planning"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    kill(&app, "jobs_supervisor").await;
    let job = crate::retrieval::finished_job(&app, accepted["jobId"].as_str().unwrap()).await;
    assert_eq!(job["state"], "completed", "{job}");

    // A save made while the registry is down waits for its successor.
    kill(&app, "workspace_registry").await;
    let saved = app
        .save("Maya's favourite tea is genmaicha", json!({}))
        .await;
    assert_eq!(
        saved["content"], "Maya's favourite tea is genmaicha",
        "{saved}"
    );

    // With the maintainer down and back, saves and searches go on.
    kill(&app, "index_maintainer").await;
    app.save("The office plants are watered on Mondays", json!({}))
        .await;
    let (status, found) = app.get_json("/api/memories/search?q=office%20plants").await;
    assert_eq!(status, 200, "{found}");
    assert!(
        found["results"].to_string().contains("watered on Mondays"),
        "{found}"
    );
    readiness_until(&app, "ready again", |status, _| status == 200).await;
}

#[tokio::test]
async fn an_actor_that_keeps_dying_stops_the_server_with_an_error_naming_it() {
    let mut app = spawn_app_with(|settings| {
        settings.server.supervision.restart_backoff_ms = 20;
        settings.server.supervision.max_restarts = 1;
    })
    .await;
    kill(&app, "index_maintainer").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !app
        .liveness
        .report()
        .iter()
        .any(|c| c.name == "index_maintainer" && c.alive && c.restarts == 1)
    {
        assert!(
            Instant::now() < deadline,
            "the maintainer was not restarted"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    kill(&app, "index_maintainer").await;
    let error = app
        .ended(Duration::from_secs(30))
        .await
        .expect_err("the server stops with an error");
    let message = error.to_string();
    assert!(
        message.starts_with("index_maintainer died 2 times within 60 s; giving up"),
        "{message}"
    );
}
