//! What accounts need from storage: users, sessions, members, invitations, API keys and
//! subscriptions. Implemented for SQLite and PostgreSQL by the same SQL in `accounts_sql.rs`.
//!
//! Rules that must hold under concurrency live here as single transactions: a workspace keeps an
//! owner (member changes lock the workspace row first, so two owners demoting each other
//! serialise), an invitation is accepted at most once, a webhook is applied at most once.

use async_trait::async_trait;
use uuid::Uuid;

use super::StoreResult;
use crate::model::accounts::{
    CheckoutRecord, InvitationRecord, MemberRecord, Membership, Role, SessionRecord,
    SubscriptionRecord, User,
};
use crate::model::{ApiKey, Plan, Workspace};

/// An API key with what authentication needs beside it.
#[derive(Debug, Clone)]
pub struct KeyLookup {
    pub key: ApiKey,
    /// The current role of the user who made the key in its workspace; `None` when the key was
    /// made by the command line or its maker is no longer a member.
    pub maker_role: Option<Role>,
}

/// A member change (role or removal) and what came of it.
#[derive(Debug, Clone, PartialEq)]
pub enum MemberChange {
    /// Done; the member as it is now (as it was, for a removal).
    Done(MemberRecord),
    /// No such member in this workspace.
    NotFound,
    /// Refused: the workspace would be left without an owner.
    LastOwner,
}

/// What accepting an invitation came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Acceptance {
    /// The user joined with the invitation's role.
    Joined(MemberRecord),
    /// The user was already a member: the invitation is used up, the role unchanged.
    AlreadyMember(MemberRecord),
    /// The invitation was accepted, revoked or expired before this call.
    Gone,
}

/// A subscription change to apply with a webhook, in the same transaction.
#[derive(Debug, Clone)]
pub struct SubscriptionUpdate {
    pub record: SubscriptionRecord,
    /// The workspace's new plan, when the change moves it.
    pub plan: Option<Plan>,
}

/// What became of a webhook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookOutcome {
    /// Applied (or acknowledged, when it changes nothing).
    Applied,
    /// Its id was seen before: ignored.
    Duplicate,
    /// Older than the last event applied to its subscription: recorded, not applied.
    Stale,
}

#[async_trait]
pub trait AccountStore: Send + Sync {
    // Users and sessions.
    /// Inserts a user; `UniqueViolation` when the email is taken.
    async fn insert_user(&self, user: &User, password_hash: &str) -> StoreResult<()>;
    /// A user and their password hash, by lower-cased email.
    async fn user_by_email(&self, email: &str) -> StoreResult<Option<(User, String)>>;
    async fn user(&self, id: Uuid) -> StoreResult<Option<User>>;
    async fn insert_session(&self, session: &SessionRecord, token_hash: &str) -> StoreResult<()>;
    /// A session (revoked or expired ones too: the caller decides) with its user.
    async fn session_by_hash(&self, token_hash: &str)
        -> StoreResult<Option<(SessionRecord, User)>>;
    async fn session(&self, id: Uuid) -> StoreResult<Option<SessionRecord>>;
    async fn revoke_session(&self, id: Uuid, at_micros: i64) -> StoreResult<()>;

    // Workspaces and members.
    /// Inserts a workspace with its first member (the owner) in one transaction;
    /// `UniqueViolation` when the slug is taken.
    async fn insert_workspace_with_owner(
        &self,
        workspace: &Workspace,
        owner: &MemberRecord,
    ) -> StoreResult<()>;
    /// The workspaces a user belongs to, oldest membership first.
    async fn memberships(&self, user_id: Uuid) -> StoreResult<Vec<Membership>>;
    /// A user's membership of one workspace.
    async fn member_of(
        &self,
        workspace_id: Uuid,
        user_id: Uuid,
    ) -> StoreResult<Option<MemberRecord>>;
    async fn member(
        &self,
        workspace_id: Uuid,
        member_id: Uuid,
    ) -> StoreResult<Option<MemberRecord>>;
    /// Members with their user's email, name and image, oldest first.
    async fn members(&self, workspace_id: Uuid) -> StoreResult<Vec<MemberRecord>>;
    /// Changes a member's role unless that leaves the workspace without an owner.
    async fn set_member_role(
        &self,
        workspace_id: Uuid,
        member_id: Uuid,
        role: Role,
    ) -> StoreResult<MemberChange>;
    /// Removes a member unless that leaves the workspace without an owner; the API keys the
    /// member made in this workspace are revoked in the same transaction.
    async fn remove_member(
        &self,
        workspace_id: Uuid,
        member_id: Uuid,
        at_micros: i64,
    ) -> StoreResult<MemberChange>;

    // Invitations.
    /// Inserts an invitation; a pending one for the same email in the workspace is revoked in
    /// the same transaction (a new invitation replaces it).
    async fn insert_invitation(
        &self,
        invitation: &InvitationRecord,
        token_hash: &str,
    ) -> StoreResult<()>;
    /// Pending invitations (not accepted, revoked or expired at `now_micros`), oldest first.
    async fn pending_invitations(
        &self,
        workspace_id: Uuid,
        now_micros: i64,
    ) -> StoreResult<Vec<InvitationRecord>>;
    async fn invitation_by_hash(&self, token_hash: &str) -> StoreResult<Option<InvitationRecord>>;
    /// Revokes a pending invitation; `false` when there is no pending one with this id.
    async fn revoke_invitation(
        &self,
        workspace_id: Uuid,
        id: Uuid,
        at_micros: i64,
    ) -> StoreResult<bool>;
    /// Uses up a pending invitation and makes `member` (its id, user and role) a member, in one
    /// transaction.
    async fn accept_invitation(
        &self,
        invitation_id: Uuid,
        member: &MemberRecord,
        now_micros: i64,
    ) -> StoreResult<Acceptance>;

    // API keys.
    async fn key_by_hash(&self, key_hash: &str) -> StoreResult<Option<KeyLookup>>;
    /// Live (not revoked) keys of a workspace, newest first.
    async fn api_keys(&self, workspace_id: Uuid) -> StoreResult<Vec<ApiKey>>;
    async fn insert_api_key(&self, key: &ApiKey, key_hash: &str) -> StoreResult<()>;
    /// Revokes a live key; `false` when there is none with this id in the workspace.
    async fn revoke_api_key(
        &self,
        workspace_id: Uuid,
        id: Uuid,
        at_micros: i64,
    ) -> StoreResult<bool>;

    // Subscriptions and billing.
    async fn subscription(&self, workspace_id: Uuid) -> StoreResult<Option<SubscriptionRecord>>;
    async fn subscription_by_provider_id(
        &self,
        provider_subscription_id: &str,
    ) -> StoreResult<Option<SubscriptionRecord>>;
    /// Writes the subscription (insert or replace) and, when given, the workspace's plan, in
    /// one transaction.
    async fn save_subscription(
        &self,
        record: &SubscriptionRecord,
        plan: Option<Plan>,
    ) -> StoreResult<()>;
    async fn insert_checkout(&self, checkout: &CheckoutRecord) -> StoreResult<()>;
    async fn checkout(&self, id: Uuid) -> StoreResult<Option<CheckoutRecord>>;
    /// Marks an open checkout completed and applies `update`, in one transaction; `false` when
    /// it was already completed or has expired.
    async fn complete_checkout(
        &self,
        id: Uuid,
        update: &SubscriptionUpdate,
        now_micros: i64,
    ) -> StoreResult<bool>;
    /// Records a webhook id and applies `update` in one transaction, unless the id was seen
    /// before or the subscription already applied an event newer than `event_micros`.
    async fn apply_webhook(
        &self,
        webhook_id: &str,
        kind: &str,
        update: Option<&SubscriptionUpdate>,
        event_micros: i64,
        at_micros: i64,
    ) -> StoreResult<WebhookOutcome>;
}
