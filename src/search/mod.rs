//! The search engine: derived, in-memory indexes over the current memories of every lane, for
//! hybrid retrieval (BM25 + vectors), near-duplicate and supersession candidates, and graph
//! neighbours.
//!
//! - `text.rs`: one tantivy index for every lane (BM25, English stemming), group-committed.
//! - `vectors.rs`: per lane, immutable HNSW segments plus an exact tail, folded and merged in
//!   the background by the maintenance actor; `hnsw.rs`: the segments' graph.
//! - here: the lanes' document tables (what each slot holds, alive or not, its filters and
//!   feedback, thread links), fusion of the two rankings, thread context, and the signals
//!   (recency, feedback).
//!
//! The database is the truth. The indexes are rebuilt from it at start-up and kept in step by
//! the memories service after every write; a search result is re-read from the database before
//! it is returned, so an index entry that is stale can cost a result, never return a wrong one.
//! The memories' engine also keeps each live memory's text and dedup key, so a save compares
//! itself with its neighbours and rules out an exact duplicate without a query; a rule that
//! fires re-reads the memory it acts on.

mod ahead;
mod hnsw;
pub mod text;
pub mod vectors;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use uuid::Uuid;

use crate::embedding::cosine;
use crate::model::{content_hash, normalize, to_micros, Category, Lane, Memory};
pub use ahead::{NearestAhead, NearestNow};
use text::{TextIndex, TextIndexError};
use vectors::{LaneVectors, Slot, VectorConfig};

/// How keyword and vector rankings are combined.
pub use crate::config::Fusion;

/// Which rankings a search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Keyword (BM25) and vector rankings fused.
    Hybrid,
    /// BM25 only.
    Keyword,
    /// Vectors only.
    Semantic,
}

impl From<crate::model::Ranking> for Mode {
    fn from(ranking: crate::model::Ranking) -> Self {
        match ranking {
            crate::model::Ranking::Hybrid => Mode::Hybrid,
            crate::model::Ranking::Keyword => Mode::Keyword,
            crate::model::Ranking::Semantic => Mode::Semantic,
        }
    }
}

/// Filters applied inside the index (the database re-checks them).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Empty: any project. `""` stands for "no project".
    pub projects: Vec<String>,
    /// Empty: any category.
    pub categories: Vec<Category>,
    /// Memories whose `validUntil` is at or before this instant (epoch micros) are expired.
    pub now_micros: i64,
}

/// One search.
#[derive(Debug, Clone)]
pub struct Query<'a> {
    pub text: &'a str,
    /// The query's embedding (required unless the mode is `Keyword`).
    pub vector: Option<&'a [f32]>,
    pub mode: Mode,
    pub fusion: Fusion,
    /// Share of vector similarity in a `Fusion::Score` hybrid score, 0 to 1.
    pub semantic_weight: f32,
    pub filter: Filter,
    /// Results wanted.
    pub limit: usize,
    /// Similarities of the documents' parts to the query (a vault chunk's cited facts), which
    /// lift each document's vector similarity; `None` ranks documents by their own vectors.
    pub parts: Option<Parts<'a>>,
}

/// The keyword candidates of one search, found ahead of its vector ranking
/// ([`SearchEngine::keyword_candidates`]).
#[derive(Debug, Clone)]
pub struct KeywordCandidates {
    /// The lane index they were found in.
    index: u32,
    hits: Vec<(Slot, f32)>,
}

/// The best similarity to the query of any part of a document (for a vault chunk: the facts it
/// is cited for, each embedded alone), by document id. A document's vector similarity moves
/// toward its best part's by `weight` when the part is the closer of the two (see [`lift`]);
/// documents that only a part found join the vector candidates.
#[derive(Debug, Clone, Copy)]
pub struct Parts<'a> {
    pub best: &'a HashMap<Uuid, f32>,
    /// 0 to 1: 0 ignores the parts, 1 takes the best part's similarity when it is higher.
    pub weight: f32,
}

/// A document's vector similarity lifted toward its best part's: `own + weight × (part - own)`
/// when the part is closer to the query than the whole document, `own` otherwise. A short
/// sentence that answers the query is not diluted by the rest of its passage, and a passage
/// never loses by having parts.
pub fn lift(own: f32, part: Option<f32>, weight: f32) -> f32 {
    match part {
        Some(part) if part > own => own + weight.clamp(0.0, 1.0) * (part - own),
        _ => own,
    }
}

/// A ranked memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub id: Uuid,
    /// In [0, 1].
    pub score: f32,
}

/// A neighbour by meaning.
#[derive(Debug, Clone, PartialEq)]
pub struct Neighbour {
    pub id: Uuid,
    pub similarity: f32,
}

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(transparent)]
    Text(#[from] TextIndexError),
    #[error("vector index: {0}")]
    Vector(#[from] vectors::VectorError),
}

/// What the memories' index keeps of a live memory for a save's comparisons
/// ([`SearchEngine::kept`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    pub text: Arc<str>,
    /// The speaker's key ([`speaker_key`]); `""` when none was given.
    pub speaker_key: String,
}

/// What an engine that keeps texts holds of a live slot besides its [`Doc`].
#[derive(Debug, Clone)]
struct KeptSlot {
    text: Arc<str>,
    /// [`dedup_key`] of its project and text.
    key: u64,
}

/// What the index keeps of a memory to filter and rank without the database.
#[derive(Debug, Clone)]
struct Doc {
    id: Uuid,
    project: String,
    category: Category,
    created_at: i64,
    valid_until: Option<i64>,
    wrong: bool,
    helpful: i64,
    not_helpful: i64,
    alive: bool,
    /// Who said it: an index into the lane's speaker names (`Docs::speakers`).
    speaker: Option<u32>,
    /// The slots saved just before and after this one in its thread (dead ones included:
    /// [`Docs::neighbours`] walks past them).
    prev: Option<Slot>,
    next: Option<Slot>,
}

/// A document to index: a memory, or any other retrievable text (vault chunks and facts) that
/// ranks by the same rules.
#[derive(Debug, Clone)]
pub struct IndexDoc {
    pub id: Uuid,
    pub lane: Lane,
    pub text: String,
    pub project: String,
    pub category: Category,
    /// Epoch micros.
    pub created_at: i64,
    pub valid_until: Option<i64>,
    pub wrong: bool,
    pub helpful: i64,
    pub not_helpful: i64,
    /// The conversation or session the document belongs to (`""`: none). Documents of one
    /// thread in a lane are linked in the order indexed.
    pub thread: String,
    /// Who said or wrote it (`""`: not given).
    pub speaker: String,
}

impl IndexDoc {
    /// Its lane's key for its project and text ([`dedup_key`]).
    fn dedup_key(&self) -> u64 {
        dedup_key(&self.project, &content_hash(&normalize(&self.text)))
    }

    pub fn of(memory: &Memory) -> IndexDoc {
        IndexDoc {
            id: memory.id,
            lane: Lane {
                workspace_id: memory.workspace_id,
                scope: memory.scope.clone(),
            },
            text: memory.content.clone(),
            project: memory.project.clone(),
            category: memory.category,
            created_at: to_micros(memory.created_at),
            valid_until: memory.valid_until.map(to_micros),
            wrong: memory.flagged_wrong,
            helpful: memory.helpful_count,
            not_helpful: memory.not_helpful_count,
            thread: memory.thread.clone(),
            speaker: memory.speaker.clone(),
        }
    }
}

impl Doc {
    fn of(doc: &IndexDoc) -> Doc {
        Doc {
            id: doc.id,
            project: doc.project.clone(),
            category: doc.category,
            created_at: doc.created_at,
            valid_until: doc.valid_until,
            wrong: doc.wrong,
            helpful: doc.helpful,
            not_helpful: doc.not_helpful,
            alive: true,
            speaker: None,
            prev: None,
            next: None,
        }
    }

    /// The same slot with the fields of `doc` (an edit in place): its thread links and its
    /// speaker stay (a memory's speaker changes only with a new version).
    fn refreshed(&self, doc: &IndexDoc) -> Doc {
        Doc {
            prev: self.prev,
            next: self.next,
            speaker: self.speaker,
            ..Doc::of(doc)
        }
    }

    fn passes(&self, filter: &Filter) -> bool {
        self.alive
            && !self.wrong
            && self
                .valid_until
                .is_none_or(|until| until > filter.now_micros)
            && (filter.projects.is_empty() || filter.projects.contains(&self.project))
            && (filter.categories.is_empty() || filter.categories.contains(&self.category))
    }
}

#[derive(Default)]
struct Docs {
    slots: Vec<Doc>,
    by_id: HashMap<Uuid, Slot>,
    /// The last slot indexed in each thread.
    thread_tails: HashMap<String, Slot>,
    /// Documents retired or refreshed in place so far: a reader that saw this count unchanged
    /// knows that every document it read then is as it was (new ones take new slots).
    edits: u64,
    /// The lane's speakers by their key ([`speaker_key`]), numbered as indexed.
    speakers: HashMap<String, u32>,
    /// The same keys by number.
    speaker_keys: Vec<String>,
    /// Live documents of each speaker, by number: a speaker whose memories are all gone is
    /// named by no query.
    speaker_live: Vec<usize>,
    /// The most words in any speaker's key: the longest run of query words to look up.
    speaker_words: usize,
    /// The vectors of documents read in pieces as well as whole (vault chunks), one after the
    /// other, by slot; dropped when the slot is retired.
    pieces: HashMap<Slot, Vec<f32>>,
    /// In an engine that keeps texts ([`SearchEngine::keeping_texts`]), each live slot's text
    /// and dedup key (kept apart from `slots`, which searches walk).
    kept: Vec<Option<KeptSlot>>,
    /// How many live slots hold each dedup key.
    dedup_keys: HashMap<u64, u32>,
}

/// Dead slots (deleted, superseded) a thread walk steps over before it gives up.
const MAX_DEAD_STEPS: usize = 16;

/// The longest speaker name, in words, that a query is searched for.
const MAX_SPEAKER_WORDS: usize = 4;

/// The lowercase words (runs of letters and digits) of a text.
fn words_of(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// How a speaker's name is matched: its lowercase words joined by single spaces, so
/// "Dr. Ada Lovelace" is named by "what did dr ada lovelace say" and "Ada's" names "Ada". Two
/// names with one key are one speaker.
pub fn speaker_key(name: &str) -> String {
    words_of(name).collect::<Vec<_>>().join(" ")
}

impl Docs {
    /// Whether the document in `slot` passes `filter` (live, unexpired, of its projects).
    fn accepts(&self, slot: Slot, filter: &Filter) -> bool {
        self.slots
            .get(slot as usize)
            .is_some_and(|d| d.passes(filter))
    }

    /// Appends a document, linked after the last one of its thread; with `keep`, its text and
    /// dedup key too.
    fn push(&mut self, doc: &IndexDoc, keep: bool) -> Slot {
        let slot = self.slots.len() as Slot;
        let mut entry = Doc::of(doc);
        if keep {
            let key = doc.dedup_key();
            *self.dedup_keys.entry(key).or_default() += 1;
            self.kept.resize(slot as usize, None);
            self.kept.push(Some(KeptSlot {
                text: Arc::from(doc.text.as_str()),
                key,
            }));
        }
        if !doc.thread.is_empty() {
            if let Some(tail) = self.thread_tails.insert(doc.thread.clone(), slot) {
                entry.prev = Some(tail);
                self.slots[tail as usize].next = Some(slot);
            }
        }
        entry.speaker = self.speaker(&doc.speaker);
        if let Some(number) = entry.speaker {
            self.speaker_live[number as usize] += 1;
        }
        self.slots.push(entry);
        self.by_id.insert(doc.id, slot);
        slot
    }

    /// Takes the fields of `doc` into `slot` (an edit in place), its dedup key too (a project
    /// edited in place moves it).
    fn refresh(&mut self, slot: Slot, doc: &IndexDoc) {
        let refreshed = self.slots[slot as usize].refreshed(doc);
        let moved = self.slots[slot as usize].project != refreshed.project;
        self.slots[slot as usize] = refreshed;
        self.edits += 1;
        let Some(Some(kept)) = self.kept.get_mut(slot as usize) else {
            return;
        };
        if *kept.text != *doc.text {
            kept.text = Arc::from(doc.text.as_str());
        } else if !moved {
            return;
        }
        let (old, key) = (kept.key, doc.dedup_key());
        kept.key = key;
        self.forget_key(old);
        *self.dedup_keys.entry(key).or_default() += 1;
    }

    /// One live slot fewer holds `key`.
    fn forget_key(&mut self, key: u64) {
        if let Some(count) = self.dedup_keys.get_mut(&key) {
            *count -= 1;
            if *count == 0 {
                self.dedup_keys.remove(&key);
            }
        }
    }

    /// The number of a speaker's name in this lane, given one when it is new; `None` for a
    /// name with no letters or digits.
    fn speaker(&mut self, name: &str) -> Option<u32> {
        let key = speaker_key(name);
        if key.is_empty() {
            return None;
        }
        let next = self.speakers.len() as u32;
        let words = key.split(' ').count();
        if !self.speakers.contains_key(&key) {
            self.speaker_keys.push(key.clone());
        }
        let number = *self.speakers.entry(key).or_insert_with(|| {
            self.speaker_live.push(0);
            next
        });
        self.speaker_words = self.speaker_words.max(words.min(MAX_SPEAKER_WORDS));
        Some(number)
    }

    /// The lane's speakers that `text` names: each run of up to `speaker_words` consecutive
    /// words of the text, looked up by key. Empty when the lane has no speakers.
    fn named_speakers(&self, text: &str) -> HashSet<u32> {
        let mut named = HashSet::new();
        if self.speakers.is_empty() {
            return named;
        }
        let words: Vec<String> = words_of(text).collect();
        for start in 0..words.len() {
            for end in start + 1..=(start + self.speaker_words).min(words.len()) {
                if let Some(&number) = self.speakers.get(&words[start..end].join(" ")) {
                    if self.speaker_live[number as usize] > 0 {
                        named.insert(number);
                    }
                }
            }
        }
        named
    }

    /// Marks a slot dead (deleted, superseded, replaced); its thread links stay for walks.
    fn retire(&mut self, slot: Slot) {
        self.edits += 1;
        let doc = &mut self.slots[slot as usize];
        if !doc.alive {
            return;
        }
        doc.alive = false;
        if let Some(number) = doc.speaker {
            self.speaker_live[number as usize] -= 1;
        }
        if let Some(kept) = self.kept.get_mut(slot as usize).and_then(Option::take) {
            self.forget_key(kept.key);
        }
        self.pieces.remove(&slot);
    }

    /// The best cosine between `query` and any piece of `slot`, when it has pieces.
    fn best_piece(&self, slot: Slot, query: &[f32]) -> Option<f32> {
        let pieces = self.pieces.get(&slot)?;
        pieces
            .chunks_exact(query.len().max(1))
            .map(|piece| cosine(query, piece))
            .reduce(f32::max)
    }

    /// Whether any document of the lane belongs to a thread.
    fn threaded(&self) -> bool {
        !self.thread_tails.is_empty()
    }

    /// The nearest live documents before and after `slot` in its thread.
    fn neighbours(&self, slot: Slot) -> (Option<Slot>, Option<Slot>) {
        let walk = |step: fn(&Doc) -> Option<Slot>| {
            let mut at = step(self.slots.get(slot as usize)?)?;
            for _ in 0..MAX_DEAD_STEPS {
                let doc = &self.slots[at as usize];
                if doc.alive {
                    return Some(at);
                }
                at = step(doc)?;
            }
            None
        };
        (walk(|d| d.prev), walk(|d| d.next))
    }
}

/// The indexes of one lane.
pub struct LaneIndex {
    number: u32,
    term: String,
    docs: RwLock<Docs>,
    vectors: RwLock<LaneVectors>,
}

impl LaneIndex {
    fn key(&self, slot: Slot) -> u64 {
        (u64::from(self.number) << 32) | u64::from(slot)
    }

    fn docs(&self) -> RwLockReadGuard<'_, Docs> {
        self.docs.read().unwrap_or_else(|e| e.into_inner())
    }

    fn docs_mut(&self) -> RwLockWriteGuard<'_, Docs> {
        self.docs.write().unwrap_or_else(|e| e.into_inner())
    }

    fn vectors(&self) -> RwLockReadGuard<'_, LaneVectors> {
        self.vectors.read().unwrap_or_else(|e| e.into_inner())
    }

    fn vectors_mut(&self) -> RwLockWriteGuard<'_, LaneVectors> {
        self.vectors.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Folds the exact tail into HNSW segments and rebuilds mostly dead ones; CPU heavy,
    /// blocking: the builds run on the calling thread (one core), never on rayon's pool, where
    /// they would queue ahead of the embedding model's matrix work.
    pub fn maintain(&self) -> usize {
        vectors::maintain(&self.vectors)
    }

    pub fn needs_maintenance(&self) -> bool {
        self.vectors().needs_maintenance()
    }

    /// (segments, tail length, dead entries), for logs.
    pub fn shape(&self) -> (usize, usize, usize) {
        self.vectors().shape()
    }
}

impl memvault_actors::Maintainable for LaneIndex {
    fn key(&self) -> u64 {
        u64::from(self.number)
    }

    fn needs_maintenance(&self) -> bool {
        LaneIndex::needs_maintenance(self)
    }

    fn maintain(&self) -> usize {
        LaneIndex::maintain(self)
    }
}

/// Ranking constants of the score fusion.
mod weights {
    /// Reciprocal-rank fusion's k.
    pub const RRF_K: f32 = 60.0;
    /// Most a recent memory gains (multiplicative), decaying with age.
    pub const RECENCY_BOOST: f32 = 0.05;
    pub const RECENCY_DAYS: f32 = 30.0;
    /// Gain per `helpful` rating, counted up to `FEEDBACK_CAP` ratings.
    pub const HELPFUL: f32 = 0.05;
    /// Loss factor per `not_helpful` rating, counted up to `FEEDBACK_CAP` ratings.
    pub const NOT_HELPFUL: f32 = 0.85;
    pub const FEEDBACK_CAP: i64 = 5;
    /// Thread context: a document's vector similarity is that of its vector plus this share of
    /// each live neighbour's (see `in_thread`).
    pub const THREAD_CONTEXT: f32 = 0.5;
    /// Thread context: a document scores at least this share of the score of the one saved
    /// just before it in its thread (an answer follows its question)...
    pub const THREAD_PREV: f32 = 0.9;
    /// ... and of the one saved just after it.
    pub const THREAD_NEXT: f32 = 0.7;
    /// Speakers: when a query names some of a lane's speakers, the memories of its other
    /// speakers keep this share of their score (see `for_speakers`).
    pub const OTHER_SPEAKER: f32 = 0.8;
}

/// How big an engine's vector indexes are (metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexSize {
    /// Live vectors, in HNSW segments and exact tails.
    pub vectors: usize,
    pub segments: usize,
}

/// The engine: every lane's indexes.
pub struct SearchEngine {
    dims: usize,
    text: TextIndex,
    lanes: RwLock<HashMap<Lane, Arc<LaneIndex>>>,
    vector_config: VectorConfig,
    keeps_texts: bool,
}

/// A lane's key for a memory's project and content hash ([`content_hash`]).
fn dedup_key(project: &str, content_hash: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one((project, content_hash))
}

/// Lane numbers are unique across every engine of the process (memories, vault chunks, vault
/// facts): the maintainer tells its units apart by them.
static NEXT_LANE: AtomicU32 = AtomicU32::new(0);

impl SearchEngine {
    pub fn new(dims: usize, vector_config: VectorConfig) -> Result<Self, SearchError> {
        Ok(SearchEngine {
            dims,
            text: TextIndex::new()?,
            lanes: RwLock::new(HashMap::new()),
            vector_config,
            keeps_texts: false,
        })
    }

    /// The same engine keeping each live document's text and each lane's dedup keys, for the
    /// save path ([`SearchEngine::kept`], [`SearchEngine::may_hold`]): the memories' engine.
    pub fn keeping_texts(mut self) -> Self {
        self.keeps_texts = true;
        self
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    fn lane(&self, lane: &Lane) -> Option<Arc<LaneIndex>> {
        self.lanes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(lane)
            .cloned()
    }

    fn lane_or_create(&self, lane: &Lane) -> Arc<LaneIndex> {
        if let Some(index) = self.lane(lane) {
            return index;
        }
        let mut lanes = self.lanes.write().unwrap_or_else(|e| e.into_inner());
        lanes
            .entry(lane.clone())
            .or_insert_with(|| {
                Arc::new(LaneIndex {
                    number: NEXT_LANE.fetch_add(1, Ordering::Relaxed),
                    term: format!("{}:{}", lane.workspace_id, lane.scope),
                    docs: RwLock::new(Docs::default()),
                    vectors: RwLock::new(LaneVectors::new(self.dims, self.vector_config.clone())),
                })
            })
            .clone()
    }

    /// Live vectors and segments over every lane.
    pub fn size(&self) -> IndexSize {
        self.lanes()
            .iter()
            .fold(IndexSize::default(), |mut size, lane| {
                let vectors = lane.vectors();
                size.vectors += vectors.live();
                size.segments += vectors.shape().0;
                size
            })
    }

    /// Every lane's index (the maintenance actor walks them).
    pub fn lanes(&self) -> Vec<Arc<LaneIndex>> {
        self.lanes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// Queues current memories for indexing (replacing an entry of the same id); they are
    /// searchable once [`SearchEngine::flush`] returns. Returns the lanes that grew.
    pub fn stage(
        &self,
        items: impl IntoIterator<Item = (Memory, Option<Vec<f32>>)>,
    ) -> Result<Vec<Arc<LaneIndex>>, SearchError> {
        self.stage_docs(
            items
                .into_iter()
                .map(|(memory, vector)| (IndexDoc::of(&memory), vector)),
        )
    }

    /// [`SearchEngine::stage`] for any indexable document.
    pub fn stage_docs(
        &self,
        items: impl IntoIterator<Item = (IndexDoc, Option<Vec<f32>>)>,
    ) -> Result<Vec<Arc<LaneIndex>>, SearchError> {
        self.stage_in_pieces(
            items
                .into_iter()
                .map(|(doc, vector)| (doc, vector, Vec::new())),
        )
    }

    /// [`SearchEngine::stage_docs`] for documents that are also read in pieces (vault chunks):
    /// each comes with its pieces' vectors (maybe none), and its vector similarity to a query
    /// is its best piece's (see [`with_pieces`]). Pieces of the wrong length are an error, as a
    /// wrong vector is.
    pub fn stage_in_pieces(
        &self,
        items: impl IntoIterator<Item = (IndexDoc, Option<Vec<f32>>, Vec<Vec<f32>>)>,
    ) -> Result<Vec<Arc<LaneIndex>>, SearchError> {
        let mut grown: Vec<Arc<LaneIndex>> = Vec::new();
        for (doc, vector, pieces) in items {
            if let Some(piece) = pieces.iter().find(|p| p.len() != self.dims) {
                return Err(SearchError::Vector(vectors::VectorError::Dimensions {
                    expected: self.dims,
                    got: piece.len(),
                }));
            }
            let lane = self.lane_or_create(&doc.lane);
            let slot = {
                let mut docs = lane.docs_mut();
                if let Some(old) = docs.by_id.get(&doc.id).copied() {
                    docs.retire(old);
                    lane.vectors_mut().remove(old);
                    self.text.delete(lane.key(old))?;
                }
                let slot = docs.push(&doc, self.keeps_texts);
                if !pieces.is_empty() {
                    docs.pieces.insert(slot, pieces.concat());
                }
                // Inside the documents' lock: whoever reads the slots holds every vector
                // of the slots it sees (`nearest_ahead`).
                if let Some(vector) = vector {
                    lane.vectors_mut().insert(slot, vector)?;
                }
                slot
            };
            self.text.add(lane.key(slot), &lane.term, &doc.text)?;
            if !grown.iter().any(|l| Arc::ptr_eq(l, &lane)) {
                grown.push(lane);
            }
        }
        Ok(grown)
    }

    /// Waits until everything staged is searchable.
    pub async fn flush(&self) -> Result<(), SearchError> {
        Ok(self.text.flush().await?)
    }

    /// Waits, only if needed, until everything staged before this call is searchable by
    /// keyword (vectors are at once). Searches call it first.
    pub async fn settle(&self) -> Result<(), SearchError> {
        Ok(self.text.settle().await?)
    }

    /// Forgets every lane of a workspace (it moved to another node of a cluster). A search of
    /// one of its lanes meanwhile finds nothing; a later rebuild starts them afresh.
    pub fn drop_workspace(&self, workspace_id: Uuid) -> Result<(), SearchError> {
        let dropped: Vec<Arc<LaneIndex>> = {
            let mut lanes = self.lanes.write().unwrap_or_else(|e| e.into_inner());
            let keys: Vec<Lane> = lanes
                .keys()
                .filter(|lane| lane.workspace_id == workspace_id)
                .cloned()
                .collect();
            keys.iter().filter_map(|lane| lanes.remove(lane)).collect()
        };
        for lane in dropped {
            self.text.delete_lane(&lane.term)?;
        }
        Ok(())
    }

    /// Takes memories out of the index (deleted, superseded, forgotten).
    pub fn remove(&self, lane: &Lane, ids: &[Uuid]) -> Result<(), SearchError> {
        let Some(index) = self.lane(lane) else {
            return Ok(());
        };
        for id in ids {
            let slot = {
                let mut docs = index.docs_mut();
                let Some(slot) = docs.by_id.remove(id) else {
                    continue;
                };
                docs.retire(slot);
                slot
            };
            index.vectors_mut().remove(slot);
            self.text.delete(index.key(slot))?;
        }
        Ok(())
    }

    /// Refreshes what the index keeps of a memory edited in place (fields, feedback). A memory
    /// that is no longer current or was deleted is taken out.
    pub fn refresh(&self, memory: &Memory) {
        let lane = Lane {
            workspace_id: memory.workspace_id,
            scope: memory.scope.clone(),
        };
        let Some(index) = self.lane(&lane) else {
            return;
        };
        let slot = {
            let mut docs = index.docs_mut();
            let Some(slot) = docs.by_id.get(&memory.id).copied() else {
                return;
            };
            if memory.is_current {
                docs.refresh(slot, &IndexDoc::of(memory));
                return;
            }
            docs.by_id.remove(&memory.id);
            docs.retire(slot);
            slot
        };
        index.vectors_mut().remove(slot);
        if let Err(e) = self.text.delete(index.key(slot)) {
            tracing::error!(error = %e, "keyword index update failed");
        }
    }

    /// Refreshes the ranking fields (feedback, category, project) of an indexed document; a
    /// document the index does not hold is ignored.
    pub fn refresh_doc(&self, doc: &IndexDoc) {
        let Some(index) = self.lane(&doc.lane) else {
            return;
        };
        let mut docs = index.docs_mut();
        if let Some(slot) = docs.by_id.get(&doc.id).copied() {
            docs.refresh(slot, doc);
        }
    }

    /// What the index keeps of a live memory of a lane for a save's comparisons; `None` when
    /// it holds no such memory or keeps no texts.
    pub fn kept(&self, lane: &Lane, id: Uuid) -> Option<Kept> {
        let index = self.lane(lane)?;
        let docs = index.docs();
        let slot = *docs.by_id.get(&id)? as usize;
        let doc = &docs.slots[slot];
        Some(Kept {
            text: docs.kept.get(slot)?.as_ref()?.text.clone(),
            speaker_key: doc
                .speaker
                .map(|number| docs.speaker_keys[number as usize].clone())
                .unwrap_or_default(),
        })
    }

    /// Whether a lane may hold a current memory of `project` with this content hash: `false`
    /// only when the engine keeps texts, has the lane loaded, and holds no live memory with
    /// that key (every stored current memory is indexed; one stored an instant ago and not
    /// yet indexed is refused by the database's dedup index all the same).
    pub fn may_hold(&self, lane: &Lane, project: &str, content_hash: &str) -> bool {
        if !self.keeps_texts {
            return true;
        }
        let Some(index) = self.lane(lane) else {
            return true;
        };
        let held = index
            .docs()
            .dedup_keys
            .contains_key(&dedup_key(project, content_hash));
        held
    }

    /// Live memories indexed in a lane.
    pub fn lane_len(&self, lane: &Lane) -> usize {
        self.lane(lane).map_or(0, |index| index.docs().by_id.len())
    }

    /// The stored vector of a memory in a lane.
    pub fn vector(&self, lane: &Lane, id: Uuid) -> Option<Vec<f32>> {
        let index = self.lane(lane)?;
        let slot = index.docs().by_id.get(&id).copied()?;
        let vectors = index.vectors();
        vectors.get(slot)
    }

    /// The `k` memories of a lane nearest to `vector` that pass `filter`, most similar first.
    pub fn nearest(
        &self,
        lane: &Lane,
        vector: &[f32],
        k: usize,
        filter: &Filter,
    ) -> Vec<Neighbour> {
        let Some(index) = self.lane(lane) else {
            return Vec::new();
        };
        let docs = index.docs();
        let accept = |slot: Slot| docs.accepts(slot, filter);
        let found = index.vectors().nearest(vector, k, &accept);
        found
            .into_iter()
            .map(|(slot, similarity)| Neighbour {
                id: docs.slots[slot as usize].id,
                similarity,
            })
            .collect()
    }

    /// Ranks the lane's memories for a query: keyword and vector candidates, fused, with
    /// recency and feedback applied. Returns up to `2 × limit` hits, best first (the caller
    /// re-checks them against the database and keeps `limit`).
    pub fn search(&self, lane: &Lane, query: &Query<'_>) -> Result<Vec<Hit>, SearchError> {
        self.search_with(lane, query, None)
    }

    /// Candidates from each ranking: enough to fuse well, and within the HNSW segments'
    /// `ef_search` (asking for more turns their search into an exact scan).
    fn pool(&self, limit: usize) -> usize {
        let ceiling = self.vector_config.ef_search.max(limit);
        (limit * 4).max(50).min(ceiling)
    }

    /// The keyword candidates of a hybrid search (BM25 over the lane, then the index's own
    /// filters), taken apart so that they can be found while the query is being embedded;
    /// [`SearchEngine::search_with`] uses them. `None` when the lane has no index.
    pub fn keyword_candidates(
        &self,
        lane: &Lane,
        text: &str,
        filter: &Filter,
        limit: usize,
    ) -> Result<Option<KeywordCandidates>, SearchError> {
        let Some(index) = self.lane(lane) else {
            return Ok(None);
        };
        Ok(Some(KeywordCandidates {
            index: index.number,
            hits: self.keyword(&index, text, filter, self.pool(limit))?,
        }))
    }

    fn keyword(
        &self,
        index: &LaneIndex,
        text: &str,
        filter: &Filter,
        pool: usize,
    ) -> Result<Vec<(Slot, f32)>, SearchError> {
        let hits = self.text.search(&index.term, text, pool)?;
        let docs = index.docs();
        Ok(hits
            .into_iter()
            .filter(|(key, _)| (key >> 32) as u32 == index.number)
            .map(|(key, score)| ((key & 0xffff_ffff) as Slot, score))
            .filter(|(slot, _)| docs.accepts(*slot, filter))
            .collect())
    }

    /// [`SearchEngine::search`] with keyword candidates found beforehand for the same text,
    /// filter and limit ([`SearchEngine::keyword_candidates`]); they are found again when the
    /// lane's index was replaced in between.
    pub fn search_with(
        &self,
        lane: &Lane,
        query: &Query<'_>,
        keyword: Option<KeywordCandidates>,
    ) -> Result<Vec<Hit>, SearchError> {
        let Some(index) = self.lane(lane) else {
            return Ok(Vec::new());
        };
        let pool = self.pool(query.limit);
        let vector = query.vector.filter(|_| query.mode != Mode::Keyword);

        let keyword: Vec<(Slot, f32)> = match keyword {
            _ if query.mode == Mode::Semantic => Vec::new(),
            Some(found) if found.index == index.number => found.hits,
            _ => self.keyword(&index, query.text, &query.filter, pool)?,
        };

        let docs = index.docs();
        let vectors = index.vectors();
        let accept = |slot: Slot| {
            docs.slots
                .get(slot as usize)
                .is_some_and(|d| d.passes(&query.filter))
        };
        let parts = query.parts.filter(|p| p.weight > 0.0 && !p.best.is_empty());
        let part_of = |slot: Slot| {
            parts.and_then(|p| {
                let id = docs.slots.get(slot as usize)?.id;
                p.best.get(&id).copied()
            })
        };
        // A document's vector similarity: its own vector's cosine, read with its pieces', then
        // lifted toward its best part's.
        let read = |slot: Slot, v: &[f32], own: f32| {
            let whole = with_pieces(own, docs.best_piece(slot, v));
            match parts {
                Some(p) => lift(whole, part_of(slot), p.weight),
                None => whole,
            }
        };
        let semantic: Vec<(Slot, f32)> = match vector {
            Some(v) => {
                let mut found = vectors.search(v, pool, &accept);
                if let Some(p) = parts {
                    // Documents a part found join the candidates.
                    for id in p.best.keys() {
                        let Some(&slot) = docs.by_id.get(id) else {
                            continue;
                        };
                        if !accept(slot) || found.iter().any(|(s, _)| *s == slot) {
                            continue;
                        }
                        if let Some(stored) = vectors.get(slot) {
                            found.push((slot, cosine(v, &stored)));
                        }
                    }
                }
                if parts.is_some() || !docs.pieces.is_empty() {
                    // The candidates in the order of their similarity read with pieces and parts.
                    for (slot, similarity) in found.iter_mut() {
                        *similarity = read(*slot, v, *similarity);
                    }
                    found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                    found.truncate(pool);
                }
                found
            }
            None => Vec::new(),
        };

        // Thread context (lanes with threads only): the live neighbours of every candidate are
        // candidates too, each document's vector similarity is read with its neighbours', and
        // a document scores at least a share of its neighbours' scores (`in_thread`,
        // `with_neighbours`).
        let threaded = docs.threaded();
        let mut extra: Vec<Slot> = Vec::new();
        if threaded {
            let mut seen: HashSet<Slot> = keyword.iter().chain(&semantic).map(|c| c.0).collect();
            for &(slot, _) in keyword.iter().chain(&semantic) {
                let (prev, next) = docs.neighbours(slot);
                for neighbour in [prev, next].into_iter().flatten() {
                    if accept(neighbour) && seen.insert(neighbour) {
                        extra.push(neighbour);
                    }
                }
            }
        }
        let fused = fuse(&keyword, &semantic, &extra, query, |slot| {
            let v = vector?;
            let own = vectors.get(slot)?;
            let similarity = read(slot, v, cosine(v, &own));
            if !threaded {
                return Some(similarity);
            }
            let (prev, next) = docs.neighbours(slot);
            let context: Vec<Vec<f32>> = [prev, next]
                .into_iter()
                .flatten()
                .filter_map(|s| vectors.get(s))
                .collect();
            let context: Vec<&[f32]> = context.iter().map(Vec::as_slice).collect();
            Some(in_thread(v, &own, similarity, &context))
        });
        let fused = if threaded {
            with_neighbours(fused, |slot| docs.neighbours(slot))
        } else {
            fused
        };
        let named = docs.named_speakers(query.text);
        let fused = for_speakers(fused, &named, |slot| docs.slots[slot as usize].speaker);
        let now = query.filter.now_micros;
        let mut hits: Vec<(Slot, f32, i64)> = fused
            .into_iter()
            .map(|(slot, score)| {
                let doc = &docs.slots[slot as usize];
                (slot, signals(score, doc, now), doc.created_at)
            })
            .collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.2.cmp(&a.2)));
        hits.truncate(query.limit * 2);
        Ok(hits
            .into_iter()
            .map(|(slot, score, _)| Hit {
                id: docs.slots[slot as usize].id,
                score,
            })
            .collect())
    }
}

/// A document's vector similarity read with its pieces': its best piece's cosine when it has
/// pieces, else its own (`own`). A passage of the length the model was trained on is read more
/// sharply than the whole chunk around it; a chunk's own vector, the mean of its pieces', only
/// finds it among the nearest neighbours (measured on SciFact: `docs/BENCHMARKS.md`).
fn with_pieces(own: f32, best_piece: Option<f32>) -> f32 {
    best_piece.unwrap_or(own)
}

/// The vector similarity of a document read in its thread: the cosine between the query and
/// the document's vector plus `THREAD_CONTEXT` × each neighbour's (`context`). `similarity` is
/// the document's own (perhaps lifted) similarity; without neighbours it is the answer. A
/// short turn ("No, not at all") takes meaning from the turns around it.
fn in_thread(query: &[f32], own: &[f32], similarity: f32, context: &[&[f32]]) -> f32 {
    if context.is_empty() {
        return similarity;
    }
    let share = weights::THREAD_CONTEXT;
    let mut sum = own.to_vec();
    let mut dot = similarity;
    for neighbour in context {
        dot += share * cosine(query, neighbour);
        for (total, x) in sum.iter_mut().zip(neighbour.iter()) {
            *total += share * x;
        }
    }
    let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        dot / norm
    } else {
        similarity
    }
}

/// Each fused score raised to at least `THREAD_PREV` × the score of the document just before
/// it in its thread and `THREAD_NEXT` × the one just after (when those are candidates): the
/// answer to a question ranks near the question, whatever words it uses.
fn with_neighbours(
    fused: Vec<(Slot, f32)>,
    neighbours: impl Fn(Slot) -> (Option<Slot>, Option<Slot>),
) -> Vec<(Slot, f32)> {
    let scores: HashMap<Slot, f32> = fused.iter().copied().collect();
    let score_of = |slot: Option<Slot>| slot.and_then(|s| scores.get(&s)).copied().unwrap_or(0.0);
    fused
        .iter()
        .map(|&(slot, score)| {
            let (prev, next) = neighbours(slot);
            let raised = score
                .max(weights::THREAD_PREV * score_of(prev))
                .max(weights::THREAD_NEXT * score_of(next));
            (slot, raised)
        })
        .collect()
}

/// When the query names some of the lane's speakers (`named`), the memories of the other
/// speakers keep `OTHER_SPEAKER` of their score: "what does Melanie do to relax" is about what
/// Melanie said, not about what Caroline said to her. Memories without a speaker, and every
/// memory when the query names no speaker, keep theirs. It runs after the thread floors, so an
/// answer still ranks near a question asked by someone else.
fn for_speakers(
    fused: Vec<(Slot, f32)>,
    named: &HashSet<u32>,
    speaker: impl Fn(Slot) -> Option<u32>,
) -> Vec<(Slot, f32)> {
    if named.is_empty() {
        return fused;
    }
    fused
        .into_iter()
        .map(|(slot, score)| match speaker(slot) {
            Some(s) if !named.contains(&s) => (slot, score * weights::OTHER_SPEAKER),
            _ => (slot, score),
        })
        .collect()
}

/// Combines the keyword and vector rankings into one score in [0, 1] per candidate.
/// `similarity` gives the exact cosine of any candidate (for those only BM25 found). `extra`
/// are candidates neither ranking found (thread neighbours), scored like the others.
///
/// - `Fusion::Score`: `w × cosine + (1 - w) × BM25 / best BM25`.
/// - `Fusion::MinMax`: the same weights over min-max normalised values: each side is rescaled
///   to [0, 1] over this query's candidates (lowest 0, highest 1), so neither side's spread
///   (cosines crowd between 0.3 and 0.7) mutes the other. A candidate one side did not find
///   gets that side's 0 for BM25 and its exact cosine, rescaled, for vectors.
/// - `Fusion::Rrf`: reciprocal-rank fusion, divided by its best possible value.
fn fuse(
    keyword: &[(Slot, f32)],
    semantic: &[(Slot, f32)],
    extra: &[Slot],
    query: &Query<'_>,
    similarity: impl Fn(Slot) -> Option<f32>,
) -> Vec<(Slot, f32)> {
    let best_bm25 = keyword.iter().map(|k| k.1).fold(0.0_f32, f32::max);
    let least_bm25 = keyword.iter().map(|k| k.1).fold(f32::INFINITY, f32::min);
    let min_max = query.fusion == Fusion::MinMax;
    let mut candidates: HashMap<Slot, (Option<usize>, Option<usize>, f32)> = HashMap::new();
    for (rank, (slot, bm25)) in keyword.iter().enumerate() {
        let normalised = if min_max {
            unit(*bm25, least_bm25, best_bm25)
        } else if best_bm25 > 0.0 {
            bm25 / best_bm25
        } else {
            0.0
        };
        candidates.insert(*slot, (Some(rank), None, normalised));
    }
    for (rank, (slot, _)) in semantic.iter().enumerate() {
        candidates.entry(*slot).or_insert((None, None, 0.0)).1 = Some(rank);
    }
    for slot in extra {
        candidates.entry(*slot).or_insert((None, None, 0.0));
    }
    let cosines: HashMap<Slot, f32> = match query.mode {
        Mode::Keyword => HashMap::new(),
        Mode::Semantic | Mode::Hybrid => candidates
            .keys()
            .map(|&slot| (slot, similarity(slot).unwrap_or(0.0).max(0.0)))
            .collect(),
    };
    let cosine = |slot: Slot| cosines.get(&slot).copied().unwrap_or(0.0);
    let (least_cosine, best_cosine) = cosines
        .values()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &c| {
            (lo.min(c), hi.max(c))
        });
    let w = query.semantic_weight.clamp(0.0, 1.0);
    candidates
        .into_iter()
        .map(|(slot, (keyword_rank, semantic_rank, bm25))| {
            let score = match query.mode {
                Mode::Keyword => bm25,
                Mode::Semantic => cosine(slot),
                Mode::Hybrid => match query.fusion {
                    Fusion::Score => w * cosine(slot) + (1.0 - w) * bm25,
                    Fusion::MinMax => {
                        w * unit(cosine(slot), least_cosine, best_cosine) + (1.0 - w) * bm25
                    }
                    Fusion::Rrf => {
                        let part = |rank: Option<usize>| {
                            rank.map_or(0.0, |r| 1.0 / (weights::RRF_K + r as f32 + 1.0))
                        };
                        (part(keyword_rank) + part(semantic_rank)) / (2.0 / (weights::RRF_K + 1.0))
                    }
                },
            };
            (slot, score.clamp(0.0, 1.0))
        })
        .collect()
}

/// `value` rescaled from `[least, best]` to [0, 1]; 1 when every value is the same.
fn unit(value: f32, least: f32, best: f32) -> f32 {
    if best > least {
        ((value - least) / (best - least)).clamp(0.0, 1.0)
    } else {
        1.0
    }
}

/// Applies recency and feedback to a fused score; the result stays in [0, 1].
fn signals(score: f32, doc: &Doc, now_micros: i64) -> f32 {
    let age_days = ((now_micros - doc.created_at).max(0) as f32) / 86_400_000_000.0;
    let recency = 1.0 + weights::RECENCY_BOOST * (-age_days / weights::RECENCY_DAYS).exp();
    let helpful = 1.0 + weights::HELPFUL * doc.helpful.min(weights::FEEDBACK_CAP) as f32;
    let not_helpful = weights::NOT_HELPFUL.powi(doc.not_helpful.min(weights::FEEDBACK_CAP) as i32);
    (score * recency * helpful * not_helpful).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests;
