//! The SQL of [`OAuthStore`], written once and instantiated for SQLite and PostgreSQL by
//! `oauth_sql!` (the conventions of `sql.rs`).

use async_trait::async_trait;
use sqlx::FromRow;
use uuid::Uuid;

use super::oauth::{
    CodeGrant, NewToken, OAuthClient, OAuthStore, Rotation, TokenKind, TokenRecord,
};
use super::sql::{PgStore, SqliteStore};
use super::StoreResult;
use crate::error::StorageError;
use crate::model::{from_micros, to_micros};

#[derive(FromRow)]
struct ClientRow {
    id: String,
    name: String,
    redirect_uris: String,
    created_at: i64,
}

impl TryFrom<ClientRow> for OAuthClient {
    type Error = StorageError;
    fn try_from(row: ClientRow) -> StoreResult<Self> {
        let redirect_uris = serde_json::from_str(&row.redirect_uris)
            .map_err(|e| StorageError::Corrupt(format!("oauth client redirect uris: {e}")))?;
        Ok(OAuthClient {
            id: row.id,
            name: row.name,
            redirect_uris,
            created_at: from_micros(row.created_at),
        })
    }
}

#[derive(FromRow)]
struct CodeRow {
    client_id: String,
    user_id: Uuid,
    workspace_id: Uuid,
    redirect_uri: String,
    code_challenge: String,
    scopes: String,
    resource: Option<String>,
    created_at: i64,
    expires_at: i64,
}

impl From<CodeRow> for CodeGrant {
    fn from(row: CodeRow) -> Self {
        CodeGrant {
            client_id: row.client_id,
            user_id: row.user_id,
            workspace_id: row.workspace_id,
            redirect_uri: row.redirect_uri,
            code_challenge: row.code_challenge,
            scopes: row.scopes,
            resource: row.resource,
            created_at: from_micros(row.created_at),
            expires_at: from_micros(row.expires_at),
        }
    }
}

#[derive(FromRow)]
struct TokenRow {
    id: Uuid,
    family_id: Uuid,
    kind: String,
    client_id: String,
    user_id: Uuid,
    workspace_id: Uuid,
    scopes: String,
    created_at: i64,
    expires_at: i64,
    revoked_at: Option<i64>,
}

impl TryFrom<TokenRow> for TokenRecord {
    type Error = StorageError;
    fn try_from(row: TokenRow) -> StoreResult<Self> {
        let kind = match row.kind.as_str() {
            "access" => TokenKind::Access,
            "refresh" => TokenKind::Refresh,
            other => return Err(StorageError::Corrupt(format!("bad token kind '{other}'"))),
        };
        Ok(TokenRecord {
            id: row.id,
            family_id: row.family_id,
            kind,
            client_id: row.client_id,
            user_id: row.user_id,
            workspace_id: row.workspace_id,
            scopes: row.scopes,
            created_at: from_micros(row.created_at),
            expires_at: from_micros(row.expires_at),
            revoked_at: row.revoked_at.map(from_micros),
        })
    }
}

const TOKEN_COLUMNS: &str = "id, family_id, kind, client_id, user_id, workspace_id, scopes, \
                             created_at, expires_at, revoked_at";

macro_rules! oauth_sql {
    ($store:ident, $db:ty) => {
        impl $store {
            async fn insert_token_rows(
                tx: &mut sqlx::Transaction<'_, $db>,
                tokens: &[NewToken],
            ) -> StoreResult<()> {
                for token in tokens {
                    let t = &token.record;
                    sqlx::query(
                        "INSERT INTO oauth_tokens (id, token_hash, family_id, kind, client_id, \
                         user_id, workspace_id, scopes, created_at, expires_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                    )
                    .bind(t.id)
                    .bind(&token.hash)
                    .bind(t.family_id)
                    .bind(t.kind.as_str())
                    .bind(&t.client_id)
                    .bind(t.user_id)
                    .bind(t.workspace_id)
                    .bind(&t.scopes)
                    .bind(to_micros(t.created_at))
                    .bind(to_micros(t.expires_at))
                    .execute(&mut **tx)
                    .await
                    .map_err(StorageError::from_db)?;
                }
                Ok(())
            }
        }

        #[async_trait]
        impl OAuthStore for $store {
            async fn insert_oauth_client(&self, client: &OAuthClient) -> StoreResult<()> {
                let uris = serde_json::to_string(&client.redirect_uris)
                    .map_err(|e| StorageError::Corrupt(e.to_string()))?;
                sqlx::query(
                    "INSERT INTO oauth_clients (id, name, redirect_uris, created_at) \
                     VALUES ($1, $2, $3, $4)",
                )
                .bind(&client.id)
                .bind(&client.name)
                .bind(uris)
                .bind(to_micros(client.created_at))
                .execute(&self.writer)
                .await
                .map_err(StorageError::from_db)?;
                Ok(())
            }

            async fn oauth_client(&self, id: &str) -> StoreResult<Option<OAuthClient>> {
                sqlx::query_as::<$db, ClientRow>(
                    "SELECT id, name, redirect_uris, created_at FROM oauth_clients WHERE id = $1",
                )
                .bind(id)
                .fetch_optional(&self.pool)
                .await?
                .map(OAuthClient::try_from)
                .transpose()
            }

            async fn insert_code(&self, code_hash: &str, g: &CodeGrant) -> StoreResult<()> {
                sqlx::query(
                    "INSERT INTO oauth_codes (code_hash, client_id, user_id, workspace_id, \
                     redirect_uri, code_challenge, scopes, resource, created_at, expires_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                )
                .bind(code_hash)
                .bind(&g.client_id)
                .bind(g.user_id)
                .bind(g.workspace_id)
                .bind(&g.redirect_uri)
                .bind(&g.code_challenge)
                .bind(&g.scopes)
                .bind(&g.resource)
                .bind(to_micros(g.created_at))
                .bind(to_micros(g.expires_at))
                .execute(&self.writer)
                .await
                .map_err(StorageError::from_db)?;
                Ok(())
            }

            async fn take_code(
                &self,
                code_hash: &str,
                now_micros: i64,
            ) -> StoreResult<Option<CodeGrant>> {
                let mut tx = self.writer.begin().await?;
                let taken = sqlx::query(
                    "UPDATE oauth_codes SET used_at = $1 WHERE code_hash = $2 \
                     AND used_at IS NULL AND expires_at > $1",
                )
                .bind(now_micros)
                .bind(code_hash)
                .execute(&mut *tx)
                .await?;
                if taken.rows_affected() != 1 {
                    return Ok(None);
                }
                let row = sqlx::query_as::<$db, CodeRow>(
                    "SELECT client_id, user_id, workspace_id, redirect_uri, code_challenge, \
                     scopes, resource, created_at, expires_at FROM oauth_codes WHERE code_hash = $1",
                )
                .bind(code_hash)
                .fetch_one(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(Some(row.into()))
            }

            async fn insert_tokens(&self, tokens: &[NewToken]) -> StoreResult<()> {
                let mut tx = self.writer.begin().await?;
                Self::insert_token_rows(&mut tx, tokens).await?;
                tx.commit().await?;
                Ok(())
            }

            async fn token_by_hash(&self, token_hash: &str) -> StoreResult<Option<TokenRecord>> {
                let sql = format!("SELECT {TOKEN_COLUMNS} FROM oauth_tokens WHERE token_hash = $1");
                sqlx::query_as::<$db, TokenRow>(sqlx::AssertSqlSafe(sql))
                    .bind(token_hash)
                    .fetch_optional(&self.pool)
                    .await?
                    .map(TokenRecord::try_from)
                    .transpose()
            }

            async fn rotate_refresh(
                &self,
                token_hash: &str,
                client_id: &str,
                fresh: &[NewToken],
                now_micros: i64,
            ) -> StoreResult<Rotation> {
                let mut tx = self.writer.begin().await?;
                let sql = format!(
                    "SELECT {TOKEN_COLUMNS} FROM oauth_tokens WHERE token_hash = $1 \
                     AND kind = 'refresh' AND client_id = $2"
                );
                let Some(row) = sqlx::query_as::<$db, TokenRow>(sqlx::AssertSqlSafe(sql))
                    .bind(token_hash)
                    .bind(client_id)
                    .fetch_optional(&mut *tx)
                    .await?
                else {
                    return Ok(Rotation::Invalid);
                };
                let old = TokenRecord::try_from(row)?;
                if old.revoked_at.is_some() {
                    // Presented again after rotation or revocation: end the family.
                    sqlx::query(
                        "UPDATE oauth_tokens SET revoked_at = $1 WHERE family_id = $2 \
                         AND revoked_at IS NULL",
                    )
                    .bind(now_micros)
                    .bind(old.family_id)
                    .execute(&mut *tx)
                    .await?;
                    tx.commit().await?;
                    return Ok(Rotation::Reused);
                }
                if to_micros(old.expires_at) <= now_micros {
                    return Ok(Rotation::Invalid);
                }
                let revoked = sqlx::query(
                    "UPDATE oauth_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL",
                )
                .bind(now_micros)
                .bind(old.id)
                .execute(&mut *tx)
                .await?;
                if revoked.rows_affected() != 1 {
                    return Ok(Rotation::Reused);
                }
                Self::insert_token_rows(&mut tx, fresh).await?;
                tx.commit().await?;
                Ok(Rotation::Rotated(old))
            }

            async fn revoke_token(&self, token_hash: &str, now_micros: i64) -> StoreResult<bool> {
                let mut tx = self.writer.begin().await?;
                let sql = format!("SELECT {TOKEN_COLUMNS} FROM oauth_tokens WHERE token_hash = $1");
                let Some(row) = sqlx::query_as::<$db, TokenRow>(sqlx::AssertSqlSafe(sql))
                    .bind(token_hash)
                    .fetch_optional(&mut *tx)
                    .await?
                else {
                    return Ok(false);
                };
                let token = TokenRecord::try_from(row)?;
                let query = match token.kind {
                    // A refresh token ends its family: the access tokens it issued too.
                    TokenKind::Refresh => "UPDATE oauth_tokens SET revoked_at = $1 \
                                           WHERE family_id = $2 AND revoked_at IS NULL",
                    TokenKind::Access => "UPDATE oauth_tokens SET revoked_at = $1 \
                                          WHERE id = $2 AND revoked_at IS NULL",
                };
                let target = match token.kind {
                    TokenKind::Refresh => token.family_id,
                    TokenKind::Access => token.id,
                };
                sqlx::query(query)
                    .bind(now_micros)
                    .bind(target)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(true)
            }

            async fn mark_code_replayed(&self, code_hash: &str, now_micros: i64) -> StoreResult<bool> {
                Ok(sqlx::query(
                    "UPDATE oauth_codes SET replayed_at = $1 WHERE code_hash = $2 \
                     AND used_at IS NOT NULL",
                )
                .bind(now_micros)
                .bind(code_hash)
                .execute(&self.writer)
                .await?
                .rows_affected()
                    > 0)
            }

            async fn code_replayed(&self, code_hash: &str) -> StoreResult<bool> {
                let replayed: Option<Option<i64>> = sqlx::query_scalar(
                    "SELECT replayed_at FROM oauth_codes WHERE code_hash = $1",
                )
                .bind(code_hash)
                .fetch_optional(&self.writer)
                .await?;
                Ok(replayed.flatten().is_some())
            }

            async fn revoke_family(&self, family_id: Uuid, now_micros: i64) -> StoreResult<u64> {
                Ok(sqlx::query(
                    "UPDATE oauth_tokens SET revoked_at = $1 WHERE family_id = $2 \
                     AND revoked_at IS NULL",
                )
                .bind(now_micros)
                .bind(family_id)
                .execute(&self.writer)
                .await?
                .rows_affected())
            }
        }
    };
}

oauth_sql!(SqliteStore, sqlx::Sqlite);
oauth_sql!(PgStore, sqlx::Postgres);
