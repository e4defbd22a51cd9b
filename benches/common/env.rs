//! Optional settings read from the environment, where blank counts as unset.

use anyhow::bail;

/// An environment variable, `None` when unset or blank.
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// An environment variable as an integer of at least `min`; `None` when unset or blank.
pub fn env_count(name: &str, min: usize) -> anyhow::Result<Option<usize>> {
    match env_var(name) {
        Some(raw) => match raw.trim().parse::<usize>() {
            Ok(n) if n >= min => Ok(Some(n)),
            _ => bail!("{name} must be an integer of at least {min}, not `{raw}`"),
        },
        None => Ok(None),
    }
}
