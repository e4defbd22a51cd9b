//! The team of a workspace: its members (and, for owners and admins, its pending
//! invitations), changing a member's role, and removing a member or leaving.

use memvault_actors::EndpointClass;

use super::inputs::Parsed;
use super::{path_id, AccountsService};
use crate::error::{Error, Result};
use crate::model::accounts::{InvitationRecord, MemberRecord, Need, Role};
use crate::model::{now, to_micros};
use crate::services::access::forbidden_role;
use crate::services::Principal;
use crate::storage::accounts::MemberChange;

/// A workspace's team as the caller sees it.
#[derive(Debug, Clone)]
pub struct TeamRoster {
    pub current_user_role: Role,
    pub members: Vec<MemberRecord>,
    /// Pending invitations; shown to owners and admins (empty for other roles).
    pub invitations: Vec<InvitationRecord>,
}

impl AccountsService {
    /// `GET /api/workspaces/{workspaceId}/team`.
    pub async fn team(&self, who: &Principal, workspace_id: &str) -> Result<TeamRoster> {
        let (workspace_id, caller) = self
            .enter_workspace(who, workspace_id, Need::Read, EndpointClass::Read)
            .await?;
        let members = self.store.members(workspace_id).await?;
        let invitations = if caller.role.allows(Need::Manage) {
            self.store
                .pending_invitations(workspace_id, to_micros(now()))
                .await?
        } else {
            Vec::new()
        };
        Ok(TeamRoster {
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
        role: Parsed<Role>,
    ) -> Result<MemberRecord> {
        let (workspace_id, caller) = self
            .enter_workspace(who, workspace_id, Need::Manage, EndpointClass::Write)
            .await?;
        let member_id = path_id("member", member_id)?;
        let role = role?;
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
                Ok(member)
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
    ) -> Result<()> {
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
                Ok(())
            }
            MemberChange::NotFound => Err(Error::NotFound("member not found".to_string())),
            MemberChange::LastOwner => Err(last_owner()),
        }
    }
}

fn last_owner() -> Error {
    Error::Conflict("a workspace must keep an owner: make another member owner first".to_string())
}
