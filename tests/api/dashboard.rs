//! The dashboard is served from the binary: its page, script and styles, with the right types,
//! and nothing loaded from another host. (What it does in a browser: tests/e2e.)

use reqwest::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, LOCATION};
use reqwest::{redirect, StatusCode};

use crate::helpers::{assert_error, spawn_app};

fn header(response: &reqwest::Response, name: reqwest::header::HeaderName) -> String {
    response
        .headers()
        .get(&name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

/// Every `http://` or `https://` URL in `text`.
fn absolute_urls(text: &str) -> Vec<String> {
    let lower = text.to_ascii_lowercase();
    let mut found = Vec::new();
    for scheme in ["http://", "https://"] {
        let mut from = 0;
        while let Some(at) = lower[from..].find(scheme) {
            let start = from + at;
            let end = text[start..]
                .find(|c: char| c.is_whitespace() || "\"'`)<>".contains(c))
                .map_or(text.len(), |n| start + n);
            found.push(text[start..end].to_string());
            from = start + scheme.len();
        }
    }
    found
}

/// The values of `src="..."` and `href="..."` attributes in an HTML page.
fn referenced(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    for attribute in ["src=\"", "href=\""] {
        let mut rest = html;
        while let Some(at) = rest.find(attribute) {
            rest = &rest[at + attribute.len()..];
            let end = rest.find('"').unwrap_or(rest.len());
            found.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    found
}

#[tokio::test]
async fn the_root_and_app_paths_lead_to_the_app() {
    let app = spawn_app().await;
    let client = reqwest::Client::builder()
        .redirect(redirect::Policy::none())
        .build()
        .unwrap();
    for path in ["/", "/app"] {
        let response = client.get(app.url(path)).send().await.unwrap();
        assert!(
            response.status().is_redirection(),
            "{path}: {:?}",
            response.status()
        );
        assert_eq!(header(&response, LOCATION), "/app/", "{path}");
    }

    // The page itself, at the app's root and at any path the app routes on the client.
    let mut first = None;
    for path in [
        "/app/",
        "/app/memories",
        "/app/vault/0b7e5c5e-3d1f-4c55-9a55-2f5d2b3c9c11",
        "/app/invitations/some-token",
        "/app/settings/keys",
    ] {
        let response = client.get(app.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(
            header(&response, CONTENT_TYPE),
            "text/html; charset=utf-8",
            "{path}"
        );
        assert_eq!(header(&response, CACHE_CONTROL), "no-cache", "{path}");
        let policy = header(&response, CONTENT_SECURITY_POLICY);
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "connect-src 'self'",
        ] {
            assert!(policy.contains(directive), "{path}: {policy}");
        }
        let html = response.text().await.unwrap();
        assert!(html.starts_with("<!doctype html>"), "{path}");
        match &first {
            None => first = Some(html),
            Some(page) => assert_eq!(page, &html, "{path} serves another page"),
        }
    }
}

#[tokio::test]
async fn the_page_references_only_local_assets() {
    let app = spawn_app().await;
    let html = app
        .client
        .get(app.url("/app/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        absolute_urls(&html).is_empty(),
        "{:?}",
        absolute_urls(&html)
    );
    let references = referenced(&html);
    for asset in ["/app/assets/app.js", "/app/assets/app.css"] {
        assert!(references.iter().any(|r| r == asset), "{references:?}");
    }
    for reference in &references {
        let local = (reference.starts_with('/') && !reference.starts_with("//"))
            || reference.starts_with('#')
            || reference == "data:,";
        assert!(local, "index.html references {reference}");
        if reference.starts_with("/app/assets/") {
            let response = app.client.get(app.url(reference)).send().await.unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{reference}");
        }
    }
}

#[tokio::test]
async fn the_script_and_styles_are_served_with_their_types() {
    let app = spawn_app().await;
    for (path, content_type, needle) in [
        (
            "/app/assets/app.js",
            "text/javascript; charset=utf-8",
            "/api/auth/session",
        ),
        (
            "/app/assets/app.css",
            "text/css; charset=utf-8",
            ".progress",
        ),
    ] {
        let response = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(header(&response, CONTENT_TYPE), content_type, "{path}");
        assert_eq!(header(&response, CACHE_CONTROL), "no-cache", "{path}");
        assert_eq!(
            header(&response, "x-content-type-options".parse().unwrap()),
            "nosniff"
        );
        let etag = header(&response, ETAG);
        assert!(etag.starts_with('"') && etag.len() > 2, "{path}: {etag}");
        let body = response.text().await.unwrap();
        assert!(body.contains(needle), "{path} lacks {needle}");
        // No CDN, no font or script host: nothing names another server.
        assert!(
            absolute_urls(&body).is_empty(),
            "{path} names other hosts: {:?}",
            absolute_urls(&body)
        );
        assert!(
            !body.contains("//cdn") && !body.contains("@import"),
            "{path}"
        );

        // A browser holding this version revalidates and gets a 304 with no body.
        let again = app
            .client
            .get(app.url(path))
            .header("If-None-Match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
        assert!(again.text().await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn an_unknown_asset_is_a_404_and_the_api_is_untouched() {
    let app = spawn_app().await;
    let response = app
        .client
        .get(app.url("/app/assets/missing.js"))
        .send()
        .await
        .unwrap();
    assert_error(response, 404, "no dashboard asset").await;
    // The API's own 404 and auth answers are unchanged by the app's routes.
    let response = app.client.get(app.url("/api/nope")).send().await.unwrap();
    assert_error(response, 404, "route not found").await;
    let response = app
        .client
        .get(app.url("/api/auth/session"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    // Writing to the app's paths is not a thing.
    let response = app.client.post(app.url("/app/")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
}
