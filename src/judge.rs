//! Fact-update judges: does a new memory replace an older one as its next version?
//!
//! The default is offline: the heuristic detector of `text::supersession` (precision first;
//! its figures are in `docs/BENCHMARKS.md`). When an OpenAI-compatible chat endpoint is
//! configured (`MEMVAULT_LLM_URL`), [`LlmJudge`] asks the model instead and falls back to the
//! heuristics when the endpoint fails, so a save never fails because the model is down.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::text::supersession::{judge_update, UpdateJudgement};

#[async_trait]
pub trait UpdateJudge: Send + Sync + 'static {
    async fn judge(&self, old: &str, new: &str) -> UpdateJudgement;
}

/// The offline detector.
pub struct HeuristicJudge;

#[async_trait]
impl UpdateJudge for HeuristicJudge {
    async fn judge(&self, old: &str, new: &str) -> UpdateJudgement {
        judge_update(old, new)
    }
}

/// An LLM behind an OpenAI-compatible `POST {url}/chat/completions`.
pub struct LlmJudge {
    client: reqwest::Client,
    url: String,
    model: String,
    key: Option<String>,
}

const INSTRUCTIONS: &str = "You maintain a memory store. Given an OLD memory and a NEW memory \
about the same user or team, answer whether NEW replaces OLD: the same fact about the same \
subject whose value changed (for example a new city of residence, a new employer, a moved \
meeting time). A merely related fact, an additional fact, a past event or a different \
subject is not a replacement. Answer with JSON only: {\"update\": true|false, \"reason\": \
\"a few words\"}.";

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

#[derive(Deserialize)]
struct Verdict {
    update: bool,
    #[serde(default)]
    reason: String,
}

impl LlmJudge {
    pub fn new(url: &str, model: &str, key: Option<String>) -> Result<Self, reqwest::Error> {
        Ok(LlmJudge {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(20))
                .build()?,
            url: format!("{}/chat/completions", url.trim_end_matches('/')),
            model: model.to_string(),
            key,
        })
    }

    async fn ask(&self, old: &str, new: &str) -> Result<UpdateJudgement, String> {
        let body = ChatRequest {
            model: &self.model,
            temperature: 0.0,
            messages: vec![
                ChatMessage {
                    role: "system".to_string(),
                    content: INSTRUCTIONS.to_string(),
                },
                ChatMessage {
                    role: "user".to_string(),
                    content: format!("OLD: {old}\nNEW: {new}"),
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
        let text = answer
            .choices
            .into_iter()
            .next()
            .map(|c| c.message.content)
            .ok_or("no answer")?;
        parse_verdict(&text).ok_or_else(|| format!("unreadable answer: {text}"))
    }
}

/// The JSON object in a model's answer (models sometimes wrap it in prose or code fences).
fn parse_verdict(text: &str) -> Option<UpdateJudgement> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    let verdict: Verdict = serde_json::from_str(text.get(start..=end)?).ok()?;
    Some(UpdateJudgement {
        is_update: verdict.update,
        confidence: 0.9,
        reason: format!("llm: {}", verdict.reason.to_lowercase()),
    })
}

#[async_trait]
impl UpdateJudge for LlmJudge {
    async fn judge(&self, old: &str, new: &str) -> UpdateJudgement {
        match self.ask(old, new).await {
            Ok(judgement) => judgement,
            Err(error) => {
                tracing::warn!(%error, "llm judge failed, using the offline heuristics");
                judge_update(old, new)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::post;
    use axum::{Json, Router};

    #[test]
    fn verdicts_are_read_from_wrapped_answers() {
        let v =
            parse_verdict("```json\n{\"update\": true, \"reason\": \"New city\"}\n```").unwrap();
        assert!(v.is_update);
        assert_eq!(v.reason, "llm: new city");
        assert!(parse_verdict("no json here").is_none());
    }

    async fn serve(router: Router) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        format!("http://{address}/v1")
    }

    #[tokio::test]
    async fn asks_the_model_and_falls_back_when_it_fails() {
        // The fake model says "update" only when the new memory mentions Berlin.
        let url = serve(Router::new().route(
            "/v1/chat/completions",
            post(|Json(body): Json<serde_json::Value>| async move {
                let prompt = body["messages"][1]["content"].as_str().unwrap_or_default();
                let update = prompt.contains("Berlin");
                Json(serde_json::json!({
                    "choices": [{"message": {"role": "assistant",
                        "content": format!("{{\"update\": {update}, \"reason\": \"fake\"}}")}}]
                }))
            }),
        ))
        .await;
        let judge = LlmJudge::new(&url, "fake", Some("k".to_string())).unwrap();
        assert!(
            judge
                .judge("I live in Paris", "I live in Berlin")
                .await
                .is_update
        );
        assert!(
            !judge
                .judge("I live in Paris", "I like Rome")
                .await
                .is_update
        );

        // Nothing listens here: the heuristics answer.
        let down = LlmJudge::new("http://127.0.0.1:9/v1", "fake", None).unwrap();
        let fallback = down.judge("I live in Paris", "I moved to Berlin").await;
        assert_eq!(
            fallback,
            judge_update("I live in Paris", "I moved to Berlin")
        );
    }
}
