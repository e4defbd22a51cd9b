//! Sign-up, sign-in, sign-out and the session: opening a session (its token goes in the
//! cookie), checking a session's token, and the decoy hash that makes unknown emails as slow.

use std::net::IpAddr;

use uuid::Uuid;

use super::inputs::{Credentials, NewAccount};
use super::keys::hash_key;
use super::workspaces::WorkspaceRole;
use super::{generate_token, AccountsService};
use crate::error::{Error, Result, StorageError};
use crate::model::accounts::{SessionRecord, User};
use crate::model::{now, to_micros};
use crate::services::abuse::address_key;
use crate::services::{Identity, Principal};

/// The signed-in user, their session and their workspaces (with their role in each).
#[derive(Debug, Clone)]
pub struct CurrentSession {
    pub user: User,
    pub session: SessionRecord,
    pub workspaces: Vec<WorkspaceRole>,
}

/// A new session, and its token for the cookie.
pub struct SignedIn {
    pub session: CurrentSession,
    pub token: String,
}

impl AccountsService {
    /// Resolves a session cookie's token to who is calling.
    pub async fn authenticate_session(&self, token: &str) -> Result<Identity> {
        let expired =
            || Error::Unauthorized("your session has expired or ended: sign in again".to_string());
        if token.is_empty() || token.len() > 200 {
            return Err(expired());
        }
        let (session, user) = self
            .store
            .session_by_hash(&hash_key(token))
            .await?
            .ok_or_else(expired)?;
        if session.revoked_at.is_some() || session.expires_at <= now() {
            return Err(expired());
        }
        Ok(Identity::User {
            user_id: user.id,
            session_id: session.id,
        })
    }

    async fn open_session(&self, user: User) -> Result<SignedIn> {
        let token = generate_token();
        let created_at = now();
        let session = SessionRecord {
            id: Uuid::now_v7(),
            user_id: user.id,
            created_at,
            expires_at: created_at + self.config.session_ttl,
            revoked_at: None,
        };
        self.store
            .insert_session(&session, &hash_key(&token))
            .await?;
        let workspaces = self
            .store
            .memberships(user.id)
            .await?
            .into_iter()
            .map(WorkspaceRole::from)
            .collect();
        Ok(SignedIn {
            session: CurrentSession {
                user,
                session,
                workspaces,
            },
            token,
        })
    }

    /// `POST /api/auth/sign-up`: a user, their first workspace (they own it) and a session.
    /// Limited per client address and per email.
    pub async fn sign_up(&self, from: IpAddr, input: NewAccount) -> Result<SignedIn> {
        self.doors.sign_up_by_address.check(address_key(from))?;
        let email = input.email?.into_string();
        self.doors.sign_up_by_email.check(email.clone())?;
        let password = input.password?;
        let name = match input.name? {
            Some(name) => name.into_string(),
            None => email.split('@').next().unwrap_or("user").to_string(),
        };
        let image = input.image?.map(|image| image.into_string());
        let hash = self.hash_password(password.into_string()).await?;
        let user = User {
            id: Uuid::now_v7(),
            email,
            name,
            image,
            created_at: now(),
        };
        match self.store.insert_user(&user, &hash).await {
            Ok(()) => {}
            Err(StorageError::UniqueViolation) => {
                return Err(Error::Conflict(
                    "an account with this email already exists: sign in instead".to_string(),
                ))
            }
            Err(error) => return Err(error.into()),
        }
        let workspace_name = format!("{}'s workspace", user.name);
        self.insert_owned_workspace(&user, &workspace_name, None)
            .await?;
        tracing::info!(user_id = %user.id, "user signed up");
        self.open_session(user).await
    }

    /// `POST /api/auth/sign-in`. An unknown email and a wrong password get the same answer,
    /// in the same time. Limited per client address and per account (email).
    pub async fn sign_in(&self, from: IpAddr, input: Credentials) -> Result<SignedIn> {
        self.doors.sign_in_by_address.check(address_key(from))?;
        let email = input.email?.into_string();
        // Per account, only failures count: a guesser spread over many addresses is stopped,
        // and the owner's own sign-ins never fill the window.
        self.doors.sign_in_by_email.check(email.clone())?;
        let password = input.password?.into_string();
        let found = self.store.user_by_email(&email).await?;
        let hash = match &found {
            Some((_, hash)) => hash.clone(),
            None => self.decoy().await?,
        };
        let matches = self.verify_password(password, hash).await?;
        match found {
            Some((user, _)) if matches => {
                self.doors.sign_in_by_email.refund(&email);
                self.open_session(user).await
            }
            _ => Err(Error::Unauthorized("invalid email or password".to_string())),
        }
    }

    async fn decoy(&self) -> Result<String> {
        self.decoy_hash
            .get_or_try_init(|| self.hash_password(generate_token()))
            .await
            .cloned()
    }

    /// `POST /api/auth/sign-out`: ends the session.
    pub async fn sign_out(&self, who: &Principal) -> Result<()> {
        let (_, session_id) = Self::signed_in_user(who, "signing out")?;
        self.store
            .revoke_session(session_id, to_micros(now()))
            .await?;
        Ok(())
    }

    /// `GET /api/auth/session`.
    pub async fn session(&self, who: &Principal) -> Result<CurrentSession> {
        let (user_id, session_id) = Self::signed_in_user(who, "reading the session")?;
        let user = self
            .store
            .user(user_id)
            .await?
            .ok_or_else(|| Error::Unauthorized("your account no longer exists".to_string()))?;
        // The identity was read with the session a moment ago; read its times again.
        let workspaces = self
            .store
            .memberships(user_id)
            .await?
            .into_iter()
            .map(WorkspaceRole::from)
            .collect();
        let token_session = self.store.session(session_id).await?.ok_or_else(|| {
            Error::Unauthorized("your session has expired or ended: sign in again".to_string())
        })?;
        Ok(CurrentSession {
            user,
            session: token_session,
            workspaces,
        })
    }
}
