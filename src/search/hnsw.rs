//! A hierarchical navigable small world graph (HNSW: Malkov and Yashunin, 2016) over
//! half-precision unit vectors: the graph behind each segment of a lane's vector index
//! ([`super::vectors`]), built from a batch of points and grown by appending batches (to a
//! copy, while the original is searched).
//!
//! Written here instead of taken from a crate: instant-distance 0.6 (used before) built the
//! same vectors 7 times slower and searched them 3.5 times slower for the same recall (96,000
//! memory vectors, docs/BENCHMARKS.md). Here the points are one contiguous run of halves (the
//! crate boxed each point, so every distance began with a cache miss), layer 0 has 32 links a
//! node instead of 64, the build is one thread without locks, and the search breadth is an
//! argument of each search instead of fixed when the graph is built.
//!
//! Shape: `M` links per node on the upper layers and `2 * M` on layer 0; a node's level is drawn
//! from a seeded generator with `P(level >= l) = M^-l`; links are chosen by the paper's
//! heuristic (a candidate is kept only if it is nearer the node than every link kept before it),
//! both for a new node and when a neighbour's full list takes the new node in. Node ids are the
//! positions of the points given to [`Graph::build`] and then [`Graph::append`].

use std::cell::RefCell;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use half::f16;

use super::vectors::dot;

/// Links per node on the upper layers.
const M: usize = 16;
/// Links per node on layer 0.
const M0: usize = 2 * M;
/// Levels above this are not drawn (with `M` = 16 a level of 8 already needs 4e9 points).
const MAX_LEVEL: usize = 8;

/// A node and its distance to the point being searched for or inserted.
#[derive(Debug, Clone, Copy)]
pub struct Near {
    pub distance: f32,
    pub id: u32,
}

impl PartialEq for Near {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Near {}

impl PartialOrd for Near {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Near {
    /// Nearer first; ties by id, so builds and searches are deterministic.
    fn cmp(&self, other: &Self) -> Ordering {
        self.distance
            .total_cmp(&other.distance)
            .then(self.id.cmp(&other.id))
    }
}

/// Nodes seen by one search: a mark per node, cleared in O(1) by moving to the next epoch.
#[derive(Default)]
struct Visited {
    marks: Vec<u32>,
    epoch: u32,
}

impl Visited {
    fn start(&mut self, nodes: usize) {
        if self.marks.len() < nodes {
            self.marks.resize(nodes, 0);
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.marks.fill(0);
            self.epoch = 1;
        }
    }

    /// Marks `id`; false when it was marked already in this epoch.
    fn insert(&mut self, id: u32) -> bool {
        let mark = &mut self.marks[id as usize];
        if *mark == self.epoch {
            return false;
        }
        *mark = self.epoch;
        true
    }
}

/// The working memory of searches on this thread (reused: allocating a mark per node on every
/// search would cost more than the search).
#[derive(Default)]
struct Scratch {
    visited: Visited,
    candidates: BinaryHeap<Reverse<Near>>,
    results: BinaryHeap<Near>,
    /// The links of the node being expanded that were not visited yet.
    fresh: Vec<u32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// An HNSW graph over `len()` points of `dims` halves each.
#[derive(Clone)]
pub struct Graph {
    dims: usize,
    /// The points, `dims` halves each, in node order.
    points: Vec<f16>,
    /// Layer 0: per node a count, then `M0` link slots.
    zero: Vec<u32>,
    /// Upper layers: per node of level `l >= 1`, `l` blocks of a count then `M` link slots
    /// (block `i` is layer `i + 1`); empty for nodes of level 0.
    upper: Vec<Box<[u32]>>,
    /// The node the searches start from (one of the highest level).
    entry: u32,
    /// The highest level.
    top: usize,
    /// The levels' generator, where the last node's draw left it.
    state: u64,
}

/// splitmix64: the levels' generator (seeded, so a segment's graph is reproducible).
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Graph {
    /// Builds the graph of `len` points of `dims` halves each (`points` holds `len * dims`;
    /// `len` is cut to what it holds) by inserting them in order, each linked after a search
    /// `ef_construction` wide.
    pub fn build(
        dims: usize,
        len: usize,
        points: Vec<f16>,
        ef_construction: usize,
        seed: u64,
    ) -> Self {
        let mut graph = Graph {
            dims,
            points: Vec::new(),
            zero: Vec::new(),
            upper: Vec::new(),
            entry: 0,
            top: 0,
            state: seed,
        };
        graph.append(len, points, ef_construction);
        graph
    }

    /// Adds `len` points (`points` holds `len * dims` halves; `len` is cut to what it holds)
    /// after the graph's own, inserting them in order as [`Graph::build`] does: their ids
    /// follow the graph's last, the nodes already in it keep theirs. The levels continue the
    /// build's seeded sequence, so building in parts gives the graph of one build.
    pub fn append(&mut self, len: usize, points: Vec<f16>, ef_construction: usize) {
        let dims = self.dims;
        let len = match dims {
            0 => len,
            _ => len.min(points.len() / dims),
        };
        let first = self.len();
        self.points.extend_from_slice(&points[..len * dims]);
        self.zero.resize((first + len) * (M0 + 1), 0);
        let scale = 1.0 / (M as f64).ln();
        self.upper.reserve(len);
        for _ in 0..len {
            // A uniform draw in (0, 1]: 53 random bits, never 0.
            let uniform = ((next_random(&mut self.state) >> 11) + 1) as f64 / (1u64 << 53) as f64;
            let level = ((-uniform.ln() * scale) as usize).min(MAX_LEVEL);
            self.upper
                .push(vec![0u32; level * (M + 1)].into_boxed_slice());
        }
        let ef = ef_construction.max(1);
        SCRATCH.with(|scratch| {
            let scratch = &mut scratch.borrow_mut();
            let mut chosen = Vec::with_capacity(M0);
            let mut pool = Vec::with_capacity(M0 + 1);
            let mut kept = Vec::with_capacity(M0);
            for id in first as u32..(first + len) as u32 {
                self.insert(id, ef, scratch, &mut chosen, &mut pool, &mut kept);
            }
        });
    }

    pub fn len(&self) -> usize {
        self.zero.len() / (M0 + 1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The point of node `id`.
    pub fn point(&self, id: u32) -> &[f16] {
        let start = id as usize * self.dims;
        &self.points[start..start + self.dims]
    }

    /// The nodes nearest `query`, nearest first: the best `ef` found by a search `ef` wide on
    /// layer 0 (at least 1). Distance is `1 - dot`.
    pub fn search(&self, query: &[f16], ef: usize) -> Vec<Near> {
        if self.is_empty() {
            return Vec::new();
        }
        SCRATCH.with(|scratch| {
            let scratch = &mut scratch.borrow_mut();
            let mut entry = Near {
                distance: self.distance(query, self.entry),
                id: self.entry,
            };
            for layer in (1..=self.top).rev() {
                self.search_layer(query, &[entry], 1, layer, scratch);
                if let Some(best) = scratch.results.peek() {
                    entry = *best;
                }
            }
            self.search_layer(query, &[entry], ef.max(1), 0, scratch);
            std::mem::take(&mut scratch.results).into_sorted_vec()
        })
    }

    fn distance(&self, query: &[f16], id: u32) -> f32 {
        1.0 - dot(query, self.point(id))
    }

    /// Asks the CPU to bring node `id`'s point into the cache (a hint: nothing is read).
    #[inline]
    fn prefetch(&self, id: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let point = self.point(id);
            let start = point.as_ptr().cast::<i8>();
            for offset in (0..std::mem::size_of_val(point)).step_by(64) {
                // SAFETY: SSE is part of the x86-64 baseline, and a prefetch reads nothing: it
                // cannot fault, whatever the address (this one is inside `point`).
                unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset)) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = id;
    }

    fn level(&self, id: u32) -> usize {
        self.upper[id as usize].len() / (M + 1)
    }

    fn links(&self, id: u32, layer: usize) -> &[u32] {
        let block = if layer == 0 {
            let start = id as usize * (M0 + 1);
            &self.zero[start..start + M0 + 1]
        } else {
            let start = (layer - 1) * (M + 1);
            &self.upper[id as usize][start..start + M + 1]
        };
        &block[1..1 + block[0] as usize]
    }

    fn set_links(&mut self, id: u32, layer: usize, links: &[u32]) {
        let block = if layer == 0 {
            let start = id as usize * (M0 + 1);
            &mut self.zero[start..start + M0 + 1]
        } else {
            let start = (layer - 1) * (M + 1);
            &mut self.upper[id as usize][start..start + M + 1]
        };
        let count = links.len().min(block.len() - 1);
        block[0] = count as u32;
        block[1..1 + count].copy_from_slice(&links[..count]);
    }

    /// The paper's search on one layer: leaves the best `ef` nodes found in `scratch.results`
    /// (a max-heap: the farthest on top).
    fn search_layer(
        &self,
        query: &[f16],
        entries: &[Near],
        ef: usize,
        layer: usize,
        scratch: &mut Scratch,
    ) {
        let Scratch {
            visited,
            candidates,
            results,
            fresh,
        } = scratch;
        visited.start(self.len());
        candidates.clear();
        results.clear();
        for &entry in entries {
            if visited.insert(entry.id) {
                candidates.push(Reverse(entry));
                results.push(entry);
                if results.len() > ef {
                    results.pop();
                }
            }
        }
        while let Some(Reverse(nearest)) = candidates.pop() {
            if results
                .peek()
                .is_some_and(|farthest| results.len() >= ef && nearest.distance > farthest.distance)
            {
                break;
            }
            // The links not visited yet, then their distances in the same order, each point
            // fetched into the cache while the one before it is scored: a point read from
            // memory took about 500 ns to score, one in the cache 30 (docs/BENCHMARKS.md).
            fresh.clear();
            fresh.extend(
                self.links(nearest.id, layer)
                    .iter()
                    .copied()
                    .filter(|&id| visited.insert(id)),
            );
            if let Some(&first) = fresh.first() {
                self.prefetch(first);
            }
            for (i, &id) in fresh.iter().enumerate() {
                if let Some(&next) = fresh.get(i + 1) {
                    self.prefetch(next);
                }
                let distance = self.distance(query, id);
                let farthest = results.peek().map_or(f32::INFINITY, |f| f.distance);
                if results.len() < ef || distance < farthest {
                    let near = Near { distance, id };
                    candidates.push(Reverse(near));
                    results.push(near);
                    if results.len() > ef {
                        results.pop();
                    }
                }
            }
        }
    }

    /// Links node `id` into the graph (nodes below `id` are in it already).
    fn insert(
        &mut self,
        id: u32,
        ef: usize,
        scratch: &mut Scratch,
        chosen: &mut Vec<u32>,
        pool: &mut Vec<Near>,
        kept: &mut Vec<u32>,
    ) {
        let level = self.level(id);
        if id == 0 {
            self.entry = 0;
            self.top = level;
            return;
        }
        let start = id as usize * self.dims;
        // The point is copied out: the graph is changed while it is being linked.
        let point: Vec<f16> = self.points[start..start + self.dims].to_vec();
        let mut entries = vec![Near {
            distance: self.distance(&point, self.entry),
            id: self.entry,
        }];
        for layer in ((level + 1)..=self.top).rev() {
            self.search_layer(&point, &entries, 1, layer, scratch);
            if let Some(best) = scratch.results.peek() {
                entries = vec![*best];
            }
        }
        for layer in (0..=level.min(self.top)).rev() {
            self.search_layer(&point, &entries, ef, layer, scratch);
            entries = std::mem::take(&mut scratch.results).into_sorted_vec();
            let most = if layer == 0 { M0 } else { M };
            self.select(&entries, most, chosen);
            self.set_links(id, layer, chosen);
            for &neighbour in chosen.iter() {
                self.link_back(neighbour, id, layer, most, pool, kept);
            }
        }
        if level > self.top {
            self.top = level;
            self.entry = id;
        }
    }

    /// The paper's neighbour heuristic: from `candidates` (nearest first, distances to the node
    /// being linked), keeps in `chosen` up to `most` that are each nearer that node than any
    /// candidate kept before them.
    fn select(&self, candidates: &[Near], most: usize, chosen: &mut Vec<u32>) {
        chosen.clear();
        for candidate in candidates {
            if chosen.len() == most {
                break;
            }
            let point = self.point(candidate.id);
            if chosen
                .iter()
                .all(|&kept| self.distance(point, kept) >= candidate.distance)
            {
                chosen.push(candidate.id);
            }
        }
    }

    /// Adds `new` to the links of `node` on `layer`; a full list is chosen again by the
    /// heuristic among its links and `new`.
    fn link_back(
        &mut self,
        node: u32,
        new: u32,
        layer: usize,
        most: usize,
        pool: &mut Vec<Near>,
        kept: &mut Vec<u32>,
    ) {
        let links = self.links(node, layer);
        if links.len() < most {
            kept.clear();
            kept.extend_from_slice(links);
            kept.push(new);
            self.set_links(node, layer, kept);
            return;
        }
        let point = self.point(node);
        pool.clear();
        // Each point fetched into the cache while the one before it is scored.
        let count = links.len() + 1;
        let at = |i: usize| links.get(i).copied().unwrap_or(new);
        self.prefetch(at(0));
        for i in 0..count {
            if i + 1 < count {
                self.prefetch(at(i + 1));
            }
            let id = at(i);
            pool.push(Near {
                distance: self.distance(point, id),
                id,
            });
        }
        pool.sort_unstable();
        self.select(pool, most, kept);
        self.set_links(node, layer, kept);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_unit(state: &mut u64, dims: usize) -> Vec<f32> {
        let v: Vec<f32> = (0..dims)
            .map(|_| (next_random(state) >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    }

    fn halves(v: &[f32]) -> Vec<f16> {
        v.iter().map(|&x| f16::from_f32(x)).collect()
    }

    #[test]
    fn empty_and_single_point_graphs() {
        let empty = Graph::build(4, 0, Vec::new(), 40, 1);
        assert!(empty.is_empty());
        assert!(empty.search(&halves(&[1.0, 0.0, 0.0, 0.0]), 10).is_empty());
        let one = Graph::build(2, 1, halves(&[0.0, 1.0]), 40, 1);
        let found = one.search(&halves(&[0.0, 1.0]), 10);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].id, 0);
        assert!(found[0].distance.abs() < 1e-3);
    }

    #[test]
    fn finds_what_the_exact_scan_finds() {
        // Clustered points (as sentence embeddings are), 32 dimensions.
        let dims = 32;
        let mut state = 7;
        let centres: Vec<Vec<f32>> = (0..20).map(|_| random_unit(&mut state, dims)).collect();
        let mut points = Vec::new();
        for i in 0..3000 {
            let noise = random_unit(&mut state, dims);
            let centre = &centres[i % centres.len()];
            let v: Vec<f32> = centre
                .iter()
                .zip(&noise)
                .map(|(c, n)| c + 0.4 * n)
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            points.extend(v.iter().map(|x| f16::from_f32(x / norm)));
        }
        let graph = Graph::build(dims, 3000, points.clone(), 200, 3);
        assert_eq!(graph.len(), 3000);
        let mut hits = 0;
        let queries = 100;
        for _ in 0..queries {
            let query = halves(&random_unit(&mut state, dims));
            let mut exact: Vec<Near> = (0..3000u32)
                .map(|id| Near {
                    distance: 1.0 - dot(&query, &points[id as usize * dims..][..dims]),
                    id,
                })
                .collect();
            exact.sort_unstable();
            let found = graph.search(&query, 100);
            assert!(found.windows(2).all(|w| w[0] <= w[1]), "nearest first");
            let top: Vec<u32> = found.iter().take(10).map(|n| n.id).collect();
            hits += exact[..10].iter().filter(|n| top.contains(&n.id)).count();
        }
        let recall = hits as f64 / (queries * 10) as f64;
        assert!(recall >= 0.95, "recall@10 {recall}");
    }

    #[test]
    fn every_point_finds_itself_and_builds_are_reproducible() {
        let dims = 16;
        let mut state = 11;
        let points: Vec<f16> = (0..1000)
            .flat_map(|_| halves(&random_unit(&mut state, dims)))
            .collect();
        let graph = Graph::build(dims, 1000, points.clone(), 40, 5);
        let again = Graph::build(dims, 1000, points.clone(), 40, 5);
        assert_eq!(graph.zero, again.zero);
        for id in 0..1000u32 {
            let found = graph.search(graph.point(id), 10);
            assert_eq!(found[0].id, id, "point {id} is its own nearest");
        }
        // A narrow search returns no more than asked.
        assert_eq!(graph.search(graph.point(0), 3).len(), 3);
    }

    #[test]
    fn appending_in_parts_builds_the_graph_of_one_build() {
        let dims = 16;
        let mut state = 13;
        let points: Vec<f16> = (0..900)
            .flat_map(|_| halves(&random_unit(&mut state, dims)))
            .collect();
        let whole = Graph::build(dims, 900, points.clone(), 40, 9);
        let mut parts = Graph::build(dims, 500, points[..500 * dims].to_vec(), 40, 9);
        parts.append(0, Vec::new(), 40);
        parts.append(400, points[500 * dims..].to_vec(), 40);
        assert_eq!(parts.len(), 900);
        assert_eq!(parts.zero, whole.zero);
        assert_eq!(parts.upper, whole.upper);
        assert_eq!((parts.entry, parts.top), (whole.entry, whole.top));
        for id in [0, 499, 500, 899] {
            assert_eq!(parts.search(parts.point(id), 5)[0].id, id);
        }
    }
}
