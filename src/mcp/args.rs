//! Tool inputs: what an AI client fills in. Typed for the client (numbers are numbers) and
//! described for it; each turns into the REST adapter's body or query (its wire types), which
//! parses it as for REST, so validation and its messages are the services' own.

use rmcp::schemars::JsonSchema;
use serde::Deserialize;

use crate::http::memories::dto::{
    CreateMemory, FeedbackInput, ForgetInput, ListParams, ProfileParams, ScopeParams, SearchParams,
    UpdateMemory,
};
use crate::http::vault::dto::{
    CreateCompanyFact, CreateDocument, DocumentAt, VaultParams, VaultSearchParams,
};

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub struct SaveArgs {
    /// The memory: one fact, preference, decision or piece of context, in plain words (1 to
    /// 10,000 characters). Notes over 1,000 characters are split into atomic memories in the
    /// background (the answer then carries a job id).
    pub content: String,
    /// `preference`, `fact`, `decision` or `context`; inferred when left out.
    pub category: Option<String>,
    /// Whose memory this is (a user or tenant id, at most 200 characters). A hard wall: only
    /// calls with the same scope see it. Leave out for the shared, unscoped memories.
    pub scope: Option<String>,
    /// A secondary grouping inside the scope (at most 100 characters).
    pub project: Option<String>,
    /// ISO 8601 date-time from which the memory holds.
    pub valid_from: Option<String>,
    /// ISO 8601 date-time after which the memory is expired.
    pub valid_until: Option<String>,
    /// The id of a memory this one replaces (it becomes the next version). Usually not needed:
    /// a memory that updates a fact ("I live in Berlin" after "I live in Paris") replaces it
    /// by itself.
    pub supersedes: Option<String>,
    /// The conversation or session this memory comes from (e.g. a chat id, at most 200
    /// characters). Memories of one thread are its turns in order; search ranks each with its
    /// neighbours' context.
    pub thread: Option<String>,
    /// Who said or wrote it (a chat participant's name, at most 100 characters). A search that
    /// names some of a scope's speakers ranks the others' memories lower.
    pub speaker: Option<String>,
}

impl From<SaveArgs> for CreateMemory {
    fn from(a: SaveArgs) -> Self {
        CreateMemory {
            content: Some(a.content),
            category: a.category,
            scope: a.scope,
            project: a.project,
            valid_from: a.valid_from,
            valid_until: a.valid_until,
            supersedes: a.supersedes,
            thread: a.thread,
            speaker: a.speaker,
            ..CreateMemory::default()
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub struct SearchArgs {
    /// What to look for, in natural language or exact terms (1 to 1,000 characters).
    pub q: String,
    /// How many results, 1 to 50 (default 10).
    pub limit: Option<u32>,
    /// The scope to search (only its memories are searched); leave out for unscoped memories.
    pub scope: Option<String>,
    /// Comma-separated projects to search in.
    pub project: Option<String>,
    /// Comma-separated categories: `preference`, `fact`, `decision`, `context`.
    pub category: Option<String>,
}

impl From<SearchArgs> for SearchParams {
    fn from(a: SearchArgs) -> Self {
        SearchParams {
            q: Some(a.q),
            limit: a.limit.map(|n| n.to_string()),
            scope: a.scope,
            project: a.project,
            category: a.category,
            ..SearchParams::default()
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub struct ListArgs {
    /// Page size, 1 to 100 (default 20).
    pub limit: Option<u32>,
    /// How many to skip (default 0).
    pub offset: Option<u32>,
    /// Comma-separated categories.
    pub category: Option<String>,
    /// The scope to list; leave out for unscoped memories.
    pub scope: Option<String>,
    /// Comma-separated projects.
    pub project: Option<String>,
    /// Only memories whose content contains this text (case-insensitive, at most 200
    /// characters).
    pub search: Option<String>,
    /// Only the memories of this thread (a conversation or session id), newest first.
    pub thread: Option<String>,
}

impl From<ListArgs> for ListParams {
    fn from(a: ListArgs) -> Self {
        ListParams {
            limit: a.limit.map(|n| n.to_string()),
            offset: a.offset.map(|n| n.to_string()),
            category: a.category,
            scope: a.scope,
            project: a.project,
            search: a.search,
            thread: a.thread,
            ..ListParams::default()
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub struct MemoryRef {
    /// The memory's id (a UUID, as search and list return it).
    pub id: String,
    /// The memory's scope, when it has one.
    pub scope: Option<String>,
}

impl MemoryRef {
    pub fn scope_params(&self) -> ScopeParams {
        ScopeParams {
            scope: self.scope.clone(),
            ..ScopeParams::default()
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub struct UpdateArgs {
    /// The memory's id.
    pub id: String,
    /// The memory's scope, when it has one.
    pub scope: Option<String>,
    /// New content: makes a new version of the memory (the old one stays in its history).
    pub content: Option<String>,
    /// New category (edited in place).
    pub category: Option<String>,
    /// New project (edited in place); an empty string removes it.
    pub project: Option<String>,
    /// New start of validity, ISO 8601; an empty string removes it.
    pub valid_from: Option<String>,
    /// New end of validity, ISO 8601; an empty string removes it.
    pub valid_until: Option<String>,
}

impl UpdateArgs {
    pub fn split(self) -> (MemoryRef, UpdateMemory) {
        let clear = |v: Option<String>| v.map(|v| Some(v).filter(|v| !v.is_empty()));
        (
            MemoryRef {
                id: self.id,
                scope: self.scope,
            },
            UpdateMemory {
                content: self.content,
                category: self.category,
                project: clear(self.project),
                valid_from: clear(self.valid_from),
                valid_until: clear(self.valid_until),
                ..UpdateMemory::default()
            },
        )
    }
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub struct ForgetArgs {
    /// The memory's id: it and all its versions are forgotten (soft delete).
    pub id: String,
    /// The memory's scope, when it has one.
    pub scope: Option<String>,
    /// Why (at most 1,000 characters).
    pub reason: Option<String>,
}

impl ForgetArgs {
    pub fn split(self) -> (MemoryRef, ForgetInput) {
        (
            MemoryRef {
                id: self.id,
                scope: self.scope,
            },
            ForgetInput {
                reason: self.reason,
            },
        )
    }
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub struct FeedbackArgs {
    /// The memory's id.
    pub id: String,
    /// The memory's scope, when it has one.
    pub scope: Option<String>,
    /// `helpful` (ranks it higher), `not_helpful` (lower), `outdated` (expires it now) or
    /// `wrong` (never returned again until its content changes).
    pub rating: String,
    /// Why (at most 1,000 characters).
    pub explanation: Option<String>,
}

impl FeedbackArgs {
    pub fn split(self) -> (MemoryRef, FeedbackInput) {
        (
            MemoryRef {
                id: self.id,
                scope: self.scope,
            },
            FeedbackInput {
                rating: Some(self.rating),
                explanation: self.explanation,
                ..FeedbackInput::default()
            },
        )
    }
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub struct ProfileArgs {
    /// Whose profile (the scope); leave out for unscoped memories.
    pub scope: Option<String>,
    /// Limit the profile to one project of the scope.
    pub project: Option<String>,
}

impl From<ProfileArgs> for ProfileParams {
    fn from(a: ProfileArgs) -> Self {
        ProfileParams {
            scope: a.scope,
            project: a.project,
            ..ProfileParams::default()
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub struct VaultSearchArgs {
    /// What to look for in the company's documents and facts (1 to 1,000 characters).
    pub q: String,
    /// `hybrid` (default: passages and facts, in two lists), `documents` (passages only) or
    /// `memories` (extracted and curated facts only, with their citations).
    pub mode: Option<String>,
    /// One scope to search in; leave out for unscoped content.
    pub scope: Option<String>,
    /// Comma-separated scopes to search in (instead of `scope`).
    pub scopes: Option<String>,
    /// Comma-separated projects.
    pub project: Option<String>,
    /// Results per list, 1 to 20 (default 8).
    pub limit: Option<u32>,
    /// A named vault's id; leave out for the workspace's default vault.
    pub vault_id: Option<String>,
}

impl From<VaultSearchArgs> for VaultSearchParams {
    fn from(a: VaultSearchArgs) -> Self {
        VaultSearchParams {
            q: Some(a.q),
            mode: a.mode,
            scope: a.scope,
            scopes: a.scopes,
            project: a.project,
            limit: a.limit.map(|n| n.to_string()),
            vault_id: a.vault_id,
            ..VaultSearchParams::default()
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub struct FactArgs {
    /// One company fact, in plain words (1 to 800 characters).
    pub content: String,
    /// `preference`, `fact`, `decision` or `context`.
    pub category: Option<String>,
    /// The scope it belongs to (at most 200 characters).
    pub scope: Option<String>,
    /// The project it belongs to (at most 100 characters).
    pub project: Option<String>,
    /// A named vault's id; leave out for the default vault.
    pub vault_id: Option<String>,
}

impl From<FactArgs> for CreateCompanyFact {
    fn from(a: FactArgs) -> Self {
        CreateCompanyFact {
            content: Some(a.content),
            category: a.category,
            scope: a.scope,
            project: a.project,
            vault_id: a.vault_id,
            ..CreateCompanyFact::default()
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub struct IngestArgs {
    /// The text to ingest (Markdown or plain text). Give this or `url`.
    pub content: Option<String>,
    /// A web page or file to fetch and ingest. Give this or `content`.
    pub url: Option<String>,
    /// A title; defaults to the URL or the first line of the text.
    pub title: Option<String>,
    /// The scope it belongs to (at most 200 characters).
    pub scope: Option<String>,
    /// The project it belongs to (at most 100 characters).
    pub project: Option<String>,
    /// A named vault's id; leave out for the default vault.
    pub vault_id: Option<String>,
}

impl From<IngestArgs> for CreateDocument {
    fn from(a: IngestArgs) -> Self {
        let source_type = match (&a.content, &a.url) {
            (None, Some(_)) => "url",
            _ => "text",
        };
        CreateDocument {
            source_type: Some(source_type.to_string()),
            title: a.title,
            content: a.content,
            url: a.url,
            scope: a.scope,
            project: a.project,
            vault_id: a.vault_id,
            ..CreateDocument::default()
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub struct DocumentsArgs {
    /// A named vault's id; leave out for the default vault.
    pub vault_id: Option<String>,
    /// The scope whose documents to list; leave out for unscoped documents.
    pub scope: Option<String>,
    /// Page size, 1 to 100 (default 20).
    pub limit: Option<u32>,
    /// How many to skip.
    pub offset: Option<u32>,
}

impl From<DocumentsArgs> for VaultParams {
    fn from(a: DocumentsArgs) -> Self {
        VaultParams {
            vault_id: a.vault_id,
            scope: a.scope,
            limit: a.limit.map(|n| n.to_string()),
            offset: a.offset.map(|n| n.to_string()),
            ..VaultParams::default()
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub struct DocumentRefArgs {
    /// The document's id, as ingest or the document list return it.
    pub document_id: String,
    /// The document's scope, when it has one (a document of another scope is not found).
    pub scope: Option<String>,
}

impl DocumentRefArgs {
    pub fn at(&self) -> DocumentAt {
        DocumentAt {
            scope: self.scope.clone(),
            ..DocumentAt::default()
        }
    }
}
