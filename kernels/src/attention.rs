//! The encoder's self-attention in one pass: scores, masked softmax and the weighted sum of
//! values, read straight from the layer's fused query-key-value product.
//!
//! The texts of a batch are packed one after the other, without padding: every other part of
//! the encoder works token by token, so only attention needs to know where a text ends.
//! Padded to the longest text, a batch of texts of mixed lengths (concurrent saves: 10 to 80
//! tokens) spent most of its work on padding, and cost more per text than single texts did
//! (docs/BENCHMARKS.md). Written as tensor operations, attention also took three copies
//! (query, key and value split by head), two small matrix products per text and head, each
//! dispatched to the thread pool on its own, and a copy to put the heads back side by side.
//! Here each output row (one token) is a task's unit of work: its query against the keys of
//! its own text, head after head.
//!
//! Like the other kernels, the body is written once as plain loops and compiled for AVX-512,
//! for AVX2 with FMA and for the baseline; the widest the CPU has is chosen at run time. Sums
//! run in [`LANES`] lanes, so results agree with a plain loop within float rounding.

use rayon::prelude::*;

use crate::activations;
use crate::cpu::Isa;

/// Lanes of the dot products' partial sums.
const LANES: usize = 8;
/// Output rows (tokens) per parallel task.
const ROWS_PER_TASK: usize = 8;

/// Multi-head self-attention of a batch of texts packed one after the other, without padding.
///
/// - `qkv`: `(tokens, 3 x hidden)`, row-major, `hidden = heads x head`: each token's query
///   (already scaled by `1/√head`), key and value side by side, each `heads` consecutive blocks
///   of `head`. The tokens of the first text come first, then those of the second, and so on.
/// - `lengths`: the tokens of each text (each at least 1), summing to the rows of `qkv`.
///
/// Returns `(tokens, hidden)`: for each token and head, the softmax-weighted sum of the values
/// of its own text's tokens. `None` when the sizes do not match.
pub fn self_attention(
    qkv: &[f32],
    lengths: &[usize],
    heads: usize,
    head: usize,
) -> Option<Vec<f32>> {
    self_attention_with(activations::widest(), qkv, lengths, heads, head)
}

/// [`self_attention`] compiled for `isa` (one of [`activations::VARIANTS`]; panics where the
/// CPU cannot run it).
pub fn self_attention_with(
    isa: Isa,
    qkv: &[f32],
    lengths: &[usize],
    heads: usize,
    head: usize,
) -> Option<Vec<f32>> {
    assert!(
        isa.available(),
        "attention: this CPU does not run {}",
        isa.name()
    );
    let hidden = heads.checked_mul(head)?;
    let rows: usize = lengths.iter().sum();
    if hidden == 0 || lengths.contains(&0) || qkv.len() != rows.checked_mul(3 * hidden)? {
        return None;
    }
    // Each row's text, as (first row, length).
    let mut texts = Vec::with_capacity(rows);
    let mut first = 0;
    for &length in lengths {
        texts.extend(std::iter::repeat_n((first, length), length));
        first += length;
    }
    let longest = lengths.iter().copied().max().unwrap_or(0);
    let shape = Shape {
        heads,
        head,
        longest,
    };
    let mut out = vec![0.0f32; rows * hidden];
    out.par_chunks_mut(ROWS_PER_TASK * hidden)
        .zip(texts.par_chunks(ROWS_PER_TASK))
        .enumerate()
        .for_each(|(task, (out, texts))| {
            rows_with(isa, qkv, texts, shape, task * ROWS_PER_TASK, out);
        });
    Some(out)
}

#[derive(Clone, Copy)]
struct Shape {
    heads: usize,
    head: usize,
    /// The longest text's tokens.
    longest: usize,
}

/// The rows `first..` that `out` holds, `texts` giving each one's text, compiled for `isa`
/// (which the CPU runs: checked by the caller).
fn rows_with(
    isa: Isa,
    qkv: &[f32],
    texts: &[(usize, usize)],
    shape: Shape,
    first: usize,
    out: &mut [f32],
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            // SAFETY: `self_attention_with` checked that the CPU runs AVX-512 F.
            unsafe { rows_avx512(qkv, texts, shape, first, out) }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            // SAFETY: `self_attention_with` checked that the CPU runs AVX2 and FMA.
            unsafe { rows_avx2(qkv, texts, shape, first, out) }
        }
        Isa::Baseline => rows_body(qkv, texts, shape, first, out),
        other => unreachable!("attention has no {} variant", other.name()),
    }
}

/// # Safety
/// The CPU supports AVX-512 F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn rows_avx512(
    qkv: &[f32],
    texts: &[(usize, usize)],
    shape: Shape,
    first: usize,
    out: &mut [f32],
) {
    rows_body(qkv, texts, shape, first, out)
}

/// # Safety
/// The CPU supports AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_avx2(
    qkv: &[f32],
    texts: &[(usize, usize)],
    shape: Shape,
    first: usize,
    out: &mut [f32],
) {
    rows_body(qkv, texts, shape, first, out)
}

#[inline(always)]
fn rows_body(qkv: &[f32], texts: &[(usize, usize)], shape: Shape, first: usize, out: &mut [f32]) {
    let Shape {
        heads,
        head,
        longest,
    } = shape;
    let hidden = heads * head;
    let stride = 3 * hidden;
    let ones = vec![1.0f32; longest];
    let mut scores = vec![0.0f32; longest];
    let mut weights = vec![0.0f32; longest];
    for ((offset, out), &(start, length)) in out.chunks_exact_mut(hidden).enumerate().zip(texts) {
        let row = first + offset;
        let keys = &qkv[start * stride..(start + length) * stride];
        let query = &qkv[row * stride..row * stride + hidden];
        let (scores, weights) = (&mut scores[..length], &mut weights[..length]);
        for h in 0..heads {
            let at = h * head;
            let q = &query[at..at + head];
            for (j, score) in scores.iter_mut().enumerate() {
                *score = dot(q, &keys[j * stride + hidden + at..][..head]);
            }
            activations::softmax_body(scores, &ones[..length], weights);
            let o = &mut out[at..at + head];
            for (j, &w) in weights.iter().enumerate() {
                let v = &keys[j * stride + 2 * hidden + at..][..head];
                for (o, &v) in o.iter_mut().zip(v) {
                    *o += w * v;
                }
            }
        }
    }
}

/// `a · b` summed in [`LANES`] lanes (the compiler vectorises it), `a` and `b` of one length.
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (a_blocks, a_rest) = a.as_chunks::<LANES>();
    let (b_blocks, b_rest) = b.as_chunks::<LANES>();
    let mut lanes = [0.0f32; LANES];
    for (x, y) in a_blocks.iter().zip(b_blocks) {
        for i in 0..LANES {
            lanes[i] += x[i] * y[i];
        }
    }
    let mut sum: f32 = lanes.iter().sum();
    for (x, y) in a_rest.iter().zip(b_rest) {
        sum += x * y;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::runnable;
    use rand::{Rng, SeedableRng};

    /// Attention as the textbook writes it, one text at a time, in `f64`.
    fn reference(qkv: &[f32], lengths: &[usize], heads: usize, head: usize) -> Vec<f32> {
        let hidden = heads * head;
        let at = |t: usize, part: usize, h: usize, d: usize| {
            qkv[t * 3 * hidden + part * hidden + h * head + d] as f64
        };
        let rows: usize = lengths.iter().sum();
        let mut out = vec![0.0f32; rows * hidden];
        let mut first = 0;
        for &length in lengths {
            let text = first..first + length;
            for i in text.clone() {
                for h in 0..heads {
                    let scores: Vec<f64> = text
                        .clone()
                        .map(|j| (0..head).map(|d| at(i, 0, h, d) * at(j, 1, h, d)).sum())
                        .collect();
                    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let exps: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                    let sum: f64 = exps.iter().sum();
                    for d in 0..head {
                        let value: f64 = text
                            .clone()
                            .zip(&exps)
                            .map(|(j, e)| e / sum * at(j, 2, h, d))
                            .sum();
                        out[i * hidden + h * head + d] = value as f32;
                    }
                }
            }
            first += length;
        }
        out
    }

    fn random_qkv(rows: usize, hidden: usize, seed: u64) -> Vec<f32> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..rows * 3 * hidden)
            .map(|_| rng.random_range(-2.0f32..2.0))
            .collect()
    }

    fn assert_close(got: &[f32], expected: &[f32]) {
        assert_eq!(got.len(), expected.len());
        for (a, b) in got.iter().zip(expected) {
            assert!((a - b).abs() < 1e-5, "{a} against {b}");
        }
    }

    /// Every variant this CPU runs.
    #[test]
    fn matches_the_textbook_text_by_text() {
        // Texts of 7, 3 and 1 tokens; a head width that is not a multiple of the lanes; rows
        // of one text split across tasks.
        let (lengths, heads, head) = ([7, 3, 1], 3, 12);
        let qkv = random_qkv(11, heads * head, 7);
        let expected = reference(&qkv, &lengths, heads, head);
        for isa in runnable(&activations::VARIANTS) {
            let got = self_attention_with(isa, &qkv, &lengths, heads, head).unwrap();
            assert_close(&got, &expected);
            // A text's rows depend on its own tokens only: changing the third text leaves the
            // first two as they were.
            let mut changed = qkv.clone();
            let hidden = heads * head;
            changed[10 * 3 * hidden..].fill(1e4);
            let again = self_attention_with(isa, &changed, &lengths, heads, head).unwrap();
            assert_eq!(got[..10 * hidden], again[..10 * hidden], "{}", isa.name());
        }
    }

    #[test]
    fn a_model_sized_batch_matches_the_textbook() {
        let (lengths, heads, head) = ([40, 23, 57], 12, 32);
        let qkv = random_qkv(120, heads * head, 11);
        let expected = reference(&qkv, &lengths, heads, head);
        for isa in runnable(&activations::VARIANTS) {
            let got = self_attention_with(isa, &qkv, &lengths, heads, head).unwrap();
            assert_close(&got, &expected);
        }
        assert_close(
            &self_attention(&qkv, &lengths, heads, head).unwrap(),
            &expected,
        );
    }

    #[test]
    fn wrong_sizes_are_refused() {
        let (heads, head) = (2, 4);
        let rows = 3 * 3 * heads * head;
        assert!(self_attention(&vec![0.0; rows], &[2, 1], heads, head).is_some());
        assert!(self_attention(&vec![0.0; rows], &[2, 2], heads, head).is_none());
        assert!(self_attention(&vec![0.0; rows], &[3, 0], heads, head).is_none());
        assert!(self_attention(&vec![0.0; rows], &[3], 0, head).is_none());
    }
}
