//! Sign-up, sign-in, sign-out and the session: opening a session (its token goes in the
//! cookie), checking a session's token, and the decoy hash that makes unknown emails as slow.

use std::net::IpAddr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::keys::hash_key;
use super::workspaces::WorkspaceView;
use super::{email, generate_token, text, AccountsService, MAX_NAME_CHARS};
use crate::error::{Error, Result, StorageError};
use crate::model::accounts::{SessionRecord, User};
use crate::model::{now, to_micros};
use crate::services::abuse::address_key;
use crate::services::memories::Success;
use crate::services::{Identity, Principal};

const MIN_PASSWORD_CHARS: usize = 8;
const MAX_PASSWORD_CHARS: usize = 128;
const MAX_IMAGE_CHARS: usize = 2_000;

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignUp {
    /// An email address (at most 254 characters); case does not matter.
    #[schema(value_type = String, required = true, max_length = 254, pattern = r"^\s*[^@\s]+@[^@\s.][^@\s]*\.[^@\s]*[^@\s.]\s*$")]
    pub email: Option<String>,
    /// 8 to 128 characters.
    #[schema(value_type = String, required = true, min_length = 8, max_length = 128)]
    pub password: Option<String>,
    /// Shown to teammates (1 to 100 characters, no control characters); defaults to the part
    /// of the email before `@`.
    #[schema(
        max_length = 100,
        pattern = r"^\s*[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?\s*$"
    )]
    pub name: Option<String>,
    /// A picture's URL (at most 2,000 characters, no control characters).
    #[schema(
        max_length = 2000,
        pattern = r"^\s*[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?\s*$"
    )]
    pub image: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignIn {
    #[schema(value_type = String, required = true, max_length = 254, pattern = r"^\s*[^@\s]+@[^@\s.][^@\s]*\.[^@\s]*[^@\s.]\s*$")]
    pub email: Option<String>,
    #[schema(value_type = String, required = true, min_length = 1, max_length = 128)]
    pub password: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    pub id: Uuid,
    pub email: String,
    pub name: String,
    pub image: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl From<User> for UserView {
    fn from(user: User) -> Self {
        UserView {
            id: user.id,
            email: user.email,
            name: user.name,
            image: user.image,
            created_at: user.created_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// `GET /api/auth/session`, and what sign-up and sign-in answer.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    pub user: UserView,
    pub session: SessionInfo,
    /// The user's workspaces, with their role (sign-up makes one).
    pub workspaces: Vec<WorkspaceView>,
}

/// A new session: what the client sees, and the token for the cookie.
pub struct SignedIn {
    pub view: SessionView,
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
            .map(WorkspaceView::from)
            .collect();
        Ok(SignedIn {
            view: SessionView {
                user: user.into(),
                session: SessionInfo {
                    id: session.id,
                    created_at: session.created_at,
                    expires_at: session.expires_at,
                },
                workspaces,
            },
            token,
        })
    }

    /// `POST /api/auth/sign-up`: a user, their first workspace (they own it) and a session.
    /// Limited per client address and per email.
    pub async fn sign_up(&self, from: IpAddr, input: SignUp) -> Result<SignedIn> {
        self.doors.sign_up_by_address.check(address_key(from))?;
        let email = email(input.email.as_deref())?;
        self.doors.sign_up_by_email.check(email.clone())?;
        let password = input.password.unwrap_or_default();
        let length = password.chars().count();
        if !(MIN_PASSWORD_CHARS..=MAX_PASSWORD_CHARS).contains(&length) {
            return Err(Error::validation(
                "password",
                format!("must be {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters"),
            ));
        }
        let name = match text("name", input.name.as_deref(), MAX_NAME_CHARS)? {
            Some(name) => name,
            None => email.split('@').next().unwrap_or("user").to_string(),
        };
        let image = text("image", input.image.as_deref(), MAX_IMAGE_CHARS)?;
        let hash = self.hash_password(password).await?;
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
    pub async fn sign_in(&self, from: IpAddr, input: SignIn) -> Result<SignedIn> {
        self.doors.sign_in_by_address.check(address_key(from))?;
        let email = email(input.email.as_deref())?;
        // Per account, only failures count: a guesser spread over many addresses is stopped,
        // and the owner's own sign-ins never fill the window.
        self.doors.sign_in_by_email.check(email.clone())?;
        let password = input
            .password
            .filter(|p| !p.is_empty())
            .ok_or_else(|| Error::validation("password", "is required"))?;
        if password.chars().count() > MAX_PASSWORD_CHARS {
            return Err(Error::validation(
                "password",
                format!("must be at most {MAX_PASSWORD_CHARS} characters"),
            ));
        }
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
    pub async fn sign_out(&self, who: &Principal) -> Result<Success> {
        let (_, session_id) = Self::signed_in_user(who, "signing out")?;
        self.store
            .revoke_session(session_id, to_micros(now()))
            .await?;
        Ok(Success { success: true })
    }

    /// `GET /api/auth/session`.
    pub async fn session(&self, who: &Principal) -> Result<SessionView> {
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
            .map(WorkspaceView::from)
            .collect();
        let token_session = self.store.session(session_id).await?.ok_or_else(|| {
            Error::Unauthorized("your session has expired or ended: sign in again".to_string())
        })?;
        Ok(SessionView {
            user: user.into(),
            session: SessionInfo {
                id: token_session.id,
                created_at: token_session.created_at,
                expires_at: token_session.expires_at,
            },
            workspaces,
        })
    }
}
