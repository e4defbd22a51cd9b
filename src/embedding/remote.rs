//! An OpenAI-compatible embeddings endpoint (`POST {url}/embeddings`), for users who run their
//! own embedding server.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{normalize, EmbedError, Embedder, BATCH_SIZE};

pub struct RemoteEmbedder {
    client: reqwest::Client,
    url: String,
    model: String,
    key: Option<String>,
    dimensions: usize,
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    input: &'a [String],
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    embedding: Vec<f32>,
}

fn remote_error(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Remote(e.to_string())
}

impl RemoteEmbedder {
    /// Connects and asks for one vector, to learn the dimensions and fail early.
    pub async fn connect(url: &str, model: &str, key: Option<String>) -> Result<Self, EmbedError> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(remote_error)?;
        let mut embedder = RemoteEmbedder {
            client,
            url: format!("{}/embeddings", url.trim_end_matches('/')),
            model: model.to_string(),
            key,
            dimensions: 0,
        };
        let probe = embedder.request(&["dimension probe".to_string()]).await?;
        embedder.dimensions = probe.first().map(Vec::len).unwrap_or(0);
        if embedder.dimensions == 0 {
            return Err(EmbedError::Remote(
                "the server returned an empty vector".to_string(),
            ));
        }
        Ok(embedder)
    }

    async fn request(&self, input: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut request = self.client.post(&self.url).json(&Request {
            model: &self.model,
            input,
        });
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(remote_error)?;
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            return Err(EmbedError::Remote(format!(
                "{status}: {}",
                body.chars().take(300).collect::<String>()
            )));
        }
        let mut items = response
            .json::<Response>()
            .await
            .map_err(remote_error)?
            .data;
        if items.len() != input.len() {
            return Err(EmbedError::Remote(format!(
                "asked for {} vectors, got {}",
                input.len(),
                items.len()
            )));
        }
        items.sort_by_key(|item| item.index);
        Ok(items
            .into_iter()
            .map(|mut item| {
                normalize(&mut item.embedding);
                item.embedding
            })
            .collect())
    }
}

#[async_trait]
impl Embedder for RemoteEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(BATCH_SIZE) {
            let vectors = self.request(chunk).await?;
            if vectors.iter().any(|v| v.len() != self.dimensions) {
                return Err(EmbedError::Remote(
                    "the server changed its vector size".to_string(),
                ));
            }
            out.extend(vectors);
        }
        Ok(out)
    }
}
