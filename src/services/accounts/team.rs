//! The team of a workspace: its members (and, for owners and admins, its pending
//! invitations), changing a member's role, and removing a member or leaving.

use chrono::{DateTime, Utc};
use memvault_actors::EndpointClass;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::invitations::InvitationView;
use super::{path_id, role_value, AccountsService};
use crate::error::{Error, Result};
use crate::model::accounts::{MemberRecord, Need, Role};
use crate::model::{now, to_micros};
use crate::services::access::forbidden_role;
use crate::services::memories::Success;
use crate::services::Principal;
use crate::storage::accounts::MemberChange;

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberView {
    pub id: Uuid,
    pub user_id: String,
    pub role: Role,
    pub created_at: DateTime<Utc>,
}

impl From<&MemberRecord> for MemberView {
    fn from(m: &MemberRecord) -> Self {
        MemberView {
            id: m.id,
            user_id: m.user_id.to_string(),
            role: m.role,
            created_at: m.created_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MemberChanged {
    pub member: MemberView,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TeamMember {
    pub id: Uuid,
    pub user_id: String,
    pub role: Role,
    pub created_at: DateTime<Utc>,
    pub email: String,
    pub name: String,
    pub image: Option<String>,
}

impl From<MemberRecord> for TeamMember {
    fn from(m: MemberRecord) -> Self {
        TeamMember {
            id: m.id,
            user_id: m.user_id.to_string(),
            role: m.role,
            created_at: m.created_at,
            email: m.email,
            name: m.name,
            image: m.image,
        }
    }
}

/// `GET /api/workspaces/{workspaceId}/team`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Team {
    pub current_user_role: Role,
    pub members: Vec<TeamMember>,
    /// Pending invitations; shown to owners and admins (empty for other roles).
    pub invitations: Vec<InvitationView>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangeRole {
    /// `admin`, `member` or `viewer`; `owner` too when an owner asks.
    #[schema(value_type = Role, required = true)]
    pub role: Option<String>,
}

impl AccountsService {
    /// `GET /api/workspaces/{workspaceId}/team`.
    pub async fn team(&self, who: &Principal, workspace_id: &str) -> Result<Team> {
        let (workspace_id, caller) = self
            .enter_workspace(who, workspace_id, Need::Read, EndpointClass::Read)
            .await?;
        let members = self
            .store
            .members(workspace_id)
            .await?
            .into_iter()
            .map(TeamMember::from)
            .collect();
        let invitations = if caller.role.allows(Need::Manage) {
            self.store
                .pending_invitations(workspace_id, to_micros(now()))
                .await?
                .into_iter()
                .map(InvitationView::from)
                .collect()
        } else {
            Vec::new()
        };
        Ok(Team {
            current_user_role: caller.role,
            members,
            invitations,
        })
    }

    /// `PATCH /api/workspaces/{workspaceId}/members/{memberId}`.
    pub async fn change_role(
        &self,
        who: &Principal,
        workspace_id: &str,
        member_id: &str,
        input: ChangeRole,
    ) -> Result<MemberChanged> {
        let (workspace_id, caller) = self
            .enter_workspace(who, workspace_id, Need::Manage, EndpointClass::Write)
            .await?;
        let member_id = path_id("member", member_id)?;
        let raw = input
            .role
            .ok_or_else(|| Error::validation("role", "is required"))?;
        let role = role_value(
            "role",
            &raw,
            &[Role::Owner, Role::Admin, Role::Member, Role::Viewer],
        )?;
        // Giving the owner role is an owner's decision: a wrong role, not a wrong value.
        if role == Role::Owner && !caller.role.allows(Need::Own) {
            return Err(forbidden_role(caller.role, Need::Own));
        }
        let target = self
            .store
            .member(workspace_id, member_id)
            .await?
            .ok_or_else(|| Error::NotFound("member not found".to_string()))?;
        if target.role == Role::Owner && !caller.role.allows(Need::Own) {
            return Err(forbidden_role(caller.role, Need::Own));
        }
        match self
            .store
            .set_member_role(workspace_id, member_id, role)
            .await?
        {
            MemberChange::Done(member) => {
                self.forget_cached_keys();
                Ok(MemberChanged {
                    member: MemberView::from(&member),
                })
            }
            MemberChange::NotFound => Err(Error::NotFound("member not found".to_string())),
            MemberChange::LastOwner => Err(last_owner()),
        }
    }

    /// `DELETE /api/workspaces/{workspaceId}/members/{memberId}`. Members may remove
    /// themselves (leave); owners and admins may remove others (an owner only by an owner).
    /// The keys the member made in the workspace are revoked with them.
    pub async fn remove_member(
        &self,
        who: &Principal,
        workspace_id: &str,
        member_id: &str,
    ) -> Result<Success> {
        let workspace_id = path_id("workspace", workspace_id)?;
        let member_id = path_id("member", member_id)?;
        let caller = self.gate.enter(who, Some(workspace_id), Need::Read).await?;
        self.admit(&caller, EndpointClass::Write).await?;
        let target = self
            .store
            .member(workspace_id, member_id)
            .await?
            .ok_or_else(|| Error::NotFound("member not found".to_string()))?;
        let leaving = who.user_id() == Some(target.user_id);
        if !leaving {
            if !caller.role.allows(Need::Manage) {
                return Err(forbidden_role(caller.role, Need::Manage));
            }
            if target.role == Role::Owner && !caller.role.allows(Need::Own) {
                return Err(forbidden_role(caller.role, Need::Own));
            }
        }
        match self
            .store
            .remove_member(workspace_id, member_id, to_micros(now()))
            .await?
        {
            MemberChange::Done(_) => {
                self.forget_cached_keys();
                Ok(Success { success: true })
            }
            MemberChange::NotFound => Err(Error::NotFound("member not found".to_string())),
            MemberChange::LastOwner => Err(last_owner()),
        }
    }
}

fn last_owner() -> Error {
    Error::Conflict("a workspace must keep an owner: make another member owner first".to_string())
}
