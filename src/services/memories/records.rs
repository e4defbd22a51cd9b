//! The memories' results and the records they keep: a save's status, a memory as an export line
//! and a note job's result hold it (plain serde: these formats are stored, not the HTTP contract).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::model::{Category, JobRecord, Memory, Source};

/// What a save did (stored, lower-case, in a note job's result).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SaveStatus {
    Created,
    Duplicate,
    Superseded,
}

/// A save's result: the memory stored, or the existing one it duplicates.
#[derive(Debug, Clone)]
pub struct Saved {
    pub memory: Memory,
    pub status: SaveStatus,
}

/// A memory as a line of an export (what an import reads) and in a note job's result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MemoryRecord {
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
    pub thread: Option<String>,
    pub speaker: Option<String>,
}

/// An empty text as absent (how records and views show a memory's optional names).
pub fn none_if_empty(value: &str) -> Option<String> {
    (!value.is_empty()).then(|| value.to_string())
}

impl From<&Memory> for MemoryRecord {
    fn from(m: &Memory) -> Self {
        MemoryRecord {
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

/// One atomic memory a note job made (or found), as stored in the job's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotePart {
    /// Absent when the part was refused.
    pub status: Option<SaveStatus>,
    pub memory: Option<MemoryRecord>,
    /// Why a part was refused (e.g. the plan's memory limit).
    pub error: Option<String>,
    /// The atomic text the part was made from.
    pub content: String,
}

/// A long note accepted as a job.
#[derive(Debug, Clone)]
pub struct NoteAccepted {
    pub job_id: Uuid,
    /// The note's length in characters.
    pub chars: usize,
}

/// A note job and, once completed, its parts in note order.
#[derive(Debug, Clone)]
pub struct NoteJob {
    pub job: JobRecord,
    pub parts: Vec<NotePart>,
}

/// A page of a list.
#[derive(Debug, Clone)]
pub struct MemoryPage {
    pub memories: Vec<Memory>,
    /// How many memories match the filters.
    pub total: i64,
    pub has_more: bool,
}

/// A version chain: the current version (or, when it was deleted, the newest remaining one)
/// and the earlier ones, newest first.
#[derive(Debug, Clone)]
pub struct Chain {
    pub current: Memory,
    pub history: Vec<Memory>,
}

/// A search hit: the memory and its relevance in [0, 1].
#[derive(Debug, Clone)]
pub struct Found {
    pub memory: Memory,
    pub score: f32,
}

/// What `POST /api/memories` did.
#[derive(Debug, Clone)]
pub enum CreateOutcome {
    /// 201: saved (created, duplicate or superseded). Boxed: a memory is several times the
    /// size of a job's answer.
    Saved(Box<Saved>),
    /// 202: a long note accepted as a job.
    Accepted(NoteAccepted),
}
