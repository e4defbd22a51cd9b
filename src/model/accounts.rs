//! Accounts domain types: users, sessions, roles and what they allow, members, invitations,
//! subscriptions. No I/O.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::Plan;

string_enum!(
    /// A member's role in a workspace (and the role an API key acts with).
    Role {
        Owner => "owner",
        Admin => "admin",
        Member => "member",
        Viewer => "viewer",
    }
);

string_enum!(
    /// A subscription's state (contract part 3).
    SubscriptionStatus {
        Active => "active",
        OnHold => "on_hold",
        Cancelled => "cancelled",
        Expired => "expired",
        Failed => "failed",
    }
);

string_enum!(
    /// What an OAuth access token (an MCP connector) may do, as the user approved it.
    Scope {
        MemoriesRead => "memories:read",
        MemoriesWrite => "memories:write",
        VaultRead => "vault:read",
        VaultWrite => "vault:write",
    }
);

/// What an operation needs, from the role matrix of `decisions.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Need {
    /// Read memories, the vault, profile, graph, the team and the subscription.
    Read,
    /// Write memories, vault facts, documents and feedback.
    Write,
    /// Members, invitations and API keys.
    Manage,
    /// Subscription changes, and changing an owner.
    Own,
}

impl Need {
    /// Words for a refusal: "your role (viewer) may not {what}".
    pub fn describe(self) -> &'static str {
        match self {
            Need::Read => "read this workspace",
            Need::Write => "write memories, vault facts, documents or feedback",
            Need::Manage => "manage members, invitations or API keys",
            Need::Own => "change the subscription or an owner",
        }
    }
}

impl Role {
    /// Higher is more: viewer 0, member 1, admin 2, owner 3.
    pub fn rank(self) -> u8 {
        match self {
            Role::Viewer => 0,
            Role::Member => 1,
            Role::Admin => 2,
            Role::Owner => 3,
        }
    }

    /// The role matrix.
    pub fn allows(self, need: Need) -> bool {
        let required = match need {
            Need::Read => Role::Viewer,
            Need::Write => Role::Member,
            Need::Manage => Role::Admin,
            Need::Own => Role::Owner,
        };
        self.rank() >= required.rank()
    }

    /// The lesser of two roles (a key never acts above the member who made it).
    pub fn min(self, other: Role) -> Role {
        if self.rank() <= other.rank() {
            self
        } else {
            other
        }
    }
}

/// A user account as stored (the password hash never leaves the storage and accounts layers).
#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub id: Uuid,
    pub email: String,
    pub name: String,
    pub image: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A session as stored: only the token's hash is kept.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    pub id: Uuid,
    pub user_id: Uuid,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A membership of a user in a workspace, with the user's public fields.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberRecord {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub user_id: Uuid,
    pub role: Role,
    pub created_at: DateTime<Utc>,
    pub email: String,
    pub name: String,
    pub image: Option<String>,
}

/// A workspace as one user sees it: with their role.
#[derive(Debug, Clone, PartialEq)]
pub struct Membership {
    pub workspace_id: Uuid,
    pub name: String,
    pub slug: String,
    pub plan: Option<Plan>,
    pub created_at: DateTime<Utc>,
    pub role: Role,
    pub member_id: Uuid,
}

/// An invitation as stored (the token itself is never stored, only its hash).
#[derive(Debug, Clone, PartialEq)]
pub struct InvitationRecord {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub email: String,
    pub role: Role,
    pub invited_by: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub accepted_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A workspace's billing state as stored. A workspace without a row is on its plan (free when
/// none) with status `active` and no provider.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriptionRecord {
    pub workspace_id: Uuid,
    pub id: Uuid,
    pub user_id: Option<Uuid>,
    pub status: SubscriptionStatus,
    pub provider: String,
    pub provider_customer_id: Option<String>,
    pub provider_subscription_id: Option<String>,
    pub renews_at: Option<DateTime<Utc>>,
    pub cancelled_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A checkout of the local billing provider, completed when the owner confirms it.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckoutRecord {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub user_id: Uuid,
    pub plan: Plan,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
}

/// A role as a request body names it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
pub struct RoleBody {
    pub role: Role,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_role_matrix_of_the_decisions() {
        // operation: owner, admin, member, viewer
        let table = [
            (Need::Read, [true, true, true, true]),
            (Need::Write, [true, true, true, false]),
            (Need::Manage, [true, true, false, false]),
            (Need::Own, [true, false, false, false]),
        ];
        for (need, allowed) in table {
            for (role, expected) in [Role::Owner, Role::Admin, Role::Member, Role::Viewer]
                .into_iter()
                .zip(allowed)
            {
                assert_eq!(role.allows(need), expected, "{role} {need:?}");
            }
        }
    }

    #[test]
    fn a_key_never_acts_above_its_maker() {
        assert_eq!(Role::Owner.min(Role::Member), Role::Member);
        assert_eq!(Role::Viewer.min(Role::Admin), Role::Viewer);
    }
}
