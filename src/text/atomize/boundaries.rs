//! Sentence boundaries: where a full stop, an ellipsis, "?" or "!" ends a sentence (titles,
//! abbreviations, initials, decimals, quotes).

#[allow(clippy::wildcard_imports)]
use super::*;

/// Sentences of one block of prose (its lines already joined), each with its byte range in
/// `text`.
pub(super) fn split_block(text: &str) -> Vec<(String, Range<usize>)> {
    let (normalized, origins) = normalize_inline(text);
    let chars: Vec<char> = normalized.chars().collect();
    let origin = |i: usize| origins[i]..origins[i] + chars[i].len_utf8();
    let mut sentences = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        if !is_terminal(chars[i]) {
            i += 1;
            continue;
        }
        let mut end = i;
        while end < chars.len() && is_terminal(chars[end]) {
            end += 1;
        }
        let mut after = end;
        while after < chars.len() && is_closer(chars[after]) {
            after += 1;
        }
        if after < chars.len() && chars[after] != ' ' {
            // "3.14", "e.g", "example.com", "v1.2.3": not followed by a space.
            i = end;
            continue;
        }
        let next = (after + 1).min(chars.len());
        if next >= chars.len() || is_boundary(&chars, start, i, end, after) {
            push_sentence(&mut sentences, &chars, start..after, origin);
            start = next;
        }
        i = after.max(i + 1);
    }
    if start < chars.len() {
        push_sentence(&mut sentences, &chars, start..chars.len(), origin);
    }
    sentences
}

/// Pushes `chars[range]`, trimmed, with the source range from its first to its last character
/// (`origin` maps a character to its bytes in the source), unless it has no letter or digit.
pub(super) fn push_sentence(
    out: &mut Vec<(String, Range<usize>)>,
    chars: &[char],
    range: Range<usize>,
    origin: impl Fn(usize) -> Range<usize>,
) {
    let slice = &chars[range.clone()];
    let (Some(first), Some(last)) = (
        slice.iter().position(|c| !c.is_whitespace()),
        slice.iter().rposition(|c| !c.is_whitespace()),
    ) else {
        return;
    };
    let trimmed = &slice[first..=last];
    if trimmed.iter().any(|c| c.is_alphanumeric()) {
        let span = origin(range.start + first).start..origin(range.start + last).end;
        out.push((trimmed.iter().collect(), span));
    }
}

pub(super) fn is_terminal(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '…')
}

pub(super) fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | '\u{201D}' | '\u{2019}' | ')' | ']' | '}' | '\u{00BB}' | '*'
    )
}

pub(super) fn is_opener(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | '\u{201C}' | '\u{2018}' | '(' | '[' | '{' | '\u{00AB}' | '*' | '`'
    )
}

/// Whether the terminal punctuation `chars[at..end]` (closers up to `after`, a space next)
/// ends the sentence that began at `start`.
pub(super) fn is_boundary(
    chars: &[char],
    start: usize,
    at: usize,
    end: usize,
    after: usize,
) -> bool {
    let next_word: String = chars[after + 1..]
        .iter()
        .take_while(|c| **c != ' ')
        .collect();
    let next = next_word.trim_start_matches(is_opener);
    let next_lower = next.starts_with(char::is_lowercase);
    let next_upper = next.starts_with(char::is_uppercase);
    let closed = after > end;
    let punct = &chars[at..end];
    if punct.iter().any(|&c| c == '?' || c == '!') {
        return !(closed && next_lower);
    }
    if punct.len() > 1 || punct[0] == '…' {
        return next_upper; // an ellipsis
    }
    if closed {
        return !next_lower;
    }
    let word_start = chars[start..at]
        .iter()
        .rposition(|&c| c == ' ')
        .map_or(start, |p| start + p + 1);
    let before: String = chars[word_start..at].iter().collect();
    period_ends_sentence(before.trim_start_matches(is_opener), next, next_upper)
}

/// Titles (lower case, no final dot) after which a capitalised full stop never ends a sentence:
/// "Dr. Patel" (but "80 ms. Then" does end one).
#[rustfmt::skip]
pub(super) const TITLES: &[&str] = &[
    "mr", "mrs", "ms", "mx", "dr", "prof", "st", "mt", "rev", "hon", "gen", "col", "capt", "lt",
    "sgt", "fig", "figs", "eq", "vol", "dept", "ref", "tel", "ext", "attn",
];

/// Abbreviations after which a full stop never ends a sentence, in any case.
#[rustfmt::skip]
pub(super) const LATIN: &[&str] = &[
    "e.g", "eg", "i.e", "ie", "vs", "v", "cf", "approx", "appx", "incl", "esp", "pp", "ca", "resp",
    "viz", "a.k.a", "aka",
];

/// Abbreviations that often end a sentence: it ends there when the next word is capitalised.
#[rustfmt::skip]
pub(super) const SENTENCE_FINAL_ABBREVIATIONS: &[&str] = &[
    "etc", "a.m", "p.m", "inc", "ltd", "co", "corp", "llc", "plc", "gmbh", "jr", "sr", "bros", "al",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "ph.d",
    "phd", "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun", "min", "mins",
    "sec", "secs", "hr", "hrs", "ave", "blvd",
];

/// Capitalised words that typically open a sentence (used after initials and acronyms).
#[rustfmt::skip]
pub(super) const SENTENCE_OPENERS: &[&str] = &[
    "the", "a", "an", "this", "that", "these", "those", "there", "here", "it", "its", "he", "she",
    "they", "we", "i", "you", "our", "my", "his", "her", "their", "your", "in", "on", "at", "after",
    "before", "then", "but", "and", "so", "also", "however", "meanwhile", "next", "finally",
    "today", "tomorrow", "yesterday", "when", "if", "as", "for", "with", "what", "why", "how",
    "who", "where", "please", "let", "everyone", "nobody", "some", "all", "both", "each", "yes",
    "no", "ok", "okay", "thanks", "anyway", "well", "oh", "last", "since",
];

pub(super) fn period_ends_sentence(before: &str, next: &str, next_upper: bool) -> bool {
    if before.is_empty() {
        return true;
    }
    let lower = before.to_lowercase();
    let lower = lower.as_str();
    if lower == "no" || lower == "nos" {
        return !next.starts_with(|c: char| c.is_ascii_digit() || c == '#');
    }
    let title = TITLES.contains(&lower) && before.starts_with(char::is_uppercase);
    if title || LATIN.contains(&lower) {
        return false;
    }
    if SENTENCE_FINAL_ABBREVIATIONS.contains(&lower) {
        return next_upper;
    }
    let mut letters = before.chars();
    let initial = letters.next().is_some_and(char::is_uppercase) && letters.next().is_none();
    if initial || is_acronym(before) {
        return is_sentence_opener(next);
    }
    true
}

/// "U.S", "U.K", "E.U": single letters separated by dots.
pub(super) fn is_acronym(word: &str) -> bool {
    word.contains('.')
        && word.split('.').all(|part| {
            let mut chars = part.chars();
            chars.next().is_some_and(char::is_alphabetic) && chars.next().is_none()
        })
}

/// Whether `word` (as written after a full stop) is a capitalised typical sentence opener.
pub(super) fn is_sentence_opener(word: &str) -> bool {
    let letters: String = word.chars().take_while(|c| c.is_alphabetic()).collect();
    let rest = &word[letters.len()..];
    if letters.chars().count() == 1 && rest.starts_with('.') {
        return false; // another initial: "J. R. R."
    }
    letters.starts_with(char::is_uppercase)
        && SENTENCE_OPENERS.contains(&letters.to_lowercase().as_str())
}

/// Whitespace collapsed to single spaces and `**` bold markers removed (not inside backticks),
/// with the byte offset in `text` of each character of the result (a collapsed space maps to
/// its first whitespace character).
pub(super) fn normalize_inline(text: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(text.len());
    let mut origins = Vec::with_capacity(text.len());
    let mut in_code = false;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c == '`' {
            in_code = !in_code;
        } else if c == '*' && !in_code && chars.peek().is_some_and(|&(_, next)| next == '*') {
            chars.next();
            continue;
        }
        if c.is_whitespace() {
            if !out.is_empty() && !out.ends_with(' ') {
                out.push(' ');
                origins.push(at);
            }
        } else {
            out.push(c);
            origins.push(at);
        }
    }
    if out.ends_with(' ') {
        out.pop();
        origins.pop();
    }
    (out, origins)
}
