//! Subscriptions: a workspace's plan, usage and billing state; checkout, portal and plan
//! changes through the configured [`BillingProvider`]; the hosted provider's webhooks. Cookie
//! callers only (a key is 401): billing is a person's decision, not an integration's.
//!
//! A plan change reaches the workspace's actor at once, so the next request has the new rate
//! limits and memory limit.

use std::str::FromStr;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use memvault_actors::{EndpointClass, PlanTable, Workspaces};
use serde::Deserialize;
use uuid::Uuid;

use super::{admit, Caller, Gate, Identity, Principal};
use crate::billing::signature::WebhookSecret;
use crate::billing::{
    BillingError, BillingProvider, CheckoutRequest, PlanChange, PlanChangeOutcome, ProviderKind,
};
use crate::error::{Error, Result};
use crate::model::accounts::{Need, SubscriptionRecord, SubscriptionStatus};
use crate::model::{now, to_micros, Plan};
use crate::storage::accounts::{SubscriptionUpdate, WebhookOutcome};
use crate::storage::Store;

/// The plan a checkout buys when the body names none.
pub const DEFAULT_CHECKOUT_PLAN: Plan = Plan::Pro;

// ----- inputs and results ---------------------------------------------------------------------

/// A workspace's subscription: its plan, status, usage against the plan's memory limit, and
/// provider.
#[derive(Debug, Clone)]
pub struct Subscription {
    /// `None` until the plan was first changed through billing.
    pub id: Option<Uuid>,
    pub workspace_id: Uuid,
    /// The user who last changed the plan (`None` for the command line).
    pub user_id: Option<String>,
    pub plan: Plan,
    pub status: SubscriptionStatus,
    /// Current memories in all scopes.
    pub memory_count: u64,
    pub memory_limit: u64,
    /// `local` or `hosted`.
    pub provider: String,
    pub renews_at: Option<DateTime<Utc>>,
    pub cancelled_at: Option<DateTime<Utc>>,
}

/// A checkout opened at the provider: where to pay or confirm.
#[derive(Debug, Clone)]
pub struct CheckoutOpened {
    pub url: String,
    pub session_id: String,
}

/// What a plan change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanChanged {
    /// The workspace was on that plan already.
    Already(Plan),
    /// Applied here at once (the local provider).
    Applied(Plan),
    /// Sent to the hosted provider; applied when its webhook confirms it.
    Sent(Plan),
}

/// What became of a webhook delivery (each is acknowledged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookReceipt {
    /// Applied (or about nothing this server has).
    Applied,
    /// A webhook id seen before: nothing was applied again.
    Duplicate,
    /// Older than the last event applied to the subscription: recorded, not applied.
    Stale,
}

/// A local checkout as its confirmation page shows it.
#[derive(Debug, Clone)]
pub struct LocalCheckout {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub workspace_name: String,
    pub plan: Plan,
    pub current_plan: Plan,
    pub expires_at: DateTime<Utc>,
    pub completed: bool,
}

/// The local portal page's content.
#[derive(Debug, Clone)]
pub struct PortalPage {
    pub workspace_id: Uuid,
    pub workspace_name: String,
    pub subscription: Subscription,
    pub can_change: bool,
    pub provider: ProviderKind,
}

/// The webhook headers of Standard Webhooks.
#[derive(Debug, Clone, Default)]
pub struct WebhookHeaders {
    pub id: Option<String>,
    pub timestamp: Option<String>,
    pub signature: Option<String>,
}

// ----- the webhook event (the provider's shape) -----------------------------------------------

#[derive(Debug, Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    /// When the event happened (the provider's clock); else the signed delivery timestamp.
    #[serde(default)]
    timestamp: Option<DateTime<Utc>>,
    #[serde(default)]
    data: EventData,
}

#[derive(Debug, Default, Deserialize)]
struct EventData {
    subscription_id: Option<String>,
    product_id: Option<String>,
    status: Option<String>,
    customer: Option<EventCustomer>,
    next_billing_date: Option<DateTime<Utc>>,
    cancelled_at: Option<DateTime<Utc>>,
    #[serde(default)]
    metadata: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct EventCustomer {
    customer_id: Option<String>,
}

/// The subscription status a webhook event moves to, from its type (`subscription.on_hold`),
/// else from the status it carries.
pub fn event_status(kind: &str, carried: Option<&str>) -> Option<SubscriptionStatus> {
    let suffix = kind.strip_prefix("subscription.")?;
    match suffix {
        "active" | "renewed" | "plan_changed" => Some(SubscriptionStatus::Active),
        "on_hold" => Some(SubscriptionStatus::OnHold),
        "cancelled" => Some(SubscriptionStatus::Cancelled),
        "expired" => Some(SubscriptionStatus::Expired),
        "failed" => Some(SubscriptionStatus::Failed),
        _ => carried.and_then(|s| SubscriptionStatus::from_str(s).ok()),
    }
}

/// The plan a status leaves the workspace on: `active` the product's plan, `on_hold` and
/// `cancelled` the current one (the provider retries, or the paid period runs out), `expired`
/// and `failed` free. `None`: unchanged.
pub fn plan_after(status: SubscriptionStatus, product_plan: Option<Plan>) -> Option<Plan> {
    match status {
        SubscriptionStatus::Active => product_plan,
        SubscriptionStatus::OnHold | SubscriptionStatus::Cancelled => None,
        SubscriptionStatus::Expired | SubscriptionStatus::Failed => Some(Plan::Free),
    }
}

/// The plan a request names (field `plan`), or `default` when it names none.
pub fn plan_choice(raw: Option<&str>, default: Option<Plan>) -> Result<Plan> {
    match raw.map(str::trim) {
        None => default
            .ok_or_else(|| Error::validation("plan", "is required: free, hobby, pro or ultimate")),
        Some(raw) => Plan::from_str(raw)
            .map_err(|_| Error::validation("plan", "must be one of free, hobby, pro, ultimate")),
    }
}

/// The paid plan a checkout buys: the one named, else [`DEFAULT_CHECKOUT_PLAN`]; never free.
pub fn checkout_plan(raw: Option<&str>) -> Result<Plan> {
    let plan = plan_choice(raw, Some(DEFAULT_CHECKOUT_PLAN))?;
    if plan == Plan::Free {
        return Err(Error::validation(
            "plan",
            "checkout is for a paid plan (hobby, pro or ultimate); use change-plan to go back to free",
        ));
    }
    Ok(plan)
}

/// The workspace a request names (field `workspaceId`), if any.
pub fn workspace_choice(raw: Option<&str>) -> Result<Option<Uuid>> {
    match raw {
        None => Ok(None),
        Some(raw) => Uuid::parse_str(raw)
            .map(Some)
            .map_err(|_| Error::validation("workspaceId", "must be a UUID")),
    }
}

impl From<BillingError> for Error {
    fn from(error: BillingError) -> Self {
        match error {
            BillingError::Provider(detail) => Error::Upstream(detail),
            BillingError::Refused(message) => Error::Conflict(message),
            BillingError::Storage(error) => error.into(),
        }
    }
}

// ----- the service ----------------------------------------------------------------------------

#[derive(Clone)]
pub struct BillingService {
    store: Arc<dyn Store>,
    gate: Gate,
    workspaces: Option<Workspaces>,
    provider: Arc<dyn BillingProvider>,
    plans: PlanTable,
    webhook_secret: Option<WebhookSecret>,
    webhook_tolerance_secs: i64,
}

impl BillingService {
    pub fn new(
        store: Arc<dyn Store>,
        workspaces: Option<Workspaces>,
        provider: Arc<dyn BillingProvider>,
        plans: PlanTable,
        webhook_secret: Option<WebhookSecret>,
        webhook_tolerance_secs: i64,
    ) -> Self {
        BillingService {
            gate: Gate::new(store.clone()),
            store,
            workspaces,
            provider,
            plans,
            webhook_secret,
            webhook_tolerance_secs,
        }
    }

    pub fn provider_kind(&self) -> ProviderKind {
        self.provider.kind()
    }

    /// A cookie caller in the named workspace with `need`; a key is refused (401).
    async fn enter(&self, who: &Principal, workspace: Option<Uuid>, need: Need) -> Result<Caller> {
        if !matches!(who.identity, Identity::User { .. }) {
            return Err(Error::Unauthorized(
                "subscription endpoints take the session cookie only: sign in; API keys cannot \
                 manage billing"
                    .to_string(),
            ));
        }
        let caller = self.gate.enter(who, workspace, need).await?;
        if let Some(workspaces) = &self.workspaces {
            let class = match need {
                Need::Read => EndpointClass::Read,
                Need::Write | Need::Manage | Need::Own => EndpointClass::Write,
            };
            admit(workspaces, &caller, class, false).await?;
        }
        Ok(caller)
    }

    async fn view(&self, workspace_id: Uuid) -> Result<Subscription> {
        let workspace = self
            .store
            .workspace(workspace_id)
            .await?
            .ok_or_else(|| Error::NotFound("workspace not found".to_string()))?;
        let plan = workspace.plan.unwrap_or_default();
        let record = self.store.subscription(workspace_id).await?;
        let memory_count = self
            .store
            .count_current_memories(workspace_id)
            .await?
            .max(0) as u64;
        Ok(Subscription {
            id: record.as_ref().map(|r| r.id),
            workspace_id,
            user_id: record
                .as_ref()
                .and_then(|r| r.user_id)
                .map(|id| id.to_string()),
            plan,
            status: record
                .as_ref()
                .map(|r| r.status)
                .unwrap_or(SubscriptionStatus::Active),
            memory_count,
            memory_limit: self.plans.limits(plan).memory_limit,
            provider: record
                .as_ref()
                .map(|r| r.provider.clone())
                .unwrap_or_else(|| self.provider.kind().as_str().to_string()),
            renews_at: record.as_ref().and_then(|r| r.renews_at),
            cancelled_at: record.as_ref().and_then(|r| r.cancelled_at),
        })
    }

    /// `GET /api/subscription/current`: every member may read it.
    pub async fn current(&self, who: &Principal, workspace: Option<Uuid>) -> Result<Subscription> {
        let caller = self.enter(who, workspace, Need::Read).await?;
        self.view(caller.workspace_id).await
    }

    /// `POST /api/subscription/checkout` (owners): a page where the plan is paid for (or, with
    /// the local provider, confirmed).
    pub async fn checkout(
        &self,
        who: &Principal,
        workspace: Option<Uuid>,
        plan: Plan,
        base_url: &str,
    ) -> Result<CheckoutOpened> {
        let caller = self.enter(who, workspace, Need::Own).await?;
        let user_id = who
            .user_id()
            .ok_or_else(|| Error::Unauthorized("sign in to check out".to_string()))?;
        let user = self
            .store
            .user(user_id)
            .await?
            .ok_or_else(|| Error::Unauthorized("your account no longer exists".to_string()))?;
        let session = self
            .provider
            .checkout(&CheckoutRequest {
                workspace_id: caller.workspace_id,
                user_id,
                email: user.email,
                name: user.name,
                plan,
                base_url: base_url.to_string(),
            })
            .await?;
        tracing::info!(workspace_id = %caller.workspace_id, %plan, session_id = %session.session_id, "checkout opened");
        Ok(CheckoutOpened {
            url: session.url,
            session_id: session.session_id,
        })
    }

    /// `POST /api/subscription/portal` (owners).
    pub async fn portal(
        &self,
        who: &Principal,
        workspace: Option<Uuid>,
        base_url: &str,
    ) -> Result<String> {
        let caller = self.enter(who, workspace, Need::Own).await?;
        let record = self.store.subscription(caller.workspace_id).await?;
        let url = self
            .provider
            .portal(caller.workspace_id, record.as_ref(), base_url)
            .await?;
        Ok(url)
    }

    /// `POST /api/subscription/change-plan` (owners).
    pub async fn change_plan(
        &self,
        who: &Principal,
        workspace: Option<Uuid>,
        plan: Plan,
    ) -> Result<PlanChanged> {
        let caller = self.enter(who, workspace, Need::Own).await?;
        let record = self.store.subscription(caller.workspace_id).await?;
        let current = self.view(caller.workspace_id).await?.plan;
        if current == plan {
            return Ok(PlanChanged::Already(plan));
        }
        let outcome = self
            .provider
            .change_plan(PlanChange {
                workspace_id: caller.workspace_id,
                plan,
                subscription: record.as_ref(),
            })
            .await?;
        match outcome {
            PlanChangeOutcome::Applied => {
                self.apply(caller.workspace_id, who.user_id(), plan, record)
                    .await?;
                Ok(PlanChanged::Applied(plan))
            }
            PlanChangeOutcome::Pending => Ok(PlanChanged::Sent(plan)),
        }
    }

    /// Stores a plan applied on this server (local provider) and tells the workspace's actor.
    async fn apply(
        &self,
        workspace_id: Uuid,
        user_id: Option<Uuid>,
        plan: Plan,
        existing: Option<SubscriptionRecord>,
    ) -> Result<()> {
        let record = self.local_record(workspace_id, user_id, existing);
        self.store.save_subscription(&record, Some(plan)).await?;
        self.plan_changed(workspace_id, plan);
        tracing::info!(%workspace_id, %plan, "plan changed");
        Ok(())
    }

    fn local_record(
        &self,
        workspace_id: Uuid,
        user_id: Option<Uuid>,
        existing: Option<SubscriptionRecord>,
    ) -> SubscriptionRecord {
        let at = now();
        SubscriptionRecord {
            workspace_id,
            id: existing.as_ref().map(|r| r.id).unwrap_or_else(Uuid::now_v7),
            user_id,
            status: SubscriptionStatus::Active,
            provider: ProviderKind::Local.as_str().to_string(),
            provider_customer_id: None,
            provider_subscription_id: None,
            renews_at: None,
            cancelled_at: None,
            created_at: existing.as_ref().map(|r| r.created_at).unwrap_or(at),
            updated_at: at,
        }
    }

    /// Applies a stored plan change here; the database announces it to the other nodes of a
    /// cluster (migration `0011_plan_notify.sql`).
    fn plan_changed(&self, workspace_id: Uuid, plan: Plan) {
        if let Some(workspaces) = &self.workspaces {
            workspaces.plan_changed(workspace_id, plan);
        }
    }

    // ----- the local provider's pages --------------------------------------------------------

    fn local_only(&self) -> Result<()> {
        match self.provider.kind() {
            ProviderKind::Local => Ok(()),
            ProviderKind::Hosted => Err(Error::NotFound(
                "checkouts are served by the billing provider, not this server".to_string(),
            )),
        }
    }

    /// A local checkout, for the owner who opened it.
    pub async fn local_checkout(&self, who: &Principal, id: &str) -> Result<LocalCheckout> {
        self.local_only()?;
        let not_found = || Error::NotFound("checkout not found".to_string());
        let id = Uuid::parse_str(id.trim()).map_err(|_| not_found())?;
        let checkout = self.store.checkout(id).await?.ok_or_else(not_found)?;
        // Only its owner sees it; the same answer as an unknown id otherwise.
        if who.user_id() != Some(checkout.user_id) {
            return Err(not_found());
        }
        let caller = self
            .enter(who, Some(checkout.workspace_id), Need::Own)
            .await?;
        let workspace = self
            .store
            .workspace(caller.workspace_id)
            .await?
            .ok_or_else(not_found)?;
        Ok(LocalCheckout {
            id: checkout.id,
            workspace_id: workspace.id,
            workspace_name: workspace.name,
            plan: checkout.plan,
            current_plan: workspace.plan.unwrap_or_default(),
            expires_at: checkout.expires_at,
            completed: checkout.completed_at.is_some(),
        })
    }

    /// Confirms a local checkout: the plan applies at once. A checkout completes once.
    pub async fn confirm_checkout(&self, who: &Principal, id: &str) -> Result<LocalCheckout> {
        let checkout = self.local_checkout(who, id).await?;
        if checkout.completed {
            return Err(Error::Gone(
                "this checkout was already completed".to_string(),
            ));
        }
        if checkout.expires_at <= now() {
            return Err(Error::Gone(
                "this checkout has expired: start a new one".to_string(),
            ));
        }
        let existing = self.store.subscription(checkout.workspace_id).await?;
        let record = self.local_record(checkout.workspace_id, who.user_id(), existing);
        let update = SubscriptionUpdate {
            record,
            plan: Some(checkout.plan),
        };
        if !self
            .store
            .complete_checkout(checkout.id, &update, to_micros(now()))
            .await?
        {
            return Err(Error::Gone(
                "this checkout was already completed or has expired".to_string(),
            ));
        }
        self.plan_changed(checkout.workspace_id, checkout.plan);
        tracing::info!(workspace_id = %checkout.workspace_id, plan = %checkout.plan, "checkout completed");
        Ok(LocalCheckout {
            completed: true,
            current_plan: checkout.plan,
            ..checkout
        })
    }

    /// The portal page of a workspace: every member sees it, owners may change the plan.
    pub async fn portal_page(&self, who: &Principal, workspace_id: &str) -> Result<PortalPage> {
        let workspace = Uuid::parse_str(workspace_id.trim())
            .map_err(|_| Error::NotFound("workspace not found".to_string()))?;
        let caller = self.enter(who, Some(workspace), Need::Read).await?;
        let subscription = self.view(caller.workspace_id).await?;
        let name = self
            .store
            .workspace(caller.workspace_id)
            .await?
            .map(|w| w.name)
            .unwrap_or_default();
        Ok(PortalPage {
            workspace_id: caller.workspace_id,
            workspace_name: name,
            subscription,
            can_change: caller.role.allows(Need::Own),
            provider: self.provider.kind(),
        })
    }

    // ----- webhooks ---------------------------------------------------------------------------

    /// `POST /api/webhooks/billing`: a signed event from the hosted provider. Applied once per
    /// webhook id, in the same transaction as its effect.
    pub async fn webhook(&self, headers: WebhookHeaders, body: &[u8]) -> Result<WebhookReceipt> {
        let secret = match (&self.webhook_secret, self.provider.kind()) {
            (Some(secret), ProviderKind::Hosted) => secret,
            _ => {
                return Err(Error::NotFound(
                    "billing webhooks are not configured on this server (billing_provider is \
                     local, or billing_webhook_secret is unset)"
                        .to_string(),
                ))
            }
        };
        secret
            .verify(
                headers.id.as_deref(),
                headers.timestamp.as_deref(),
                headers.signature.as_deref(),
                body,
                Utc::now().timestamp(),
                self.webhook_tolerance_secs,
            )
            .map_err(|e| Error::Unauthorized(format!("webhook refused: {e}")))?;
        let webhook_id = headers.id.unwrap_or_default();
        let event: Event = serde_json::from_slice(body)
            .map_err(|e| Error::BadRequest(format!("invalid webhook body: {e}")))?;
        let update = self.update_for(&event).await?;
        let at = to_micros(now());
        let sent = headers
            .timestamp
            .as_deref()
            .and_then(|t| t.trim().parse::<i64>().ok())
            .and_then(|secs| DateTime::<Utc>::from_timestamp(secs, 0));
        let event_micros = event.timestamp.or(sent).map(to_micros).unwrap_or(at);
        let outcome = self
            .store
            .apply_webhook(&webhook_id, &event.kind, update.as_ref(), event_micros, at)
            .await?;
        match outcome {
            WebhookOutcome::Duplicate => {
                tracing::info!(%webhook_id, kind = %crate::loggable::loggable(&event.kind), "webhook replayed: ignored");
                return Ok(WebhookReceipt::Duplicate);
            }
            WebhookOutcome::Stale => {
                tracing::info!(%webhook_id, kind = %crate::loggable::loggable(&event.kind), "webhook older than the last one applied: recorded, not applied");
                return Ok(WebhookReceipt::Stale);
            }
            WebhookOutcome::Applied => {}
        }
        match &update {
            Some(update) => {
                if let Some(plan) = update.plan {
                    self.plan_changed(update.record.workspace_id, plan);
                }
                tracing::info!(
                    %webhook_id,
                    kind = %crate::loggable::loggable(&event.kind),
                    workspace_id = %update.record.workspace_id,
                    status = %update.record.status,
                    plan = ?update.plan,
                    "subscription updated by webhook"
                );
            }
            None => {
                tracing::info!(%webhook_id, kind = %crate::loggable::loggable(&event.kind), "webhook acknowledged, nothing to apply")
            }
        }
        Ok(WebhookReceipt::Applied)
    }

    /// What an event changes: `None` for events that are not about a subscription, or about
    /// one no workspace of this server has.
    async fn update_for(&self, event: &Event) -> Result<Option<SubscriptionUpdate>> {
        let data = &event.data;
        let Some(status) = event_status(&event.kind, data.status.as_deref()) else {
            return Ok(None);
        };
        let from_metadata = data
            .metadata
            .get("workspace_id")
            .and_then(|v| v.as_str())
            .and_then(|v| Uuid::parse_str(v).ok());
        let workspace_id = match from_metadata {
            Some(id) if self.store.workspace(id).await?.is_some() => Some(id),
            _ => match data.subscription_id.as_deref() {
                Some(sub) => self
                    .store
                    .subscription_by_provider_id(sub)
                    .await?
                    .map(|r| r.workspace_id),
                None => None,
            },
        };
        let Some(workspace_id) = workspace_id else {
            tracing::warn!(kind = %crate::loggable::loggable(&event.kind), subscription_id = ?data.subscription_id, "webhook for no known workspace");
            return Ok(None);
        };
        let existing = self.store.subscription(workspace_id).await?;
        let product_plan = data
            .product_id
            .as_deref()
            .and_then(|p| self.provider.plan_of_product(p));
        if status == SubscriptionStatus::Active && product_plan.is_none() {
            tracing::warn!(product_id = ?data.product_id, "webhook names a product of no configured plan: the plan is kept");
        }
        let at = now();
        let user_id = data
            .metadata
            .get("user_id")
            .and_then(|v| v.as_str())
            .and_then(|v| Uuid::parse_str(v).ok())
            .or_else(|| existing.as_ref().and_then(|r| r.user_id));
        let record = SubscriptionRecord {
            workspace_id,
            id: existing.as_ref().map(|r| r.id).unwrap_or_else(Uuid::now_v7),
            user_id,
            status,
            provider: ProviderKind::Hosted.as_str().to_string(),
            provider_customer_id: data
                .customer
                .as_ref()
                .and_then(|c| c.customer_id.clone())
                .or_else(|| {
                    existing
                        .as_ref()
                        .and_then(|r| r.provider_customer_id.clone())
                }),
            provider_subscription_id: data.subscription_id.clone().or_else(|| {
                existing
                    .as_ref()
                    .and_then(|r| r.provider_subscription_id.clone())
            }),
            renews_at: data
                .next_billing_date
                .or_else(|| existing.as_ref().and_then(|r| r.renews_at)),
            cancelled_at: match status {
                SubscriptionStatus::Active => None,
                _ => data
                    .cancelled_at
                    .or_else(|| existing.as_ref().and_then(|r| r.cancelled_at))
                    .or(match status {
                        SubscriptionStatus::Cancelled => Some(at),
                        _ => None,
                    }),
            },
            created_at: existing.as_ref().map(|r| r.created_at).unwrap_or(at),
            updated_at: at,
        };
        Ok(Some(SubscriptionUpdate {
            record,
            plan: plan_after(status, product_plan),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_types_map_to_statuses() {
        use SubscriptionStatus::*;
        for (kind, expected) in [
            ("subscription.active", Some(Active)),
            ("subscription.renewed", Some(Active)),
            ("subscription.plan_changed", Some(Active)),
            ("subscription.on_hold", Some(OnHold)),
            ("subscription.cancelled", Some(Cancelled)),
            ("subscription.expired", Some(Expired)),
            ("subscription.failed", Some(Failed)),
            ("payment.succeeded", None),
        ] {
            assert_eq!(event_status(kind, None), expected, "{kind}");
        }
        assert_eq!(
            event_status("subscription.updated", Some("on_hold")),
            Some(OnHold)
        );
        assert_eq!(event_status("subscription.updated", Some("weird")), None);
    }

    #[test]
    fn statuses_decide_the_plan() {
        use SubscriptionStatus::*;
        assert_eq!(plan_after(Active, Some(Plan::Pro)), Some(Plan::Pro));
        assert_eq!(plan_after(Active, None), None);
        assert_eq!(plan_after(OnHold, Some(Plan::Pro)), None);
        assert_eq!(plan_after(Cancelled, Some(Plan::Pro)), None);
        assert_eq!(plan_after(Expired, Some(Plan::Pro)), Some(Plan::Free));
        assert_eq!(plan_after(Failed, None), Some(Plan::Free));
    }

    #[test]
    fn plans_are_validated_with_the_field_named() {
        assert_eq!(plan_choice(Some("pro"), None).unwrap(), Plan::Pro);
        assert_eq!(plan_choice(None, Some(Plan::Hobby)).unwrap(), Plan::Hobby);
        let missing = plan_choice(None, None).unwrap_err().to_string();
        assert!(missing.starts_with("invalid plan:"), "{missing}");
        let wrong = plan_choice(Some("gold"), None).unwrap_err().to_string();
        assert!(wrong.contains("free, hobby, pro, ultimate"), "{wrong}");
    }
}
