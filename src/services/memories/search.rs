//! `GET /api/memories/search`: hybrid retrieval over one lane.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{embed_error, millis, search_error, Found, MemoryService, Parsed, SearchQuery};
use crate::error::{Error, Result};
use crate::model::accounts::Need;
use crate::model::{now, to_micros, Lane};
use crate::search::{Filter, Hit, Mode, Query};
use crate::services::{admit, Principal};
use memvault_actors::EndpointClass;

pub const MAX_QUERY_CHARS: usize = 1_000;
pub const DEFAULT_SEARCH_LIMIT: i64 = 10;
pub const MAX_SEARCH_LIMIT: i64 = 50;

impl MemoryService {
    /// `GET /api/memories/search`.
    pub async fn search(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        query: Parsed<SearchQuery>,
    ) -> Result<Vec<Found>> {
        // The service's own time, from the access check on (HTTP is outside it).
        let entered = std::time::Instant::now();
        let caller = &self.gate.enter(who, workspace_id, Need::Read).await?;
        admit(&self.workspaces, caller, EndpointClass::Search, false).await?;
        let SearchQuery {
            scope,
            q,
            limit,
            categories,
            projects,
            mode,
        } = query?;
        let lane = scope.lane(caller);
        let q = q.as_str();

        let at = now();
        let started = std::time::Instant::now();
        // Whatever was saved before this search is found by it.
        self.engine.settle().await.map_err(search_error)?;
        let settled_at = started.elapsed();
        let filter = Filter {
            projects,
            categories,
            now_micros: to_micros(at),
        };
        let mut embedded_at = settled_at;
        let (vector, keyword) = match mode {
            Mode::Keyword => (None, None),
            Mode::Semantic => {
                let vector = self.embeddings.embed_query(q).await.map_err(embed_error)?;
                embedded_at = started.elapsed();
                (Some(vector), None)
            }
            Mode::Hybrid => {
                // The keyword half is found while the query is embedded (on another core).
                let engine = self.engine.clone();
                let (keyword_lane, text, keyword_filter) =
                    (lane.clone(), q.to_string(), filter.clone());
                let keyword = tokio::task::spawn_blocking(move || {
                    engine.keyword_candidates(&keyword_lane, &text, &keyword_filter, limit)
                });
                let vector = self.embeddings.embed_query(q).await.map_err(embed_error)?;
                embedded_at = started.elapsed();
                let keyword = keyword
                    .await
                    .map_err(|e| Error::Internal(format!("search task failed: {e}")))?
                    .map_err(search_error)?;
                (Some(vector), keyword)
            }
        };
        let candidates_at = started.elapsed();
        let engine = self.engine.clone();
        let fusion = self.tuning.fusion;
        let semantic_weight = self.tuning.semantic_weight;
        let text = q.to_string();
        let search_lane = lane.clone();
        let index_filter = filter.clone();
        // Ranking is CPU work (an exact scan of a lane's newest vectors among it): off the
        // async workers.
        let hits = tokio::task::spawn_blocking(move || {
            engine.search_with(
                &search_lane,
                &Query {
                    text: &text,
                    vector: vector.as_deref().map(Vec::as_slice),
                    mode,
                    fusion,
                    semantic_weight,
                    filter: index_filter,
                    limit,
                    parts: None,
                },
                keyword,
            )
        })
        .await
        .map_err(|e| Error::Internal(format!("search task failed: {e}")))?
        .map_err(search_error)?;

        let ranked_at = started.elapsed();
        // The database has the last word: only current, live memories that still pass the
        // filters are returned. The index finds twice `limit` hits; the first `limit` are read
        // first and the rest only when some of those no longer pass (each id read costs).
        let (first, rest) = hits.split_at(limit.min(hits.len()));
        let mut results = self.still_found(&lane, first, &filter, at).await?;
        if results.len() < limit && !rest.is_empty() {
            results.extend(self.still_found(&lane, rest, &filter, at).await?);
            results.truncate(limit);
        }
        tracing::debug!(
            mode = ?mode,
            settle_ms = millis(settled_at),
            embed_ms = millis(embedded_at - settled_at),
            keyword_wait_ms = millis(candidates_at - embedded_at),
            rank_ms = millis(ranked_at - candidates_at),
            fetch_ms = millis(started.elapsed() - ranked_at),
            total_ms = millis(entered.elapsed()),
            "memories searched"
        );
        Ok(results)
    }

    /// Hits, in their order, whose memories are still current and live in the lane and pass
    /// the filters, read from the database.
    async fn still_found(
        &self,
        lane: &Lane,
        hits: &[Hit],
        filter: &Filter,
        at: DateTime<Utc>,
    ) -> Result<Vec<Found>> {
        let ids: Vec<Uuid> = hits.iter().map(|h| h.id).collect();
        let mut found: HashMap<Uuid, _> = self
            .store
            .current_memories_by_ids(lane, &ids)
            .await?
            .into_iter()
            .map(|m| (m.id, m))
            .collect();
        Ok(hits
            .iter()
            .filter_map(|hit| {
                let memory = found.remove(&hit.id)?;
                let passes = !memory.flagged_wrong
                    && !memory.is_expired(at)
                    && (filter.projects.is_empty() || filter.projects.contains(&memory.project))
                    && (filter.categories.is_empty()
                        || filter.categories.contains(&memory.category));
                passes.then_some(Found {
                    memory,
                    score: hit.score,
                })
            })
            .collect())
    }
}
