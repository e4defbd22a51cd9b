//! User-supplied text made safe for a log line (a foundation: no I/O, used by every layer).

/// A user-supplied value as it may enter a log line: control characters (new lines, escape
/// sequences) dropped, so that no one can forge a line or paint a terminal, and cut to 200
/// characters.
pub fn loggable(value: &str) -> String {
    loggable_up_to(value, 200)
}

/// [`loggable`] with another length: control characters, line and paragraph separators and
/// bidirectional overrides dropped, at most `max` characters kept.
pub fn loggable_up_to(value: &str, max: usize) -> String {
    let kept = |c: &char| {
        !c.is_control()
            && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    let mut out: String = value.chars().filter(kept).take(max).collect();
    if value.chars().filter(kept).nth(max).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::loggable;

    #[test]
    fn control_characters_never_reach_a_log_line() {
        assert_eq!(loggable("a\nb\r\u{1b}[31mc\u{7f}"), "ab[31mc");
        assert_eq!(loggable("x\u{202e}y\u{2028}z\u{2066}"), "xyz");
        assert_eq!(loggable(&"x".repeat(300)).chars().count(), 201);
    }
}
