//! `GET /metrics` (issue 31, first part): every family is exported, and a scripted workload
//! moves the counters by exactly what it did.

use reqwest::Method;
use serde_json::json;

use crate::helpers::{spawn_app, spawn_app_with, TestApp};

async fn scrape(app: &TestApp) -> String {
    let response = app.get("/metrics").await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    response.text().await.unwrap()
}

/// The value of the sample `name{labels}` (labels as the exporter writes them), if present.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
}

#[tokio::test]
async fn a_scripted_workload_shows_in_every_family() {
    let app = spawn_app().await;
    for content in [
        "Maya's favourite tea is genmaicha",
        "The office plants are watered on Mondays",
        "Our staging database runs PostgreSQL 17",
        "Maya's favourite tea is genmaicha",
    ] {
        app.save(content, json!({})).await;
    }
    // A document, to fill the document gauges.
    let (status, accepted) = crate::helpers::json_of(
        app.with_key(&app.api_key, Method::POST, "/api/context-vault/documents")
            .json(&json!({"sourceType": "text", "content": "The kitchen closes at nine."}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["document"]["id"].as_str().unwrap().to_string();
    crate::vault::settle_in(&app, &id, "").await;
    // The write window, spent, for a refusal by class.
    app.spend_write_window().await;

    let text = scrape(&app).await;
    assert_eq!(
        sample(&text, r#"memvault_saves_total{status="created"}"#),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"memvault_saves_total{status="duplicate"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"memvault_http_requests_total{route="/api/memories",method="POST",status="201"}"#
        ),
        Some(4.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"memvault_http_request_duration_seconds_count{route="/api/memories",method="POST"}"#
        ),
        Some(4.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"memvault_rate_limited_total{class="write"}"#),
        Some(1.0),
        "{text}"
    );
    assert!(
        sample(&text, "memvault_embedding_batch_size_count").unwrap_or(0.0) >= 1.0,
        "{text}"
    );
    assert!(sample(&text, "memvault_embedding_duration_seconds_count").unwrap_or(0.0) >= 1.0);
    assert_eq!(
        sample(&text, r#"memvault_documents{status="completed"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "memvault_documents_pending"),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"memvault_document_generations_total{status="completed"}"#
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"memvault_document_generations_total{status="failed"}"#
        ),
        Some(0.0),
        "{text}"
    );
    for phase in ["parse", "ocr", "chunk", "embed", "extract"] {
        assert_eq!(
            sample(
                &text,
                &format!(r#"memvault_document_phase_duration_seconds_count{{phase="{phase}"}}"#)
            ),
            Some(1.0),
            "{text}"
        );
    }
    // Nothing failed: every failure series is exported, at zero.
    let failures: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("memvault_document_failures_total{"))
        .collect();
    assert_eq!(failures.len(), 5 * 5 + 1, "{text}");
    assert!(failures.iter().all(|l| l.ends_with(" 0")), "{text}");
    // Three memories indexed (the duplicate is the first one again), none folded yet.
    assert_eq!(
        sample(&text, r#"memvault_index_vectors{kind="memories"}"#),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"memvault_index_segments{kind="memories"}"#),
        Some(0.0),
        "{text}"
    );
    assert!(
        sample(&text, r#"memvault_index_vectors{kind="vault_chunks"}"#).unwrap_or(0.0) >= 1.0,
        "{text}"
    );
    assert!(
        sample(&text, r#"memvault_index_vectors{kind="vault_memories"}"#).unwrap_or(0.0) >= 1.0,
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"memvault_actor_restarts_total{actor="ingestion_supervisor"}"#
        ),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"memvault_ingestion_documents{state="queued"}"#),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "memvault_documents_oldest_pending_age_seconds"),
        Some(0.0)
    );
    assert!(
        sample(&text, r#"memvault_db_connections{state="idle"}"#).is_some(),
        "{text}"
    );
    // Route templates, never raw paths: no document id appears.
    assert!(!text.contains(&id), "{text}");
    assert!(
        text.contains(r#"route="/api/context-vault/documents/{id}""#),
        "{text}"
    );
}

#[tokio::test]
async fn metrics_can_require_a_token() {
    let app = spawn_app_with(|s| {
        s.server.metrics_token = Some(memvault::config::Secret::new("scrape-me"))
    })
    .await;
    let refused = app.get("/metrics").await;
    assert_eq!(refused.status(), 401);
    let wrong = app
        .client
        .get(app.url("/metrics"))
        .header("Authorization", "Bearer nope")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let ok = app
        .client
        .get(app.url("/metrics"))
        .header("Authorization", "Bearer scrape-me")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    assert!(ok
        .text()
        .await
        .unwrap()
        .contains("memvault_http_requests_total"));
}

/// Metric names a PromQL expression reads (`memvault_...`), without a sample suffix.
fn families_in(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("memvault_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest = &rest[at + name.len()..];
        let base = ["_total", "_bucket", "_count", "_sum"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix))
            .unwrap_or(&name)
            .to_string();
        out.push(base);
    }
    out
}

#[tokio::test]
async fn the_grafana_dashboard_queries_only_exported_metrics() {
    let app = spawn_app().await;
    // The first scrape is itself a request: the second shows the request families too.
    scrape(&app).await;
    let text = scrape(&app).await;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/grafana/memvault.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut checked = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            let families = families_in(expr);
            assert!(!families.is_empty(), "{expr}");
            for family in families {
                assert!(
                    text.contains(&format!("# TYPE {family} ")),
                    "panel '{}' queries {family}, which the server does not export:\n{text}",
                    panel["title"]
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "{checked}");
}

#[tokio::test]
async fn saves_and_refusals_are_counted_per_workspace_only_when_turned_on() {
    let app = spawn_app_with(|s| s.server.metrics_per_workspace = true).await;
    for content in [
        "The boiler is serviced in May",
        "The boiler is serviced in May",
    ] {
        app.save(content, json!({})).await;
    }
    app.spend_write_window().await;
    let text = scrape(&app).await;
    let id = app.workspace_id;
    assert_eq!(
        sample(
            &text,
            &format!(r#"memvault_workspace_saves_total{{workspace="{id}",status="created"}}"#)
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            &format!(r#"memvault_workspace_saves_total{{workspace="{id}",status="duplicate"}}"#)
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            &format!(r#"memvault_workspace_rate_limited_total{{workspace="{id}",class="write"}}"#)
        ),
        Some(1.0),
        "{text}"
    );

    // Off (the default): no family carries a workspace id.
    let bounded = spawn_app().await;
    bounded
        .save("The boiler is serviced in May", json!({}))
        .await;
    let text = scrape(&bounded).await;
    assert!(!text.contains("memvault_workspace_"), "{text}");
    assert!(!text.contains(&bounded.workspace_id.to_string()), "{text}");
}
