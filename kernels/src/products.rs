//! What the packed matrix products ([`crate::bf16`], [`crate::dense`]) share: the shape of a
//! panel and of a register tile, the split of a product into parallel tasks, the output buffer
//! those tasks share, and the choice of a tile's const-generic code by its height. The helpers
//! of their tests are at the end.

use rayon::prelude::*;

/// Output columns per panel: four 16-lane registers.
pub(crate) const PANEL: usize = 64;
/// Rows per register tile (4 x 6 sums, 4 panel loads and one broadcast: 29 of 32 registers).
pub(crate) const TILE: usize = 6;
/// Rows per parallel task: the grain of a product's split across threads.
pub(crate) const ROWS_PER_TASK: usize = 8 * TILE;

/// How many steps ahead a task's first tile asks for its panel's weights (`prefetcht0`; a step
/// is an input in `f32`, a pair of inputs in bfloat16: 256 bytes, so 8 KB ahead). That tile
/// reads the panel from memory, the tiles after it from the cache. `f32` products (Xeon with
/// AVX-512, rounds in turns): two callers of 4 memory texts each (a pass of about 120 rows a
/// core, 20 tiles a panel) ran 303-306 texts/s without the fetch and 323-337 with it, calls of
/// 256 338-342 and 353-362; 8, 16 or 64 steps ahead did no better, nor fetching in the first
/// task of a panel only. With this and the tasks panel by panel over all the rows (before the
/// chunks of [`for_each_task`]), 16 clients saving at 20,000 memories ran 243-257 saves/s
/// against 233-241 with neither. The bfloat16 kernel on the same Xeon, where `vdpbf16ps` runs
/// at a quarter of the rate and the products bound the tile, moved inside the noise (190-204
/// against 190-195 texts/s, callers of 4); not yet measured where bfloat16 is the faster
/// kernel (docs/BENCHMARKS.md).
pub(crate) const FETCH_AHEAD: usize = 32;

/// The output buffer, shared by the tasks of one product (each writes its own part).
pub(crate) struct SharedOut(*mut f32);

// SAFETY: the tasks of one product write disjoint parts of the buffer ([`for_each_task`]).
unsafe impl Sync for SharedOut {}

impl SharedOut {
    pub(crate) fn new(buffer: *mut f32) -> Self {
        SharedOut(buffer)
    }

    /// The float `offset` places into the buffer.
    ///
    /// # Safety
    /// `offset` is inside the buffer's allocation.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) unsafe fn at(&self, offset: usize) -> *mut f32 {
        // SAFETY: the caller's guarantee.
        unsafe { self.0.add(offset) }
    }
}

/// Rows per chunk of a product's split ([`for_each_task`]): about 200 KB of a 384-wide layer's
/// rows in bfloat16 (400 KB in `f32`), 0.8 MB (1.5 MB) of a 1536-wide one, which a core's L2
/// (2 MB on the Xeons measured) holds beside the panel it works on.
pub(crate) const ROWS_PER_CHUNK: usize = 256;

/// Runs `task(first, count, panel)`, in parallel, for every block of `rows_per_task` rows
/// (`count` of them, fewer in the last block) of a `rows`-row product and each of its `panels`
/// panels: the tasks own disjoint rows of disjoint columns.
///
/// The tasks go chunk by chunk ([`ROWS_PER_CHUNK`] rows, whole blocks), within a chunk panel by
/// panel, each panel's blocks in turn. A thread that takes a run of them reads a panel from
/// memory once and from its cache for the chunk's other blocks, and the chunk's rows from its
/// cache for every panel after the first. Block by block, each block would read the whole
/// weight matrix again (42 MB of `f32` weights over the encoder's layers); panel by panel over
/// all the rows, each panel would read all the rows again. The encoder's passes hold at most
/// 512 rows (its token budget), two chunks. The four shapes of its layers, rounds in turns
/// against panel by panel over all the rows (Xeon with AMX, 2026-11-30, a host whose speed
/// moved by half; medians): at 512 rows, bfloat16 on tiles 7.9 against 8.4 ms on one thread and
/// 3.3 against 4.2 on two, `f32` in AVX-512 17.7 against 18.7 and 8.3 against 9.0 (the fastest
/// round of each up to 14 % the other way); at 9,000 rows 95 against 123 and 175 against 218;
/// the model in calls of 256 640 texts/s against 607. Each output is still one tile's sum, in
/// the same order.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn for_each_task(
    rows: usize,
    panels: usize,
    rows_per_task: usize,
    task: impl Fn(usize, usize, usize) + Sync + Send,
) {
    let blocks = rows.div_ceil(rows_per_task);
    let per_chunk = (ROWS_PER_CHUNK / rows_per_task).max(1);
    (0..blocks * panels).into_par_iter().for_each(|index| {
        let (block, panel) = task_at(index, blocks, panels, per_chunk);
        let first = block * rows_per_task;
        task(first, rows_per_task.min(rows - first), panel);
    });
}

/// The `(block, panel)` of task `index` in [`for_each_task`]'s order, for `blocks` blocks of
/// rows, `panels` panels and chunks of `per_chunk` blocks (fewer in the last chunk).
fn task_at(index: usize, blocks: usize, panels: usize, per_chunk: usize) -> (usize, usize) {
    let chunk_first = index / (per_chunk * panels) * per_chunk;
    let in_chunk = per_chunk.min(blocks - chunk_first);
    let local = index - chunk_first * panels;
    (chunk_first + local % in_chunk, local / in_chunk)
}

/// Runs `tile(row, take)` over rows `first..first + count` in steps of [`TILE`] rows (`take`
/// of them, fewer at the end).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn for_each_tile(first: usize, count: usize, mut tile: impl FnMut(usize, usize)) {
    let mut row = first;
    while row < first + count {
        let take = TILE.min(first + count - row);
        tile(row, take);
        row += take;
    }
}

/// `$tile::<R, FETCH>(args...)` with `R` the tile height `$take` (1 to [`TILE`]) and `FETCH`
/// the value of `$fetch` (whether the tile fetches its panel ahead, [`FETCH_AHEAD`]): each
/// height and choice is its own code, its sums a fixed array of registers.
macro_rules! by_height {
    ($take:expr, $fetch:expr, $tile:ident($($arg:expr),* $(,)?)) => {
        if $fetch {
            $crate::products::by_height!(@rows $take, true, $tile($($arg),*))
        } else {
            $crate::products::by_height!(@rows $take, false, $tile($($arg),*))
        }
    };
    (@rows $take:expr, $fetch:literal, $tile:ident($($arg:expr),*)) => {
        match $take {
            6 => $tile::<6, $fetch>($($arg),*),
            5 => $tile::<5, $fetch>($($arg),*),
            4 => $tile::<4, $fetch>($($arg),*),
            3 => $tile::<3, $fetch>($($arg),*),
            2 => $tile::<2, $fetch>($($arg),*),
            _ => $tile::<1, $fetch>($($arg),*),
        }
    };
}
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_imports))]
pub(crate) use by_height;

#[cfg(test)]
pub(crate) use reference::{naive, random, relative_error};

/// What the tests of the products share: random inputs, the plain product they are checked
/// against, and the error measure.
#[cfg(test)]
mod reference {
    use rand::rngs::StdRng;
    use rand::Rng;

    /// `len` values drawn uniformly from [-1, 1).
    pub(crate) fn random(rng: &mut StdRng, len: usize) -> Vec<f32> {
        (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect()
    }

    /// `x (rows, inputs) · w (inputs, outputs) + bias`, one sum at a time.
    pub(crate) fn naive(
        x: &[f32],
        w: &[f32],
        bias: &[f32],
        inputs: usize,
        outputs: usize,
    ) -> Vec<f32> {
        let rows = x.len() / inputs;
        let mut out = vec![0.0f32; rows * outputs];
        for r in 0..rows {
            for c in 0..outputs {
                let sum: f32 = (0..inputs)
                    .map(|k| x[r * inputs + k] * w[k * outputs + c])
                    .sum();
                out[r * outputs + c] = sum + bias[c];
            }
        }
        out
    }

    /// Largest difference relative to the largest magnitude of `expected`.
    pub(crate) fn relative_error(got: &[f32], expected: &[f32]) -> f32 {
        let scale = expected
            .iter()
            .fold(0.0f32, |m, v| m.max(v.abs()))
            .max(1e-6);
        got.iter()
            .zip(expected)
            .fold(0.0f32, |m, (g, e)| m.max((g - e).abs()))
            / scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every block of every panel is one task; a chunk's tasks come together, panel by panel.
    #[test]
    fn the_tasks_cover_each_block_and_panel_once_chunk_by_chunk() {
        for (blocks, panels, per_chunk) in [
            (1, 1, 1),
            (1, 6, 8),
            (5, 6, 8),
            (8, 3, 8),
            (35, 24, 8),
            (17, 6, 5),
        ] {
            let order: Vec<_> = (0..blocks * panels)
                .map(|index| task_at(index, blocks, panels, per_chunk))
                .collect();
            let mut seen = order.clone();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(
                seen.len(),
                blocks * panels,
                "{blocks} x {panels} / {per_chunk}"
            );
            assert!(seen.iter().all(|&(b, p)| b < blocks && p < panels));
            for pair in order.windows(2) {
                let [(b0, p0), (b1, p1)] = [pair[0], pair[1]];
                let (c0, c1) = (b0 / per_chunk, b1 / per_chunk);
                assert!(c1 == c0 || c1 == c0 + 1, "chunks in order: {pair:?}");
                if c1 == c0 {
                    assert!(p1 == p0 && b1 == b0 + 1 || p1 == p0 + 1, "{pair:?}");
                }
            }
        }
    }

    /// The products' tasks write every output once: rows around a chunk's edge.
    #[test]
    fn for_each_task_runs_every_block_of_every_panel() {
        for rows in [1, 47, 48, 255, 256, 257, 600] {
            for rows_per_task in [32, ROWS_PER_TASK] {
                let panels = 3;
                let hits: Vec<_> = (0..rows * panels)
                    .map(|_| std::sync::atomic::AtomicUsize::new(0))
                    .collect();
                for_each_task(rows, panels, rows_per_task, |first, count, panel| {
                    assert!(count >= 1 && count <= rows_per_task && first + count <= rows);
                    for row in first..first + count {
                        hits[row * panels + panel]
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                });
                assert!(hits
                    .iter()
                    .all(|h| h.load(std::sync::atomic::Ordering::Relaxed) == 1));
            }
        }
    }
}
