//! Standard Webhooks signatures (<https://www.standardwebhooks.com>): the provider signs
//! `{webhook-id}.{webhook-timestamp}.{body}` with HMAC-SHA256 under a shared secret
//! (`whsec_` + base64), and sends `v1,<base64 signature>` (several, space-separated, while a
//! secret rotates) in `webhook-signature`. Pure functions; the caller supplies the clock.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

const SECRET_PREFIX: &str = "whsec_";
const VERSION: &str = "v1";

/// Why a webhook was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the webhook secret is not `whsec_` followed by base64")]
    BadSecret,
    #[error("missing {0} header")]
    MissingHeader(&'static str),
    #[error("webhook-timestamp is not a Unix timestamp")]
    BadTimestamp,
    #[error("webhook-timestamp is too far from now (replayed or delayed)")]
    OutsideTolerance,
    #[error("no webhook-signature matches")]
    NoMatch,
}

/// A webhook signing secret.
#[derive(Clone)]
pub struct WebhookSecret(Vec<u8>);

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(***)")
    }
}

impl WebhookSecret {
    /// `whsec_<base64>` (the prefix may be left out).
    pub fn parse(raw: &str) -> Result<Self, SignatureError> {
        let encoded = raw.trim();
        let encoded = encoded.strip_prefix(SECRET_PREFIX).unwrap_or(encoded);
        let key = STANDARD
            .decode(encoded)
            .map_err(|_| SignatureError::BadSecret)?;
        if key.is_empty() {
            return Err(SignatureError::BadSecret);
        }
        Ok(WebhookSecret(key))
    }

    fn mac(&self, id: &str, timestamp: &str, body: &[u8]) -> HmacSha256 {
        // HMAC takes a key of any length.
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("hmac accepts any key length");
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }

    /// The `webhook-signature` value for a message (what a provider sends).
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let tag = self
            .mac(id, &timestamp.to_string(), body)
            .finalize()
            .into_bytes();
        format!("{VERSION},{}", STANDARD.encode(tag))
    }

    /// Checks a received webhook: the timestamp within `tolerance_secs` of `now_secs` (both
    /// ways), and one of the `v1` signatures equal to ours (compared in constant time).
    pub fn verify(
        &self,
        id: Option<&str>,
        timestamp: Option<&str>,
        signatures: Option<&str>,
        body: &[u8],
        now_secs: i64,
        tolerance_secs: i64,
    ) -> Result<(), SignatureError> {
        let id = id
            .filter(|v| !v.is_empty())
            .ok_or(SignatureError::MissingHeader("webhook-id"))?;
        let timestamp = timestamp
            .filter(|v| !v.is_empty())
            .ok_or(SignatureError::MissingHeader("webhook-timestamp"))?;
        let signatures = signatures
            .filter(|v| !v.is_empty())
            .ok_or(SignatureError::MissingHeader("webhook-signature"))?;
        let sent_at: i64 = timestamp
            .trim()
            .parse()
            .map_err(|_| SignatureError::BadTimestamp)?;
        if !within_tolerance(sent_at, now_secs, tolerance_secs) {
            return Err(SignatureError::OutsideTolerance);
        }
        let mac = self.mac(id, timestamp.trim(), body);
        let matched = signatures.split_whitespace().any(|candidate| {
            let Some((version, encoded)) = candidate.split_once(',') else {
                return false;
            };
            if version != VERSION {
                return false;
            }
            match STANDARD.decode(encoded) {
                Ok(tag) => mac.clone().verify_slice(&tag).is_ok(),
                Err(_) => false,
            }
        });
        if matched {
            Ok(())
        } else {
            Err(SignatureError::NoMatch)
        }
    }
}

/// Whether a message sent at `sent_at` may still be accepted at `now`.
pub fn within_tolerance(sent_at: i64, now: i64, tolerance_secs: i64) -> bool {
    now.abs_diff(sent_at) <= tolerance_secs.unsigned_abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The example of the Standard Webhooks specification's reference libraries.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TIMESTAMP: i64 = 1614265330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const EXPECTED: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn secret() -> WebhookSecret {
        WebhookSecret::parse(SECRET).unwrap()
    }

    #[test]
    fn signs_like_the_reference_implementation() {
        assert_eq!(secret().sign(ID, TIMESTAMP, BODY), EXPECTED);
    }

    #[test]
    fn a_correct_signature_within_tolerance_passes() {
        let verified = secret().verify(
            Some(ID),
            Some(&TIMESTAMP.to_string()),
            Some(&format!("v1,bm90IGl0 {EXPECTED}")),
            BODY,
            TIMESTAMP + 10,
            300,
        );
        assert_eq!(verified, Ok(()));
    }

    #[test]
    fn a_changed_body_id_or_timestamp_fails() {
        let s = secret();
        let ts = TIMESTAMP.to_string();
        let now = TIMESTAMP;
        assert_eq!(
            s.verify(Some(ID), Some(&ts), Some(EXPECTED), b"{}", now, 300),
            Err(SignatureError::NoMatch)
        );
        assert_eq!(
            s.verify(Some("msg_other"), Some(&ts), Some(EXPECTED), BODY, now, 300),
            Err(SignatureError::NoMatch)
        );
        let later = (TIMESTAMP + 1).to_string();
        assert_eq!(
            s.verify(Some(ID), Some(&later), Some(EXPECTED), BODY, now, 300),
            Err(SignatureError::NoMatch)
        );
        // Another version tag, or garbage, never matches.
        let v2 = EXPECTED.replacen("v1", "v2", 1);
        assert_eq!(
            s.verify(Some(ID), Some(&ts), Some(&v2), BODY, now, 300),
            Err(SignatureError::NoMatch)
        );
        assert_eq!(
            s.verify(Some(ID), Some(&ts), Some("v1,%%%"), BODY, now, 300),
            Err(SignatureError::NoMatch)
        );
    }

    #[test]
    fn old_and_future_timestamps_are_refused() {
        let s = secret();
        let ts = TIMESTAMP.to_string();
        for now in [TIMESTAMP + 301, TIMESTAMP - 301] {
            assert_eq!(
                s.verify(Some(ID), Some(&ts), Some(EXPECTED), BODY, now, 300),
                Err(SignatureError::OutsideTolerance)
            );
        }
        assert_eq!(
            s.verify(Some(ID), Some("soon"), Some(EXPECTED), BODY, TIMESTAMP, 300),
            Err(SignatureError::BadTimestamp)
        );
    }

    #[test]
    fn missing_headers_are_named() {
        let s = secret();
        let ts = TIMESTAMP.to_string();
        assert_eq!(
            s.verify(None, Some(&ts), Some(EXPECTED), BODY, TIMESTAMP, 300),
            Err(SignatureError::MissingHeader("webhook-id"))
        );
        assert_eq!(
            s.verify(Some(ID), None, Some(EXPECTED), BODY, TIMESTAMP, 300),
            Err(SignatureError::MissingHeader("webhook-timestamp"))
        );
        assert_eq!(
            s.verify(Some(ID), Some(&ts), Some(""), BODY, TIMESTAMP, 300),
            Err(SignatureError::MissingHeader("webhook-signature"))
        );
    }

    #[test]
    fn secrets_must_be_base64() {
        assert!(WebhookSecret::parse("whsec_not base64!").is_err());
        assert!(WebhookSecret::parse("whsec_").is_err());
        assert!(WebhookSecret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_ok());
    }

    #[test]
    fn tolerance_is_symmetric() {
        assert!(within_tolerance(100, 400, 300));
        assert!(within_tolerance(400, 100, 300));
        assert!(!within_tolerance(100, 401, 300));
        assert!(!within_tolerance(i64::MIN, i64::MAX, 300));
    }
}
