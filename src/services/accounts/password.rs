//! Passwords: argon2id hashing and checking, each on a blocking thread and, for requests, in
//! one of the bounded hashing slots of the open doors.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use rand::RngCore;

use super::AccountsService;
use crate::error::{Error, Result};

fn hasher(memory_kib: u32) -> Result<Argon2<'static>> {
    let params = Params::new(memory_kib.max(8 * 1024), 2, 1, None)
        .map_err(|e| Error::Internal(format!("argon2 parameters: {e}")))?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// `slot`, when given, is held until the hash is done (on its blocking thread).
async fn hash_password(
    password: String,
    memory_kib: u32,
    slot: Option<tokio::sync::OwnedSemaphorePermit>,
) -> Result<String> {
    tokio::task::spawn_blocking(move || {
        let _slot = slot;
        let mut salt = [0u8; 16];
        rand::rng().fill_bytes(&mut salt);
        let salt = SaltString::encode_b64(&salt)
            .map_err(|e| Error::Internal(format!("password salt: {e}")))?;
        hasher(memory_kib)?
            .hash_password(password.as_bytes(), &salt)
            .map(|hash| hash.to_string())
            .map_err(|e| Error::Internal(format!("password hashing: {e}")))
    })
    .await
    .map_err(|e| Error::Internal(format!("password hashing stopped: {e}")))?
}

/// Whether `password` matches the stored `hash` (its own parameters apply).
async fn verify_password(
    password: String,
    hash: String,
    slot: Option<tokio::sync::OwnedSemaphorePermit>,
) -> Result<bool> {
    tokio::task::spawn_blocking(move || {
        let _slot = slot;
        let parsed = PasswordHash::new(&hash)
            .map_err(|e| Error::Internal(format!("stored password hash unreadable: {e}")))?;
        Ok(Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok())
    })
    .await
    .map_err(|e| Error::Internal(format!("password check stopped: {e}")))?
}

impl AccountsService {
    /// A password hash, in one of the bounded hashing slots.
    pub(super) async fn hash_password(&self, password: String) -> Result<String> {
        let slot = self.doors.hashing_slot().await?;
        hash_password(password, self.config.password_memory_kib, Some(slot)).await
    }

    /// A password check, in one of the bounded hashing slots.
    pub(super) async fn verify_password(&self, password: String, hash: String) -> Result<bool> {
        let slot = self.doors.hashing_slot().await?;
        verify_password(password, hash, Some(slot)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn passwords_hash_with_argon2id_and_verify() {
        let hash = hash_password("correct horse".to_string(), 8 * 1024, None)
            .await
            .unwrap();
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        assert!(
            verify_password("correct horse".to_string(), hash.clone(), None)
                .await
                .unwrap()
        );
        assert!(!verify_password("wrong horse".to_string(), hash, None)
            .await
            .unwrap());
    }
}
