//! What the adapter needs to speak to browsers: the session cookie and the CSRF origin check.

use axum::http::{header, HeaderMap, HeaderValue};

use super::extract::SESSION_COOKIE;
use crate::error::Error;

/// Browser-facing settings.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// Where users reach the server; `None`: the request's own `Host`.
    pub public_url: Option<url::Url>,
    /// How long the session cookie lives, seconds.
    pub session_max_age_secs: i64,
}

impl WebConfig {
    /// Cookies are `Secure` when the server is reached over TLS (a `https` public URL).
    fn secure(&self) -> bool {
        self.public_url
            .as_ref()
            .is_some_and(|url| url.scheme() == "https")
    }

    /// `Set-Cookie` for a new session.
    pub fn session_cookie(&self, token: &str) -> HeaderValue {
        let secure = if self.secure() { "; Secure" } else { "" };
        let value = format!(
            "{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
            self.session_max_age_secs
        );
        HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// `Set-Cookie` that removes the session cookie.
    pub fn clear_session_cookie(&self) -> HeaderValue {
        let secure = if self.secure() { "; Secure" } else { "" };
        HeaderValue::from_str(&format!(
            "{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{secure}"
        ))
        .unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// Where this server is reached: the public URL, else `http://` and the request's `Host`.
    pub fn base_url(&self, headers: &HeaderMap) -> String {
        match &self.public_url {
            Some(url) => url.origin().ascii_serialization(),
            None => {
                let host = headers
                    .get(header::HOST)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("127.0.0.1");
                format!("http://{host}")
            }
        }
    }

    /// Sign-up and sign-in: a browser's cross-site form is refused (login CSRF); clients
    /// that send no `Origin` (scripts, curl) pass.
    pub fn check_origin_if_sent(&self, headers: &HeaderMap) -> Result<(), Error> {
        if headers.contains_key(header::ORIGIN) {
            self.check_origin(headers)
        } else {
            Ok(())
        }
    }

    /// Refuses a cookie-authenticated, state-changing request whose `Origin` (or, without
    /// one, `Referer`) is not this server: another site cannot act with a user's cookie.
    pub fn check_origin(&self, headers: &HeaderMap) -> Result<(), Error> {
        let refused = |why: &str| {
            Error::Forbidden(format!(
                "cross-site request refused: {why}; a signed-in request that changes something \
                 must come from this server's own pages"
            ))
        };
        let claimed = headers
            .get(header::ORIGIN)
            .or_else(|| headers.get(header::REFERER))
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| refused("no Origin header"))?;
        let origin = url::Url::parse(claimed).map_err(|_| refused("unreadable Origin header"))?;
        let same = match &self.public_url {
            Some(public) => {
                public.scheme() == origin.scheme()
                    && public.host_str() == origin.host_str()
                    && public.port_or_known_default() == origin.port_or_known_default()
            }
            None => {
                let host = headers
                    .get(header::HOST)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default();
                let authority = match (origin.host_str(), origin.port()) {
                    (Some(h), Some(p)) => format!("{h}:{p}"),
                    (Some(h), None) => h.to_string(),
                    (None, _) => String::new(),
                };
                !authority.is_empty() && authority.eq_ignore_ascii_case(host)
            }
        };
        if same {
            Ok(())
        } else {
            Err(refused("the Origin header names another site"))
        }
    }
}

/// Escapes text for HTML (element content and quoted attribute values).
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn html_is_escaped() {
        assert_eq!(
            escape_html(r#"<a href="x">Tom's & co</a>"#),
            "&lt;a href=&quot;x&quot;&gt;Tom&#39;s &amp; co&lt;/a&gt;"
        );
    }

    #[test]
    fn the_origin_must_be_this_host() {
        let web = WebConfig {
            public_url: None,
            session_max_age_secs: 60,
        };
        let ok = headers(&[
            (header::HOST, "127.0.0.1:8080"),
            (header::ORIGIN, "http://127.0.0.1:8080"),
        ]);
        assert!(web.check_origin(&ok).is_ok());
        let referer = headers(&[
            (header::HOST, "127.0.0.1:8080"),
            (header::REFERER, "http://127.0.0.1:8080/dashboard"),
        ]);
        assert!(web.check_origin(&referer).is_ok());
        for bad in [
            vec![(header::HOST, "127.0.0.1:8080")],
            vec![
                (header::HOST, "127.0.0.1:8080"),
                (header::ORIGIN, "http://evil.example"),
            ],
            vec![
                (header::HOST, "127.0.0.1:8080"),
                (header::ORIGIN, "http://127.0.0.1:9090"),
            ],
            vec![(header::HOST, "127.0.0.1:8080"), (header::ORIGIN, "null")],
        ] {
            assert!(web.check_origin(&headers(&bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_public_url_decides_the_origin_and_the_secure_flag() {
        let web = WebConfig {
            public_url: Some(url::Url::parse("https://memvault.example.com").unwrap()),
            session_max_age_secs: 60,
        };
        let ok = headers(&[
            (header::HOST, "10.0.0.5:8080"),
            (header::ORIGIN, "https://memvault.example.com"),
        ]);
        assert!(web.check_origin(&ok).is_ok());
        let http = headers(&[(header::ORIGIN, "http://memvault.example.com")]);
        assert!(web.check_origin(&http).is_err());
        let cookie = web.session_cookie("abc");
        let cookie = cookie.to_str().unwrap();
        assert!(cookie.starts_with("memvault.session_token=abc;"));
        for attribute in ["HttpOnly", "SameSite=Lax", "Secure", "Max-Age=60", "Path=/"] {
            assert!(cookie.contains(attribute), "{cookie}");
        }
        let plain = WebConfig {
            public_url: None,
            session_max_age_secs: 60,
        };
        assert!(!plain
            .session_cookie("abc")
            .to_str()
            .unwrap()
            .contains("Secure"));
    }
}
