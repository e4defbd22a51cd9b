//! What the OAuth authorization server needs from storage: clients, codes and tokens.
//! Implemented for SQLite and PostgreSQL by the same SQL in `oauth_sql.rs`.
//!
//! Rules that must hold under concurrency are single statements or transactions here: a code is
//! taken at most once; a refresh token is rotated at most once, and presenting a rotated one
//! again revokes its whole family.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::StoreResult;

/// A registered public client (RFC 7591).
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthClient {
    pub id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub created_at: DateTime<Utc>,
}

/// An authorization code's grant, as stored (the code itself only as a hash).
#[derive(Debug, Clone, PartialEq)]
pub struct CodeGrant {
    pub client_id: String,
    pub user_id: Uuid,
    pub workspace_id: Uuid,
    pub redirect_uri: String,
    pub code_challenge: String,
    /// Space-separated scopes.
    pub scopes: String,
    pub resource: Option<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// Access or refresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Access,
    Refresh,
}

impl TokenKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenKind::Access => "access",
            TokenKind::Refresh => "refresh",
        }
    }
}

/// An issued token, as stored (the token itself only as a hash).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenRecord {
    pub id: Uuid,
    pub family_id: Uuid,
    pub kind: TokenKind,
    pub client_id: String,
    pub user_id: Uuid,
    pub workspace_id: Uuid,
    pub scopes: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A token to insert, with the hash of its value.
#[derive(Debug, Clone)]
pub struct NewToken {
    pub hash: String,
    pub record: TokenRecord,
}

/// What presenting a refresh token came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Rotation {
    /// The old refresh token is revoked and the new pair issued; the old one, as it was.
    Rotated(TokenRecord),
    /// The token was already rotated or revoked: its whole family is revoked now (a stolen
    /// refresh token is used at most once).
    Reused,
    /// Unknown, expired, or not a refresh token of this client.
    Invalid,
}

#[async_trait]
pub trait OAuthStore: Send + Sync {
    async fn insert_oauth_client(&self, client: &OAuthClient) -> StoreResult<()>;
    async fn oauth_client(&self, id: &str) -> StoreResult<Option<OAuthClient>>;
    async fn insert_code(&self, code_hash: &str, grant: &CodeGrant) -> StoreResult<()>;
    /// Uses up a code: its grant when it was unused and unexpired at `now_micros`, else `None`
    /// (a second use finds nothing).
    async fn take_code(&self, code_hash: &str, now_micros: i64) -> StoreResult<Option<CodeGrant>>;
    /// Inserts tokens in one transaction.
    async fn insert_tokens(&self, tokens: &[NewToken]) -> StoreResult<()>;
    async fn token_by_hash(&self, token_hash: &str) -> StoreResult<Option<TokenRecord>>;
    /// Rotates a refresh token of `client_id`: revokes it and inserts `fresh` (which must share
    /// its family), in one transaction.
    async fn rotate_refresh(
        &self,
        token_hash: &str,
        client_id: &str,
        fresh: &[NewToken],
        now_micros: i64,
    ) -> StoreResult<Rotation>;
    /// Revokes a token and, for a refresh token, its whole family; `false` when unknown.
    async fn revoke_token(&self, token_hash: &str, now_micros: i64) -> StoreResult<bool>;
    /// Revokes every token of a family; how many were still live.
    async fn revoke_family(&self, family_id: Uuid, now_micros: i64) -> StoreResult<u64>;
    /// Marks a used code as presented again; `false` when no used code has this hash.
    async fn mark_code_replayed(&self, code_hash: &str, now_micros: i64) -> StoreResult<bool>;
    /// Whether a code was presented again after it was used.
    async fn code_replayed(&self, code_hash: &str) -> StoreResult<bool>;
}
