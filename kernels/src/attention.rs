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
//! its own text, head after head, the keys read from a copy laid out column by column
//! ([`transposed_keys`]) and each block of the output summed in registers. With one short dot
//! product per key and the output read and written back once a key, `perf` put attention at
//! half the time of the layers' matrix products in a phase of 16 clients saving short texts;
//! the layout made it 1.4 times as fast on texts of 30 to 40 tokens (AMD Zen 5, 2 threads).
//!
//! Like the other kernels, the body is written once as plain loops and compiled for AVX-512,
//! for AVX2 with FMA and for the baseline; the widest the CPU has is chosen at run time.

use rayon::prelude::*;

use crate::activations;
use crate::cpu::Isa;

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
    // Each row's text: its first row, its length, and where its keys are in `keys`.
    let mut texts = Vec::with_capacity(rows);
    let (mut first, mut offset) = (0, 0);
    for &length in lengths {
        texts.extend(std::iter::repeat_n(
            Text {
                first,
                length,
                keys: offset,
            },
            length,
        ));
        first += length;
        offset += length.next_multiple_of(KEY_LANES) * hidden;
    }
    let keys = transposed_keys(qkv, lengths, hidden, offset);
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
            rows_with(isa, qkv, &keys, texts, shape, task * ROWS_PER_TASK, out);
        });
    Some(out)
}

/// Keys scored at once: a text's key columns are padded with zeros to a multiple of this.
const KEY_LANES: usize = 16;

/// A row's text.
#[derive(Clone, Copy)]
struct Text {
    /// Its first row.
    first: usize,
    length: usize,
    /// Where its block starts in [`transposed_keys`].
    keys: usize,
}

/// Each text's keys, column by column: a text of `length` tokens has a block of `hidden`
/// columns of `length` rounded up to [`KEY_LANES`] values (the rest zeros), one after the
/// other; column `c` (head `c / head`, dimension `c % head`) holds that component of every
/// key of the text. A query's scores against its text's keys are then `head` multiply-adds of
/// whole vectors of keys, instead of one short dot product, and a sum across its lanes, per
/// key.
fn transposed_keys(qkv: &[f32], lengths: &[usize], hidden: usize, size: usize) -> Vec<f32> {
    let stride = 3 * hidden;
    let mut keys = vec![0.0f32; size];
    let mut blocks = Vec::with_capacity(lengths.len());
    let mut rest = keys.as_mut_slice();
    let mut first = 0;
    for &length in lengths {
        let padded = length.next_multiple_of(KEY_LANES);
        let (block, tail) = std::mem::take(&mut rest).split_at_mut(padded * hidden);
        blocks.push((first, length, block));
        rest = tail;
        first += length;
    }
    blocks.into_par_iter().for_each(|(first, length, block)| {
        let padded = length.next_multiple_of(KEY_LANES);
        for j in 0..length {
            let key = &qkv[(first + j) * stride + hidden..][..hidden];
            for (column, &k) in block.chunks_exact_mut(padded).zip(key) {
                column[j] = k;
            }
        }
    });
    keys
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
    keys: &[f32],
    texts: &[Text],
    shape: Shape,
    first: usize,
    out: &mut [f32],
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            // SAFETY: `self_attention_with` checked that the CPU runs AVX-512 F.
            unsafe { rows_avx512(qkv, keys, texts, shape, first, out) }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            // SAFETY: `self_attention_with` checked that the CPU runs AVX2 and FMA.
            unsafe { rows_avx2(qkv, keys, texts, shape, first, out) }
        }
        Isa::Baseline => rows_body(qkv, keys, texts, shape, first, out),
        other => unreachable!("attention has no {} variant", other.name()),
    }
}

/// # Safety
/// The CPU supports AVX-512 F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn rows_avx512(
    qkv: &[f32],
    keys: &[f32],
    texts: &[Text],
    shape: Shape,
    first: usize,
    out: &mut [f32],
) {
    rows_body(qkv, keys, texts, shape, first, out)
}

/// # Safety
/// The CPU supports AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_avx2(
    qkv: &[f32],
    keys: &[f32],
    texts: &[Text],
    shape: Shape,
    first: usize,
    out: &mut [f32],
) {
    rows_body(qkv, keys, texts, shape, first, out)
}

/// The rows `first..` that `out` holds: `qkv` as given to [`self_attention`], `keys` from
/// [`transposed_keys`], `texts` each row's [`Text`].
#[inline(always)]
fn rows_body(
    qkv: &[f32],
    keys: &[f32],
    texts: &[Text],
    shape: Shape,
    first: usize,
    out: &mut [f32],
) {
    let Shape {
        heads,
        head,
        longest,
    } = shape;
    let hidden = heads * head;
    let stride = 3 * hidden;
    let padded_longest = longest.next_multiple_of(KEY_LANES);
    let ones = vec![1.0f32; longest];
    let mut scores = vec![0.0f32; padded_longest];
    let mut weights = vec![0.0f32; longest];
    for ((offset, out), text) in out.chunks_exact_mut(hidden).enumerate().zip(texts) {
        let Text {
            first: start,
            length,
            keys: block,
        } = *text;
        let padded = length.next_multiple_of(KEY_LANES);
        let row = first + offset;
        let query = &qkv[row * stride..row * stride + hidden];
        let columns = &keys[block..block + padded * hidden];
        let values = &qkv[start * stride..(start + length) * stride];
        let weights = &mut weights[..length];
        for h in 0..heads {
            let at = h * head;
            let head_columns = &columns[at * padded..(at + head) * padded];
            let (score_blocks, _) = scores[..padded].as_chunks_mut::<KEY_LANES>();
            for (chunk, scores) in score_blocks.iter_mut().enumerate() {
                let mut sums = [0.0f32; KEY_LANES];
                for (&q, column) in query[at..at + head]
                    .iter()
                    .zip(head_columns.chunks_exact(padded))
                {
                    let keys: &[f32; KEY_LANES] = column[chunk * KEY_LANES..][..KEY_LANES]
                        .try_into()
                        .expect("a block of keys");
                    for i in 0..KEY_LANES {
                        sums[i] += q * keys[i];
                    }
                }
                *scores = sums;
            }
            activations::softmax_body(&scores[..length], &ones[..length], weights);
            // Each block of the output in registers over the keys, not read and written back
            // once a key.
            let (o_blocks, o_rest) = out[at..at + head].as_chunks_mut::<KEY_LANES>();
            let full = o_blocks.len() * KEY_LANES;
            for (b, o) in o_blocks.iter_mut().enumerate() {
                let mut sums = [0.0f32; KEY_LANES];
                for (j, &w) in weights.iter().enumerate() {
                    let v: &[f32; KEY_LANES] = values
                        [j * stride + 2 * hidden + at + b * KEY_LANES..][..KEY_LANES]
                        .try_into()
                        .expect("a block of values");
                    for i in 0..KEY_LANES {
                        sums[i] += w * v[i];
                    }
                }
                *o = sums;
            }
            for (d, o) in (full..).zip(o_rest.iter_mut()) {
                *o = weights
                    .iter()
                    .enumerate()
                    .map(|(j, &w)| w * values[j * stride + 2 * hidden + at + d])
                    .sum();
            }
        }
    }
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
