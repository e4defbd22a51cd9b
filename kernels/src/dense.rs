//! The encoder's fully connected layers as `f32` matrix products on AVX-512 F, or on AVX2 with
//! FMA.
//!
//! Why beside [`crate::bf16`]: on some CPUs `vdpbf16ps` issues at a quarter of the rate of an
//! `f32` fused multiply-add, so its 32 products an instruction make half the products a cycle
//! of two multiply-adds of 16. Measured on an Intel Xeon (family 6, model 207, AVX512_BF16
//! without AMX), one core: 1.2 billion `vdpbf16ps` a second (38 billion products) against 4.5
//! billion `vfmadd` (72 billion); a layer of the encoder ran 1.4 to 2 times as fast in this
//! kernel as in the bfloat16 one (docs/BENCHMARKS.md). Where `vdpbf16ps` issues as often as a
//! multiply-add, bfloat16 does twice the products. The encoder times both where both run
//! (`embedding_precision = "auto"`).
//!
//! Why beside candle's product on CPUs with AVX2 alone: the weights are packed once, at load,
//! not for every call; the bias is where the sums start, not a second pass over the output;
//! the output is not zeroed first; and a product's tasks are the same grain whatever its rows.
//!
//! Layout. The weights are packed once, at load: for each panel of output columns ([`PANEL`]
//! on AVX-512, [`NARROW_PANEL`] on AVX2: four or two registers), the panel's weights of input
//! 0, then of input 1, and so on, so that one register load holds 16 (8) columns of one input.
//! A tile of six rows by one panel keeps its 24 (12) sums in registers through the whole input
//! dimension, each step four (two) loads of the panel, one broadcast of each row's input and 24
//! (12) multiply-adds. The sums start from the bias. Each output is the bias plus the products
//! in input order, one multiply-add each, in either variant: the two give the same floats.
//!
//! A [`PackedF32`] exists only where the CPU runs one of the two; the encoder keeps candle's
//! matrix product elsewhere.

use crate::cpu::Isa;
use crate::products::PANEL;
#[cfg(target_arch = "x86_64")]
use crate::products::{
    by_height, for_each_task, for_each_tile, SharedOut, FETCH_AHEAD, ROWS_PER_TASK,
};

/// The variants of [`PackedF32`]'s product (its plain loops are the tests' reference).
pub const VARIANTS: [Isa; 2] = [Isa::Avx512, Isa::Avx2];

/// Output columns per panel on AVX2: two 8-lane registers.
pub const NARROW_PANEL: usize = 16;

/// Whether this CPU runs [`PackedF32`] (AVX-512 F, or AVX2 with FMA; detected once).
pub fn supported() -> bool {
    VARIANTS.iter().any(|isa| isa.available())
}

/// A fully connected layer packed for `f32` products.
pub struct PackedF32 {
    /// [`Isa::Avx512`] or [`Isa::Avx2`].
    unit: Isa,
    inputs: usize,
    outputs: usize,
    /// `outputs / width` panels of `inputs` rows of `width` columns (`width` the unit's).
    panels: Vec<f32>,
    bias: Vec<f32>,
}

/// The panel width of a variant.
fn width(unit: Isa) -> usize {
    if unit == Isa::Avx2 {
        NARROW_PANEL
    } else {
        PANEL
    }
}

impl PackedF32 {
    /// Packs `weight`, `(inputs, outputs)` row-major, and `bias` (`outputs`), for the widest
    /// variant this CPU runs. `None` when it runs neither ([`supported`]) or the shape does not
    /// fit the layout (outputs not a multiple of 64, or lengths that do not match).
    pub fn pack(weight: &[f32], inputs: usize, outputs: usize, bias: &[f32]) -> Option<Self> {
        let unit = VARIANTS.into_iter().find(|isa| isa.available())?;
        Self::pack_with(unit, weight, inputs, outputs, bias)
    }

    /// As [`PackedF32::pack`], for the variant `unit` (one of [`VARIANTS`]); `None` also
    /// where this CPU does not run it.
    pub fn pack_with(
        unit: Isa,
        weight: &[f32],
        inputs: usize,
        outputs: usize,
        bias: &[f32],
    ) -> Option<Self> {
        if !VARIANTS.contains(&unit) || !unit.available() {
            return None;
        }
        Self::pack_layout(unit, weight, inputs, outputs, bias)
    }

    /// The packing itself, on any CPU (tests check the layout everywhere).
    fn pack_layout(
        unit: Isa,
        weight: &[f32],
        inputs: usize,
        outputs: usize,
        bias: &[f32],
    ) -> Option<Self> {
        if inputs == 0
            || outputs == 0
            || !outputs.is_multiple_of(PANEL)
            || weight.len() != inputs.checked_mul(outputs)?
            || bias.len() != outputs
        {
            return None;
        }
        let width = width(unit);
        let mut panels = Vec::with_capacity(inputs * outputs);
        for panel in 0..outputs / width {
            for input in weight.chunks_exact(outputs) {
                panels.extend_from_slice(&input[panel * width..(panel + 1) * width]);
            }
        }
        Some(PackedF32 {
            unit,
            inputs,
            outputs,
            panels,
            bias: bias.to_vec(),
        })
    }

    /// The variant it runs.
    pub fn unit(&self) -> Isa {
        self.unit
    }

    pub fn inputs(&self) -> usize {
        self.inputs
    }

    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// `x · W + bias` for `x` of `rows` rows (`x.len() / inputs`), into a new `rows x outputs`
    /// buffer. `None` when `x` is not a whole number of rows (or off x86-64, where no
    /// `PackedF32` is ever made).
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
            let len = rows * self.outputs;
            let mut out: Vec<f32> = Vec::with_capacity(len);
            let out_ptr = SharedOut::new(out.as_mut_ptr());
            for_each_task(
                rows,
                self.outputs / width(self.unit),
                ROWS_PER_TASK,
                |first, count, panel| {
                    // SAFETY: a `PackedF32` exists only where its unit runs (`pack_with`); each
                    // task writes only its own rows of its own panel's columns, inside `out`'s
                    // capacity.
                    unsafe { self.block(x, first, count, panel, &out_ptr) };
                },
            );
            // SAFETY: the tasks wrote every row of every panel: all `len` floats.
            unsafe { out.set_len(len) };
            Some(out)
        }
    }

    /// Rows `first..first + count` of panel `panel`, tile by tile. The first tile fetches the
    /// panel ahead of its reads ([`FETCH_AHEAD`]); the tiles after it find it in the cache.
    ///
    /// # Safety
    /// The CPU runs `self.unit`; `first + count <= rows` of `x`; `out` points at room for the
    /// `rows x outputs` output, and no other thread writes these rows of this panel.
    #[cfg(target_arch = "x86_64")]
    unsafe fn block(&self, x: &[f32], first: usize, count: usize, panel: usize, out: &SharedOut) {
        let width = width(self.unit);
        let b = &self.panels[panel * self.inputs * width..(panel + 1) * self.inputs * width];
        let bias = &self.bias[panel * width..(panel + 1) * width];
        let wide = self.unit == Isa::Avx512;
        for_each_tile(first, count, |row, take| {
            let a = &x[row * self.inputs..(row + take) * self.inputs];
            // SAFETY: the caller's guarantees; `out` has room for `rows x outputs` floats.
            unsafe {
                let dst = out.at(row * self.outputs + panel * width);
                if wide {
                    by_height!(
                        take,
                        row == first,
                        tile(a, self.inputs, b, bias, dst, self.outputs)
                    );
                } else {
                    by_height!(
                        take,
                        row == first,
                        narrow_tile(a, self.inputs, b, bias, dst, self.outputs)
                    );
                }
            }
        });
    }

    /// The same product read straight from the packed layout, one scalar at a time (tests).
    #[cfg(test)]
    fn forward_scalar(&self, x: &[f32]) -> Vec<f32> {
        let rows = x.len() / self.inputs;
        let mut out = vec![0.0f32; rows * self.outputs];
        let width = width(self.unit);
        for r in 0..rows {
            for c in 0..self.outputs {
                let (panel, column) = (c / width, c % width);
                let mut sum = self.bias[c];
                for k in 0..self.inputs {
                    sum += x[r * self.inputs + k]
                        * self.panels[(panel * self.inputs + k) * width + column];
                }
                out[r * self.outputs + c] = sum;
            }
        }
        out
    }
}

/// One tile: `R` rows of `a` (row-major, `inputs` a row) by one packed panel, plus the panel's
/// bias, stored at `dst` (row stride `stride` floats). With `FETCH`, each step also asks for
/// the panel's weights [`FETCH_AHEAD`] inputs ahead.
///
/// # Safety
/// The CPU supports AVX-512 F; `a` holds `R` rows; `b` is one panel of `inputs` rows of 64;
/// `bias` holds 64 floats; `dst` points at `R` rows of at least 64 writable floats.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn tile<const R: usize, const FETCH: bool>(
    a: &[f32],
    inputs: usize,
    b: &[f32],
    bias: &[f32],
    dst: *mut f32,
    stride: usize,
) {
    use std::arch::x86_64::*;
    debug_assert!(a.len() >= R * inputs && b.len() >= inputs * PANEL && bias.len() >= PANEL);
    // SAFETY: 64 floats of `bias` (asserted above).
    let start = unsafe { [0, 16, 32, 48].map(|j| _mm512_loadu_ps(bias.as_ptr().add(j))) };
    let mut sums = [start; R];
    let (a, b) = (a.as_ptr(), b.as_ptr());
    for k in 0..inputs {
        // SAFETY: input `k` of the panel is the 64 floats at `b + k * 64`, input `k` of row
        // `r` the float at `a + r * inputs + k` (both within the bounds asserted above); the
        // fetch reads input `k + FETCH_AHEAD`, inside the panel by its check.
        unsafe {
            let at = b.add(k * PANEL);
            if FETCH && k + FETCH_AHEAD < inputs {
                let ahead = at.add(FETCH_AHEAD * PANEL).cast::<i8>();
                for line in [0, 64, 128, 192] {
                    _mm_prefetch::<_MM_HINT_T0>(ahead.add(line));
                }
            }
            let w = [0, 16, 32, 48].map(|j| _mm512_loadu_ps(at.add(j)));
            for (r, row) in sums.iter_mut().enumerate() {
                let x = _mm512_set1_ps(a.add(r * inputs + k).read());
                for (sum, w) in row.iter_mut().zip(w) {
                    *sum = _mm512_fmadd_ps(x, w, *sum);
                }
            }
        }
    }
    for (r, row) in sums.iter().enumerate() {
        for (j, sum) in row.iter().enumerate() {
            // SAFETY: see the function's contract.
            unsafe { _mm512_storeu_ps(dst.add(r * stride + j * 16), *sum) };
        }
    }
}

/// [`tile`] on AVX2 with FMA: `R` rows of `a` by one packed panel of [`NARROW_PANEL`] columns,
/// plus the panel's bias, stored at `dst` (row stride `stride` floats). With `FETCH`, each step
/// also asks for the panel's weights [`FETCH_AHEAD`] inputs ahead (one cache line a step).
///
/// # Safety
/// The CPU supports AVX2 and FMA; `a` holds `R` rows; `b` is one panel of `inputs` rows of 16;
/// `bias` holds 16 floats; `dst` points at `R` rows of at least 16 writable floats.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn narrow_tile<const R: usize, const FETCH: bool>(
    a: &[f32],
    inputs: usize,
    b: &[f32],
    bias: &[f32],
    dst: *mut f32,
    stride: usize,
) {
    use std::arch::x86_64::*;
    debug_assert!(
        a.len() >= R * inputs && b.len() >= inputs * NARROW_PANEL && bias.len() >= NARROW_PANEL
    );
    // SAFETY: 16 floats of `bias` (asserted above).
    let start = unsafe { [0, 8].map(|j| _mm256_loadu_ps(bias.as_ptr().add(j))) };
    let mut sums = [start; R];
    let (a, b) = (a.as_ptr(), b.as_ptr());
    for k in 0..inputs {
        // SAFETY: input `k` of the panel is the 16 floats at `b + k * 16`, input `k` of row
        // `r` the float at `a + r * inputs + k` (both within the bounds asserted above); the
        // fetch reads input `k + FETCH_AHEAD`, inside the panel by its check.
        unsafe {
            let at = b.add(k * NARROW_PANEL);
            if FETCH && k + FETCH_AHEAD < inputs {
                _mm_prefetch::<_MM_HINT_T0>(at.add(FETCH_AHEAD * NARROW_PANEL).cast::<i8>());
            }
            let w = [0, 8].map(|j| _mm256_loadu_ps(at.add(j)));
            for (r, row) in sums.iter_mut().enumerate() {
                let x = _mm256_set1_ps(a.add(r * inputs + k).read());
                for (sum, w) in row.iter_mut().zip(w) {
                    *sum = _mm256_fmadd_ps(x, w, *sum);
                }
            }
        }
    }
    for (r, row) in sums.iter().enumerate() {
        for (j, sum) in row.iter().enumerate() {
            // SAFETY: see the function's contract.
            unsafe { _mm256_storeu_ps(dst.add(r * stride + j * 8), *sum) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::runnable;
    use crate::products::{naive, random, relative_error};
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    /// Both layouts (panels of 64 and of 16 columns), on any CPU.
    #[test]
    fn the_packed_layout_computes_the_product() {
        let mut rng = StdRng::seed_from_u64(5);
        let (inputs, outputs) = (95, 128);
        let w = random(&mut rng, inputs * outputs);
        let bias = random(&mut rng, outputs);
        for unit in VARIANTS {
            let packed = PackedF32::pack_layout(unit, &w, inputs, outputs, &bias).expect("fits");
            let x = random(&mut rng, 7 * inputs);
            let error = relative_error(
                &packed.forward_scalar(&x),
                &naive(&x, &w, &bias, inputs, outputs),
            );
            assert!(error < 1e-5, "{}: relative error {error}", unit.name());
        }
    }

    #[test]
    fn shapes_that_do_not_fit_are_refused() {
        for unit in VARIANTS {
            let w = vec![0.0f32; 2 * 60];
            assert!(PackedF32::pack_layout(unit, &w, 2, 60, &[0.0; 60]).is_none());
            let w = vec![0.0f32; 3 * 64];
            assert!(PackedF32::pack_layout(unit, &w, 3, 64, &[0.0; 63]).is_none());
            assert!(PackedF32::pack_layout(unit, &w[1..], 3, 64, &[0.0; 64]).is_none());
            assert!(PackedF32::pack_layout(unit, &[], 0, 64, &[0.0; 64]).is_none());
            assert!(PackedF32::pack_layout(unit, &w, 3, 64, &[0.0; 64]).is_some());
            assert_eq!(
                PackedF32::pack_with(unit, &w, 3, 64, &[0.0; 64]).is_some(),
                unit.available()
            );
        }
        let w = vec![0.0f32; 3 * 64];
        assert!(PackedF32::pack_with(Isa::Baseline, &w, 3, 64, &[0.0; 64]).is_none());
        assert!(PackedF32::pack_with(Isa::Avx512Bf16, &w, 3, 64, &[0.0; 64]).is_none());
        let packed = PackedF32::pack(&w, 3, 64, &[0.0; 64]);
        assert_eq!(packed.is_some(), supported());
        if let Some(packed) = packed {
            let widest = if Isa::Avx512.available() {
                Isa::Avx512
            } else {
                Isa::Avx2
            };
            assert_eq!(packed.unit(), widest);
        }
    }

    /// Each variant's product against the scalar reading of the same packed weights and
    /// against the plain product: every tile height (1 to 6 rows), row counts around a task's
    /// 48 and over more than one chunk of rows, an odd number of inputs, several panels.
    #[test]
    fn each_variant_matches_the_scalar_product() {
        let mut rng = StdRng::seed_from_u64(6);
        for isa in runnable(&VARIANTS) {
            for (inputs, outputs) in [(1, 64), (33, 64), (384, 192), (1536, 128)] {
                let w = random(&mut rng, inputs * outputs);
                let bias = random(&mut rng, outputs);
                let packed = PackedF32::pack_with(isa, &w, inputs, outputs, &bias)
                    .unwrap_or_else(|| panic!("{} runs here and the shape fits", isa.name()));
                assert_eq!(packed.unit(), isa);
                assert_eq!((packed.inputs(), packed.outputs()), (inputs, outputs));
                for rows in [1, 2, 3, 4, 5, 6, 7, 13, 47, 48, 49, 96, 100, 300] {
                    let x = random(&mut rng, rows * inputs);
                    let got = packed.forward(&x).expect("whole rows");
                    assert_eq!(got.len(), rows * outputs);
                    let error = relative_error(&got, &packed.forward_scalar(&x));
                    assert!(error < 1e-5, "{inputs}x{outputs}, rows {rows}: {error}");
                    let error = relative_error(&got, &naive(&x, &w, &bias, inputs, outputs));
                    assert!(
                        error < 1e-5,
                        "{inputs}x{outputs}, rows {rows}: {error} (plain)"
                    );
                }
                if !5usize.is_multiple_of(inputs) {
                    assert!(
                        packed.forward(&[1.0; 5]).is_none(),
                        "a partial row is refused"
                    );
                }
                assert_eq!(packed.forward(&[]).map(|v| v.len()), Some(0));
            }
        }
    }

    /// Where both variants run, they give the same floats: each output is the bias plus the
    /// products in input order, one multiply-add each.
    #[test]
    fn the_variants_give_the_same_floats() {
        // `runnable` says which one is skipped (or fails where it is required).
        if runnable(&VARIANTS).len() < VARIANTS.len() {
            return;
        }
        let mut rng = StdRng::seed_from_u64(7);
        let (inputs, outputs) = (384, 192);
        let w = random(&mut rng, inputs * outputs);
        let bias = random(&mut rng, outputs);
        let x = random(&mut rng, 53 * inputs);
        let [wide, narrow] = [Isa::Avx512, Isa::Avx2].map(|unit| {
            PackedF32::pack_with(unit, &w, inputs, outputs, &bias)
                .and_then(|p| p.forward(&x))
                .expect("runs here")
        });
        assert!(wide == narrow);
    }
}
