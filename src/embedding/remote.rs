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

#[cfg(test)]
mod tests {
    use axum::routing::post;
    use axum::{Json, Router};
    use serde_json::{json, Value};

    use super::*;

    /// A fake OpenAI-compatible server: vector i is [i + 1, 0, 0] (not unit length), returned
    /// in reverse order; inputs containing "fail" get a 500.
    async fn fake_server() -> String {
        async fn embeddings(
            Json(body): Json<Value>,
        ) -> Result<Json<Value>, (axum::http::StatusCode, String)> {
            let inputs = body["input"].as_array().cloned().unwrap_or_default();
            if inputs
                .iter()
                .any(|i| i.as_str().unwrap_or_default().contains("fail"))
            {
                return Err((
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    "model crashed".to_string(),
                ));
            }
            let mut data: Vec<Value> = inputs
                .iter()
                .enumerate()
                .map(|(i, _)| json!({"index": i, "embedding": [i as f32 + 1.0, 0.0, 0.0]}))
                .collect();
            data.reverse();
            Ok(Json(json!({"data": data, "model": body["model"]})))
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(
                listener,
                Router::new().route("/v1/embeddings", post(embeddings)),
            )
            .await
            .unwrap();
        });
        format!("http://{address}/v1")
    }

    #[tokio::test]
    async fn vectors_come_back_in_order_and_unit_length() {
        let url = fake_server().await;
        let embedder = RemoteEmbedder::connect(&url, "test-model", Some("k".to_string()))
            .await
            .unwrap();
        assert_eq!((embedder.model(), embedder.dimensions()), ("test-model", 3));
        let texts: Vec<String> = (0..40).map(|i| format!("text {i}")).collect();
        let vectors = embedder.embed(texts).await.unwrap();
        assert_eq!(vectors.len(), 40);
        assert!(vectors.iter().all(|v| v == &vec![1.0, 0.0, 0.0]));
    }

    #[tokio::test]
    async fn server_errors_are_reported() {
        let url = fake_server().await;
        let embedder = RemoteEmbedder::connect(&url, "test-model", None)
            .await
            .unwrap();
        let error = embedder
            .embed(vec!["please fail".to_string()])
            .await
            .unwrap_err();
        assert!(error.to_string().contains("model crashed"), "{error}");
        assert!(RemoteEmbedder::connect("http://127.0.0.1:1", "m", None)
            .await
            .is_err());
    }
}
