//! Workspaces: creating one (a signed-in user's, or the command line's with its first key),
//! listing a caller's, their slugs, and setting a workspace's plan.

use chrono::{DateTime, Utc};
use memvault_actors::EndpointClass;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::keys::generate_key;
use super::{text, AccountsService, MAX_NAME_CHARS};
use crate::error::{Error, Result, StorageError};
use crate::model::accounts::{MemberRecord, Membership, Need, Role, User};
use crate::model::{now, ApiKey, Plan, Workspace};
use crate::services::{Identity, Principal};

const MAX_SLUG_CHARS: usize = 60;

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

/// A workspace as one caller sees it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceView {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    pub role: Role,
    /// `free`, `hobby`, `pro` or `ultimate`; `null` reads as free.
    #[schema(value_type = Option<crate::model::PlanName>)]
    pub billing_owner_plan: Option<Plan>,
    pub created_at: DateTime<Utc>,
}

impl From<Membership> for WorkspaceView {
    fn from(m: Membership) -> Self {
        WorkspaceView {
            id: m.workspace_id,
            name: m.name,
            slug: m.slug,
            role: m.role,
            billing_owner_plan: m.plan,
            created_at: m.created_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceList {
    pub workspaces: Vec<WorkspaceView>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceCreated {
    pub workspace: WorkspaceView,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateWorkspace {
    /// 1 to 100 characters (no control characters).
    #[schema(value_type = String, required = true, max_length = 100, pattern = r"^\s*[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?\s*$")]
    pub name: Option<String>,
    /// 1 to 60 lower-case letters, digits and dashes, not starting or ending with a dash;
    /// made from the name when absent. Unique.
    #[schema(pattern = r"^\s*(?:[a-z0-9](?:[a-z0-9-]{0,58}[a-z0-9])?)?\s*$")]
    pub slug: Option<String>,
}

/// An optional `workspaceId` in the query string.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct WorkspaceParam {
    pub workspace_id: Option<Uuid>,
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
    pub async fn list_workspaces(&self, who: &Principal) -> Result<WorkspaceList> {
        let workspaces = match &who.identity {
            Identity::User { user_id, .. } => self
                .store
                .memberships(*user_id)
                .await?
                .into_iter()
                .map(WorkspaceView::from)
                .collect(),
            Identity::Key { .. } | Identity::Token { .. } => {
                let caller = self.gate.enter(who, None, Need::Read).await?;
                self.admit(&caller, EndpointClass::Read).await?;
                let workspace = self
                    .store
                    .workspace(caller.workspace_id)
                    .await?
                    .ok_or_else(|| Error::Unauthorized("invalid API key".to_string()))?;
                vec![WorkspaceView {
                    id: workspace.id,
                    name: workspace.name,
                    slug: workspace.slug,
                    role: caller.role,
                    billing_owner_plan: workspace.plan,
                    created_at: workspace.created_at,
                }]
            }
        };
        Ok(WorkspaceList { workspaces })
    }

    /// `POST /api/workspaces`: the signed-in user owns the new workspace.
    pub async fn create_workspace_for(
        &self,
        who: &Principal,
        input: CreateWorkspace,
    ) -> Result<WorkspaceCreated> {
        let (user_id, _) = Self::signed_in_user(who, "creating a workspace")?;
        let name = text("name", input.name.as_deref(), MAX_NAME_CHARS)?
            .ok_or_else(|| Error::validation("name", "is required"))?;
        self.doors.workspaces_by_user.check(user_id)?;
        let slug = match input.slug.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(raw) => {
                let valid = raw.len() <= MAX_SLUG_CHARS
                    && raw
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !raw.starts_with('-')
                    && !raw.ends_with('-');
                if !valid {
                    return Err(Error::validation(
                        "slug",
                        format!("must be 1 to {MAX_SLUG_CHARS} lower-case letters, digits and dashes, not starting or ending with a dash"),
                    ));
                }
                Some(raw.to_string())
            }
        };
        let user = self
            .store
            .user(user_id)
            .await?
            .ok_or_else(|| Error::Unauthorized("your account no longer exists".to_string()))?;
        let membership = self.insert_owned_workspace(&user, &name, slug).await?;
        Ok(WorkspaceCreated {
            workspace: membership.into(),
        })
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
