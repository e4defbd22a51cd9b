//! The encoder's element-wise passes: GELU and the masked softmax of attention.
//!
//! Each is written once, as plain loops the compiler vectorises (no library calls: `exp` and
//! `erf` are polynomials here), and compiled three times: for AVX-512, for AVX2 with FMA, and
//! for the baseline (SSE2). The widest the CPU has is chosen at run time. Compiled for the
//! baseline only, as the rest of the workspace is, GELU ran 4 lanes at a time and the
//! softmax's reductions one element at a time; `perf` put the two at 15 % and 22 % of a
//! chunk's encoding once the fully connected layers ran on AMX tiles (docs/BENCHMARKS.md).
//!
//! The softmax keeps its running maximum and sum in 16 lanes, so the order of its additions
//! differs from a plain loop's: results agree within float rounding.

use crate::cpu::Isa;

/// Lanes of the softmax's running maximum and sum.
const LANES: usize = 16;

/// The variants of the element-wise kernels (and of attention, which inlines the softmax).
pub const VARIANTS: [Isa; 3] = [Isa::Baseline, Isa::Avx2, Isa::Avx512];

/// The widest of [`VARIANTS`] this CPU runs (detected once).
pub(crate) fn widest() -> Isa {
    if Isa::Avx512.available() {
        Isa::Avx512
    } else if Isa::Avx2.available() {
        Isa::Avx2
    } else {
        Isa::Baseline
    }
}

/// `x * Φ(x)` in place of every `x` of `values`, within 1e-6 (relative to 1 + |x|) of the
/// exact value. In place: the encoder applies it to a product's output, which it owns.
pub fn gelu(values: &mut [f32]) {
    gelu_with(widest(), values)
}

/// [`gelu`] compiled for `isa` (one of [`VARIANTS`]; panics where the CPU cannot run it).
pub fn gelu_with(isa: Isa, values: &mut [f32]) {
    assert!(
        isa.available(),
        "gelu: this CPU does not run {}",
        isa.name()
    );
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            // SAFETY: `available()` checked AVX-512 F.
            unsafe { gelu_avx512(values) }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            // SAFETY: `available()` checked AVX2 and FMA.
            unsafe { gelu_avx2(values) }
        }
        Isa::Baseline => gelu_body(values),
        other => unreachable!("gelu has no {} variant", other.name()),
    }
}

/// One row of attention weights: `out[i] = e^(s[i] - max) / sum` over the keys whose `mask`
/// is not 0, and 0 for the others (padding). At least one key must be real (the [CLS] token
/// always is). All three slices have the same length.
pub fn masked_softmax(scores: &[f32], mask: &[f32], out: &mut [f32]) {
    masked_softmax_with(widest(), scores, mask, out)
}

/// [`masked_softmax`] compiled for `isa` (one of [`VARIANTS`]; panics where the CPU cannot run
/// it).
pub fn masked_softmax_with(isa: Isa, scores: &[f32], mask: &[f32], out: &mut [f32]) {
    assert!(
        scores.len() == mask.len() && scores.len() == out.len(),
        "masked softmax: lengths differ"
    );
    assert!(
        isa.available(),
        "masked softmax: this CPU does not run {}",
        isa.name()
    );
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            // SAFETY: `available()` checked AVX-512 F.
            unsafe { softmax_avx512(scores, mask, out) }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            // SAFETY: `available()` checked AVX2 and FMA.
            unsafe { softmax_avx2(scores, mask, out) }
        }
        Isa::Baseline => softmax_body(scores, mask, out),
        other => unreachable!("the softmax has no {} variant", other.name()),
    }
}

/// # Safety
/// The CPU supports AVX-512 F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn gelu_avx512(values: &mut [f32]) {
    gelu_body(values)
}

/// # Safety
/// The CPU supports AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn gelu_avx2(values: &mut [f32]) {
    gelu_body(values)
}

/// # Safety
/// The CPU supports AVX-512 F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn softmax_avx512(scores: &[f32], mask: &[f32], out: &mut [f32]) {
    softmax_body(scores, mask, out)
}

/// # Safety
/// The CPU supports AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn softmax_avx2(scores: &[f32], mask: &[f32], out: &mut [f32]) {
    softmax_body(scores, mask, out)
}

#[inline(always)]
fn gelu_body(values: &mut [f32]) {
    for x in values.iter_mut() {
        *x = gelu_one(*x);
    }
}

/// The softmax of [`masked_softmax`], inlined into the caller's compilation (its target
/// features), for the attention kernel.
#[inline(always)]
pub(crate) fn softmax_body(scores: &[f32], mask: &[f32], out: &mut [f32]) {
    let (score_blocks, score_rest) = scores.as_chunks::<LANES>();
    let (mask_blocks, mask_rest) = mask.as_chunks::<LANES>();
    let real = |s: f32, m: f32| if m != 0.0 { s } else { f32::NEG_INFINITY };
    let mut lanes = [f32::NEG_INFINITY; LANES];
    for (s, m) in score_blocks.iter().zip(mask_blocks) {
        for i in 0..LANES {
            lanes[i] = lanes[i].max(real(s[i], m[i]));
        }
    }
    let mut max = lanes.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    for (&s, &m) in score_rest.iter().zip(mask_rest) {
        max = max.max(real(s, m));
    }
    // A padded key may score above the real ones: its exponent is clamped to 0 before the
    // mask zeroes it, so it cannot overflow.
    let weight = |s: f32, m: f32| exp_nonpositive((s - max).min(0.0)) * m;
    let mut sums = [0.0f32; LANES];
    let (out_blocks, out_rest) = out.as_chunks_mut::<LANES>();
    for ((o, s), m) in out_blocks.iter_mut().zip(score_blocks).zip(mask_blocks) {
        for i in 0..LANES {
            o[i] = weight(s[i], m[i]);
            sums[i] += o[i];
        }
    }
    let mut sum: f32 = sums.iter().sum();
    for ((o, &s), &m) in out_rest.iter_mut().zip(score_rest).zip(mask_rest) {
        *o = weight(s, m);
        sum += *o;
    }
    let scale = 1.0 / sum;
    for o in out.iter_mut() {
        *o *= scale;
    }
}

/// [`softmax_body`] over the first `length` of `scores`, for rows padded to a multiple of
/// [`LANES`] (`scores` and `out` as long as each other, `length` at most that): each exponent
/// is taken a whole block at a time, where [`softmax_body`] takes those past the last full
/// block one at a time, and `out` past `length` is set to 0. The maximum and the sum are
/// taken in [`softmax_body`]'s order, so `out[..length]` is the same to the bit.
#[inline(always)]
pub(crate) fn softmax_padded(scores: &[f32], length: usize, out: &mut [f32]) {
    debug_assert!(scores.len() == out.len() && length <= scores.len());
    debug_assert!(scores.len().is_multiple_of(LANES));
    let full = length / LANES * LANES;
    let (score_blocks, _) = scores.as_chunks::<LANES>();
    let mut lanes = [f32::NEG_INFINITY; LANES];
    for s in &score_blocks[..full / LANES] {
        for i in 0..LANES {
            lanes[i] = lanes[i].max(s[i]);
        }
    }
    let mut max = lanes.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    for &s in &scores[full..length] {
        max = max.max(s);
    }
    let (out_blocks, _) = out.as_chunks_mut::<LANES>();
    for (o, s) in out_blocks.iter_mut().zip(score_blocks) {
        for i in 0..LANES {
            o[i] = exp_nonpositive((s[i] - max).min(0.0));
        }
    }
    out[length..].fill(0.0);
    let mut sums = [0.0f32; LANES];
    for o in &out.as_chunks::<LANES>().0[..full / LANES] {
        for i in 0..LANES {
            sums[i] += o[i];
        }
    }
    let mut sum: f32 = sums.iter().sum();
    for &o in &out[full..length] {
        sum += o;
    }
    let scale = 1.0 / sum;
    for o in out.iter_mut() {
        *o *= scale;
    }
}

/// `x * Φ(x) = x/2 * (1 + erf(x/√2))`.
#[inline(always)]
fn gelu_one(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// erf by Abramowitz and Stegun's formula 7.1.26 (absolute error under 1.5e-7):
/// `1 - (a1 t + a2 t² + a3 t³ + a4 t⁴ + a5 t⁵) e^(-x²)` with `t = 1 / (1 + p |x|)`, odd in x.
#[inline(always)]
fn erf(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A1: f32 = 0.254_829_6;
    const A2: f32 = -0.284_496_74;
    const A3: f32 = 1.421_413_8;
    const A4: f32 = -1.453_152_1;
    const A5: f32 = 1.061_405_4;
    let z = x.abs();
    let t = 1.0 / (1.0 + P * z);
    let poly = t * (A1 + t * (A2 + t * (A3 + t * (A4 + t * A5))));
    let y = 1.0 - poly * exp_nonpositive(-z * z);
    y.copysign(x)
}

/// `e^x` for `x <= 0`, branch-free: `2^(x log2 e)` split into an integer power of two, written
/// into the exponent bits, and `2^f` for `f` in [-0.5, 0.5] by its Taylor series to the 6th
/// power (relative error under 2e-7 (1 + |x|), most of it from rounding `x log2 e`). Below
/// about -87 the result is 2^-126 ≈ 1e-38, which is 0 for every use here.
#[inline(always)]
fn exp_nonpositive(x: f32) -> f32 {
    // Adding and subtracting 1.5 * 2^23 rounds to the nearest integer without a library call.
    // The rounded sum also holds the integer in its low mantissa bits, read back with integer
    // arithmetic: a float-to-integer cast (`as i32`) saturates and maps NaN to 0, which the
    // compiler cannot vectorise, and with it GELU and the softmax ran one element at a time.
    const ROUND: f32 = 12_582_912.0;
    let y = (x * std::f32::consts::LOG2_E).max(-126.0);
    let rounded = y + ROUND;
    let n = rounded - ROUND;
    let t = (y - n) * std::f32::consts::LN_2;
    let two_to_f = 1.0
        + t * (1.0
            + t * (0.5
                + t * (1.0 / 6.0 + t * (1.0 / 24.0 + t * (1.0 / 120.0 + t * (1.0 / 720.0))))));
    let integer = rounded.to_bits().wrapping_sub(ROUND.to_bits());
    let two_to_n = f32::from_bits(integer.wrapping_add(127) << 23);
    two_to_f * two_to_n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::runnable;

    #[test]
    fn the_padded_softmax_is_the_plain_one_to_the_bit() {
        for length in 1..=70usize {
            let padded = length.next_multiple_of(LANES);
            let scores: Vec<f32> = (0..padded)
                .map(|i| ((i * 7919 + length) % 997) as f32 / 97.0 - 5.0)
                .collect();
            let mut plain = vec![0.0f32; length];
            softmax_body(&scores[..length], &vec![1.0; length], &mut plain);
            let mut out = vec![f32::NAN; padded];
            softmax_padded(&scores, length, &mut out);
            assert_eq!(
                plain.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                out[..length]
                    .iter()
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>(),
                "{length} keys"
            );
            assert!(out[length..].iter().all(|&x| x == 0.0), "{length} keys");
        }
    }

    #[test]
    fn exp_matches_the_library() {
        for i in 0..=10_000 {
            let x = -(i as f32) * 0.01; // 0 .. -100
            let (fast, exact) = (exp_nonpositive(x), x.exp());
            assert!(
                (fast - exact).abs() <= 2e-7 * (1.0 - x) * exact || (exact < 1e-37 && fast < 2e-38),
                "exp({x}) = {fast}, expected {exact}"
            );
        }
    }

    /// Every compiled variant gives the plain loop's values (the loop body is the same code).
    #[test]
    fn gelu_variants_agree_with_the_plain_loop() {
        let src: Vec<f32> = (-1_000..=1_000).map(|i| i as f32 * 0.013).collect();
        let mut plain = src.clone();
        gelu_body(&mut plain);
        let variants = runnable(&VARIANTS);
        assert!(variants.contains(&Isa::Baseline));
        for isa in variants {
            let mut got = src.clone();
            gelu_with(isa, &mut got);
            for ((x, a), b) in src.iter().zip(&got).zip(&plain) {
                assert!(
                    (a - b).abs() <= 1e-6 * (1.0 + x.abs()),
                    "{}: gelu({x}) = {a} against {b}",
                    isa.name()
                );
            }
        }
        let mut chosen = src.clone();
        gelu(&mut chosen);
        assert!(chosen
            .iter()
            .zip(&plain)
            .all(|(a, b)| (a - b).abs() <= 1e-5));
        assert_eq!(gelu_one(0.0), 0.0);
        assert!(erf(-3.0) < -0.9999 && erf(3.0) > 0.9999);
    }

    /// Each variant against a plain two-pass softmax in `f64`, for lengths around the 16
    /// lanes, with padded keys (which score high, to check that they get no weight) at the end.
    #[test]
    fn the_softmax_matches_a_plain_one_and_ignores_padding() {
        for isa in runnable(&VARIANTS) {
            softmax_matches_a_plain_one(isa);
        }
    }

    fn softmax_matches_a_plain_one(isa: Isa) {
        for keys in [1usize, 2, 15, 16, 17, 33, 128, 257] {
            for padded in [0usize, 1, 5] {
                if padded >= keys {
                    continue;
                }
                let scores: Vec<f32> = (0..keys)
                    .map(|i| {
                        if i >= keys - padded {
                            500.0
                        } else {
                            ((i * 37) % 11) as f32 * 0.7 - 3.0
                        }
                    })
                    .collect();
                let mask: Vec<f32> = (0..keys)
                    .map(|i| if i >= keys - padded { 0.0 } else { 1.0 })
                    .collect();
                let mut out = vec![f32::NAN; keys];
                masked_softmax_with(isa, &scores, &mask, &mut out);
                let real = keys - padded;
                let max = scores[..real]
                    .iter()
                    .fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
                let sum: f64 = scores[..real].iter().map(|&s| (s as f64 - max).exp()).sum();
                for i in 0..keys {
                    let expected = if i < real {
                        (scores[i] as f64 - max).exp() / sum
                    } else {
                        0.0
                    };
                    assert!(
                        (out[i] as f64 - expected).abs() < 1e-6,
                        "{}: keys {keys}, padded {padded}, key {i}: {} against {expected}",
                        isa.name(),
                        out[i]
                    );
                }
                let total: f32 = out.iter().sum();
                assert!((total - 1.0).abs() < 1e-5, "keys {keys}: sum {total}");
            }
        }
    }
}
