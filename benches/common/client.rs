//! The HTTP client that drives a benchmark server, and how its answers are checked.

use std::time::Duration;

use reqwest::StatusCode;

/// Characters of an unexpected response body shown in its error message.
pub const BODY_SHOWN: usize = 300;

/// A client with no proxy that keeps up to `idle_per_host` keep-alive connections and gives
/// every request `timeout`.
pub fn client(idle_per_host: usize, timeout: Duration) -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(idle_per_host)
        .timeout(timeout)
        .build()?)
}

/// Sends `request` and reads the whole body; an error unless the status is `expected`.
pub async fn expect(
    request: reqwest::RequestBuilder,
    what: &str,
    expected: StatusCode,
) -> Result<Vec<u8>, String> {
    let response = request.send().await.map_err(|e| format!("{what}: {e}"))?;
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| format!("{what}: reading the body: {e}"))?;
    if status != expected {
        let body: String = String::from_utf8_lossy(&bytes)
            .chars()
            .take(BODY_SHOWN)
            .collect();
        return Err(format!("{what}: expected {expected}, got {status}: {body}"));
    }
    Ok(bytes.to_vec())
}

/// Sends `request` and parses the JSON body; an error unless the status is `expected`.
pub async fn expect_json(
    request: reqwest::RequestBuilder,
    what: &str,
    expected: StatusCode,
) -> Result<serde_json::Value, String> {
    let bytes = expect(request, what, expected).await?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{what}: body is not JSON: {e}"))
}
