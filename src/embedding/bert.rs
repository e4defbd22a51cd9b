//! The encoder of all-MiniLM-L6-v2: a 6-layer BERT, written here on candle's tensors for
//! inference only.
//!
//! Why not `candle-transformers`' BERT: its GELU calls a scalar `erf` per element, which `perf`
//! put at 12 % of a chunk's encoding on 2 cores; here GELU is one vectorised pass
//! (`memvault_kernels::activations`, compiled for the widest vectors the CPU has), in place
//! on the product's own output ([`Dense::forward_gelu`]).
//! It also runs three matrix products for query, key and value and scales the scores
//! afterwards; here the three are one product with the scale folded into the query weights at
//! load time; attention (scores, the masked softmax, the weighted values) is one pass over
//! that product ([`Attention`], `memvault_kernels::attention`) instead of two small matrix
//! products per text and head, which made a batch slower per text than a single text; the
//! residual sums and layer norms are one pass each ([`AddNorm`], `memvault_kernels::norm`)
//! instead of candle's sum and norm; and the weights are kept transposed ([`Dense`]), which
//! spares the matrix product a repacking on every call. The arithmetic is otherwise the same,
//! and a test holds the vectors to the reference model's.

use candle_core::{CpuStorage, CustomOp1, CustomOp2, Layout, Result, Shape, Tensor};
use candle_nn::VarBuilder;
use rayon::prelude::*;

use crate::config::EmbeddingPrecision;
use memvault_kernels::bf16::{self, PackedDense};
use memvault_kernels::cpu::Isa;
use memvault_kernels::dense::{self, PackedF32};
use memvault_kernels::norm::{self, LayerNorm};
use memvault_kernels::{activations, attention};
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
    attention_norm: AddNorm,
    up: Dense,
    down: Dense,
    output_norm: AddNorm,
}

/// Which kernel the fully connected layers multiply with, chosen once for the process
/// ([`products_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Products {
    /// candle's `f32` matrix product (CPUs with neither AVX-512 nor AVX2 and FMA).
    Candle,
    /// `f32` multiply-adds in AVX-512 registers, or AVX2's where the CPU has no AVX-512
    /// (`memvault_kernels::dense`).
    F32,
    /// bfloat16 pairs summed in `f32`, with `vdpbf16ps` or on AMX tiles where the CPU has them
    /// (`memvault_kernels::bf16`).
    Bf16,
}

impl Products {
    /// How the products multiply here, for logs and benchmark reports.
    pub fn describe(self) -> &'static str {
        match self {
            Products::Candle => "f32 products (candle)",
            Products::F32 if Isa::Avx512.available() => "f32 products (AVX-512)",
            Products::F32 => "f32 products (AVX2)",
            Products::Bf16 if bf16::amx_supported() => "bfloat16 products (AMX tiles)",
            Products::Bf16 => "bfloat16 products (AVX512_BF16)",
        }
    }
}

/// The kernel for `precision` on this CPU. `auto` takes AMX tiles where the CPU has them; where
/// it has AVX512_BF16 without AMX, it measures one layer's product both ways, once a process,
/// and takes bfloat16 only when it is at least a tenth faster (`vdpbf16ps`, 32 products an
/// instruction, issued a quarter as often as an `f32` multiply-add of 16 on one Xeon:
/// `memvault_kernels::dense`). Elsewhere `f32` in the kernels crate where the CPU has AVX2 and
/// FMA: on an AMD EPYC of family 23 (Zen, AVX2 in 128-bit halves) the model ran 66-72 texts/s
/// one at a time against 49-52 in candle's product, and 74-78 in calls of 256 against 69-74
/// (docs/BENCHMARKS.md); candle's product only where the CPU has neither.
pub fn products_for(precision: EmbeddingPrecision) -> Products {
    static MEASURED: std::sync::OnceLock<Products> = std::sync::OnceLock::new();
    let f32 = if dense::supported() {
        Products::F32
    } else {
        Products::Candle
    };
    match precision {
        EmbeddingPrecision::F32 => f32,
        EmbeddingPrecision::Bf16 if bf16::supported() => Products::Bf16,
        EmbeddingPrecision::Auto if bf16::amx_supported() => Products::Bf16,
        EmbeddingPrecision::Auto if bf16::supported() && dense::supported() => {
            *MEASURED.get_or_init(measure_products)
        }
        EmbeddingPrecision::Bf16 | EmbeddingPrecision::Auto => f32,
    }
}

/// Times the product of an intermediate layer's shape (384 x 1536, 256 rows: a few texts) in
/// bfloat16 and in `f32`, alternately, and keeps each one's fastest round.
fn measure_products() -> Products {
    const INPUTS: usize = 384;
    const OUTPUTS: usize = 1536;
    const ROWS: usize = 256;
    const ROUNDS: usize = 7;
    let values = |len: usize, seed: usize| -> Vec<f32> {
        (0..len)
            .map(|i| ((i * 7919 + seed) % 1999) as f32 / 1999.0 - 0.5)
            .collect()
    };
    let (weight, bias) = (values(INPUTS * OUTPUTS, 1), values(OUTPUTS, 2));
    let x = values(ROWS * INPUTS, 3);
    let (Some(half), Some(full)) = (
        PackedDense::pack_with(Isa::Avx512Bf16, &weight, INPUTS, OUTPUTS, &bias),
        PackedF32::pack(&weight, INPUTS, OUTPUTS, &bias),
    ) else {
        return Products::F32;
    };
    let time = |product: &dyn Packed| {
        let started = std::time::Instant::now();
        std::hint::black_box(product.forward(&x));
        started.elapsed()
    };
    let (mut bf16_best, mut f32_best) = (std::time::Duration::MAX, std::time::Duration::MAX);
    for _ in 0..ROUNDS {
        bf16_best = bf16_best.min(time(&half));
        f32_best = f32_best.min(time(&full));
    }
    let chosen = if bf16_best.as_secs_f64() < 0.9 * f32_best.as_secs_f64() {
        Products::Bf16
    } else {
        Products::F32
    };
    tracing::info!(
        bf16_ms = bf16_best.as_secs_f64() * 1e3,
        f32_ms = f32_best.as_secs_f64() * 1e3,
        chosen = chosen.describe(),
        "the encoder's products timed on this cpu"
    );
    chosen
}

/// A fully connected layer. With candle's product, its weights are stored transposed,
/// `(in, out)` and contiguous, so that the product reads them in the order it packs them.
/// (`candle_nn::Linear` keeps the file's `(out, in)` and multiplies by a transposed view: for
/// a short text, repacking that view on every call cost as much as the product itself.) With
/// the kernels of [`Products::F32`] and [`Products::Bf16`], the weights are packed for them
/// instead, and candle's copy is not kept.
enum Dense {
    Candle { weight: Tensor, bias: Tensor },
    F32(PackedF32),
    Bf16(PackedDense),
}

impl Dense {
    /// From the file's `(out, in)` weight.
    fn new(weight: &Tensor, bias: Tensor, products: Products) -> Result<Self> {
        let weight = weight.t()?.contiguous()?;
        if products != Products::Candle {
            let (inputs, outputs) = weight.dims2()?;
            let (w, b) = (
                weight.flatten_all()?.to_vec1::<f32>()?,
                bias.to_vec1::<f32>()?,
            );
            let packed = match products {
                Products::Bf16 => PackedDense::pack(&w, inputs, outputs, &b).map(Dense::Bf16),
                _ => PackedF32::pack(&w, inputs, outputs, &b).map(Dense::F32),
            };
            if let Some(packed) = packed {
                return Ok(packed);
            }
        }
        Ok(Dense::Candle { weight, bias })
    }

    fn load(inputs: usize, outputs: usize, vb: VarBuilder, products: Products) -> Result<Self> {
        Dense::new(
            &vb.get((outputs, inputs), "weight")?,
            vb.get(outputs, "bias")?,
            products,
        )
    }

    /// `(..., in)` -> `(..., out)`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Dense::Candle { weight, bias } => {
                let mut dims = x.dims().to_vec();
                let inputs = dims.pop().unwrap_or(0);
                let rows = dims.iter().product::<usize>();
                dims.push(weight.dim(1)?);
                x.reshape((rows, inputs))?
                    .matmul(weight)?
                    .broadcast_add(bias)?
                    .reshape(dims)
            }
            Dense::F32(packed) => x.contiguous()?.apply_op1_no_bwd(&PackedOp::new(packed)),
            Dense::Bf16(packed) => x.contiguous()?.apply_op1_no_bwd(&PackedOp::new(packed)),
        }
    }

    /// GELU of [`Dense::forward`]. The packed kernels' output is the op's own buffer, so GELU
    /// runs in place there: no second buffer to allocate and fill.
    fn forward_gelu(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Dense::Candle { .. } => self.forward(x)?.apply_op1_no_bwd(&Gelu),
            Dense::F32(packed) => x.contiguous()?.apply_op1_no_bwd(&PackedOp::gelu(packed)),
            Dense::Bf16(packed) => x.contiguous()?.apply_op1_no_bwd(&PackedOp::gelu(packed)),
        }
    }
}

/// A packed product of the kernels crate.
trait Packed: Send + Sync {
    fn inputs(&self) -> usize;
    fn outputs(&self) -> usize;
    fn forward(&self, x: &[f32]) -> Option<Vec<f32>>;
}

impl Packed for PackedDense {
    fn inputs(&self) -> usize {
        PackedDense::inputs(self)
    }
    fn outputs(&self) -> usize {
        PackedDense::outputs(self)
    }
    fn forward(&self, x: &[f32]) -> Option<Vec<f32>> {
        PackedDense::forward(self, x)
    }
}

impl Packed for PackedF32 {
    fn inputs(&self) -> usize {
        PackedF32::inputs(self)
    }
    fn outputs(&self) -> usize {
        PackedF32::outputs(self)
    }
    fn forward(&self, x: &[f32]) -> Option<Vec<f32>> {
        PackedF32::forward(self, x)
    }
}

/// A packed product as a tensor operation, optionally followed by GELU.
struct PackedOp<'a> {
    product: &'a dyn Packed,
    gelu: bool,
}

impl<'a> PackedOp<'a> {
    fn new(product: &'a dyn Packed) -> Self {
        PackedOp {
            product,
            gelu: false,
        }
    }

    fn gelu(product: &'a dyn Packed) -> Self {
        PackedOp {
            product,
            gelu: true,
        }
    }
}

impl CustomOp1 for PackedOp<'_> {
    fn name(&self) -> &'static str {
        if self.gelu {
            "dense-packed-gelu"
        } else {
            "dense-packed"
        }
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let (CpuStorage::F32(values), Some((start, end))) = (storage, layout.contiguous_offsets())
        else {
            candle_core::bail!("a packed dense layer takes a contiguous f32 tensor");
        };
        let mut dims = layout.shape().dims().to_vec();
        if dims.pop() != Some(self.product.inputs()) {
            candle_core::bail!(
                "a packed dense layer of {} inputs got {:?}",
                self.product.inputs(),
                layout.shape()
            );
        }
        dims.push(self.product.outputs());
        let Some(mut out) = self.product.forward(&values[start..end]) else {
            candle_core::bail!("a packed dense layer got a partial row");
        };
        if self.gelu {
            gelu_in_place(&mut out);
        }
        Ok((CpuStorage::F32(out), Shape::from(dims)))
    }
}

pub struct Encoder {
    words: Tensor,
    /// Position embeddings plus the (only used) token type 0 embedding.
    positions: Tensor,
    embedding_norm: AddNorm,
    layers: Vec<Layer>,
    heads: usize,
}

impl Encoder {
    /// Loads the weights (names as in the model's safetensors file, no `bert.` prefix).
    pub fn load(vb: VarBuilder, config: &Config, products: Products) -> Result<Self> {
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
        let embedding_norm = AddNorm::load(hidden, eps, embeddings.pp("LayerNorm"))?;
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
                products,
            )?;
            layers.push(Layer {
                qkv,
                attention_out: Dense::load(
                    hidden,
                    hidden,
                    attention.pp("output").pp("dense"),
                    products,
                )?,
                attention_norm: AddNorm::load(hidden, eps, attention.pp("output").pp("LayerNorm"))?,
                up: Dense::load(
                    hidden,
                    config.intermediate_size,
                    vb.pp("intermediate").pp("dense"),
                    products,
                )?,
                down: Dense::load(
                    config.intermediate_size,
                    hidden,
                    vb.pp("output").pp("dense"),
                    products,
                )?,
                output_norm: AddNorm::load(hidden, eps, vb.pp("output").pp("LayerNorm"))?,
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

    /// Hidden states `(tokens, hidden)` of texts packed one after the other without padding:
    /// `ids` holds every text's token ids in turn (`u32`, `(tokens,)`), `lengths` how many
    /// belong to each text. Every part but attention works token by token; attention keeps
    /// each text to its own tokens ([`Attention`]).
    pub fn forward(&self, ids: &[u32], lengths: &[usize]) -> Result<Tensor> {
        let longest = lengths.iter().copied().max().unwrap_or(0);
        if longest > self.positions.dim(0)? {
            candle_core::bail!("{longest} tokens is over the model's positions");
        }
        if lengths.iter().sum::<usize>() != ids.len() {
            candle_core::bail!("{} token ids for texts of {lengths:?} tokens", ids.len());
        }
        let device = self.words.device();
        let positions: Vec<u32> = lengths
            .iter()
            .flat_map(|&length| 0..length as u32)
            .collect();
        let words = self.words.index_select(&Tensor::new(ids, device)?, 0)?;
        let positions = self
            .positions
            .index_select(&Tensor::new(positions.as_slice(), device)?, 0)?;
        let mut x = self.embedding_norm.forward(&words, &positions)?;
        let hidden = self.words.dim(1)?;
        let attention = Attention {
            heads: self.heads,
            head: hidden / self.heads,
            lengths: lengths.to_vec(),
        };
        for layer in &self.layers {
            let context = layer.qkv.forward(&x)?.apply_op1_no_bwd(&attention)?;
            let x1 = layer
                .attention_norm
                .forward(&layer.attention_out.forward(&context)?, &x)?;
            let up = layer.up.forward_gelu(&x1)?;
            x = layer.output_norm.forward(&layer.down.forward(&up)?, &x1)?;
        }
        Ok(x)
    }
}

/// The mean of each text's hidden states, scaled to unit length: one vector per text, from
/// [`Encoder::forward`]'s `(tokens, hidden)` and the texts' lengths.
pub fn mean_pool_normalized(hidden: &Tensor, lengths: &[usize]) -> Result<Vec<Vec<f32>>> {
    let width = hidden.dim(1)?;
    let values = hidden.flatten_all()?.to_vec1::<f32>()?;
    let mut vectors = Vec::with_capacity(lengths.len());
    let mut rows = values.chunks_exact(width);
    for &length in lengths {
        let mut mean = vec![0.0f32; width];
        for row in rows.by_ref().take(length) {
            mean.iter_mut().zip(row).for_each(|(m, v)| *m += v);
        }
        mean.iter_mut().for_each(|m| *m /= length.max(1) as f32);
        super::normalize(&mut mean);
        vectors.push(mean);
    }
    Ok(vectors)
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
        let mut out = values[start..end].to_vec();
        gelu_in_place(&mut out);
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

/// [`activations::gelu`] in parallel blocks.
fn gelu_in_place(values: &mut [f32]) {
    values.par_chunks_mut(PAR_BLOCK).for_each(activations::gelu);
}

/// Layer normalisation of the sum of a layer's output and its input (the residual), in one
/// pass ([`norm::add_layer_norm`]): `LN(x + residual)` for `(tokens, hidden)` tensors.
struct AddNorm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
    eps: f32,
}

impl AddNorm {
    fn load(size: usize, eps: f64, vb: VarBuilder) -> Result<Self> {
        Ok(AddNorm {
            gamma: vb.get(size, "weight")?.to_vec1::<f32>()?,
            beta: vb.get(size, "bias")?.to_vec1::<f32>()?,
            eps: eps as f32,
        })
    }

    fn forward(&self, x: &Tensor, residual: &Tensor) -> Result<Tensor> {
        x.apply_op2_no_bwd(residual, self)
    }
}

impl CustomOp2 for AddNorm {
    fn name(&self) -> &'static str {
        "add-layer-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (
            CpuStorage::F32(x),
            CpuStorage::F32(residual),
            Some((x_start, x_end)),
            Some((r_start, r_end)),
        ) = (s1, s2, l1.contiguous_offsets(), l2.contiguous_offsets())
        else {
            candle_core::bail!("a layer norm takes contiguous f32 tensors");
        };
        if l1.shape() != l2.shape() || l1.shape().dims().last() != Some(&self.gamma.len()) {
            candle_core::bail!(
                "a layer norm of {} columns got {:?} and {:?}",
                self.gamma.len(),
                l1.shape(),
                l2.shape()
            );
        }
        let out = norm::add_layer_norm(
            &x[x_start..x_end],
            &residual[r_start..r_end],
            LayerNorm {
                gamma: &self.gamma,
                beta: &self.beta,
                eps: self.eps,
            },
        );
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }
}

/// Multi-head self-attention ([`attention::self_attention`]) of the fused query-key-value
/// product `(tokens, 3 x hidden)` of texts of `lengths` tokens packed one after the other:
/// `(tokens, hidden)`.
struct Attention {
    heads: usize,
    head: usize,
    lengths: Vec<usize>,
}

impl CustomOp1 for Attention {
    fn name(&self) -> &'static str {
        "self-attention"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let (CpuStorage::F32(qkv), Some((start, end))) = (storage, layout.contiguous_offsets())
        else {
            candle_core::bail!("attention takes a contiguous f32 tensor");
        };
        let (tokens, width) = layout.shape().dims2()?;
        let hidden = self.heads * self.head;
        if width != 3 * hidden {
            candle_core::bail!("attention of {} heads got {width} columns", self.heads);
        }
        let Some(out) =
            attention::self_attention(&qkv[start..end], &self.lengths, self.heads, self.head)
        else {
            candle_core::bail!(
                "attention over {tokens} tokens got texts of {:?} tokens",
                self.lengths
            );
        };
        Ok((CpuStorage::F32(out), Shape::from((tokens, hidden))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};

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

    /// The attention op against the same attention written in candle's tensor operations on
    /// padded texts (split by head, scores, softmax with padding pushed to -1e30, weighted
    /// values).
    #[test]
    fn attention_matches_candles_tensor_operations_on_padded_texts() {
        let device = Device::Cpu;
        let (heads, head, tokens) = (3, 4, 5);
        let hidden = heads * head;
        let lengths = [5, 3];
        let values: Vec<f32> = (0..2 * tokens * 3 * hidden)
            .map(|i| ((i * 37) % 11) as f32 * 0.3 - 1.5)
            .collect();
        let padded = Tensor::from_vec(values, (2, tokens, 3 * hidden), &device).unwrap();
        // The packed rows: all of the first text, the first three of the second.
        let packed = Tensor::cat(
            &[
                padded.get(0).unwrap(),
                padded.get(1).unwrap().narrow(0, 0, 3).unwrap(),
            ],
            0,
        )
        .unwrap();
        let op = Attention {
            heads,
            head,
            lengths: lengths.to_vec(),
        };
        let ours = packed.apply_op1_no_bwd(&op).unwrap();
        let mask = Tensor::new(&[[1f32, 1., 1., 1., 1.], [1., 1., 1., 0., 0.]], &device).unwrap();
        let parts = padded
            .reshape((2, tokens, 3, heads, head))
            .unwrap()
            .permute((2, 0, 3, 1, 4))
            .unwrap();
        let part = |i: usize| parts.get(i).unwrap().contiguous().unwrap();
        let (q, k, v) = (part(0), part(1), part(2));
        let bias = ((mask - 1.0).unwrap() * 1e30)
            .unwrap()
            .reshape((2, 1, 1, tokens))
            .unwrap();
        let scores = q
            .matmul(&k.t().unwrap())
            .unwrap()
            .broadcast_add(&bias)
            .unwrap();
        let weights = candle_nn::ops::softmax_last_dim(&scores).unwrap();
        let expected = weights
            .matmul(&v)
            .unwrap()
            .transpose(1, 2)
            .unwrap()
            .contiguous()
            .unwrap()
            .reshape((2, tokens, hidden))
            .unwrap();
        let expected = Tensor::cat(
            &[
                expected.get(0).unwrap(),
                expected.get(1).unwrap().narrow(0, 0, 3).unwrap(),
            ],
            0,
        )
        .unwrap();
        let (ours, expected) = (
            ours.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
            expected.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
        );
        assert_eq!(ours.len(), expected.len());
        for (a, b) in ours.iter().zip(&expected) {
            assert!((a - b).abs() < 1e-5, "{a} against {b}");
        }
    }

    #[test]
    fn attention_refuses_lengths_of_other_rows() {
        let device = Device::Cpu;
        let qkv = Tensor::zeros((8, 36), DType::F32, &device).unwrap();
        let op = |lengths: &[usize]| Attention {
            heads: 3,
            head: 4,
            lengths: lengths.to_vec(),
        };
        assert!(qkv.apply_op1_no_bwd(&op(&[5, 3])).is_ok());
        assert!(qkv.apply_op1_no_bwd(&op(&[5, 2])).is_err());
        let narrow = Tensor::zeros((8, 30), DType::F32, &device).unwrap();
        assert!(narrow.apply_op1_no_bwd(&op(&[5, 3])).is_err());
    }

    #[test]
    fn gelu_refuses_a_strided_tensor() {
        let input = Tensor::zeros((4, 3), DType::F32, &Device::Cpu).unwrap();
        assert!(input.t().unwrap().apply_op1_no_bwd(&Gelu).is_err());
    }
}
