//! The Context Vault service: vaults, documents (upload, text, URL) and their processing,
//! curated company facts, feedback, and retrieval over passages and memories. Every operation
//! is confined to the caller's workspace, admitted by its actor first, and, for content, to a
//! vault lane (vault + scope).
//!
//! Documents are stored with their bytes before the 202 is sent; the ingestion supervisor
//! (`memvault-pipelines`) then walks them through parse -> OCR -> chunk -> embed -> extract,
//! through [`pipeline::PipelineStore`].

mod erasure;
mod fetch;
mod index;
pub mod inputs;
mod pipeline;
mod results;
pub mod search;

use std::sync::{Arc, OnceLock};

use memvault_actors::{EndpointClass, Maintainer, Workspaces};
use memvault_pipelines::model::SourceKind;
use memvault_pipelines::pipeline::{
    Decoder, Engines, Extractor, Ingestion, PhaseError, Status, StatusChange,
};
use uuid::Uuid;

use crate::embedding::{EmbedError, Embeddings};
use crate::error::{Error, Result};
use crate::model::accounts::Need;
use crate::model::vault::{Document, NewDocument, Vault, VaultLane, VaultMemoryFilter};
use crate::model::{content_hash, normalize, now, to_micros, Category, Embedded};
use crate::search::SearchError;
use crate::services::validate::*;
use crate::services::{admit, Caller, Gate, Principal};
use crate::storage::vault::NewCompanyFact;
use crate::storage::Store;
use crate::text::chunk::ChunkConfig;

pub use fetch::{is_internal, FetchPolicy};
pub use index::VaultIndexes;
pub use inputs::{
    fact_content, vault_id, vault_name, BrowseFields, BrowseQuery, DocumentFields, DocumentPage,
    DocumentSource, DocumentTarget, FactPlacement, NewDocumentBody, NewDocumentInput, NewFact,
    Parsed, UploadInput, UploadTicket, VaultFeedback, VaultQuery, VaultQueryFields,
};
pub use pipeline::OfflineExtractor;
pub use results::{
    CitedMemory, DocumentCitations, DocumentHistory, DocumentRemoved, Documents, VaultFound,
    VaultMemories,
};

pub const MAX_TITLE_CHARS: usize = 300;
pub const MAX_FACT_CHARS: usize = 800;
pub const MAX_VAULT_NAME_CHARS: usize = 100;
pub const MAX_EXPLANATION_CHARS: usize = 1_000;
pub const DEFAULT_PAGE: i64 = 20;

/// What the vault service is built from.
pub struct VaultDeps {
    pub store: Arc<dyn Store>,
    pub workspaces: Workspaces,
    pub embeddings: Embeddings,
    pub maintainer: Maintainer,
    pub fetch: FetchPolicy,
    pub max_upload_bytes: usize,
    pub fusion: crate::config::Fusion,
    pub semantic_weight: f32,
    /// How far a chunk's vector similarity moves toward its best cited fact's (0 to 1).
    pub fact_weight: f32,
    /// Whether long chunks are embedded piece by piece instead of whole.
    pub chunk_pieces: bool,
    /// Facts of a chunk: the offline rules, or an LLM when one is configured.
    pub extractor: Arc<dyn Extractor>,
    /// Where uploaded bytes are decoded (worker processes): the pipeline's parse and OCR, and
    /// the content check of a file whose name and type say nothing.
    pub decoder: Arc<dyn Decoder>,
    /// Where the pipeline's phase times and generation outcomes are counted.
    pub metrics: Arc<crate::metrics::Metrics>,
}

pub struct VaultService {
    store: Arc<dyn Store>,
    metrics: Arc<crate::metrics::Metrics>,
    workspaces: Workspaces,
    embeddings: Embeddings,
    maintainer: Maintainer,
    indexes: Arc<VaultIndexes>,
    ingestion: OnceLock<Ingestion>,
    fetch: FetchPolicy,
    max_upload_bytes: usize,
    fusion: crate::config::Fusion,
    semantic_weight: f32,
    fact_weight: f32,
    chunk_pieces: bool,
    extractor: Arc<dyn Extractor>,
    decoder: Arc<dyn Decoder>,
    gate: Gate,
}

fn embed_error(error: EmbedError) -> Error {
    match error {
        EmbedError::Remote(_) => Error::Unavailable(error.to_string()),
        EmbedError::ModelMissing { .. } | EmbedError::Load(_) | EmbedError::Inference(_) => {
            Error::Internal(error.to_string())
        }
    }
}

fn search_error(error: SearchError) -> Error {
    Error::Internal(error.to_string())
}

fn document_not_found() -> Error {
    Error::NotFound("document not found".to_string())
}

/// At most `max` characters as sent, then trimmed.
fn optional_text(field: &str, value: Option<&str>, max: usize) -> Result<String> {
    let value = value.unwrap_or_default();
    if chars(value) > max {
        return Err(Error::validation(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    Ok(value.trim().to_string())
}

fn scope_value(value: Option<&str>) -> Result<String> {
    optional_text("scope", value, MAX_SCOPE_CHARS)
}

/// The kind of an uploaded file by what it is called: the named `sourceType`, else the file
/// name, else the content type. `None`: only the bytes can tell ([`VaultService::sniff`]).
fn upload_kind(
    source_type: Option<&str>,
    file_name: Option<&str>,
    content_type: Option<&str>,
) -> Result<Option<SourceKind>> {
    if let Some(named) = source_type.map(str::trim).filter(|s| !s.is_empty()) {
        if named != "url" && named != "remote_file" {
            return SourceKind::parse(named).map(Some).ok_or_else(|| {
                Error::validation(
                    "sourceType",
                    format!(
                        "'{named}' is not one of pdf, markdown, text, docx, html, csv, xlsx, xls, ods, png, jpg, jpeg, webp, tiff, url"
                    ),
                )
            });
        }
    }
    Ok(file_name
        .and_then(SourceKind::from_file_name)
        .or_else(|| content_type.and_then(SourceKind::from_mime)))
}

fn unsupported_upload() -> Error {
    Error::UnsupportedMediaType(
        "unsupported file type: upload a PDF, DOCX, XLSX, XLS, ODS, CSV, Markdown, HTML, text or image file, or name its sourceType".to_string(),
    )
}

impl VaultService {
    pub fn new(deps: VaultDeps) -> Result<Self> {
        let indexes = VaultIndexes::new(deps.embeddings.dimensions()).map_err(search_error)?;
        Ok(VaultService {
            gate: Gate::new(deps.store.clone()),
            store: deps.store,
            workspaces: deps.workspaces,
            embeddings: deps.embeddings,
            maintainer: deps.maintainer,
            indexes: Arc::new(indexes),
            ingestion: OnceLock::new(),
            fetch: deps.fetch,
            max_upload_bytes: deps.max_upload_bytes,
            fusion: deps.fusion,
            semantic_weight: deps.semantic_weight,
            fact_weight: deps.fact_weight,
            chunk_pieces: deps.chunk_pieces,
            extractor: deps.extractor,
            decoder: deps.decoder,
            metrics: deps.metrics,
        })
    }

    /// The kind of a file from its bytes alone. Magic numbers and text checks are byte
    /// comparisons, made here; a zip container must be opened to tell DOCX from XLSX or ODS,
    /// which is decoding, so a worker does it.
    async fn sniff(&self, bytes: &[u8]) -> Result<Option<SourceKind>> {
        if !bytes.starts_with(b"PK\x03\x04") {
            return Ok(memvault_pipelines::parse::sniff(bytes));
        }
        match self.decoder.sniff(bytes).await {
            Ok(kind) => Ok(kind),
            Err(PhaseError::Permanent(reason)) => {
                tracing::info!(%reason, "an upload's type could not be told");
                Ok(None)
            }
            Err(PhaseError::Transient(reason)) => {
                tracing::warn!(%reason, "the file type check failed");
                Err(Error::Unavailable(
                    "the file's type could not be checked; try again, or name its sourceType"
                        .to_string(),
                ))
            }
        }
    }

    /// What the ingestion pipeline works with, from this service's store and indexes.
    pub fn pipeline_engines(&self) -> Engines {
        Engines {
            store: Arc::new(pipeline::PipelineStore {
                store: self.store.clone(),
                indexes: self.indexes.clone(),
                maintainer: self.maintainer.clone(),
                model: self.embeddings.model().to_string(),
            }),
            decoder: self.decoder.clone(),
            chunker: Arc::new(pipeline::TextChunker {
                chunks: ChunkConfig::default(),
                pieces: self.chunk_pieces.then_some(ChunkConfig::PIECES),
            }),
            embedder: Arc::new(pipeline::ModelEmbedder(self.embeddings.clone())),
            extractor: self.extractor.clone(),
            faults: None,
            observer: Some(Arc::new(pipeline::PipelineMetrics::new(
                self.metrics.clone(),
            ))),
        }
    }

    /// Connects the ingestion supervisor (start-up).
    pub fn attach_ingestion(&self, ingestion: Ingestion) {
        let _ = self.ingestion.set(ingestion);
    }

    /// The vault's vector index sizes, by kind (metrics).
    pub fn index_sizes(&self) -> [(&'static str, crate::search::IndexSize); 2] {
        [
            ("vault_chunks", self.indexes.chunks.size()),
            ("vault_memories", self.indexes.memories.size()),
        ]
    }

    /// Schedules upkeep of every index lane that needs it (after the maintainer restarted
    /// with an empty queue).
    pub fn schedule_maintenance(&self) {
        self.indexes.schedule_all(&self.maintainer);
    }

    /// The ingestion supervisor's counts, if it answers (metrics).
    pub async fn ingestion_stats(&self) -> Option<memvault_pipelines::pipeline::IngestStats> {
        self.ingestion().ok()?.stats().await.ok()
    }

    pub fn ingestion(&self) -> Result<&Ingestion> {
        self.ingestion
            .get()
            .ok_or_else(|| Error::Unavailable("document ingestion is not running".to_string()))
    }

    /// Queues the documents left unfinished by the last run (start-up). Returns how many.
    /// An attempt that was running when the server stopped counts as made: the document
    /// resumes as the next one, so a document that takes the whole server down every time ends
    /// `failed` after its attempts instead of crashing every restart.
    pub async fn resume(&self) -> Result<usize> {
        self.resume_in(None).await
    }

    /// Like [`VaultService::resume`], for the documents of `only` these workspaces (a cluster
    /// node's own), or of all.
    pub async fn resume_in(&self, only: Option<&[Uuid]>) -> Result<usize> {
        let mut unfinished = self.store.unfinished_documents().await?;
        if let Some(only) = only {
            unfinished.retain(|d| only.contains(&d.workspace_id));
        }
        let ingestion = self.ingestion()?;
        for document in &unfinished {
            let attempt = match document.status {
                Status::Pending => document.attempts.max(1),
                _ => document.attempts.saturating_add(1),
            };
            ingestion
                .submit(document.id, document.workspace_id, attempt)
                .map_err(|e| Error::Unavailable(e.to_string()))?;
        }
        Ok(unfinished.len())
    }

    /// Gives a stored, pending document to the ingestion supervisor. While the supervisor is
    /// being restarted it takes nothing, and its recovery resubmits every unfinished document
    /// from storage: the document is not lost, and the caller is answered as if it were taken.
    fn hand_over(&self, id: Uuid, workspace_id: Uuid) -> Result<()> {
        if let Err(error) = self.ingestion()?.submit(id, workspace_id, 1) {
            tracing::warn!(document_id = %id, %error, "the ingestion supervisor is restarting; the document is picked up when it is back");
        }
        Ok(())
    }

    /// Makes a workspace this cluster node just took servable: its vault indexes rebuilt from
    /// the database, its unfinished documents resumed.
    pub async fn load_workspace(&self, workspace_id: Uuid) -> Result<(usize, usize)> {
        self.drop_indexes(workspace_id);
        let rebuilt = self.rebuild(Some(workspace_id)).await?;
        self.resume_in(Some(&[workspace_id])).await?;
        Ok(rebuilt)
    }

    /// Forgets what this node held for a workspace that moved: its vault indexes, and the
    /// documents it was ingesting (stopped here; the new owner resumes them from storage).
    pub async fn unload_workspace(&self, workspace_id: Uuid) {
        self.drop_indexes(workspace_id);
        if let Ok(ingestion) = self.ingestion() {
            match ingestion.release(workspace_id).await {
                Ok(dropped) if dropped > 0 => {
                    tracing::info!(%workspace_id, documents = dropped, "documents left to the workspace's new owner")
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%workspace_id, %error, "cannot release a moved workspace's documents")
                }
            }
        }
    }

    fn drop_indexes(&self, workspace_id: Uuid) {
        for engine in [&self.indexes.chunks, &self.indexes.memories] {
            if let Err(error) = engine.drop_workspace(workspace_id) {
                tracing::warn!(%workspace_id, %error, "cannot drop a workspace's vault indexes");
            }
        }
    }

    /// Rebuilds the vault's indexes from the database (start-up). Returns (chunks, memories).
    pub async fn rebuild_indexes(&self) -> Result<(usize, usize)> {
        self.rebuild(None).await
    }

    async fn rebuild(&self, workspace: Option<Uuid>) -> Result<(usize, usize)> {
        const PAGE: i64 = 1_000;
        let (mut chunks, mut memories) = (0, 0);
        let mut after = None;
        loop {
            let page = self.store.chunks_page(workspace, after, PAGE).await?;
            let Some(last) = page.last() else { break };
            after = Some(last.chunk.id);
            chunks += page.len();
            let full = page.len() as i64 == PAGE;
            self.indexes
                .add_chunks(page, &self.maintainer)
                .map_err(search_error)?;
            if !full {
                break;
            }
        }
        let mut after = None;
        loop {
            let page = self
                .store
                .vault_memories_page(workspace, after, PAGE)
                .await?;
            let Some(last) = page.last() else { break };
            after = Some(last.memory.id);
            memories += page.len();
            let full = page.len() as i64 == PAGE;
            self.indexes
                .add_memories(page, &self.maintainer)
                .map_err(search_error)?;
            if !full {
                break;
            }
        }
        self.indexes.settle().await.map_err(search_error)?;
        Ok((chunks, memories))
    }

    /// The vault a request names (`vaultId`), or the workspace's default one.
    async fn vault(&self, caller: &Caller, vault_id: Option<Uuid>) -> Result<Vault> {
        match vault_id {
            None => Ok(self.store.default_vault(caller.workspace_id).await?),
            Some(id) => self
                .store
                .vault(caller.workspace_id, id)
                .await?
                .ok_or_else(|| Error::NotFound("vault not found".to_string())),
        }
    }

    // ----- vaults ----------------------------------------------------------------------------

    pub async fn list_vaults(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
    ) -> Result<Vec<Vault>> {
        let caller = &self.gate.enter(who, workspace_id, Need::Read).await?;
        admit(&self.workspaces, caller, EndpointClass::Read, false).await?;
        // The default vault exists from the first look.
        self.store.default_vault(caller.workspace_id).await?;
        Ok(self.store.list_vaults(caller.workspace_id).await?)
    }

    pub async fn create_vault(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        name: Parsed<String>,
    ) -> Result<Vault> {
        let caller = &self.gate.enter(who, workspace_id, Need::Write).await?;
        admit(&self.workspaces, caller, EndpointClass::Write, false).await?;
        let name = name?;
        self.store.default_vault(caller.workspace_id).await?;
        let vault = Vault {
            id: Uuid::now_v7(),
            workspace_id: caller.workspace_id,
            name: name.clone(),
            is_default: false,
            created_at: now(),
        };
        if !self.store.insert_vault(&vault).await? {
            return Err(Error::Conflict(format!(
                "a vault named '{name}' already exists in this workspace"
            )));
        }
        Ok(vault)
    }

    // ----- documents -------------------------------------------------------------------------

    async fn queue(&self, document: NewDocument) -> Result<Document> {
        let stored = self.store.insert_document(&document).await?;
        self.hand_over(stored.id, stored.workspace_id)?;
        tracing::info!(document_id = %stored.id, kind = stored.kind.as_str(), bytes = stored.byte_size, "document accepted");
        Ok(stored)
    }

    /// Checks an upload before its body is read: the caller may write in some workspace they
    /// can name, and, when the workspace is known without the body, its rate limit admits
    /// the request (counted once).
    pub async fn begin_upload(&self, who: &Principal) -> Result<UploadTicket> {
        let admitted = self.gate.preflight(who, Need::Write).await?;
        if let Some(caller) = &admitted {
            admit(&self.workspaces, caller, EndpointClass::Write, false).await?;
        }
        Ok(UploadTicket { admitted })
    }

    /// `POST /api/context-vault/documents/upload` (multipart), after [`Self::begin_upload`].
    pub async fn upload(
        &self,
        who: &Principal,
        ticket: UploadTicket,
        input: UploadInput,
    ) -> Result<Document> {
        let requested =
            match input
                .workspace_id
                .as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
            {
                Some(raw) => Some(Uuid::parse_str(raw).map_err(|_| {
                    Error::validation("workspaceId", format!("'{raw}' is not a UUID"))
                })?),
                None => None,
            };
        let caller = &self.gate.enter(who, requested, Need::Write).await?;
        match &ticket.admitted {
            Some(early) if early.workspace_id != caller.workspace_id => {
                return Err(Error::validation(
                    "workspaceId",
                    "the form names another workspace than the request's",
                ))
            }
            Some(_) => {}
            None => {
                admit(&self.workspaces, caller, EndpointClass::Write, false).await?;
            }
        }
        let vault = self
            .vault(caller, vault_id(input.vault_id.as_deref())?)
            .await?;
        let file = input.file.ok_or_else(|| {
            Error::validation("file", "is required (a multipart part named file)")
        })?;
        if file.len() > self.max_upload_bytes {
            return Err(Error::PayloadTooLarge);
        }
        let scope = scope_value(input.scope.as_deref())?;
        let project = project(input.project.as_deref())?;
        let extracted = input
            .extracted_text
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty());
        let source_type_named = input
            .source_type
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let (kind, bytes) = match extracted {
            // The caller's text replaces extraction (scans they OCR'd themselves, say).
            Some(text) => (SourceKind::Text, text.as_bytes().to_vec()),
            None => {
                if file.is_empty() {
                    return Err(Error::validation("file", "is empty"));
                }
                let named = upload_kind(
                    source_type_named,
                    input.file_name.as_deref(),
                    input.content_type.as_deref(),
                )?;
                let kind = match named {
                    Some(kind) => kind,
                    None => self.sniff(&file).await?.ok_or_else(unsupported_upload)?,
                };
                (kind, file)
            }
        };
        let title = match input
            .title
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            Some(title) => optional_text("title", Some(title), MAX_TITLE_CHARS)?,
            None => input
                .file_name
                .clone()
                .filter(|n| !n.trim().is_empty())
                .unwrap_or_else(|| "untitled document".to_string()),
        };
        let source_type = source_type_named
            .map(|s| {
                SourceKind::parse(s)
                    .map(|k| k.as_str().to_string())
                    .unwrap_or_else(|| s.to_string())
            })
            .unwrap_or_else(|| kind.as_str().to_string());
        self.queue(NewDocument {
            id: Uuid::now_v7(),
            workspace_id: caller.workspace_id,
            vault_id: vault.id,
            title,
            source_type,
            kind,
            scope,
            project,
            source_url: None,
            bytes,
            created_at: now(),
        })
        .await
    }

    /// `POST /api/context-vault/documents`: text, or a URL fetched now (its body is stored
    /// before the 202, like an upload).
    pub async fn create_document(
        &self,
        who: &Principal,
        input: NewDocumentInput,
    ) -> Result<Document> {
        let caller = &self
            .gate
            .enter(who, input.workspace_id, Need::Write)
            .await?;
        admit(&self.workspaces, caller, EndpointClass::Write, false).await?;
        let vault = self.vault(caller, input.vault_id?).await?;
        let NewDocumentBody {
            scope,
            project,
            source_type,
            source,
        } = input.body?;
        let (kind, bytes, source_url, title) = match source {
            DocumentSource::Text {
                kind,
                content,
                title,
            } => (kind, content.into_bytes(), None, title),
            DocumentSource::Url { url, title } => {
                let fetched = fetch::fetch(&url, &self.fetch)
                    .await
                    .map_err(|e| Error::validation("url", e.to_string()))?;
                if fetched.bytes.is_empty() {
                    return Err(Error::validation("url", "the response is empty"));
                }
                let named = fetched
                    .content_type
                    .as_deref()
                    .and_then(SourceKind::from_mime)
                    .or_else(|| SourceKind::from_file_name(fetched.url.path()));
                let kind = match named {
                    Some(kind) => Some(kind),
                    None => self.sniff(&fetched.bytes).await?,
                };
                let kind = kind.ok_or_else(|| {
                    Error::validation(
                        "url",
                        format!(
                            "the content ({}) is not a supported document type",
                            fetched.content_type.as_deref().unwrap_or("unknown type")
                        ),
                    )
                })?;
                let title = if title.is_empty() {
                    fetched.url.to_string()
                } else {
                    title
                };
                (kind, fetched.bytes, Some(fetched.url.to_string()), title)
            }
        };
        self.queue(NewDocument {
            id: Uuid::now_v7(),
            workspace_id: caller.workspace_id,
            vault_id: vault.id,
            title,
            source_type: source_type.as_str().to_string(),
            kind,
            scope,
            project,
            source_url,
            bytes,
            created_at: now(),
        })
        .await
    }

    pub async fn list_documents(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        vault_id: Parsed<Option<Uuid>>,
        page: Parsed<DocumentPage>,
    ) -> Result<Documents> {
        let caller = &self.gate.enter(who, workspace_id, Need::Read).await?;
        admit(&self.workspaces, caller, EndpointClass::Read, false).await?;
        let vault = self.vault(caller, vault_id?).await?;
        let DocumentPage {
            limit,
            offset,
            scope,
        } = page?;
        let (documents, total) = self
            .store
            .list_documents(caller.workspace_id, vault.id, &scope, limit, offset)
            .await?;
        Ok(Documents {
            has_more: offset + (documents.len() as i64) < total,
            documents,
            total,
        })
    }

    /// A document of the caller's workspace in `scope` (the lane the request names); one of
    /// another scope is as absent as one that does not exist.
    async fn owned_document(&self, caller: &Caller, target: &DocumentTarget) -> Result<Document> {
        self.store
            .document(caller.workspace_id, target.id)
            .await?
            .filter(|document| document.scope == target.scope)
            .ok_or_else(document_not_found)
    }

    /// `GET /api/context-vault/documents/{id}`: status, phase, progress, attempts, error and
    /// the history of status changes.
    pub async fn document(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        target: Parsed<DocumentTarget>,
    ) -> Result<DocumentHistory> {
        let caller = &self.gate.enter(who, workspace_id, Need::Read).await?;
        admit(&self.workspaces, caller, EndpointClass::Read, false).await?;
        self.document_detail(caller, &target?).await
    }

    async fn document_detail(
        &self,
        caller: &Caller,
        target: &DocumentTarget,
    ) -> Result<DocumentHistory> {
        let document = self.owned_document(caller, target).await?;
        let history = self.store.document_events(document.id).await?;
        Ok(DocumentHistory { document, history })
    }

    pub async fn document_memories(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        target: Parsed<DocumentTarget>,
        vault_id: Parsed<Option<Uuid>>,
    ) -> Result<DocumentCitations> {
        let caller = &self.gate.enter(who, workspace_id, Need::Read).await?;
        admit(&self.workspaces, caller, EndpointClass::Read, false).await?;
        let document = self.owned_document(caller, &target?).await?;
        if let Some(id) = vault_id? {
            let vault = self.vault(caller, Some(id)).await?;
            if vault.id != document.vault_id {
                return Err(document_not_found());
            }
        }
        let memories = self
            .store
            .document_memories(caller.workspace_id, document.id)
            .await?;
        let memories = self.with_evidence(memories, &[]).await?;
        Ok(DocumentCitations { document, memories })
    }

    /// Memories with their evidence; `relevance[i]` for search results.
    async fn with_evidence(
        &self,
        memories: Vec<crate::model::vault::VaultMemory>,
        relevance: &[f32],
    ) -> Result<Vec<CitedMemory>> {
        let ids: Vec<Uuid> = memories.iter().map(|m| m.id).collect();
        let evidence = self.store.evidence_of(&ids).await?;
        Ok(memories
            .into_iter()
            .enumerate()
            .map(|(i, memory)| CitedMemory {
                evidence: evidence
                    .iter()
                    .filter(|(id, e)| *id == memory.id && e.scope == memory.scope)
                    .map(|(_, e)| e.clone())
                    .collect(),
                relevance: relevance.get(i).copied(),
                memory,
            })
            .collect())
    }

    /// `DELETE /api/context-vault/documents/{id}`: stops its processing, then removes it, its
    /// chunks and citations; memories only it cites go, the others stay.
    pub async fn delete_document(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        target: Parsed<DocumentTarget>,
    ) -> Result<DocumentRemoved> {
        let caller = &self.gate.enter(who, workspace_id, Need::Write).await?;
        admit(&self.workspaces, caller, EndpointClass::Write, false).await?;
        let document = self.owned_document(caller, &target?).await?;
        if !document.status.is_terminal() {
            self.ingestion()?
                .cancel(document.id)
                .await
                .map_err(|e| Error::Unavailable(e.to_string()))?;
        }
        let removal = self
            .store
            .delete_document(caller.workspace_id, document.id)
            .await?
            .ok_or_else(document_not_found)?;
        self.indexes
            .remove(&removal.lane, &removal.chunk_ids, &removal.memory_ids)
            .map_err(search_error)?;
        Ok(DocumentRemoved {
            document_id: document.id,
            deleted_memories: removal.counts.deleted_memories,
            preserved_memories: removal.counts.preserved_memories,
        })
    }

    /// `POST .../documents/{id}/cancel`: pending, processing or retrying -> cancelled.
    pub async fn cancel(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        target: Parsed<DocumentTarget>,
    ) -> Result<DocumentHistory> {
        let caller = &self.gate.enter(who, workspace_id, Need::Write).await?;
        admit(&self.workspaces, caller, EndpointClass::Write, false).await?;
        let target = target?;
        let document = self.owned_document(caller, &target).await?;
        if document.status.is_terminal() {
            return Err(Error::Conflict(format!(
                "the document is already {}; only pending, processing or retrying documents can be cancelled",
                document.status.as_str()
            )));
        }
        let stopped = self
            .ingestion()?
            .cancel(document.id)
            .await
            .map_err(|e| Error::Unavailable(e.to_string()))?;
        if !stopped {
            // Not in the supervisor's hands (it finished in between, or was never queued).
            let fresh = self.owned_document(caller, &target).await?;
            if fresh.status.is_terminal() {
                return Err(Error::Conflict(format!(
                    "the document is already {}",
                    fresh.status.as_str()
                )));
            }
            self.store
                .set_document_status(
                    document.id,
                    &StatusChange {
                        status: Status::Cancelled,
                        phase: None,
                        attempts: fresh.attempts as u32,
                        message: Some("cancelled on request".to_string()),
                    },
                    to_micros(now()),
                )
                .await?;
        }
        self.document_detail(caller, &target).await
    }

    /// `POST .../documents/{id}/retry`: a failed or cancelled document runs again, from its
    /// last committed phase.
    pub async fn retry(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        target: Parsed<DocumentTarget>,
    ) -> Result<DocumentHistory> {
        let caller = &self.gate.enter(who, workspace_id, Need::Write).await?;
        admit(&self.workspaces, caller, EndpointClass::Write, false).await?;
        let target = target?;
        let document = self.owned_document(caller, &target).await?;
        if !matches!(document.status, Status::Failed | Status::Cancelled) {
            return Err(Error::Conflict(format!(
                "the document is {}; only failed or cancelled documents can be retried",
                document.status.as_str()
            )));
        }
        if !self
            .store
            .reset_document(caller.workspace_id, document.id, to_micros(now()))
            .await?
        {
            // Retried or resumed by someone else in between.
            return Err(Error::Conflict(
                "the document is no longer failed or cancelled; only failed or cancelled documents can be retried"
                    .to_string(),
            ));
        }
        self.hand_over(document.id, caller.workspace_id)?;
        self.document_detail(caller, &target).await
    }

    // ----- vault memories --------------------------------------------------------------------

    /// `GET /api/context-vault/memories`.
    pub async fn browse(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        vault_id: Parsed<Option<Uuid>>,
        query: Parsed<BrowseQuery>,
    ) -> Result<VaultMemories> {
        let caller = &self.gate.enter(who, workspace_id, Need::Read).await?;
        admit(&self.workspaces, caller, EndpointClass::Read, false).await?;
        let vault = self.vault(caller, vault_id?).await?;
        let query = query?;
        let offset = query.offset;
        let filter = VaultMemoryFilter {
            lane: VaultLane {
                workspace_id: caller.workspace_id,
                vault_id: vault.id,
                scope: query.scope,
            },
            memory_type: query.memory_type,
            projects: query.projects,
            categories: query.categories,
            limit: query.limit,
            offset,
        };
        let (memories, total) = self.store.list_vault_memories(&filter).await?;
        let memories = self.with_evidence(memories, &[]).await?;
        Ok(VaultMemories {
            has_more: offset + (memories.len() as i64) < total,
            memories,
            total,
        })
    }

    /// `POST /api/context-vault/memories`: a curated company fact.
    pub async fn add_fact(&self, who: &Principal, input: NewFact) -> Result<(CitedMemory, bool)> {
        let caller = &self
            .gate
            .enter(who, input.workspace_id, Need::Write)
            .await?;
        admit(&self.workspaces, caller, EndpointClass::Write, false).await?;
        let content = input.content?;
        let vault = self.vault(caller, input.vault_id?).await?;
        let FactPlacement {
            category,
            scope,
            project,
        } = input.placement?;
        let category = category.unwrap_or_else(|| {
            crate::text::category::infer_category(&content)
                .parse()
                .unwrap_or(Category::Fact)
        });
        let lane = VaultLane {
            workspace_id: caller.workspace_id,
            vault_id: vault.id,
            scope,
        };
        let vector = self
            .embeddings
            .embed_document(content.clone())
            .await
            .map_err(embed_error)?;
        let fact = NewCompanyFact {
            id: Uuid::now_v7(),
            lane,
            project,
            content_hash: content_hash(&normalize(&content)),
            content,
            category,
            embedding: Embedded {
                model: self.embeddings.model().into(),
                vector: vector.clone().into(),
            },
            at_micros: to_micros(now()),
        };
        let (memory, created) = self.store.insert_company_fact(&fact).await?;
        if created {
            self.indexes
                .add_memories(
                    vec![crate::storage::vault::IndexedVaultMemory {
                        memory: memory.clone(),
                        vector: Some(vector),
                    }],
                    &self.maintainer,
                )
                .map_err(search_error)?;
        }
        let cited = self
            .with_evidence(vec![memory], &[])
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| Error::Internal("fact not read back".into()))?;
        Ok((cited, created))
    }

    /// `POST /api/context-vault/memories/{id}/feedback`.
    pub async fn feedback(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        feedback: Parsed<VaultFeedback>,
    ) -> Result<()> {
        let caller = &self.gate.enter(who, workspace_id, Need::Write).await?;
        admit(&self.workspaces, caller, EndpointClass::Feedback, false).await?;
        let VaultFeedback {
            id,
            rating,
            explanation,
            scope,
        } = feedback?;
        // A memory of another scope is as absent as one that does not exist.
        let in_scope = self
            .store
            .vault_memories_by_ids(caller.workspace_id, &[id])
            .await?
            .first()
            .is_some_and(|memory| memory.scope == scope);
        if !in_scope {
            return Err(inputs::vault_memory_not_found());
        }
        if !self
            .store
            .vault_memory_feedback(
                caller.workspace_id,
                id,
                rating,
                explanation.as_deref(),
                to_micros(now()),
            )
            .await?
        {
            return Err(inputs::vault_memory_not_found());
        }
        // The index follows: counts re-read, a flagged memory taken out.
        let memory = self
            .store
            .vault_memories_by_ids(caller.workspace_id, &[id])
            .await?
            .into_iter()
            .next();
        if let Some(memory) = memory {
            let doc = index::memory_doc(&memory);
            if memory.flagged_wrong {
                self.indexes
                    .memories
                    .remove(&doc.lane, &[id])
                    .map_err(search_error)?;
            } else {
                self.indexes.memories.refresh_doc(&doc);
            }
        }
        Ok(())
    }
}
