//! `GET /api/context-vault/search`: ranked passages (`documents`), ranked memories with their
//! evidence (`memories`), or both in two lists (`hybrid`). No answer is synthesised. `scope` or
//! `scopes` and `project` are hard filters; every hit is re-read from the database and checked
//! against them before it is returned.

use std::collections::HashMap;

use memvault_actors::EndpointClass;
use uuid::Uuid;

use super::index::{engine_lane, VaultIndexes};
use super::{
    embed_error, scope_value, search_error, ChunkView, VaultSearchParams, VaultSearchResults,
    VaultService,
};
use crate::error::{Error, Result};
use crate::model::accounts::Need;
use crate::model::vault::{VaultLane, VaultSearchMode as SearchMode};
use crate::model::{now, to_micros, Ranking};
use crate::search::{Filter, Hit, Mode, Parts, Query};
use crate::services::validate::*;
use crate::services::{admit, Principal};

pub const MAX_QUERY_CHARS: usize = 1_000;
pub const DEFAULT_LIMIT: i64 = 8;
pub const MAX_LIMIT: i64 = 20;
pub const MAX_SCOPES: usize = 20;
/// How deep paging reaches: `offset + limit` is at most this.
pub const MAX_DEPTH: i64 = 100;
/// Facts nearest the query whose similarity may lift the chunks citing them (within the HNSW
/// segments' `ef_search`).
const FACT_CANDIDATES: usize = 100;

/// The lanes a search covers: `scopes` (comma-separated) wins over `scope`.
fn scopes(params: &VaultSearchParams) -> Result<Vec<String>> {
    match params
        .scopes
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
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
        None => Ok(vec![scope_value(params.scope.as_deref())?]),
    }
}

impl VaultService {
    pub async fn search(
        &self,
        who: &Principal,
        params: VaultSearchParams,
    ) -> Result<VaultSearchResults> {
        let caller = &self
            .gate
            .enter(who, params.workspace_id, Need::Read)
            .await?;
        admit(&self.workspaces, caller, EndpointClass::Search, false).await?;
        let q = params
            .q
            .as_deref()
            .map(str::trim)
            .ok_or_else(|| Error::validation("q", "is required"))?;
        if q.is_empty() {
            return Err(Error::validation("q", "must not be empty"));
        }
        // Counted as sent, blanks around it included.
        if params.q.as_deref().map_or(0, chars) > MAX_QUERY_CHARS {
            return Err(Error::validation(
                "q",
                format!("must be at most {MAX_QUERY_CHARS} characters"),
            ));
        }
        let mode = match params.mode.as_deref().map(str::trim) {
            None | Some("") => SearchMode::Hybrid,
            Some(value) => value.parse::<SearchMode>().map_err(|()| {
                Error::validation(
                    "mode",
                    format!("'{value}' is not one of {}", SearchMode::expected()),
                )
            })?,
        };
        let ranking = match params.ranking.as_deref().map(str::trim) {
            None | Some("") => Mode::Hybrid,
            Some(value) => value.parse::<Ranking>().map(Mode::from).map_err(|()| {
                Error::validation(
                    "ranking",
                    format!("'{value}' is not one of {}", Ranking::expected()),
                )
            })?,
        };
        let limit = int_param(
            "limit",
            params.limit.as_deref(),
            DEFAULT_LIMIT,
            1,
            MAX_LIMIT,
        )? as usize;
        let offset = int_param(
            "offset",
            params.offset.as_deref(),
            0,
            0,
            MAX_DEPTH - MAX_LIMIT,
        )? as usize;
        let depth = offset + limit;
        let projects = project_filter(params.project.as_deref())?;
        let scopes = scopes(&params)?;
        let vault = self.vault(caller, params.vault_id.as_deref()).await?;
        let lanes: Vec<VaultLane> = scopes
            .iter()
            .map(|scope| VaultLane {
                workspace_id: caller.workspace_id,
                vault_id: vault.id,
                scope: scope.clone(),
            })
            .collect();

        // Keyword ranking never reads a query vector, so it does not pay for one.
        let vector = match ranking {
            Mode::Keyword => None,
            Mode::Hybrid | Mode::Semantic => {
                Some(self.embeddings.embed_query(q).await.map_err(embed_error)?)
            }
        };
        self.indexes.settle().await.map_err(search_error)?;
        let filter = Filter {
            projects: projects.clone(),
            categories: Vec::new(),
            now_micros: to_micros(now()),
        };
        // A chunk's vector similarity is lifted toward that of the best fact it is cited for.
        let facts = match vector.as_deref() {
            Some(vector) if mode != SearchMode::Memories && self.fact_weight > 0.0 => {
                self.best_facts(&lanes, vector, &filter).await?
            }
            _ => HashMap::new(),
        };
        let query = Query {
            text: q,
            vector: vector.as_deref().map(Vec::as_slice),
            mode: ranking,
            fusion: self.fusion,
            semantic_weight: self.semantic_weight,
            filter,
            limit: depth,
            parts: None,
        };
        let in_lanes = |workspace: Uuid, vault_id: Uuid, scope: &str, project: &str| {
            workspace == caller.workspace_id
                && vault_id == vault.id
                && scopes.iter().any(|s| s == scope)
                && (projects.is_empty() || projects.iter().any(|p| p == project))
        };

        let mut chunks = Vec::new();
        if mode != SearchMode::Memories {
            let chunk_query = Query {
                parts: Some(Parts {
                    best: &facts,
                    weight: self.fact_weight,
                }),
                ..query.clone()
            };
            let hits = VaultIndexes::search(&self.indexes.chunks, &lanes, &chunk_query)
                .map_err(search_error)?;
            let scores = scores_of(&hits);
            let ids: Vec<Uuid> = hits.iter().map(|h| h.id).collect();
            let mut rows = self.store.chunks_by_ids(caller.workspace_id, &ids).await?;
            rows.retain(|c| in_lanes(c.workspace_id, c.vault_id, &c.scope, &c.project));
            rows.sort_by(|a, b| {
                score(&scores, b.id)
                    .total_cmp(&score(&scores, a.id))
                    .then(a.id.cmp(&b.id))
            });
            chunks = rows
                .iter()
                .skip(offset)
                .take(limit)
                .map(|c| ChunkView::of(c, score(&scores, c.id)))
                .collect();
        }

        let mut memories = Vec::new();
        if mode != SearchMode::Documents {
            let hits = VaultIndexes::search(&self.indexes.memories, &lanes, &query)
                .map_err(search_error)?;
            let scores = scores_of(&hits);
            let ids: Vec<Uuid> = hits.iter().map(|h| h.id).collect();
            let mut rows = self
                .store
                .vault_memories_by_ids(caller.workspace_id, &ids)
                .await?;
            rows.retain(|m| {
                !m.flagged_wrong && in_lanes(m.workspace_id, m.vault_id, &m.scope, &m.project)
            });
            rows.sort_by(|a, b| {
                score(&scores, b.id)
                    .total_cmp(&score(&scores, a.id))
                    .then(a.id.cmp(&b.id))
            });
            let rows: Vec<_> = rows.into_iter().skip(offset).take(limit).collect();
            let relevance: Vec<f32> = rows.iter().map(|m| score(&scores, m.id)).collect();
            memories = self.with_evidence(&rows, &relevance).await?;
        }

        Ok(VaultSearchResults {
            mode: mode.as_str().to_string(),
            found: (chunks.len() + memories.len()) as i64,
            chunks,
            memories,
        })
    }
}

impl VaultService {
    /// The vault memories nearest the query vector in the searched lanes, as the best
    /// similarity of any of them cited from each chunk (by chunk id).
    async fn best_facts(
        &self,
        lanes: &[VaultLane],
        vector: &[f32],
        filter: &Filter,
    ) -> Result<HashMap<Uuid, f32>> {
        let mut nearest = Vec::new();
        for lane in lanes {
            nearest.extend(self.indexes.memories.nearest(
                &engine_lane(lane),
                vector,
                FACT_CANDIDATES,
                filter,
            ));
        }
        let similarity: HashMap<Uuid, f32> = nearest.iter().map(|n| (n.id, n.similarity)).collect();
        let ids: Vec<Uuid> = similarity.keys().copied().collect();
        let mut best: HashMap<Uuid, f32> = HashMap::new();
        for (memory_id, chunk_id) in self.store.cited_chunks(&ids).await? {
            let Some(&s) = similarity.get(&memory_id) else {
                continue;
            };
            let entry = best.entry(chunk_id).or_insert(s);
            *entry = entry.max(s);
        }
        Ok(best)
    }
}

fn scores_of(hits: &[Hit]) -> HashMap<Uuid, f32> {
    hits.iter().map(|h| (h.id, h.score)).collect()
}

fn score(scores: &HashMap<Uuid, f32>, id: Uuid) -> f32 {
    scores.get(&id).copied().unwrap_or(0.0)
}
