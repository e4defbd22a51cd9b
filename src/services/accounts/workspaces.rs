//! Workspaces: creating one (a signed-in user's, or the command line's with its first key),
//! listing a caller's, their slugs, and setting a workspace's plan.

use memvault_actors::EndpointClass;
use uuid::Uuid;

use super::inputs::{NewWorkspace, MAX_NAME_CHARS, MAX_SLUG_CHARS};
use super::keys::generate_key;
use super::AccountsService;
use crate::error::{Error, Result, StorageError};
use crate::model::accounts::{MemberRecord, Membership, Need, Role, User};
use crate::model::{now, ApiKey, Plan, Workspace};
use crate::services::{Identity, Principal};

/// `My Team!` -> `my-team`.
pub fn slugify(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    let slug: String = slug
        .trim_end_matches('-')
        .chars()
        .take(MAX_SLUG_CHARS)
        .collect();
    let slug = slug.trim_end_matches('-').to_string();
    if slug.is_empty() {
        "workspace".to_string()
    } else {
        slug
    }
}

/// A workspace and the caller's role in it.
#[derive(Debug, Clone)]
pub struct WorkspaceRole {
    pub workspace: Workspace,
    pub role: Role,
}

impl From<Membership> for WorkspaceRole {
    fn from(m: Membership) -> Self {
        WorkspaceRole {
            workspace: Workspace {
                id: m.workspace_id,
                name: m.name,
                slug: m.slug,
                plan: m.plan,
                created_at: m.created_at,
            },
            role: m.role,
        }
    }
}

impl AccountsService {
    /// Inserts a workspace owned by `user`; a slug clash on a slug made from the name gets a
    /// short suffix.
    pub(super) async fn insert_owned_workspace(
        &self,
        user: &User,
        name: &str,
        slug: Option<String>,
    ) -> Result<Membership> {
        let created_at = now();
        let id = Uuid::now_v7();
        let chosen = slug.is_some();
        let base = slug.unwrap_or_else(|| slugify(name));
        let owner = MemberRecord {
            id: Uuid::now_v7(),
            workspace_id: id,
            user_id: user.id,
            role: Role::Owner,
            created_at,
            email: user.email.clone(),
            name: user.name.clone(),
            image: user.image.clone(),
        };
        for attempt in 0..2 {
            let slug = if attempt == 0 {
                base.clone()
            } else {
                format!("{base}-{}", &id.simple().to_string()[24..])
            };
            let workspace = Workspace {
                id,
                name: name.to_string(),
                slug,
                plan: None,
                created_at,
            };
            match self
                .store
                .insert_workspace_with_owner(&workspace, &owner)
                .await
            {
                // The default vault is made on the workspace's first vault request (by its
                // owner node, in a cluster: this node may not own the new workspace).
                Ok(()) => {
                    return Ok(Membership {
                        workspace_id: id,
                        name: workspace.name,
                        slug: workspace.slug,
                        plan: None,
                        created_at,
                        role: Role::Owner,
                        member_id: owner.id,
                    });
                }
                Err(StorageError::UniqueViolation) if attempt == 0 && !chosen => continue,
                Err(StorageError::UniqueViolation) => {
                    return Err(Error::Conflict(
                        "a workspace with this slug already exists: choose another slug"
                            .to_string(),
                    ))
                }
                Err(error) => return Err(error.into()),
            }
        }
        Err(Error::Conflict(
            "could not choose a unique slug for this workspace".to_string(),
        ))
    }

    /// `GET /api/workspaces`: a signed-in user's workspaces; a key's own workspace.
    pub async fn list_workspaces(&self, who: &Principal) -> Result<Vec<WorkspaceRole>> {
        let workspaces = match &who.identity {
            Identity::User { user_id, .. } => self
                .store
                .memberships(*user_id)
                .await?
                .into_iter()
                .map(WorkspaceRole::from)
                .collect(),
            Identity::Key { .. } | Identity::Token { .. } => {
                let caller = self.gate.enter(who, None, Need::Read).await?;
                self.admit(&caller, EndpointClass::Read).await?;
                let workspace = self
                    .store
                    .workspace(caller.workspace_id)
                    .await?
                    .ok_or_else(|| Error::Unauthorized("invalid API key".to_string()))?;
                vec![WorkspaceRole {
                    workspace,
                    role: caller.role,
                }]
            }
        };
        Ok(workspaces)
    }

    /// `POST /api/workspaces`: the signed-in user owns the new workspace.
    pub async fn create_workspace_for(
        &self,
        who: &Principal,
        input: NewWorkspace,
    ) -> Result<WorkspaceRole> {
        let (user_id, _) = Self::signed_in_user(who, "creating a workspace")?;
        let name = input.name?.into_string();
        self.doors.workspaces_by_user.check(user_id)?;
        let slug = input.slug?.map(|slug| slug.into_string());
        let user = self
            .store
            .user(user_id)
            .await?
            .ok_or_else(|| Error::Unauthorized("your account no longer exists".to_string()))?;
        let membership = self.insert_owned_workspace(&user, &name, slug).await?;
        Ok(membership.into())
    }

    /// Creates a workspace with its first API key (the command line); returns the raw key
    /// (shown once). The key acts as owner.
    pub async fn create_workspace(
        &self,
        name: &str,
        plan: Option<Plan>,
    ) -> Result<(Workspace, String)> {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
            return Err(Error::validation("name", "must be 1 to 100 characters"));
        }
        let created_at = now();
        let id = Uuid::now_v7();
        let base = slugify(name);
        let key = generate_key();
        let api_key = ApiKey {
            id: Uuid::now_v7(),
            workspace_id: id,
            name: "default".to_string(),
            prefix: key.prefix.clone(),
            role: Role::Owner,
            created_by: None,
            created_at,
            last_used_at: None,
            revoked_at: None,
        };
        // Slugs are unique: on a clash, a short suffix from the id.
        for attempt in 0..2 {
            let slug = if attempt == 0 {
                base.clone()
            } else {
                format!("{base}-{}", &id.simple().to_string()[24..])
            };
            let workspace = Workspace {
                id,
                name: name.to_string(),
                slug,
                plan,
                created_at,
            };
            match self
                .store
                .insert_workspace_with_key(&workspace, &api_key, &key.hash)
                .await
            {
                Ok(()) => {
                    return Ok((workspace, key.raw));
                }
                Err(StorageError::UniqueViolation) if attempt == 0 => continue,
                Err(error) => return Err(error.into()),
            }
        }
        Err(Error::Conflict(
            "could not choose a unique slug for this workspace".to_string(),
        ))
    }

    /// Sets a workspace's plan (the command line and billing); the workspace actor follows at
    /// once.
    pub async fn set_plan(&self, workspace_id: Uuid, plan: Plan) -> Result<()> {
        if !self.store.set_plan(workspace_id, plan).await? {
            return Err(Error::NotFound(format!(
                "workspace {workspace_id} not found"
            )));
        }
        self.plan_changed(workspace_id, plan);
        Ok(())
    }

    /// Tells the workspace's actor here about a plan already stored; the database announces
    /// it to the other nodes of a cluster (migration `0011_plan_notify.sql`).
    pub fn plan_changed(&self, workspace_id: Uuid, plan: Plan) {
        if let Some(workspaces) = &self.workspaces {
            workspaces.plan_changed(workspace_id, plan);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_url_safe() {
        assert_eq!(slugify("My Team!"), "my-team");
        assert_eq!(slugify("  Ünïcode -- name "), "n-code-name");
        assert_eq!(slugify("!!!"), "workspace");
        assert!(slugify(&"a".repeat(500)).len() <= MAX_SLUG_CHARS);
    }
}
