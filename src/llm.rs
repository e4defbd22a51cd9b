//! An OpenAI-compatible chat endpoint (`POST {url}/chat/completions`), used when
//! `MEMVAULT_LLM_URL` is set: by the fact-update judge (`judge.rs`) and by [`LlmExtractor`],
//! which extracts a document chunk's facts. Both fall back to the offline rules when the
//! endpoint fails, so nothing fails because a model is down.

use std::time::Duration;

use async_trait::async_trait;
use memvault_pipelines::model::FactDraft;
use memvault_pipelines::pipeline::{Extractor, StoredChunk};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::text::extract::extract_facts;

/// A chat-completions client.
pub struct ChatClient {
    client: reqwest::Client,
    url: String,
    model: String,
    key: Option<String>,
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    temperature: f32,
    messages: Vec<ChatMessage>,
}

#[derive(Serialize, Deserialize)]
struct ChatMessage {
    role: String,
    content: String,
}

#[derive(Deserialize)]
struct ChatResponse {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChatMessage,
}

impl ChatClient {
    pub fn new(url: &str, model: &str, key: Option<String>) -> Result<Self, reqwest::Error> {
        Ok(ChatClient {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()?,
            url: format!("{}/chat/completions", url.trim_end_matches('/')),
            model: model.to_string(),
            key,
        })
    }

    /// The model's answer to `user` under `system` instructions (temperature 0).
    pub async fn complete(&self, system: &str, user: &str) -> Result<String, String> {
        let body = ChatRequest {
            model: &self.model,
            temperature: 0.0,
            messages: vec![
                ChatMessage {
                    role: "system".to_string(),
                    content: system.to_string(),
                },
                ChatMessage {
                    role: "user".to_string(),
                    content: user.to_string(),
                },
            ],
        };
        let mut request = self.client.post(&self.url).json(&body);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("status {}", response.status()));
        }
        let answer: ChatResponse = response.json().await.map_err(|e| e.to_string())?;
        answer
            .choices
            .into_iter()
            .next()
            .map(|c| c.message.content)
            .ok_or_else(|| "no answer".to_string())
    }
}

/// The JSON object in a model's answer (models sometimes wrap it in prose or code fences).
pub fn json_in<T: DeserializeOwned>(text: &str) -> Option<T> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    serde_json::from_str(text.get(start..=end)?).ok()
}

const EXTRACTION: &str = "You extract facts from a passage of a company document for a \
retrieval system. Return each self-contained, atomic fact the passage states (who, what, \
numbers, dates, decisions, policies), at most 12, written as one standalone sentence that \
names its subject. For each fact give `quote`: the exact text of the passage that states it, \
copied character for character. Skip boilerplate, navigation, questions and opinions. \
Answer with JSON only: {\"facts\": [{\"content\": \"...\", \"quote\": \"...\", \
\"category\": \"fact|decision|preference|context\", \"confidence\": 0.0-1.0}]}.";

#[derive(Deserialize)]
struct Extraction {
    #[serde(default)]
    facts: Vec<ExtractedFact>,
}

#[derive(Deserialize)]
struct ExtractedFact {
    content: String,
    quote: String,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    confidence: Option<f32>,
}

/// Where `quote` appears in `chunk`: exactly, or with runs of whitespace matched loosely (a
/// model often reflows line breaks). The evidence is always the chunk's own text.
pub fn locate_quote<'a>(chunk: &'a str, quote: &str) -> Option<&'a str> {
    let quote = quote.trim();
    if quote.is_empty() {
        return None;
    }
    if let Some(at) = chunk.find(quote) {
        return Some(&chunk[at..at + quote.len()]);
    }
    let words: Vec<&str> = quote.split_whitespace().collect();
    let first = words.first()?;
    let mut from = 0;
    while let Some(offset) = chunk[from..].find(first) {
        let start = from + offset;
        let mut at = start;
        let mut matched = true;
        for (i, word) in words.iter().enumerate() {
            if i > 0 {
                let rest = &chunk[at..];
                let trimmed = rest.trim_start();
                if trimmed.len() == rest.len() {
                    matched = false;
                    break;
                }
                at += rest.len() - trimmed.len();
            }
            if chunk[at..].starts_with(word) {
                at += word.len();
            } else {
                matched = false;
                break;
            }
        }
        if matched {
            return Some(&chunk[start..at]);
        }
        from = start + first.len();
    }
    None
}

/// Facts read by an LLM; a fact whose quote is not in the chunk is dropped, and the offline
/// extractor answers when the endpoint fails.
pub struct LlmExtractor {
    pub chat: ChatClient,
}

impl LlmExtractor {
    async fn ask(&self, title: &str, chunk: &StoredChunk) -> Result<Vec<FactDraft>, String> {
        let prompt = format!(
            "Document: {title}\nSection: {}\n\nPassage:\n{}",
            chunk.section_path, chunk.content
        );
        let text = self.chat.complete(EXTRACTION, &prompt).await?;
        let extraction: Extraction =
            json_in(&text).ok_or_else(|| format!("unreadable answer: {text}"))?;
        Ok(extraction
            .facts
            .into_iter()
            .filter_map(|f| {
                let quote = locate_quote(&chunk.content, &f.quote)?;
                let content = f.content.trim();
                (!content.is_empty()).then(|| FactDraft {
                    content: content.to_string(),
                    category: f
                        .category
                        .filter(|c| {
                            ["fact", "decision", "preference", "context"].contains(&c.as_str())
                        })
                        .unwrap_or_else(|| "fact".to_string()),
                    quote: quote.to_string(),
                    confidence: f.confidence.unwrap_or(0.8).clamp(0.0, 1.0),
                })
            })
            .take(12)
            .collect())
    }
}

#[async_trait]
impl Extractor for LlmExtractor {
    async fn extract(&self, title: &str, chunk: &StoredChunk) -> Result<Vec<FactDraft>, String> {
        match self.ask(title, chunk).await {
            Ok(facts) => Ok(facts),
            Err(error) => {
                tracing::warn!(%error, chunk_id = %chunk.id, "llm extraction failed, using the offline rules");
                let (title, section, content) = (
                    title.to_string(),
                    chunk.section_path.clone(),
                    chunk.content.clone(),
                );
                tokio::task::spawn_blocking(move || extract_facts(&title, &section, &content))
                    .await
                    .map_err(|e| format!("extraction worker failed: {e}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::post;
    use axum::{Json, Router};
    use uuid::Uuid;

    #[test]
    fn quotes_are_found_exactly_or_across_reflowed_whitespace() {
        let chunk = "Acme was founded\nin 1987 in Lyon. It has 4,200 staff.";
        assert_eq!(
            locate_quote(chunk, "It has 4,200 staff."),
            Some("It has 4,200 staff.")
        );
        assert_eq!(
            locate_quote(chunk, "Acme was founded in 1987"),
            Some("Acme was founded\nin 1987")
        );
        assert_eq!(locate_quote(chunk, "Acme was founded in 1988"), None);
        assert_eq!(locate_quote(chunk, "  "), None);
    }

    async fn serve(router: Router) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        format!("http://{address}/v1")
    }

    fn chunk(content: &str) -> StoredChunk {
        StoredChunk {
            id: Uuid::nil(),
            index: 0,
            section_path: "Profile".to_string(),
            content: content.to_string(),
            contextual_content: content.to_string(),
        }
    }

    #[tokio::test]
    async fn extracts_with_the_model_keeps_real_quotes_and_falls_back_when_down() {
        // The fake model returns one real quote and one invented one.
        let url = serve(Router::new().route(
            "/v1/chat/completions",
            post(|Json(_): Json<serde_json::Value>| async move {
                Json(serde_json::json!({"choices": [{"message": {"role": "assistant", "content":
                    "```json\n{\"facts\": [{\"content\": \"Acme was founded in 1987.\", \"quote\": \"founded in 1987\", \"category\": \"fact\", \"confidence\": 0.9}, {\"content\": \"Acme is loved.\", \"quote\": \"everyone loves Acme\"}]}\n```"}}]}))
            }),
        ))
        .await;
        let extractor = LlmExtractor {
            chat: ChatClient::new(&url, "fake", None).unwrap(),
        };
        let text = "Acme was founded in 1987 in Lyon.";
        let facts = extractor.extract("Acme", &chunk(text)).await.unwrap();
        assert_eq!(facts.len(), 1);
        assert_eq!(facts[0].content, "Acme was founded in 1987.");
        assert!(text.contains(&facts[0].quote));
        assert!((facts[0].confidence - 0.9).abs() < 1e-6);

        let down = LlmExtractor {
            chat: ChatClient::new("http://127.0.0.1:9/v1", "fake", None).unwrap(),
        };
        let offline = down.extract("Acme", &chunk(text)).await.unwrap();
        assert_eq!(offline, extract_facts("Acme", "Profile", text));
    }
}
