//! all-MiniLM-L6-v2 in-process: BERT through candle, mean pooling over the attention mask, L2
//! normalisation. The packaged tokenizer pads every input to 128 tokens; here there is no
//! padding at all: a batch's texts are packed one after the other (`bert::Encoder::forward`),
//! each truncated at 256 tokens (the model's `max_seq_length`). Batches are cut by a token
//! budget, so short texts share large batches.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use rayon::prelude::*;
use tokenizers::{Tokenizer, TruncationParams};

use super::bert::{mean_pool_normalized, products_for, Config, Encoder, Products};
use super::{EmbedError, Embedder};
use crate::config::EmbeddingPrecision;

pub const MODEL_NAME: &str = "all-MiniLM-L6-v2";
const MAX_TOKENS: usize = 256;

struct Model {
    bert: Encoder,
    products: Products,
    tokenizer: Tokenizer,
    dimensions: usize,
}

#[derive(Clone)]
pub struct LocalEmbedder {
    model: Arc<Model>,
    lanes: Arc<Lanes>,
}

/// Where a call's passes run: alone in the encoder, on every core (rayon's global pool: one
/// pass with each product split across the cores, or several side by side, a pass a core);
/// beside a call already running, on one thread of its own (a one-thread pool).
///
/// The save batcher keeps two passes of a few texts in the encoder at once
/// ([`super::PASSES`]). Split across every core, each product of each pass was handed between
/// threads: at 20,000 memories with 16 clients saving (AMD EPYC, 2 cores), the kernel's
/// scheduling (waking, yielding, switching) took 7.5 % of the CPU samples and a pass of 8 texts
/// 49-63 ms at p50. Each on a core of its own, the two passes run side by side without handing
/// work over: 43-46 ms a pass, scheduling 3.5-5.3 %, and 288 and 274 saves a second against
/// 205 and 261 in two pairs of runs alternated with the split (docs/BENCHMARKS.md). A call
/// alone (a query, a lone save, the import's batches) still has every core.
///
/// A call alone runs on a worker of the global pool, not on the blocking thread that asked for
/// it: called from outside the pool, each parallel step (tens in a pass) was handed into the
/// pool and waited for on a latch, and a short query took 8.3-8.8 ms instead of 6.5-7.3 (`f32`
/// products, AMD EPYC without AVX-512; docs/BENCHMARKS.md).
struct Lanes {
    /// Passes in the encoder.
    running: AtomicUsize,
    /// One-thread pools not in use.
    idle: Mutex<Vec<rayon::ThreadPool>>,
}

/// Most one-thread pools kept for the next pass.
const IDLE_LANES: usize = 4;

/// Counts a pass in the encoder while it lives.
struct Running<'a>(&'a AtomicUsize);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Lanes {
    fn new() -> Self {
        Lanes {
            running: AtomicUsize::new(0),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Runs a pass (blocking): on every core when no other pass runs, else on a thread of its
    /// own. Should no thread start, the pass shares every core after all.
    fn run<T: Send>(&self, pass: impl FnOnce() -> T + Send) -> T {
        let beside = self.running.fetch_add(1, Ordering::SeqCst) > 0;
        let _running = Running(&self.running);
        if !beside {
            // On a worker of the global pool: the pass's parallel steps fork and join there.
            return rayon::scope(|_| pass());
        }
        let Some(lane) = self.take() else {
            return rayon::scope(|_| pass());
        };
        let out = lane.install(pass);
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < IDLE_LANES {
            idle.push(lane);
        }
        out
    }

    fn take(&self) -> Option<rayon::ThreadPool> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match idle {
            Some(lane) => Some(lane),
            None => rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .thread_name(|_| "memvault-encoder".to_string())
                .build()
                .map_err(|error| tracing::warn!(%error, "cannot start an encoder thread"))
                .ok(),
        }
    }
}

fn load_error(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Load(e.to_string())
}

fn inference_error(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Inference(e.to_string())
}

impl LocalEmbedder {
    /// Loads the model from a directory holding `config.json`, `tokenizer.json` and
    /// `model.safetensors`, to multiply in `precision`.
    pub fn load(dir: &Path, precision: EmbeddingPrecision) -> Result<Self, EmbedError> {
        Self::load_with(dir, products_for(precision))
    }

    /// [`LocalEmbedder::load`] with the products' kernel given (tests compare them).
    pub fn load_with(dir: &Path, products: Products) -> Result<Self, EmbedError> {
        tune_for_inference();
        let file = |name: &str| -> PathBuf { dir.join(name) };
        for name in ["config.json", "tokenizer.json", "model.safetensors"] {
            if !file(name).is_file() {
                return Err(EmbedError::ModelMissing {
                    dir: dir.display().to_string(),
                });
            }
        }
        let config: Config =
            serde_json::from_slice(&std::fs::read(file("config.json")).map_err(load_error)?)
                .map_err(load_error)?;
        let mut tokenizer = Tokenizer::from_file(file("tokenizer.json")).map_err(load_error)?;
        // Texts are packed without padding (the packaged tokenizer pads to a fixed 128).
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..Default::default()
            }))
            .map_err(load_error)?;
        let device = Device::Cpu;
        let weights = std::fs::read(file("model.safetensors")).map_err(load_error)?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(load_error)?;
        let bert = Encoder::load(vb, &config, products).map_err(load_error)?;
        // The weights file (about 90 MB, read whole) is dropped now that the tensors hold the
        // weights. mimalloc purges freed memory lazily, on later allocator activity, so an idle
        // server kept it (241 MB against 167 MB at start-up; docs/BENCHMARKS.md): give it back.
        // SAFETY: `mi_collect` has no preconditions.
        unsafe { libmimalloc_sys::mi_collect(true) };
        let dimensions = config.hidden_size;
        Ok(LocalEmbedder {
            model: Arc::new(Model {
                bert,
                products,
                tokenizer,
                dimensions,
            }),
            lanes: Arc::new(Lanes::new()),
        })
    }

    /// The kernel its fully connected layers multiply with.
    pub fn products(&self) -> Products {
        self.model.products
    }
}

/// The environment the model's passes read, set once by `main` before any thread starts
/// (setting a variable while other threads may read the environment is a data race; Rust 2024
/// makes it `unsafe` for that reason). Programs that start threads before they can call this
/// (the test harness) run with candle's own defaults, which only costs speed.
///
/// - candle sizes its matrix products by `RAYON_NUM_THREADS` and, when that is unset, counts
///   the physical cores by reading `/proc/cpuinfo` on every tensor operation: a quarter of a
///   short query's encoding time. The count is taken once (the same physical cores candle
///   would count) and written to the variable; a value set by the operator is kept. The
///   variable also sizes rayon's global pool, where it has not started yet.
/// - candle runs large element-wise passes on a pool of its own besides rayon's, whose idle
///   thread spins for a while before it sleeps. On 2 cores that spinning took the core the next
///   matrix product's rayon thread needed: a 44-token text took 14-19 ms instead of 10.5-15
///   (docs/BENCHMARKS.md). The thread is made to sleep at once, unless the operator set
///   `CANDLE_BARRIER_POOL_SPIN_LIMIT`.
/// - mimalloc hands freed memory back to the kernel after 10 ms, and each pass frees and
///   allocates tens of megabytes, so the kernel zeroed fresh pages for every layer. The delay
///   is raised to a second. Only when the option reads its documented default: the option has
///   no named constant in the bindings, and it is the one before `use_numa_nodes` in mimalloc
///   v3's list.
pub fn set_inference_environment() {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        let cores = num_cpus::get_physical().max(1);
        std::env::set_var("RAYON_NUM_THREADS", cores.to_string());
    }
    if std::env::var_os("CANDLE_BARRIER_POOL_SPIN_LIMIT").is_none() {
        std::env::set_var("CANDLE_BARRIER_POOL_SPIN_LIMIT", "1");
    }
}

/// The allocator's settings for the model's passes (no environment: safe at any time).
fn tune_for_inference() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        const PURGE_DELAY: libmimalloc_sys::mi_option_t =
            libmimalloc_sys::mi_option_use_numa_nodes - 1;
        // SAFETY: reading and setting a mimalloc option has no preconditions.
        unsafe {
            if libmimalloc_sys::mi_option_get(PURGE_DELAY) == 10 {
                libmimalloc_sys::mi_option_set(PURGE_DELAY, 1_000);
            }
        }
    });
}

/// Most tokens encoded in one pass (the rows of its matrix products). Smaller passes keep a
/// layer's activations (512 rows of 1,536 floats: 3 MB) near the cores: on AMX tiles, where
/// the products are cheapest, 2,048 texts in calls of 256 ran 276 texts/s with passes of 1,024
/// tokens split across both cores against 223 with 4,096; with `f32` products the budget made
/// no difference (docs/BENCHMARKS.md). The passes of a call now run side by side, one per
/// core, so each core holds the rows a pass of 1,024 gave it before.
const TOKEN_BUDGET: usize = 512;
/// Most texts encoded in one pass.
const MAX_BATCH: usize = 128;

/// Splits texts, given by their token counts, into consecutive batches of at most
/// [`MAX_BATCH`] texts and [`TOKEN_BUDGET`] tokens; a text longer than the budget goes alone.
/// Texts are packed without padding, so their order does not matter: many short texts share a
/// batch, and the tensors of a pass stay within the budget's size.
fn token_batches(lengths: &[usize]) -> Vec<std::ops::Range<usize>> {
    let mut batches = Vec::new();
    let mut start = 0;
    while start < lengths.len() {
        let mut end = start + 1;
        let mut tokens = lengths[start];
        while end < lengths.len()
            && end - start < MAX_BATCH
            && tokens + lengths[end] <= TOKEN_BUDGET
        {
            tokens += lengths[end];
            end += 1;
        }
        batches.push(start..end);
        start = end;
    }
    batches
}

impl Model {
    /// Encodes texts already tokenized, packed one after the other.
    fn embed_batch(&self, encodings: &[tokenizers::Encoding]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let lengths: Vec<usize> = encodings.iter().map(|e| e.len()).collect();
        let ids: Vec<u32> = encodings
            .iter()
            .flat_map(|e| e.get_ids().iter().copied())
            .collect();
        let hidden = self.bert.forward(&ids, &lengths).map_err(inference_error)?;
        mean_pool_normalized(&hidden, &lengths).map_err(inference_error)
    }

    fn embed_all(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts, true)
            .map_err(inference_error)?;
        let lengths: Vec<usize> = encodings.iter().map(|e| e.len()).collect();
        // A call of several passes runs them side by side, a pass a core (rayon's nested
        // parallelism: a pass's products are split only when a core has nothing else to do),
        // instead of one after the other with each product split across the cores. 1,024
        // memory texts in calls of 256 (AMD EPYC with AVX512_BF16, 2 cores, rounds in turns):
        // 305-317 texts/s against 269-307 (docs/BENCHMARKS.md). On a one-thread lane (beside
        // another call) the passes run one after the other as before.
        let passes: Vec<Result<Vec<Vec<f32>>, EmbedError>> = token_batches(&lengths)
            .into_par_iter()
            .map(|range| self.embed_batch(&encodings[range]))
            .collect();
        let mut out = Vec::with_capacity(encodings.len());
        for pass in passes {
            out.extend(pass?);
        }
        Ok(out)
    }
}

#[async_trait]
impl Embedder for LocalEmbedder {
    fn model(&self) -> &str {
        MODEL_NAME
    }

    fn dimensions(&self) -> usize {
        self.model.dimensions
    }

    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let (model, lanes) = (self.model.clone(), self.lanes.clone());
        tokio::task::spawn_blocking(move || lanes.run(|| model.embed_all(texts)))
            .await
            .map_err(inference_error)?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedding::cosine;

    /// The installed model (`scripts/install-model.sh`); the test fails loudly without it.
    fn model_dir() -> PathBuf {
        std::env::var("MEMVAULT_EMBEDDING_MODEL_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|_| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("models/all-MiniLM-L6-v2")
            })
    }

    /// The model as the server loads it by default.
    fn model() -> LocalEmbedder {
        LocalEmbedder::load(&model_dir(), EmbeddingPrecision::Auto)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// bfloat16 products where the CPU has them.
    fn model_bf16() -> LocalEmbedder {
        LocalEmbedder::load(&model_dir(), EmbeddingPrecision::Bf16)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn model_f32() -> LocalEmbedder {
        let model = LocalEmbedder::load(&model_dir(), EmbeddingPrecision::F32)
            .unwrap_or_else(|e| panic!("{e}"));
        let expected = if memvault_kernels::dense::supported() {
            Products::F32
        } else {
            Products::Candle
        };
        assert_eq!(model.products(), expected);
        model
    }

    fn embed(model: &LocalEmbedder, texts: &[&str]) -> Vec<Vec<f32>> {
        model
            .model
            .embed_all(texts.iter().map(|t| t.to_string()).collect())
            .expect("embed")
    }

    #[test]
    fn matches_the_reference_model() {
        let model = model();
        assert_eq!(model.dimensions(), 384);
        let v = embed(
            &model,
            &["The cat sits on the mat.", "A cat is sitting on a rug."],
        );
        assert_eq!(v[0].len(), 384);
        assert!((cosine(&v[0], &v[0]) - 1.0).abs() < 1e-5, "unit length");
        // sentence-transformers' all-MiniLM-L6-v2 gives 0.7689 for this pair.
        let similarity = cosine(&v[0], &v[1]);
        assert!((similarity - 0.7689).abs() < 0.002, "cosine {similarity}");
    }

    /// Short, long (truncated at 256 tokens) and Unicode texts, shared by the encoder tests.
    fn probe_texts() -> Vec<String> {
        vec![
            "deploys are on Thursday".to_string(),
            "What city do I live in?".to_string(),
            "the committee reviewed the quarterly report and found that revenue grew. ".repeat(40),
            "Ünïcödé, numbers 42 and ids like ab-123 survive tokenization.".to_string(),
        ]
    }

    /// `(batch, tokens)` of `get` of each encoding (ids, or the attention mask), padded with 0
    /// to the longest: the reference model's input.
    fn padded(
        encodings: &[tokenizers::Encoding],
        get: fn(&tokenizers::Encoding) -> &[u32],
    ) -> candle_core::Tensor {
        let width = encodings.iter().map(|e| e.len()).max().unwrap_or(0);
        let mut flat = Vec::new();
        for encoding in encodings {
            let row = get(encoding);
            flat.extend_from_slice(row);
            flat.resize(flat.len() + (width - row.len()), 0);
        }
        candle_core::Tensor::from_vec(flat, (encodings.len(), width), &Device::Cpu).unwrap()
    }

    /// The encoder of `bert.rs`, its texts packed without padding, against candle-transformers'
    /// BERT on the same weights and tokens, padded with a mask: short, long (truncated at 256)
    /// and Unicode texts in one batch; with the AVX-512 `f32` products (where the CPU has them)
    /// and with candle's.
    #[test]
    fn the_encoder_matches_candles_reference_bert() {
        use candle_transformers::models::bert::{BertModel, Config as ReferenceConfig};
        let dir = model_dir();
        let config: ReferenceConfig =
            serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
        let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu).unwrap();
        let reference = BertModel::load(vb, &config).unwrap();
        let ours = model_f32();
        let texts = probe_texts();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let encodings = ours
            .model
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .unwrap();
        let width = encodings.iter().map(|e| e.len()).max().unwrap();
        assert_eq!(width, MAX_TOKENS, "the long text is truncated");
        let ids = padded(&encodings, tokenizers::Encoding::get_ids);
        let mask = padded(&encodings, tokenizers::Encoding::get_attention_mask);
        let hidden = reference
            .forward(&ids, &ids.zeros_like().unwrap(), Some(&mask))
            .unwrap();
        // The mean over each text's real tokens, then unit length.
        let mask = mask.to_dtype(DType::F32).unwrap().unsqueeze(2).unwrap();
        let mean = hidden
            .broadcast_mul(&mask)
            .unwrap()
            .sum(1)
            .unwrap()
            .broadcast_div(&mask.sum(1).unwrap())
            .unwrap();
        let norms = mean.sqr().unwrap().sum_keepdim(1).unwrap().sqrt().unwrap();
        let expected = mean
            .broadcast_div(&norms)
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        let candle = LocalEmbedder::load_with(&dir, Products::Candle).unwrap();
        assert_eq!(candle.products(), Products::Candle);
        for model in [&ours, &candle] {
            let got = model.model.embed_batch(&encodings).unwrap();
            for (text, (a, b)) in texts.iter().zip(got.iter().zip(&expected)) {
                let drift = a
                    .iter()
                    .zip(b)
                    .map(|(x, y)| (x - y).abs())
                    .fold(0.0_f32, f32::max);
                let products = model.products().describe();
                assert!(drift < 1e-5, "{products}: {drift} on {text:.30}");
            }
        }
    }

    /// bfloat16 products (on a CPU with AVX512_BF16; elsewhere the same `f32` path) keep every
    /// vector within a small angle of the `f32` encoder's, for short, long and padded texts.
    #[test]
    fn bf16_products_stay_close_to_f32() {
        // Where CI requires AVX512_BF16, the bfloat16 path must be the one tested.
        let required = memvault_kernels::cpu::required_from_env().unwrap();
        assert!(
            crate::embedding::bf16_supported()
                || !required.contains(&memvault_kernels::cpu::Isa::Avx512Bf16),
            "avx512bf16 is required but this CPU does not run it"
        );
        let mut texts = probe_texts();
        texts.push("I moved to Berlin last spring and I love it there.".to_string());
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (fast, exact) = (model_bf16(), model_f32());
        let a = embed(&fast, &texts);
        let b = embed(&exact, &texts);
        for (text, (a, b)) in texts.iter().zip(a.iter().zip(&b)) {
            let similarity = cosine(a, b);
            assert!(similarity > 0.999, "cosine {similarity} on {text:.30}");
        }
        // The pair of the reference test keeps its similarity.
        let v = embed(
            &fast,
            &["The cat sits on the mat.", "A cat is sitting on a rug."],
        );
        let similarity = cosine(&v[0], &v[1]);
        assert!((similarity - 0.7689).abs() < 0.005, "cosine {similarity}");
    }

    /// Guards the option number of `tune_for_inference`: with this mimalloc, the option before
    /// `use_numa_nodes` read 10 (purge delay's default) and now holds the second it was given.
    #[test]
    fn loading_the_model_raises_the_allocators_purge_delay() {
        let _model = model();
        // SAFETY: reading a mimalloc option has no preconditions.
        let delay = unsafe {
            libmimalloc_sys::mi_option_get(libmimalloc_sys::mi_option_use_numa_nodes - 1)
        };
        assert_eq!(delay, 1_000);
    }

    #[test]
    fn finds_by_meaning() {
        let model = model();
        let v = embed(
            &model,
            &[
                "what city do I live in",
                "I moved to Berlin last year",
                "I like pizza with olives",
            ],
        );
        assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]) + 0.1);
    }

    /// In `f32`, padding moves no component by more than 1e-4. In bfloat16 the attention's
    /// `f32` products, blocked differently for another batch shape, can move a value across a
    /// rounding step, so the check there is on the angle.
    #[test]
    fn batching_and_padding_do_not_change_vectors() {
        let long =
            "a much longer sentence that forces the batch to be padded well beyond the short one, \
                    with many more tokens than it has";
        let exact = model_f32();
        let alone = embed(&exact, &["deploys are on Thursday"]);
        let batched = embed(&exact, &[long, "deploys are on Thursday", "hi"]);
        let drift = alone[0]
            .iter()
            .zip(&batched[1])
            .map(|(a, b)| (a - b).abs())
            .fold(0.0_f32, f32::max);
        assert!(drift < 1e-4, "padding changed the vector by {drift}");
        let fast = model_bf16();
        let alone = embed(&fast, &["deploys are on Thursday"]);
        let batched = embed(&fast, &[long, "deploys are on Thursday", "hi"]);
        let similarity = cosine(&alone[0], &batched[1]);
        assert!(
            similarity > 0.9999,
            "padding moved the vector to cosine {similarity}"
        );
    }

    /// A call of several passes (run side by side) gives each text the vector it gets alone,
    /// in the order of the texts.
    #[test]
    fn a_call_of_several_passes_keeps_each_texts_vector_and_order() {
        let model = model();
        let texts: Vec<String> = (0..60)
            .map(|i| {
                format!(
                    "note {i}: the team moved the weekly review of project {i} to room {}",
                    i * 7
                )
            })
            .collect();
        let lengths: Vec<usize> = texts
            .iter()
            .map(|t| {
                model
                    .model
                    .tokenizer
                    .encode(t.as_str(), true)
                    .expect("tokenizes")
                    .len()
            })
            .collect();
        assert!(
            token_batches(&lengths).len() >= 3,
            "the call must span several passes"
        );
        let together = model.model.embed_all(texts.clone()).expect("embed");
        assert_eq!(together.len(), texts.len());
        for (i, text) in texts.iter().enumerate().step_by(7) {
            let alone = embed(&model, &[text.as_str()]);
            let similarity = cosine(&alone[0], &together[i]);
            assert!(similarity > 0.9999, "text {i}: cosine {similarity}");
        }
    }

    /// A pass that starts beside another runs on a thread of its own and gives the vectors a
    /// pass alone gives; a pass alone runs on rayon's global pool, and neither stays counted.
    #[test]
    fn a_pass_beside_another_runs_on_its_own_thread_with_the_same_vectors() {
        let model = model();
        let texts = vec![
            "deploys are on Thursday".to_string(),
            "the staging database moved to the new cluster in March".to_string(),
        ];
        let pass = || {
            let thread = std::thread::current().name().map(str::to_string);
            (
                thread,
                model.model.embed_all(texts.clone()).expect("embeds"),
            )
        };
        let (thread, alone) = model.lanes.run(pass);
        assert_ne!(thread.as_deref(), Some("memvault-encoder"));

        // Another pass in the encoder.
        model.lanes.running.fetch_add(1, Ordering::SeqCst);
        let (thread, beside) = model.lanes.run(pass);
        model.lanes.running.fetch_sub(1, Ordering::SeqCst);
        assert_eq!(thread.as_deref(), Some("memvault-encoder"));
        assert_eq!(alone, beside, "the same products, split or not");
        assert_eq!(model.lanes.running.load(Ordering::SeqCst), 0);
        assert_eq!(
            model.lanes.idle.lock().unwrap().len(),
            1,
            "the lane is kept"
        );
    }

    /// `f32` takes the kernels crate's where it runs; `bf16` takes bfloat16 wherever the CPU has
    /// it; `auto` takes AMX tiles where they run, otherwise one of the two that run here, the
    /// same on every call of the process, and the server's model loads with that choice.
    #[test]
    fn each_precision_takes_a_kernel_this_cpu_runs() {
        use memvault_kernels::{bf16, dense};
        let f32 = if dense::supported() {
            Products::F32
        } else {
            Products::Candle
        };
        assert_eq!(products_for(EmbeddingPrecision::F32), f32);
        let bf16 = products_for(EmbeddingPrecision::Bf16);
        assert_eq!(
            bf16,
            if bf16::supported() {
                Products::Bf16
            } else {
                f32
            }
        );
        let auto = products_for(EmbeddingPrecision::Auto);
        if bf16::amx_supported() {
            assert_eq!(auto, Products::Bf16);
        } else if bf16::supported() && dense::supported() {
            assert!(matches!(auto, Products::Bf16 | Products::F32), "{auto:?}");
        } else {
            assert_eq!(auto, f32);
        }
        assert_eq!(
            products_for(EmbeddingPrecision::Auto),
            auto,
            "measured once"
        );
        assert_eq!(model().products(), auto);
    }

    #[test]
    fn token_batches_respect_the_budget_and_cover_every_text() {
        assert!(token_batches(&[]).is_empty());
        // Short texts fill a batch up to the count cap.
        let short = vec![4; 300];
        assert_eq!(token_batches(&short), vec![0..128, 128..256, 256..300]);
        // Long texts: 512 / 256 = 2 a batch.
        let long = vec![256; 10];
        assert_eq!(token_batches(&long), vec![0..2, 2..4, 4..6, 6..8, 8..10]);
        // Mixed, in any order: each batch's tokens stay in the budget, and the ranges cover
        // every index once, in order.
        let mixed: Vec<usize> = (0..500).map(|i| 3 + (i * 7) % 254).collect();
        let batches = token_batches(&mixed);
        let mut next = 0;
        for range in &batches {
            assert_eq!(range.start, next);
            assert!(!range.is_empty() && range.len() <= MAX_BATCH);
            let tokens: usize = mixed[range.clone()].iter().sum();
            assert!(range.len() == 1 || tokens <= TOKEN_BUDGET, "{range:?}");
            // A batch ends only when the next text would not fit.
            if range.end < mixed.len() && range.len() < MAX_BATCH {
                assert!(tokens + mixed[range.end] > TOKEN_BUDGET, "{range:?}");
            }
            next = range.end;
        }
        assert_eq!(next, mixed.len());
        // A text over the budget goes alone.
        assert_eq!(token_batches(&[5000, 6000]), vec![0..1, 1..2]);
    }

    #[test]
    fn a_missing_model_says_how_to_install_it() {
        let error = LocalEmbedder::load(Path::new("/nonexistent/model"), EmbeddingPrecision::Bf16)
            .err()
            .expect("an error");
        assert!(
            error.to_string().contains("scripts/install-model.sh"),
            "{error}"
        );
    }
}
