//! Context Vault domain types: vaults, documents (sources), chunks, vault memories and their
//! evidence. No I/O.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

pub use memvault_pipelines::model::SourceKind;
pub use memvault_pipelines::pipeline::{Phase, Status};

use super::Category;

string_enum!(
    /// Where a vault memory comes from.
    MemoryType {
        Document => "document",
        Company => "company",
    }
);

string_enum!(
    /// How a document given as JSON arrives: its text (`text`, `markdown`), or a URL to fetch
    /// (`url`, `remote_file`). Files go to the upload endpoint.
    DocumentSourceType {
        Text => "text",
        Markdown => "markdown",
        Url => "url",
        RemoteFile => "remote_file",
    }
);

string_enum!(
    /// What a vault search returns: passages and memories in two lists (`hybrid`), passages
    /// only, or memories only.
    VaultSearchMode {
        Hybrid => "hybrid",
        Documents => "documents",
        Memories => "memories",
    }
);

/// A named container of documents and facts inside a workspace.
#[derive(Debug, Clone, PartialEq)]
pub struct Vault {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub name: String,
    pub is_default: bool,
    pub created_at: DateTime<Utc>,
}

/// The isolation boundary of vault content: a vault and one scope in it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VaultLane {
    pub workspace_id: Uuid,
    pub vault_id: Uuid,
    pub scope: String,
}

/// A document (source) as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub vault_id: Uuid,
    pub title: String,
    /// What the caller named: a [`SourceKind`] name, `url` or `remote_file`.
    pub source_type: String,
    /// How the stored bytes are parsed.
    pub kind: SourceKind,
    pub scope: String,
    pub project: String,
    pub source_url: Option<String>,
    pub byte_size: i64,
    pub status: Status,
    pub processing_phase: Option<Phase>,
    pub phase_done: Option<Phase>,
    pub attempts: i64,
    pub error: Option<String>,
    pub total_chunks: i64,
    pub processed_chunks: i64,
    pub chunk_count: i64,
    pub extracted_count: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub heartbeat_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
}

/// A new document with its raw bytes, stored before the 202 is sent.
#[derive(Debug, Clone)]
pub struct NewDocument {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub vault_id: Uuid,
    pub title: String,
    pub source_type: String,
    pub kind: SourceKind,
    pub scope: String,
    pub project: String,
    pub source_url: Option<String>,
    pub bytes: Vec<u8>,
    pub created_at: DateTime<Utc>,
}

/// One entry of a document's status history.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentEvent {
    pub at: DateTime<Utc>,
    pub status: String,
    pub phase: Option<String>,
    pub attempt: i64,
    pub message: Option<String>,
}

/// A stored chunk (a search passage).
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    pub id: Uuid,
    pub document_id: Uuid,
    pub workspace_id: Uuid,
    pub vault_id: Uuid,
    pub scope: String,
    pub project: String,
    pub chunk_index: i64,
    pub section_path: String,
    pub content: String,
    pub contextual_content: String,
    pub created_at: DateTime<Utc>,
    /// Of the document: title and source type.
    pub title: String,
    pub source_type: String,
}

/// A citation of a vault memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    pub source_id: Uuid,
    pub chunk_id: Uuid,
    pub quote: String,
    pub confidence: f64,
    pub title: String,
    pub section_path: String,
    pub chunk_index: i64,
    /// The citing document's scope: a memory shows only citations from its own lane.
    pub scope: String,
}

/// A vault memory (extracted or curated).
#[derive(Debug, Clone, PartialEq)]
pub struct VaultMemory {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub vault_id: Uuid,
    pub memory_type: MemoryType,
    pub content: String,
    pub category: Category,
    pub scope: String,
    pub project: String,
    pub helpful_count: i64,
    pub not_helpful_count: i64,
    pub flagged_wrong: bool,
    pub created_at: DateTime<Utc>,
    /// The first source (oldest evidence), for `sourceId`/`sourceTitle`/`sourceUrl`.
    pub source: Option<MemorySource>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MemorySource {
    pub id: Uuid,
    pub title: String,
    pub url: Option<String>,
}

/// Filters of the vault memory browser.
#[derive(Debug, Clone)]
pub struct VaultMemoryFilter {
    pub lane: VaultLane,
    pub memory_type: Option<MemoryType>,
    /// Empty: any project.
    pub projects: Vec<String>,
    pub categories: Vec<Category>,
    pub limit: i64,
    pub offset: i64,
}

/// What a document delete removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeletedDocument {
    pub deleted_memories: i64,
    pub preserved_memories: i64,
}
