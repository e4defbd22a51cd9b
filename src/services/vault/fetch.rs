//! Fetching a URL document: http(s) only, a timeout, a size cap, a redirect cap, and no
//! loopback, private, link-local or other internal addresses unless the configuration allows
//! them (server-side request forgery). Each hop's host is resolved once, checked, and the
//! connection is pinned to the checked address, so DNS cannot swap in another one.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use url::Url;

/// Rules for fetching.
#[derive(Debug, Clone)]
pub struct FetchPolicy {
    pub allow_private: bool,
    pub timeout: Duration,
    pub max_redirects: usize,
    pub max_bytes: usize,
}

/// What was fetched.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The final address (after redirects).
    pub url: Url,
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

/// Why a fetch was refused or failed; shown to the caller as a `url` validation error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error("must be an http or https URL")]
    Scheme,
    #[error("is not a valid URL")]
    Invalid,
    #[error("resolves to a loopback, private or link-local address, which is not allowed")]
    Internal,
    #[error("host cannot be resolved")]
    Unresolved,
    #[error("more than {0} redirects")]
    Redirects(usize),
    #[error("the response is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the server answered {0}")]
    Status(u16),
    #[error("fetch failed: {0}")]
    Network(String),
}

/// Whether an address is internal (refused unless allowed): loopback, private, link-local,
/// shared (CGNAT), unspecified, broadcast, multicast, documentation, unique-local IPv6, and
/// IPv4-mapped forms of those.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || (a == 100 && (64..128).contains(&b))
                || a == 0
                || a >= 240
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_internal(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
}

/// Resolves `url`'s host and picks an address the policy allows.
async fn checked_address(url: &Url, policy: &FetchPolicy) -> Result<SocketAddr, FetchError> {
    let host = url.host_str().ok_or(FetchError::Invalid)?;
    let port = url.port_or_known_default().ok_or(FetchError::Invalid)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|_| FetchError::Unresolved)?
        .collect();
    if addrs.is_empty() {
        return Err(FetchError::Unresolved);
    }
    if !policy.allow_private && addrs.iter().any(|a| is_internal(a.ip())) {
        return Err(FetchError::Internal);
    }
    Ok(addrs[0])
}

/// Fetches `raw` under `policy`.
pub async fn fetch(raw: &str, policy: &FetchPolicy) -> Result<Fetched, FetchError> {
    let mut url = Url::parse(raw.trim()).map_err(|_| FetchError::Invalid)?;
    for _ in 0..=policy.max_redirects {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(FetchError::Scheme);
        }
        let address = checked_address(&url, policy).await?;
        let host = url.host_str().ok_or(FetchError::Invalid)?.to_string();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(policy.timeout)
            .resolve(&host, address)
            .user_agent(concat!("memvault/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FetchError::Network(e.to_string()))?;
        let mut response = client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| FetchError::Network(network_reason(&e)))?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or(FetchError::Status(status.as_u16()))?;
            url = url.join(location).map_err(|_| FetchError::Invalid)?;
            continue;
        }
        if !status.is_success() {
            return Err(FetchError::Status(status.as_u16()));
        }
        if response
            .content_length()
            .is_some_and(|len| len > policy.max_bytes as u64)
        {
            return Err(FetchError::TooLarge(policy.max_bytes));
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut bytes = Vec::new();
        while let Some(part) = response
            .chunk()
            .await
            .map_err(|e| FetchError::Network(network_reason(&e)))?
        {
            if bytes.len() + part.len() > policy.max_bytes {
                return Err(FetchError::TooLarge(policy.max_bytes));
            }
            bytes.extend_from_slice(&part);
        }
        return Ok(Fetched {
            url,
            content_type,
            bytes,
        });
    }
    Err(FetchError::Redirects(policy.max_redirects))
}

fn network_reason(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        "timed out".to_string()
    } else if error.is_connect() {
        "cannot connect".to_string()
    } else {
        "the connection failed".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_recognised() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_internal(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "8.8.8.8", "2606:4700::1111"] {
            assert!(!is_internal(ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn loopback_and_bad_schemes_are_refused_by_default() {
        let policy = FetchPolicy {
            allow_private: false,
            timeout: Duration::from_secs(2),
            max_redirects: 3,
            max_bytes: 1024,
        };
        assert_eq!(
            fetch("http://127.0.0.1:9/x", &policy).await.unwrap_err(),
            FetchError::Internal
        );
        assert_eq!(
            fetch("http://localhost:9/x", &policy).await.unwrap_err(),
            FetchError::Internal
        );
        assert_eq!(
            fetch("file:///etc/passwd", &policy).await.unwrap_err(),
            FetchError::Scheme
        );
        assert_eq!(
            fetch("not a url", &policy).await.unwrap_err(),
            FetchError::Invalid
        );
    }
}
