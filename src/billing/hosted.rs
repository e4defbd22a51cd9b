//! A hosted payment provider over its REST API, shaped after Dodo Payments: checkout sessions
//! (`POST /checkouts`), customer portal sessions (`POST /customers/{id}/customer-portal/session`),
//! plan changes (`POST /subscriptions/{id}/change-plan`) and cancellation
//! (`PATCH /subscriptions/{id}`), authenticated with a bearer key. Its webhooks are verified by
//! the service with [`super::signature`].

use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use super::{
    BillingError, BillingProvider, CheckoutRequest, CheckoutSession, PlanChange, PlanChangeOutcome,
    ProviderKind,
};
use crate::model::accounts::SubscriptionRecord;
use crate::model::Plan;

const TIMEOUT: Duration = Duration::from_secs(15);

/// What the hosted provider is configured with.
#[derive(Debug, Clone)]
pub struct HostedConfig {
    /// The API's base URL, e.g. `https://live.dodopayments.com`.
    pub base_url: String,
    pub api_key: String,
    /// The provider's product id of each paid plan.
    pub hobby: Option<String>,
    pub pro: Option<String>,
    pub ultimate: Option<String>,
}

impl HostedConfig {
    fn product(&self, plan: Plan) -> Option<&str> {
        match plan {
            Plan::Free => None,
            Plan::Hobby => self.hobby.as_deref(),
            Plan::Pro => self.pro.as_deref(),
            Plan::Ultimate => self.ultimate.as_deref(),
        }
    }
}

pub struct HostedProvider {
    config: HostedConfig,
    client: reqwest::Client,
}

#[derive(Deserialize)]
struct CheckoutAnswer {
    session_id: String,
    checkout_url: String,
}

#[derive(Deserialize)]
struct PortalAnswer {
    link: String,
}

impl HostedProvider {
    pub fn new(config: HostedConfig) -> Result<Self, BillingError> {
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| BillingError::Provider(format!("http client: {e}")))?;
        Ok(HostedProvider { config, client })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.config.base_url.trim_end_matches('/'))
    }

    fn product(&self, plan: Plan) -> Result<&str, BillingError> {
        self.config.product(plan).ok_or_else(|| {
            BillingError::Refused(format!(
                "the {plan} plan is not offered here (billing_products.{plan} is not configured)"
            ))
        })
    }

    /// Sends a request and reads a JSON answer; a non-2xx status is a provider failure.
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        what: &str,
    ) -> Result<String, BillingError> {
        let response = request
            .bearer_auth(&self.config.api_key)
            .send()
            .await
            .map_err(|e| BillingError::Provider(format!("{what}: {e}")))?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|e| BillingError::Provider(format!("{what}: reading the answer: {e}")))?;
        if !status.is_success() {
            let snippet: String = body.chars().take(300).collect();
            return Err(BillingError::Provider(format!(
                "{what}: the provider answered {status}: {snippet}"
            )));
        }
        Ok(body)
    }

    fn subscription_id(subscription: Option<&SubscriptionRecord>) -> Option<&str> {
        subscription
            .filter(|s| s.provider == ProviderKind::Hosted.as_str())
            .and_then(|s| s.provider_subscription_id.as_deref())
    }
}

#[async_trait]
impl BillingProvider for HostedProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Hosted
    }

    async fn checkout(&self, request: &CheckoutRequest) -> Result<CheckoutSession, BillingError> {
        let product = self.product(request.plan)?;
        let body = json!({
            "product_cart": [{"product_id": product, "quantity": 1}],
            "customer": {"email": request.email, "name": request.name},
            "return_url": format!("{}/billing/portal/{}", request.base_url, request.workspace_id),
            // Webhooks carry it back: it names the workspace the subscription pays for.
            "metadata": {
                "workspace_id": request.workspace_id.to_string(),
                "user_id": request.user_id.to_string(),
                "plan": request.plan.as_str(),
            },
        });
        let answer = self
            .send(
                self.client.post(self.url("/checkouts")).json(&body),
                "checkout",
            )
            .await?;
        let answer: CheckoutAnswer = serde_json::from_str(&answer)
            .map_err(|e| BillingError::Provider(format!("checkout: unreadable answer: {e}")))?;
        Ok(CheckoutSession {
            session_id: answer.session_id,
            url: answer.checkout_url,
        })
    }

    async fn portal(
        &self,
        _workspace_id: Uuid,
        subscription: Option<&SubscriptionRecord>,
        _base_url: &str,
    ) -> Result<String, BillingError> {
        let customer = subscription
            .filter(|s| s.provider == ProviderKind::Hosted.as_str())
            .and_then(|s| s.provider_customer_id.as_deref())
            .ok_or_else(|| {
                BillingError::Refused(
                    "this workspace has no paid subscription yet: start one with \
                     POST /api/subscription/checkout"
                        .to_string(),
                )
            })?;
        let path = format!("/customers/{customer}/customer-portal/session");
        let answer = self
            .send(self.client.post(self.url(&path)), "customer portal")
            .await?;
        let answer: PortalAnswer = serde_json::from_str(&answer).map_err(|e| {
            BillingError::Provider(format!("customer portal: unreadable answer: {e}"))
        })?;
        Ok(answer.link)
    }

    async fn change_plan(&self, change: PlanChange<'_>) -> Result<PlanChangeOutcome, BillingError> {
        let subscription_id = Self::subscription_id(change.subscription);
        match (change.plan, subscription_id) {
            // Nothing is paid: free needs no provider.
            (Plan::Free, None) => Ok(PlanChangeOutcome::Applied),
            (Plan::Free, Some(id)) => {
                let path = format!("/subscriptions/{id}");
                self.send(
                    self.client
                        .patch(self.url(&path))
                        .json(&json!({"status": "cancelled"})),
                    "cancel subscription",
                )
                .await?;
                Ok(PlanChangeOutcome::Pending)
            }
            (plan, Some(id)) => {
                let product = self.product(plan)?;
                let path = format!("/subscriptions/{id}/change-plan");
                self.send(
                    self.client.post(self.url(&path)).json(&json!({
                        "product_id": product,
                        "quantity": 1,
                        "proration_billing_mode": "prorated_immediately",
                    })),
                    "change plan",
                )
                .await?;
                Ok(PlanChangeOutcome::Pending)
            }
            (_, None) => Err(BillingError::Refused(
                "this workspace has no paid subscription yet: start one with \
                 POST /api/subscription/checkout"
                    .to_string(),
            )),
        }
    }

    fn plan_of_product(&self, product_id: &str) -> Option<Plan> {
        [Plan::Hobby, Plan::Pro, Plan::Ultimate]
            .into_iter()
            .find(|plan| self.config.product(*plan) == Some(product_id))
    }
}
