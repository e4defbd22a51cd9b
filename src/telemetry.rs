//! Logging: text or JSON lines on stderr, filtered by the configured level (or `RUST_LOG`).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs the global subscriber once; later calls (tests) are no-ops.
pub fn init(format: LogFormat, level: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

/// A user-supplied value as it may enter a log line: control characters (new lines, escape
/// sequences) dropped, so that no one can forge a line or paint a terminal, and cut to 200
/// characters.
pub fn loggable(value: &str) -> String {
    const MAX: usize = 200;
    let mut out: String = value
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX)
        .collect();
    if value.chars().filter(|c| !c.is_control()).nth(MAX).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod loggable_tests {
    use super::loggable;

    #[test]
    fn control_characters_never_reach_a_log_line() {
        assert_eq!(loggable("a\nb\r\u{1b}[31mc\u{7f}"), "ab[31mc");
        assert_eq!(loggable(&"x".repeat(300)).chars().count(), 201);
    }
}
