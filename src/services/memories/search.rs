//! `GET /api/memories/search`: hybrid retrieval over one lane.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::{
    category_filter, chars, embed_error, int_param, lane, millis, project_filter, search_error,
    MemoryListItem, MemoryService,
};
use crate::error::{Error, Result};
use crate::model::accounts::Need;
use crate::model::{now, to_micros, Ranking};
use crate::search::{Filter, Mode, Query};
use crate::services::{admit, Principal};
use memvault_actors::EndpointClass;

pub const MAX_QUERY_CHARS: usize = 1_000;
pub const DEFAULT_SEARCH_LIMIT: i64 = 10;
pub const MAX_SEARCH_LIMIT: i64 = 50;

/// Query of `GET /api/memories/search`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// What to look for, 1 to 1,000 characters (not only blanks).
    #[param(value_type = String, required = true, min_length = 1, max_length = 1000, pattern = r"\S")]
    pub q: Option<String>,
    /// Results wanted, 1 to 50 (default 10).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 50)]
    pub limit: Option<String>,
    /// The lane; omitted = unscoped memories only. A hard wall.
    #[param(max_length = 200)]
    pub scope: Option<String>,
    /// Comma-separated projects (each at most 100 characters); `__memvault_no_project__`
    /// selects memories without one.
    pub project: Option<String>,
    /// Comma-separated categories.
    #[param(
        pattern = r"^\s*(?:(?:preference|fact|decision|context)\s*)?(?:,\s*(?:(?:preference|fact|decision|context)\s*)?)*$"
    )]
    pub category: Option<String>,
    /// `hybrid` (default: keywords and meaning fused), `keyword` (BM25 only) or `semantic`
    /// (vectors only).
    #[param(value_type = Option<Ranking>)]
    pub mode: Option<String>,
    pub workspace_id: Option<Uuid>,
}

/// A search result: the memory as listed, with its relevance.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    #[serde(flatten)]
    pub memory: MemoryListItem,
    /// Relevance in [0, 1]: higher is better.
    pub score: f32,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SearchResults {
    /// Best first.
    pub results: Vec<SearchHit>,
    /// How many results are returned.
    pub total: i64,
}

impl MemoryService {
    /// `GET /api/memories/search`.
    pub async fn search(&self, who: &Principal, params: SearchParams) -> Result<SearchResults> {
        let caller = &self
            .gate
            .enter(who, params.workspace_id, Need::Read)
            .await?;
        admit(&self.workspaces, caller, EndpointClass::Search, false).await?;
        let lane = lane(caller, params.scope.as_deref())?;
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
        let limit = int_param(
            "limit",
            params.limit.as_deref(),
            DEFAULT_SEARCH_LIMIT,
            1,
            MAX_SEARCH_LIMIT,
        )? as usize;
        let categories = category_filter(params.category.as_deref())?;
        let projects = project_filter(params.project.as_deref())?;
        let mode = match params.mode.as_deref().map(str::trim) {
            None | Some("") => Mode::Hybrid,
            Some(value) => value.parse::<Ranking>().map(Mode::from).map_err(|()| {
                Error::validation(
                    "mode",
                    format!("'{value}' is not one of {}", Ranking::expected()),
                )
            })?,
        };

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
        // filters are returned.
        let ids: Vec<Uuid> = hits.iter().map(|h| h.id).collect();
        let mut found: HashMap<Uuid, _> = self
            .store
            .current_memories_by_ids(&lane, &ids)
            .await?
            .into_iter()
            .map(|m| (m.id, m))
            .collect();
        let results: Vec<SearchHit> = hits
            .iter()
            .filter_map(|hit| {
                let memory = found.remove(&hit.id)?;
                let passes = !memory.flagged_wrong
                    && !memory.is_expired(at)
                    && (filter.projects.is_empty() || filter.projects.contains(&memory.project))
                    && (filter.categories.is_empty()
                        || filter.categories.contains(&memory.category));
                passes.then(|| SearchHit {
                    memory: MemoryListItem::from(&memory),
                    score: hit.score,
                })
            })
            .take(limit)
            .collect();
        tracing::debug!(
            mode = ?mode,
            settle_ms = millis(settled_at),
            embed_ms = millis(embedded_at - settled_at),
            keyword_wait_ms = millis(candidates_at - embedded_at),
            rank_ms = millis(ranked_at - candidates_at),
            fetch_ms = millis(started.elapsed() - ranked_at),
            "memories searched"
        );
        Ok(SearchResults {
            total: results.len() as i64,
            results,
        })
    }
}
