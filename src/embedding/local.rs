//! all-MiniLM-L6-v2 in-process: BERT through candle, mean pooling over the attention mask, L2
//! normalisation. The packaged tokenizer pads every input to 128 tokens; it is reconfigured to
//! pad a batch to its longest input and truncate at 256 tokens (the model's `max_seq_length`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::{EmbedError, Embedder, BATCH_SIZE};

pub const MODEL_NAME: &str = "all-MiniLM-L6-v2";
const MAX_TOKENS: usize = 256;

struct Model {
    bert: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    dimensions: usize,
}

#[derive(Clone)]
pub struct LocalEmbedder {
    model: Arc<Model>,
}

fn load_error(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Load(e.to_string())
}

fn inference_error(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Inference(e.to_string())
}

impl LocalEmbedder {
    /// Loads the model from a directory holding `config.json`, `tokenizer.json` and
    /// `model.safetensors`.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
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
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..Default::default()
        }));
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
        let bert = BertModel::load(vb, &config).map_err(load_error)?;
        let dimensions = config.hidden_size;
        Ok(LocalEmbedder {
            model: Arc::new(Model {
                bert,
                tokenizer,
                device,
                dimensions,
            }),
        })
    }
}

impl Model {
    fn embed_batch(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts, true)
            .map_err(inference_error)?;
        let rows = |get: fn(&tokenizers::Encoding) -> &[u32]| -> Result<Tensor, EmbedError> {
            let rows = encodings
                .iter()
                .map(|e| Tensor::new(get(e), &self.device))
                .collect::<Result<Vec<_>, _>>()
                .map_err(inference_error)?;
            Tensor::stack(&rows, 0).map_err(inference_error)
        };
        let ids = rows(tokenizers::Encoding::get_ids)?;
        let mask = rows(tokenizers::Encoding::get_attention_mask)?;
        let token_types = ids.zeros_like().map_err(inference_error)?;
        let hidden = self
            .bert
            .forward(&ids, &token_types, Some(&mask))
            .map_err(inference_error)?;
        // Mean over the real tokens, then unit length.
        let pooled = (|| {
            let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
            let counts = mask.sum(1)?;
            let mean = summed.broadcast_div(&counts)?;
            let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?;
            mean.broadcast_div(&norms)?.to_vec2::<f32>()
        })();
        pooled.map_err(inference_error)
    }

    fn embed_all(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        // Similar lengths batch together (less padding); results go back in input order.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH_SIZE) {
            let batch = chunk.iter().map(|&i| texts[i].clone()).collect();
            for (&i, vector) in chunk.iter().zip(self.embed_batch(batch)?) {
                out[i] = vector;
            }
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
        let model = self.model.clone();
        tokio::task::spawn_blocking(move || model.embed_all(texts))
            .await
            .map_err(inference_error)?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedding::cosine;

    /// The installed model (`scripts/install-model.sh`); the test fails loudly without it.
    fn model() -> LocalEmbedder {
        let dir = std::env::var("MEMVAULT_EMBEDDING_MODEL_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|_| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("models/all-MiniLM-L6-v2")
            });
        LocalEmbedder::load(&dir).unwrap_or_else(|e| panic!("{e}"))
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

    #[test]
    fn batching_and_padding_do_not_change_vectors() {
        let model = model();
        let alone = embed(&model, &["deploys are on Thursday"]);
        let long =
            "a much longer sentence that forces the batch to be padded well beyond the short one, \
                    with many more tokens than it has";
        let batched = embed(&model, &[long, "deploys are on Thursday", "hi"]);
        let drift = alone[0]
            .iter()
            .zip(&batched[1])
            .map(|(a, b)| (a - b).abs())
            .fold(0.0_f32, f32::max);
        assert!(drift < 1e-4, "padding changed the vector by {drift}");
    }

    #[test]
    fn a_missing_model_says_how_to_install_it() {
        let error = LocalEmbedder::load(Path::new("/nonexistent/model"))
            .err()
            .expect("an error");
        assert!(
            error.to_string().contains("scripts/install-model.sh"),
            "{error}"
        );
    }
}
