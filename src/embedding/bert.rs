//! The encoder of all-MiniLM-L6-v2: a 6-layer BERT, written here on candle's tensors for
//! inference only.
//!
//! Why not `candle-transformers`' BERT: its GELU calls a scalar `erf` per element, which `perf`
//! put at 12 % of a chunk's encoding on 2 cores; here GELU is one vectorised pass ([`Gelu`],
//! `memvault_kernels::activations`, compiled for the widest vectors the CPU has).
//! It also runs three matrix products for query, key and value and scales the scores
//! afterwards; here the three are one product with the scale folded into the query weights at
//! load time; the padding mask is applied inside the softmax ([`MaskedSoftmax`]) instead of
//! by a pass of its own; and the weights are kept transposed ([`Dense`]), which spares the
//! matrix product a repacking on every call. The arithmetic is otherwise the same, and a test
//! holds the vectors to the reference model's.

use candle_core::{
    CpuStorage, CustomOp1, CustomOp2, DType, Layout, Module, Result, Shape, Tensor, D,
};
use candle_nn::{layer_norm, LayerNorm, VarBuilder};
use rayon::prelude::*;

use crate::config::EmbeddingPrecision;
use memvault_kernels::activations;
use memvault_kernels::bf16::{self, PackedDense};
use serde::Deserialize;

/// Elements per parallel task of the element-wise passes.
const PAR_BLOCK: usize = 16 * 1024;

/// The fields of the model's `config.json` that the encoder reads.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    pub layer_norm_eps: f64,
    pub hidden_act: String,
}

struct Layer {
    /// Query (pre-scaled), key and value in one product: hidden -> 3 x hidden.
    qkv: Dense,
    attention_out: Dense,
    attention_norm: LayerNorm,
    up: Dense,
    down: Dense,
    output_norm: LayerNorm,
}

/// A fully connected layer. In `f32`, its weights are stored transposed, `(in, out)` and
/// contiguous, so that the matrix product reads them in the order it packs them.
/// (`candle_nn::Linear` keeps the file's `(out, in)` and multiplies by a transposed view: for
/// a short text, repacking that view on every call cost as much as the product itself.) In
/// bfloat16 ([`EmbeddingPrecision::Bf16`] on a CPU that has it), the weights are packed for
/// [`PackedDense`] instead, and the `f32` copy is not kept.
enum Dense {
    F32 { weight: Tensor, bias: Tensor },
    Bf16(PackedDense),
}

impl Dense {
    /// From the file's `(out, in)` weight.
    fn new(weight: &Tensor, bias: Tensor, precision: EmbeddingPrecision) -> Result<Self> {
        let weight = weight.t()?.contiguous()?;
        if precision == EmbeddingPrecision::Bf16 && bf16::supported() {
            let (inputs, outputs) = weight.dims2()?;
            let packed = PackedDense::pack(
                &weight.flatten_all()?.to_vec1::<f32>()?,
                inputs,
                outputs,
                &bias.to_vec1::<f32>()?,
            );
            if let Some(packed) = packed {
                return Ok(Dense::Bf16(packed));
            }
        }
        Ok(Dense::F32 { weight, bias })
    }

    fn load(
        inputs: usize,
        outputs: usize,
        vb: VarBuilder,
        precision: EmbeddingPrecision,
    ) -> Result<Self> {
        Dense::new(
            &vb.get((outputs, inputs), "weight")?,
            vb.get(outputs, "bias")?,
            precision,
        )
    }

    /// `(..., in)` -> `(..., out)`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Dense::F32 { weight, bias } => {
                let mut dims = x.dims().to_vec();
                let inputs = dims.pop().unwrap_or(0);
                let rows = dims.iter().product::<usize>();
                dims.push(weight.dim(1)?);
                x.reshape((rows, inputs))?
                    .matmul(weight)?
                    .broadcast_add(bias)?
                    .reshape(dims)
            }
            Dense::Bf16(packed) => x.contiguous()?.apply_op1_no_bwd(&BfDense(packed)),
        }
    }
}

/// A [`PackedDense`] product as a tensor operation.
struct BfDense<'a>(&'a PackedDense);

impl CustomOp1 for BfDense<'_> {
    fn name(&self) -> &'static str {
        "dense-bf16"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let (CpuStorage::F32(values), Some((start, end))) = (storage, layout.contiguous_offsets())
        else {
            candle_core::bail!("a bf16 dense layer takes a contiguous f32 tensor");
        };
        let mut dims = layout.shape().dims().to_vec();
        if dims.pop() != Some(self.0.inputs()) {
            candle_core::bail!(
                "a bf16 dense layer of {} inputs got {:?}",
                self.0.inputs(),
                layout.shape()
            );
        }
        dims.push(self.0.outputs());
        let Some(out) = self.0.forward(&values[start..end]) else {
            candle_core::bail!("a bf16 dense layer got a partial row");
        };
        Ok((CpuStorage::F32(out), Shape::from(dims)))
    }
}

pub struct Encoder {
    words: Tensor,
    /// Position embeddings plus the (only used) token type 0 embedding.
    positions: Tensor,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
}

impl Encoder {
    /// Loads the weights (names as in the model's safetensors file, no `bert.` prefix).
    pub fn load(vb: VarBuilder, config: &Config, precision: EmbeddingPrecision) -> Result<Self> {
        if config.hidden_act != "gelu" {
            candle_core::bail!("unsupported activation {}", config.hidden_act);
        }
        let hidden = config.hidden_size;
        let heads = config.num_attention_heads;
        if heads == 0 || !hidden.is_multiple_of(heads) {
            candle_core::bail!("{hidden} hidden units do not split into {heads} heads");
        }
        let eps = config.layer_norm_eps;
        let embeddings = vb.pp("embeddings");
        let words = embeddings
            .pp("word_embeddings")
            .get((config.vocab_size, hidden), "weight")?;
        let token_type = embeddings
            .pp("token_type_embeddings")
            .get((2, hidden), "weight")?
            .get(0)?;
        let positions = embeddings
            .pp("position_embeddings")
            .get((config.max_position_embeddings, hidden), "weight")?
            .broadcast_add(&token_type)?;
        let embedding_norm = layer_norm(hidden, eps, embeddings.pp("LayerNorm"))?;
        let scale = 1.0 / ((hidden / heads) as f64).sqrt();
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for index in 0..config.num_hidden_layers {
            let vb = vb.pp(format!("encoder.layer.{index}"));
            let attention = vb.pp("attention");
            let part = |name: &str| -> Result<(Tensor, Tensor)> {
                let vb = attention.pp("self").pp(name);
                Ok((vb.get((hidden, hidden), "weight")?, vb.get(hidden, "bias")?))
            };
            let (qw, qb) = part("query")?;
            let (kw, kb) = part("key")?;
            let (vw, vb_) = part("value")?;
            let qkv = Dense::new(
                &Tensor::cat(&[(qw * scale)?, kw, vw], 0)?,
                Tensor::cat(&[(qb * scale)?, kb, vb_], 0)?,
                precision,
            )?;
            layers.push(Layer {
                qkv,
                attention_out: Dense::load(
                    hidden,
                    hidden,
                    attention.pp("output").pp("dense"),
                    precision,
                )?,
                attention_norm: layer_norm(hidden, eps, attention.pp("output").pp("LayerNorm"))?,
                up: Dense::load(
                    hidden,
                    config.intermediate_size,
                    vb.pp("intermediate").pp("dense"),
                    precision,
                )?,
                down: Dense::load(
                    config.intermediate_size,
                    hidden,
                    vb.pp("output").pp("dense"),
                    precision,
                )?,
                output_norm: layer_norm(hidden, eps, vb.pp("output").pp("LayerNorm"))?,
            });
        }
        Ok(Encoder {
            words,
            positions,
            embedding_norm,
            layers,
            heads,
        })
    }

    /// Hidden states `(batch, tokens, hidden)` of token ids `(batch, tokens)` (`u32`), with
    /// `mask` (same shape, 1 for a token, 0 for padding) keeping padding out of attention.
    pub fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (batch, tokens) = ids.dims2()?;
        let hidden = self.words.dim(1)?;
        if tokens > self.positions.dim(0)? {
            candle_core::bail!("{tokens} tokens is over the model's positions");
        }
        let words = self
            .words
            .index_select(&ids.flatten_all()?, 0)?
            .reshape((batch, tokens, hidden))?;
        let mut x = self
            .embedding_norm
            .forward(&words.broadcast_add(&self.positions.narrow(0, 0, tokens)?)?)?;
        let mask = mask.to_dtype(DType::F32)?.contiguous()?;
        let head = hidden / self.heads;
        for layer in &self.layers {
            let qkv = layer
                .qkv
                .forward(&x)?
                .reshape((batch, tokens, 3, self.heads, head))?
                .permute((2, 0, 3, 1, 4))?;
            let q = qkv.get(0)?.contiguous()?;
            let k = qkv.get(1)?.contiguous()?;
            let v = qkv.get(2)?.contiguous()?;
            let weights = q.matmul(&k.t()?)?.apply_op2_no_bwd(&mask, &MaskedSoftmax)?;
            let context = weights
                .matmul(&v)?
                .transpose(1, 2)?
                .contiguous()?
                .reshape((batch, tokens, hidden))?;
            let x1 = layer
                .attention_norm
                .forward(&(layer.attention_out.forward(&context)? + &x)?)?;
            let up = layer.up.forward(&x1)?.apply_op1_no_bwd(&Gelu)?;
            x = layer
                .output_norm
                .forward(&(layer.down.forward(&up)? + &x1)?)?;
        }
        Ok(x)
    }
}

/// Mean of the hidden states over the real tokens, then unit length: `(batch, hidden)`.
pub fn mean_pool_normalized(hidden: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
    let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
    let mean = summed.broadcast_div(&mask.sum(1)?)?;
    let norms = mean.sqr()?.sum_keepdim(D::Minus1)?.sqrt()?;
    mean.broadcast_div(&norms)
}

/// GELU, `x * Φ(x)`, on a contiguous `f32` tensor in one pass (in parallel blocks).
struct Gelu;

impl CustomOp1 for Gelu {
    fn name(&self) -> &'static str {
        "gelu-erf-vectorised"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let (CpuStorage::F32(values), Some((start, end))) = (storage, layout.contiguous_offsets())
        else {
            candle_core::bail!("gelu takes a contiguous f32 tensor");
        };
        let src = &values[start..end];
        let mut out = vec![0.0f32; src.len()];
        out.par_chunks_mut(PAR_BLOCK)
            .zip(src.par_chunks(PAR_BLOCK))
            .for_each(|(out, src)| {
                activations::gelu(src, out);
            });
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

/// Softmax over the last dimension of attention scores `(batch, heads, queries, keys)`, with
/// the keys whose mask `(batch, keys)` is 0 (padding) given no weight.
struct MaskedSoftmax;

impl CustomOp2 for MaskedSoftmax {
    fn name(&self) -> &'static str {
        "masked-softmax"
    }

    fn cpu_fwd(
        &self,
        scores: &CpuStorage,
        scores_layout: &Layout,
        mask: &CpuStorage,
        mask_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (CpuStorage::F32(scores), Some((s0, s1)), CpuStorage::F32(mask), Some((m0, m1))) = (
            scores,
            scores_layout.contiguous_offsets(),
            mask,
            mask_layout.contiguous_offsets(),
        ) else {
            candle_core::bail!("masked softmax takes contiguous f32 tensors");
        };
        let (batch, heads, queries, keys) = scores_layout.shape().dims4()?;
        let mask = &mask[m0..m1];
        if mask.len() != batch * keys {
            candle_core::bail!("mask of {} for {batch} x {keys} keys", mask.len());
        }
        let rows_per_item = heads * queries;
        let mut out = vec![0.0f32; s1 - s0];
        out.par_chunks_mut(keys)
            .zip(scores[s0..s1].par_chunks(keys))
            .enumerate()
            .for_each(|(row, (out, scores))| {
                let item = row / rows_per_item;
                let mask = &mask[item * keys..(item + 1) * keys];
                activations::masked_softmax(scores, mask, out);
            });
        Ok((CpuStorage::F32(out), scores_layout.shape().clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn gelu_matches_candles_exact_gelu() {
        let values: Vec<f32> = (-1_000..=1_000).map(|i| i as f32 * 0.01).collect();
        let input = Tensor::new(values.as_slice(), &Device::Cpu).unwrap();
        let ours = input
            .apply_op1_no_bwd(&Gelu)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        let exact = input.gelu_erf().unwrap().to_vec1::<f32>().unwrap();
        for ((x, a), b) in values.iter().zip(&ours).zip(&exact) {
            assert!(
                (a - b).abs() <= 1e-6 * (1.0 + x.abs()),
                "gelu({x}) = {a}, expected {b}"
            );
        }
    }

    #[test]
    fn masked_softmax_matches_candles_softmax_and_ignores_padding() {
        let device = Device::Cpu;
        // (batch 2, heads 2, queries 3, keys 4); the second item has one padded key.
        let scores: Vec<f32> = (0..48)
            .map(|i| ((i * 37) % 11) as f32 * 0.7 - 3.0)
            .collect();
        let scores = Tensor::from_vec(scores, (2, 2, 3, 4), &device).unwrap();
        let mask = Tensor::new(&[[1f32, 1., 1., 1.], [1., 1., 1., 0.]], &device).unwrap();
        let ours = scores.apply_op2_no_bwd(&mask, &MaskedSoftmax).unwrap();
        let bias = ((mask.clone() - 1.0).unwrap() * 1e30)
            .unwrap()
            .reshape((2, 1, 1, 4))
            .unwrap();
        let expected =
            candle_nn::ops::softmax_last_dim(&scores.broadcast_add(&bias).unwrap()).unwrap();
        let (ours, expected) = (
            ours.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
            expected.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
        );
        for (a, b) in ours.iter().zip(&expected) {
            assert!((a - b).abs() < 1e-6, "{a} against {b}");
        }
        // The padded key of the second item has no weight; each row sums to 1.
        for row in ours.chunks(4).skip(6) {
            assert_eq!(row[3], 0.0);
        }
        for row in ours.chunks(4) {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        }
    }

    #[test]
    fn gelu_refuses_a_strided_tensor() {
        let input = Tensor::zeros((4, 3), DType::F32, &Device::Cpu).unwrap();
        assert!(input.t().unwrap().apply_op1_no_bwd(&Gelu).is_err());
    }
}
