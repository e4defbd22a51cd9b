//! Domain types shared by the storage engine and the services: no I/O, no web types.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;
use uuid::Uuid;

pub use memvault_actors::Plan;

/// The literal that selects memories without a project in list filters.
pub const NO_PROJECT: &str = "__memvault_no_project__";

/// Unix epoch microseconds: the one timestamp representation in storage.
pub fn to_micros(at: DateTime<Utc>) -> i64 {
    at.timestamp_micros()
}

pub fn from_micros(micros: i64) -> DateTime<Utc> {
    Utc.timestamp_micros(micros).single().unwrap_or_default()
}

/// Now, truncated to the microsecond so that what is stored reads back identically.
pub fn now() -> DateTime<Utc> {
    from_micros(to_micros(Utc::now()))
}

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
        pub enum $name {
            $(#[serde(rename = $text)] #[schema(rename = $text)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The accepted values, for error messages.
            pub fn expected() -> String {
                [$($text),+].join(", ")
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = ();
            fn from_str(s: &str) -> Result<Self, ()> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(()),
                }
            }
        }
    };
}

string_enum!(
    /// A plan's name as the API writes it: the schema of [`Plan`] (which lives in `actors/`,
    /// below the OpenAPI layer); a unit test holds the two to the same names.
    PlanName {
        Free => "free",
        Hobby => "hobby",
        Pro => "pro",
        Ultimate => "ultimate",
    }
);

string_enum!(
    /// What kind of memory this is.
    Category {
        Preference => "preference",
        Fact => "fact",
        Decision => "decision",
        Context => "context",
    }
);

string_enum!(
    /// Where a memory was saved from.
    Source {
        Api => "api",
        Mcp => "mcp",
        Web => "web",
        Integration => "integration",
    }
);

string_enum!(
    /// How a search ranks: keywords and meaning fused (`hybrid`), keywords only (BM25), or
    /// meaning only (vectors).
    Ranking {
        Hybrid => "hybrid",
        Keyword => "keyword",
        Semantic => "semantic",
    }
);

string_enum!(
    /// A feedback rating on a memory.
    Rating {
        Helpful => "helpful",
        NotHelpful => "not_helpful",
        Outdated => "outdated",
        Wrong => "wrong",
    }
);

/// The hard isolation boundary: a workspace and one scope in it (`""` is the unscoped lane).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Lane {
    pub workspace_id: Uuid,
    pub scope: String,
}

/// A stored memory, as the services see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub user_id: String,
    pub content: String,
    pub source: Source,
    pub category: Category,
    /// `""` when unscoped.
    pub scope: String,
    /// `""` when without a project.
    pub project: String,
    pub version: i64,
    pub is_current: bool,
    pub root_id: Uuid,
    pub supersedes_id: Option<Uuid>,
    pub valid_from: Option<DateTime<Utc>>,
    pub valid_until: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub flagged_wrong: bool,
    pub helpful_count: i64,
    pub not_helpful_count: i64,
    /// The note (202 job) this memory was split from, when it was.
    pub origin_id: Option<Uuid>,
    /// The conversation or session the memory was saved from; `""` when none.
    pub thread: String,
    /// Who said or wrote it (a chat participant's name); `""` when not given.
    pub speaker: String,
}

impl Memory {
    pub fn is_expired(&self, at: DateTime<Utc>) -> bool {
        self.valid_until.is_some_and(|until| until <= at)
    }
}

/// A memory about to be inserted. For a new version, `version` and `root_id` are taken from
/// the memory it supersedes inside the storage transaction.
#[derive(Debug, Clone)]
pub struct NewMemory {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub user_id: String,
    pub content: String,
    pub source: Source,
    pub category: Category,
    pub scope: String,
    pub project: String,
    pub valid_from: Option<DateTime<Utc>>,
    pub valid_until: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    /// The note (202 job) this memory was split from, when it was.
    pub origin_id: Option<Uuid>,
    /// The conversation or session the memory was saved from; `""` when none.
    pub thread: String,
    /// Who said or wrote it (a chat participant's name); `""` when not given.
    pub speaker: String,
    /// The content's embedding, stored with the memory in the same transaction.
    pub embedding: Option<Embedded>,
}

/// A vector with the name of the model that made it.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedded {
    pub model: Arc<str>,
    pub vector: Arc<[f32]>,
}

impl NewMemory {
    pub fn content_norm(&self) -> String {
        normalize(&self.content)
    }
}

/// Lower-cased (Unicode) with runs of whitespace collapsed to one space and trimmed: the form
/// used for exact deduplication and for the list endpoint's substring search.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// The dedup key of normalised content: trailing sentence punctuation does not make a memory
/// different ("I like tea." and "i like tea" are one memory).
pub fn content_hash(normalized: &str) -> String {
    let key = normalized.trim_end_matches(['.', '!', '?', ';', ',', ' ']);
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// A workspace as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Workspace {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    pub plan: Option<Plan>,
    pub created_at: DateTime<Utc>,
}

/// An API key's stored record (the key itself is never stored, only its hash).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiKey {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub name: String,
    pub prefix: String,
    /// The role the key acts with (never above its maker's current role).
    pub role: accounts::Role,
    /// The user who made it; `None` for keys made by the command line (they act as owner).
    pub created_by: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// In-place edits of a memory (no new version).
#[derive(Debug, Clone, Default)]
pub struct FieldPatch {
    pub category: Option<Category>,
    pub project: Option<String>,
    pub valid_from: Option<Option<DateTime<Utc>>>,
    pub valid_until: Option<Option<DateTime<Utc>>>,
}

impl FieldPatch {
    pub fn is_empty(&self) -> bool {
        self.category.is_none()
            && self.project.is_none()
            && self.valid_from.is_none()
            && self.valid_until.is_none()
    }
}

/// A persisted job of the long-note (202) path. `request` and `result` are JSON documents
/// owned by the memories service.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub user_id: String,
    pub scope: String,
    pub state: String,
    pub request: String,
    pub result: Option<String>,
    pub error: Option<String>,
    pub attempts: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// Filters of the list endpoint, validated.
#[derive(Debug, Clone)]
pub struct ListFilter {
    pub lane: Lane,
    pub categories: Vec<Category>,
    /// `""` stands for "no project".
    pub projects: Vec<String>,
    /// Normalised substring.
    pub search: Option<String>,
    pub include_expired: bool,
    /// Leave out memories flagged `wrong` (profile).
    pub exclude_wrong: bool,
    /// Only memories created at or after this instant (profile's recent context).
    pub created_since: Option<DateTime<Utc>>,
    /// Only the memories of this thread.
    pub thread: Option<String>,
    pub now: DateTime<Utc>,
    pub limit: i64,
    pub offset: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_names_are_the_plans() {
        let names: Vec<_> = PlanName::ALL.iter().map(|p| p.as_str()).collect();
        let plans: Vec<_> = Plan::ALL.iter().map(|p| p.as_str()).collect();
        assert_eq!(names, plans);
    }

    #[test]
    fn normalize_lowercases_and_collapses_whitespace() {
        assert_eq!(normalize("  I  live\tin\nBERLIN "), "i live in berlin");
        assert_eq!(normalize("ÉCOLE Straße"), "école straße");
        assert_eq!(normalize(""), "");
    }

    #[test]
    fn hash_ignores_trailing_punctuation_only() {
        assert_eq!(
            content_hash(&normalize("I like tea.")),
            content_hash(&normalize("i like TEA"))
        );
        assert_ne!(
            content_hash(&normalize("I like tea")),
            content_hash(&normalize("I like teas"))
        );
    }

    #[test]
    fn micros_round_trip() {
        let at = now();
        assert_eq!(from_micros(to_micros(at)), at);
    }

    #[test]
    fn enums_parse_their_own_names() {
        for c in Category::ALL {
            assert_eq!(c.as_str().parse::<Category>(), Ok(*c));
        }
        for r in Rating::ALL {
            assert_eq!(r.as_str().parse::<Rating>(), Ok(*r));
        }
        assert!("opinion".parse::<Category>().is_err());
    }
}

pub mod accounts;
pub mod vault;
