//! The accounts' wire types: request bodies and query parameters (parsed here into the
//! services' domain inputs) and the response views (mapped here from the services' results).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::error::Error;
use crate::model::accounts::{InvitationRecord, MemberRecord, Role, User};
use crate::model::{ApiKey, Plan};
use crate::services::accounts::{
    Credentials, CurrentSession, DisplayName, Email, ImageUrl, IssuedInvitation, IssuedKey, Joined,
    NewAccount, NewInvitation, NewKey, NewWorkspace, Parsed, Password, RequestedRole, Slug,
    TeamRoster, WorkspaceRole, INVITABLE_ROLES, MEMBER_ROLES,
};

// ----- sign-up, sign-in and the session -------------------------------------------------------

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignUp {
    /// An email address (at most 254 characters); case does not matter.
    #[schema(value_type = String, required = true, max_length = 254, pattern = r"^\s*[^@\s]+@[^@\s.][^@\s]*\.[^@\s]*[^@\s.]\s*$")]
    pub email: Option<String>,
    /// 8 to 128 characters.
    #[schema(value_type = String, required = true, min_length = 8, max_length = 128)]
    pub password: Option<String>,
    /// Shown to teammates (1 to 100 characters, no control characters); defaults to the part
    /// of the email before `@`.
    #[schema(
        max_length = 100,
        pattern = r"^\s*[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?\s*$"
    )]
    pub name: Option<String>,
    /// A picture's URL (at most 2,000 characters, no control characters).
    #[schema(
        max_length = 2000,
        pattern = r"^\s*[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?\s*$"
    )]
    pub image: Option<String>,
}

impl SignUp {
    /// Each field parsed (the service answers the first refusal in the order of its checks).
    pub fn parse(self) -> NewAccount {
        NewAccount {
            email: Email::parse(self.email.as_deref()),
            password: Password::for_new_account(self.password),
            name: DisplayName::parse_optional(self.name.as_deref()),
            image: ImageUrl::parse(self.image.as_deref()),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignIn {
    #[schema(value_type = String, required = true, max_length = 254, pattern = r"^\s*[^@\s]+@[^@\s.][^@\s]*\.[^@\s]*[^@\s.]\s*$")]
    pub email: Option<String>,
    #[schema(value_type = String, required = true, min_length = 1, max_length = 128)]
    pub password: Option<String>,
}

impl SignIn {
    /// Each field parsed (the service answers the first refusal in the order of its checks).
    pub fn parse(self) -> Credentials {
        Credentials {
            email: Email::parse(self.email.as_deref()),
            password: Password::for_sign_in(self.password),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    pub id: Uuid,
    pub email: String,
    pub name: String,
    pub image: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl From<User> for UserView {
    fn from(user: User) -> Self {
        UserView {
            id: user.id,
            email: user.email,
            name: user.name,
            image: user.image,
            created_at: user.created_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// `GET /api/auth/session`, and what sign-up and sign-in answer.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    pub user: UserView,
    pub session: SessionInfo,
    /// The user's workspaces, with their role (sign-up makes one).
    pub workspaces: Vec<WorkspaceView>,
}

impl From<CurrentSession> for SessionView {
    fn from(current: CurrentSession) -> Self {
        SessionView {
            user: current.user.into(),
            session: SessionInfo {
                id: current.session.id,
                created_at: current.session.created_at,
                expires_at: current.session.expires_at,
            },
            workspaces: current
                .workspaces
                .into_iter()
                .map(WorkspaceView::from)
                .collect(),
        }
    }
}

// ----- workspaces -------------------------------------------------------------------------------

/// A workspace as one caller sees it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceView {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    pub role: Role,
    /// `free`, `hobby`, `pro` or `ultimate`; `null` reads as free.
    #[schema(value_type = Option<crate::model::PlanName>)]
    pub billing_owner_plan: Option<Plan>,
    pub created_at: DateTime<Utc>,
}

impl From<WorkspaceRole> for WorkspaceView {
    fn from(w: WorkspaceRole) -> Self {
        WorkspaceView {
            id: w.workspace.id,
            name: w.workspace.name,
            slug: w.workspace.slug,
            role: w.role,
            billing_owner_plan: w.workspace.plan,
            created_at: w.workspace.created_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceList {
    pub workspaces: Vec<WorkspaceView>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceCreated {
    pub workspace: WorkspaceView,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateWorkspace {
    /// 1 to 100 characters (no control characters).
    #[schema(value_type = String, required = true, max_length = 100, pattern = r"^\s*[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?\s*$")]
    pub name: Option<String>,
    /// 1 to 60 lower-case letters, digits and dashes, not starting or ending with a dash;
    /// made from the name when absent. Unique.
    #[schema(pattern = r"^\s*(?:[a-z0-9](?:[a-z0-9-]{0,58}[a-z0-9])?)?\s*$")]
    pub slug: Option<String>,
}

impl CreateWorkspace {
    /// Each field parsed (the service answers the first refusal in the order of its checks).
    pub fn parse(self) -> NewWorkspace {
        NewWorkspace {
            name: DisplayName::parse(self.name.as_deref()),
            slug: Slug::parse(self.slug.as_deref()),
        }
    }
}

/// An optional `workspaceId` in the query string.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct WorkspaceParam {
    pub workspace_id: Option<Uuid>,
}

// ----- the team and roles ----------------------------------------------------------------------

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberView {
    pub id: Uuid,
    pub user_id: String,
    pub role: Role,
    pub created_at: DateTime<Utc>,
}

impl From<&MemberRecord> for MemberView {
    fn from(m: &MemberRecord) -> Self {
        MemberView {
            id: m.id,
            user_id: m.user_id.to_string(),
            role: m.role,
            created_at: m.created_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MemberChanged {
    pub member: MemberView,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TeamMember {
    pub id: Uuid,
    pub user_id: String,
    pub role: Role,
    pub created_at: DateTime<Utc>,
    pub email: String,
    pub name: String,
    pub image: Option<String>,
}

impl From<MemberRecord> for TeamMember {
    fn from(m: MemberRecord) -> Self {
        TeamMember {
            id: m.id,
            user_id: m.user_id.to_string(),
            role: m.role,
            created_at: m.created_at,
            email: m.email,
            name: m.name,
            image: m.image,
        }
    }
}

/// `GET /api/workspaces/{workspaceId}/team`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Team {
    pub current_user_role: Role,
    pub members: Vec<TeamMember>,
    /// Pending invitations; shown to owners and admins (empty for other roles).
    pub invitations: Vec<InvitationView>,
}

impl From<TeamRoster> for Team {
    fn from(roster: TeamRoster) -> Self {
        Team {
            current_user_role: roster.current_user_role,
            members: roster.members.into_iter().map(TeamMember::from).collect(),
            invitations: roster
                .invitations
                .into_iter()
                .map(InvitationView::from)
                .collect(),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangeRole {
    /// `admin`, `member` or `viewer`; `owner` too when an owner asks.
    #[schema(value_type = Role, required = true)]
    pub role: Option<String>,
}

impl ChangeRole {
    /// The role asked for: required, and one of the four.
    pub fn parse(self) -> Parsed<Role> {
        let raw = self
            .role
            .ok_or_else(|| Error::validation("role", "is required"))?;
        RequestedRole::parse(&raw).within("role", &MEMBER_ROLES)
    }
}

// ----- invitations -----------------------------------------------------------------------------

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvitationView {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub email: String,
    pub role: Role,
    pub expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

impl From<InvitationRecord> for InvitationView {
    fn from(i: InvitationRecord) -> Self {
        InvitationView {
            id: i.id,
            workspace_id: i.workspace_id,
            email: i.email,
            role: i.role,
            expires_at: i.expires_at,
            created_at: i.created_at,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateInvitation {
    #[schema(value_type = String, required = true, max_length = 254, pattern = r"^\s*[^@\s]+@[^@\s.][^@\s]*\.[^@\s]*[^@\s.]\s*$")]
    pub email: Option<String>,
    /// `admin`, `member` or `viewer` (default `member`).
    #[schema(pattern = r"^\s*(?:admin|member|viewer)\s*$")]
    pub role: Option<String>,
}

impl CreateInvitation {
    /// The email, then the role (one of the invitable roles).
    pub fn parse(self) -> Parsed<NewInvitation> {
        let email = Email::parse(self.email.as_deref())?;
        let role = match self.role.as_deref() {
            None => None,
            Some(raw) => Some(RequestedRole::parse(raw).within("role", &INVITABLE_ROLES)?),
        };
        Ok(NewInvitation { email, role })
    }
}

/// A new invitation and its single-use token (shown once: share it with the invitee, who
/// accepts it signed in with the invited email at `POST /api/invitations/{token}/accept`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvitationCreated {
    pub invitation: InvitationView,
    pub token: String,
}

impl From<IssuedInvitation> for InvitationCreated {
    fn from(issued: IssuedInvitation) -> Self {
        InvitationCreated {
            invitation: issued.invitation.into(),
            token: issued.token,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct InvitationAccepted {
    pub workspace: WorkspaceView,
    pub member: MemberView,
}

impl From<Joined> for InvitationAccepted {
    fn from(joined: Joined) -> Self {
        InvitationAccepted {
            workspace: joined.workspace.into(),
            member: MemberView::from(&joined.member),
        }
    }
}

// ----- API keys --------------------------------------------------------------------------------

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyView {
    pub id: Uuid,
    pub name: String,
    /// The first characters of the key, for telling keys apart.
    pub prefix: String,
    /// The role the key acts with (never above its maker's).
    pub role: Role,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
}

impl From<ApiKey> for ApiKeyView {
    fn from(k: ApiKey) -> Self {
        ApiKeyView {
            id: k.id,
            name: k.name,
            prefix: k.prefix,
            role: k.role,
            created_at: k.created_at,
            last_used_at: k.last_used_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyList {
    pub api_keys: Vec<ApiKeyView>,
}

impl From<Vec<ApiKey>> for ApiKeyList {
    fn from(keys: Vec<ApiKey>) -> Self {
        ApiKeyList {
            api_keys: keys.into_iter().map(ApiKeyView::from).collect(),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateApiKey {
    /// 1 to 100 characters (no control characters).
    #[schema(value_type = String, required = true, max_length = 100, pattern = r"^\s*[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?\s*$")]
    pub name: Option<String>,
    /// The role the key acts with; default and most: the caller's own.
    #[schema(value_type = Option<Role>)]
    pub role: Option<String>,
}

impl CreateApiKey {
    /// The name, then the role (which roles the caller may give is the service's check).
    pub fn parse(self) -> Parsed<NewKey> {
        Ok(NewKey {
            name: DisplayName::parse(self.name.as_deref())?,
            role: self.role.as_deref().map(RequestedRole::parse),
        })
    }
}

/// A new key: shown once.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyCreated {
    pub api_key: ApiKeyView,
    pub key: String,
}

impl From<IssuedKey> for ApiKeyCreated {
    fn from(issued: IssuedKey) -> Self {
        ApiKeyCreated {
            api_key: issued.api_key.into(),
            key: issued.key,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use crate::services::accounts::{
        MAX_EMAIL_CHARS, MAX_IMAGE_CHARS, MAX_NAME_CHARS, MAX_PASSWORD_CHARS, MIN_PASSWORD_CHARS,
    };

    /// The limits the bodies' schemas state are the ones the domain inputs enforce.
    #[test]
    fn the_documented_limits_are_the_inputs() {
        let doc = serde_json::to_value(crate::http::openapi::document()).unwrap();
        for (schema, name, key, expected) in [
            ("SignUp", "email", "maxLength", MAX_EMAIL_CHARS),
            ("SignUp", "password", "minLength", MIN_PASSWORD_CHARS),
            ("SignUp", "password", "maxLength", MAX_PASSWORD_CHARS),
            ("SignUp", "name", "maxLength", MAX_NAME_CHARS),
            ("SignUp", "image", "maxLength", MAX_IMAGE_CHARS),
            ("SignIn", "email", "maxLength", MAX_EMAIL_CHARS),
            ("SignIn", "password", "maxLength", MAX_PASSWORD_CHARS),
            ("CreateWorkspace", "name", "maxLength", MAX_NAME_CHARS),
            ("CreateApiKey", "name", "maxLength", MAX_NAME_CHARS),
            ("CreateInvitation", "email", "maxLength", MAX_EMAIL_CHARS),
        ] {
            assert_eq!(
                doc["components"]["schemas"][schema]["properties"][name][key],
                Value::from(expected),
                "{schema}.{name}.{key}"
            );
        }
    }
}
