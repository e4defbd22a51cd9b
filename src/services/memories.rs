//! The memories service: saving with deduplication and version chains, listing, reading,
//! editing, deleting, forgetting and feedback. Every operation is confined to one lane
//! (workspace + scope) and admitted by the workspace's actor first.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use memvault_actors::{EndpointClass, Workspaces};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::{
    content_hash, normalize, now, to_micros, Category, FieldPatch, Lane, ListFilter, Memory,
    NewMemory, Rating, Source, NO_PROJECT,
};
use crate::services::{admit, Caller};
use crate::storage::{FeedbackRecord, Store, Superseded};

pub const MAX_SCOPE_CHARS: usize = 200;
pub const MAX_PROJECT_CHARS: usize = 100;
pub const MAX_SEARCH_CHARS: usize = 200;
pub const MAX_EXPLANATION_CHARS: usize = 1_000;
pub const DEFAULT_LIST_LIMIT: i64 = 20;
pub const DEFAULT_CATEGORY: Category = Category::Fact;

// ----- inputs -------------------------------------------------------------------------------

/// Body of `POST /api/memories`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateMemory {
    /// The memory, 1 to 10,000 characters.
    pub content: Option<String>,
    /// `preference`, `fact` (default), `decision` or `context`.
    pub category: Option<String>,
    /// Hard isolation boundary (at most 200 characters); omitted = the unscoped lane.
    pub scope: Option<String>,
    /// Secondary grouping inside the scope (at most 100 characters).
    pub project: Option<String>,
    /// ISO 8601 date-time from which the memory holds.
    pub valid_from: Option<String>,
    /// ISO 8601 date-time after which the memory counts as expired.
    pub valid_until: Option<String>,
    /// Id of the memory this one replaces: the new one becomes its next version.
    pub supersedes: Option<String>,
    /// Optional; when given it must be the key's workspace.
    pub workspace_id: Option<Uuid>,
}

/// Body of `PATCH /api/memories/{id}`. A new `content` makes a new version; the other fields
/// are edited in place. `null` clears `validFrom` / `validUntil`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateMemory {
    pub content: Option<String>,
    pub category: Option<String>,
    /// A project name, or `null` / `""` for none.
    #[serde(default, deserialize_with = "explicit")]
    #[schema(value_type = Option<String>)]
    pub project: Option<Option<String>>,
    #[serde(default, deserialize_with = "explicit")]
    #[schema(value_type = Option<String>)]
    pub valid_from: Option<Option<String>>,
    #[serde(default, deserialize_with = "explicit")]
    #[schema(value_type = Option<String>)]
    pub valid_until: Option<Option<String>>,
    pub workspace_id: Option<Uuid>,
}

/// Distinguishes a field set to `null` (`Some(None)`) from an absent one (`None`).
fn explicit<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Query of `GET /api/memories`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Page size, 1 to 100 (default 20).
    pub limit: Option<String>,
    /// Offset, 0 or more (default 0).
    pub offset: Option<String>,
    /// Comma-separated categories.
    pub category: Option<String>,
    /// The lane; omitted = unscoped memories only.
    pub scope: Option<String>,
    /// Comma-separated projects; `__memvault_no_project__` selects memories without one.
    pub project: Option<String>,
    /// Case-insensitive substring of the content (at most 200 characters).
    pub search: Option<String>,
    /// `true` to include memories whose `validUntil` has passed.
    pub include_expired: Option<String>,
    pub workspace_id: Option<Uuid>,
}

/// Query of the single-memory endpoints.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ScopeParams {
    /// The lane of the memory; omitted = the unscoped lane.
    pub scope: Option<String>,
    pub workspace_id: Option<Uuid>,
}

/// Body of `POST /api/memories/{id}/feedback`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackInput {
    /// `helpful`, `not_helpful`, `outdated` (expires the memory now) or `wrong` (excluded from
    /// search and profile until its content changes).
    pub rating: Option<String>,
    /// At most 1,000 characters.
    pub explanation: Option<String>,
    pub workspace_id: Option<Uuid>,
}

/// Body of `POST /api/memories/{id}/forget`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForgetInput {
    /// Why (kept in logs), at most 1,000 characters.
    pub reason: Option<String>,
}

// ----- outputs ------------------------------------------------------------------------------

/// The full memory record.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MemoryView {
    pub id: Uuid,
    pub user_id: String,
    pub content: String,
    pub source: Source,
    pub is_current: bool,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub category: Category,
    pub scope: Option<String>,
    pub project: Option<String>,
    pub supersedes_id: Option<Uuid>,
    pub root_id: Uuid,
    pub valid_from: Option<DateTime<Utc>>,
    pub valid_until: Option<DateTime<Utc>>,
}

fn none_if_empty(value: &str) -> Option<String> {
    (!value.is_empty()).then(|| value.to_string())
}

impl From<&Memory> for MemoryView {
    fn from(m: &Memory) -> Self {
        MemoryView {
            id: m.id,
            user_id: m.user_id.clone(),
            content: m.content.clone(),
            source: m.source,
            is_current: m.is_current,
            version: m.version,
            created_at: m.created_at,
            category: m.category,
            scope: none_if_empty(&m.scope),
            project: none_if_empty(&m.project),
            supersedes_id: m.supersedes_id,
            root_id: m.root_id,
            valid_from: m.valid_from,
            valid_until: m.valid_until,
        }
    }
}

/// A memory in a list.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MemoryListItem {
    pub id: Uuid,
    pub content: String,
    pub source: Source,
    pub created_at: DateTime<Utc>,
    pub category: Category,
    pub scope: Option<String>,
    pub project: Option<String>,
    pub version: i64,
    pub valid_from: Option<DateTime<Utc>>,
    pub valid_until: Option<DateTime<Utc>>,
}

impl From<&Memory> for MemoryListItem {
    fn from(m: &Memory) -> Self {
        MemoryListItem {
            id: m.id,
            content: m.content.clone(),
            source: m.source,
            created_at: m.created_at,
            category: m.category,
            scope: none_if_empty(&m.scope),
            project: none_if_empty(&m.project),
            version: m.version,
            valid_from: m.valid_from,
            valid_until: m.valid_until,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryList {
    pub memories: Vec<MemoryListItem>,
    /// How many memories match the filters.
    pub total: i64,
    /// Whether more exist beyond this page.
    pub has_more: bool,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SaveStatus {
    /// A new memory was stored.
    Created,
    /// The same content already exists in this scope and project: that memory is returned and
    /// nothing new is stored.
    Duplicate,
    /// The memory was stored as the next version of an existing one.
    Superseded,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SaveResult {
    pub memory: MemoryView,
    pub status: SaveStatus,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    pub id: Uuid,
    pub content: String,
    pub version: i64,
    pub created_at: DateTime<Utc>,
}

impl From<&Memory> for HistoryEntry {
    fn from(m: &Memory) -> Self {
        HistoryEntry {
            id: m.id,
            content: m.content.clone(),
            version: m.version,
            created_at: m.created_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct History {
    /// The current version (or, when it was deleted, the newest remaining one).
    pub current: HistoryEntry,
    /// Earlier versions, newest first.
    pub history: Vec<HistoryEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Success {
    pub success: bool,
}

// ----- validation ---------------------------------------------------------------------------

fn chars(value: &str) -> usize {
    value.chars().count()
}

/// The lane named by an optional `scope` (absent or empty = unscoped).
pub fn lane(caller: &Caller, scope: Option<&str>) -> Result<Lane> {
    let scope = scope.unwrap_or_default();
    if chars(scope) > MAX_SCOPE_CHARS {
        return Err(Error::validation(
            "scope",
            format!("must be at most {MAX_SCOPE_CHARS} characters"),
        ));
    }
    Ok(Lane {
        workspace_id: caller.workspace_id,
        scope: scope.to_string(),
    })
}

fn content(value: Option<&str>, max: usize) -> Result<String> {
    let value = value.ok_or_else(|| Error::validation("content", "is required"))?;
    if value.trim().is_empty() {
        return Err(Error::validation("content", "must not be empty"));
    }
    if chars(value) > max {
        return Err(Error::validation(
            "content",
            format!("must be at most {max} characters"),
        ));
    }
    Ok(value.to_string())
}

fn parse_category(value: &str) -> Result<Category> {
    value.parse::<Category>().map_err(|()| {
        Error::validation(
            "category",
            format!("'{value}' is not one of {}", Category::expected()),
        )
    })
}

fn category(value: Option<&str>) -> Result<Option<Category>> {
    value.map(parse_category).transpose()
}

fn project(value: Option<&str>) -> Result<String> {
    let value = value.unwrap_or_default();
    if chars(value) > MAX_PROJECT_CHARS {
        return Err(Error::validation(
            "project",
            format!("must be at most {MAX_PROJECT_CHARS} characters"),
        ));
    }
    if value == NO_PROJECT {
        return Err(Error::validation(
            "project",
            format!("'{NO_PROJECT}' is reserved for list filters"),
        ));
    }
    Ok(value.to_string())
}

fn timestamp(field: &str, value: Option<&str>) -> Result<Option<DateTime<Utc>>> {
    value
        .map(|v| {
            DateTime::parse_from_rfc3339(v)
                .map(|at| at.with_timezone(&Utc))
                .map(|at| crate::model::from_micros(to_micros(at)))
                .map_err(|_| {
                    Error::validation(field, format!("'{v}' is not an ISO 8601 date-time"))
                })
        })
        .transpose()
}

fn validity(from: Option<DateTime<Utc>>, until: Option<DateTime<Utc>>) -> Result<()> {
    match (from, until) {
        (Some(from), Some(until)) if from >= until => Err(Error::validation(
            "validUntil",
            "must be later than validFrom",
        )),
        _ => Ok(()),
    }
}

fn memory_id(field: &str, value: &str) -> Result<Uuid> {
    Uuid::parse_str(value).map_err(|_| Error::validation(field, format!("'{value}' is not a UUID")))
}

fn int_param(field: &str, value: Option<&str>, default: i64, min: i64, max: i64) -> Result<i64> {
    let Some(raw) = value else { return Ok(default) };
    let parsed: i64 = raw
        .trim()
        .parse()
        .map_err(|_| Error::validation(field, format!("'{raw}' is not an integer")))?;
    if parsed < min || parsed > max {
        return Err(Error::validation(
            field,
            format!("must be between {min} and {max}"),
        ));
    }
    Ok(parsed)
}

fn bool_param(field: &str, value: Option<&str>) -> Result<bool> {
    match value.map(str::trim) {
        None | Some("") | Some("false") | Some("0") => Ok(false),
        Some("true") | Some("1") => Ok(true),
        Some(other) => Err(Error::validation(
            field,
            format!("'{other}' is not true or false"),
        )),
    }
}

fn comma_list(value: Option<&str>) -> impl Iterator<Item = &str> {
    value
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
}

// ----- the service --------------------------------------------------------------------------

#[derive(Clone)]
pub struct MemoryService {
    store: Arc<dyn Store>,
    workspaces: Workspaces,
    max_content_chars: usize,
}

impl MemoryService {
    pub fn new(store: Arc<dyn Store>, workspaces: Workspaces, max_content_chars: usize) -> Self {
        MemoryService {
            store,
            workspaces,
            max_content_chars,
        }
    }

    /// `POST /api/memories`.
    pub async fn create(
        &self,
        caller: &Caller,
        input: CreateMemory,
        source: Source,
    ) -> Result<SaveResult> {
        // Every request counts, valid or not. A new version (`supersedes`) leaves the count of
        // current memories unchanged, so only a plain save reserves a memory slot.
        let permit = admit(
            &self.workspaces,
            caller,
            EndpointClass::Save,
            input.supersedes.is_none(),
        )
        .await?;
        caller.check_workspace(input.workspace_id)?;
        let lane = lane(caller, input.scope.as_deref())?;
        let content = content(input.content.as_deref(), self.max_content_chars)?;
        let category = category(input.category.as_deref())?;
        let valid_from = timestamp("validFrom", input.valid_from.as_deref())?;
        let valid_until = timestamp("validUntil", input.valid_until.as_deref())?;
        validity(valid_from, valid_until)?;
        let supersedes = input
            .supersedes
            .as_deref()
            .map(|id| memory_id("supersedes", id))
            .transpose()?;
        let project_given = input.project.is_some();
        let project = project(input.project.as_deref())?;
        let mut memory = NewMemory {
            id: Uuid::now_v7(),
            workspace_id: caller.workspace_id,
            user_id: caller.user_id.clone(),
            content,
            source,
            category: category.unwrap_or(DEFAULT_CATEGORY),
            scope: lane.scope.clone(),
            project,
            valid_from,
            valid_until,
            created_at: now(),
        };

        if let Some(old_id) = supersedes {
            let old = self.store.memory(&lane, old_id).await?.ok_or_else(|| {
                Error::NotFound(format!("memory to supersede ({old_id}) not found"))
            })?;
            if !project_given {
                memory.project = old.project.clone();
            }
            if category.is_none() {
                memory.category = old.category;
            }
            return self.supersede(&lane, &old, memory).await;
        }

        // Insert first: a new memory costs one statement. The dedup index refuses a second
        // current memory with the same content in the lane, and only then is it looked up.
        if let Some(created) = self.store.insert_memory(&memory).await? {
            // Every other outcome drops the permit, which releases the slot.
            if let Some(permit) = permit {
                permit.finish(true);
            }
            return Ok(saved(&created, SaveStatus::Created));
        }
        let hash = content_hash(&memory.content_norm());
        match self
            .store
            .find_duplicate(&lane, &memory.project, &hash)
            .await?
        {
            Some(existing) if !existing.is_expired(memory.created_at) => {
                Ok(saved(&existing, SaveStatus::Duplicate))
            }
            // Saving again what had expired renews it as its next version.
            Some(expired) => self.supersede(&lane, &expired, memory).await,
            // The duplicate was deleted in between.
            None => Err(Error::Conflict(
                "a concurrent change to this memory won; retry".to_string(),
            )),
        }
    }

    async fn supersede(&self, lane: &Lane, old: &Memory, memory: NewMemory) -> Result<SaveResult> {
        let hash = content_hash(&memory.content_norm());
        if let Some(existing) = self
            .store
            .find_duplicate(lane, &memory.project, &hash)
            .await?
        {
            if existing.id != old.id || !old.is_expired(memory.created_at) {
                return Ok(saved(&existing, SaveStatus::Duplicate));
            }
        }
        match self.store.supersede(lane, old.id, &memory).await? {
            Superseded::Created(created) => Ok(saved(&created, SaveStatus::Superseded)),
            Superseded::Duplicate(existing) => Ok(saved(&existing, SaveStatus::Duplicate)),
            Superseded::NotFound => Err(Error::NotFound(format!(
                "memory to supersede ({}) not found",
                old.id
            ))),
            Superseded::NotCurrent => Err(not_current(old.id)),
        }
    }

    /// `GET /api/memories`.
    pub async fn list(&self, caller: &Caller, params: ListParams) -> Result<MemoryList> {
        admit(&self.workspaces, caller, EndpointClass::Read, false).await?;
        caller.check_workspace(params.workspace_id)?;
        let lane = lane(caller, params.scope.as_deref())?;
        let limit = int_param("limit", params.limit.as_deref(), DEFAULT_LIST_LIMIT, 1, 100)?;
        let offset = int_param("offset", params.offset.as_deref(), 0, 0, i64::MAX)?;
        let categories = comma_list(params.category.as_deref())
            .map(parse_category)
            .collect::<Result<Vec<_>>>()?;
        let projects = comma_list(params.project.as_deref())
            .map(|p| {
                if p == NO_PROJECT {
                    Ok(String::new())
                } else if chars(p) > MAX_PROJECT_CHARS {
                    Err(Error::validation(
                        "project",
                        format!("must be at most {MAX_PROJECT_CHARS} characters"),
                    ))
                } else {
                    Ok(p.to_string())
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let search = match params.search.as_deref() {
            Some(s) if chars(s) > MAX_SEARCH_CHARS => {
                return Err(Error::validation(
                    "search",
                    format!("must be at most {MAX_SEARCH_CHARS} characters"),
                ))
            }
            Some(s) => Some(normalize(s)).filter(|s| !s.is_empty()),
            None => None,
        };
        let include_expired = bool_param("includeExpired", params.include_expired.as_deref())?;
        let filter = ListFilter {
            lane,
            categories,
            projects,
            search,
            include_expired,
            now: now(),
            limit,
            offset,
        };
        let (page, total) = self.store.list_memories(&filter).await?;
        Ok(MemoryList {
            has_more: offset + (page.len() as i64) < total,
            memories: page.iter().map(MemoryListItem::from).collect(),
            total,
        })
    }

    /// `GET /api/memories/{id}`.
    pub async fn get(&self, caller: &Caller, id: &str, params: ScopeParams) -> Result<MemoryView> {
        admit(&self.workspaces, caller, EndpointClass::Read, false).await?;
        caller.check_workspace(params.workspace_id)?;
        let lane = lane(caller, params.scope.as_deref())?;
        let id = path_id(id)?;
        let memory = self
            .store
            .memory(&lane, id)
            .await?
            .ok_or_else(Error::memory_not_found)?;
        Ok(MemoryView::from(&memory))
    }

    /// `PATCH /api/memories/{id}`.
    pub async fn update(
        &self,
        caller: &Caller,
        id: &str,
        params: ScopeParams,
        input: UpdateMemory,
    ) -> Result<MemoryView> {
        admit(&self.workspaces, caller, EndpointClass::Write, false).await?;
        caller.check_workspace(params.workspace_id)?;
        caller.check_workspace(input.workspace_id)?;
        let lane = lane(caller, params.scope.as_deref())?;
        let id = path_id(id)?;
        let content = input
            .content
            .as_deref()
            .map(|c| content(Some(c), self.max_content_chars))
            .transpose()?;
        let patch = FieldPatch {
            category: category(input.category.as_deref())?,
            project: input
                .project
                .as_ref()
                .map(|p| project(p.as_deref()))
                .transpose()?,
            valid_from: input
                .valid_from
                .as_ref()
                .map(|v| timestamp("validFrom", v.as_deref()))
                .transpose()?,
            valid_until: input
                .valid_until
                .as_ref()
                .map(|v| timestamp("validUntil", v.as_deref()))
                .transpose()?,
        };
        if content.is_none() && patch.is_empty() {
            return Err(Error::validation(
                "body",
                "nothing to update: give content, category, project, validFrom or validUntil",
            ));
        }
        let current = self
            .store
            .memory(&lane, id)
            .await?
            .ok_or_else(Error::memory_not_found)?;
        if !current.is_current {
            return Err(not_current(id));
        }
        let valid_from = patch.valid_from.unwrap_or(current.valid_from);
        let valid_until = patch.valid_until.unwrap_or(current.valid_until);
        validity(valid_from, valid_until)?;

        match content.filter(|c| *c != current.content) {
            Some(content) => {
                let next = NewMemory {
                    id: Uuid::now_v7(),
                    workspace_id: caller.workspace_id,
                    user_id: caller.user_id.clone(),
                    content,
                    source: current.source,
                    category: patch.category.unwrap_or(current.category),
                    scope: lane.scope.clone(),
                    project: patch
                        .project
                        .clone()
                        .unwrap_or_else(|| current.project.clone()),
                    valid_from,
                    valid_until,
                    created_at: now(),
                };
                match self.store.supersede(&lane, id, &next).await? {
                    Superseded::Created(created) => Ok(MemoryView::from(&created)),
                    Superseded::Duplicate(existing) => Err(Error::Conflict(format!(
                        "memory {} already holds this content in this scope and project",
                        existing.id
                    ))),
                    Superseded::NotFound => Err(Error::memory_not_found()),
                    Superseded::NotCurrent => Err(not_current(id)),
                }
            }
            None if patch.is_empty() => Ok(MemoryView::from(&current)),
            None => match self
                .store
                .update_memory_fields(&lane, id, &patch, to_micros(now()))
                .await?
            {
                Some(updated) => Ok(MemoryView::from(&updated)),
                None => Err(not_current(id)),
            },
        }
    }

    /// `DELETE /api/memories/{id}`: soft-deletes this one memory.
    pub async fn delete(&self, caller: &Caller, id: &str, params: ScopeParams) -> Result<Success> {
        admit(&self.workspaces, caller, EndpointClass::Write, false).await?;
        caller.check_workspace(params.workspace_id)?;
        let lane = lane(caller, params.scope.as_deref())?;
        let id = path_id(id)?;
        let was_current = self
            .store
            .delete_memory(&lane, id, to_micros(now()))
            .await?
            .ok_or_else(Error::memory_not_found)?;
        if was_current {
            self.workspaces.memories_removed(caller.workspace_id, 1);
        }
        Ok(Success { success: true })
    }

    /// `POST /api/memories/{id}/forget`: soft-deletes the whole chain.
    pub async fn forget(
        &self,
        caller: &Caller,
        id: &str,
        params: ScopeParams,
        input: ForgetInput,
    ) -> Result<Success> {
        admit(&self.workspaces, caller, EndpointClass::Write, false).await?;
        caller.check_workspace(params.workspace_id)?;
        let lane = lane(caller, params.scope.as_deref())?;
        let id = path_id(id)?;
        if input
            .reason
            .as_deref()
            .is_some_and(|r| chars(r) > MAX_EXPLANATION_CHARS)
        {
            return Err(Error::validation(
                "reason",
                format!("must be at most {MAX_EXPLANATION_CHARS} characters"),
            ));
        }
        let removed = self
            .store
            .forget_chain(&lane, id, to_micros(now()))
            .await?
            .ok_or_else(Error::memory_not_found)?;
        tracing::info!(memory_id = %id, reason = input.reason.as_deref().unwrap_or(""), "memory chain forgotten");
        self.workspaces
            .memories_removed(caller.workspace_id, removed);
        Ok(Success { success: true })
    }

    /// `GET /api/memories/{id}/history`.
    pub async fn history(&self, caller: &Caller, id: &str, params: ScopeParams) -> Result<History> {
        admit(&self.workspaces, caller, EndpointClass::Read, false).await?;
        caller.check_workspace(params.workspace_id)?;
        let lane = lane(caller, params.scope.as_deref())?;
        let id = path_id(id)?;
        let memory = self
            .store
            .memory(&lane, id)
            .await?
            .ok_or_else(Error::memory_not_found)?;
        // Newest first; the current version is taken out, or the newest when it was deleted.
        let mut chain = self.store.chain(&lane, memory.root_id).await?;
        if chain.is_empty() {
            return Err(Error::memory_not_found());
        }
        let current = chain.remove(chain.iter().position(|m| m.is_current).unwrap_or(0));
        Ok(History {
            current: HistoryEntry::from(&current),
            history: chain.iter().map(HistoryEntry::from).collect(),
        })
    }

    /// `POST /api/memories/{id}/feedback`.
    pub async fn feedback(
        &self,
        caller: &Caller,
        id: &str,
        params: ScopeParams,
        input: FeedbackInput,
    ) -> Result<Success> {
        admit(&self.workspaces, caller, EndpointClass::Feedback, false).await?;
        caller.check_workspace(params.workspace_id)?;
        caller.check_workspace(input.workspace_id)?;
        let lane = lane(caller, params.scope.as_deref())?;
        let id = path_id(id)?;
        let rating = input
            .rating
            .as_deref()
            .ok_or_else(|| Error::validation("rating", "is required"))?;
        let rating = rating.parse::<Rating>().map_err(|()| {
            Error::validation(
                "rating",
                format!("'{rating}' is not one of {}", Rating::expected()),
            )
        })?;
        if input
            .explanation
            .as_deref()
            .is_some_and(|e| chars(e) > MAX_EXPLANATION_CHARS)
        {
            return Err(Error::validation(
                "explanation",
                format!("must be at most {MAX_EXPLANATION_CHARS} characters"),
            ));
        }
        let record = FeedbackRecord {
            id: Uuid::now_v7(),
            rating,
            explanation: input.explanation,
            at_micros: to_micros(now()),
        };
        if !self.store.record_feedback(&lane, id, &record).await? {
            return Err(Error::memory_not_found());
        }
        Ok(Success { success: true })
    }
}

fn saved(memory: &Memory, status: SaveStatus) -> SaveResult {
    SaveResult {
        memory: MemoryView::from(memory),
        status,
    }
}

fn not_current(id: Uuid) -> Error {
    Error::Conflict(format!(
        "memory {id} is not the current version of its chain; use its current version (see its history)"
    ))
}

/// A memory id from the path; a malformed one cannot name a memory, so it is a 404.
fn path_id(raw: &str) -> Result<Uuid> {
    Uuid::parse_str(raw).map_err(|_| Error::memory_not_found())
}
