//! The memories' domain inputs: a save, an edit, a rating, the memory a request addresses and
//! the queries of a list, a search, a profile and a graph, each parsed once by its constructor.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::graph::{DEFAULT_GRAPH_NODES, MAX_GRAPH_NODES};
use super::search::{DEFAULT_SEARCH_LIMIT, MAX_QUERY_CHARS, MAX_SEARCH_LIMIT};
use super::{DEFAULT_LIST_LIMIT, MAX_EXPLANATION_CHARS, MAX_SEARCH_CHARS};
use crate::error::{Error, Result};
use crate::model::{normalize, Category, FieldPatch, Lane, Ranking, Rating};
use crate::search::Mode;
use crate::services::validate::*;
use crate::services::Caller;

pub use crate::services::accounts::Parsed;

/// The scope of a lane: at most 200 characters; absent or empty is the unscoped lane.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope(String);

impl Scope {
    pub fn parse(raw: Option<&str>) -> Result<Scope> {
        let scope = raw.unwrap_or_default();
        if chars(scope) > MAX_SCOPE_CHARS {
            return Err(Error::validation(
                "scope",
                format!("must be at most {MAX_SCOPE_CHARS} characters"),
            ));
        }
        Ok(Scope(scope.to_string()))
    }

    /// The caller's lane of this scope.
    pub fn lane(&self, caller: &Caller) -> Lane {
        Lane {
            workspace_id: caller.workspace_id,
            scope: self.0.clone(),
        }
    }
}

/// The memory a request addresses: its lane's scope, then its id (a malformed id cannot name
/// a memory, so it is a 404).
#[derive(Debug, Clone)]
pub struct MemoryAt {
    pub scope: Scope,
    pub id: Uuid,
}

impl MemoryAt {
    pub fn parse(scope: Option<&str>, id: &str) -> Result<MemoryAt> {
        Ok(MemoryAt {
            scope: Scope::parse(scope)?,
            id: Uuid::parse_str(id).map_err(|_| Error::memory_not_found())?,
        })
    }
}

/// What a save says, as sent: a REST body, an MCP tool's arguments or an import line.
#[derive(Debug, Clone, Default)]
pub struct SaveFields {
    pub content: Option<String>,
    pub category: Option<String>,
    pub scope: Option<String>,
    pub project: Option<String>,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub supersedes: Option<String>,
    pub infer: Option<bool>,
    pub thread: Option<String>,
    pub speaker: Option<String>,
}

/// A save, parsed.
#[derive(Debug, Clone)]
pub struct NewSave {
    pub scope: Scope,
    pub content: String,
    /// `None`: inferred (or the superseded memory's).
    pub category: Option<Category>,
    pub valid_from: Option<DateTime<Utc>>,
    pub valid_until: Option<DateTime<Utc>>,
    pub supersedes: Option<Uuid>,
    /// `None`: not given (a new version keeps the old one's).
    pub project: Option<String>,
    pub thread: String,
    pub speaker: String,
    pub infer: bool,
}

impl NewSave {
    /// Every field, in the order of the checks (the first refusal is the answer); `content` at
    /// most `max_content_chars` (a setting).
    pub fn parse(fields: &SaveFields, max_content_chars: usize) -> Result<NewSave> {
        let scope = Scope::parse(fields.scope.as_deref())?;
        let content = content(fields.content.as_deref(), max_content_chars)?;
        let category = category(fields.category.as_deref())?;
        let valid_from = timestamp("validFrom", fields.valid_from.as_deref())?;
        let valid_until = timestamp("validUntil", fields.valid_until.as_deref())?;
        validity(valid_from, valid_until)?;
        let supersedes = fields
            .supersedes
            .as_deref()
            .map(|id| memory_id("supersedes", id))
            .transpose()?;
        let project = match fields.project.as_deref() {
            Some(given) => Some(project(Some(given))?),
            None => None,
        };
        Ok(NewSave {
            scope,
            content,
            category,
            valid_from,
            valid_until,
            supersedes,
            project,
            thread: thread(fields.thread.as_deref())?,
            speaker: speaker(fields.speaker.as_deref())?,
            infer: fields.infer.unwrap_or(true),
        })
    }
}

/// `POST /api/memories`: the workspace named, whether a memory to supersede was named (read
/// before the body is checked: a new version reserves no memory slot), and the parsed save.
#[derive(Debug)]
pub struct Save {
    pub workspace_id: Option<Uuid>,
    pub new_version: bool,
    pub memory: Parsed<NewSave>,
}

/// An edit of a memory: new content (a new version) and fields changed in place.
#[derive(Debug, Clone)]
pub struct MemoryEdit {
    pub content: Option<String>,
    pub patch: FieldPatch,
}

impl MemoryEdit {
    /// `project`, `valid_from` and `valid_until`: absent (`None`), cleared (`Some(None)`) or
    /// set. Refused when it changes nothing.
    pub fn parse(
        content_sent: Option<&str>,
        category_sent: Option<&str>,
        project_sent: Option<Option<&str>>,
        valid_from: Option<Option<&str>>,
        valid_until: Option<Option<&str>>,
        max_content_chars: usize,
    ) -> Result<MemoryEdit> {
        let content = content_sent
            .map(|c| content(Some(c), max_content_chars))
            .transpose()?;
        let patch = FieldPatch {
            category: category(category_sent)?,
            project: project_sent.map(project).transpose()?,
            valid_from: valid_from.map(|v| timestamp("validFrom", v)).transpose()?,
            valid_until: valid_until
                .map(|v| timestamp("validUntil", v))
                .transpose()?,
        };
        if content.is_none() && patch.is_empty() {
            return Err(Error::validation(
                "body",
                "nothing to update: give content, category, project, validFrom or validUntil",
            ));
        }
        Ok(MemoryEdit { content, patch })
    }
}

/// A rating of a memory, with its optional explanation (at most 1,000 characters).
#[derive(Debug, Clone)]
pub struct NewFeedback {
    pub rating: Rating,
    pub explanation: Option<String>,
}

impl NewFeedback {
    pub fn parse(rating: Option<&str>, explanation: Option<String>) -> Result<NewFeedback> {
        let rating = rating.ok_or_else(|| Error::validation("rating", "is required"))?;
        let rating = rating.parse::<Rating>().map_err(|()| {
            Error::validation(
                "rating",
                format!("'{rating}' is not one of {}", Rating::expected()),
            )
        })?;
        Ok(NewFeedback {
            rating,
            explanation: explanation_text("explanation", explanation)?,
        })
    }
}

/// Why a memory is forgotten (kept in logs), at most 1,000 characters.
pub fn forget_reason(reason: Option<String>) -> Result<Option<String>> {
    explanation_text("reason", reason)
}

fn explanation_text(field: &str, text: Option<String>) -> Result<Option<String>> {
    if text
        .as_deref()
        .is_some_and(|t| chars(t) > MAX_EXPLANATION_CHARS)
    {
        return Err(Error::validation(
            field,
            format!("must be at most {MAX_EXPLANATION_CHARS} characters"),
        ));
    }
    Ok(text)
}

/// `GET /api/memories`: a page of a lane, filtered.
#[derive(Debug, Clone)]
pub struct ListQuery {
    pub scope: Scope,
    pub limit: i64,
    pub offset: i64,
    pub categories: Vec<Category>,
    pub projects: Vec<String>,
    /// Normalised; `None` when absent or blank.
    pub search: Option<String>,
    pub include_expired: bool,
    pub thread: Option<String>,
}

/// A list's query as sent.
#[derive(Debug, Clone, Default)]
pub struct ListFields<'a> {
    pub limit: Option<&'a str>,
    pub offset: Option<&'a str>,
    pub category: Option<&'a str>,
    pub scope: Option<&'a str>,
    pub project: Option<&'a str>,
    pub search: Option<&'a str>,
    pub include_expired: Option<&'a str>,
    pub thread: Option<&'a str>,
}

impl ListQuery {
    pub fn parse(fields: ListFields<'_>) -> Result<ListQuery> {
        let scope = Scope::parse(fields.scope)?;
        let limit = int_param("limit", fields.limit, DEFAULT_LIST_LIMIT, 1, 100)?;
        let offset = int_param("offset", fields.offset, 0, 0, MAX_OFFSET)?;
        let categories = category_filter(fields.category)?;
        let projects = project_filter(fields.project)?;
        let search = match fields.search {
            Some(s) if chars(s) > MAX_SEARCH_CHARS => {
                return Err(Error::validation(
                    "search",
                    format!("must be at most {MAX_SEARCH_CHARS} characters"),
                ))
            }
            Some(s) => Some(normalize(s)).filter(|s| !s.is_empty()),
            None => None,
        };
        Ok(ListQuery {
            scope,
            limit,
            offset,
            categories,
            projects,
            search,
            include_expired: bool_param("includeExpired", fields.include_expired)?,
            thread: Some(thread(fields.thread)?).filter(|t| !t.is_empty()),
        })
    }
}

/// `GET /api/memories/search`.
#[derive(Debug, Clone)]
pub struct SearchQuery {
    pub scope: Scope,
    /// Trimmed, not empty.
    pub q: String,
    pub limit: usize,
    pub categories: Vec<Category>,
    pub projects: Vec<String>,
    pub mode: Mode,
}

/// A search's query as sent.
#[derive(Debug, Clone, Default)]
pub struct SearchFields<'a> {
    pub q: Option<&'a str>,
    pub limit: Option<&'a str>,
    pub scope: Option<&'a str>,
    pub project: Option<&'a str>,
    pub category: Option<&'a str>,
    pub mode: Option<&'a str>,
}

impl SearchQuery {
    pub fn parse(fields: SearchFields<'_>) -> Result<SearchQuery> {
        let scope = Scope::parse(fields.scope)?;
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
        let limit = int_param(
            "limit",
            fields.limit,
            DEFAULT_SEARCH_LIMIT,
            1,
            MAX_SEARCH_LIMIT,
        )? as usize;
        let categories = category_filter(fields.category)?;
        let projects = project_filter(fields.project)?;
        let mode = match fields.mode.map(str::trim) {
            None | Some("") => Mode::Hybrid,
            Some(value) => value.parse::<Ranking>().map(Mode::from).map_err(|()| {
                Error::validation(
                    "mode",
                    format!("'{value}' is not one of {}", Ranking::expected()),
                )
            })?,
        };
        Ok(SearchQuery {
            scope,
            q: q.to_string(),
            limit,
            categories,
            projects,
            mode,
        })
    }
}

/// `GET /api/memories/profile`: a lane, optionally one project (`None` when absent or empty).
#[derive(Debug, Clone)]
pub struct ProfileQuery {
    pub scope: Scope,
    pub project: Option<String>,
}

impl ProfileQuery {
    pub fn parse(scope: Option<&str>, project_sent: Option<&str>) -> Result<ProfileQuery> {
        Ok(ProfileQuery {
            scope: Scope::parse(scope)?,
            project: project_sent
                .map(|p| project(Some(p)))
                .transpose()?
                .filter(|p| !p.is_empty()),
        })
    }
}

/// `GET /api/memories/graph`: a lane and how many nodes (1 to 500, default 100).
#[derive(Debug, Clone)]
pub struct GraphQuery {
    pub scope: Scope,
    pub limit: i64,
}

impl GraphQuery {
    pub fn parse(scope: Option<&str>, limit: Option<&str>) -> Result<GraphQuery> {
        Ok(GraphQuery {
            scope: Scope::parse(scope)?,
            limit: int_param("limit", limit, DEFAULT_GRAPH_NODES, 1, MAX_GRAPH_NODES)?,
        })
    }
}
