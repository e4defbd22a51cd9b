//! Per-lane vector index for unit-length embeddings.
//!
//! Design:
//! - New vectors go to an exact-search *tail*: one flat vector of halves, scanned by brute force.
//! - Maintenance folds a full tail into an HNSW *segment* (a [`Graph`]): appended to a copy of
//!   the smallest segment that has room (fewer than `segment_max` points, at most half of them
//!   dead), or built as a new segment when none has. So a lane holds one segment per
//!   `segment_max` vectors and a search (the save path's neighbour lookup above all) walks one
//!   graph, not one per size class of a merge scheme; and every vector is linked into a graph
//!   once, not again at each merge. A segment more than half dead is rebuilt from its live
//!   points alone. Maintenance is split into [`LaneVectors::plan`] (snapshot, read access),
//!   [`LaneVectors::build`] (CPU heavy, no lock) and [`LaneVectors::install`] (write access),
//!   so searches keep running during a build: a segment is appended to by copying its graph
//!   (shared by `Arc` with the job) and installing the copy in its place.
//! - Each vector is stored exactly once: in the tail or in one segment's HNSW points (rebuilds
//!   read the points back from the HNSW). A slot -> location map is the source of truth: an
//!   entry is live only while the map points at it. Removed or replaced entries become dead;
//!   dead entries are skipped at search time and dropped when their segment or tail prefix is
//!   rebuilt.
//! - Vectors are stored in half precision (IEEE 754 binary16: 2 bytes a dimension instead of 4),
//!   queries are rounded the same way, and products are summed in `f32`. For unit vectors the
//!   rounding moves a cosine by about 1e-4 (under 1e-3 in the unit test); it halves the largest
//!   part of a lane's memory.
//!   The database keeps the `f32` vectors, so nothing is lost: indexes are rebuilt from them.
//! - Distance is `1 - dot(a, b)` (cosine distance for unit vectors); scores are cosine similarity.
//!   The tail is exact, segments are approximate (HNSW), with an exact fallback when a filter
//!   leaves a segment's HNSW answer short.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, RwLock};

use half::f16;
use half::slice::HalfFloatSliceExt;

use super::hnsw::Graph;

/// Identifier of an entry in a lane (assigned by the caller).
pub type Slot = u32;

/// Seed for HNSW construction, so that segment layouts are reproducible.
const BUILD_SEED: u64 = 0x6d65_6d76_6175_6c74;

/// Source of unique lane identities, so that a job is never installed into another lane.
static NEXT_LANE_ID: AtomicU64 = AtomicU64::new(1);

/// Tuning of a lane's index.
#[derive(Debug, Clone)]
pub struct VectorConfig {
    /// Tail length (entries, dead ones included) at which the tail is folded into a segment.
    pub tail_max: usize,
    /// Points (dead ones included) past which a segment takes no more appended folds; a full
    /// tail then starts a new segment. At least `tail_max`.
    pub segment_max: usize,
    /// HNSW construction breadth.
    pub ef_construction: usize,
    /// HNSW search breadth: each segment's HNSW answer holds at most this many candidates.
    pub ef_search: usize,
    /// HNSW search breadth of [`LaneVectors::nearest`], the save path's lookup of the few
    /// memories nearest a new one.
    pub ef_nearest: usize,
}

impl Default for VectorConfig {
    fn default() -> Self {
        Self {
            tail_max: 2048,
            // 262,144 halves of 384 dimensions are 200 MB; a fold copies the graph it appends
            // to (the original is searched meanwhile), so this bounds that copy.
            segment_max: 262_144,
            // On 20,000 and 96,000 memory vectors of the scale bench (MiniLM), 300 of its
            // vectors as queries: 200 gave recall@10 0.993 / 0.985 against the exact scan at
            // ef_search 100, for 0.18 / 0.26 ms of one core per vector built; 100 gave 0.989 at
            // 20,000 for 0.095 ms. Every memory vector is built once per level, on a core the
            // model needs for the next import batch or save: with 100, an import of 100,000 ran
            // 529 lines/s against 504 (Zen 5), the memories created within the spread of runs
            // at 200 and LoCoMo's figures unchanged (docs/BENCHMARKS.md). The Context Vault
            // keeps 200 ([`VectorConfig::for_vault`]).
            ef_construction: 100,
            ef_search: 100,
            // A save asks for its 5 nearest, to find near-duplicates and the facts it may
            // update. 100 -> 32 on a 40,000-line import of the scale bench: the lookup took
            // 0.29 -> 1.04 ms a line before, 0.20 -> 0.57 ms after, the import 198.6 -> 184.7 s,
            // with the same memories created and the same 18 fact updates
            // (docs/BENCHMARKS.md).
            ef_nearest: 32,
        }
    }
}

impl VectorConfig {
    /// The Context Vault's indexes (chunks and the facts cited from them): graphs built 200
    /// wide. They grow at the documents' pace, and their vectors alone are a retrieval mode of
    /// the vault: built 100 wide, SciFact's vectors-only ranking fell from nDCG@10 0.701 and
    /// R@100 0.943 to 0.700 and 0.940 (docs/BENCHMARKS.md).
    pub fn for_vault() -> Self {
        Self {
            ef_construction: 200,
            ..Self::default()
        }
    }
}

/// Errors of [`LaneVectors`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VectorError {
    #[error("vector has {got} dimensions, expected {expected}")]
    Dimensions { expected: usize, got: usize },
}

/// `vector` in half precision, as the lane stores it.
fn encode(vector: &[f32]) -> Box<[f16]> {
    let mut half = vec![f16::ZERO; vector.len()];
    half.convert_from_f32_slice(vector);
    half.into_boxed_slice()
}

/// Dot product over the common prefix of `a` and `b`, summed in `f32`: every distance of the
/// HNSW builds and searches and every exact scan goes through it (a kernel of
/// `memvault-kernels`, compiled optimised in every profile).
pub(super) use memvault_kernels::f16::dot;

/// Where a slot's live vector is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Location {
    /// Index into the tail.
    Tail(u32),
    /// Point `pid` of the segment with identity `segment`.
    Segment { segment: u64, pid: u32 },
}

/// An HNSW index over some entries, with a mutable dead mask. The graph is never changed in
/// place: a fold appends to a copy, installed as a new segment.
struct Segment {
    id: u64,
    /// The points' graph; point `pid` is the entry of `slots[pid]`.
    graph: Arc<Graph>,
    slots: Vec<Slot>,
    /// Dead mask, indexed by point id.
    dead: Vec<bool>,
    dead_count: usize,
}

impl Segment {
    fn len(&self) -> usize {
        self.dead.len()
    }

    fn live(&self) -> usize {
        self.len() - self.dead_count
    }

    fn is_live(&self, pid: usize) -> bool {
        !self.dead.get(pid).copied().unwrap_or(true)
    }

    /// More than half of the points are dead: rebuilt from the live ones, not appended to.
    fn is_dead_heavy(&self) -> bool {
        self.dead_count * 2 > self.len()
    }

    /// Exact scan of the live entries accepted by `filter` (asked only of those that would
    /// enter `top`).
    fn scan(&self, query: &[f16], filter: &dyn Fn(Slot) -> bool, top: &mut TopK) {
        for (pid, &slot) in self.slots.iter().enumerate() {
            if self.is_live(pid) {
                top.offer(slot, dot(query, self.graph.point(pid as u32)), filter);
            }
        }
    }
}

/// A search candidate.
#[derive(Debug, Clone, Copy)]
struct Scored {
    score: f32,
    slot: Slot,
}

impl Scored {
    /// `Less` when `self` ranks before `other`: higher score first, then lower slot.
    fn rank(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.slot.cmp(&other.slot))
    }
}

impl PartialEq for Scored {
    fn eq(&self, other: &Self) -> bool {
        self.rank(other) == Ordering::Equal
    }
}

impl Eq for Scored {}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored {
    /// Worse candidates are greater, so a max-heap keeps the worst on top.
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank(other)
    }
}

/// The `k` best candidates seen so far.
struct TopK {
    k: usize,
    heap: BinaryHeap<Scored>,
}

impl TopK {
    fn new(k: usize, capacity_hint: usize) -> Self {
        Self {
            k,
            heap: BinaryHeap::with_capacity(k.min(capacity_hint).saturating_add(1)),
        }
    }

    fn push(&mut self, slot: Slot, score: f32) {
        self.offer(slot, score, &|_| true);
    }

    /// [`TopK::push`] when `filter` accepts the slot, asked only when the candidate would
    /// enter: a scan pays for the filter (a document table lookup) on few of its entries.
    fn offer(&mut self, slot: Slot, score: f32, filter: &dyn Fn(Slot) -> bool) {
        if self.k == 0 {
            return;
        }
        // A NaN score (from a non-finite vector) ranks last.
        let score = if score.is_nan() {
            f32::NEG_INFINITY
        } else {
            score
        };
        let candidate = Scored { score, slot };
        if self.heap.len() < self.k {
            if filter(slot) {
                self.heap.push(candidate);
            }
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if candidate < *worst && filter(slot) {
                *worst = candidate;
            }
        }
    }

    fn into_sorted(self) -> Vec<(Slot, f32)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|s| (s.slot, s.score))
            .collect()
    }
}

/// The vector index of one lane. Not internally synchronised: wrap it in a `RwLock` (see
/// [`maintain`]).
pub struct LaneVectors {
    dims: usize,
    config: VectorConfig,
    lane_id: u64,
    /// Live entries and where they are stored (authoritative).
    locations: HashMap<Slot, Location>,
    /// Tail vectors, `dims` halves per entry.
    tail_data: Vec<f16>,
    tail_slots: Vec<Slot>,
    tail_dead: Vec<bool>,
    tail_dead_count: usize,
    /// Incremented whenever a prefix of the tail is drained, which renumbers tail entries.
    tail_epoch: u64,
    /// Oldest first.
    segments: Vec<Segment>,
    next_segment_id: u64,
}

/// A snapshot of maintenance work: owned copies of the points to fold or rebuild, and the graph
/// they are appended to, if any.
pub struct MergeJob {
    lane_id: u64,
    ef_construction: usize,
    dims: usize,
    /// The segment graph the points are appended to (to a copy of it), or `None` for a new
    /// graph of the points alone.
    base: Option<Arc<Graph>>,
    /// The points to build from or append, `dims` halves each.
    points: Vec<f16>,
    /// The slot of each point of the result: the base's points, then the new ones.
    slots: Vec<Slot>,
    origins: Vec<Location>,
    tail_prefix: usize,
    tail_epoch: u64,
    segment_ids: Vec<u64>,
}

/// A segment built from a [`MergeJob`], ready for [`LaneVectors::install`].
pub struct BuiltSegment {
    lane_id: u64,
    graph: Graph,
    /// The slot of each point, indexed by point id.
    slots: Vec<Slot>,
    /// Where each point came from, indexed by point id.
    origins: Vec<Location>,
    tail_prefix: usize,
    tail_epoch: u64,
    segment_ids: Vec<u64>,
}

impl LaneVectors {
    /// An empty lane for vectors of `dims` dimensions.
    pub fn new(dims: usize, config: VectorConfig) -> Self {
        Self {
            dims,
            config,
            lane_id: NEXT_LANE_ID.fetch_add(1, AtomicOrdering::Relaxed),
            locations: HashMap::new(),
            tail_data: Vec::new(),
            tail_slots: Vec::new(),
            tail_dead: Vec::new(),
            tail_dead_count: 0,
            tail_epoch: 0,
            segments: Vec::new(),
            next_segment_id: 0,
        }
    }

    /// Dimensions of the lane's vectors.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Adds (or replaces) the vector of `slot`; it goes to the exact tail. The vector should be
    /// unit length (it is not normalised here).
    pub fn insert(&mut self, slot: Slot, vector: Vec<f32>) -> Result<(), VectorError> {
        if vector.len() != self.dims {
            return Err(VectorError::Dimensions {
                expected: self.dims,
                got: vector.len(),
            });
        }
        // Never overwrite in place: a running build may hold the old entry, and install
        // recognises stale entries by their location.
        self.remove(slot);
        let index = self.tail_slots.len() as u32;
        self.tail_data.extend_from_slice(&encode(&vector));
        self.tail_slots.push(slot);
        self.tail_dead.push(false);
        self.locations.insert(slot, Location::Tail(index));
        Ok(())
    }

    /// Marks `slot` dead (no-op when unknown). Returns whether it was live.
    pub fn remove(&mut self, slot: Slot) -> bool {
        let Some(location) = self.locations.remove(&slot) else {
            return false;
        };
        match location {
            Location::Tail(index) => {
                if let Some(dead) = self.tail_dead.get_mut(index as usize) {
                    if !*dead {
                        *dead = true;
                        self.tail_dead_count += 1;
                    }
                }
            }
            Location::Segment { segment, pid } => {
                if let Some(position) = self.segment_position(segment) {
                    let seg = &mut self.segments[position];
                    if let Some(dead) = seg.dead.get_mut(pid as usize) {
                        if !*dead {
                            *dead = true;
                            seg.dead_count += 1;
                        }
                    }
                    if seg.live() == 0 {
                        // Nothing left to find: free the memory now.
                        self.segments.remove(position);
                    }
                }
            }
        }
        true
    }

    /// Number of live entries.
    pub fn live(&self) -> usize {
        self.locations.len()
    }

    /// A live slot's vector, wherever it is stored, as stored: rounded to half precision.
    pub fn get(&self, slot: Slot) -> Option<Vec<f32>> {
        Some(self.half(slot)?.to_f32_vec())
    }

    /// A live slot's stored vector.
    fn half(&self, slot: Slot) -> Option<&[f16]> {
        match *self.locations.get(&slot)? {
            Location::Tail(index) => self.tail_vector(index as usize),
            Location::Segment { segment, pid } => {
                let seg = &self.segments[self.segment_position(segment)?];
                if pid as usize >= seg.graph.len() {
                    return None;
                }
                Some(seg.graph.point(pid))
            }
        }
    }

    /// The `k` nearest of `slots` (exactly, each once) that are live and that `filter`
    /// accepts, best first, scored as every search scores them; ties broken by slot.
    pub fn nearest_of(
        &self,
        query: &[f32],
        k: usize,
        slots: impl IntoIterator<Item = Slot>,
        filter: &dyn Fn(Slot) -> bool,
    ) -> Vec<(Slot, f32)> {
        if k == 0 || query.len() != self.dims {
            return Vec::new();
        }
        let query = encode(query);
        let mut top = TopK::new(k, k);
        for slot in slots {
            if let Some(vector) = self.half(slot).filter(|_| filter(slot)) {
                top.push(slot, dot(&query, vector));
            }
        }
        top.into_sorted()
    }

    /// The `k` nearest live slots with cosine similarity, best first, among those `filter`
    /// accepts. Exact over the tail; HNSW over each segment. When a segment's HNSW answer has
    /// fewer than `k` entries that pass `filter` and are live while the segment holds more live
    /// entries, that segment is scanned exactly instead. Segments no larger than the search's
    /// breadth (`ef_search`, at least `k`) are always scanned exactly. Ties are broken by slot.
    /// A query of the wrong length finds nothing.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        filter: &dyn Fn(Slot) -> bool,
    ) -> Vec<(Slot, f32)> {
        self.search_wide(query, k, self.config.ef_search, filter)
    }

    /// [`LaneVectors::search`] `ef_nearest` wide: for the few nearest entries of a new one
    /// (narrower, so cheaper; the nearest of all are the ones a narrow search misses least).
    pub fn nearest(
        &self,
        query: &[f32],
        k: usize,
        filter: &dyn Fn(Slot) -> bool,
    ) -> Vec<(Slot, f32)> {
        self.search_wide(query, k, self.config.ef_nearest, filter)
    }

    fn search_wide(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        filter: &dyn Fn(Slot) -> bool,
    ) -> Vec<(Slot, f32)> {
        if k == 0 || query.len() != self.dims || self.locations.is_empty() {
            return Vec::new();
        }
        let query = encode(query);
        let query = &query[..];
        let ef = ef.max(k);
        let mut top = TopK::new(k, self.live());
        self.scan_tail(query, filter, &mut top);
        let mut found = Vec::new();
        for seg in &self.segments {
            if seg.live() == 0 {
                continue;
            }
            if seg.len() <= ef {
                seg.scan(query, filter, &mut top);
                continue;
            }
            found.clear();
            for near in seg.graph.search(query, ef) {
                let pid = near.id as usize;
                let Some(&slot) = seg.slots.get(pid) else {
                    continue;
                };
                if seg.is_live(pid) && filter(slot) {
                    // Rescore with the same function as the exact paths, for consistent scores.
                    found.push((slot, dot(query, seg.graph.point(near.id))));
                }
            }
            if found.len() < k && seg.live() > found.len() {
                seg.scan(query, filter, &mut top);
            } else {
                for &(slot, score) in &found {
                    top.push(slot, score);
                }
            }
        }
        top.into_sorted()
    }

    /// Exact brute force over every live entry accepted by `filter`, best first.
    pub fn search_exact(
        &self,
        query: &[f32],
        k: usize,
        filter: &dyn Fn(Slot) -> bool,
    ) -> Vec<(Slot, f32)> {
        if k == 0 || query.len() != self.dims || self.locations.is_empty() {
            return Vec::new();
        }
        let query = encode(query);
        let query = &query[..];
        let mut top = TopK::new(k, self.live());
        self.scan_tail(query, filter, &mut top);
        for seg in &self.segments {
            seg.scan(query, filter, &mut top);
        }
        top.into_sorted()
    }

    /// Whether maintenance has work: the tail is at least `tail_max` long (dead entries
    /// included), or a segment is more than half dead.
    pub fn needs_maintenance(&self) -> bool {
        self.tail_slots.len() >= self.tail_max() || self.dead_heavy_segment().is_some()
    }

    /// Takes a snapshot of the work, or `None`. Folding a full tail comes first: its oldest
    /// entries, as many as the segment they go to has room for, are appended to the smallest
    /// segment with room (see [`LaneVectors::append_base`]) or make a new one. Otherwise a
    /// segment more than half dead is rebuilt from its live points.
    pub fn plan(&self) -> Option<MergeJob> {
        let mut job = MergeJob {
            lane_id: self.lane_id,
            ef_construction: self.config.ef_construction.max(1),
            dims: self.dims,
            base: None,
            points: Vec::new(),
            slots: Vec::new(),
            origins: Vec::new(),
            tail_prefix: 0,
            tail_epoch: self.tail_epoch,
            segment_ids: Vec::new(),
        };
        if self.tail_slots.len() >= self.tail_max() {
            let mut room = self.segment_max();
            if let Some(position) = self.append_base() {
                let seg = &self.segments[position];
                room -= seg.len();
                job.base = Some(Arc::clone(&seg.graph));
                job.slots.extend_from_slice(&seg.slots);
                job.origins
                    .extend((0..seg.len() as u32).map(|pid| Location::Segment {
                        segment: seg.id,
                        pid,
                    }));
                job.segment_ids.push(seg.id);
            }
            let prefix = self.tail_slots.len().min(room);
            let live = prefix - self.tail_dead[..prefix].iter().filter(|&&d| d).count();
            job.points.reserve_exact(live * self.dims);
            job.slots.reserve(live);
            job.origins.reserve(live);
            for (index, (&slot, &dead)) in self.tail_slots[..prefix]
                .iter()
                .zip(&self.tail_dead)
                .enumerate()
            {
                if dead {
                    continue;
                }
                let Some(vector) = self.tail_vector(index) else {
                    continue;
                };
                job.points.extend_from_slice(vector);
                job.slots.push(slot);
                job.origins.push(Location::Tail(index as u32));
            }
            job.tail_prefix = prefix;
            return Some(job);
        }
        let seg = &self.segments[self.dead_heavy_segment()?];
        let live = seg.live();
        job.points.reserve_exact(live * self.dims);
        job.slots.reserve_exact(live);
        job.origins.reserve_exact(live);
        for (pid, &slot) in seg.slots.iter().enumerate() {
            if !seg.is_live(pid) {
                continue;
            }
            let pid = pid as u32;
            job.points.extend_from_slice(seg.graph.point(pid));
            job.slots.push(slot);
            job.origins.push(Location::Segment {
                segment: seg.id,
                pid,
            });
        }
        job.segment_ids.push(seg.id);
        Some(job)
    }

    /// Builds the segment of a job: CPU heavy (on the calling thread), to be called without
    /// holding any lock. Pure function of the job.
    pub fn build(job: MergeJob) -> BuiltSegment {
        let MergeJob {
            lane_id,
            ef_construction,
            dims,
            base,
            points,
            slots,
            origins,
            tail_prefix,
            tail_epoch,
            segment_ids,
        } = job;
        let graph = match base {
            Some(base) => {
                let mut graph = Graph::clone(&base);
                drop(base);
                let appended = slots.len().saturating_sub(graph.len());
                graph.append(appended, points, ef_construction);
                graph
            }
            None => Graph::build(dims, slots.len(), points, ef_construction, BUILD_SEED),
        };
        BuiltSegment {
            lane_id,
            graph,
            slots,
            origins,
            tail_prefix,
            tail_epoch,
            segment_ids,
        }
    }

    /// Installs a built segment in place of the segments and tail prefix it was built from.
    /// Entries removed or replaced while the build ran stay removed or keep their newest vector.
    /// Returns false and changes nothing when the job no longer applies (another install
    /// changed its sources, or it belongs to another lane).
    pub fn install(&mut self, built: BuiltSegment) -> bool {
        if built.lane_id != self.lane_id
            || built.origins.len() != built.slots.len()
            || built.graph.len() != built.slots.len()
        {
            return false;
        }
        if built.tail_prefix > 0
            && (built.tail_epoch != self.tail_epoch || built.tail_prefix > self.tail_slots.len())
        {
            return false;
        }
        let mut positions = Vec::with_capacity(built.segment_ids.len());
        for &id in &built.segment_ids {
            match self.segment_position(id) {
                Some(position) => positions.push(position),
                None => return false,
            }
        }

        // Entries whose location is still the one they were copied from move to the new
        // segment; the others were removed or replaced meanwhile and are dead in it.
        let id = self.next_segment_id;
        self.next_segment_id += 1;
        let mut dead = vec![false; built.origins.len()];
        let mut dead_count = 0;
        for (pid, (origin, &slot)) in built.origins.iter().zip(&built.slots).enumerate() {
            match self.locations.get_mut(&slot) {
                Some(location) if location == origin => {
                    *location = Location::Segment {
                        segment: id,
                        pid: pid as u32,
                    };
                }
                _ => {
                    dead[pid] = true;
                    dead_count += 1;
                }
            }
        }

        positions.sort_unstable();
        for &position in positions.iter().rev() {
            self.segments.remove(position);
        }

        if built.tail_prefix > 0 {
            let prefix = built.tail_prefix;
            self.tail_data.drain(..prefix * self.dims);
            self.tail_slots.drain(..prefix);
            self.tail_dead.drain(..prefix);
            self.tail_dead_count = self.tail_dead.iter().filter(|&&d| d).count();
            self.tail_epoch += 1;
            for (index, (&slot, &dead)) in self.tail_slots.iter().zip(&self.tail_dead).enumerate() {
                if !dead {
                    self.locations.insert(slot, Location::Tail(index as u32));
                }
            }
            if self.tail_slots.is_empty() {
                // Give back the memory of a large fold.
                self.tail_data = Vec::new();
                self.tail_slots = Vec::new();
                self.tail_dead = Vec::new();
            }
        }

        if dead_count < dead.len() {
            self.segments.push(Segment {
                id,
                graph: Arc::new(built.graph),
                slots: built.slots,
                dead,
                dead_count,
            });
        }
        true
    }

    /// Counts for logs and benchmarks: (segments, tail length, dead entries).
    pub fn shape(&self) -> (usize, usize, usize) {
        let dead = self.tail_dead_count + self.segments.iter().map(|s| s.dead_count).sum::<usize>();
        (self.segments.len(), self.tail_slots.len(), dead)
    }

    fn tail_max(&self) -> usize {
        self.config.tail_max.max(1)
    }

    fn segment_max(&self) -> usize {
        self.config.segment_max.max(self.tail_max())
    }

    /// The segment a full tail is appended to: the smallest with fewer than `segment_max`
    /// points that is not more than half dead (the oldest of equals).
    fn append_base(&self) -> Option<usize> {
        let segment_max = self.segment_max();
        self.segments
            .iter()
            .enumerate()
            .filter(|(_, seg)| seg.len() < segment_max && !seg.is_dead_heavy())
            .min_by_key(|(_, seg)| seg.len())
            .map(|(position, _)| position)
    }

    /// The oldest segment more than half dead.
    fn dead_heavy_segment(&self) -> Option<usize> {
        self.segments.iter().position(Segment::is_dead_heavy)
    }

    fn tail_vector(&self, index: usize) -> Option<&[f16]> {
        let start = index.checked_mul(self.dims)?;
        self.tail_data.get(start..start.checked_add(self.dims)?)
    }

    fn segment_position(&self, id: u64) -> Option<usize> {
        self.segments.iter().position(|s| s.id == id)
    }

    fn scan_tail(&self, query: &[f16], filter: &dyn Fn(Slot) -> bool, top: &mut TopK) {
        for (index, (&slot, &dead)) in self.tail_slots.iter().zip(&self.tail_dead).enumerate() {
            if dead {
                continue;
            }
            if let Some(vector) = self.tail_vector(index) {
                top.offer(slot, dot(query, vector), filter);
            }
        }
    }
}

impl std::fmt::Debug for LaneVectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (segments, tail, dead) = self.shape();
        f.debug_struct("LaneVectors")
            .field("dims", &self.dims)
            .field("live", &self.live())
            .field("segments", &segments)
            .field("tail", &tail)
            .field("dead", &dead)
            .field("config", &self.config)
            .finish()
    }
}

impl std::fmt::Debug for MergeJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergeJob")
            .field("base", &self.base.as_ref().map(|graph| graph.len()))
            .field("points", &self.points.len())
            .field("tail_prefix", &self.tail_prefix)
            .field("segments", &self.segment_ids.len())
            .finish()
    }
}

impl std::fmt::Debug for BuiltSegment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltSegment")
            .field("points", &self.origins.len())
            .field("tail_prefix", &self.tail_prefix)
            .field("segments", &self.segment_ids.len())
            .finish()
    }
}

/// Runs maintenance to completion on a lane behind a `RwLock`: repeatedly plans (under a read
/// lock), builds (no lock) and installs (under a write lock), until `needs_maintenance()` is
/// false or installing fails twice in a row. Returns the number of segments built and installed.
pub fn maintain(lane: &RwLock<LaneVectors>) -> usize {
    let mut built = 0;
    let mut failures = 0;
    loop {
        let job = {
            let guard = lane.read().unwrap_or_else(|e| e.into_inner());
            if !guard.needs_maintenance() {
                break;
            }
            guard.plan()
        };
        let Some(job) = job else {
            break;
        };
        let segment = LaneVectors::build(job);
        let installed = lane
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .install(segment);
        if installed {
            built += 1;
            failures = 0;
        } else {
            failures += 1;
            if failures >= 2 {
                break;
            }
        }
    }
    built
}

#[cfg(test)]
mod tests;
