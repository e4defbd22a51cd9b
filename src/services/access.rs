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

    /// The workspace a request will act in, as far as it can be told before the request is
    /// served (a cluster routes by it): a key's or connector's own, else the one named, else a
    /// signed-in user's only workspace. `None` when that takes the request itself to decide
    /// (the service then answers as [`Gate::enter`] does). Nothing is authorised here.
    pub async fn home(&self, identity: &Identity, named: Option<Uuid>) -> Result<Option<Uuid>> {
        match identity {
            Identity::Key { workspace_id, .. } | Identity::Token { workspace_id, .. } => {
                Ok(Some(*workspace_id))
            }
            Identity::User { user_id, .. } => {
                let memberships = self.store.memberships(*user_id).await?;
                Ok(match (named, memberships.as_slice()) {
                    // Only a workspace the user is a member of (else the request is refused
                    // where it arrived, and no node takes someone else's workspace for it).
                    (Some(named), _) => memberships
                        .iter()
                        .any(|m| m.workspace_id == named)
                        .then_some(named),
                    (None, [only]) => Some(only.workspace_id),
                    (None, _) => None,
                })
            }
        }
    }

    /// The caller acting in the requested workspace, when their role there allows `need`.
    /// `requested` is what the body, form or path names; the query string's `workspaceId`
    /// (`who.addressed`) must agree with it (else 400). A key or connector acts in its own
    /// workspace (naming another is 403); a signed-in user in the one named, or, naming none,
    /// in their only workspace (a member of several must name one: 400). Never a fallback.
    pub async fn enter(
        &self,
        who: &Principal,
        requested: Option<Uuid>,
        need: Need,
    ) -> Result<Caller> {
        let requested = match (who.addressed, requested) {
            (Some(query), Some(named)) if query != named => {
                return Err(Error::validation(
                    "workspaceId",
                    "the query string and the request name different workspaces",
                ))
            }
            (query, named) => named.or(query),
        };
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
                    None => self.only_workspace(*user_id).await?,
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

impl Gate {
    /// The one workspace of a user who named none.
    async fn only_workspace(&self, user_id: Uuid) -> Result<Uuid> {
        let memberships = self.store.memberships(user_id).await?;
        match memberships.as_slice() {
            [only] => Ok(only.workspace_id),
            [] => Err(Error::validation(
                "workspaceId",
                "required: you are not a member of any workspace yet",
            )),
            many => Err(Error::validation(
                "workspaceId",
                format!(
                    "required: you belong to {} workspaces; name one in the query, body or form",
                    many.len()
                ),
            )),
        }
    }

    /// Before a large body is read (an upload): refuses a caller whose role allows `need` in
    /// no workspace they could name, and returns the admitted caller when the workspace is
    /// already known without the body (a key, a connector, the query string, a user's only
    /// workspace). `None`: a user of several workspaces who will name one in the body.
    pub async fn preflight(&self, who: &Principal, need: Need) -> Result<Option<Caller>> {
        if let Identity::User { user_id, .. } = &who.identity {
            if who.addressed.is_none() {
                let memberships = self.store.memberships(*user_id).await?;
                match memberships.as_slice() {
                    // The only workspace: entered by name, without asking again.
                    [only] => {
                        return self
                            .enter(who, Some(only.workspace_id), need)
                            .await
                            .map(Some)
                    }
                    [first, ..] => {
                        return match memberships.iter().find(|m| m.role.allows(need)) {
                            Some(_) => Ok(None),
                            None => Err(forbidden_role(first.role, need)),
                        }
                    }
                    [] => {}
                }
            }
        }
        self.enter(who, None, need).await.map(Some)
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
