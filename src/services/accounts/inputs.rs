//! The accounts' domain inputs: emails, passwords, names, image URLs, slugs and requested
//! roles, each checked once by its constructor (the adapters parse request bodies with them).

use std::fmt;

use crate::error::{Error, Result};
use crate::model::accounts::Role;

pub const MAX_NAME_CHARS: usize = 100;
pub const MAX_EMAIL_CHARS: usize = 254;
pub const MIN_PASSWORD_CHARS: usize = 8;
pub const MAX_PASSWORD_CHARS: usize = 128;
pub const MAX_IMAGE_CHARS: usize = 2_000;
pub const MAX_SLUG_CHARS: usize = 60;

/// What an adapter parsed: the value, or the refusal the service answers in its turn. An
/// input whose parts the service checks between other steps (a limit counted per account, the
/// caller's access to the workspace) carries them so, and the order of the answers is kept.
pub type Parsed<T> = Result<T>;

/// An email address, trimmed and lower-cased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email(String);

impl Email {
    /// Required; at most 254 characters (blanks around it counted); `local@domain.tld`.
    pub fn parse(raw: Option<&str>) -> Result<Email> {
        let invalid =
            || Error::validation("email", "must be an email address like name@example.com");
        // Counted as sent, blanks around it included.
        if raw.is_some_and(|raw| raw.chars().count() > MAX_EMAIL_CHARS) {
            return Err(invalid());
        }
        let email = raw.map(str::trim).unwrap_or_default().to_lowercase();
        if email.is_empty() {
            return Err(Error::validation("email", "is required"));
        }
        if email.chars().count() > MAX_EMAIL_CHARS || email.chars().any(char::is_whitespace) {
            return Err(invalid());
        }
        let (local, domain) = email.split_once('@').ok_or_else(invalid)?;
        if local.is_empty()
            || domain.len() < 3
            || domain.contains('@')
            || !domain.contains('.')
            || domain.starts_with('.')
            || domain.ends_with('.')
        {
            return Err(invalid());
        }
        Ok(Email(email))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// A password as sent (never trimmed); its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    /// A new account's: 8 to 128 characters.
    pub fn for_new_account(raw: Option<String>) -> Result<Password> {
        let password = raw.unwrap_or_default();
        let length = password.chars().count();
        if !(MIN_PASSWORD_CHARS..=MAX_PASSWORD_CHARS).contains(&length) {
            return Err(Error::validation(
                "password",
                format!("must be {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters"),
            ));
        }
        Ok(Password(password))
    }

    /// One to check at sign-in: required, at most 128 characters.
    pub fn for_sign_in(raw: Option<String>) -> Result<Password> {
        let password = raw
            .filter(|p| !p.is_empty())
            .ok_or_else(|| Error::validation("password", "is required"))?;
        if password.chars().count() > MAX_PASSWORD_CHARS {
            return Err(Error::validation(
                "password",
                format!("must be at most {MAX_PASSWORD_CHARS} characters"),
            ));
        }
        Ok(Password(password))
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(..)")
    }
}

/// The name of a user, a workspace or an API key: 1 to 100 characters, trimmed, no control
/// characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayName(String);

impl DisplayName {
    /// `None` when absent.
    pub fn parse_optional(raw: Option<&str>) -> Result<Option<DisplayName>> {
        Ok(text("name", raw, MAX_NAME_CHARS)?.map(DisplayName))
    }

    /// Required.
    pub fn parse(raw: Option<&str>) -> Result<DisplayName> {
        DisplayName::parse_optional(raw)?.ok_or_else(|| Error::validation("name", "is required"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// A picture's URL: at most 2,000 characters, trimmed, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageUrl(String);

impl ImageUrl {
    /// `None` when absent.
    pub fn parse(raw: Option<&str>) -> Result<Option<ImageUrl>> {
        Ok(text("image", raw, MAX_IMAGE_CHARS)?.map(ImageUrl))
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// A workspace's slug as chosen: 1 to 60 lower-case letters, digits and dashes, not starting
/// or ending with a dash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slug(String);

impl Slug {
    /// `None` when absent or blank (the slug is then made from the name).
    pub fn parse(raw: Option<&str>) -> Result<Option<Slug>> {
        match raw.map(str::trim) {
            None | Some("") => Ok(None),
            Some(raw) => {
                let valid = raw.len() <= MAX_SLUG_CHARS
                    && raw
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !raw.starts_with('-')
                    && !raw.ends_with('-');
                if !valid {
                    return Err(Error::validation(
                        "slug",
                        format!("must be 1 to {MAX_SLUG_CHARS} lower-case letters, digits and dashes, not starting or ending with a dash"),
                    ));
                }
                Ok(Some(Slug(raw.to_string())))
            }
        }
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// A role a request names: one of the four roles, or a value that is none of them. Which
/// roles may be given is the service's rule ([`RequestedRole::within`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestedRole(Option<Role>);

impl RequestedRole {
    pub fn parse(raw: &str) -> RequestedRole {
        RequestedRole(raw.trim().parse::<Role>().ok())
    }

    /// The role if it is one of `allowed`; otherwise a refusal on `field` listing them.
    pub fn within(self, field: &str, allowed: &[Role]) -> Result<Role> {
        let expected = allowed
            .iter()
            .map(|r| r.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        self.0
            .filter(|role| allowed.contains(role))
            .ok_or_else(|| Error::validation(field, format!("must be one of {expected}")))
    }
}

/// The roles a member may be given by a role change.
pub const MEMBER_ROLES: [Role; 4] = [Role::Owner, Role::Admin, Role::Member, Role::Viewer];

/// The roles an invitation may give.
pub const INVITABLE_ROLES: [Role; 3] = [Role::Admin, Role::Member, Role::Viewer];

/// `POST /api/auth/sign-up`. The email is counted per account before the rest is looked at.
#[derive(Debug)]
pub struct NewAccount {
    pub email: Parsed<Email>,
    pub password: Parsed<Password>,
    /// `None`: the part of the email before `@`.
    pub name: Parsed<Option<DisplayName>>,
    pub image: Parsed<Option<ImageUrl>>,
}

/// `POST /api/auth/sign-in` (and the OAuth sign-in page). The email is counted per account
/// before the password is looked at.
#[derive(Debug)]
pub struct Credentials {
    pub email: Parsed<Email>,
    pub password: Parsed<Password>,
}

/// `POST /api/workspaces`. The name is checked before the limit per user, the slug after.
#[derive(Debug)]
pub struct NewWorkspace {
    pub name: Parsed<DisplayName>,
    /// `None`: made from the name.
    pub slug: Parsed<Option<Slug>>,
}

/// `POST /api/workspaces/{workspaceId}/api-keys` (checked once the caller may manage keys).
#[derive(Debug)]
pub struct NewKey {
    pub name: DisplayName,
    /// `None`: the caller's own role.
    pub role: Option<RequestedRole>,
}

/// `POST /api/workspaces/{workspaceId}/invitations` (checked once the caller may invite).
#[derive(Debug)]
pub struct NewInvitation {
    pub email: Email,
    /// One of [`INVITABLE_ROLES`]; `None`: member.
    pub role: Option<Role>,
}

/// Counted as sent (blanks around it included), then trimmed.
fn text(field: &str, raw: Option<&str>, max: usize) -> Result<Option<String>> {
    if raw.is_some_and(|value| value.chars().count() > max) {
        return Err(Error::validation(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    match raw.map(str::trim) {
        None => Ok(None),
        Some("") => Err(Error::validation(field, "must not be empty")),
        Some(value) if value.chars().any(char::is_control) => Err(Error::validation(
            field,
            "must not contain control characters",
        )),
        Some(value) => Ok(Some(value.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_normalised_and_checked() {
        assert_eq!(
            Email::parse(Some("  Ada@Example.COM ")).unwrap().as_str(),
            "ada@example.com"
        );
        for bad in [
            "",
            "ada",
            "ada@",
            "@example.com",
            "a b@example.com",
            "ada@example",
            "a@@b.c",
        ] {
            let error = Email::parse(Some(bad)).unwrap_err();
            assert!(error.to_string().contains("email"), "{bad}: {error}");
        }
    }

    #[test]
    fn requested_roles_are_refused_with_the_roles_allowed() {
        let allowed = [Role::Member, Role::Viewer];
        assert_eq!(
            RequestedRole::parse(" viewer ")
                .within("role", &allowed)
                .unwrap(),
            Role::Viewer
        );
        for raw in ["admin", "boss"] {
            let error = RequestedRole::parse(raw)
                .within("role", &allowed)
                .unwrap_err();
            assert!(
                error.to_string().contains("must be one of member, viewer"),
                "{raw}: {error}"
            );
        }
    }
}
