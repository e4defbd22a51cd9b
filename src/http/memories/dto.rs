//! The memories' wire types (camelCase JSON): bodies and query parameters, parsed here into the
//! service's inputs, and the views of a memory, a list, a save, a search, a graph, a job.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::model::{Category, Memory, Ranking, Rating, Source};
use crate::services::memories::{
    self as service, forget_reason, none_if_empty, Chain, CreateOutcome, Found, GraphQuery,
    ListFields, ListQuery, MemoryAt, MemoryEdit, MemoryPage, MemoryRecord, NewFeedback, NewSave,
    NoteAccepted, NoteJob, NotePart, Parsed, ProfileQuery, Save, SaveFields, Saved, SearchFields,
    SearchQuery,
};

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

impl CreateMemory {
    /// The save parsed (`content` at most `max_content_chars`); the service answers its refusal
    /// once the request is admitted (a refused save counts against the rate limit).
    pub fn parse(self, max_content_chars: usize) -> Save {
        let fields = SaveFields {
            content: self.content,
            category: self.category,
            scope: self.scope,
            project: self.project,
            valid_from: self.valid_from,
            valid_until: self.valid_until,
            supersedes: self.supersedes,
            infer: self.infer,
            thread: self.thread,
            speaker: self.speaker,
        };
        Save {
            workspace_id: self.workspace_id,
            new_version: fields.supersedes.is_some(),
            memory: NewSave::parse(&fields, max_content_chars),
        }
    }
}

impl UpdateMemory {
    pub fn parse(&self, max_content_chars: usize) -> Parsed<MemoryEdit> {
        MemoryEdit::parse(
            self.content.as_deref(),
            self.category.as_deref(),
            self.project.as_ref().map(Option::as_deref),
            self.valid_from.as_ref().map(Option::as_deref),
            self.valid_until.as_ref().map(Option::as_deref),
            max_content_chars,
        )
    }
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

impl ListParams {
    pub fn parse(&self) -> Parsed<ListQuery> {
        ListQuery::parse(ListFields {
            limit: self.limit.as_deref(),
            offset: self.offset.as_deref(),
            category: self.category.as_deref(),
            scope: self.scope.as_deref(),
            project: self.project.as_deref(),
            search: self.search.as_deref(),
            include_expired: self.include_expired.as_deref(),
            thread: self.thread.as_deref(),
        })
    }
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

impl ScopeParams {
    /// The memory `id` (from the path) in this lane.
    pub fn at(&self, id: &str) -> Parsed<MemoryAt> {
        MemoryAt::parse(self.scope.as_deref(), id)
    }
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

impl FeedbackInput {
    pub fn parse(self) -> Parsed<NewFeedback> {
        NewFeedback::parse(self.rating.as_deref(), self.explanation)
    }
}

/// Body of `POST /api/memories/{id}/forget`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForgetInput {
    /// Why (kept in logs), at most 1,000 characters.
    #[schema(max_length = 1000)]
    pub reason: Option<String>,
}

impl ForgetInput {
    pub fn parse(self) -> Parsed<Option<String>> {
        forget_reason(self.reason)
    }
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

impl From<MemoryRecord> for MemoryView {
    fn from(r: MemoryRecord) -> Self {
        MemoryView {
            id: r.id,
            user_id: r.user_id,
            content: r.content,
            source: r.source,
            is_current: r.is_current,
            version: r.version,
            created_at: r.created_at,
            category: r.category,
            scope: r.scope,
            project: r.project,
            supersedes_id: r.supersedes_id,
            root_id: r.root_id,
            valid_from: r.valid_from,
            valid_until: r.valid_until,
            thread: r.thread,
            speaker: r.speaker,
        }
    }
}

impl From<&Memory> for MemoryView {
    fn from(m: &Memory) -> Self {
        MemoryView::from(MemoryRecord::from(m))
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

impl From<MemoryPage> for MemoryList {
    fn from(page: MemoryPage) -> Self {
        MemoryList {
            memories: page.memories.iter().map(MemoryListItem::from).collect(),
            total: page.total,
            has_more: page.has_more,
        }
    }
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

impl From<service::SaveStatus> for SaveStatus {
    fn from(status: service::SaveStatus) -> Self {
        match status {
            service::SaveStatus::Created => SaveStatus::Created,
            service::SaveStatus::Duplicate => SaveStatus::Duplicate,
            service::SaveStatus::Superseded => SaveStatus::Superseded,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SaveResult {
    pub memory: MemoryView,
    pub status: SaveStatus,
}

impl From<Saved> for SaveResult {
    fn from(saved: Saved) -> Self {
        SaveResult {
            memory: MemoryView::from(&saved.memory),
            status: saved.status.into(),
        }
    }
}

/// What `POST /api/memories` answers: a save (201) or a job (202).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum SaveAnswer {
    /// Boxed: a memory view is several times the size of a job's answer.
    Saved(Box<SaveResult>),
    Accepted(JobAccepted),
}

impl From<CreateOutcome> for SaveAnswer {
    fn from(outcome: CreateOutcome) -> Self {
        match outcome {
            CreateOutcome::Saved(saved) => SaveAnswer::Saved(Box::new((*saved).into())),
            CreateOutcome::Accepted(note) => SaveAnswer::Accepted(note.into()),
        }
    }
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

impl From<Chain> for History {
    fn from(chain: Chain) -> Self {
        History {
            current: HistoryEntry::from(&chain.current),
            history: chain.history.iter().map(HistoryEntry::from).collect(),
        }
    }
}

// ----- search -------------------------------------------------------------------------------

/// Query of `GET /api/memories/search`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// What to look for, 1 to 1,000 characters (not only blanks).
    #[param(value_type = String, required = true, min_length = 1, max_length = 1000, pattern = r"\S")]
    pub q: Option<String>,
    /// Results wanted, 1 to 50 (default 10).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 50)]
    pub limit: Option<String>,
    /// The lane; omitted = unscoped memories only. A hard wall.
    #[param(max_length = 200)]
    pub scope: Option<String>,
    /// Comma-separated projects (each at most 100 characters); `__memvault_no_project__`
    /// selects memories without one.
    pub project: Option<String>,
    /// Comma-separated categories.
    #[param(
        pattern = r"^\s*(?:(?:preference|fact|decision|context)\s*)?(?:,\s*(?:(?:preference|fact|decision|context)\s*)?)*$"
    )]
    pub category: Option<String>,
    /// `hybrid` (default: keywords and meaning fused), `keyword` (BM25 only) or `semantic`
    /// (vectors only).
    #[param(value_type = Option<Ranking>)]
    pub mode: Option<String>,
    pub workspace_id: Option<Uuid>,
}

/// A search result: the memory as listed, with its relevance.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    #[serde(flatten)]
    pub memory: MemoryListItem,
    /// Relevance in [0, 1]: higher is better.
    pub score: f32,
}

impl SearchParams {
    pub fn parse(&self) -> Parsed<SearchQuery> {
        SearchQuery::parse(SearchFields {
            q: self.q.as_deref(),
            limit: self.limit.as_deref(),
            scope: self.scope.as_deref(),
            project: self.project.as_deref(),
            category: self.category.as_deref(),
            mode: self.mode.as_deref(),
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SearchResults {
    /// Best first.
    pub results: Vec<SearchHit>,
    /// How many results are returned.
    pub total: i64,
}

impl From<Vec<Found>> for SearchResults {
    fn from(found: Vec<Found>) -> Self {
        let results: Vec<SearchHit> = found
            .into_iter()
            .map(|hit| SearchHit {
                memory: MemoryListItem::from(&hit.memory),
                score: hit.score,
            })
            .collect();
        SearchResults {
            total: results.len() as i64,
            results,
        }
    }
}

// ----- profile ------------------------------------------------------------------------------

/// Query of `GET /api/memories/profile`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ProfileParams {
    /// The lane; omitted = unscoped memories only.
    #[param(max_length = 200)]
    pub scope: Option<String>,
    /// Limits the profile to one project of the scope (at most 100 characters).
    #[param(max_length = 100)]
    pub project: Option<String>,
    pub workspace_id: Option<Uuid>,
}

impl ProfileParams {
    pub fn parse(&self) -> Parsed<ProfileQuery> {
        ProfileQuery::parse(self.scope.as_deref(), self.project.as_deref())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct Profile {
    /// Stable preferences and facts, most recent first.
    #[serde(rename = "static")]
    pub static_lines: Vec<String>,
    /// Context and decisions of the last 14 days, most recent first.
    #[serde(rename = "dynamic")]
    pub dynamic_lines: Vec<String>,
}

impl From<service::Profile> for Profile {
    fn from(profile: service::Profile) -> Self {
        Profile {
            static_lines: profile.static_lines,
            dynamic_lines: profile.dynamic_lines,
        }
    }
}

// ----- graph --------------------------------------------------------------------------------

/// Query of `GET /api/memories/graph`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct GraphParams {
    /// The lane; omitted = unscoped memories only.
    #[param(max_length = 200)]
    pub scope: Option<String>,
    /// Nodes, 1 to 500 (default 100): the most recent current memories.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 500)]
    pub limit: Option<String>,
    pub workspace_id: Option<Uuid>,
}

impl GraphParams {
    pub fn parse(&self) -> Parsed<GraphQuery> {
        GraphQuery::parse(self.scope.as_deref(), self.limit.as_deref())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GraphNode {
    pub id: String,
    /// The start of the content.
    pub label: String,
    pub content: String,
    pub created_at: DateTime<Utc>,
    /// Links touching this node.
    pub degree: i64,
    pub category: String,
    pub scope: Option<String>,
    pub project: Option<String>,
    pub root_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GraphLink {
    pub id: String,
    pub source: String,
    pub target: String,
    /// `similar` (derived), `same_note` or `same_entity`.
    #[serde(rename = "type")]
    pub kind: String,
    pub derived: bool,
    /// Cosine similarity for derived links, 1 for relations.
    pub strength: f32,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GraphMeta {
    pub total_nodes: i64,
    pub total_links: i64,
    pub relation_links: i64,
    pub derived_links: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct Graph {
    pub nodes: Vec<GraphNode>,
    pub links: Vec<GraphLink>,
    pub meta: GraphMeta,
}

impl From<service::Graph> for Graph {
    fn from(graph: service::Graph) -> Self {
        let service::GraphMeta {
            total_nodes,
            total_links,
            relation_links,
            derived_links,
        } = graph.meta;
        Graph {
            nodes: graph.nodes.into_iter().map(GraphNode::from).collect(),
            links: graph.links.into_iter().map(GraphLink::from).collect(),
            meta: GraphMeta {
                total_nodes,
                total_links,
                relation_links,
                derived_links,
            },
        }
    }
}

impl From<service::GraphNode> for GraphNode {
    fn from(n: service::GraphNode) -> Self {
        GraphNode {
            id: n.id,
            label: n.label,
            content: n.content,
            created_at: n.created_at,
            degree: n.degree,
            category: n.category,
            scope: n.scope,
            project: n.project,
            root_id: n.root_id,
        }
    }
}

impl From<service::GraphLink> for GraphLink {
    fn from(l: service::GraphLink) -> Self {
        GraphLink {
            id: l.id,
            source: l.source,
            target: l.target,
            kind: l.kind,
            derived: l.derived,
            strength: l.strength,
        }
    }
}

// ----- long-note jobs -----------------------------------------------------------------------

/// Answer of a save that went the 202 way.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobAccepted {
    pub job_id: Uuid,
    pub message: String,
}

/// One atomic memory a job made (or found).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobPart {
    /// `created`, `duplicate` or `superseded`; absent when the part was refused.
    pub status: Option<SaveStatus>,
    pub memory: Option<MemoryView>,
    /// Why a part was refused (e.g. the plan's memory limit).
    pub error: Option<String>,
    /// The atomic text the part was made from.
    pub content: String,
}

/// `GET /api/memories/jobs/{jobId}`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobView {
    pub job_id: Uuid,
    /// `queued`, `running`, `completed` or `failed`.
    pub state: String,
    pub attempts: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Why the job failed.
    pub error: Option<String>,
    /// When completed: the memories made from the note, in note order.
    pub memories: Vec<JobPart>,
}

impl From<NoteAccepted> for JobAccepted {
    fn from(note: NoteAccepted) -> Self {
        JobAccepted {
            job_id: note.job_id,
            message: format!(
                "the note is long ({} characters): it is being split into atomic memories; \
                 follow GET /api/memories/jobs/{}",
                note.chars, note.job_id
            ),
        }
    }
}

impl From<NotePart> for JobPart {
    fn from(part: NotePart) -> Self {
        JobPart {
            status: part.status.map(SaveStatus::from),
            memory: part.memory.map(MemoryView::from),
            error: part.error,
            content: part.content,
        }
    }
}

impl From<NoteJob> for JobView {
    fn from(NoteJob { job, parts }: NoteJob) -> Self {
        JobView {
            job_id: job.id,
            state: job.state,
            attempts: job.attempts,
            created_at: job.created_at,
            updated_at: job.updated_at,
            finished_at: job.finished_at,
            error: job.error,
            memories: parts.into_iter().map(JobPart::from).collect(),
        }
    }
}
