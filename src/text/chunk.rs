//! Structure-aware chunking of a parsed document for the Context Vault.
//!
//! A document arrives as [`Section`]s (a section path such as `Setup > Linux` or `Page 3`, and
//! its text). [`chunk_sections`] cuts each section on its own into [`ChunkDraft`]s:
//!
//! - **Sections are never mixed.** A chunk lies inside one section and carries its path;
//!   sections are not merged, however small (a tiny section is one small chunk), so a chunk's
//!   `section_path` is always exactly where its text sits. An empty or whitespace-only section
//!   makes no chunk.
//! - **Units.** Prose is read as the segments of
//!   [`sentence_spans`](crate::text::atomize::sentence_spans)' segmentation (sentences,
//!   list items, chat turns, fenced code blocks, plus the heading and label lines that
//!   [`crate::text::atomize::split_sentences`] leaves out), so a chunk boundary always falls
//!   between two sentences. A *line-oriented* section (see `is_line_oriented`: spreadsheet or
//!   CSV rows arriving one per line as `Header: value; Header: value`, or a list of mostly
//!   unpunctuated lines that is not hard-wrapped prose) is read line by line instead, and a
//!   line is never split.
//! - **Packing.** Units are added while the chunk stays within `target_tokens`. The cut then
//!   prefers a paragraph end (a blank line, or a heading): when the chunk holds one after at
//!   least half the target, it is cut at the last such; otherwise, when the current paragraph
//!   ends within `max_tokens`, the chunk runs on to that end. A chunk never ends on a
//!   heading (the heading opens the next chunk), and a remainder of the section smaller than a
//!   quarter of the target joins the last chunk when both fit in `max_tokens` (no runt chunks).
//!   A section within `target_tokens` therefore stays whole. The finished slice is measured
//!   again and never exceeds `max_tokens`.
//! - **Over-long units.** A single sentence (or line) over `max_tokens` is the one exception
//!   to whole units: it is cut at word boundaries into pieces within `target_tokens`,
//!   preferring a cut after a `;` (a row's field separator), then after a `,`. A single "word"
//!   over the limit (a base64 blob) is cut between characters.
//! - **Overlap.** In prose, a chunk that continues a section starts with the last units of the
//!   previous chunk, as many as fit in `overlap_tokens` (at most half the target), and never
//!   all of that chunk; also after a paragraph end, so that a paragraph opening with "It ..."
//!   keeps its antecedent. None when the chunk opens with a heading, and none between
//!   line-oriented rows (rows stand alone, and repeating them would repeat their facts).
//! - **Content is a slice.** `content` is one contiguous slice of the section's text, from
//!   the start of the chunk's first unit (its line's list marker included) to the end of its
//!   last unit, exactly as written: the overlap is part of that slice, never re-joined text,
//!   so every quote taken from a chunk is a substring of the document's text. (Markup lines
//!   between units, such as code fences, are inside the slice when between two of its units,
//!   and left out at its edges.)
//! - **Contextual content.** `contextual_content` is `"{title}\n{section_path}\n\n{content}"`,
//!   the title and path lines left out when empty (and the blank line too when both are). It
//!   is the string the Vault embeds (MiniLM) and indexes for BM25, so that a chunk reading
//!   "It ships weekly." still matches a search for the document or section it belongs to.
//!   `content` stays the evidence text shown and quoted.
//!
//! Sizes are counted with [`estimate_tokens`]; `index` runs from 0 over the whole document.
//! The output depends only on the input: no randomness, no clock, no hash-map order.

use std::ops::Range;

use memvault_pipelines::model::{ChunkDraft, Section};

use super::atomize::segment_spans;

/// Chunk sizes, in [`estimate_tokens`] units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkConfig {
    /// The size a chunk is filled up to (default 256).
    pub target_tokens: usize,
    /// The hard limit (default 384): only reached to finish a paragraph or to keep a short
    /// remainder, and never passed.
    pub max_tokens: usize,
    /// How much of the previous chunk's end a chunk repeats (default 48).
    pub overlap_tokens: usize,
}

impl Default for ChunkConfig {
    /// 256 / 384 / 48. MiniLM (all-MiniLM-L6-v2) embeds at most 256 wordpieces, and the
    /// estimate follows wordpieces for English prose, so a chunk filled to the target is
    /// embedded (nearly) whole, its title/path prefix taking the last few places; the rarer
    /// chunks between 256 and 384 (a paragraph finished, a short remainder kept) lose their
    /// tail in the vector only, as BM25 indexes the whole text.
    fn default() -> Self {
        ChunkConfig {
            target_tokens: 256,
            max_tokens: 384,
            overlap_tokens: 48,
        }
    }
}

impl ChunkConfig {
    /// The pieces a long chunk is embedded as (see [`chunk_pieces`]): 128 / 192 / 0.
    /// all-MiniLM-L6-v2 was trained on inputs of at most 128 wordpieces and ranks passages of
    /// that length better than whole 256-token chunks; overlap between pieces was worth 0.001
    /// nDCG@10 at most and costs embedding time, so pieces do not overlap (measured on
    /// SciFact: `docs/BENCHMARKS.md`).
    pub const PIECES: ChunkConfig = ChunkConfig {
        target_tokens: 128,
        max_tokens: 192,
        overlap_tokens: 0,
    };
}

/// The shorter passages a chunk is embedded as: its content cut again by the same rules with
/// `config` (sentences kept whole), each as its contextual content
/// (`"{title}\n{section_path}\n\n{piece}"`). None when the content makes a single piece: the
/// chunk is embedded whole.
pub fn chunk_pieces(
    title: &str,
    section_path: &str,
    content: &str,
    config: &ChunkConfig,
) -> Vec<String> {
    let section = Section {
        path: section_path.to_string(),
        text: content.to_string(),
    };
    let pieces = chunk_sections(title, std::slice::from_ref(&section), config);
    if pieces.len() < 2 {
        return Vec::new();
    }
    pieces.into_iter().map(|p| p.contextual_content).collect()
}

/// An estimate of the number of wordpiece tokens (BERT / MiniLM tokenizer) in `text`, without
/// running a tokenizer.
///
/// Whitespace-separated words count 4/3 of a token each (English averages about 1.3
/// wordpieces per word, counting the punctuation attached to words). A word of more than 16
/// characters (a URL, a path, a hash, a long number, an identifier: things the tokenizer
/// breaks into many pieces) counts one token per 4 characters instead, and CJK ideographs and
/// kana, which the tokenizer reads one by one, count one token each. The total is rounded up.
/// Typical English prose of 190 words is estimated at about 256 tokens.
pub fn estimate_tokens(text: &str) -> usize {
    text.split_whitespace()
        .map(word_weight)
        .sum::<usize>()
        .div_ceil(3)
}

/// A word's cost in thirds of a token (see [`estimate_tokens`]).
fn word_weight(word: &str) -> usize {
    let mut cjk: usize = 0;
    let mut other: usize = 0;
    for c in word.chars() {
        if is_cjk(c) {
            cjk += 1;
        } else {
            other += 1;
        }
    }
    let rest = match other {
        0 => 0,
        1..=16 => 4,
        n => (3 * n).div_ceil(4),
    };
    3 * cjk + rest
}

fn is_cjk(c: char) -> bool {
    matches!(
        c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xAC00..=0xD7AF
    )
}

/// Chunks of a document: each section cut on its own (see the module documentation), in
/// section order, `index` counting from 0 over the whole document.
pub fn chunk_sections(title: &str, sections: &[Section], config: &ChunkConfig) -> Vec<ChunkDraft> {
    let limits = Limits::new(config);
    let mut out = Vec::new();
    for section in sections {
        let text = section.text.as_str();
        if text.trim().is_empty() {
            continue;
        }
        let line_oriented = is_line_oriented(text);
        let units = if line_oriented {
            line_units(text, &limits)
        } else {
            prose_units(text, &limits)
        };
        let measure = |range: Range<usize>| -> usize {
            estimate_tokens(&text[units[range.start].range.start..units[range.end - 1].range.end])
        };
        for range in pack(&units, &limits, !line_oriented, measure) {
            let content = &text[units[range.start].range.start..units[range.end - 1].range.end];
            out.push(ChunkDraft {
                index: out.len() as u32,
                section_path: section.path.clone(),
                content: content.to_string(),
                contextual_content: contextual_content(title, &section.path, content),
            });
        }
    }
    out
}

/// `"{title}\n{section_path}\n\n{content}"`, without the empty lines of a missing title or
/// path.
pub fn contextual_content(title: &str, section_path: &str, content: &str) -> String {
    let header: Vec<&str> = [title.trim(), section_path.trim()]
        .into_iter()
        .filter(|line| !line.is_empty())
        .collect();
    if header.is_empty() {
        content.to_string()
    } else {
        format!("{}\n\n{content}", header.join("\n"))
    }
}

/// Whether a section's text is line-oriented: rows of a sheet (`Header: value; Header:
/// value`, more than half of the lines) or lines that mostly lack final punctuation without
/// reading as hard-wrapped prose (fewer than a quarter of them are lines of 30+ characters
/// going on in lower case on the next line). It takes at least two non-blank lines.
pub(crate) fn is_line_oriented(text: &str) -> bool {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    if lines.len() < 2 {
        return false;
    }
    let rows = lines.iter().filter(|line| is_row(line)).count();
    if rows * 2 > lines.len() {
        return true;
    }
    let open = lines.iter().filter(|line| !ends_with_stop(line)).count();
    let wrapped = lines
        .windows(2)
        .filter(|pair| {
            pair[0].chars().count() >= 30
                && !ends_with_stop(pair[0])
                && pair[1].starts_with(char::is_lowercase)
        })
        .count();
    open * 2 > lines.len() && wrapped * 4 < lines.len()
}

/// The `Header: value` fields of a row line (split at `;`), when it has at least two fields
/// shaped like that (a header of at most 6 words and 60 bytes, not a URL scheme).
pub(crate) fn row_fields(line: &str) -> Option<Vec<(&str, &str)>> {
    let mut fields = Vec::new();
    for field in line.split(';') {
        let field = field.trim();
        if field.is_empty() {
            continue;
        }
        let (header, value) = field.split_once(':')?;
        let header = header.trim();
        let shaped = !header.is_empty()
            && header.len() <= 60
            && header.split_whitespace().count() <= 6
            && !value.starts_with("//");
        if !shaped {
            return None;
        }
        fields.push((header, value.trim()));
    }
    (fields.len() >= 2).then_some(fields)
}

fn is_row(line: &str) -> bool {
    row_fields(line).is_some()
}

/// Whether a line ends like a sentence: `.`, `!`, `?` or `…`, maybe before closing quotes or
/// brackets.
fn ends_with_stop(line: &str) -> bool {
    line.trim_end_matches(['"', '\'', ')', ']', '\u{201D}', '\u{2019}', '*'])
        .ends_with(['.', '!', '?', '…'])
}

// ----- units -----------------------------------------------------------------------------------

/// A piece of a section the packer does not cut.
#[derive(Debug, Clone)]
struct Unit {
    /// Its bytes in the section text, trimmed, from its line's start when nothing precedes it
    /// on that line but a list marker or a chat timestamp.
    range: Range<usize>,
    /// Tokens from the end of the previous unit to its end (so the gap is counted once).
    cost: usize,
    /// A paragraph starts here: a blank line before it, or a heading on either side.
    paragraph: bool,
    heading: bool,
}

/// The sizes in use: the target within the maximum, the overlap at most half the target.
struct Limits {
    target: usize,
    max: usize,
    overlap: usize,
}

impl Limits {
    fn new(config: &ChunkConfig) -> Self {
        let max = config.max_tokens.max(1);
        let target = config.target_tokens.clamp(1, max);
        Limits {
            target,
            max,
            overlap: config.overlap_tokens.min(target / 2),
        }
    }
}

/// Units of prose: segments (sentences, list items, code blocks, headings), over-long ones cut.
fn prose_units(text: &str, limits: &Limits) -> Vec<Unit> {
    let mut units = Vec::new();
    let mut previous_end = 0;
    for (span, heading) in segment_spans(text) {
        let line_start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
        let mut start = line_start.max(previous_end);
        start += text[start..span.start].len() - text[start..span.start].trim_start().len();
        let gap = &text[previous_end..start];
        let paragraph = units.is_empty()
            || heading
            || units.last().is_some_and(|u: &Unit| u.heading)
            || has_blank_line(gap);
        push_unit(
            &mut units,
            text,
            previous_end,
            start..span.end,
            paragraph,
            heading,
            limits,
        );
        previous_end = span.end;
    }
    units
}

/// Units of a line-oriented section: its non-blank lines, trimmed.
fn line_units(text: &str, limits: &Limits) -> Vec<Unit> {
    let mut units = Vec::new();
    let mut previous_end = 0;
    let mut blank = true;
    let mut offset = 0;
    for raw in text.split_inclusive('\n') {
        let line_start = offset;
        offset += raw.len();
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            blank = true;
            continue;
        }
        let start = line_start + (raw.len() - raw.trim_start().len());
        let range = start..start + trimmed.len();
        push_unit(
            &mut units,
            text,
            previous_end,
            range.clone(),
            blank,
            false,
            limits,
        );
        previous_end = range.end;
        blank = false;
    }
    units
}

/// Whether `gap` holds a blank line: two line breaks with only whitespace between them.
fn has_blank_line(gap: &str) -> bool {
    let lines: Vec<&str> = gap.split('\n').collect();
    lines.len() > 2
        && lines[1..lines.len() - 1]
            .iter()
            .any(|l| l.trim().is_empty())
}

/// Pushes `text[range]` as one unit, or as pieces when it is over the maximum.
fn push_unit(
    units: &mut Vec<Unit>,
    text: &str,
    previous_end: usize,
    range: Range<usize>,
    paragraph: bool,
    heading: bool,
    limits: &Limits,
) {
    let cost = estimate_tokens(&text[previous_end.min(range.start)..range.end]);
    if cost <= limits.max {
        units.push(Unit {
            range,
            cost,
            paragraph,
            heading,
        });
        return;
    }
    let gap = previous_end.min(range.start)..range.start;
    for (i, piece) in split_over_long(text, range, limits.target)
        .into_iter()
        .enumerate()
    {
        let counted = if i == 0 { gap.start } else { piece.start };
        units.push(Unit {
            cost: estimate_tokens(&text[counted..piece.end]),
            range: piece,
            paragraph: paragraph && i == 0,
            heading: false,
        });
    }
}

/// `text[range]` cut into pieces of at most `target` tokens at word boundaries, preferring a
/// cut after a word ending in `;`, then `,` (when the piece keeps at least half the target),
/// and cutting a single word over the target between characters.
fn split_over_long(text: &str, range: Range<usize>, target: usize) -> Vec<Range<usize>> {
    let budget = target * 3; // in thirds, as `word_weight` counts
    let words: Vec<Range<usize>> = word_ranges(&text[range.clone()])
        .into_iter()
        .flat_map(|word| {
            let word = word.start + range.start..word.end + range.start;
            split_word(text, word, target)
        })
        .collect();
    let mut pieces = Vec::new();
    let mut first = 0;
    let mut weight = 0;
    let mut i = 0;
    while i < words.len() {
        let w = word_weight(&text[words[i].clone()]);
        if i > first && weight + w > budget {
            // The last `;` (else `,`) inside the piece that keeps half the budget before it.
            let mut best = i;
            let mut kept = 0;
            let mut cut_at = [None, None];
            for (j, word) in words.iter().enumerate().take(i).skip(first) {
                kept += word_weight(&text[word.clone()]);
                if kept * 2 >= budget {
                    if text[word.clone()].ends_with(';') {
                        cut_at[0] = Some(j + 1);
                    } else if text[word.clone()].ends_with(',') {
                        cut_at[1] = Some(j + 1);
                    }
                }
            }
            if let Some(cut) = cut_at[0].or(cut_at[1]) {
                best = cut;
            }
            pieces.push(words[first].start..words[best - 1].end);
            first = best;
            weight = 0;
            i = best;
            continue;
        }
        weight += w;
        i += 1;
    }
    if first < words.len() {
        pieces.push(words[first].start..words[words.len() - 1].end);
    }
    pieces
}

/// Byte ranges of the whitespace-separated words of `text`.
fn word_ranges(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push(s..i);
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(s..text.len());
    }
    out
}

/// A word over `target` tokens cut between characters into pieces of `4 * target` characters
/// (each then estimated at `target` tokens); other words as they are.
fn split_word(text: &str, word: Range<usize>, target: usize) -> Vec<Range<usize>> {
    if word_weight(&text[word.clone()]) <= target * 3 {
        return vec![word];
    }
    let per_piece = (4 * target).max(17);
    let mut pieces = Vec::new();
    let mut start = word.start;
    let mut count = 0;
    for (i, c) in text[word.clone()].char_indices() {
        let cjk_full = is_cjk(c) && count >= target;
        if count >= per_piece || cjk_full {
            pieces.push(start..word.start + i);
            start = word.start + i;
            count = 0;
        }
        count += 1;
    }
    pieces.push(start..word.end);
    pieces
}

// ----- packing ---------------------------------------------------------------------------------

/// Chunks as ranges of unit indexes (see the module documentation for the rules).
/// `measure` gives the estimate of a run of units as one slice: the unit costs bound it from
/// above, except where a unit boundary falls inside a word (a giant word cut between
/// characters), so the result is checked with it.
fn pack(
    units: &[Unit],
    limits: &Limits,
    overlap: bool,
    measure: impl Fn(Range<usize>) -> usize,
) -> Vec<Range<usize>> {
    let cost = |range: Range<usize>| -> usize { units[range].iter().map(|u| u.cost).sum() };
    let mut chunks: Vec<Range<usize>> = Vec::new();
    let mut start = 0;
    while start < units.len() {
        // The overlap: the previous chunk's last units, within the overlap budget, never all.
        let mut first = start;
        if let Some(previous) = chunks.last().filter(|_| overlap && !units[start].heading) {
            let mut taken = 0;
            while first > previous.start + 1
                && !units[first - 1].heading
                && taken + units[first - 1].cost <= limits.overlap
            {
                first -= 1;
                taken += units[first].cost;
            }
            while first < start && taken + units[start].cost > limits.max {
                taken -= units[first].cost;
                first += 1;
            }
        }
        let mut total = cost(first..start + 1);
        let mut end = start + 1;
        while end < units.len() && total + units[end].cost <= limits.target {
            total += units[end].cost;
            end += 1;
        }
        if end < units.len() && !units[end].paragraph {
            // Cut at the last paragraph end that keeps half the target, or else finish the
            // paragraph when that fits in the maximum.
            let paragraph_end = (start + 1..end)
                .rev()
                .find(|&b| units[b].paragraph && cost(first..b) * 2 >= limits.target);
            if let Some(cut) = paragraph_end {
                end = cut;
                total = cost(first..end);
            } else {
                let mut run_total = total;
                let mut run_end = end;
                while run_end < units.len()
                    && !units[run_end].paragraph
                    && run_total + units[run_end].cost <= limits.max
                {
                    run_total += units[run_end].cost;
                    run_end += 1;
                }
                if run_end == units.len() || units[run_end].paragraph {
                    (end, total) = (run_end, run_total);
                }
            }
        }
        // A heading opens the next chunk rather than ending this one.
        while end - 1 > start && units[end - 1].heading {
            end -= 1;
            total -= units[end].cost;
        }
        if units[end - 1].heading && end < units.len() && total + units[end].cost <= limits.max {
            total += units[end].cost;
            end += 1;
        }
        // No runt: a small remainder joins this chunk when both fit.
        let rest = cost(end..units.len());
        if end < units.len() && rest * 4 < limits.target && total + rest <= limits.max {
            end = units.len();
        }
        // The slice itself within the maximum: drop trailing units, then overlap, if not.
        while measure(first..end) > limits.max && (end - 1 > start || first < start) {
            if end - 1 > start {
                end -= 1;
            } else {
                first += 1;
            }
        }
        chunks.push(first..end);
        start = end;
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_longer_than_a_piece_is_cut_again_into_contextual_pieces() {
        let sentence = |n: usize| format!("Sentence {n} says something plain about the topic. ");
        let content: String = (0..20)
            .map(sentence)
            .collect::<String>()
            .trim_end()
            .to_string();
        assert!(estimate_tokens(&content) > ChunkConfig::PIECES.target_tokens);
        let pieces = chunk_pieces("Title", "Part > Section", &content, &ChunkConfig::PIECES);
        assert!(pieces.len() >= 2, "{pieces:?}");
        for piece in &pieces {
            let body = piece
                .strip_prefix("Title\nPart > Section\n\n")
                .expect("each piece carries the title and section path");
            assert!(
                content.contains(body),
                "a piece is a slice of the chunk: {body}"
            );
            assert!(estimate_tokens(body) <= ChunkConfig::PIECES.max_tokens);
            assert!(body.ends_with('.'), "pieces end between sentences: {body}");
        }
        // Every sentence in exactly one piece: the pieces cover the chunk without overlap.
        for n in 0..20 {
            let holding = pieces
                .iter()
                .filter(|p| p.contains(&format!("Sentence {n} ")))
                .count();
            assert_eq!(holding, 1, "sentence {n}: {pieces:?}");
        }
        // A chunk that fits in one piece is read whole only.
        assert!(chunk_pieces("Title", "", "One short sentence.", &ChunkConfig::PIECES).is_empty());
    }
    use crate::text::atomize::sentence_spans;

    fn section(path: &str, text: &str) -> Section {
        Section {
            path: path.to_string(),
            text: text.to_string(),
        }
    }

    /// A long text of numbered, distinct sentences in paragraphs of `per_paragraph`.
    fn generated(sentences: usize, per_paragraph: usize) -> String {
        let mut text = String::new();
        for i in 0..sentences {
            if i > 0 {
                text.push_str(if i % per_paragraph == 0 { "\n\n" } else { " " });
            }
            text.push_str(&format!(
                "Sentence number {i} explains that the river delta holds {} tonnes of silt \
                 and feeds the wetlands downstream.",
                i * 7
            ));
        }
        text
    }

    /// Where a chunk's content sits in the section text (the generated texts are unique).
    fn offset(text: &str, content: &str) -> Range<usize> {
        let start = text
            .find(content)
            .expect("content is a slice of the section");
        start..start + content.len()
    }

    #[test]
    fn estimate_counts_words_long_tokens_and_cjk() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("one two three"), 4); // 3 * 4/3
        assert_eq!(estimate_tokens("a b c d e f"), 8);
        let url = "https://example.com/a/very/long/path/to/a/resource"; // 50 chars
        assert_eq!(estimate_tokens(url), 13);
        assert_eq!(estimate_tokens("東京都"), 3);
        let prose = "word ".repeat(192);
        assert_eq!(estimate_tokens(&prose), 256);
    }

    #[test]
    fn chunk_sizes_stay_within_bounds_on_a_long_text() {
        let text = generated(200, 6);
        let config = ChunkConfig::default();
        let chunks = chunk_sections("Delta", &[section("Geography", &text)], &config);
        assert!(chunks.len() >= 8, "{} chunks", chunks.len());
        for chunk in &chunks {
            let tokens = estimate_tokens(&chunk.content);
            assert!(tokens <= config.max_tokens, "{tokens} tokens");
        }
        // All but the last are filled to at least half the target.
        for chunk in &chunks[..chunks.len() - 1] {
            assert!(estimate_tokens(&chunk.content) * 2 >= config.target_tokens);
        }
        // Smaller settings are honoured too.
        let small = ChunkConfig {
            target_tokens: 60,
            max_tokens: 90,
            overlap_tokens: 20,
        };
        for chunk in chunk_sections("", &[section("", &text)], &small) {
            assert!(estimate_tokens(&chunk.content) <= 90);
        }
    }

    #[test]
    fn sentences_are_never_cut_and_every_sentence_is_covered() {
        let text = generated(120, 5);
        let config = ChunkConfig {
            target_tokens: 80,
            max_tokens: 120,
            overlap_tokens: 30,
        };
        let chunks = chunk_sections("", &[section("", &text)], &config);
        let ranges: Vec<Range<usize>> = chunks.iter().map(|c| offset(&text, &c.content)).collect();
        for span in sentence_spans(&text) {
            for range in &ranges {
                let inside = range.start <= span.start && span.end <= range.end;
                let apart = span.end <= range.start || range.end <= span.start;
                assert!(inside || apart, "{span:?} cut by {range:?}");
            }
            assert!(ranges
                .iter()
                .any(|r| r.start <= span.start && span.end <= r.end));
        }
    }

    #[test]
    fn an_over_long_sentence_is_split_at_word_boundaries() {
        let long = format!(
            "The list goes on {} and ends here.",
            "with more words, ".repeat(400)
        );
        let text = format!("A short opening sentence. {long} A closing sentence.");
        let config = ChunkConfig::default();
        let chunks = chunk_sections("", &[section("Long", &text)], &config);
        assert!(chunks.len() >= 3);
        for chunk in &chunks {
            assert!(estimate_tokens(&chunk.content) <= config.max_tokens);
            let range = offset(&text, &chunk.content);
            // Cuts fall between words.
            assert!(range.start == 0 || text[..range.start].ends_with(' '));
            assert!(range.end == text.len() || text[range.end..].starts_with(' '));
        }
        let words: usize = chunks
            .iter()
            .map(|c| c.content.split_whitespace().count())
            .sum();
        assert!(words >= text.split_whitespace().count());
        // A giant single token is cut between characters, within the limit.
        let blob = "x".repeat(5_000);
        let chunks = chunk_sections("", &[section("", &blob)], &config);
        assert!(chunks.len() >= 4);
        assert!(chunks.iter().all(|c| estimate_tokens(&c.content) <= 384));
        assert_eq!(chunks.iter().map(|c| c.content.len()).sum::<usize>(), 5_000);
    }

    #[test]
    fn overlap_repeats_the_previous_chunks_last_sentences_in_the_same_section() {
        let text = generated(60, 100); // one paragraph: every cut is inside it
        let config = ChunkConfig {
            target_tokens: 100,
            max_tokens: 150,
            overlap_tokens: 40,
        };
        let chunks = chunk_sections("", &[section("A", &text), section("B", &text)], &config);
        let a: Vec<&ChunkDraft> = chunks.iter().filter(|c| c.section_path == "A").collect();
        assert!(a.len() >= 3);
        for pair in a.windows(2) {
            let previous = offset(&text, &pair[0].content);
            let next = offset(&text, &pair[1].content);
            assert!(
                next.start < previous.end,
                "no overlap: {previous:?} {next:?}"
            );
            assert!(next.start > previous.start, "a whole chunk repeated");
            let repeated = &text[next.start..previous.end];
            assert!(estimate_tokens(repeated) <= 40, "{repeated:?}");
            assert!(sentence_spans(&text).iter().any(|s| s.start == next.start));
        }
        // The first chunk of section B does not start with section A's text.
        let first_b = chunks.iter().find(|c| c.section_path == "B").unwrap();
        assert!(first_b.content.starts_with("Sentence number 0 "));
        // No overlap at all when it is set to 0.
        let none = ChunkConfig {
            overlap_tokens: 0,
            ..config
        };
        let chunks = chunk_sections("", &[section("A", &text)], &none);
        for pair in chunks.windows(2) {
            assert!(offset(&text, &pair[1].content).start >= offset(&text, &pair[0].content).end);
        }
    }

    #[test]
    fn chunks_never_span_sections_and_indexes_run_over_the_document() {
        let sections = vec![
            section("Intro", "Short intro sentence here."),
            section("Empty", "  \n\t \n"),
            section("Body > Part 1", &generated(40, 4)),
            section(
                "Body > Part 2",
                "Another short section. It has two sentences.",
            ),
        ];
        let chunks = chunk_sections("Report", &sections, &ChunkConfig::default());
        for (i, chunk) in chunks.iter().enumerate() {
            assert_eq!(chunk.index as usize, i);
            let section = sections
                .iter()
                .find(|s| s.path == chunk.section_path)
                .unwrap();
            assert!(section.text.contains(&chunk.content));
        }
        assert!(chunks.iter().all(|c| c.section_path != "Empty"));
        // Short sections stay whole, in order.
        assert_eq!(chunks[0].content, "Short intro sentence here.");
        assert_eq!(
            chunks.last().unwrap().content,
            "Another short section. It has two sentences."
        );
        assert!(
            chunks
                .iter()
                .filter(|c| c.section_path == "Body > Part 1")
                .count()
                >= 2
        );
        // Deterministic.
        assert_eq!(
            chunks,
            chunk_sections("Report", &sections, &ChunkConfig::default())
        );
        assert!(chunk_sections("T", &[], &ChunkConfig::default()).is_empty());
    }

    #[test]
    fn paragraph_ends_are_preferred_and_headings_open_chunks() {
        let para = |tag: &str, n: usize| -> String {
            (0..n)
                .map(|i| format!("Paragraph {tag} states point {i} about the harbour cranes."))
                .collect::<Vec<_>>()
                .join(" ")
        };
        // Two paragraphs of ~150 tokens each: a cut inside either would be possible, the one
        // between them is chosen.
        let text = format!("{}\n\n{}", para("one", 11), para("two", 11));
        let chunks = chunk_sections("", &[section("", &text)], &ChunkConfig::default());
        assert_eq!(chunks.len(), 2, "{chunks:#?}");
        assert!(chunks[0]
            .content
            .ends_with("point 10 about the harbour cranes."));
        // The second chunk opens with the overlap, then the second paragraph.
        let (overlap, rest) = chunks[1].content.split_once("\n\n").unwrap();
        assert!(overlap.starts_with("Paragraph one") && estimate_tokens(overlap) <= 48);
        assert!(rest.starts_with("Paragraph two states point 0"));
        // A heading never ends a chunk.
        let text = format!("{}\n\n## Cranes\n\n{}", para("one", 16), para("two", 8));
        let chunks = chunk_sections("", &[section("", &text)], &ChunkConfig::default());
        assert!(chunks.iter().all(|c| !c.content.ends_with("## Cranes")));
        assert!(chunks.iter().any(|c| c.content.starts_with("## Cranes")));
    }

    #[test]
    fn line_oriented_rows_are_never_split() {
        let rows: Vec<String> = (0..120)
            .map(|i| {
                format!(
                    "Region: Zone {i}; Revenue: {}.5 million; Manager: Person {i}; Notes: grew \
                     steadily. Margin improved",
                    i * 3
                )
            })
            .collect();
        let text = rows.join("\n");
        assert!(is_line_oriented(&text));
        for target in (40..=256).step_by(9) {
            let config = ChunkConfig {
                target_tokens: target,
                max_tokens: target * 3 / 2,
                overlap_tokens: target / 4,
            };
            let chunks = chunk_sections("Sales", &[section("Sheet1 > Rows 2-121", &text)], &config);
            assert!(chunks.len() >= 4);
            let mut seen = 0;
            for chunk in &chunks {
                assert!(estimate_tokens(&chunk.content) <= config.max_tokens);
                for line in chunk.content.lines() {
                    assert!(rows.contains(&line.to_string()), "split row {line:?}");
                    seen += 1;
                }
            }
            // Every row once: no overlap between rows.
            assert_eq!(seen, rows.len());
        }
        // Unpunctuated lines are rows too; hard-wrapped prose is not.
        assert!(is_line_oriented("apples 3\npears 5\nplums 7"));
        let wrapped = "The committee reviewed the proposal in detail and found that\nthe \
                       budget was far too low for the planned work, so it asked\nfor a \
                       revision before the next meeting of the board.";
        assert!(!is_line_oriented(wrapped));
        assert!(!is_line_oriented("One line only: no"));
    }

    #[test]
    fn contextual_content_format() {
        let sections = [section("Setup > Linux", "Install the package. Run it.")];
        let chunk = &chunk_sections("Guide", &sections, &ChunkConfig::default())[0];
        assert_eq!(
            chunk.contextual_content,
            "Guide\nSetup > Linux\n\nInstall the package. Run it."
        );
        let chunk = &chunk_sections("", &sections, &ChunkConfig::default())[0];
        assert_eq!(
            chunk.contextual_content,
            "Setup > Linux\n\nInstall the package. Run it."
        );
        let untitled = [section("", "Install the package.")];
        let chunk = &chunk_sections("Guide", &untitled, &ChunkConfig::default())[0];
        assert_eq!(chunk.contextual_content, "Guide\n\nInstall the package.");
        let chunk = &chunk_sections(" ", &untitled, &ChunkConfig::default())[0];
        assert_eq!(chunk.contextual_content, "Install the package.");
    }

    #[test]
    fn list_markers_and_markdown_stay_in_the_content() {
        let text = "Steps:\n- Install the package.\n- Run `memvault --init`.\n\n> Quoted note \
                    here.";
        let chunks = chunk_sections("", &[section("Setup", text)], &ChunkConfig::default());
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].content, text);
    }

    #[test]
    fn realistic_encyclopedia_and_filing_paragraphs() {
        let wiki = "The Varnel River is a river in northern Europe. It rises in the Korsa \
                    Hills at an elevation of 1,240 m and flows for 412 km before reaching \
                    the Baltic Sea. The river was first mapped in 1783 by the surveyor Anna \
                    Lindqvist.\n\nIts basin covers about 18,500 km² and is home to roughly \
                    2.1 million people. Several hydroelectric dams were built along it \
                    between 1950 and 1975.";
        let filing = "We operate 214 retail stores in 11 states. Net revenue increased 8.4% \
                      to $1.92 billion in fiscal 2023, compared with fiscal 2022. We may be \
                      unable to renew leases on favorable terms.";
        let sections = [
            section("Geography", wiki),
            section("Item 1. Business", filing),
        ];
        let chunks = chunk_sections("Varnel River", &sections, &ChunkConfig::default());
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].content, wiki);
        assert_eq!(chunks[1].content, filing);
        let small = ChunkConfig {
            target_tokens: 40,
            max_tokens: 60,
            overlap_tokens: 15,
        };
        let chunks = chunk_sections("Varnel River", &sections[..1], &small);
        assert!(chunks.len() >= 2);
        assert!(chunks[0].content.starts_with("The Varnel River is a river"));
        assert!(chunks
            .iter()
            .all(|c| wiki.contains(&c.content) && estimate_tokens(&c.content) <= 60));
    }
}
