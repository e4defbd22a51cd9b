//! Fact-update judges: does a new memory replace an older one as its next version?
//!
//! The default is offline: the heuristic detector of `text::supersession` (precision first;
//! its figures are in `docs/BENCHMARKS.md`). When an OpenAI-compatible chat endpoint is
//! configured (`MEMVAULT_LLM_URL`), [`LlmJudge`] asks the model instead and falls back to the
//! heuristics when the endpoint fails, so a save never fails because the model is down.

use async_trait::async_trait;
use serde::Deserialize;

use crate::llm::{json_in, ChatClient};
use crate::text::supersession::{judge_update, UpdateJudgement};

#[async_trait]
pub trait UpdateJudge: Send + Sync + 'static {
    async fn judge(&self, old: &str, new: &str) -> UpdateJudgement;

    /// The verdict [`UpdateJudge::judge`] gives, computed on the calling thread, for a judge
    /// that needs no I/O (so many pairs can be judged in parallel ahead of time); `None` for
    /// one that does.
    fn judge_offline(&self, _old: &str, _new: &str) -> Option<UpdateJudgement> {
        None
    }
}

/// The offline detector.
pub struct HeuristicJudge;

#[async_trait]
impl UpdateJudge for HeuristicJudge {
    async fn judge(&self, old: &str, new: &str) -> UpdateJudgement {
        judge_update(old, new)
    }

    fn judge_offline(&self, old: &str, new: &str) -> Option<UpdateJudgement> {
        Some(judge_update(old, new))
    }
}

/// An LLM behind an OpenAI-compatible chat endpoint.
pub struct LlmJudge {
    chat: ChatClient,
}

const INSTRUCTIONS: &str = "You maintain a memory store. Given an OLD memory and a NEW memory \
about the same user or team, answer whether NEW replaces OLD: the same fact about the same \
subject whose value changed (for example a new city of residence, a new employer, a moved \
meeting time). A merely related fact, an additional fact, a past event or a different \
subject is not a replacement. Answer with JSON only: {\"update\": true|false, \"reason\": \
\"a few words\"}.";

#[derive(Deserialize)]
struct Verdict {
    update: bool,
    #[serde(default)]
    reason: String,
}

impl LlmJudge {
    pub fn new(url: &str, model: &str, key: Option<String>) -> Result<Self, reqwest::Error> {
        Ok(LlmJudge {
            chat: ChatClient::new(url, model, key)?,
        })
    }

    async fn ask(&self, old: &str, new: &str) -> Result<UpdateJudgement, String> {
        let text = self
            .chat
            .complete(INSTRUCTIONS, &format!("OLD: {old}\nNEW: {new}"))
            .await?;
        parse_verdict(&text).ok_or_else(|| format!("unreadable answer: {text}"))
    }
}

/// The JSON object in a model's answer (models sometimes wrap it in prose or code fences).
fn parse_verdict(text: &str) -> Option<UpdateJudgement> {
    let verdict: Verdict = json_in(text)?;
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
