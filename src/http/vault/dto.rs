//! The Context Vault's wire types (camelCase JSON): bodies and query parameters, parsed here
//! into the service's inputs, and the views of vaults, documents, memories and search results.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::model::vault::{
    Chunk, Document, DocumentEvent, DocumentSourceType, Evidence, MemoryType, Vault, VaultMemory,
    VaultSearchMode,
};
use crate::model::{Category, Ranking, Rating};
use crate::services::memories::none_if_empty;
use crate::services::vault::{
    fact_content, vault_id, vault_name, BrowseFields, BrowseQuery, CitedMemory, DocumentCitations,
    DocumentFields, DocumentHistory, DocumentPage, DocumentRemoved, DocumentTarget, Documents,
    FactPlacement, NewDocumentBody, NewDocumentInput, NewFact, Parsed, VaultFeedback, VaultFound,
    VaultMemories, VaultQuery, VaultQueryFields,
};

/// A vault: a named container of documents and facts in a workspace.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VaultView {
    pub id: Uuid,
    pub name: String,
    /// Used when a request names no `vaultId`.
    pub is_default: bool,
    pub created_at: DateTime<Utc>,
}

impl From<&Vault> for VaultView {
    fn from(v: &Vault) -> Self {
        VaultView {
            id: v.id,
            name: v.name.clone(),
            is_default: v.is_default,
            created_at: v.created_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct VaultList {
    pub vaults: Vec<VaultView>,
}

impl From<Vec<Vault>> for VaultList {
    fn from(vaults: Vec<Vault>) -> Self {
        VaultList {
            vaults: vaults.iter().map(VaultView::from).collect(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct VaultCreated {
    pub vault: VaultView,
}

impl From<Vault> for VaultCreated {
    fn from(vault: Vault) -> Self {
        VaultCreated {
            vault: VaultView::from(&vault),
        }
    }
}

/// Body of `POST /api/context-vault/vaults`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateVault {
    /// 1 to 100 characters (not only blanks), unique in the workspace.
    #[schema(value_type = String, required = true, min_length = 1, max_length = 100, pattern = r"\S")]
    pub name: Option<String>,
    pub workspace_id: Option<Uuid>,
}

impl CreateVault {
    pub fn parse(&self) -> Parsed<String> {
        vault_name(self.name.as_deref())
    }
}

/// A vault document (source) and where its processing is.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DocumentView {
    pub id: Uuid,
    pub vault_id: Uuid,
    /// As given: `pdf`, `markdown`, `text`, `docx`, `html`, `csv`, `xlsx`, `xls`, `ods`, an
    /// image type, `url` or `remote_file`.
    pub source_type: String,
    /// `pending`, `processing`, `retrying`, `completed`, `failed` or `cancelled`.
    pub status: String,
    pub chunk_count: i64,
    pub extracted_count: i64,
    pub total_chunks: i64,
    pub processed_chunks: i64,
    pub created_at: DateTime<Utc>,
    pub title: String,
    /// `parse`, `ocr`, `chunk`, `embed` or `extract`.
    pub processing_phase: Option<String>,
    /// Last recorded progress.
    pub heartbeat_at: Option<DateTime<Utc>>,
    pub scope: Option<String>,
    pub project: Option<String>,
    pub completed_at: Option<DateTime<Utc>>,
    /// Why it failed (or why the last attempt failed, while `retrying`).
    pub error: Option<String>,
    /// The address it was fetched from (URL documents).
    pub public_url: Option<String>,
    /// Generations run so far.
    pub attempts: i64,
}

impl From<&Document> for DocumentView {
    fn from(d: &Document) -> Self {
        DocumentView {
            id: d.id,
            vault_id: d.vault_id,
            source_type: d.source_type.clone(),
            status: d.status.as_str().to_string(),
            chunk_count: d.chunk_count,
            extracted_count: d.extracted_count,
            total_chunks: d.total_chunks,
            processed_chunks: d.processed_chunks,
            created_at: d.created_at,
            title: d.title.clone(),
            processing_phase: d.processing_phase.map(|p| p.as_str().to_string()),
            heartbeat_at: d.heartbeat_at,
            scope: none_if_empty(&d.scope),
            project: none_if_empty(&d.project),
            completed_at: d.completed_at,
            error: d.error.clone(),
            public_url: d.source_url.clone(),
            attempts: d.attempts,
        }
    }
}

/// `GET /api/context-vault/documents/{id}`: the document and its status history.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentDetail {
    pub document: DocumentView,
    /// Every status change, oldest first.
    pub history: Vec<DocumentEventView>,
}

impl From<DocumentHistory> for DocumentDetail {
    fn from(detail: DocumentHistory) -> Self {
        DocumentDetail {
            document: DocumentView::from(&detail.document),
            history: detail.history.iter().map(DocumentEventView::from).collect(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DocumentEventView {
    pub at: DateTime<Utc>,
    pub status: String,
    pub phase: Option<String>,
    pub attempt: i64,
    pub message: Option<String>,
}

impl From<&DocumentEvent> for DocumentEventView {
    fn from(e: &DocumentEvent) -> Self {
        DocumentEventView {
            at: e.at,
            status: e.status.clone(),
            phase: e.phase.clone(),
            attempt: e.attempt,
            message: e.message.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentList {
    pub documents: Vec<DocumentView>,
    pub total: i64,
    pub has_more: bool,
}

impl From<Documents> for DocumentList {
    fn from(page: Documents) -> Self {
        DocumentList {
            documents: page.documents.iter().map(DocumentView::from).collect(),
            total: page.total,
            has_more: page.has_more,
        }
    }
}

/// The 202 of an upload or a text/URL document.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentAccepted {
    pub document: DocumentView,
    pub chunk_count: i64,
    pub extracted_count: i64,
    /// Always `accepted`.
    pub status: String,
    pub message: String,
}

impl From<Document> for DocumentAccepted {
    fn from(document: Document) -> Self {
        DocumentAccepted {
            document: DocumentView::from(&document),
            chunk_count: document.chunk_count,
            extracted_count: document.extracted_count,
            status: "accepted".to_string(),
            message: format!(
                "document accepted; it is processed in the background (parse, ocr, chunk, embed, extract): follow GET /api/context-vault/documents/{}",
                document.id
            ),
        }
    }
}

/// Body of `POST /api/context-vault/documents`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateDocument {
    pub workspace_id: Option<Uuid>,
    #[schema(value_type = Option<Uuid>)]
    pub vault_id: Option<String>,
    /// At most 300 characters; defaults to the URL, or the first line of the content.
    #[schema(max_length = 300)]
    pub title: Option<String>,
    /// `text` (or `markdown`) with `content`; `url` or `remote_file` with `url`. Omitted:
    /// `url` when a `url` is given, else `text`.
    #[schema(value_type = Option<DocumentSourceType>)]
    pub source_type: Option<String>,
    /// The text of a `text` or `markdown` document (not only blanks).
    #[schema(pattern = r"\S")]
    pub content: Option<String>,
    /// What a `url` or `remote_file` document is fetched from (http or https, a public host).
    #[schema(pattern = r"^\s*[hH][tT][tT][pP][sS]?://")]
    pub url: Option<String>,
    #[schema(max_length = 200)]
    pub scope: Option<String>,
    #[schema(max_length = 100)]
    pub project: Option<String>,
}

impl CreateDocument {
    /// The vault, then the document (the service looks the vault up between the two).
    pub fn parse(&self) -> NewDocumentInput {
        NewDocumentInput {
            workspace_id: self.workspace_id,
            vault_id: vault_id(self.vault_id.as_deref()),
            body: NewDocumentBody::parse(DocumentFields {
                title: self.title.as_deref(),
                source_type: self.source_type.as_deref(),
                content: self.content.as_deref(),
                url: self.url.as_deref(),
                scope: self.scope.as_deref(),
                project: self.project.as_deref(),
            }),
        }
    }
}

/// Query naming a vault (and, for session callers, the workspace).
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct VaultParams {
    pub workspace_id: Option<Uuid>,
    /// The vault; omitted = the workspace's default vault.
    #[param(value_type = Option<Uuid>)]
    pub vault_id: Option<String>,
    /// The documents' lane (at most 200 characters); omitted = the unscoped lane. A document
    /// of another scope is not listed, and its id answers 404.
    #[param(max_length = 200)]
    pub scope: Option<String>,
    /// Page size, 1 to 100 (default 20).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// Offset, 0 or more.
    #[param(value_type = Option<i64>, minimum = 0, maximum = 2147483647)]
    pub offset: Option<String>,
}

impl VaultParams {
    pub fn vault(&self) -> Parsed<Option<Uuid>> {
        vault_id(self.vault_id.as_deref())
    }

    pub fn page(&self) -> Parsed<DocumentPage> {
        DocumentPage::parse(
            self.limit.as_deref(),
            self.offset.as_deref(),
            self.scope.as_deref(),
        )
    }
}

/// Query of a document's memories: its workspace, lane, and (optionally) its vault.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct DocumentMemoriesParams {
    pub workspace_id: Option<Uuid>,
    /// The document's vault, if the caller wants it checked (another vault's document is 404).
    #[param(value_type = Option<Uuid>)]
    pub vault_id: Option<String>,
    /// The document's scope; omitted = the unscoped lane.
    #[param(max_length = 200)]
    pub scope: Option<String>,
}

impl DocumentMemoriesParams {
    pub fn target(&self, id: &str) -> Parsed<DocumentTarget> {
        DocumentTarget::parse(self.scope.as_deref(), id)
    }

    /// The vault to check, when one is named.
    pub fn vault(&self) -> Parsed<Option<Uuid>> {
        vault_id(self.vault_id.as_deref())
    }
}

/// Where a document is addressed: its workspace and its lane.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct DocumentAt {
    pub workspace_id: Option<Uuid>,
    /// The document's scope; omitted = the unscoped lane. A document of another scope
    /// answers 404.
    #[param(max_length = 200)]
    pub scope: Option<String>,
}

impl DocumentAt {
    pub fn target(&self, id: &str) -> Parsed<DocumentTarget> {
        DocumentTarget::parse(self.scope.as_deref(), id)
    }
}

/// An evidence item: where a vault memory is stated.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceView {
    pub source_id: Uuid,
    pub chunk_id: Uuid,
    /// An exact substring of the chunk.
    pub quote: String,
    /// In [0, 1].
    pub confidence: f64,
    pub title: String,
    pub section_path: String,
    pub chunk_index: i64,
}

impl From<&Evidence> for EvidenceView {
    fn from(e: &Evidence) -> Self {
        EvidenceView {
            source_id: e.source_id,
            chunk_id: e.chunk_id,
            quote: e.quote.clone(),
            confidence: e.confidence,
            title: e.title.clone(),
            section_path: e.section_path.clone(),
            chunk_index: e.chunk_index,
        }
    }
}

/// A vault memory: extracted from documents (`document`) or curated (`company`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VaultMemoryView {
    pub id: Uuid,
    pub content: String,
    /// `document` or `company`.
    pub memory_type: String,
    pub created_at: DateTime<Utc>,
    pub category: Category,
    pub scope: Option<String>,
    pub project: Option<String>,
    pub source_id: Option<Uuid>,
    pub source_title: Option<String>,
    pub source_url: Option<String>,
    /// Citations, best first (empty for a curated fact with no document behind it).
    pub evidence: Vec<EvidenceView>,
    /// Search relevance in [0, 1] (search results only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relevance: Option<f32>,
}

impl From<&CitedMemory> for VaultMemoryView {
    fn from(cited: &CitedMemory) -> Self {
        let evidence = cited.evidence.iter().map(EvidenceView::from).collect();
        VaultMemoryView::of(&cited.memory, evidence, cited.relevance)
    }
}

impl VaultMemoryView {
    fn of(m: &VaultMemory, evidence: Vec<EvidenceView>, relevance: Option<f32>) -> Self {
        VaultMemoryView {
            id: m.id,
            content: m.content.clone(),
            memory_type: m.memory_type.as_str().to_string(),
            created_at: m.created_at,
            category: m.category,
            scope: none_if_empty(&m.scope),
            project: none_if_empty(&m.project),
            source_id: m.source.as_ref().map(|s| s.id),
            source_title: m.source.as_ref().map(|s| s.title.clone()),
            source_url: m.source.as_ref().and_then(|s| s.url.clone()),
            evidence,
            relevance,
        }
    }
}

/// A passage of a document, as search returns it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ChunkView {
    pub id: Uuid,
    pub source_id: Uuid,
    pub title: String,
    pub source_type: String,
    pub section_path: String,
    pub scope: Option<String>,
    pub project: Option<String>,
    pub chunk_index: i64,
    pub content: String,
    /// What was embedded and indexed: title, section path, then the content.
    pub contextual_content: String,
    /// In [0, 1].
    pub relevance: f32,
    pub created_at: DateTime<Utc>,
}

impl ChunkView {
    fn of(c: &Chunk, relevance: f32) -> Self {
        ChunkView {
            id: c.id,
            source_id: c.document_id,
            title: c.title.clone(),
            source_type: c.source_type.clone(),
            section_path: c.section_path.clone(),
            scope: none_if_empty(&c.scope),
            project: none_if_empty(&c.project),
            chunk_index: c.chunk_index,
            content: c.content.clone(),
            contextual_content: c.contextual_content.clone(),
            relevance,
            created_at: c.created_at,
        }
    }
}

/// `GET /api/context-vault/documents/{id}/memories`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentMemories {
    pub document: DocumentRef,
    pub memories: Vec<VaultMemoryView>,
    pub total: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentRef {
    pub id: Uuid,
    pub title: String,
    pub public_url: Option<String>,
}

impl From<DocumentCitations> for DocumentMemories {
    fn from(cited: DocumentCitations) -> Self {
        let memories: Vec<VaultMemoryView> =
            cited.memories.iter().map(VaultMemoryView::from).collect();
        DocumentMemories {
            document: DocumentRef {
                id: cited.document.id,
                title: cited.document.title,
                public_url: cited.document.source_url,
            },
            total: memories.len() as i64,
            memories,
        }
    }
}

/// `DELETE /api/context-vault/documents/{id}`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentDeleted {
    pub deleted: bool,
    pub document_id: Uuid,
    /// Memories cited only by this document, now gone.
    pub deleted_memory_count: i64,
    /// Memories also cited by another document, kept.
    pub preserved_memory_count: i64,
}

impl From<DocumentRemoved> for DocumentDeleted {
    fn from(removed: DocumentRemoved) -> Self {
        DocumentDeleted {
            deleted: true,
            document_id: removed.document_id,
            deleted_memory_count: removed.deleted_memories,
            preserved_memory_count: removed.preserved_memories,
        }
    }
}

/// Query of `GET /api/context-vault/search`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct VaultSearchParams {
    pub workspace_id: Option<Uuid>,
    #[param(value_type = Option<Uuid>)]
    pub vault_id: Option<String>,
    /// 1 to 1,000 characters (not only blanks).
    #[param(value_type = String, required = true, min_length = 1, max_length = 1000, pattern = r"\S")]
    pub q: Option<String>,
    /// `hybrid` (default: passages and memories, in two lists), `documents` or `memories`.
    #[param(value_type = Option<VaultSearchMode>)]
    pub mode: Option<String>,
    /// One lane (at most 200 characters); omit when `scopes` is given.
    #[param(max_length = 200)]
    pub scope: Option<String>,
    /// Comma-separated lanes (at most 20, each at most 200 characters); takes precedence over
    /// `scope`.
    pub scopes: Option<String>,
    /// Results per list, 1 to 20 (default 8).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 20)]
    pub limit: Option<String>,
    /// Results to skip in each list before `limit` are returned, 0 to 80 (default 0): the
    /// next page of a ranking, up to its 100th result.
    #[param(value_type = Option<i64>, minimum = 0, maximum = 80)]
    pub offset: Option<String>,
    /// Comma-separated projects (each at most 100 characters); `__memvault_no_project__`
    /// selects content without one.
    pub project: Option<String>,
    /// How results are ranked: `hybrid` (default: keywords and meaning fused), `keyword`
    /// (BM25 only) or `semantic` (vectors only).
    #[param(value_type = Option<Ranking>)]
    pub ranking: Option<String>,
}

impl VaultSearchParams {
    pub fn parse(&self) -> Parsed<VaultQuery> {
        VaultQuery::parse(VaultQueryFields {
            vault_id: self.vault_id.as_deref(),
            q: self.q.as_deref(),
            mode: self.mode.as_deref(),
            scope: self.scope.as_deref(),
            scopes: self.scopes.as_deref(),
            limit: self.limit.as_deref(),
            offset: self.offset.as_deref(),
            project: self.project.as_deref(),
            ranking: self.ranking.as_deref(),
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VaultSearchResults {
    pub mode: String,
    /// Chunks plus memories returned.
    pub found: i64,
    pub chunks: Vec<ChunkView>,
    pub memories: Vec<VaultMemoryView>,
}

impl From<VaultFound> for VaultSearchResults {
    fn from(found: VaultFound) -> Self {
        let chunks: Vec<ChunkView> = found
            .chunks
            .iter()
            .map(|(chunk, relevance)| ChunkView::of(chunk, *relevance))
            .collect();
        let memories: Vec<VaultMemoryView> =
            found.memories.iter().map(VaultMemoryView::from).collect();
        VaultSearchResults {
            mode: found.mode.as_str().to_string(),
            found: (chunks.len() + memories.len()) as i64,
            chunks,
            memories,
        }
    }
}

/// Query of `GET /api/context-vault/memories`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct BrowseParams {
    pub workspace_id: Option<Uuid>,
    #[param(value_type = Option<Uuid>)]
    pub vault_id: Option<String>,
    /// `document` or `company`; omitted = both.
    #[param(value_type = Option<MemoryType>)]
    pub memory_type: Option<String>,
    #[param(max_length = 200)]
    pub scope: Option<String>,
    /// Comma-separated projects (each at most 100 characters).
    pub project: Option<String>,
    /// Comma-separated categories.
    #[param(
        pattern = r"^\s*(?:(?:preference|fact|decision|context)\s*)?(?:,\s*(?:(?:preference|fact|decision|context)\s*)?)*$"
    )]
    pub category: Option<String>,
    /// Page size, 1 to 100 (default 20).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    #[param(value_type = Option<i64>, minimum = 0, maximum = 2147483647)]
    pub offset: Option<String>,
}

impl BrowseParams {
    pub fn vault(&self) -> Parsed<Option<Uuid>> {
        vault_id(self.vault_id.as_deref())
    }

    pub fn parse(&self) -> Parsed<BrowseQuery> {
        BrowseQuery::parse(BrowseFields {
            memory_type: self.memory_type.as_deref(),
            scope: self.scope.as_deref(),
            project: self.project.as_deref(),
            category: self.category.as_deref(),
            limit: self.limit.as_deref(),
            offset: self.offset.as_deref(),
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VaultMemoryList {
    pub memories: Vec<VaultMemoryView>,
    pub total: i64,
    pub has_more: bool,
}

impl From<VaultMemories> for VaultMemoryList {
    fn from(page: VaultMemories) -> Self {
        VaultMemoryList {
            memories: page.memories.iter().map(VaultMemoryView::from).collect(),
            total: page.total,
            has_more: page.has_more,
        }
    }
}

/// Body of `POST /api/context-vault/memories`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateCompanyFact {
    pub workspace_id: Option<Uuid>,
    /// 1 to 800 characters (not only blanks).
    #[schema(value_type = String, required = true, min_length = 1, max_length = 800, pattern = r"\S")]
    pub content: Option<String>,
    #[schema(value_type = Option<Uuid>)]
    pub vault_id: Option<String>,
    #[schema(value_type = Option<Category>)]
    pub category: Option<String>,
    /// At most 200 characters.
    #[schema(max_length = 200)]
    pub scope: Option<String>,
    /// At most 100 characters.
    #[schema(max_length = 100)]
    pub project: Option<String>,
}

impl CreateCompanyFact {
    /// The content, the vault, then where the fact goes (the service answers each in turn).
    pub fn parse(&self) -> NewFact {
        NewFact {
            workspace_id: self.workspace_id,
            content: fact_content(self.content.as_deref()),
            vault_id: vault_id(self.vault_id.as_deref()),
            placement: FactPlacement::parse(
                self.category.as_deref(),
                self.scope.as_deref(),
                self.project.as_deref(),
            ),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CompanyFactCreated {
    pub memory: VaultMemoryView,
}

impl From<&CitedMemory> for CompanyFactCreated {
    fn from(cited: &CitedMemory) -> Self {
        CompanyFactCreated {
            memory: VaultMemoryView::from(cited),
        }
    }
}

/// Body of `POST /api/context-vault/memories/{id}/feedback`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VaultFeedbackInput {
    pub workspace_id: Option<Uuid>,
    /// The memory's lane; omitted = the unscoped lane (a memory of another scope is 404).
    #[schema(max_length = 200)]
    pub scope: Option<String>,
    /// `helpful`, `not_helpful`, `outdated` or `wrong` (the last two take it out of search).
    #[schema(value_type = Rating, required = true)]
    pub rating: Option<String>,
    /// At most 1,000 characters.
    #[schema(max_length = 1000)]
    pub explanation: Option<String>,
}

impl VaultFeedbackInput {
    pub fn parse(&self, id: &str) -> Parsed<VaultFeedback> {
        VaultFeedback::parse(
            id,
            self.rating.as_deref(),
            self.explanation.clone(),
            self.scope.as_deref(),
        )
    }
}
