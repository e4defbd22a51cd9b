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
//! A task's rows of the same text then go through together, four at a time
//! ([`rows_of_text`]): one load of a block of keys or values serves four rows, and their four
//! sums do not wait on each other (one row's sum waited on the addition before it at every
//! step). The softmax takes its exponents a block of 16 at a time up to the padded length
//! (it took those past the last full block one at a time), and the keys are copied column by
//! column. Each score and output is summed in the same order as before, so the vectors are the
//! same to the bit; a pass of 480 tokens took 1.1-1.35 ms against 1.8-2.2 (AMD Zen 4, one
//! thread), and the model ran 416-422 texts/s in calls of 256 against 367-374.
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
    // Four rows' sums take all sixteen of SSE2's registers: two at a time there.
    let most = if isa == Isa::Baseline {
        2
    } else {
        ROWS_AT_ONCE
    };
    grouped(isa, qkv, lengths, heads, head, most)
}

/// [`self_attention_with`], a text's rows taken up to `most` at a time (1 to
/// [`ROWS_AT_ONCE`]).
fn grouped(
    isa: Isa,
    qkv: &[f32],
    lengths: &[usize],
    heads: usize,
    head: usize,
    most: usize,
) -> Option<Vec<f32>> {
    assert!(
        isa.available(),
        "attention: this CPU does not run {}",
        isa.name()
    );
    assert!(
        (1..=ROWS_AT_ONCE).contains(&most),
        "attention: {most} rows at a time"
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
            let rows = Task {
                texts,
                first: task * ROWS_PER_TASK,
                most,
            };
            rows_with(isa, qkv, &keys, rows, shape, out);
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
        let keys = &qkv[first * stride + hidden..];
        // Column by column: each column written in order, the text's key rows (a few kB)
        // read again for each and kept in the cache, where writing key by key stored each
        // value into another line of a block larger than the first-level cache.
        for (c, column) in block.chunks_exact_mut(padded).enumerate() {
            for (j, value) in column[..length].iter_mut().enumerate() {
                *value = keys[j * stride + c];
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

/// A task's rows: `texts` gives each one's text, `first` the first one's row, `most` how many
/// rows of a text [`rows_of_text`] takes at a time.
#[derive(Clone, Copy)]
struct Task<'a> {
    texts: &'a [Text],
    first: usize,
    most: usize,
}

/// The rows of `task`, which `out` holds, compiled for `isa` (which the CPU runs: checked by
/// the caller).
fn rows_with(isa: Isa, qkv: &[f32], keys: &[f32], task: Task<'_>, shape: Shape, out: &mut [f32]) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            // SAFETY: `grouped` checked that the CPU runs AVX-512 F.
            unsafe { rows_avx512(qkv, keys, task, shape, out) }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            // SAFETY: `grouped` checked that the CPU runs AVX2 and FMA.
            unsafe { rows_avx2(qkv, keys, task, shape, out) }
        }
        Isa::Baseline => rows_body(qkv, keys, task, shape, out),
        other => unreachable!("attention has no {} variant", other.name()),
    }
}

/// # Safety
/// The CPU supports AVX-512 F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn rows_avx512(qkv: &[f32], keys: &[f32], task: Task<'_>, shape: Shape, out: &mut [f32]) {
    rows_body(qkv, keys, task, shape, out)
}

/// # Safety
/// The CPU supports AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_avx2(qkv: &[f32], keys: &[f32], task: Task<'_>, shape: Shape, out: &mut [f32]) {
    rows_body(qkv, keys, task, shape, out)
}

/// Rows of one text scored and weighted together: each block of keys and of values is loaded
/// once for all of them, and their sums are independent chains the core runs side by side.
const ROWS_AT_ONCE: usize = 4;

/// The rows of `task`, which `out` holds: `qkv` as given to [`self_attention`], `keys` from
/// [`transposed_keys`]. Consecutive rows of the same text go through [`rows_of_text`] up to
/// `task.most` at a time.
#[inline(always)]
fn rows_body(qkv: &[f32], keys: &[f32], task: Task<'_>, shape: Shape, out: &mut [f32]) {
    let Task { texts, first, most } = task;
    let hidden = shape.heads * shape.head;
    let padded_longest = shape.longest.next_multiple_of(KEY_LANES);
    let mut work = Work {
        scores: vec![0.0f32; ROWS_AT_ONCE * padded_longest],
        weights: vec![0.0f32; ROWS_AT_ONCE * padded_longest],
        lanes: vec![0.0f32; ROWS_AT_ONCE * shape.longest.max(shape.head)],
    };
    let mut offset = 0;
    while offset < texts.len() {
        let text = texts[offset];
        let run = texts[offset..]
            .iter()
            .take(most)
            .take_while(|t| t.first == text.first)
            .count();
        let rows = Rows {
            text,
            first: first + offset,
        };
        let out = &mut out[offset * hidden..(offset + run) * hidden];
        match run {
            1 => rows_of_text::<1>(qkv, keys, rows, shape, &mut work, out),
            2 => rows_of_text::<2>(qkv, keys, rows, shape, &mut work, out),
            3 => rows_of_text::<3>(qkv, keys, rows, shape, &mut work, out),
            _ => rows_of_text::<ROWS_AT_ONCE>(qkv, keys, rows, shape, &mut work, out),
        }
        offset += run;
    }
}

/// `R` consecutive rows of one text, from its row `first`.
#[derive(Clone, Copy)]
struct Rows {
    text: Text,
    first: usize,
}

/// A task's scratch buffers, sized for [`ROWS_AT_ONCE`] rows of the longest text.
struct Work {
    scores: Vec<f32>,
    weights: Vec<f32>,
    /// The rows' queries of one head, then their weights, interleaved row by row.
    lanes: Vec<f32>,
}

/// Attention for `R` rows of one text (`out` holds their `R` rows of output). Each score and
/// each output value is summed in the same order as for a row alone.
#[inline(always)]
fn rows_of_text<const R: usize>(
    qkv: &[f32],
    keys: &[f32],
    rows: Rows,
    shape: Shape,
    work: &mut Work,
    out: &mut [f32],
) {
    let Shape {
        heads,
        head,
        longest,
    } = shape;
    let hidden = heads * head;
    let stride = 3 * hidden;
    let Text {
        first: start,
        length,
        keys: block,
    } = rows.text;
    let padded = length.next_multiple_of(KEY_LANES);
    let padded_longest = longest.next_multiple_of(KEY_LANES);
    let columns = &keys[block..block + padded * hidden];
    let values = &qkv[start * stride..(start + length) * stride];
    let queries: [&[f32]; R] = std::array::from_fn(|r| &qkv[(rows.first + r) * stride..][..hidden]);
    let scores: [&mut [f32]; R] = {
        let mut chunks = work.scores.chunks_exact_mut(padded_longest);
        std::array::from_fn(|_| &mut chunks.next().expect("a row of scores")[..padded])
    };
    let weights: [&mut [f32]; R] = {
        let mut chunks = work.weights.chunks_exact_mut(padded_longest);
        std::array::from_fn(|_| &mut chunks.next().expect("a row of weights")[..padded])
    };
    let outs: [&mut [f32]; R] = {
        let mut chunks = out.chunks_exact_mut(hidden);
        std::array::from_fn(|_| chunks.next().expect("a row of output"))
    };
    for h in 0..heads {
        let at = h * head;
        // The rows' queries for this head, component by component: `R` values a component.
        let lanes = &mut work.lanes[..head * R];
        for (d, q) in lanes.chunks_exact_mut(R).enumerate() {
            for r in 0..R {
                q[r] = queries[r][at + d];
            }
        }
        let head_columns = &columns[at * padded..(at + head) * padded];
        for chunk in 0..padded / KEY_LANES {
            let mut sums = [[0.0f32; KEY_LANES]; R];
            for (column, q) in head_columns.chunks_exact(padded).zip(lanes.chunks_exact(R)) {
                let keys: &[f32; KEY_LANES] = column[chunk * KEY_LANES..][..KEY_LANES]
                    .try_into()
                    .expect("a block of keys");
                for r in 0..R {
                    for i in 0..KEY_LANES {
                        sums[r][i] += q[r] * keys[i];
                    }
                }
            }
            for r in 0..R {
                scores[r][chunk * KEY_LANES..][..KEY_LANES].copy_from_slice(&sums[r]);
            }
        }
        for r in 0..R {
            activations::softmax_padded(scores[r], length, weights[r]);
        }
        // The rows' weights key by key: `R` values a key.
        let lanes = &mut work.lanes[..length * R];
        for (j, w) in lanes.chunks_exact_mut(R).enumerate() {
            for r in 0..R {
                w[r] = weights[r][j];
            }
        }
        // Each block of the output in registers over the keys, not read and written back
        // once a key.
        let blocks = head / KEY_LANES;
        for b in 0..blocks {
            let mut sums = [[0.0f32; KEY_LANES]; R];
            for (value, w) in values.chunks_exact(stride).zip(lanes.chunks_exact(R)) {
                let v: &[f32; KEY_LANES] = value[2 * hidden + at + b * KEY_LANES..][..KEY_LANES]
                    .try_into()
                    .expect("a block of values");
                for r in 0..R {
                    for i in 0..KEY_LANES {
                        sums[r][i] += w[r] * v[i];
                    }
                }
            }
            for r in 0..R {
                outs[r][at + b * KEY_LANES..][..KEY_LANES].copy_from_slice(&sums[r]);
            }
        }
        for d in blocks * KEY_LANES..head {
            for r in 0..R {
                outs[r][at + d] = weights[r][..length]
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

    /// Rows taken together are summed as a row alone is: the same bits whatever the grouping,
    /// on every variant (texts of every length up to 40, so runs of 1 to 4 rows, texts that
    /// start inside a task, and padded key blocks of every fill).
    #[test]
    fn rows_taken_together_are_the_same_to_the_bit() {
        let (heads, head) = (3, 40);
        let lengths: Vec<usize> = (1..=40).collect();
        let rows = lengths.iter().sum();
        let qkv = random_qkv(rows, heads * head, 5);
        let bits = |out: Vec<f32>| out.into_iter().map(f32::to_bits).collect::<Vec<_>>();
        for isa in runnable(&activations::VARIANTS) {
            let alone = bits(grouped(isa, &qkv, &lengths, heads, head, 1).unwrap());
            for most in 2..=ROWS_AT_ONCE {
                let together = bits(grouped(isa, &qkv, &lengths, heads, head, most).unwrap());
                assert!(
                    alone == together,
                    "{} rows at a time on {}",
                    most,
                    isa.name()
                );
            }
        }
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
