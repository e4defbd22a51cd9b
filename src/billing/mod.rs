//! Billing providers: where a plan is paid for. The service (`services::billing`) decides what
//! a plan change means for a workspace; a provider only opens checkouts and portals and asks
//! for plan changes. Two implementations:
//!
//! - [`LocalProvider`], for self-hosting: no payment, checkouts are pages on this server that
//!   the owner confirms;
//! - [`HostedProvider`], a payment provider's REST API (shaped after Dodo Payments), whose
//!   webhooks are signed with Standard Webhooks ([`signature`]).

pub mod hosted;
pub mod signature;

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Duration;
use uuid::Uuid;

use crate::model::accounts::{CheckoutRecord, SubscriptionRecord};
use crate::model::{now, Plan};
use crate::storage::Store;

pub use hosted::{HostedConfig, HostedProvider};

/// How long a local checkout page can be confirmed.
pub const LOCAL_CHECKOUT_TTL_MINUTES: i64 = 60;

/// A provider failure.
#[derive(Debug, thiserror::Error)]
pub enum BillingError {
    /// The provider could not be reached or answered with an error (details for the log).
    #[error("billing provider failed: {0}")]
    Provider(String),
    /// The request cannot be served as asked (shown to the caller).
    #[error("{0}")]
    Refused(String),
    /// Our own storage failed.
    #[error(transparent)]
    Storage(#[from] crate::error::StorageError),
}

/// Which provider is in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    Local,
    Hosted,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Local => "local",
            ProviderKind::Hosted => "hosted",
        }
    }
}

/// A checkout to open.
#[derive(Debug, Clone)]
pub struct CheckoutRequest {
    pub workspace_id: Uuid,
    pub user_id: Uuid,
    pub email: String,
    pub name: String,
    pub plan: Plan,
    /// This server's address as the user reaches it (for local pages and return links).
    pub base_url: String,
}

/// An opened checkout.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckoutSession {
    pub session_id: String,
    pub url: String,
}

/// A plan change asked of the provider.
#[derive(Debug, Clone)]
pub struct PlanChange<'a> {
    pub workspace_id: Uuid,
    pub plan: Plan,
    /// The stored subscription, if the workspace has one.
    pub subscription: Option<&'a SubscriptionRecord>,
}

/// What a plan change came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanChangeOutcome {
    /// The change is effective now: the service stores it.
    Applied,
    /// The provider accepted it; it applies when the provider's webhook confirms it.
    Pending,
}

#[async_trait]
pub trait BillingProvider: Send + Sync {
    fn kind(&self) -> ProviderKind;
    /// Opens a checkout for a paid plan.
    async fn checkout(&self, request: &CheckoutRequest) -> Result<CheckoutSession, BillingError>;
    /// The address of the billing portal for a workspace.
    async fn portal(
        &self,
        workspace_id: Uuid,
        subscription: Option<&SubscriptionRecord>,
        base_url: &str,
    ) -> Result<String, BillingError>;
    /// Asks for a plan change.
    async fn change_plan(&self, change: PlanChange<'_>) -> Result<PlanChangeOutcome, BillingError>;
    /// The plan a provider product stands for (hosted webhooks name products).
    fn plan_of_product(&self, _product_id: &str) -> Option<Plan> {
        None
    }
}

/// Self-hosting: no payment is taken. A checkout is a page on this server that completes the
/// change when the owner who opened it confirms; plan changes apply at once.
pub struct LocalProvider {
    store: Arc<dyn Store>,
}

impl LocalProvider {
    pub fn new(store: Arc<dyn Store>) -> Self {
        LocalProvider { store }
    }
}

#[async_trait]
impl BillingProvider for LocalProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Local
    }

    async fn checkout(&self, request: &CheckoutRequest) -> Result<CheckoutSession, BillingError> {
        let created_at = now();
        let checkout = CheckoutRecord {
            id: Uuid::now_v7(),
            workspace_id: request.workspace_id,
            user_id: request.user_id,
            plan: request.plan,
            created_at,
            expires_at: created_at + Duration::minutes(LOCAL_CHECKOUT_TTL_MINUTES),
            completed_at: None,
        };
        self.store.insert_checkout(&checkout).await?;
        Ok(CheckoutSession {
            session_id: checkout.id.to_string(),
            url: format!("{}/billing/checkout/{}", request.base_url, checkout.id),
        })
    }

    async fn portal(
        &self,
        workspace_id: Uuid,
        _subscription: Option<&SubscriptionRecord>,
        base_url: &str,
    ) -> Result<String, BillingError> {
        Ok(format!("{base_url}/billing/portal/{workspace_id}"))
    }

    async fn change_plan(
        &self,
        _change: PlanChange<'_>,
    ) -> Result<PlanChangeOutcome, BillingError> {
        Ok(PlanChangeOutcome::Applied)
    }
}
