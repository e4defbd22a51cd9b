//! Settings that must never reach a log line: secrets (keys, tokens) and service URLs (which
//! may carry a password). Their `Debug` and `Serialize` mask them, so the logged configuration
//! is masked by type.

use std::fmt;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A key or token: shown as `***`; [`Secret::expose`] is the only way to its value.
#[derive(Clone)]
pub struct Secret(SecretString);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(SecretString::from(value.into()))
    }

    /// The value, for the one place that sends it (a header, a signature).
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl Eq for Secret {}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        self.expose() == other.expose()
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("***")
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Secret::new(text(deserializer)?))
    }
}

/// The URL of a service (a database, an embedding or chat server): shown with its password
/// replaced by `***`.
#[derive(Clone, PartialEq)]
pub struct ServiceUrl(String);

impl ServiceUrl {
    pub fn new(value: impl Into<String>) -> Self {
        ServiceUrl(value.into())
    }

    /// The URL as configured, password included, for the client that connects with it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The URL as it may be shown.
    pub fn masked(&self) -> String {
        mask_url_password(&self.0)
    }
}

impl fmt::Debug for ServiceUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.masked())
    }
}

impl Serialize for ServiceUrl {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.masked())
    }
}

impl<'de> Deserialize<'de> for ServiceUrl {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(ServiceUrl(text(deserializer)?))
    }
}

/// A string, or a number or boolean taken as written (an environment variable holding only
/// digits is read as a number before it reaches a setting).
fn text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    struct Text;
    impl serde::de::Visitor<'_> for Text {
        type Value = String;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_string<E: serde::de::Error>(self, v: String) -> Result<String, E> {
            Ok(v)
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<String, E> {
            Ok(v.to_string())
        }
    }
    deserializer.deserialize_any(Text)
}

/// `postgres://user:secret@host/db` -> `postgres://user:***@host/db`.
pub fn mask_url_password(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => raw.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_and_url_passwords_never_print() {
        let key = Secret::new("sk-live-1");
        assert_eq!(format!("{key:?}"), "***");
        assert_eq!(serde_json::to_string(&key).unwrap(), "\"***\"");
        assert_eq!(key.expose(), "sk-live-1");
        let url = ServiceUrl::new("postgres://u:pw@h:5432/db");
        assert_eq!(format!("{url:?}"), "postgres://u:***@h:5432/db");
        assert_eq!(
            serde_json::to_string(&url).unwrap(),
            "\"postgres://u:***@h:5432/db\""
        );
        assert_eq!(url.expose(), "postgres://u:pw@h:5432/db");
        let plain = ServiceUrl::new("sqlite://./data/m.db");
        assert_eq!(plain.masked(), "sqlite://./data/m.db");
    }

    #[test]
    fn a_numeric_secret_is_read_as_written() {
        let key: Secret = serde_json::from_str("123456").unwrap();
        assert_eq!(key.expose(), "123456");
    }
}
