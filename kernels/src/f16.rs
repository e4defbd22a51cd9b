//! Half-precision (IEEE 754 binary16) dot products, summed in `f32`: the search index's
//! distances. Compiled for AVX2 with FMA and F16C, and for the baseline.

use half::f16;

use crate::cpu::Isa;

/// The variants of [`dot`].
pub const VARIANTS: [Isa; 2] = [Isa::Baseline, Isa::Avx2];

/// Dot product over the common prefix of `a` and `b`, summed in `f32`. On x86-64 with AVX2,
/// FMA and F16C (detected once at run time: the build targets baseline x86-64) it widens 8
/// halves at a time and runs 32 lanes of fused multiply-adds; elsewhere 8 independent lanes.
#[inline]
pub fn dot(a: &[f16], b: &[f16]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if Isa::Avx2.available() {
            // SAFETY: the CPU has AVX2, FMA and F16C (checked above).
            return unsafe { dot_avx2_fma_f16c(a, b) };
        }
    }
    dot_portable(a, b)
}

/// [`dot`] compiled for `isa` (one of [`VARIANTS`]; panics where the CPU cannot run it).
pub fn dot_with(isa: Isa, a: &[f16], b: &[f16]) -> f32 {
    assert!(isa.available(), "dot: this CPU does not run {}", isa.name());
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            // SAFETY: `available()` checked AVX2, FMA and F16C.
            unsafe { dot_avx2_fma_f16c(a, b) }
        }
        Isa::Baseline => dot_portable(a, b),
        other => unreachable!("dot has no {} variant", other.name()),
    }
}

/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_avx2_fma_f16c(a: &[f16], b: &[f16]) -> f32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (a_blocks, a_rest) = a.as_chunks::<32>();
    let (b_blocks, b_rest) = b.as_chunks::<32>();
    // Four accumulators, so consecutive multiply-adds do not wait on each other.
    let mut acc = [_mm256_setzero_ps(); 4];
    for (x, y) in a_blocks.iter().zip(b_blocks) {
        for (lane, sum) in acc.iter_mut().enumerate() {
            // SAFETY: each block holds 32 halves (16 bits each, `f16` is `repr(transparent)`
            // over `u16`); lane * 8 + 8 <= 32, and the loads are unaligned.
            let (xv, yv) = unsafe {
                (
                    _mm256_cvtph_ps(_mm_loadu_si128(x.as_ptr().add(lane * 8).cast())),
                    _mm256_cvtph_ps(_mm_loadu_si128(y.as_ptr().add(lane * 8).cast())),
                )
            };
            *sum = _mm256_fmadd_ps(xv, yv, *sum);
        }
    }
    let v = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    let mut lanes = [0.0f32; 8];
    // SAFETY: `lanes` holds 8 floats.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), v) };
    let mut sum = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5]))
        + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    sum += dot_portable(a_rest, b_rest);
    sum
}

/// Dot product over the common prefix of `a` and `b`, in 8 independent lanes.
#[inline]
fn dot_portable(a: &[f16], b: &[f16]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (a_chunks, a_rest) = a.as_chunks::<8>();
    let (b_chunks, b_rest) = b.as_chunks::<8>();
    let mut acc = [0.0f32; 8];
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for ((sum, x), y) in acc.iter_mut().zip(x).zip(y) {
            *sum += x.to_f32() * y.to_f32();
        }
    }
    let mut sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in a_rest.iter().zip(b_rest) {
        sum += x.to_f32() * y.to_f32();
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::runnable;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Each variant against a plain loop, for lengths around the 8 and 32 lanes, and over
    /// the common prefix of unequal lengths.
    #[test]
    fn each_variant_matches_a_plain_loop() {
        let variants = runnable(&VARIANTS);
        let mut rng = StdRng::seed_from_u64(1);
        for dims in [0, 1, 7, 8, 9, 31, 32, 33, 63, 64, 100, 384] {
            let a: Vec<f16> = (0..dims)
                .map(|_| f16::from_f32(rng.random_range(-1.0f32..1.0)))
                .collect();
            let b: Vec<f16> = (0..dims)
                .map(|_| f16::from_f32(rng.random_range(-1.0f32..1.0)))
                .collect();
            let plain = |a: &[f16], b: &[f16]| -> f32 {
                a.iter().zip(b).map(|(x, y)| x.to_f32() * y.to_f32()).sum()
            };
            let short = &b[..dims / 2];
            for &isa in &variants {
                let name = isa.name();
                let got = dot_with(isa, &a, &b);
                assert!((got - plain(&a, &b)).abs() < 1e-4, "{name}, dims {dims}");
                let got = dot_with(isa, &a, short);
                assert!(
                    (got - plain(&a, short)).abs() < 1e-4,
                    "{name}, dims {dims}, prefix"
                );
            }
            assert!((dot(&a, &b) - plain(&a, &b)).abs() < 1e-4, "dims {dims}");
        }
    }
}
