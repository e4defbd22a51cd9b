//! Node-to-node calls: a forwarded request carries `X-Memvault-Forwarded:
//! <node>.<unix seconds>.<hex HMAC-SHA256>` over the sending node, the time, the method and the
//! path with its query, keyed by `MEMVAULT_CLUSTER_SECRET`. The receiver checks the MAC (in
//! constant time) and that the time is within a minute of its own; a request that fails is
//! refused, so no client can pass itself off as a node (and be served without forwarding).
//!
//! The body is not covered, on purpose: the signature proves the hop, not the content. What a
//! forwarded request may do is decided on the owner by the client's own credentials, carried
//! and checked as on one node, so a replayed header with another body gains nothing a client
//! could not ask for directly; covering the body would mean buffering every upload.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use uuid::Uuid;

type HmacSha256 = Hmac<Sha256>;

/// The header a forwarded request carries.
pub const FORWARDED_HEADER: &str = "x-memvault-forwarded";

/// How far a forwarded request's time may be from the receiver's.
const TOLERANCE_SECS: i64 = 60;

#[derive(Clone)]
pub struct NodeAuth {
    secret: Vec<u8>,
}

impl NodeAuth {
    pub fn new(secret: &str) -> Self {
        NodeAuth {
            secret: secret.as_bytes().to_vec(),
        }
    }

    fn mac(&self, node: Uuid, at: i64, method: &str, target: &str) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.secret).expect("hmac takes any key");
        mac.update(format!("{node}.{at}.{method}.{target}").as_bytes());
        mac
    }

    /// The header value for a request from `node` (`target`: path and query).
    pub fn sign(&self, node: Uuid, at: i64, method: &str, target: &str) -> String {
        let tag = self.mac(node, at, method, target).finalize().into_bytes();
        format!("{node}.{at}.{}", hex::encode(tag))
    }

    /// The sending node, when `value` is a valid signature of this request made within the
    /// tolerance of `now`.
    pub fn verify(&self, value: &str, now: i64, method: &str, target: &str) -> Option<Uuid> {
        let mut parts = value.splitn(3, '.');
        let node = Uuid::parse_str(parts.next()?).ok()?;
        let at: i64 = parts.next()?.parse().ok()?;
        let tag = hex::decode(parts.next()?).ok()?;
        if (now - at).abs() > TOLERANCE_SECS {
            return None;
        }
        self.mac(node, at, method, target)
            .verify_slice(&tag)
            .ok()
            .map(|()| node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_holds_for_its_request_only() {
        let auth = NodeAuth::new("s3cret");
        let node = Uuid::new_v4();
        let value = auth.sign(node, 1_000, "POST", "/api/memories?scope=a");
        assert_eq!(
            auth.verify(&value, 1_030, "POST", "/api/memories?scope=a"),
            Some(node)
        );
        for (now, method, target) in [
            (1_000, "GET", "/api/memories?scope=a"),
            (1_000, "POST", "/api/memories?scope=b"),
            (1_061, "POST", "/api/memories?scope=a"),
            (939, "POST", "/api/memories?scope=a"),
        ] {
            assert_eq!(
                auth.verify(&value, now, method, target),
                None,
                "{method} {target} at {now}"
            );
        }
        let other = NodeAuth::new("other");
        assert_eq!(
            other.verify(&value, 1_000, "POST", "/api/memories?scope=a"),
            None
        );
        for garbage in ["", "x", "a.b.c", &format!("{node}.1000.zz")] {
            assert_eq!(auth.verify(garbage, 1_000, "POST", "/"), None);
        }
    }
}
