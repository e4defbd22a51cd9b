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
/// task of a panel only. With this and the tasks panel by panel ([`for_each_task`]), 16 clients
/// saving at 20,000 memories ran 243-257 saves/s against 233-241 with neither. The bfloat16
/// kernel on the same Xeon, where `vdpbf16ps` runs at a quarter of the rate and the products
/// bound the tile, moved inside the noise (190-204 against 190-195 texts/s, callers of 4);
/// not yet measured where bfloat16 is the faster kernel (docs/BENCHMARKS.md).
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

/// Runs `task(first, count, panel)`, in parallel, for every block of `rows_per_task` rows
/// (`count` of them, fewer in the last block) of a `rows`-row product and each of its `panels`
/// panels: the tasks own disjoint rows of disjoint columns.
///
/// The tasks go panel by panel, each panel's blocks in turn, so a thread that takes a run of
/// them reads a panel from memory once and from its own cache for the blocks after the first
/// (block by block, each block of rows read the whole weight matrix again: 42 MB of `f32`
/// weights over the encoder's layers). Calls of 256 memory texts ran 347-349 texts/s against
/// 335-336, an import at 20,000 300-304 lines/s against 286-287 (Xeon with AVX-512, `f32`
/// products, two runs each in turns; docs/BENCHMARKS.md). Each output is still one tile's sum,
/// in the same order.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn for_each_task(
    rows: usize,
    panels: usize,
    rows_per_task: usize,
    task: impl Fn(usize, usize, usize) + Sync + Send,
) {
    let blocks = rows.div_ceil(rows_per_task);
    (0..blocks * panels).into_par_iter().for_each(|index| {
        let (block, panel) = (index % blocks, index / blocks);
        let first = block * rows_per_task;
        task(first, rows_per_task.min(rows - first), panel);
    });
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
