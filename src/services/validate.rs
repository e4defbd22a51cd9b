//! Input validation shared by the services: every failure names its field.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::{to_micros, Category, NO_PROJECT};

pub const MAX_SCOPE_CHARS: usize = 200;
pub const MAX_PROJECT_CHARS: usize = 100;
pub const MAX_THREAD_CHARS: usize = 200;
pub const MAX_SPEAKER_CHARS: usize = 100;
/// The largest list offset (far past any page; a bound the OpenAPI document can state).
pub const MAX_OFFSET: i64 = i32::MAX as i64;

pub(crate) fn chars(value: &str) -> usize {
    value.chars().count()
}

pub(crate) fn content(value: Option<&str>, max: usize) -> Result<String> {
    let value = value.ok_or_else(|| Error::validation("content", "is required"))?;
    if value.trim().is_empty() {
        return Err(Error::validation("content", "must not be empty"));
    }
    if chars(value) > max {
        return Err(Error::validation(
            "content",
            format!("must be at most {max} characters"),
        ));
    }
    Ok(value.to_string())
}

pub(crate) fn parse_category(value: &str) -> Result<Category> {
    value.parse::<Category>().map_err(|()| {
        Error::validation(
            "category",
            format!("'{value}' is not one of {}", Category::expected()),
        )
    })
}

pub(crate) fn category(value: Option<&str>) -> Result<Option<Category>> {
    value.map(parse_category).transpose()
}

/// A memory's thread: trimmed, at most [`MAX_THREAD_CHARS`]; absent or blank is no thread.
pub(crate) fn thread(value: Option<&str>) -> Result<String> {
    trimmed_name("thread", value, MAX_THREAD_CHARS)
}

/// A memory's speaker: trimmed, at most [`MAX_SPEAKER_CHARS`]; absent or blank is none.
pub(crate) fn speaker(value: Option<&str>) -> Result<String> {
    trimmed_name("speaker", value, MAX_SPEAKER_CHARS)
}

/// An optional name: at most `max` characters as sent, then trimmed; absent or blank is `""`.
fn trimmed_name(field: &str, value: Option<&str>, max: usize) -> Result<String> {
    let value = value.unwrap_or_default();
    if chars(value) > max {
        return Err(Error::validation(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    Ok(value.trim().to_string())
}

pub(crate) fn project(value: Option<&str>) -> Result<String> {
    let value = value.unwrap_or_default();
    if chars(value) > MAX_PROJECT_CHARS {
        return Err(Error::validation(
            "project",
            format!("must be at most {MAX_PROJECT_CHARS} characters"),
        ));
    }
    if value == NO_PROJECT {
        return Err(Error::validation(
            "project",
            format!("'{NO_PROJECT}' is reserved for list filters"),
        ));
    }
    Ok(value.to_string())
}

pub(crate) fn timestamp(field: &str, value: Option<&str>) -> Result<Option<DateTime<Utc>>> {
    value
        .map(|v| {
            DateTime::parse_from_rfc3339(v)
                .map(|at| at.with_timezone(&Utc))
                .map(|at| crate::model::from_micros(to_micros(at)))
                .map_err(|_| {
                    Error::validation(field, format!("'{v}' is not an ISO 8601 date-time"))
                })
        })
        .transpose()
}

pub(crate) fn validity(from: Option<DateTime<Utc>>, until: Option<DateTime<Utc>>) -> Result<()> {
    match (from, until) {
        (Some(from), Some(until)) if from >= until => Err(Error::validation(
            "validUntil",
            "must be later than validFrom",
        )),
        _ => Ok(()),
    }
}

pub(crate) fn memory_id(field: &str, value: &str) -> Result<Uuid> {
    Uuid::parse_str(value).map_err(|_| Error::validation(field, format!("'{value}' is not a UUID")))
}

pub(crate) fn int_param(
    field: &str,
    value: Option<&str>,
    default: i64,
    min: i64,
    max: i64,
) -> Result<i64> {
    let Some(raw) = value else { return Ok(default) };
    let parsed: i64 = raw
        .trim()
        .parse()
        .map_err(|_| Error::validation(field, format!("'{raw}' is not an integer")))?;
    if parsed < min || parsed > max {
        return Err(Error::validation(
            field,
            format!("must be between {min} and {max}"),
        ));
    }
    Ok(parsed)
}

pub(crate) fn bool_param(field: &str, value: Option<&str>) -> Result<bool> {
    match value.map(str::trim) {
        None | Some("") | Some("false") | Some("0") => Ok(false),
        Some("true") | Some("1") => Ok(true),
        Some(other) => Err(Error::validation(
            field,
            format!("'{other}' is not true or false"),
        )),
    }
}

/// A comma-separated category filter.
pub(crate) fn category_filter(value: Option<&str>) -> Result<Vec<Category>> {
    comma_list(value).map(parse_category).collect()
}

/// A comma-separated project filter; the no-project literal selects memories without one.
pub(crate) fn project_filter(value: Option<&str>) -> Result<Vec<String>> {
    comma_list(value)
        .map(|p| {
            if p == NO_PROJECT {
                Ok(String::new())
            } else if chars(p) > MAX_PROJECT_CHARS {
                Err(Error::validation(
                    "project",
                    format!("must be at most {MAX_PROJECT_CHARS} characters"),
                ))
            } else {
                Ok(p.to_string())
            }
        })
        .collect()
}

pub(crate) fn comma_list(value: Option<&str>) -> impl Iterator<Item = &str> {
    value
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
}
