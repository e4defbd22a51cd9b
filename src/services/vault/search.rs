//! `GET /api/context-vault/search`: ranked passages (`documents`), ranked memories with their
//! evidence (`memories`), or both in two lists (`hybrid`). No answer is synthesised. `scope` or
//! `scopes` and `project` are hard filters; every hit is re-read from the database and checked
//! against them before it is returned.

use std::collections::HashMap;

use memvault_actors::EndpointClass;
use uuid::Uuid;

use super::index::{engine_lane, VaultIndexes};
use super::{embed_error, search_error, Parsed, VaultFound, VaultQuery, VaultService};
use crate::error::Result;
use crate::model::accounts::Need;
use crate::model::vault::{VaultLane, VaultSearchMode as SearchMode};
use crate::model::{now, to_micros};
use crate::search::{Filter, Hit, Mode, Parts, Query};
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

impl VaultService {
    pub async fn search(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        query: Parsed<VaultQuery>,
    ) -> Result<VaultFound> {
        let caller = &self.gate.enter(who, workspace_id, Need::Read).await?;
        admit(&self.workspaces, caller, EndpointClass::Search, false).await?;
        let VaultQuery {
            q,
            mode,
            ranking,
            limit,
            offset,
            projects,
            scopes,
            vault_id,
        } = query?;
        let q = q.as_str();
        let depth = offset + limit;
        let vault = self.vault(caller, vault_id).await?;
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
                .into_iter()
                .skip(offset)
                .take(limit)
                .map(|c| {
                    let relevance = score(&scores, c.id);
                    (c, relevance)
                })
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
            memories = self.with_evidence(rows, &relevance).await?;
        }

        Ok(VaultFound {
            mode,
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
