//! The residual sum and layer normalisation in one pass over each row: `LN(x + residual)`, as
//! the encoder does after attention and after its feed-forward layer (and to the sum of word
//! and position embeddings at its input).
//!
//! Done as two tensor operations (candle's sum, then its layer norm), each pass allocated and
//! zeroed a buffer of its own, and the sum of a pass of a few texts ran on candle's thread pool
//! beside rayon's: on 2 cores, with two passes encoding at once, its caller spun waiting for
//! that pool's thread for 6 % of the time (`perf`, docs/BENCHMARKS.md). Here a row is read
//! from cache three times (its mean, its variance about that mean, the output) and written
//! once, and large calls split by rows on rayon's pool.
//!
//! Like [`crate::activations`], one body of plain loops, compiled for AVX-512, for AVX2 with
//! FMA and for the baseline; the sums run in 16 lanes, so the order of additions differs from
//! a plain loop's: results agree within float rounding.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use crate::activations::widest;
use crate::cpu::Isa;

/// Lanes of the running sums.
const LANES: usize = 16;
/// Smaller calls run on the calling thread: splitting them costs more than it saves.
const PARALLEL_MIN: usize = 64 * 1024;
/// Rows per parallel task.
const ROWS_PER_TASK: usize = 16;

/// The variants compiled (as for the element-wise kernels).
pub const VARIANTS: [Isa; 3] = crate::activations::VARIANTS;

/// A layer normalisation's learned scale and shift, one of each per column, and the epsilon
/// added to the variance.
#[derive(Clone, Copy)]
pub struct LayerNorm<'a> {
    pub gamma: &'a [f32],
    pub beta: &'a [f32],
    pub eps: f32,
}

/// For each row of `x` and the same row of `residual` (rows as wide as `norm.gamma`):
/// `s = x + residual`, then `(s - mean(s)) / sqrt(var(s) + eps) * gamma + beta`, into a new
/// buffer. Panics when the lengths disagree (a caller's bug: the shapes come from the model).
pub fn add_layer_norm(x: &[f32], residual: &[f32], norm: LayerNorm<'_>) -> Vec<f32> {
    add_layer_norm_with(widest(), x, residual, norm)
}

/// [`add_layer_norm`] compiled for `isa` (one of [`VARIANTS`]; panics where the CPU cannot run
/// it).
pub fn add_layer_norm_with(isa: Isa, x: &[f32], residual: &[f32], norm: LayerNorm<'_>) -> Vec<f32> {
    let width = norm.gamma.len();
    assert!(
        width > 0 && norm.beta.len() == width,
        "layer norm: {} scales and {} shifts",
        width,
        norm.beta.len()
    );
    assert!(
        x.len() == residual.len() && x.len().is_multiple_of(width),
        "layer norm: {} and {} values in rows of {width}",
        x.len(),
        residual.len()
    );
    assert!(
        isa.available(),
        "layer norm: this CPU does not run {}",
        isa.name()
    );
    let mut out: Vec<f32> = Vec::with_capacity(x.len());
    let spare = &mut out.spare_capacity_mut()[..x.len()];
    if x.len() < PARALLEL_MIN {
        rows_with(isa, x, residual, norm, spare);
    } else {
        let chunk = ROWS_PER_TASK * width;
        spare
            .par_chunks_mut(chunk)
            .zip(x.par_chunks(chunk))
            .zip(residual.par_chunks(chunk))
            .for_each(|((out, x), residual)| rows_with(isa, x, residual, norm, out));
    }
    // SAFETY: `rows_body` wrote every value of every row: all `x.len()` floats.
    unsafe { out.set_len(x.len()) };
    out
}

/// Whole rows, with the `isa` variant (checked available by the caller).
fn rows_with(
    isa: Isa,
    x: &[f32],
    residual: &[f32],
    norm: LayerNorm<'_>,
    out: &mut [MaybeUninit<f32>],
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller checked `available()`: AVX-512 F.
        Isa::Avx512 => unsafe { rows_avx512(x, residual, norm, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller checked `available()`: AVX2 and FMA.
        Isa::Avx2 => unsafe { rows_avx2(x, residual, norm, out) },
        Isa::Baseline => rows_body(x, residual, norm, out),
        other => unreachable!("the layer norm has no {} variant", other.name()),
    }
}

/// # Safety
/// The CPU supports AVX-512 F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn rows_avx512(
    x: &[f32],
    residual: &[f32],
    norm: LayerNorm<'_>,
    out: &mut [MaybeUninit<f32>],
) {
    rows_body(x, residual, norm, out)
}

/// # Safety
/// The CPU supports AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_avx2(
    x: &[f32],
    residual: &[f32],
    norm: LayerNorm<'_>,
    out: &mut [MaybeUninit<f32>],
) {
    rows_body(x, residual, norm, out)
}

#[inline(always)]
fn rows_body(x: &[f32], residual: &[f32], norm: LayerNorm<'_>, out: &mut [MaybeUninit<f32>]) {
    let width = norm.gamma.len();
    for ((x, residual), out) in x
        .chunks_exact(width)
        .zip(residual.chunks_exact(width))
        .zip(out.chunks_exact_mut(width))
    {
        let mean = lane_sum(x, residual, |s| s) / width as f32;
        let variance = lane_sum(x, residual, |s| (s - mean) * (s - mean)) / width as f32;
        let scale = 1.0 / (variance + norm.eps).sqrt();
        for ((((o, &a), &b), &g), &h) in out
            .iter_mut()
            .zip(x)
            .zip(residual)
            .zip(norm.gamma)
            .zip(norm.beta)
        {
            *o = MaybeUninit::new((a + b - mean) * scale * g + h);
        }
    }
}

/// `Σ f(x[i] + residual[i])`, summed in [`LANES`] lanes.
#[inline(always)]
fn lane_sum(x: &[f32], residual: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let (x_blocks, x_rest) = x.as_chunks::<LANES>();
    let (r_blocks, r_rest) = residual.as_chunks::<LANES>();
    let mut lanes = [0.0f32; LANES];
    for (a, b) in x_blocks.iter().zip(r_blocks) {
        for i in 0..LANES {
            lanes[i] += f(a[i] + b[i]);
        }
    }
    let mut sum: f32 = lanes.iter().sum();
    for (&a, &b) in x_rest.iter().zip(r_rest) {
        sum += f(a + b);
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::runnable;
    use crate::products::random;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    /// The plain definition in `f64`, two passes.
    fn reference(x: &[f32], residual: &[f32], gamma: &[f32], beta: &[f32], eps: f32) -> Vec<f64> {
        let width = gamma.len();
        let mut out = Vec::with_capacity(x.len());
        for (x, residual) in x.chunks(width).zip(residual.chunks(width)) {
            let s: Vec<f64> = x
                .iter()
                .zip(residual)
                .map(|(&a, &b)| a as f64 + b as f64)
                .collect();
            let mean = s.iter().sum::<f64>() / width as f64;
            let variance = s.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / width as f64;
            let scale = 1.0 / (variance + eps as f64).sqrt();
            for (i, v) in s.iter().enumerate() {
                out.push((v - mean) * scale * gamma[i] as f64 + beta[i] as f64);
            }
        }
        out
    }

    /// Every variant against the definition, for widths around the 16 lanes and the encoder's
    /// 384, with one row and with enough rows to split across threads; the rows' offsets are
    /// large against their spread, where a variance taken as E[s²] - mean² loses its digits.
    #[test]
    fn every_variant_matches_the_definition() {
        let mut rng = StdRng::seed_from_u64(7);
        let variants = runnable(&VARIANTS);
        assert!(variants.contains(&Isa::Baseline));
        for width in [1usize, 15, 16, 17, 384] {
            for rows in [1usize, 3, PARALLEL_MIN / width + 5] {
                let x: Vec<f32> = random(&mut rng, rows * width)
                    .iter()
                    .map(|v| v + 40.0)
                    .collect();
                let residual = random(&mut rng, rows * width);
                let gamma = random(&mut rng, width);
                let beta = random(&mut rng, width);
                let eps = 1e-12;
                let expected = reference(&x, &residual, &gamma, &beta, eps);
                for &isa in &variants {
                    let norm = LayerNorm {
                        gamma: &gamma,
                        beta: &beta,
                        eps,
                    };
                    let got = add_layer_norm_with(isa, &x, &residual, norm);
                    assert_eq!(got.len(), expected.len());
                    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
                        // A row of one value normalises to 0 (its shift alone).
                        assert!(
                            (*g as f64 - e).abs() <= 2e-4 * (1.0 + e.abs()),
                            "{}: width {width}, rows {rows}, value {i}: {g} against {e}",
                            isa.name()
                        );
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "layer norm")]
    fn a_partial_row_is_refused() {
        let (gamma, beta) = ([1.0f32; 4], [0.0f32; 4]);
        let norm = LayerNorm {
            gamma: &gamma,
            beta: &beta,
            eps: 1e-12,
        };
        add_layer_norm(&[1.0; 6], &[1.0; 6], norm);
    }
}
