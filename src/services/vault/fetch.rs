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

/// Whether an address is internal (refused unless allowed): every block of IANA's IPv4 and
/// IPv6 special-purpose registries that is not globally reachable, plus multicast and the
/// reserved space, and every IPv6 form that embeds an IPv4 address or reaches one through a
/// translator (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo), whatever the address it
/// embeds. The few globally reachable anycast services inside those blocks (AS112, AMT,
/// TURN) are refused too: no document lives there.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            a == 0 // "this network" 0.0.0.0/8
                || a == 10 // private
                || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
                || a == 127 // loopback
                || (a == 169 && b == 254) // link-local
                || (a == 172 && (16..32).contains(&b)) // private
                || (a == 192 && b == 0 && c == 0) // IETF protocol assignments 192.0.0.0/24
                || (a == 192 && b == 0 && c == 2) // documentation TEST-NET-1
                || (a == 192 && b == 88 && c == 99) // deprecated 6to4 relay anycast
                || (a == 192 && b == 168) // private
                || (a == 198 && (b == 18 || b == 19)) // benchmarking 198.18.0.0/15
                || (a == 198 && b == 51 && c == 100) // documentation TEST-NET-2
                || (a == 203 && b == 0 && c == 113) // documentation TEST-NET-3
                || a >= 224 // multicast 224/4, reserved 240/4, broadcast
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            let embeds_v4 =
                // ::/96: unspecified, loopback and IPv4-compatible (::a.b.c.d)
                s[..6] == [0, 0, 0, 0, 0, 0]
                // ::ffff:0:0/96: IPv4-mapped
                || s[..6] == [0, 0, 0, 0, 0, 0xffff]
                // ::ffff:0:0:0/96: IPv4-translated (SIIT)
                || s[..6] == [0, 0, 0, 0, 0xffff, 0]
                // 64:ff9b::/96 (NAT64, well-known) and 64:ff9b:1::/48 (NAT64, local use)
                || (s[0] == 0x64 && s[1] == 0xff9b)
                // 2002::/16: 6to4
                || s[0] == 0x2002;
            embeds_v4
                || (s[0] == 0x100 && s[1..4] == [0, 0, 0]) // discard-only 100::/64
                || (s[0] == 0x2001 && s[1] < 0x200) // IETF protocol assignments 2001::/23 (Teredo included)
                || (s[0] == 0x2001 && s[1] == 0xdb8) // documentation
                || (s[0] == 0x3fff && s[1] < 0x1000) // documentation 3fff::/20
                || s[0] == 0x5f00 // segment routing SIDs 5f00::/16
                || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated) fec0::/10
                || (s[0] & 0xff00) == 0xff00 // multicast
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
            // HTTP(S)_PROXY would send the request to a proxy that resolves the host itself,
            // around the address checked here.
            .no_proxy()
            .user_agent(concat!("memvault/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FetchError::Network(e.to_string()))?;
        let mut response = client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| FetchError::Network(network_reason(&e)))?;
        // Decided on the address actually connected to, not only on the one resolved.
        if !policy.allow_private && response.remote_addr().is_none_or(|a| is_internal(a.ip())) {
            return Err(FetchError::Internal);
        }
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
            "::ffff:8.8.8.8",
            "64:ff9b::7f00:1",
            "64:ff9b::808:808",
            "64:ff9b:1::a00:1",
            "::127.0.0.1",
            "::10.0.0.1",
            "2002:7f00:1::1",
            "2002:808:808::1",
            "2001::1",
            "2001:db8::1",
            "198.18.0.1",
            "198.19.255.255",
            "192.0.0.1",
            "192.0.0.170",
            "192.0.2.1",
            "198.51.100.1",
            "203.0.113.9",
            "192.88.99.1",
            "240.0.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "fec0::1",
            "ff02::1",
            "100::1",
            "3fff::1",
            "5f00::1",
        ] {
            assert!(is_internal(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "198.20.0.1",
            "192.0.1.1",
            "2a00:1450::1",
        ] {
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
