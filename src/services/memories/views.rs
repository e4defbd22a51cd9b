//! What the memories endpoints accept and answer (camelCase JSON): request bodies and query
//! parameters, and the views of a memory, a list, a save, a history.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::model::{Category, Memory, Rating, Source};

// ----- inputs -------------------------------------------------------------------------------

/// Body of `POST /api/memories`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateMemory {
    /// The memory, 1 to 10,000 characters (`max_content_chars`), not only blanks.
    #[schema(value_type = String, required = true, min_length = 1, max_length = 10000, pattern = r"\S")]
    pub content: Option<String>,
    /// `preference`, `fact` (default), `decision` or `context`.
    #[schema(value_type = Option<Category>)]
    pub category: Option<String>,
    /// Hard isolation boundary (at most 200 characters); omitted = the unscoped lane.
    #[schema(max_length = 200)]
    pub scope: Option<String>,
    /// Secondary grouping inside the scope (at most 100 characters).
    #[schema(max_length = 100)]
    pub project: Option<String>,
    /// ISO 8601 date-time from which the memory holds.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub valid_from: Option<String>,
    /// ISO 8601 date-time after which the memory counts as expired (later than `validFrom`).
    #[schema(value_type = Option<String>, format = DateTime)]
    pub valid_until: Option<String>,
    /// Id of the memory this one replaces: the new one becomes its next version.
    #[schema(value_type = Option<Uuid>)]
    pub supersedes: Option<String>,
    /// `true` (default): memvault infers what it can: near-duplicates, fact updates (automatic
    /// supersession), the category, and the split of a long note into atomic memories (202).
    /// `false`: the content is stored as given (transcripts, logs); only exact duplicates are
    /// still caught.
    pub infer: Option<bool>,
    /// The conversation or session this memory comes from (at most 200 characters), e.g. a
    /// chat id. Memories of one thread in a scope are its turns, in the order saved: search
    /// ranks each with its neighbours' context (an answer is found by its question).
    #[schema(max_length = 200)]
    pub thread: Option<String>,
    /// Who said or wrote it (a chat participant's name, at most 100 characters). A search
    /// whose query names some of a scope's speakers ranks the others' memories lower.
    #[schema(max_length = 100)]
    pub speaker: Option<String>,
    /// Optional; when given it must be the key's workspace.
    pub workspace_id: Option<Uuid>,
}

/// Body of `PATCH /api/memories/{id}`. A new `content` makes a new version; the other fields
/// are edited in place. `null` clears `validFrom` / `validUntil`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateMemory {
    /// New content (a new version), 1 to 10,000 characters, not only blanks.
    #[schema(min_length = 1, max_length = 10000, pattern = r"\S")]
    pub content: Option<String>,
    #[schema(value_type = Option<Category>)]
    pub category: Option<String>,
    /// A project name (at most 100 characters), or `null` / `""` for none.
    #[serde(default, deserialize_with = "explicit")]
    #[schema(value_type = Option<String>, max_length = 100)]
    pub project: Option<Option<String>>,
    #[serde(default, deserialize_with = "explicit")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub valid_from: Option<Option<String>>,
    #[serde(default, deserialize_with = "explicit")]
    #[schema(value_type = Option<String>, format = DateTime)]
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
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// Offset, 0 or more (default 0).
    #[param(value_type = Option<i64>, minimum = 0, maximum = 2147483647)]
    pub offset: Option<String>,
    /// Comma-separated categories.
    #[param(
        pattern = r"^\s*(?:(?:preference|fact|decision|context)\s*)?(?:,\s*(?:(?:preference|fact|decision|context)\s*)?)*$"
    )]
    pub category: Option<String>,
    /// The lane; omitted = unscoped memories only.
    #[param(max_length = 200)]
    pub scope: Option<String>,
    /// Comma-separated projects (each at most 100 characters); `__memvault_no_project__`
    /// selects memories without one.
    pub project: Option<String>,
    /// Case-insensitive substring of the content (at most 200 characters).
    #[param(max_length = 200)]
    pub search: Option<String>,
    /// `true` to include memories whose `validUntil` has passed.
    #[param(value_type = Option<bool>)]
    pub include_expired: Option<String>,
    /// Only the memories of this thread (a conversation or session), newest first.
    #[param(max_length = 200)]
    pub thread: Option<String>,
    pub workspace_id: Option<Uuid>,
}

/// Query of the single-memory endpoints.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ScopeParams {
    /// The lane of the memory; omitted = the unscoped lane.
    #[param(max_length = 200)]
    pub scope: Option<String>,
    pub workspace_id: Option<Uuid>,
}

/// Body of `POST /api/memories/{id}/feedback`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackInput {
    /// `helpful`, `not_helpful`, `outdated` (expires the memory now) or `wrong` (excluded from
    /// search and profile until its content changes).
    #[schema(value_type = Rating, required = true)]
    pub rating: Option<String>,
    /// At most 1,000 characters.
    #[schema(max_length = 1000)]
    pub explanation: Option<String>,
    pub workspace_id: Option<Uuid>,
}

/// Body of `POST /api/memories/{id}/forget`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForgetInput {
    /// Why (kept in logs), at most 1,000 characters.
    #[schema(max_length = 1000)]
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
    /// The conversation or session it was saved from, when given.
    pub thread: Option<String>,
    /// Who said or wrote it, when given.
    pub speaker: Option<String>,
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
            thread: none_if_empty(&m.thread),
            speaker: none_if_empty(&m.speaker),
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
    /// The conversation or session it was saved from, when given.
    pub thread: Option<String>,
    /// Who said or wrote it, when given.
    pub speaker: Option<String>,
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
            thread: none_if_empty(&m.thread),
            speaker: none_if_empty(&m.speaker),
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
