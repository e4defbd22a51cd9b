//! The Context Vault's domain inputs: a vault's name and id, the document a request addresses,
//! a new document, the document and memory queries, a company fact, a rating, a search.

use memvault_pipelines::model::SourceKind;
use uuid::Uuid;

use super::search::{DEFAULT_LIMIT, MAX_DEPTH, MAX_LIMIT, MAX_QUERY_CHARS, MAX_SCOPES};
use super::{
    document_not_found, optional_text, scope_value, DEFAULT_PAGE, MAX_EXPLANATION_CHARS,
    MAX_FACT_CHARS, MAX_TITLE_CHARS, MAX_VAULT_NAME_CHARS,
};
use crate::error::{Error, Result};
use crate::model::vault::{DocumentSourceType, MemoryType, VaultSearchMode};
use crate::model::{Category, Ranking, Rating};
use crate::search::Mode;
use crate::services::validate::*;

pub use crate::services::accounts::Parsed;

/// The vault a request names (`vaultId`); `None`: the workspace's default vault.
pub fn vault_id(raw: Option<&str>) -> Result<Option<Uuid>> {
    raw.map(|raw| {
        Uuid::parse_str(raw)
            .map_err(|_| Error::validation("vaultId", format!("'{raw}' is not a UUID")))
    })
    .transpose()
}

/// A new vault's name: 1 to 100 characters, trimmed.
pub fn vault_name(raw: Option<&str>) -> Result<String> {
    let name = raw.map(str::trim).unwrap_or_default();
    if name.is_empty() {
        return Err(Error::validation("name", "is required"));
    }
    if chars(name) > MAX_VAULT_NAME_CHARS {
        return Err(Error::validation(
            "name",
            format!("must be at most {MAX_VAULT_NAME_CHARS} characters"),
        ));
    }
    Ok(name.to_string())
}

/// A document of a lane: its scope (trimmed, at most 200 characters), then its id (a
/// malformed id cannot name a document, so it is a 404).
#[derive(Debug, Clone)]
pub struct DocumentTarget {
    pub scope: String,
    pub id: Uuid,
}

impl DocumentTarget {
    pub fn parse(scope: Option<&str>, id: &str) -> Result<DocumentTarget> {
        Ok(DocumentTarget {
            scope: scope_value(scope)?,
            id: Uuid::parse_str(id).map_err(|_| document_not_found())?,
        })
    }
}

/// A page of a vault's documents in one lane.
#[derive(Debug, Clone)]
pub struct DocumentPage {
    pub limit: i64,
    pub offset: i64,
    pub scope: String,
}

impl DocumentPage {
    pub fn parse(limit: Option<&str>, offset: Option<&str>, scope: Option<&str>) -> Result<Self> {
        Ok(DocumentPage {
            limit: int_param("limit", limit, DEFAULT_PAGE, 1, 100)?,
            offset: int_param("offset", offset, 0, 0, MAX_OFFSET)?,
            scope: scope_value(scope)?,
        })
    }
}

/// What a text or URL document says, as sent.
#[derive(Debug, Clone, Default)]
pub struct DocumentFields<'a> {
    pub title: Option<&'a str>,
    pub source_type: Option<&'a str>,
    pub content: Option<&'a str>,
    pub url: Option<&'a str>,
    pub scope: Option<&'a str>,
    pub project: Option<&'a str>,
}

/// Where a new document's bytes come from.
#[derive(Debug, Clone)]
pub enum DocumentSource {
    /// Text or Markdown, with its title (given, or its first line).
    Text {
        kind: SourceKind,
        content: String,
        title: String,
    },
    /// Fetched now; the title is the URL's when none was given (empty).
    Url { url: String, title: String },
}

/// A text or URL document, parsed.
#[derive(Debug, Clone)]
pub struct NewDocumentBody {
    pub scope: String,
    pub project: String,
    pub source_type: DocumentSourceType,
    pub source: DocumentSource,
}

impl NewDocumentBody {
    /// Scope, project, title, source type, then the content or the URL.
    pub fn parse(fields: DocumentFields<'_>) -> Result<NewDocumentBody> {
        let scope = scope_value(fields.scope)?;
        let project = project(fields.project)?;
        let title = optional_text("title", fields.title, MAX_TITLE_CHARS)?;
        let source_type = match fields.source_type.map(str::trim).filter(|s| !s.is_empty()) {
            None if fields.url.is_some() => DocumentSourceType::Url,
            None => DocumentSourceType::Text,
            Some(raw) => raw.parse().map_err(|()| {
                Error::validation(
                    "sourceType",
                    format!(
                        "'{raw}' is not one of {} (files go to /api/context-vault/documents/upload)",
                        DocumentSourceType::expected()
                    ),
                )
            })?,
        };
        let source = match source_type {
            DocumentSourceType::Text | DocumentSourceType::Markdown => {
                let content = fields
                    .content
                    .filter(|c| !c.trim().is_empty())
                    .ok_or_else(|| {
                        Error::validation("content", "is required for a text document")
                    })?;
                let kind = if source_type == DocumentSourceType::Markdown {
                    SourceKind::Markdown
                } else {
                    SourceKind::Text
                };
                let title = if title.is_empty() {
                    let first = content.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                    first
                        .trim()
                        .trim_start_matches('#')
                        .trim()
                        .chars()
                        .take(80)
                        .collect()
                } else {
                    title
                };
                DocumentSource::Text {
                    kind,
                    content: content.to_string(),
                    title,
                }
            }
            DocumentSourceType::Url | DocumentSourceType::RemoteFile => {
                let url = fields
                    .url
                    .map(str::trim)
                    .filter(|u| !u.is_empty())
                    .ok_or_else(|| Error::validation("url", "is required for a url document"))?;
                DocumentSource::Url {
                    url: url.to_string(),
                    title,
                }
            }
        };
        Ok(NewDocumentBody {
            scope,
            project,
            source_type,
            source,
        })
    }
}

/// `POST /api/context-vault/documents`: the workspace named, the vault (looked up before the
/// rest is answered), and the document.
#[derive(Debug)]
pub struct NewDocumentInput {
    pub workspace_id: Option<Uuid>,
    pub vault_id: Parsed<Option<Uuid>>,
    pub body: Parsed<NewDocumentBody>,
}

/// `GET /api/context-vault/memories`: the filters of a vault's memories.
#[derive(Debug, Clone)]
pub struct BrowseQuery {
    pub memory_type: Option<MemoryType>,
    pub limit: i64,
    pub offset: i64,
    pub scope: String,
    pub projects: Vec<String>,
    pub categories: Vec<Category>,
}

/// A browse query as sent.
#[derive(Debug, Clone, Default)]
pub struct BrowseFields<'a> {
    pub memory_type: Option<&'a str>,
    pub scope: Option<&'a str>,
    pub project: Option<&'a str>,
    pub category: Option<&'a str>,
    pub limit: Option<&'a str>,
    pub offset: Option<&'a str>,
}

impl BrowseQuery {
    pub fn parse(fields: BrowseFields<'_>) -> Result<BrowseQuery> {
        let memory_type = match fields.memory_type.map(str::trim).filter(|s| !s.is_empty()) {
            None => None,
            Some(raw) => Some(raw.parse::<MemoryType>().map_err(|()| {
                Error::validation(
                    "memoryType",
                    format!("'{raw}' is not one of {}", MemoryType::expected()),
                )
            })?),
        };
        Ok(BrowseQuery {
            memory_type,
            limit: int_param("limit", fields.limit, DEFAULT_PAGE, 1, 100)?,
            offset: int_param("offset", fields.offset, 0, 0, MAX_OFFSET)?,
            scope: scope_value(fields.scope)?,
            projects: project_filter(fields.project)?,
            categories: category_filter(fields.category)?,
        })
    }
}

/// A curated fact's content: 1 to 800 characters, trimmed.
pub fn fact_content(raw: Option<&str>) -> Result<String> {
    Ok(content(raw, MAX_FACT_CHARS)?.trim().to_string())
}

/// Where a curated fact goes: its category (`None`: inferred), scope and project.
#[derive(Debug, Clone)]
pub struct FactPlacement {
    pub category: Option<Category>,
    pub scope: String,
    pub project: String,
}

impl FactPlacement {
    pub fn parse(
        category: Option<&str>,
        scope: Option<&str>,
        project_sent: Option<&str>,
    ) -> Result<FactPlacement> {
        Ok(FactPlacement {
            category: category.map(parse_category).transpose()?,
            scope: scope_value(scope)?,
            project: project(project_sent)?,
        })
    }
}

/// `POST /api/context-vault/memories`: its parts in the order they are answered (the content,
/// then the vault looked up, then where the fact goes).
#[derive(Debug)]
pub struct NewFact {
    pub workspace_id: Option<Uuid>,
    pub content: Parsed<String>,
    pub vault_id: Parsed<Option<Uuid>>,
    pub placement: Parsed<FactPlacement>,
}

/// A rating of a vault memory: the memory (a malformed id is a 404), the rating, its
/// explanation (at most 1,000 characters) and the memory's scope.
#[derive(Debug, Clone)]
pub struct VaultFeedback {
    pub id: Uuid,
    pub rating: Rating,
    pub explanation: Option<String>,
    pub scope: String,
}

impl VaultFeedback {
    pub fn parse(
        id: &str,
        rating: Option<&str>,
        explanation: Option<String>,
        scope: Option<&str>,
    ) -> Result<VaultFeedback> {
        let id = Uuid::parse_str(id).map_err(|_| vault_memory_not_found())?;
        let raw = rating
            .map(str::trim)
            .ok_or_else(|| Error::validation("rating", "is required"))?;
        let rating: Rating = raw.parse().map_err(|()| {
            Error::validation(
                "rating",
                format!("'{raw}' is not one of {}", Rating::expected()),
            )
        })?;
        if explanation
            .as_deref()
            .is_some_and(|e| chars(e) > MAX_EXPLANATION_CHARS)
        {
            return Err(Error::validation(
                "explanation",
                format!("must be at most {MAX_EXPLANATION_CHARS} characters"),
            ));
        }
        Ok(VaultFeedback {
            id,
            rating,
            explanation,
            scope: scope_value(scope)?,
        })
    }
}

pub(super) fn vault_memory_not_found() -> Error {
    Error::NotFound("vault memory not found".to_string())
}

/// `GET /api/context-vault/search`, parsed: the query, how to rank, the page, the lanes and
/// the vault.
#[derive(Debug, Clone)]
pub struct VaultQuery {
    /// Trimmed, not empty.
    pub q: String,
    pub mode: VaultSearchMode,
    pub ranking: Mode,
    pub limit: usize,
    pub offset: usize,
    pub projects: Vec<String>,
    pub scopes: Vec<String>,
    pub vault_id: Option<Uuid>,
}

/// A search's query as sent.
#[derive(Debug, Clone, Default)]
pub struct VaultQueryFields<'a> {
    pub vault_id: Option<&'a str>,
    pub q: Option<&'a str>,
    pub mode: Option<&'a str>,
    pub scope: Option<&'a str>,
    pub scopes: Option<&'a str>,
    pub limit: Option<&'a str>,
    pub offset: Option<&'a str>,
    pub project: Option<&'a str>,
    pub ranking: Option<&'a str>,
}

impl VaultQuery {
    pub fn parse(fields: VaultQueryFields<'_>) -> Result<VaultQuery> {
        let q = fields
            .q
            .map(str::trim)
            .ok_or_else(|| Error::validation("q", "is required"))?;
        if q.is_empty() {
            return Err(Error::validation("q", "must not be empty"));
        }
        // Counted as sent, blanks around it included.
        if fields.q.map_or(0, chars) > MAX_QUERY_CHARS {
            return Err(Error::validation(
                "q",
                format!("must be at most {MAX_QUERY_CHARS} characters"),
            ));
        }
        let mode = match fields.mode.map(str::trim) {
            None | Some("") => VaultSearchMode::Hybrid,
            Some(value) => value.parse::<VaultSearchMode>().map_err(|()| {
                Error::validation(
                    "mode",
                    format!("'{value}' is not one of {}", VaultSearchMode::expected()),
                )
            })?,
        };
        let ranking = match fields.ranking.map(str::trim) {
            None | Some("") => Mode::Hybrid,
            Some(value) => value.parse::<Ranking>().map(Mode::from).map_err(|()| {
                Error::validation(
                    "ranking",
                    format!("'{value}' is not one of {}", Ranking::expected()),
                )
            })?,
        };
        let limit = int_param("limit", fields.limit, DEFAULT_LIMIT, 1, MAX_LIMIT)? as usize;
        let offset = int_param("offset", fields.offset, 0, 0, MAX_DEPTH - MAX_LIMIT)? as usize;
        let projects = project_filter(fields.project)?;
        let scopes = scopes(fields.scopes, fields.scope)?;
        Ok(VaultQuery {
            q: q.to_string(),
            mode,
            ranking,
            limit,
            offset,
            projects,
            scopes,
            vault_id: vault_id(fields.vault_id)?,
        })
    }
}

/// The lanes a search covers: `scopes` (comma-separated) wins over `scope`.
fn scopes(list: Option<&str>, scope: Option<&str>) -> Result<Vec<String>> {
    match list.map(str::trim).filter(|s| !s.is_empty()) {
        Some(list) => {
            let mut out: Vec<String> = Vec::new();
            for scope in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                if chars(scope) > MAX_SCOPE_CHARS {
                    return Err(Error::validation(
                        "scopes",
                        format!("each scope must be at most {MAX_SCOPE_CHARS} characters"),
                    ));
                }
                if !out.iter().any(|s| s == scope) {
                    out.push(scope.to_string());
                }
            }
            if out.len() > MAX_SCOPES {
                return Err(Error::validation(
                    "scopes",
                    format!("at most {MAX_SCOPES} scopes"),
                ));
            }
            if out.is_empty() {
                out.push(String::new());
            }
            Ok(out)
        }
        None => Ok(vec![scope_value(scope)?]),
    }
}

/// An upload admitted before its body was read ([`super::VaultService::begin_upload`]).
#[derive(Debug)]
pub struct UploadTicket {
    /// The caller and workspace, when known without the body (then already rate-checked).
    pub(crate) admitted: Option<crate::services::Caller>,
}

/// A multipart upload, as the adapter read it, part by part. Checked by the service: its
/// checks interleave with the upload limit (a setting) and the sniffing of unnamed content
/// (a worker process).
#[derive(Debug, Clone, Default)]
pub struct UploadInput {
    pub workspace_id: Option<String>,
    pub vault_id: Option<String>,
    pub title: Option<String>,
    pub file_name: Option<String>,
    pub content_type: Option<String>,
    pub file: Option<Vec<u8>>,
    pub source_type: Option<String>,
    pub extracted_text: Option<String>,
    pub scope: Option<String>,
    pub project: Option<String>,
}
