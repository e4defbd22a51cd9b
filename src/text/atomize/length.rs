//! Length: over-long sentences cut at clause boundaries, then at a word boundary that fits.

#[allow(clippy::wildcard_imports)]
use super::*;

/// Clause boundaries, best first, each with the fewest words both sides must keep. The text
/// before a match ends a piece; the text after the connective starts the next.
pub(super) const CLAUSE_CUTS: &[(&[&str], usize)] = &[
    (&["; "], 1),
    (
        &[
            ", and ",
            ", but ",
            ", so ",
            ", while ",
            ", whereas ",
            ", then ",
            ", although ",
            ", though ",
        ],
        2,
    ),
    (&[" and ", " but "], 3),
    (&[", "], 3),
    (&[" — ", " – ", " - "], 2),
];

/// Words that cannot open a piece cut off at a comma: "..., e.g. X", "..., such as X".
#[rustfmt::skip]
pub(super) const NOT_A_CLAUSE: &[&str] = &[
    "e.g.", "eg", "i.e.", "ie", "such", "like", "including", "especially", "for", "etc", "etc.",
    "or", "and", "as",
];

/// Words a word-level cut is best placed before: "... reviewed the design | on Tuesday".
#[rustfmt::skip]
pub(super) const PHRASE_STARTS: &[&str] = &[
    "in", "on", "at", "for", "with", "from", "to", "by", "after", "before", "since", "until",
    "during", "because", "and", "but", "or", "which", "who", "that", "when", "where", "while",
];

/// `text` cut into pieces of at most `max` characters: at clause boundaries when possible,
/// otherwise at a space (the last two pieces balanced); a word is never cut. Linear: each cut
/// only looks at the next `max` characters.
pub(super) fn split_long(text: &str, max: usize) -> Vec<String> {
    let text = text.trim();
    let final_mark = text.chars().last().filter(|&c| is_terminal(c));
    let mut pieces = Vec::new();
    let mut rest = text;
    let mut capitalize = false;
    // `limit`: the byte offset of character number `max`, present while `rest` is too long.
    while let Some((limit, _)) = rest.char_indices().nth(max) {
        let cut = clause_cut(rest, limit)
            .map(|(head, tail)| (head, tail, true))
            .or_else(|| word_cut(rest, limit, max).map(|(head, tail)| (head, tail, false)));
        let Some((head_end, tail_start, clause)) = cut else {
            break; // one word longer than the limit: kept whole
        };
        let head = rest[..head_end].trim_end_matches([',', ';', ':', ' ', '-', '–', '—']);
        let mut piece = if capitalize {
            capitalize_first(head)
        } else {
            head.to_string()
        };
        if let Some(mark) = final_mark.filter(|_| clause && !piece.ends_with(is_terminal)) {
            piece.push(if mark == '?' { '.' } else { mark });
        }
        pieces.push(piece);
        capitalize = clause;
        rest = rest[tail_start..].trim_start();
    }
    if !rest.is_empty() {
        pieces.push(if capitalize {
            capitalize_first(rest)
        } else {
            rest.to_string()
        });
    }
    pieces
}

/// The best clause cut of `text` whose head ends before byte `limit` (leaving room for a final
/// full stop): (head end, tail start).
pub(super) fn clause_cut(text: &str, limit: usize) -> Option<(usize, usize)> {
    let has_words = |part: &str, n: usize| {
        part.split(' ')
            .filter(|w| !w.is_empty())
            .nth(n - 1)
            .is_some()
    };
    // Only the first `limit` bytes (plus the longest cut) can hold a cut.
    let window_end = (limit + 12..text.len())
        .find(|&b| text.is_char_boundary(b))
        .unwrap_or(text.len());
    let window = &text[..window_end];
    CLAUSE_CUTS.iter().find_map(|(cuts, min_words)| {
        cuts.iter()
            .flat_map(|cut| {
                window
                    .match_indices(cut)
                    .map(|(at, _)| (at, at + cut.len()))
            })
            .filter(|&(at, tail)| {
                let next = first_word(&text[tail..]).0.to_lowercase();
                at > 0
                    && at < limit
                    && has_words(&text[..at], *min_words)
                    && has_words(&text[tail..], *min_words)
                    && !NOT_A_CLAUSE.contains(&next.as_str())
            })
            .max_by_key(|&(at, _)| at)
    })
}

/// A space to cut `text` at, the head ending at or before byte `limit` (`max` characters):
/// the last such space, or, when the rest would fit in one more piece, the space that best
/// balances the two (preferring one before a preposition or conjunction). The first space if
/// the first word is already too long. Returns (head end, tail start).
pub(super) fn word_cut(text: &str, limit: usize, max: usize) -> Option<(usize, usize)> {
    // (byte, character index) of each space whose head fits, a space at `limit` included.
    let mut spaces: Vec<(usize, usize)> = text[..limit]
        .char_indices()
        .enumerate()
        .filter(|&(_, (byte, c))| c == ' ' && byte > 0)
        .map(|(chars, (byte, _))| (byte, chars))
        .collect();
    if text[limit..].starts_with(' ') {
        spaces.push((limit, max));
    }
    let Some(&(last, _)) = spaces.last() else {
        return text.find(' ').map(|space| (space, space + 1));
    };
    let remainder = text[limit..].chars().take(max + 1).count();
    if remainder > max {
        return Some((last, last + 1));
    }
    // Two pieces left: aim for halves, within what keeps the tail under the limit.
    let total = max + remainder;
    let target = total / 2;
    let score = |&(byte, chars): &(usize, usize)| {
        let distance = chars.abs_diff(target);
        let before_phrase = PHRASE_STARTS.contains(&first_word(&text[byte + 1..]).0);
        let bonus = if before_phrase { 8 } else { 0 };
        (distance.saturating_sub(bonus), !before_phrase)
    };
    spaces
        .iter()
        .filter(|&&(_, chars)| total - chars - 1 <= max)
        .min_by_key(|space| score(space))
        .map(|&(byte, _)| (byte, byte + 1))
        .or(Some((last, last + 1)))
}

/// A code block cut between lines (then between words) to fit `max` characters.
pub(super) fn split_code(code: &str, max: usize) -> Vec<String> {
    let mut pieces: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut current_chars = 0;
    for line in code.lines() {
        let line_chars = line.chars().count();
        if !current.is_empty() && current_chars + 1 + line_chars > max {
            pieces.push(std::mem::take(&mut current));
            current_chars = 0;
        }
        if line_chars > max {
            pieces.extend(split_long(line, max));
            continue;
        }
        if !current.is_empty() {
            current.push('\n');
            current_chars += 1;
        }
        current.push_str(line);
        current_chars += line_chars;
    }
    if !current.trim().is_empty() {
        pieces.push(current);
    }
    pieces
}
