//! Who may do what where: turns an authenticated [`Principal`] and the workspace a request
//! names into a [`Caller`] acting in one workspace with one role, or refuses. Every service
//! entry point goes through [`Gate::enter`] with what it needs, so the role matrix of
//! `decisions.md` is enforced in one place for REST and MCP, keys and cookies alike.

use std::sync::Arc;

use uuid::Uuid;

use super::{Caller, Identity, Principal};
use crate::error::{Error, Result};
use crate::model::accounts::{Need, Role};
use crate::storage::Store;

#[derive(Clone)]
pub struct Gate {
    store: Arc<dyn Store>,
}

impl Gate {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Gate { store }
    }

    /// The caller acting in the requested workspace (a key: its own; a signed-in user: the one
    /// named, else their first), when their role there allows `need`.
    pub async fn enter(
        &self,
        who: &Principal,
        requested: Option<Uuid>,
        need: Need,
    ) -> Result<Caller> {
        let (workspace_id, role, user_id) = match &who.identity {
            Identity::Key {
                key_id,
                workspace_id,
                role,
                ..
            } => {
                if requested.is_some_and(|id| id != *workspace_id) {
                    return Err(Error::Forbidden(
                        "this API key is bound to another workspace".to_string(),
                    ));
                }
                (*workspace_id, *role, format!("key:{key_id}"))
            }
            Identity::Token {
                user_id,
                workspace_id,
                ..
            } => {
                if requested.is_some_and(|id| id != *workspace_id) {
                    return Err(Error::Forbidden(
                        "this connection is bound to another workspace".to_string(),
                    ));
                }
                // The user's role now: a removed member's connection stops working.
                let member = self
                    .store
                    .member_of(*workspace_id, *user_id)
                    .await?
                    .ok_or_else(not_a_member)?;
                (*workspace_id, member.role, user_id.to_string())
            }
            Identity::User { user_id, .. } => {
                let workspace_id = match requested {
                    Some(id) => id,
                    None => self
                        .store
                        .memberships(*user_id)
                        .await?
                        .first()
                        .map(|m| m.workspace_id)
                        .ok_or_else(|| {
                            Error::validation(
                                "workspaceId",
                                "required: you are not a member of any workspace yet",
                            )
                        })?,
                };
                // The same answer for a workspace that does not exist and one that is not
                // theirs: ids cannot be probed.
                let member = self
                    .store
                    .member_of(workspace_id, *user_id)
                    .await?
                    .ok_or_else(not_a_member)?;
                (workspace_id, member.role, user_id.to_string())
            }
        };
        if !role.allows(need) {
            return Err(forbidden_role(role, need));
        }
        Ok(Caller {
            workspace_id,
            role,
            user_id,
            rate: who.rate.clone(),
            source: who.source,
        })
    }
}

pub fn not_a_member() -> Error {
    Error::Forbidden("you are not a member of this workspace".to_string())
}

pub fn forbidden_role(role: Role, need: Need) -> Error {
    Error::Forbidden(format!(
        "your role ({role}) may not {}; ask an owner or admin",
        need.describe()
    ))
}
