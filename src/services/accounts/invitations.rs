//! Invitations: inviting an email address into a workspace with a role, revoking a pending
//! invitation, and accepting one with its single-use token.

use memvault_actors::EndpointClass;
use uuid::Uuid;

use super::inputs::{NewInvitation, Parsed};
use super::keys::hash_key;
use super::workspaces::WorkspaceRole;
use super::{generate_token, path_id, AccountsService};
use crate::error::{Error, Result};
use crate::model::accounts::{InvitationRecord, MemberRecord, Need, Role};
use crate::model::{now, to_micros};
use crate::services::access::not_a_member;
use crate::services::{Identity, Principal};
use crate::storage::accounts::Acceptance;

/// A new invitation and its single-use token (shown once).
#[derive(Debug, Clone)]
pub struct IssuedInvitation {
    pub invitation: InvitationRecord,
    pub token: String,
}

/// An accepted invitation: the workspace joined (with the new role in it) and the membership.
#[derive(Debug, Clone)]
pub struct Joined {
    pub workspace: WorkspaceRole,
    pub member: MemberRecord,
}

impl AccountsService {
    /// `POST /api/workspaces/{workspaceId}/invitations`.
    pub async fn invite(
        &self,
        who: &Principal,
        workspace_id: &str,
        input: Parsed<NewInvitation>,
    ) -> Result<IssuedInvitation> {
        let (workspace_id, _) = self
            .enter_workspace(who, workspace_id, Need::Manage, EndpointClass::Write)
            .await?;
        let input = input?;
        let email = input.email.into_string();
        let role = input.role.unwrap_or(Role::Member);
        self.doors.invitations_by_workspace.check(workspace_id)?;
        let members = self.store.members(workspace_id).await?;
        if members.iter().any(|m| m.email == email) {
            return Err(Error::Conflict(format!(
                "{email} is already a member of this workspace"
            )));
        }
        let token = generate_token();
        let created_at = now();
        let invitation = InvitationRecord {
            id: Uuid::now_v7(),
            workspace_id,
            email,
            role,
            invited_by: who.user_id().or(match &who.identity {
                Identity::Key { made_by, .. } => *made_by,
                Identity::User { .. } | Identity::Token { .. } => None,
            }),
            created_at,
            expires_at: created_at + self.config.invitation_ttl,
            accepted_at: None,
            revoked_at: None,
        };
        self.store
            .insert_invitation(&invitation, &hash_key(&token))
            .await?;
        Ok(IssuedInvitation { invitation, token })
    }

    /// `DELETE /api/workspaces/{workspaceId}/invitations/{invitationId}`.
    pub async fn revoke_invitation(
        &self,
        who: &Principal,
        workspace_id: &str,
        invitation_id: &str,
    ) -> Result<()> {
        let (workspace_id, _) = self
            .enter_workspace(who, workspace_id, Need::Manage, EndpointClass::Write)
            .await?;
        let id = path_id("invitation", invitation_id)?;
        if !self
            .store
            .revoke_invitation(workspace_id, id, to_micros(now()))
            .await?
        {
            return Err(Error::NotFound(
                "invitation not found (or no longer pending)".to_string(),
            ));
        }
        Ok(())
    }

    /// `POST /api/invitations/{token}/accept`: the signed-in user whose email was invited
    /// joins with the invitation's role.
    pub async fn accept_invitation(&self, who: &Principal, token: &str) -> Result<Joined> {
        let (user_id, _) = Self::signed_in_user(who, "accepting an invitation")?;
        let not_found = || Error::NotFound("invitation not found".to_string());
        if token.is_empty() || token.len() > 200 {
            return Err(not_found());
        }
        let invitation = self
            .store
            .invitation_by_hash(&hash_key(token))
            .await?
            .ok_or_else(not_found)?;
        let at = now();
        if invitation.revoked_at.is_some() {
            return Err(Error::Gone("this invitation was revoked".to_string()));
        }
        if invitation.accepted_at.is_some() {
            return Err(Error::Gone(
                "this invitation has already been used".to_string(),
            ));
        }
        if invitation.expires_at <= at {
            return Err(Error::Gone(format!(
                "this invitation expired at {}: ask for a new one",
                invitation.expires_at.to_rfc3339()
            )));
        }
        let user = self
            .store
            .user(user_id)
            .await?
            .ok_or_else(|| Error::Unauthorized("your account no longer exists".to_string()))?;
        if user.email != invitation.email {
            return Err(Error::Forbidden(
                "this invitation was sent to another email address: sign in with that one"
                    .to_string(),
            ));
        }
        let member = MemberRecord {
            id: Uuid::now_v7(),
            workspace_id: invitation.workspace_id,
            user_id,
            role: invitation.role,
            created_at: at,
            email: user.email.clone(),
            name: user.name.clone(),
            image: user.image.clone(),
        };
        let member = match self
            .store
            .accept_invitation(invitation.id, &member, to_micros(at))
            .await?
        {
            Acceptance::Joined(member) | Acceptance::AlreadyMember(member) => member,
            Acceptance::Gone => {
                return Err(Error::Gone(
                    "this invitation is no longer valid".to_string(),
                ))
            }
        };
        let workspace = self
            .store
            .memberships(user_id)
            .await?
            .into_iter()
            .find(|m| m.workspace_id == invitation.workspace_id)
            .ok_or_else(not_a_member)?;
        Ok(Joined {
            workspace: workspace.into(),
            member,
        })
    }
}
