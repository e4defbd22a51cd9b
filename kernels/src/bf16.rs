//! The encoder's fully connected layers as bfloat16 matrix products, on CPUs with AVX512_BF16.
//!
//! A product `x (rows, inputs) · W (inputs, outputs) + bias` rounds `x` and `W` to bfloat16
//! (8 bits of mantissa; round to nearest even) and sums in `f32` with `vdpbf16ps`, which
//! multiplies and adds two pairs of bfloat16 per 32-bit lane: 32 products per instruction
//! against 16 (AVX-512) or 8 (AVX2) for an `f32` fused multiply-add. Everything else in the
//! encoder (attention, layer norms, GELU, pooling) stays `f32`.
//!
//! Layout. The weights are packed once, at load: for each panel of [`PANEL`] output columns,
//! for each pair of inputs `p`, the panel's 64 columns as `(W[2p][c], W[2p+1][c])` pairs, so
//! that one 64-byte load holds the pairs of 16 columns. The rows of `x` are rounded per call
//! into row-major bfloat16, read as one 32-bit pair at a time and broadcast. A tile of [`TILE`]
//! rows by one panel keeps its 24 sums in registers through the whole input dimension.
//!
//! A [`PackedDense`] exists only where the CPU can run it ([`supported`]); the encoder keeps
//! `f32` weights elsewhere.

use half::bf16;
use rayon::prelude::*;

/// Output columns per panel: four 16-lane registers.
const PANEL: usize = 64;
/// Rows per register tile (4 x 6 sums, 4 panel loads and one broadcast: 29 of 32 registers).
const TILE: usize = 6;
/// Rows per parallel task: a panel is read from cache for this many rows.
const ROWS_PER_TASK: usize = 8 * TILE;

/// Whether this CPU runs bfloat16 products (AVX-512 F and BF16, detected once).
pub fn supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static DETECTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *DETECTED.get_or_init(|| {
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bf16")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A fully connected layer packed for bfloat16 products.
pub struct PackedDense {
    inputs: usize,
    outputs: usize,
    /// `outputs / PANEL` panels of `inputs / 2` pairs of `PANEL` columns, two halves each.
    panels: Vec<u16>,
    bias: Vec<f32>,
}

impl PackedDense {
    /// Packs `weight`, `(inputs, outputs)` row-major, and `bias` (`outputs`). `None` when this
    /// CPU cannot run the products ([`supported`]) or the shape does not fit the layout (an odd
    /// number of inputs, outputs not a multiple of 64, or lengths that do not match).
    pub fn pack(weight: &[f32], inputs: usize, outputs: usize, bias: &[f32]) -> Option<Self> {
        if !supported() {
            return None;
        }
        Self::pack_layout(weight, inputs, outputs, bias)
    }

    /// The packing itself, on any CPU (tests check the layout everywhere).
    fn pack_layout(weight: &[f32], inputs: usize, outputs: usize, bias: &[f32]) -> Option<Self> {
        if inputs == 0
            || !inputs.is_multiple_of(2)
            || outputs == 0
            || !outputs.is_multiple_of(PANEL)
            || weight.len() != inputs.checked_mul(outputs)?
            || bias.len() != outputs
        {
            return None;
        }
        let pairs = inputs / 2;
        let mut panels = vec![0u16; inputs * outputs];
        for (panel, block) in panels.chunks_exact_mut(pairs * PANEL * 2).enumerate() {
            for (pair, row) in block.chunks_exact_mut(PANEL * 2).enumerate() {
                for (column, slot) in row.chunks_exact_mut(2).enumerate() {
                    let c = panel * PANEL + column;
                    slot[0] = bf16::from_f32(weight[2 * pair * outputs + c]).to_bits();
                    slot[1] = bf16::from_f32(weight[(2 * pair + 1) * outputs + c]).to_bits();
                }
            }
        }
        Some(PackedDense {
            inputs,
            outputs,
            panels,
            bias: bias.to_vec(),
        })
    }

    pub fn inputs(&self) -> usize {
        self.inputs
    }

    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// `x · W + bias` for `x` of `rows` rows (`x.len() / inputs`), into a new `rows x outputs`
    /// buffer. `None` when `x` is not a whole number of rows (or off x86-64, where no
    /// `PackedDense` is ever made).
    pub fn forward(&self, x: &[f32]) -> Option<Vec<f32>> {
        if !x.len().is_multiple_of(self.inputs) {
            return None;
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
        #[cfg(target_arch = "x86_64")]
        {
            let rows = x.len() / self.inputs;
            let mut out = vec![0.0f32; rows * self.outputs];
            let a = to_bf16_rows(x);
            let panels = self.outputs / PANEL;
            let row_blocks = rows.div_ceil(ROWS_PER_TASK);
            let out_ptr = SharedOut(out.as_mut_ptr());
            (0..row_blocks * panels).into_par_iter().for_each(|task| {
                let (block, panel) = (task / panels, task % panels);
                let first = block * ROWS_PER_TASK;
                let count = ROWS_PER_TASK.min(rows - first);
                // SAFETY: a `PackedDense` exists only where `supported()` (see `pack`); each
                // task writes only its own rows of its own panel's columns, inside `out`.
                unsafe { self.block(&a, first, count, panel, &out_ptr) };
            });
            Some(out)
        }
    }

    /// Rows `first..first + count` of panel `panel`, tile by tile.
    ///
    /// # Safety
    /// The CPU supports AVX-512 F and BF16; `first + count <= rows` of `a`; `out` is the
    /// `rows x outputs` output, and no other thread writes these rows of this panel.
    #[cfg(target_arch = "x86_64")]
    unsafe fn block(&self, a: &[u16], first: usize, count: usize, panel: usize, out: &SharedOut) {
        let pairs = self.inputs / 2;
        let b = &self.panels[panel * pairs * PANEL * 2..(panel + 1) * pairs * PANEL * 2];
        let bias = &self.bias[panel * PANEL..(panel + 1) * PANEL];
        let mut row = first;
        while row < first + count {
            let take = TILE.min(first + count - row);
            let a_rows = &a[row * self.inputs..(row + take) * self.inputs];
            // SAFETY: the caller's guarantees; `out` holds `rows x outputs` floats.
            unsafe {
                let dst = out.0.add(row * self.outputs + panel * PANEL);
                match take {
                    6 => tile::<6>(a_rows, pairs, b, bias, dst, self.outputs),
                    5 => tile::<5>(a_rows, pairs, b, bias, dst, self.outputs),
                    4 => tile::<4>(a_rows, pairs, b, bias, dst, self.outputs),
                    3 => tile::<3>(a_rows, pairs, b, bias, dst, self.outputs),
                    2 => tile::<2>(a_rows, pairs, b, bias, dst, self.outputs),
                    _ => tile::<1>(a_rows, pairs, b, bias, dst, self.outputs),
                }
            }
            row += take;
        }
    }

    /// The same product read straight from the packed layout, one scalar at a time (tests).
    #[cfg(test)]
    fn forward_scalar(&self, x: &[f32]) -> Vec<f32> {
        let rows = x.len() / self.inputs;
        let pairs = self.inputs / 2;
        let mut out = vec![0.0f32; rows * self.outputs];
        for r in 0..rows {
            let xr: Vec<f32> = x[r * self.inputs..(r + 1) * self.inputs]
                .iter()
                .map(|&v| bf16::from_f32(v).to_f32())
                .collect();
            for c in 0..self.outputs {
                let (panel, column) = (c / PANEL, c % PANEL);
                let mut sum = 0.0f32;
                for p in 0..pairs {
                    let at = ((panel * pairs + p) * PANEL + column) * 2;
                    sum += xr[2 * p] * bf16::from_bits(self.panels[at]).to_f32()
                        + xr[2 * p + 1] * bf16::from_bits(self.panels[at + 1]).to_f32();
                }
                out[r * self.outputs + c] = sum + self.bias[c];
            }
        }
        out
    }
}

/// The output buffer, shared by the tasks of one product (each writes its own part).
struct SharedOut(*mut f32);

// SAFETY: tasks write disjoint parts of the buffer (see `PackedDense::forward`).
unsafe impl Sync for SharedOut {}

/// `x` rounded to bfloat16 (round to nearest even), in the same row-major order.
#[cfg(target_arch = "x86_64")]
fn to_bf16_rows(x: &[f32]) -> Vec<u16> {
    let mut out = vec![0u16; x.len()];
    out.par_chunks_mut(16 * 1024)
        .zip(x.par_chunks(16 * 1024))
        // SAFETY: only called from `forward`, which runs where `supported()`.
        .for_each(|(out, x)| unsafe { round_bf16(x, out) });
    out
}

/// # Safety
/// The CPU supports AVX-512 F and BF16.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn round_bf16(x: &[f32], out: &mut [u16]) {
    use std::arch::x86_64::*;
    let (blocks, rest) = x.as_chunks::<16>();
    let (out_blocks, out_rest) = out.as_chunks_mut::<16>();
    for (src, dst) in blocks.iter().zip(out_blocks) {
        // SAFETY: 16 floats in, 16 halves (32 bytes) out, unaligned loads and stores.
        unsafe {
            let v = _mm512_cvtneps_pbh(_mm512_loadu_ps(src.as_ptr()));
            _mm256_storeu_si256(
                dst.as_mut_ptr().cast(),
                std::mem::transmute::<__m256bh, __m256i>(v),
            );
        }
    }
    for (src, dst) in rest.iter().zip(out_rest) {
        *dst = half::bf16::from_f32(*src).to_bits();
    }
}

/// One tile: `R` rows of `a` (row-major bfloat16, `2 * pairs` a row) by one packed panel,
/// plus the panel's bias, stored at `dst` (row stride `stride` floats).
///
/// # Safety
/// The CPU supports AVX-512 F and BF16; `a` holds `R` rows; `b` is one panel of `pairs`
/// pairs; `bias` holds 64 floats; `dst` points at `R` rows of at least 64 writable floats.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn tile<const R: usize>(
    a: &[u16],
    pairs: usize,
    b: &[u16],
    bias: &[f32],
    dst: *mut f32,
    stride: usize,
) {
    use std::arch::x86_64::*;
    debug_assert!(a.len() >= R * pairs * 2 && b.len() >= pairs * PANEL * 2 && bias.len() >= PANEL);
    let mut sums = [[_mm512_setzero_ps(); 4]; R];
    let a = a.as_ptr().cast::<i32>();
    let b = b.as_ptr();
    for p in 0..pairs {
        // SAFETY: pair `p` of the panel is 128 halves at `b + p * 128`; pair `p` of row `r` is
        // the 32 bits at `a + r * pairs + p` (both within the bounds asserted above).
        unsafe {
            let at = b.add(p * PANEL * 2);
            let w = [
                _mm512_loadu_si512(at.cast()),
                _mm512_loadu_si512(at.add(32).cast()),
                _mm512_loadu_si512(at.add(64).cast()),
                _mm512_loadu_si512(at.add(96).cast()),
            ];
            for (r, row) in sums.iter_mut().enumerate() {
                let x = _mm512_set1_epi32(a.add(r * pairs + p).read_unaligned());
                let x = std::mem::transmute::<__m512i, __m512bh>(x);
                for (sum, w) in row.iter_mut().zip(w) {
                    *sum = _mm512_dpbf16_ps(*sum, x, std::mem::transmute::<__m512i, __m512bh>(w));
                }
            }
        }
    }
    for (r, row) in sums.iter().enumerate() {
        for (j, sum) in row.iter().enumerate() {
            // SAFETY: see the function's contract.
            unsafe {
                let v = _mm512_add_ps(*sum, _mm512_loadu_ps(bias.as_ptr().add(j * 16)));
                _mm512_storeu_ps(dst.add(r * stride + j * 16), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn random(rng: &mut StdRng, len: usize) -> Vec<f32> {
        (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect()
    }

    fn naive(x: &[f32], w: &[f32], bias: &[f32], inputs: usize, outputs: usize) -> Vec<f32> {
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
    fn relative_error(got: &[f32], expected: &[f32]) -> f32 {
        let scale = expected
            .iter()
            .fold(0.0f32, |m, v| m.max(v.abs()))
            .max(1e-6);
        got.iter()
            .zip(expected)
            .fold(0.0f32, |m, (g, e)| m.max((g - e).abs()))
            / scale
    }

    #[test]
    fn the_packed_layout_computes_the_product() {
        let mut rng = StdRng::seed_from_u64(3);
        let (inputs, outputs) = (96, 128);
        let w = random(&mut rng, inputs * outputs);
        let bias = random(&mut rng, outputs);
        let packed = PackedDense::pack_layout(&w, inputs, outputs, &bias).expect("fits");
        let x = random(&mut rng, 7 * inputs);
        let error = relative_error(
            &packed.forward_scalar(&x),
            &naive(&x, &w, &bias, inputs, outputs),
        );
        // bfloat16 keeps 8 bits of mantissa: each product is within about 2^-8 of its value.
        assert!(error < 1e-2, "relative error {error}");
    }

    #[test]
    fn shapes_that_do_not_fit_are_refused() {
        let w = vec![0.0f32; 3 * 64];
        assert!(PackedDense::pack_layout(&w, 3, 64, &[0.0; 64]).is_none());
        let w = vec![0.0f32; 2 * 60];
        assert!(PackedDense::pack_layout(&w, 2, 60, &[0.0; 60]).is_none());
        let w = vec![0.0f32; 2 * 64];
        assert!(PackedDense::pack_layout(&w, 2, 64, &[0.0; 63]).is_none());
        assert!(PackedDense::pack_layout(&w[1..], 2, 64, &[0.0; 64]).is_none());
        assert!(PackedDense::pack_layout(&w, 2, 64, &[0.0; 64]).is_some());
    }

    /// The vector kernel against the scalar reading of the same packed weights: every tile
    /// height (1 to 6 rows), several tasks, and more than one panel. On a CPU without
    /// AVX512_BF16 there is no kernel to test, and `pack` must refuse.
    #[test]
    fn the_kernel_matches_the_scalar_product() {
        let mut rng = StdRng::seed_from_u64(4);
        let (inputs, outputs) = (384, 192);
        let w = random(&mut rng, inputs * outputs);
        let bias = random(&mut rng, outputs);
        let Some(packed) = PackedDense::pack(&w, inputs, outputs, &bias) else {
            assert!(!supported());
            eprintln!("this CPU has no AVX512_BF16: only the refusal is tested");
            return;
        };
        assert_eq!((packed.inputs(), packed.outputs()), (inputs, outputs));
        for rows in [1, 2, 3, 4, 5, 6, 7, 13, 48, 49, 100] {
            let x = random(&mut rng, rows * inputs);
            let got = packed.forward(&x).expect("whole rows");
            let error = relative_error(&got, &packed.forward_scalar(&x));
            // The same bfloat16 inputs, summed in another order.
            assert!(error < 1e-5, "rows {rows}: relative error {error}");
            let error = relative_error(&got, &naive(&x, &w, &bias, inputs, outputs));
            assert!(
                error < 1e-2,
                "rows {rows}: relative error {error} against f32"
            );
        }
        assert!(packed.forward(&[1.0; 5]).is_none());
        assert_eq!(packed.forward(&[]).map(|v| v.len()), Some(0));
    }
}
