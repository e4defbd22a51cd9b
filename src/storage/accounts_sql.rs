//! The SQL of [`AccountStore`], written once and instantiated for SQLite and PostgreSQL by
//! `accounts_sql!` (the conventions of `sql.rs`: `$N` placeholders, UUIDs bound directly,
//! integer microsecond timestamps).

use async_trait::async_trait;
use sqlx::FromRow;
use uuid::Uuid;

use super::accounts::{
    Acceptance, AccountStore, KeyLookup, MemberChange, SubscriptionUpdate, WebhookOutcome,
};
use super::sql::{PgStore, SqliteStore};
use super::StoreResult;
use crate::error::StorageError;
use crate::model::accounts::{
    CheckoutRecord, InvitationRecord, MemberRecord, Membership, Role, SessionRecord,
    SubscriptionRecord, SubscriptionStatus, User,
};
use crate::model::{from_micros, to_micros, ApiKey, Plan, Workspace};

fn role(value: &str) -> StoreResult<Role> {
    value
        .parse()
        .map_err(|()| StorageError::Corrupt(format!("bad role '{value}'")))
}

fn plan(value: &str) -> StoreResult<Plan> {
    value
        .parse()
        .map_err(|_| StorageError::Corrupt(format!("bad plan '{value}'")))
}

#[derive(FromRow)]
struct UserRow {
    id: Uuid,
    email: String,
    name: String,
    image: Option<String>,
    created_at: i64,
}

impl From<UserRow> for User {
    fn from(row: UserRow) -> Self {
        User {
            id: row.id,
            email: row.email,
            name: row.name,
            image: row.image,
            created_at: from_micros(row.created_at),
        }
    }
}

#[derive(FromRow)]
struct SessionRow {
    session_id: Uuid,
    session_created_at: i64,
    expires_at: i64,
    revoked_at: Option<i64>,
    #[sqlx(flatten)]
    user: UserRow,
}

#[derive(FromRow)]
struct MemberRow {
    id: Uuid,
    workspace_id: Uuid,
    user_id: Uuid,
    role: String,
    created_at: i64,
    email: String,
    name: String,
    image: Option<String>,
}

impl TryFrom<MemberRow> for MemberRecord {
    type Error = StorageError;
    fn try_from(row: MemberRow) -> StoreResult<Self> {
        Ok(MemberRecord {
            id: row.id,
            workspace_id: row.workspace_id,
            user_id: row.user_id,
            role: role(&row.role)?,
            created_at: from_micros(row.created_at),
            email: row.email,
            name: row.name,
            image: row.image,
        })
    }
}

const MEMBER_SELECT: &str = "SELECT m.id, m.workspace_id, m.user_id, m.role, m.created_at, \
                             u.email, u.name, u.image FROM workspace_members m \
                             JOIN users u ON u.id = m.user_id";

#[derive(FromRow)]
struct MembershipRow {
    workspace_id: Uuid,
    name: String,
    slug: String,
    plan: Option<String>,
    created_at: i64,
    role: String,
    member_id: Uuid,
}

impl TryFrom<MembershipRow> for Membership {
    type Error = StorageError;
    fn try_from(row: MembershipRow) -> StoreResult<Self> {
        Ok(Membership {
            workspace_id: row.workspace_id,
            name: row.name,
            slug: row.slug,
            plan: row.plan.as_deref().map(plan).transpose()?,
            created_at: from_micros(row.created_at),
            role: role(&row.role)?,
            member_id: row.member_id,
        })
    }
}

#[derive(FromRow)]
struct InvitationRow {
    id: Uuid,
    workspace_id: Uuid,
    email: String,
    role: String,
    invited_by: Option<Uuid>,
    created_at: i64,
    expires_at: i64,
    accepted_at: Option<i64>,
    revoked_at: Option<i64>,
}

impl TryFrom<InvitationRow> for InvitationRecord {
    type Error = StorageError;
    fn try_from(row: InvitationRow) -> StoreResult<Self> {
        Ok(InvitationRecord {
            id: row.id,
            workspace_id: row.workspace_id,
            email: row.email,
            role: role(&row.role)?,
            invited_by: row.invited_by,
            created_at: from_micros(row.created_at),
            expires_at: from_micros(row.expires_at),
            accepted_at: row.accepted_at.map(from_micros),
            revoked_at: row.revoked_at.map(from_micros),
        })
    }
}

const INVITATION_COLUMNS: &str = "id, workspace_id, email, role, invited_by, created_at, \
                                  expires_at, accepted_at, revoked_at";

#[derive(FromRow)]
struct KeyRow {
    id: Uuid,
    workspace_id: Uuid,
    name: String,
    prefix: String,
    role: String,
    created_by: Option<Uuid>,
    created_at: i64,
    last_used_at: Option<i64>,
    revoked_at: Option<i64>,
}

impl TryFrom<KeyRow> for ApiKey {
    type Error = StorageError;
    fn try_from(row: KeyRow) -> StoreResult<Self> {
        Ok(ApiKey {
            id: row.id,
            workspace_id: row.workspace_id,
            name: row.name,
            prefix: row.prefix,
            role: role(&row.role)?,
            created_by: row.created_by,
            created_at: from_micros(row.created_at),
            last_used_at: row.last_used_at.map(from_micros),
            revoked_at: row.revoked_at.map(from_micros),
        })
    }
}

#[derive(FromRow)]
struct KeyLookupRow {
    #[sqlx(flatten)]
    key: KeyRow,
    maker_role: Option<String>,
}

const KEY_COLUMNS: &str =
    "k.id, k.workspace_id, k.name, k.prefix, k.role, k.created_by, k.created_at, \
     k.last_used_at, k.revoked_at";

#[derive(FromRow)]
struct SubscriptionRow {
    workspace_id: Uuid,
    id: Uuid,
    user_id: Option<Uuid>,
    status: String,
    provider: String,
    provider_customer_id: Option<String>,
    provider_subscription_id: Option<String>,
    renews_at: Option<i64>,
    cancelled_at: Option<i64>,
    created_at: i64,
    updated_at: i64,
}

impl TryFrom<SubscriptionRow> for SubscriptionRecord {
    type Error = StorageError;
    fn try_from(row: SubscriptionRow) -> StoreResult<Self> {
        Ok(SubscriptionRecord {
            workspace_id: row.workspace_id,
            id: row.id,
            user_id: row.user_id,
            status: row.status.parse::<SubscriptionStatus>().map_err(|()| {
                StorageError::Corrupt(format!("bad subscription status '{}'", row.status))
            })?,
            provider: row.provider,
            provider_customer_id: row.provider_customer_id,
            provider_subscription_id: row.provider_subscription_id,
            renews_at: row.renews_at.map(from_micros),
            cancelled_at: row.cancelled_at.map(from_micros),
            created_at: from_micros(row.created_at),
            updated_at: from_micros(row.updated_at),
        })
    }
}

const SUBSCRIPTION_COLUMNS: &str = "workspace_id, id, user_id, status, provider, \
    provider_customer_id, provider_subscription_id, renews_at, cancelled_at, created_at, \
    updated_at";

#[derive(FromRow)]
struct CheckoutRow {
    id: Uuid,
    workspace_id: Uuid,
    user_id: Uuid,
    plan: String,
    created_at: i64,
    expires_at: i64,
    completed_at: Option<i64>,
}

impl TryFrom<CheckoutRow> for CheckoutRecord {
    type Error = StorageError;
    fn try_from(row: CheckoutRow) -> StoreResult<Self> {
        Ok(CheckoutRecord {
            id: row.id,
            workspace_id: row.workspace_id,
            user_id: row.user_id,
            plan: plan(&row.plan)?,
            created_at: from_micros(row.created_at),
            expires_at: from_micros(row.expires_at),
            completed_at: row.completed_at.map(from_micros),
        })
    }
}

macro_rules! accounts_sql {
    ($store:ident, $db:ty) => {
        impl $store {
            /// Locks the workspace row for the rest of the transaction (member changes of one
            /// workspace serialise on it), and counts its owners.
            async fn lock_and_count_owners(
                tx: &mut sqlx::Transaction<'_, $db>,
                workspace_id: Uuid,
            ) -> StoreResult<i64> {
                sqlx::query("UPDATE workspaces SET name = name WHERE id = $1")
                    .bind(workspace_id)
                    .execute(&mut **tx)
                    .await?;
                Ok(sqlx::query_scalar::<$db, i64>(
                    "SELECT COUNT(*) FROM workspace_members WHERE workspace_id = $1 AND role = 'owner'",
                )
                .bind(workspace_id)
                .fetch_one(&mut **tx)
                .await?)
            }

            async fn member_in<'e, E>(
                executor: E,
                workspace_id: Uuid,
                member_id: Uuid,
            ) -> StoreResult<Option<MemberRecord>>
            where
                E: sqlx::Executor<'e, Database = $db>,
            {
                let sql = format!("{MEMBER_SELECT} WHERE m.workspace_id = $1 AND m.id = $2");
                sqlx::query_as::<$db, MemberRow>(sqlx::AssertSqlSafe(sql))
                    .bind(workspace_id)
                    .bind(member_id)
                    .fetch_optional(executor)
                    .await?
                    .map(MemberRecord::try_from)
                    .transpose()
            }

            async fn write_subscription(
                tx: &mut sqlx::Transaction<'_, $db>,
                s: &SubscriptionRecord,
                plan: Option<Plan>,
            ) -> StoreResult<()> {
                let sql = format!(
                    "INSERT INTO subscriptions ({SUBSCRIPTION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, \
                     $6, $7, $8, $9, $10, $11) ON CONFLICT (workspace_id) DO UPDATE SET \
                     user_id = excluded.user_id, status = excluded.status, \
                     provider = excluded.provider, \
                     provider_customer_id = excluded.provider_customer_id, \
                     provider_subscription_id = excluded.provider_subscription_id, \
                     renews_at = excluded.renews_at, cancelled_at = excluded.cancelled_at, \
                     updated_at = excluded.updated_at"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(s.workspace_id)
                    .bind(s.id)
                    .bind(s.user_id)
                    .bind(s.status.as_str())
                    .bind(&s.provider)
                    .bind(&s.provider_customer_id)
                    .bind(&s.provider_subscription_id)
                    .bind(s.renews_at.map(to_micros))
                    .bind(s.cancelled_at.map(to_micros))
                    .bind(to_micros(s.created_at))
                    .bind(to_micros(s.updated_at))
                    .execute(&mut **tx)
                    .await
                    .map_err(StorageError::from_db)?;
                if let Some(plan) = plan {
                    sqlx::query("UPDATE workspaces SET plan = $1 WHERE id = $2")
                        .bind(plan.as_str())
                        .bind(s.workspace_id)
                        .execute(&mut **tx)
                        .await?;
                }
                Ok(())
            }
        }

        #[async_trait]
        impl AccountStore for $store {
            async fn insert_user(&self, user: &User, password_hash: &str) -> StoreResult<()> {
                sqlx::query(
                    "INSERT INTO users (id, email, name, image, password_hash, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(user.id)
                .bind(&user.email)
                .bind(&user.name)
                .bind(&user.image)
                .bind(password_hash)
                .bind(to_micros(user.created_at))
                .execute(&self.writer)
                .await
                .map_err(StorageError::from_db)?;
                Ok(())
            }

            async fn user_by_email(&self, email: &str) -> StoreResult<Option<(User, String)>> {
                #[derive(FromRow)]
                struct Row {
                    #[sqlx(flatten)]
                    user: UserRow,
                    password_hash: String,
                }
                Ok(sqlx::query_as::<$db, Row>(
                    "SELECT id, email, name, image, created_at, password_hash FROM users WHERE email = $1",
                )
                .bind(email)
                .fetch_optional(&self.pool)
                .await?
                .map(|row| (User::from(row.user), row.password_hash)))
            }

            async fn user(&self, id: Uuid) -> StoreResult<Option<User>> {
                Ok(sqlx::query_as::<$db, UserRow>(
                    "SELECT id, email, name, image, created_at FROM users WHERE id = $1",
                )
                .bind(id)
                .fetch_optional(&self.pool)
                .await?
                .map(User::from))
            }

            async fn insert_session(&self, s: &SessionRecord, token_hash: &str) -> StoreResult<()> {
                sqlx::query(
                    "INSERT INTO sessions (id, user_id, token_hash, created_at, expires_at) \
                     VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(s.id)
                .bind(s.user_id)
                .bind(token_hash)
                .bind(to_micros(s.created_at))
                .bind(to_micros(s.expires_at))
                .execute(&self.writer)
                .await
                .map_err(StorageError::from_db)?;
                Ok(())
            }

            async fn session_by_hash(
                &self,
                token_hash: &str,
            ) -> StoreResult<Option<(SessionRecord, User)>> {
                Ok(sqlx::query_as::<$db, SessionRow>(
                    "SELECT s.id AS session_id, s.created_at AS session_created_at, s.expires_at, \
                     s.revoked_at, u.id, u.email, u.name, u.image, u.created_at \
                     FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1",
                )
                .bind(token_hash)
                .fetch_optional(&self.pool)
                .await?
                .map(|row| {
                    let user = User::from(row.user);
                    (
                        SessionRecord {
                            id: row.session_id,
                            user_id: user.id,
                            created_at: from_micros(row.session_created_at),
                            expires_at: from_micros(row.expires_at),
                            revoked_at: row.revoked_at.map(from_micros),
                        },
                        user,
                    )
                }))
            }

            async fn session(&self, id: Uuid) -> StoreResult<Option<SessionRecord>> {
                #[derive(FromRow)]
                struct Row {
                    id: Uuid,
                    user_id: Uuid,
                    created_at: i64,
                    expires_at: i64,
                    revoked_at: Option<i64>,
                }
                Ok(sqlx::query_as::<$db, Row>(
                    "SELECT id, user_id, created_at, expires_at, revoked_at FROM sessions WHERE id = $1",
                )
                .bind(id)
                .fetch_optional(&self.pool)
                .await?
                .map(|row| SessionRecord {
                    id: row.id,
                    user_id: row.user_id,
                    created_at: from_micros(row.created_at),
                    expires_at: from_micros(row.expires_at),
                    revoked_at: row.revoked_at.map(from_micros),
                }))
            }

            async fn revoke_session(&self, id: Uuid, at_micros: i64) -> StoreResult<()> {
                sqlx::query("UPDATE sessions SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
                    .bind(at_micros)
                    .bind(id)
                    .execute(&self.writer)
                    .await?;
                Ok(())
            }

            async fn insert_workspace_with_owner(
                &self,
                w: &Workspace,
                owner: &MemberRecord,
            ) -> StoreResult<()> {
                let mut tx = self.writer.begin().await?;
                sqlx::query("INSERT INTO workspaces (id, name, slug, plan, created_at) VALUES ($1, $2, $3, $4, $5)")
                    .bind(w.id)
                    .bind(&w.name)
                    .bind(&w.slug)
                    .bind(w.plan.map(Plan::as_str))
                    .bind(to_micros(w.created_at))
                    .execute(&mut *tx)
                    .await
                    .map_err(StorageError::from_db)?;
                sqlx::query(
                    "INSERT INTO workspace_members (id, workspace_id, user_id, role, created_at) \
                     VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(owner.id)
                .bind(w.id)
                .bind(owner.user_id)
                .bind(owner.role.as_str())
                .bind(to_micros(owner.created_at))
                .execute(&mut *tx)
                .await
                .map_err(StorageError::from_db)?;
                tx.commit().await?;
                Ok(())
            }

            async fn memberships(&self, user_id: Uuid) -> StoreResult<Vec<Membership>> {
                sqlx::query_as::<$db, MembershipRow>(
                    "SELECT w.id AS workspace_id, w.name, w.slug, w.plan, w.created_at, m.role, \
                     m.id AS member_id FROM workspace_members m JOIN workspaces w ON w.id = m.workspace_id \
                     WHERE m.user_id = $1 ORDER BY m.created_at, m.id",
                )
                .bind(user_id)
                .fetch_all(&self.pool)
                .await?
                .into_iter()
                .map(Membership::try_from)
                .collect()
            }

            async fn member_of(
                &self,
                workspace_id: Uuid,
                user_id: Uuid,
            ) -> StoreResult<Option<MemberRecord>> {
                let sql = format!("{MEMBER_SELECT} WHERE m.workspace_id = $1 AND m.user_id = $2");
                sqlx::query_as::<$db, MemberRow>(sqlx::AssertSqlSafe(sql))
                    .bind(workspace_id)
                    .bind(user_id)
                    .fetch_optional(&self.pool)
                    .await?
                    .map(MemberRecord::try_from)
                    .transpose()
            }

            async fn member(
                &self,
                workspace_id: Uuid,
                member_id: Uuid,
            ) -> StoreResult<Option<MemberRecord>> {
                Self::member_in(&self.pool, workspace_id, member_id).await
            }

            async fn members(&self, workspace_id: Uuid) -> StoreResult<Vec<MemberRecord>> {
                let sql = format!("{MEMBER_SELECT} WHERE m.workspace_id = $1 ORDER BY m.created_at, m.id");
                sqlx::query_as::<$db, MemberRow>(sqlx::AssertSqlSafe(sql))
                    .bind(workspace_id)
                    .fetch_all(&self.pool)
                    .await?
                    .into_iter()
                    .map(MemberRecord::try_from)
                    .collect()
            }

            async fn set_member_role(
                &self,
                workspace_id: Uuid,
                member_id: Uuid,
                new_role: Role,
            ) -> StoreResult<MemberChange> {
                let mut tx = self.writer.begin().await?;
                let owners = Self::lock_and_count_owners(&mut tx, workspace_id).await?;
                let Some(mut member) = Self::member_in(&mut *tx, workspace_id, member_id).await? else {
                    return Ok(MemberChange::NotFound);
                };
                if member.role == Role::Owner && new_role != Role::Owner && owners <= 1 {
                    return Ok(MemberChange::LastOwner);
                }
                sqlx::query("UPDATE workspace_members SET role = $1 WHERE id = $2")
                    .bind(new_role.as_str())
                    .bind(member_id)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                member.role = new_role;
                Ok(MemberChange::Done(member))
            }

            async fn remove_member(
                &self,
                workspace_id: Uuid,
                member_id: Uuid,
                at_micros: i64,
            ) -> StoreResult<MemberChange> {
                let mut tx = self.writer.begin().await?;
                let owners = Self::lock_and_count_owners(&mut tx, workspace_id).await?;
                let Some(member) = Self::member_in(&mut *tx, workspace_id, member_id).await? else {
                    return Ok(MemberChange::NotFound);
                };
                if member.role == Role::Owner && owners <= 1 {
                    return Ok(MemberChange::LastOwner);
                }
                sqlx::query("DELETE FROM workspace_members WHERE id = $1")
                    .bind(member_id)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query(
                    "UPDATE api_keys SET revoked_at = $1 WHERE workspace_id = $2 AND created_by = $3 \
                     AND revoked_at IS NULL",
                )
                .bind(at_micros)
                .bind(workspace_id)
                .bind(member.user_id)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(MemberChange::Done(member))
            }

            async fn insert_invitation(
                &self,
                inv: &InvitationRecord,
                token_hash: &str,
            ) -> StoreResult<()> {
                let mut tx = self.writer.begin().await?;
                sqlx::query(
                    "UPDATE invitations SET revoked_at = $1 WHERE workspace_id = $2 AND email = $3 \
                     AND accepted_at IS NULL AND revoked_at IS NULL",
                )
                .bind(to_micros(inv.created_at))
                .bind(inv.workspace_id)
                .bind(&inv.email)
                .execute(&mut *tx)
                .await?;
                let sql = format!(
                    "INSERT INTO invitations ({INVITATION_COLUMNS}, token_hash) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(inv.id)
                    .bind(inv.workspace_id)
                    .bind(&inv.email)
                    .bind(inv.role.as_str())
                    .bind(inv.invited_by)
                    .bind(to_micros(inv.created_at))
                    .bind(to_micros(inv.expires_at))
                    .bind(inv.accepted_at.map(to_micros))
                    .bind(inv.revoked_at.map(to_micros))
                    .bind(token_hash)
                    .execute(&mut *tx)
                    .await
                    .map_err(StorageError::from_db)?;
                tx.commit().await?;
                Ok(())
            }

            async fn pending_invitations(
                &self,
                workspace_id: Uuid,
                now_micros: i64,
            ) -> StoreResult<Vec<InvitationRecord>> {
                let sql = format!(
                    "SELECT {INVITATION_COLUMNS} FROM invitations WHERE workspace_id = $1 \
                     AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > $2 \
                     ORDER BY created_at, id"
                );
                sqlx::query_as::<$db, InvitationRow>(sqlx::AssertSqlSafe(sql))
                    .bind(workspace_id)
                    .bind(now_micros)
                    .fetch_all(&self.pool)
                    .await?
                    .into_iter()
                    .map(InvitationRecord::try_from)
                    .collect()
            }

            async fn invitation_by_hash(
                &self,
                token_hash: &str,
            ) -> StoreResult<Option<InvitationRecord>> {
                let sql =
                    format!("SELECT {INVITATION_COLUMNS} FROM invitations WHERE token_hash = $1");
                sqlx::query_as::<$db, InvitationRow>(sqlx::AssertSqlSafe(sql))
                    .bind(token_hash)
                    .fetch_optional(&self.pool)
                    .await?
                    .map(InvitationRecord::try_from)
                    .transpose()
            }

            async fn revoke_invitation(
                &self,
                workspace_id: Uuid,
                id: Uuid,
                at_micros: i64,
            ) -> StoreResult<bool> {
                let done = sqlx::query(
                    "UPDATE invitations SET revoked_at = $1 WHERE workspace_id = $2 AND id = $3 \
                     AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > $1",
                )
                .bind(at_micros)
                .bind(workspace_id)
                .bind(id)
                .execute(&self.writer)
                .await?;
                Ok(done.rows_affected() == 1)
            }

            async fn accept_invitation(
                &self,
                invitation_id: Uuid,
                member: &MemberRecord,
                now_micros: i64,
            ) -> StoreResult<Acceptance> {
                let mut tx = self.writer.begin().await?;
                let used = sqlx::query(
                    "UPDATE invitations SET accepted_at = $1 WHERE id = $2 AND accepted_at IS NULL \
                     AND revoked_at IS NULL AND expires_at > $1",
                )
                .bind(now_micros)
                .bind(invitation_id)
                .execute(&mut *tx)
                .await?;
                if used.rows_affected() != 1 {
                    return Ok(Acceptance::Gone);
                }
                let inserted = sqlx::query(
                    "INSERT INTO workspace_members (id, workspace_id, user_id, role, created_at) \
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (workspace_id, user_id) DO NOTHING",
                )
                .bind(member.id)
                .bind(member.workspace_id)
                .bind(member.user_id)
                .bind(member.role.as_str())
                .bind(now_micros)
                .execute(&mut *tx)
                .await?;
                let sql = format!("{MEMBER_SELECT} WHERE m.workspace_id = $1 AND m.user_id = $2");
                let record = sqlx::query_as::<$db, MemberRow>(sqlx::AssertSqlSafe(sql))
                    .bind(member.workspace_id)
                    .bind(member.user_id)
                    .fetch_one(&mut *tx)
                    .await?;
                let record = MemberRecord::try_from(record)?;
                tx.commit().await?;
                Ok(if inserted.rows_affected() == 1 {
                    Acceptance::Joined(record)
                } else {
                    Acceptance::AlreadyMember(record)
                })
            }

            async fn key_by_hash(&self, key_hash: &str) -> StoreResult<Option<KeyLookup>> {
                let sql = format!(
                    "SELECT {KEY_COLUMNS}, m.role AS maker_role FROM api_keys k \
                     LEFT JOIN workspace_members m ON m.workspace_id = k.workspace_id \
                     AND m.user_id = k.created_by WHERE k.key_hash = $1"
                );
                let Some(row) = sqlx::query_as::<$db, KeyLookupRow>(sqlx::AssertSqlSafe(sql))
                    .bind(key_hash)
                    .fetch_optional(&self.pool)
                    .await?
                else {
                    return Ok(None);
                };
                Ok(Some(KeyLookup {
                    maker_role: row.maker_role.as_deref().map(role).transpose()?,
                    key: ApiKey::try_from(row.key)?,
                }))
            }

            async fn api_keys(&self, workspace_id: Uuid) -> StoreResult<Vec<ApiKey>> {
                let sql = format!(
                    "SELECT {KEY_COLUMNS} FROM api_keys k WHERE k.workspace_id = $1 \
                     AND k.revoked_at IS NULL ORDER BY k.created_at DESC, k.id DESC"
                );
                sqlx::query_as::<$db, KeyRow>(sqlx::AssertSqlSafe(sql))
                    .bind(workspace_id)
                    .fetch_all(&self.pool)
                    .await?
                    .into_iter()
                    .map(ApiKey::try_from)
                    .collect()
            }

            async fn insert_api_key(&self, key: &ApiKey, key_hash: &str) -> StoreResult<()> {
                sqlx::query(
                    "INSERT INTO api_keys (id, workspace_id, name, prefix, key_hash, role, \
                     created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                )
                .bind(key.id)
                .bind(key.workspace_id)
                .bind(&key.name)
                .bind(&key.prefix)
                .bind(key_hash)
                .bind(key.role.as_str())
                .bind(key.created_by)
                .bind(to_micros(key.created_at))
                .execute(&self.writer)
                .await
                .map_err(StorageError::from_db)?;
                Ok(())
            }

            async fn revoke_api_key(
                &self,
                workspace_id: Uuid,
                id: Uuid,
                at_micros: i64,
            ) -> StoreResult<bool> {
                let done = sqlx::query(
                    "UPDATE api_keys SET revoked_at = $1 WHERE workspace_id = $2 AND id = $3 \
                     AND revoked_at IS NULL",
                )
                .bind(at_micros)
                .bind(workspace_id)
                .bind(id)
                .execute(&self.writer)
                .await?;
                Ok(done.rows_affected() == 1)
            }

            async fn subscription(
                &self,
                workspace_id: Uuid,
            ) -> StoreResult<Option<SubscriptionRecord>> {
                let sql = format!(
                    "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE workspace_id = $1"
                );
                sqlx::query_as::<$db, SubscriptionRow>(sqlx::AssertSqlSafe(sql))
                    .bind(workspace_id)
                    .fetch_optional(&self.pool)
                    .await?
                    .map(SubscriptionRecord::try_from)
                    .transpose()
            }

            async fn subscription_by_provider_id(
                &self,
                provider_subscription_id: &str,
            ) -> StoreResult<Option<SubscriptionRecord>> {
                let sql = format!(
                    "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE provider_subscription_id = $1"
                );
                sqlx::query_as::<$db, SubscriptionRow>(sqlx::AssertSqlSafe(sql))
                    .bind(provider_subscription_id)
                    .fetch_optional(&self.pool)
                    .await?
                    .map(SubscriptionRecord::try_from)
                    .transpose()
            }

            async fn save_subscription(
                &self,
                record: &SubscriptionRecord,
                plan: Option<Plan>,
            ) -> StoreResult<()> {
                let mut tx = self.writer.begin().await?;
                Self::write_subscription(&mut tx, record, plan).await?;
                tx.commit().await?;
                Ok(())
            }

            async fn insert_checkout(&self, c: &CheckoutRecord) -> StoreResult<()> {
                sqlx::query(
                    "INSERT INTO checkout_sessions (id, workspace_id, user_id, plan, created_at, \
                     expires_at) VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(c.id)
                .bind(c.workspace_id)
                .bind(c.user_id)
                .bind(c.plan.as_str())
                .bind(to_micros(c.created_at))
                .bind(to_micros(c.expires_at))
                .execute(&self.writer)
                .await
                .map_err(StorageError::from_db)?;
                Ok(())
            }

            async fn checkout(&self, id: Uuid) -> StoreResult<Option<CheckoutRecord>> {
                sqlx::query_as::<$db, CheckoutRow>(
                    "SELECT id, workspace_id, user_id, plan, created_at, expires_at, completed_at \
                     FROM checkout_sessions WHERE id = $1",
                )
                .bind(id)
                .fetch_optional(&self.pool)
                .await?
                .map(CheckoutRecord::try_from)
                .transpose()
            }

            async fn complete_checkout(
                &self,
                id: Uuid,
                update: &SubscriptionUpdate,
                now_micros: i64,
            ) -> StoreResult<bool> {
                let mut tx = self.writer.begin().await?;
                let done = sqlx::query(
                    "UPDATE checkout_sessions SET completed_at = $1 WHERE id = $2 \
                     AND completed_at IS NULL AND expires_at > $1",
                )
                .bind(now_micros)
                .bind(id)
                .execute(&mut *tx)
                .await?;
                if done.rows_affected() != 1 {
                    return Ok(false);
                }
                Self::write_subscription(&mut tx, &update.record, update.plan).await?;
                tx.commit().await?;
                Ok(true)
            }

            async fn apply_webhook(
                &self,
                webhook_id: &str,
                kind: &str,
                update: Option<&SubscriptionUpdate>,
                event_micros: i64,
                at_micros: i64,
            ) -> StoreResult<WebhookOutcome> {
                let mut tx = self.writer.begin().await?;
                let fresh = sqlx::query(
                    "INSERT INTO billing_webhooks (webhook_id, kind, received_at) VALUES ($1, $2, $3) \
                     ON CONFLICT (webhook_id) DO NOTHING",
                )
                .bind(webhook_id)
                .bind(kind)
                .bind(at_micros)
                .execute(&mut *tx)
                .await?;
                if fresh.rows_affected() != 1 {
                    return Ok(WebhookOutcome::Duplicate);
                }
                if let Some(update) = update {
                    // Advancing the mark first locks the row (PostgreSQL), so concurrent
                    // deliveries are ordered by it; an older event finds it ahead.
                    let advanced = sqlx::query(
                        "UPDATE subscriptions SET last_event_at = $1 WHERE workspace_id = $2 \
                         AND (last_event_at IS NULL OR last_event_at <= $1)",
                    )
                    .bind(event_micros)
                    .bind(update.record.workspace_id)
                    .execute(&mut *tx)
                    .await?;
                    if advanced.rows_affected() == 0 {
                        let exists: i64 = sqlx::query_scalar(
                            "SELECT COUNT(*) FROM subscriptions WHERE workspace_id = $1",
                        )
                        .bind(update.record.workspace_id)
                        .fetch_one(&mut *tx)
                        .await?;
                        if exists > 0 {
                            tx.commit().await?;
                            return Ok(WebhookOutcome::Stale);
                        }
                    }
                    Self::write_subscription(&mut tx, &update.record, update.plan).await?;
                    sqlx::query(
                        "UPDATE subscriptions SET last_event_at = $1 WHERE workspace_id = $2",
                    )
                    .bind(event_micros)
                    .bind(update.record.workspace_id)
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
                Ok(WebhookOutcome::Applied)
            }
        }
    };
}

accounts_sql!(SqliteStore, sqlx::Sqlite);
accounts_sql!(PgStore, sqlx::Postgres);
