//! `GET /api/memories/profile`: what an assistant should know about a user (or team) at a
//! glance, in two parts:
//!
//! - `static`: stable preferences and facts (categories `preference` and `fact`), most recent
//!   first;
//! - `dynamic`: recent context and decisions (categories `context` and `decision`) saved in
//!   the last 14 days, most recent first.
//!
//! Both hold current memories only: not deleted, superseded, expired or rated `wrong`, capped
//! at `profile_lines` lines each (50). The result is cached in the workspace's actor and
//! dropped by any write in that scope.

use std::sync::Arc;

use chrono::Duration;
use memvault_actors::{CachedProfile, EndpointClass, ProfileKey};
use uuid::Uuid;

use super::{MemoryService, Parsed, ProfileQuery};
use crate::error::Result;
use crate::model::accounts::Need;
use crate::model::{now, Category, Lane, ListFilter};
use crate::services::{admit, Principal};

/// The window of the dynamic part.
pub const DYNAMIC_DAYS: i64 = 14;

/// A lane's profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Stable preferences and facts, most recent first.
    pub static_lines: Vec<String>,
    /// Context and decisions of the last 14 days, most recent first.
    pub dynamic_lines: Vec<String>,
}

impl MemoryService {
    /// `GET /api/memories/profile`.
    pub async fn profile(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        query: Parsed<ProfileQuery>,
    ) -> Result<Profile> {
        let caller = &self.gate.enter(who, workspace_id, Need::Read).await?;
        admit(&self.workspaces, caller, EndpointClass::Read, false).await?;
        let ProfileQuery { scope, project } = query?;
        let lane = scope.lane(caller);
        let key = ProfileKey {
            scope: lane.scope.clone(),
            project: project.clone(),
        };
        let lookup = self
            .workspaces
            .profile(caller.workspace_id, key.clone())
            .await?;
        if let Some(cached) = lookup.profile {
            return Ok(Profile {
                static_lines: cached.static_lines.clone(),
                dynamic_lines: cached.dynamic_lines.clone(),
            });
        }
        let profile = self.compute_profile(&lane, project).await?;
        self.workspaces.cache_profile(
            caller.workspace_id,
            key,
            lookup.generation,
            Arc::new(CachedProfile {
                static_lines: profile.static_lines.clone(),
                dynamic_lines: profile.dynamic_lines.clone(),
            }),
        );
        Ok(profile)
    }

    async fn compute_profile(&self, lane: &Lane, project: Option<String>) -> Result<Profile> {
        let at = now();
        let part = |categories: Vec<Category>, since| ListFilter {
            lane: lane.clone(),
            categories,
            projects: project.iter().cloned().collect(),
            search: None,
            include_expired: false,
            exclude_wrong: true,
            created_since: since,
            thread: None,
            now: at,
            limit: self.tuning.profile_lines as i64,
            offset: 0,
        };
        let (stable, _) = self
            .store
            .list_memories(&part(vec![Category::Preference, Category::Fact], None))
            .await?;
        let (recent, _) = self
            .store
            .list_memories(&part(
                vec![Category::Context, Category::Decision],
                Some(at - Duration::days(DYNAMIC_DAYS)),
            ))
            .await?;
        Ok(Profile {
            static_lines: stable.into_iter().map(|m| m.content).collect(),
            dynamic_lines: recent.into_iter().map(|m| m.content).collect(),
        })
    }
}
