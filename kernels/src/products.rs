//! What the tests of the matrix products share: random inputs, the plain product they are
//! checked against, and the error measure.

use rand::rngs::StdRng;
use rand::Rng;

/// `len` values drawn uniformly from [-1, 1).
pub(crate) fn random(rng: &mut StdRng, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// `x (rows, inputs) · w (inputs, outputs) + bias`, one sum at a time.
pub(crate) fn naive(x: &[f32], w: &[f32], bias: &[f32], inputs: usize, outputs: usize) -> Vec<f32> {
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
