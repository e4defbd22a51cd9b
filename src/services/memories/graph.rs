//! `GET /api/memories/graph`: current memories of a scope as nodes, with two kinds of links.
//!
//! - **Derived** links (`derived: true`, type `similar`): each memory is linked to its nearest
//!   neighbours by meaning among the nodes (at most [`NEIGHBOURS`] each, cosine at least
//!   [`MIN_SIMILARITY`]); `strength` is the cosine.
//! - **Relation** links (`derived: false`, `strength` 1): `same_note` between memories split
//!   from the same note, and `same_entity` between memories that name the same entity (a
//!   capitalised name or a code such as `ZX-4471`; a word opening a sentence counts when some
//!   memory of the graph names it mid-sentence). Each group is linked as a chain in the
//!   order the memories were made, so a group of n memories adds n - 1 links.
//!
//! `degree` counts every link touching a node; `meta` counts are exact for the graph returned.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use memvault_actors::EndpointClass;
use uuid::Uuid;

use super::{GraphQuery, MemoryService, Parsed};
use crate::embedding::cosine;
use crate::error::{Error, Result};
use crate::model::accounts::Need;
use crate::model::{now, ListFilter, Memory};
use crate::services::{admit, Principal};
use crate::text::specifics::specifics;

pub const DEFAULT_GRAPH_NODES: i64 = 100;
pub const MAX_GRAPH_NODES: i64 = 500;
/// Derived links per node, at most.
pub const NEIGHBOURS: usize = 3;
/// Weakest similarity that makes a derived link.
pub const MIN_SIMILARITY: f32 = 0.5;
/// Characters of a node's label.
const LABEL_CHARS: usize = 60;

#[derive(Debug, Clone, PartialEq)]
pub struct GraphNode {
    pub id: String,
    /// The start of the content.
    pub label: String,
    pub content: String,
    pub created_at: DateTime<Utc>,
    /// Links touching this node.
    pub degree: i64,
    pub category: String,
    pub scope: Option<String>,
    pub project: Option<String>,
    pub root_id: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GraphLink {
    pub id: String,
    pub source: String,
    pub target: String,
    /// `similar` (derived), `same_note` or `same_entity`.
    pub kind: String,
    pub derived: bool,
    /// Cosine similarity for derived links, 1 for relations.
    pub strength: f32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GraphMeta {
    pub total_nodes: i64,
    pub total_links: i64,
    pub relation_links: i64,
    pub derived_links: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    pub nodes: Vec<GraphNode>,
    pub links: Vec<GraphLink>,
    pub meta: GraphMeta,
}

impl MemoryService {
    /// `GET /api/memories/graph`.
    pub async fn graph(
        &self,
        who: &Principal,
        workspace_id: Option<Uuid>,
        query: Parsed<GraphQuery>,
    ) -> Result<Graph> {
        let caller = &self.gate.enter(who, workspace_id, Need::Read).await?;
        admit(&self.workspaces, caller, EndpointClass::Read, false).await?;
        let GraphQuery { scope, limit } = query?;
        let lane = scope.lane(caller);
        let (memories, _) = self
            .store
            .list_memories(&ListFilter {
                lane: lane.clone(),
                categories: Vec::new(),
                projects: Vec::new(),
                search: None,
                include_expired: false,
                exclude_wrong: false,
                created_since: None,
                thread: None,
                now: now(),
                limit,
                offset: 0,
            })
            .await?;
        let vectors: Vec<Option<Vec<f32>>> = memories
            .iter()
            .map(|m| self.engine.vector(&lane, m.id))
            .collect();
        // Pairwise similarities are CPU work: off the async workers.
        tokio::task::spawn_blocking(move || build_graph(memories, vectors))
            .await
            .map_err(|e| Error::Internal(format!("graph task failed: {e}")))
    }
}

/// Entities a memory names: capitalised names and codes (numbers alone do not count).
fn entities(content: &str) -> HashSet<String> {
    specifics(content)
        .into_iter()
        .filter(|token| token.chars().any(char::is_alphabetic))
        .collect()
}

/// The capitalised words that open a memory's sentences ("Maria leads..."), lower-cased. A
/// sentence start alone does not make a name ("The", "Our"); one that is a known name does.
fn sentence_openers(content: &str) -> HashSet<String> {
    let mut found = HashSet::new();
    let mut start = true;
    for raw in content.split_whitespace() {
        let token = raw.trim_matches(|c: char| !c.is_alphanumeric());
        if start && token.chars().next().is_some_and(char::is_uppercase) {
            found.insert(token.to_lowercase());
        }
        if !token.is_empty() {
            start = false;
        }
        if raw.ends_with(['.', '!', '?', ':', ';']) {
            start = true;
        }
    }
    found
}

/// Each memory's entities: its names and codes, plus the words opening its sentences that
/// some memory of the graph names mid-sentence (so "Maria leads the team" and "Ask Maria"
/// share Maria).
fn graph_entities(contents: &[&str]) -> Vec<HashSet<String>> {
    let mut each: Vec<HashSet<String>> = contents.iter().map(|c| entities(c)).collect();
    let known: HashSet<String> = each.iter().flatten().cloned().collect();
    for (found, content) in each.iter_mut().zip(contents) {
        found.extend(
            sentence_openers(content)
                .into_iter()
                .filter(|word| known.contains(word)),
        );
    }
    each
}

fn build_graph(mut memories: Vec<Memory>, vectors: Vec<Option<Vec<f32>>>) -> Graph {
    let mut links: Vec<GraphLink> = Vec::new();
    let mut seen: HashSet<(String, usize, usize)> = HashSet::new();
    let mut add = |links: &mut Vec<GraphLink>, kind: &str, a: usize, b: usize, strength: f32| {
        let (a, b) = (a.min(b), a.max(b));
        if a == b || !seen.insert((kind.to_string(), a, b)) {
            return;
        }
        links.push(GraphLink {
            id: format!("{kind}:{}:{}", memories[a].id, memories[b].id),
            source: memories[a].id.to_string(),
            target: memories[b].id.to_string(),
            kind: kind.to_string(),
            derived: kind == "similar",
            strength,
        });
    };

    // Derived: nearest neighbours among the nodes.
    for (i, vector) in vectors.iter().enumerate() {
        let Some(vector) = vector else { continue };
        let mut near: Vec<(usize, f32)> = vectors
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .filter_map(|(j, other)| other.as_ref().map(|o| (j, cosine(vector, o))))
            .filter(|(_, similarity)| *similarity >= MIN_SIMILARITY)
            .collect();
        near.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for (j, similarity) in near.into_iter().take(NEIGHBOURS) {
            add(&mut links, "similar", i, j, similarity);
        }
    }

    // Relations, each group chained oldest first (nodes come newest first).
    let order: Vec<usize> = (0..memories.len()).rev().collect();
    let mut notes: BTreeMap<Uuid, Vec<usize>> = BTreeMap::new();
    let mut named: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let contents: Vec<&str> = memories.iter().map(|m| m.content.as_str()).collect();
    let mut named_by = graph_entities(&contents);
    for &i in &order {
        if let Some(origin) = memories[i].origin_id {
            notes.entry(origin).or_default().push(i);
        }
        for entity in std::mem::take(&mut named_by[i]) {
            named.entry(entity).or_default().push(i);
        }
    }
    for (kind, groups) in [
        ("same_note", notes.into_values().collect::<Vec<_>>()),
        ("same_entity", named.into_values().collect::<Vec<_>>()),
    ] {
        for group in groups {
            for pair in group.windows(2) {
                add(&mut links, kind, pair[0], pair[1], 1.0);
            }
        }
    }

    let mut degree: HashMap<String, i64> = HashMap::new();
    for link in &links {
        *degree.entry(link.source.clone()).or_default() += 1;
        *degree.entry(link.target.clone()).or_default() += 1;
    }
    let derived = links.iter().filter(|l| l.derived).count() as i64;
    let meta = GraphMeta {
        total_nodes: memories.len() as i64,
        total_links: links.len() as i64,
        relation_links: links.len() as i64 - derived,
        derived_links: derived,
    };
    let nodes = memories
        .drain(..)
        .map(|m| {
            let id = m.id.to_string();
            GraphNode {
                degree: degree.get(&id).copied().unwrap_or(0),
                label: label(&m.content),
                created_at: m.created_at,
                category: m.category.as_str().to_string(),
                scope: (!m.scope.is_empty()).then(|| m.scope.clone()),
                project: (!m.project.is_empty()).then(|| m.project.clone()),
                root_id: m.root_id.to_string(),
                content: m.content,
                id,
            }
        })
        .collect();
    Graph { nodes, links, meta }
}

fn label(content: &str) -> String {
    let mut label: String = content.chars().take(LABEL_CHARS).collect();
    if content.chars().count() > LABEL_CHARS {
        label.push('…');
    }
    label
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_are_names_and_codes_not_plain_numbers() {
        let found = entities("Ask Anna about ZX-44 at 9:30 on 12 May.");
        let mut found: Vec<_> = found.into_iter().collect();
        found.sort();
        assert_eq!(found, vec!["anna", "may", "zx-44"]);
    }

    #[test]
    fn a_name_opening_a_sentence_counts_once_it_is_known() {
        let each = graph_entities(&[
            "Maria leads the platform team.",
            "Deploys need a review. Maria approves them.",
            "Ask Maria before Friday.",
            "The release train leaves on Tuesdays.",
        ]);
        assert!(
            each[0].contains("maria") && each[1].contains("maria"),
            "{each:?}"
        );
        assert!(each[2].contains("maria"));
        // A common opener is not a name: no memory names "the" or "deploys" mid-sentence.
        assert!(
            !each[3].contains("the") && !each[1].contains("deploys"),
            "{each:?}"
        );
        // Without a mid-sentence mention, an opener stays a plain word.
        let alone = graph_entities(&["Maria leads the team.", "Maria approves deploys."]);
        assert!(
            alone.iter().all(|found| !found.contains("maria")),
            "{alone:?}"
        );
    }

    #[test]
    fn labels_are_cut() {
        assert_eq!(label("short"), "short");
        assert!(label(&"x".repeat(100)).ends_with('…'));
    }
}
