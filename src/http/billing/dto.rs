//! What the subscription endpoints accept and answer (camelCase JSON), and how a body is
//! parsed into the billing service's inputs and its results into answers.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::error::Result;
use crate::model::accounts::SubscriptionStatus;
use crate::model::Plan;
use crate::services::billing::{
    checkout_plan, plan_choice, workspace_choice, CheckoutOpened, PlanChanged, Subscription,
    WebhookReceipt,
};

// ----- inputs -------------------------------------------------------------------------------

#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct SubscriptionQuery {
    /// The workspace; a member of several must name it (400 otherwise).
    #[param(value_type = Option<Uuid>)]
    pub workspace_id: Option<String>,
}

impl SubscriptionQuery {
    /// The workspace named, if any.
    pub fn parse(&self) -> Result<Option<Uuid>> {
        workspace_choice(self.workspace_id.as_deref())
    }
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckoutBody {
    #[schema(value_type = Option<Uuid>)]
    pub workspace_id: Option<String>,
    /// The paid plan to buy: `hobby`, `pro` (default) or `ultimate`.
    #[schema(pattern = r"^\s*(?:hobby|pro|ultimate)\s*$")]
    pub plan: Option<String>,
}

impl CheckoutBody {
    /// The workspace named (if any) and the paid plan to buy, checked in that order.
    pub fn parse(&self) -> Result<(Option<Uuid>, Plan)> {
        let workspace = workspace_choice(self.workspace_id.as_deref())?;
        Ok((workspace, checkout_plan(self.plan.as_deref())?))
    }
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PortalBody {
    #[schema(value_type = Option<Uuid>)]
    pub workspace_id: Option<String>,
}

impl PortalBody {
    /// The workspace named, if any.
    pub fn parse(&self) -> Result<Option<Uuid>> {
        workspace_choice(self.workspace_id.as_deref())
    }
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangePlanBody {
    #[schema(value_type = Option<Uuid>)]
    pub workspace_id: Option<String>,
    /// `free`, `hobby`, `pro` or `ultimate`.
    #[schema(value_type = String, required = true, pattern = r"^\s*(?:free|hobby|pro|ultimate)\s*$")]
    pub plan: Option<String>,
}

impl ChangePlanBody {
    /// The workspace named (if any) and the plan to move to, checked in that order.
    pub fn parse(&self) -> Result<(Option<Uuid>, Plan)> {
        let workspace = workspace_choice(self.workspace_id.as_deref())?;
        Ok((workspace, plan_choice(self.plan.as_deref(), None)?))
    }
}

// ----- outputs ------------------------------------------------------------------------------

/// A workspace's subscription (contract part 2), with its provider.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionView {
    /// `null` until the plan was first changed through billing.
    pub id: Option<Uuid>,
    pub workspace_id: Uuid,
    /// The user who last changed the plan (`null` for the command line).
    pub user_id: Option<String>,
    #[schema(value_type = crate::model::PlanName)]
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

impl From<Subscription> for SubscriptionView {
    fn from(s: Subscription) -> Self {
        SubscriptionView {
            id: s.id,
            workspace_id: s.workspace_id,
            user_id: s.user_id,
            plan: s.plan,
            status: s.status,
            memory_count: s.memory_count,
            memory_limit: s.memory_limit,
            provider: s.provider,
            renews_at: s.renews_at,
            cancelled_at: s.cancelled_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckoutView {
    pub url: String,
    pub session_id: String,
}

impl From<CheckoutOpened> for CheckoutView {
    fn from(c: CheckoutOpened) -> Self {
        CheckoutView {
            url: c.url,
            session_id: c.session_id,
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PortalView {
    pub url: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChangePlanView {
    pub success: bool,
    pub message: String,
}

impl From<PlanChanged> for ChangePlanView {
    fn from(changed: PlanChanged) -> Self {
        let message = match changed {
            PlanChanged::Already(plan) => format!("the workspace is already on the {plan} plan"),
            PlanChanged::Applied(plan) => format!("the workspace is now on the {plan} plan"),
            PlanChanged::Sent(plan) => format!(
                "the change to the {plan} plan was sent to the billing provider; it applies \
                 when the provider confirms it"
            ),
        };
        ChangePlanView {
            success: true,
            message,
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookAnswer {
    pub received: bool,
    /// A webhook id seen before: nothing was applied again.
    pub duplicate: bool,
}

impl From<WebhookReceipt> for WebhookAnswer {
    fn from(receipt: WebhookReceipt) -> Self {
        WebhookAnswer {
            received: true,
            duplicate: receipt == WebhookReceipt::Duplicate,
        }
    }
}
