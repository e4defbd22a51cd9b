//! Splitting long notes into atomic memories: short standalone statements, one per fact.
//!
//! Std-only and linear: a note is read once line by line into blocks (paragraphs, list items,
//! chat turns), each block is scanned once for sentence boundaries, and each sentence goes
//! through a fixed series of word-level passes (filler removal, pronoun resolution, length
//! limit). The word lists below are small constant tables.
//!
//! Pipeline of [`atomize`]:
//! 1. [`split_sentences`]-style segmentation; markdown headings and short "Label:" lines become
//!    context rather than sentences.
//! 2. Cleaning: interjections ("lol", "um", emoji) go; leading greetings, discourse fillers
//!    ("So,", "Anyway,", "Oh and") and meta labels ("FYI:", "Quick recap:") are stripped;
//!    questions and sentences without information ("Okay.", "Sounds good.", "Thanks, Alice!")
//!    are dropped.
//! 3. A sentence leaning on the previous one gets its subject back: a leading "she", "it",
//!    "they", "her", "its", ... is replaced by the previous sentence's subject when they agree,
//!    and a subject-less fragment ("Works at SAP now.") gets it prepended.
//! 4. Over-long sentences are cut at clause boundaries (";", ", and", ", but", ...), each later
//!    clause getting its own pronoun resolved ("..., and she works at SAP" -> "Alice works at
//!    SAP").
//! 5. Anything still over the limit is cut at a word boundary that fits; atoms are
//!    deduplicated ignoring case, whitespace and final punctuation.

use std::collections::HashSet;
use std::ops::Range;

/// Sentences of a text: handles abbreviations (Dr., Mr., Mrs., Ms., e.g., i.e., etc., vs., U.S.,
/// a.m./p.m., Inc., Ltd., No.), decimals and versions (3.14, v1.2.3), initials (J. R. R.
/// Tolkien), ellipses, quotes/brackets after the full stop, line breaks, bullet and numbered
/// lists (each item is its own sentence), markdown headings (dropped as sentences but usable as
/// context), and text without final punctuation.
///
/// Details:
/// - A blank line, a list item, a heading, a horizontal rule or a chat turn ("Alice: ...") always
///   starts a new block. A single line break inside a paragraph joins the lines when the text
///   was visibly hard-wrapped: the line ends with a comma, a semicolon or a word such as "and" /
///   "the", or it has 40+ characters and the next line goes on in lower case (or, when the line
///   has no final punctuation, with a digit or an opening bracket). Otherwise the line break
///   ends the sentence, so unpunctuated short lines are sentences of their own.
/// - Headings (`#` to `######`), bold-only lines (`**Decisions**`), short label lines ending
///   in a colon ("Action items:") and an opening title line naming a kind of note ("Chat
///   digest: Sam, 3 June") are not returned. Horizontal rules are skipped. A fenced code block
///   is returned whole, as one entry; a chat turn's label stays on its first sentence.
/// - A full stop ends a sentence when followed by a space (or the end), except after titles and
///   "e.g."-style abbreviations (never), after "etc.", "a.m.", "Inc." and the like (only when the
///   next word is capitalised), after initials and acronyms such as "J." or "U.S." (only when
///   the next word is a typical sentence opener such as "The" or "We"), and after "No." before
///   a number. Ellipses end a sentence only before a capital. "?" and "!" always end one, unless
///   a closing quote follows and the text goes on in lower case (`"Why?" she asked`).
/// - `**bold**` markers are removed and whitespace is collapsed; text in backticks is untouched.
pub fn split_sentences(text: &str) -> Vec<String> {
    parse(text)
        .into_iter()
        .filter(|segment| segment.kind != Kind::Heading)
        .map(|segment| match segment.speaker {
            Some(speaker) if segment.first_in_turn => format!("{speaker}: {}", segment.text),
            _ => segment.text,
        })
        .collect()
}

/// Where the sentences of [`split_sentences`] are in `text`: one byte range per sentence, in
/// order, same count, found by the same segmentation (one implementation: each sentence
/// carries its source range through line joining and inline normalisation).
///
/// A range starts at the sentence's first character and ends after its last, so the slice has
/// no surrounding whitespace. The slice is the source as written, so it may differ from the
/// [`split_sentences`] string by what that normalises: inner line breaks and runs of
/// whitespace (not collapsed here), `**` bold markers (kept; a marker pair right around the
/// sentence is included), and markup at the start of a joined continuation line (a `> `
/// quote marker). List markers before the sentence ("- ", "1. ") are not in the range. The
/// first sentence of a chat turn starts at the speaker label ("Priya: on it" in "\[10:42\]
/// Priya: on it"); a fenced code block is one range, between its fences.
pub fn sentence_spans(text: &str) -> Vec<Range<usize>> {
    parse(text)
        .into_iter()
        .filter(|segment| segment.kind != Kind::Heading)
        .map(|segment| segment.span)
        .collect()
}

/// Every segment of `text` as a byte range, headings and label lines included (`true` for
/// those): what [`sentence_spans`] returns plus the lines [`split_sentences`] drops as
/// context. A heading's range is its whole line, markers included ("## Setup").
pub(crate) fn segment_spans(text: &str) -> Vec<(Range<usize>, bool)> {
    parse(text)
        .into_iter()
        .map(|segment| (segment.span, segment.kind == Kind::Heading))
        .collect()
}

/// Atomic memories from a note: one per self-contained statement, in order, trimmed,
/// deduplicated (case/whitespace-insensitive), each at most `max_chars` characters (split long
/// sentences at ';' or ', and ' / ', but ' clause boundaries when needed; never cut a word).
///
/// Rules:
/// - **Filler is dropped**: greetings and sign-offs ("Hi all,", "Thanks!", "Cheers, Bob"),
///   leading discourse fillers ("So,", "Anyway,", "Well,", "Basically,", "Also,", "Oh and",
///   "Okay so", "As discussed,"), meta labels and intros ("FYI:", "Quick recap of today's
///   sync:", an opening title line such as "Chat digest: Sam, 3 June"), interjections anywhere
///   ("lol", "haha", "um", "uh", "btw", emoticons and emoji), sentences with no information
///   ("Okay.", "Sounds good.", "See you tomorrow.", "Hope you're well!", "Let me know if ...")
///   and lone words ("Alice" under "Thanks!").
/// - **Questions are dropped.**
/// - **Subjects are kept**: a sentence opening with he/she/it/they or his/her/its/their (also
///   after an introductory phrase: "In May, she ...") whose antecedent is the subject of the
///   previous kept sentence gets the pronoun replaced: "She works at SAP now." -> "Alice works
///   at SAP now.", "Her manager is Bob." -> "Alice's manager is Bob.", "She's been ..." ->
///   "Alice has been ...", "They are hiring" (after "Our team") -> "Our team is hiring".
///   Antecedents are capitalised names ("Dr. Patel", "Alice and Bob") and noun phrases opening
///   with a determiner or possessive ("The API", "Our team", "My sister", "Alice's manager";
///   "a"/"this" become "the"). Pronouns must agree: he/she need a person (a name, or a noun
///   such as "sister" or "manager"), it/its a thing, a group or an organisation ("SAP", "Acme
///   Corp", or a bare name said to be a thing: "Stripe is our payment provider"), they/their a
///   plural or a group. When a possessive subject disagrees its owner is tried ("Sarah's
///   birthday ..." then "She turns 30." -> "Sarah turns 30."). A subject-less fragment ("Works
///   at SAP now.", "Also likes hiking.") gets the previous subject prepended, unless it refers
///   to that subject as an object ("Went to visit her."). A heading naming an entity ("##
///   Alice") is the antecedent for the lines below it; a short verbless list item under any
///   other heading is prefixed with it ("## Stack" / "- Rust" -> "Stack: Rust"). First-person
///   statements ("I", "we", "my", "our") are kept as they are and give no antecedent, as is the
///   "it" of "it seems", "it's important to", "it rained".
/// - **Chat turns** ("Sam: ...") keep the speaker label on every atom of the turn, except for
///   "Me:"/"User:", whose first person is the user's own.
/// - **Text is kept intact**: numbers, dates, names, code identifiers and backticked code are
///   never rewritten; only the pronoun or filler at the start changes, and the first letter
///   may then be capitalised.
/// - **Length**: `max_chars` counts characters (not bytes); 0 means no limit. A sentence over
///   the limit is cut at the last fitting "; ", then ", and " / ", but " / ", so " / ", while "
///   / ", whereas " / ", then " / ", although ", then " and " / " but ", then ", " (never before
///   "e.g.", "such as", ...), then a dash, and only then at a space (the last two pieces
///   balanced, preferably before a preposition). Clause pieces get the final full stop and have
///   their own pronouns resolved. A single word longer than the limit is kept whole. A fenced
///   code block is one atom, cut between lines if too long.
pub fn atomize(note: &str, max_chars: usize) -> Vec<String> {
    let limit = if max_chars == 0 {
        usize::MAX
    } else {
        max_chars
    };
    let mut atoms = Atoms::default();
    let mut subject: Option<Subject> = None;
    let mut heading: Option<String> = None;
    for segment in parse(note) {
        match segment.kind {
            Kind::Heading => {
                subject = heading_subject(&segment.text);
                heading = Some(segment.text);
            }
            Kind::Code => {
                for piece in split_code(&segment.text, limit) {
                    atoms.push(&piece);
                }
            }
            Kind::Sentence => {
                let Some(clean) = clean_sentence(&segment.text) else {
                    continue;
                };
                let words = clean.split(' ').count();
                let label = match (segment.speaker.as_deref(), heading.as_deref()) {
                    (Some(speaker), _) if !is_self_label(speaker) => Some(speaker),
                    (None, Some(heading))
                        if segment.item
                            && words <= 4
                            && !clean.contains(':')
                            && !has_verb(&clean) =>
                    {
                        Some(heading)
                    }
                    _ => None,
                };
                if words < 2 && label.is_none() {
                    continue; // a lone word ("Alice" under "Thanks!") states nothing
                }
                let prefix = label.map(|l| format!("{l}: ")).unwrap_or_default();
                let room = limit.saturating_sub(prefix.chars().count()).max(1);
                let resolved = resolve(&clean, &mut subject);
                let sentence_subject = subject.clone();
                for (i, clause) in split_long(&resolved, room).into_iter().enumerate() {
                    if is_no_info(&clause) {
                        continue;
                    }
                    // Later clauses may lean on the first: "..., and she works at SAP".
                    let clause = if i == 0 {
                        clause
                    } else {
                        resolve(&clause, &mut subject)
                    };
                    for piece in split_long(&clause, room) {
                        atoms.push(&format!("{prefix}{piece}"));
                    }
                }
                subject = sentence_subject;
            }
        }
    }
    atoms.list
}

/// Atoms in order, without repeats (case, whitespace and final punctuation ignored).
#[derive(Default)]
struct Atoms {
    list: Vec<String>,
    seen: HashSet<String>,
}

impl Atoms {
    fn push(&mut self, atom: &str) {
        let atom = atom.trim();
        if atom.is_empty() {
            return;
        }
        let key = atom
            .trim_end_matches(|c: char| is_terminal(c) || c.is_whitespace())
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase();
        if self.seen.insert(key) {
            self.list.push(atom.to_string());
        }
    }
}

// ----- segmentation ------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A heading or a label line: context, not a statement.
    Heading,
    /// A sentence of prose, a list item or a chat turn.
    Sentence,
    /// A fenced code block, verbatim.
    Code,
}

#[derive(Debug)]
struct Segment {
    kind: Kind,
    text: String,
    /// Where the segment is in the parsed text (bytes, surrounding whitespace excluded).
    span: Range<usize>,
    /// The label of the chat turn this sentence belongs to ("Alice" in "Alice: hi").
    speaker: Option<String>,
    first_in_turn: bool,
    /// Whether this sentence comes from a list item.
    item: bool,
}

impl Segment {
    fn heading(text: String, span: Range<usize>) -> Self {
        Segment {
            kind: Kind::Heading,
            text,
            span,
            speaker: None,
            first_in_turn: false,
            item: false,
        }
    }
}

/// The paragraph, list item or chat turn being gathered.
#[derive(Default)]
struct Block {
    text: String,
    /// Where each added line starts: (byte offset in `text`, byte offset in the source). A
    /// line is copied verbatim, so any byte of it maps back by its distance from that start.
    origins: Vec<(usize, usize)>,
    speaker: Option<String>,
    /// Where the speaker label starts in the source.
    speaker_at: usize,
    item: bool,
    last_line_chars: usize,
}

impl Block {
    /// Appends `line`, which starts at byte `at` of the source.
    fn add_line(&mut self, line: &str, at: usize) {
        if !self.text.is_empty() {
            self.text.push(' ');
        }
        self.origins.push((self.text.len(), at));
        self.text.push_str(line);
        self.last_line_chars = line.chars().count();
    }

    /// The source offset of byte `at` of `text` (which must lie within an added line).
    fn source_offset(&self, at: usize) -> usize {
        let line = self.origins.partition_point(|&(start, _)| start <= at);
        let (start, source) = self.origins[line.saturating_sub(1)];
        source + (at - start)
    }

    /// Ends the block, appending its sentences to `out`.
    fn flush(&mut self, out: &mut Vec<Segment>, source: &str) {
        let text = std::mem::take(&mut self.text);
        let speaker = self.speaker.take();
        let item = std::mem::take(&mut self.item);
        for (i, (sentence, range)) in split_block(&text).into_iter().enumerate() {
            let last = text[..range.end]
                .chars()
                .next_back()
                .map_or(0, char::len_utf8);
            let mut start = self.source_offset(range.start);
            let mut end = self.source_offset(range.end - last) + last;
            // A bold marker pair right around the sentence: "**Owner:** Alice owns it."
            if source[..start].ends_with("**") {
                start -= 2;
            }
            if source[end..].starts_with("**") {
                end += 2;
            }
            if i == 0 && speaker.is_some() {
                start = self.speaker_at;
            }
            let previous_end = out.last().map_or(0, |segment: &Segment| segment.span.end);
            start = start.max(previous_end).min(end);
            out.push(Segment {
                kind: Kind::Sentence,
                text: sentence,
                span: start..end,
                speaker: speaker.clone(),
                first_in_turn: i == 0,
                item,
            });
        }
        self.origins.clear();
    }

    /// Whether `line` continues this block's last line (hard-wrapped prose).
    fn is_continued_by(&self, line: &str) -> bool {
        if self.text.is_empty() {
            return false;
        }
        // A long line cut mid-sentence, going on in lower case, a bracket or a number.
        let wrapped = self.last_line_chars >= 40 && !self.text.ends_with(is_terminal);
        let goes_on = line.starts_with(|c: char| c.is_lowercase() || c.is_ascii_digit())
            || line.starts_with(['(', '[', '`', '&', '+', '-', '<', '>', '=']);
        if (line.starts_with(char::is_lowercase) && self.last_line_chars >= 40)
            || (wrapped && goes_on)
        {
            return true;
        }
        if self.text.ends_with([',', ';', '(', '&']) {
            return true;
        }
        let last = self.text.rsplit(' ').next().unwrap_or("").to_lowercase();
        CONNECTORS.contains(&last.as_str())
    }
}

/// Words that cannot end a sentence, so a line ending with one continues on the next.
#[rustfmt::skip]
const CONNECTORS: &[&str] = &[
    "and", "or", "but", "the", "a", "an", "to", "of", "with", "for", "in", "on", "at", "by", "from",
    "that", "which", "who", "as", "is", "are", "was", "were", "will", "our", "my", "your",
];

/// Segments of a text, in order: sentences (with their chat speaker), headings and code blocks.
fn parse(text: &str) -> Vec<Segment> {
    // Every line below is a slice of `text`, so its position is its pointer's distance.
    let at = |part: &str| (part.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
    let mut out = Vec::new();
    let mut block = Block::default();
    let mut code: Option<Vec<&str>> = None;
    let mut first_line = true;
    for raw in text.lines() {
        let line = raw.trim();
        if line.starts_with("```") || line.starts_with("~~~") {
            block.flush(&mut out, text);
            match code.take() {
                Some(lines) => push_code(&mut out, &lines, text),
                None => code = Some(Vec::new()),
            }
            continue;
        }
        if let Some(lines) = code.as_mut() {
            lines.push(raw.trim_end());
            continue;
        }
        let line = strip_quote_marker(line);
        let opening = first_line && !line.is_empty();
        first_line &= line.is_empty();
        let line_span = at(line)..at(line) + line.len();
        if line.is_empty() || is_rule(line) {
            block.flush(&mut out, text);
        } else if let Some(title) = atx_heading(line) {
            block.flush(&mut out, text);
            let title = label_text(title);
            if !title.is_empty() {
                out.push(Segment::heading(title, line_span));
            }
        } else if let Some(item) = list_item(line) {
            block.flush(&mut out, text);
            if let Some(label) = label_heading(item) {
                out.push(Segment::heading(label, line_span));
            } else {
                block.item = true;
                block.add_line(item, at(item));
            }
        } else if opening && is_title_line(line) {
            out.push(Segment::heading(label_text(line), line_span));
        } else if let Some(label) = label_heading(line) {
            block.flush(&mut out, text);
            out.push(Segment::heading(label, line_span));
        } else if let Some((speaker, said)) = speaker_turn(line) {
            block.flush(&mut out, text);
            block.speaker = Some(speaker.to_string());
            block.speaker_at = at(speaker);
            block.add_line(said, at(said));
        } else {
            let indented_under_item = block.item && raw.starts_with(char::is_whitespace);
            if !indented_under_item && !block.is_continued_by(line) {
                block.flush(&mut out, text);
            }
            block.add_line(line, at(line));
        }
    }
    block.flush(&mut out, text);
    if let Some(lines) = code {
        push_code(&mut out, &lines, text);
    }
    out
}

/// Whether the opening line of a note is its title: "Chat digest: Sam, 3 June", "Notes from
/// the Q3 planning call" (short, unpunctuated, verbless, naming a kind of note).
fn is_title_line(line: &str) -> bool {
    #[rustfmt::skip]
    const KINDS: &[&str] = &[
        "digest", "notes", "summary", "recap", "minutes", "transcript", "sync", "meeting",
        "standup", "stand-up", "retro", "retrospective", "call", "chat", "update", "log", "agenda",
        "kickoff", "kick-off", "interview", "session", "conversation", "catch-up", "check-in",
        "1:1", "debrief", "journal", "diary",
    ];
    let words: Vec<&str> = line.split_whitespace().collect();
    !line.ends_with(is_terminal)
        && !has_verb(line)
        && words.len() <= 12
        && words
            .iter()
            .any(|w| KINDS.contains(&bare_lower(w).as_str()))
}

/// Whether a text has a word that reads as a finite verb or an auxiliary.
pub(crate) fn has_verb(text: &str) -> bool {
    text.split_whitespace()
        .any(|w| is_auxiliary(w) || is_finite_verb(&bare_lower(w)))
}

/// A fenced code block's lines (slices of `source`, fences excluded) as one segment.
fn push_code(out: &mut Vec<Segment>, lines: &[&str], source: &str) {
    let text = lines.join("\n");
    let text = text.trim_matches('\n');
    if !text.trim().is_empty() {
        let at = |part: &str| (part.as_ptr() as usize).wrapping_sub(source.as_ptr() as usize);
        let mut filled = lines.iter().filter(|line| !line.trim().is_empty());
        let first = filled.next().map_or("", |line| line.trim_start());
        let last = filled.next_back().map_or(first, |line| line.trim_end());
        out.push(Segment {
            kind: Kind::Code,
            text: text.to_string(),
            span: at(first)..at(last) + last.len(),
            speaker: None,
            first_in_turn: true,
            item: false,
        });
    }
}

/// A line without its blockquote markers ("> ").
fn strip_quote_marker(mut line: &str) -> &str {
    while let Some(rest) = line.strip_prefix('>') {
        line = rest.trim_start();
    }
    line
}

/// A horizontal rule or setext underline: "---", "***", "___", "===", "* * *".
fn is_rule(line: &str) -> bool {
    let mut marks = line.chars().filter(|c| !c.is_whitespace());
    let Some(first) = marks.next() else {
        return false;
    };
    let rest: Vec<char> = marks.collect();
    matches!(first, '-' | '*' | '_' | '=') && rest.len() >= 2 && rest.iter().all(|&c| c == first)
}

/// The title of a markdown ATX heading ("## Decisions" -> "Decisions").
fn atx_heading(line: &str) -> Option<&str> {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    if hashes == 0 || hashes > 6 {
        return None;
    }
    let rest = &line[hashes..];
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None; // "#hashtag"
    }
    Some(rest.trim().trim_end_matches('#').trim())
}

/// The text of a bullet or numbered list item, without its marker and checkbox.
fn list_item(line: &str) -> Option<&str> {
    const BULLETS: [char; 9] = ['-', '*', '+', '•', '·', '◦', '‣', '–', '—'];
    let mut chars = line.chars();
    let first = chars.next()?;
    let item = if BULLETS.contains(&first) && chars.next().is_some_and(char::is_whitespace) {
        &line[first.len_utf8()..]
    } else {
        numbered_item(line)?
    };
    let item = item.trim_start();
    let item = ["[ ]", "[x]", "[X]"]
        .iter()
        .find_map(|checkbox| item.strip_prefix(checkbox))
        .unwrap_or(item);
    Some(item.trim())
}

/// The text after "1. ", "12) ", "(3) ", "(b) " or "b) ".
fn numbered_item(line: &str) -> Option<&str> {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=3).contains(&digits) {
        let rest = &line[digits..];
        return rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") "));
    }
    let (inner, rest) = match line.strip_prefix('(') {
        Some(open) => open.split_once(") ")?,
        None => line.split_once(") ")?,
    };
    let numeric =
        !inner.is_empty() && inner.len() <= 3 && inner.bytes().all(|b| b.is_ascii_digit());
    let letter = inner.len() == 1 && inner.bytes().all(|b| b.is_ascii_lowercase());
    (numeric || letter).then_some(rest)
}

/// A line that only labels what follows ("Action items:", "**Decisions**"), as its label text.
fn label_heading(line: &str) -> Option<String> {
    let bold = line.starts_with("**") && (line.ends_with("**") || line.ends_with("**:"));
    let text = label_text(line);
    if text.is_empty() || text.contains(['.', '!', '?', ':', '`']) {
        return None;
    }
    let words = text.split_whitespace().count();
    let colon = line.ends_with(':');
    ((colon && words <= 5) || (bold && words <= 8)).then_some(text)
}

/// A label's text: no bold markers, no final colon.
fn label_text(text: &str) -> String {
    text.replace("**", "")
        .trim()
        .trim_end_matches(':')
        .trim()
        .to_string()
}

/// The speaker and what they said, for a chat line "Alice: ..." or "[10:32] Alice: ...".
fn speaker_turn(line: &str) -> Option<(&str, &str)> {
    let mut body = line;
    if let Some(rest) = line.strip_prefix('[') {
        if let Some((stamp, after)) = rest.split_once(']') {
            if stamp.len() <= 24 {
                body = after.trim_start();
            }
        }
    }
    let (label, said) = body.split_once(':')?;
    if label.len() > 32 || !(said.is_empty() || said.starts_with(char::is_whitespace)) {
        return None;
    }
    let label = label.trim();
    is_speaker_label(label).then(|| (label, said.trim()))
}

/// Whether `label` names a person or handle rather than a topic ("Note", "Action items").
fn is_speaker_label(label: &str) -> bool {
    let words: Vec<&str> = label.split_whitespace().collect();
    let Some(first) = words.first() else {
        return false;
    };
    let lower = label.to_lowercase();
    if words.len() > 3
        || GENERIC_LABELS.contains(&lower.as_str())
        || NOT_A_NAME.contains(&first.to_lowercase().as_str())
    {
        return false;
    }
    if let [handle] = words.as_slice() {
        handle.starts_with(char::is_alphabetic)
            && handle
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-' | '\''))
    } else {
        words.iter().all(|w| {
            w.starts_with(char::is_uppercase)
                && w.chars()
                    .all(|c| c.is_alphabetic() || matches!(c, '.' | '-' | '\''))
        })
    }
}

/// Labels of a "Label: text" line that are topics, not speakers.
#[rustfmt::skip]
const GENERIC_LABELS: &[&str] = &[
    "note", "notes", "nb", "ps", "p.s", "fyi", "btw", "update", "updates", "summary", "recap",
    "tl;dr", "tldr", "context", "background", "decision", "decisions", "action", "actions",
    "action items", "action item", "todo", "to do", "todos", "next steps", "next step", "agenda",
    "attendees", "participants", "present", "absent", "date", "time", "when", "where", "location",
    "venue", "place", "owner", "owners", "status", "priority", "due", "deadline", "topic", "topics",
    "subject", "re", "outcome", "outcomes", "result", "results", "goal", "goals", "objective",
    "problem", "problems", "issue", "issues", "solution", "fix", "risk", "risks", "blocker",
    "blockers", "question", "questions", "answer", "q", "a", "edit", "important", "warning",
    "caution", "reminder", "tip", "hint", "example", "examples", "budget", "cost", "price", "email",
    "phone", "address", "url", "link", "links", "website", "name", "age", "role", "title", "team",
    "project", "version", "release", "environment", "env", "host", "port", "database", "db",
    "stack", "language", "timezone", "pros", "cons", "reason", "why", "how", "what", "who",
    "verdict", "conclusion", "bottom line", "takeaway", "takeaways", "highlights", "details",
    "meeting", "call", "sync", "standup", "retro", "source", "ref", "quote", "bug", "feature",
    "request", "ticket", "task", "tasks", "done", "doing", "wip", "open", "closed", "step", "phase",
    "metrics", "misc", "other", "general", "resources", "follow-up", "follow up", "follow-ups",
    "heads up", "quick update", "quick note", "p.s.", "ps.",
];

/// Sentence-opening words that are never a name ("The", "So", "It", ...).
#[rustfmt::skip]
const NOT_A_NAME: &[&str] = &[
    "the", "a", "an", "so", "and", "but", "or", "my", "our", "your", "his", "her", "its", "their",
    "this", "that", "these", "those", "it", "we", "i", "he", "she", "they", "you", "there", "here",
    "also", "then", "one", "some", "all", "every", "each", "no", "yes", "if", "when", "while",
    "because", "in", "on", "at", "for", "with", "from", "by", "to", "after", "before", "since",
    "until", "during", "as", "what", "why", "how", "who", "where", "which", "please", "let",
    "let's", "just", "only", "maybe", "perhaps", "however", "today", "tomorrow", "yesterday",
    "tonight", "now", "next", "last", "finally", "first", "second", "third", "meanwhile", "instead",
    "otherwise", "again", "already", "currently", "recently", "still", "everyone", "everybody",
    "someone", "somebody", "nobody", "nothing", "everything", "something", "both", "many", "most",
    "few", "several", "overall", "thanks", "thank", "sorry", "ok", "okay", "well", "anyway",
    "basically", "actually", "oh", "hi", "hey", "hello",
];

// ----- sentence boundaries -----------------------------------------------------------------

/// Sentences of one block of prose (its lines already joined), each with its byte range in
/// `text`.
fn split_block(text: &str) -> Vec<(String, Range<usize>)> {
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
fn push_sentence(
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

fn is_terminal(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '…')
}

fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | '\u{201D}' | '\u{2019}' | ')' | ']' | '}' | '\u{00BB}' | '*'
    )
}

fn is_opener(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | '\u{201C}' | '\u{2018}' | '(' | '[' | '{' | '\u{00AB}' | '*' | '`'
    )
}

/// Whether the terminal punctuation `chars[at..end]` (closers up to `after`, a space next)
/// ends the sentence that began at `start`.
fn is_boundary(chars: &[char], start: usize, at: usize, end: usize, after: usize) -> bool {
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
const TITLES: &[&str] = &[
    "mr", "mrs", "ms", "mx", "dr", "prof", "st", "mt", "rev", "hon", "gen", "col", "capt", "lt",
    "sgt", "fig", "figs", "eq", "vol", "dept", "ref", "tel", "ext", "attn",
];

/// Abbreviations after which a full stop never ends a sentence, in any case.
#[rustfmt::skip]
const LATIN: &[&str] = &[
    "e.g", "eg", "i.e", "ie", "vs", "v", "cf", "approx", "appx", "incl", "esp", "pp", "ca", "resp",
    "viz", "a.k.a", "aka",
];

/// Abbreviations that often end a sentence: it ends there when the next word is capitalised.
#[rustfmt::skip]
const SENTENCE_FINAL_ABBREVIATIONS: &[&str] = &[
    "etc", "a.m", "p.m", "inc", "ltd", "co", "corp", "llc", "plc", "gmbh", "jr", "sr", "bros", "al",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "ph.d",
    "phd", "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun", "min", "mins",
    "sec", "secs", "hr", "hrs", "ave", "blvd",
];

/// Capitalised words that typically open a sentence (used after initials and acronyms).
#[rustfmt::skip]
const SENTENCE_OPENERS: &[&str] = &[
    "the", "a", "an", "this", "that", "these", "those", "there", "here", "it", "its", "he", "she",
    "they", "we", "i", "you", "our", "my", "his", "her", "their", "your", "in", "on", "at", "after",
    "before", "then", "but", "and", "so", "also", "however", "meanwhile", "next", "finally",
    "today", "tomorrow", "yesterday", "when", "if", "as", "for", "with", "what", "why", "how",
    "who", "where", "please", "let", "everyone", "nobody", "some", "all", "both", "each", "yes",
    "no", "ok", "okay", "thanks", "anyway", "well", "oh", "last", "since",
];

fn period_ends_sentence(before: &str, next: &str, next_upper: bool) -> bool {
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
fn is_acronym(word: &str) -> bool {
    word.contains('.')
        && word.split('.').all(|part| {
            let mut chars = part.chars();
            chars.next().is_some_and(char::is_alphabetic) && chars.next().is_none()
        })
}

/// Whether `word` (as written after a full stop) is a capitalised typical sentence opener.
fn is_sentence_opener(word: &str) -> bool {
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
fn normalize_inline(text: &str) -> (String, Vec<usize>) {
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

// ----- cleaning ----------------------------------------------------------------------------

/// The sentence without fillers, or `None` for a question or a sentence without information.
fn clean_sentence(sentence: &str) -> Option<String> {
    let without_interjections = remove_interjections(sentence);
    let text = strip_leading_fillers(&without_interjections);
    if text.is_empty()
        || is_question(text)
        || is_no_info(text)
        || is_meta_intro(&text.to_lowercase())
    {
        return None;
    }
    if sentence.starts_with(text) {
        Some(text.to_string())
    } else {
        Some(capitalize_first(text))
    }
}

pub(crate) fn is_question(text: &str) -> bool {
    text.trim_end_matches(is_closer).ends_with('?')
}

/// Whether a word (lower case, no punctuation) is an interjection: "lol", "haha", "um", ...
fn is_interjection(word: &str) -> bool {
    #[rustfmt::skip]
    const INTERJECTIONS: &[&str] = &[
        "btw", "fyi", "lol", "lool", "lolol", "lmao", "lmfao", "rofl", "um", "umm", "ummm", "uh",
        "uhh", "uhm", "er", "erm", "hmm", "hmmm", "hm", "mhm", "xd", "ugh", "meh",
    ];
    if INTERJECTIONS.contains(&word) {
        return true;
    }
    // haha, hahaha, hehe, ahah
    let bytes = word.as_bytes();
    bytes.len() >= 4
        && bytes.len().is_multiple_of(2)
        && bytes
            .chunks(2)
            .all(|pair| matches!(pair, b"ha" | b"he" | b"ah"))
}

fn is_emoji(c: char) -> bool {
    matches!(
        c as u32,
        0x1F000..=0x1FAFF | 0x2600..=0x27BF | 0x2B00..=0x2BFF | 0xFE0F | 0x200D | 0x20E3
    )
}

/// Whether a whitespace-free token is only an interjection, an emoticon or emoji.
fn is_interjection_token(token: &str) -> bool {
    #[rustfmt::skip]
    const EMOTICONS: &[&str] = &[
        ":)", ":-)", ":(", ":-(", ":d", ":-d", ";)", ";-)", ":p", ":-p", "<3", ":/", ":o", "^^",
        "^_^", ":'(",
    ];
    if token.contains('`') {
        return false;
    }
    let core = token.trim_matches(|c: char| !c.is_alphanumeric());
    if core.is_empty() {
        let bare = token.trim_end_matches([',', '.', '!']).to_lowercase();
        return EMOTICONS.contains(&bare.as_str())
            || (token.chars().any(is_emoji)
                && token.chars().all(|c| is_emoji(c) || !c.is_alphanumeric()));
    }
    core.chars().all(|c| c.is_ascii_alphabetic()) && is_interjection(&core.to_lowercase())
}

/// The sentence without interjections, emoticons and emoji; its commas and final mark kept.
fn remove_interjections(sentence: &str) -> String {
    let mut kept: Vec<String> = Vec::new();
    let mut removed_any = false;
    for token in sentence.split(' ') {
        if token.is_empty() {
            continue;
        }
        if !is_interjection_token(token) {
            kept.push(token.to_string());
            continue;
        }
        removed_any = true;
        let Some(last) = kept.last_mut() else {
            continue;
        };
        // "It's, um, broken" -> "It's broken"; "It broke lol." -> "It broke."
        if token.ends_with(',') && last.ends_with(',') {
            last.pop();
        }
        let mark = token.chars().rev().find(|&c| c == '.' || c == '!');
        if let Some(mark) = mark {
            if !last.ends_with(is_terminal) {
                let trimmed = last.trim_end_matches([',', ';', ':']).len();
                last.truncate(trimmed);
                last.push(mark);
            }
        }
    }
    if !removed_any {
        return sentence.to_string();
    }
    kept.join(" ")
}

/// The sentence without leading greetings, meta labels and discourse fillers.
fn strip_leading_fillers(sentence: &str) -> &str {
    let mut text = sentence.trim();
    loop {
        let rest = strip_meta_label(text)
            .or_else(|| strip_greeting(text))
            .or_else(|| strip_discourse_filler(text));
        match rest {
            Some(rest) => text = rest.trim_start_matches([',', ';', ':', '-', '–', '—', ' ']),
            None => return text,
        }
    }
}

/// The first word of `text` and the rest after its space.
fn first_word(text: &str) -> (&str, &str) {
    text.split_once(' ').unwrap_or((text, ""))
}

/// Lower case, without surrounding punctuation (apostrophes inside kept, curly ones straightened).
fn bare_lower(word: &str) -> String {
    word.trim_matches(|c: char| !c.is_alphanumeric())
        .replace('\u{2019}', "'")
        .to_lowercase()
}

/// Text after a leading meta label or intro: "FYI:", "Update:", "Quick recap of the sync:".
fn strip_meta_label(text: &str) -> Option<&str> {
    #[rustfmt::skip]
    const META: &[&str] = &[
        "fyi", "btw", "update", "quick update", "note", "quick note", "ps", "p.s", "tl;dr", "tldr",
        "recap", "quick recap", "summary", "quick summary", "edit", "heads up", "reminder", "nb",
        "n.b",
    ];
    let (label, rest) = text.split_once(':')?;
    let lower = label.trim().to_lowercase();
    let meta = META.contains(&lower.as_str()) || is_meta_intro(&lower);
    (meta && rest.starts_with(' ')).then_some(rest)
}

/// Whether lower-case `text` announces a note rather than saying something ("here's a quick
/// recap of today's sync").
fn is_meta_intro(text: &str) -> bool {
    #[rustfmt::skip]
    const OPENINGS: &[&str] = &[
        "quick ", "a quick ", "just a quick ", "here's ", "here is ", "here are ", "recap of ",
        "summary of ", "notes from ", "notes on ", "notes for ", "minutes from ", "minutes of ",
        "sharing ", "just sharing ", "writing up ", "my notes ", "our notes ", "some notes ",
    ];
    #[rustfmt::skip]
    const NOUNS: &[&str] = &[
        "recap", "summary", "notes", "note", "update", "minutes", "digest", "rundown", "overview",
        "highlights", "takeaways", "writeup", "write-up",
    ];
    let text = text.trim_end_matches(|c: char| !c.is_alphanumeric());
    OPENINGS.iter().any(|o| text.starts_with(o))
        && text.split(' ').count() <= 15
        && text
            .split(' ')
            .any(|w| NOUNS.contains(&bare_lower(w).as_str()))
}

/// Text after a greeting ("Hi all,", "Hey team!", "Good morning everyone,", "Hi Bob,").
fn strip_greeting(text: &str) -> Option<&str> {
    #[rustfmt::skip]
    const GREETINGS: &[&str] = &[
        "hi", "hello", "hey", "heya", "hiya", "yo", "dear", "greetings", "howdy", "morning",
    ];
    #[rustfmt::skip]
    const ADDRESSEES: &[&str] = &[
        "all", "everyone", "everybody", "team", "folks", "guys", "there", "y'all", "people",
        "friends", "both", "you",
    ];
    let (word, mut rest) = first_word(text);
    let lower = bare_lower(word);
    let mut last = word;
    let mut addressed = false;
    if lower == "good" {
        let (second, after) = first_word(rest);
        if !matches!(
            bare_lower(second).as_str(),
            "morning" | "afternoon" | "evening"
        ) {
            return None;
        }
        (last, rest) = (second, after);
    } else if !GREETINGS.contains(&lower.as_str()) {
        return None;
    }
    // Addressees, and names when followed by a comma or "!" ("Hi Bob, ...").
    for _ in 0..3 {
        if last.ends_with([',', '!', '.', ':']) || rest.is_empty() {
            break;
        }
        let (next, after) = first_word(rest);
        let name = next.starts_with(char::is_uppercase) && next.ends_with([',', '!']);
        if !ADDRESSEES.contains(&bare_lower(next).as_str()) && !name {
            break;
        }
        (last, rest) = (next, after);
        addressed = true;
    }
    // "Morning standup moved": "morning" alone is a greeting only when punctuated or addressed.
    let bare_time_of_day = matches!(lower.as_str(), "morning" | "good")
        && !addressed
        && !last.ends_with([',', '!', '.', ':'])
        && !rest.is_empty();
    (!bare_time_of_day).then_some(rest)
}

/// Text after a leading discourse filler ("So,", "Anyway", "Oh and", "As discussed,").
fn strip_discourse_filler(text: &str) -> Option<&str> {
    // Fillers stripped with or without a comma.
    #[rustfmt::skip]
    const ALWAYS: &[&str] = &[
        "anyway", "anyways", "anyhow", "basically", "also", "plus", "btw", "fyi", "oh", "ah", "and",
        "but", "ps",
    ];
    // Fillers stripped only when a comma follows ("Well, ..." but not "Well water").
    #[rustfmt::skip]
    const WITH_COMMA: &[&str] = &[
        "so", "well", "like", "actually", "honestly", "right", "yeah", "yes", "yep", "no", "ok",
        "okay", "alright", "sure", "great", "cool", "perfect", "nice", "awesome", "thanks", "look",
        "listen", "now", "hmm", "besides", "incidentally", "otherwise",
    ];
    // Fillers stripped before "so"/"and" ("Okay so ...") or a clause ("So we ...").
    #[rustfmt::skip]
    const BEFORE_CLAUSE: &[&str] = &[
        "we", "i", "they", "he", "she", "it", "the", "our", "my", "this", "that", "there", "so",
        "and", "you",
    ];
    #[rustfmt::skip]
    const PHRASES: &[&str] = &[
        "by the way", "as discussed", "as mentioned", "as promised", "as agreed", "sounds good",
        "got it", "that said", "long story short", "to be honest", "in any case", "on another note",
        "heads up", "just fyi", "just a heads up",
    ];
    for phrase in PHRASES {
        let matches = text
            .get(..phrase.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(phrase));
        if matches {
            let after = &text[phrase.len()..];
            if after.is_empty() || after.starts_with([',', ':', ' ', '!', '-']) {
                return Some(after);
            }
        }
    }
    let (word, rest) = first_word(text);
    let bare = bare_lower(word);
    let bare = bare.as_str();
    let comma = word.ends_with([',', ':', '!']);
    let next = bare_lower(first_word(rest).0);
    let before_clause =
        !comma && (BEFORE_CLAUSE.contains(&next.as_str()) || ALWAYS.contains(&next.as_str()));
    let strip = ALWAYS.contains(&bare)
        || (WITH_COMMA.contains(&bare) && comma)
        || (matches!(bare, "so" | "ok" | "okay" | "alright" | "yeah" | "well") && before_clause);
    (strip && !rest.is_empty()).then_some(rest)
}

/// Multi-word acknowledgements and sign-offs that carry no information.
const NO_INFO_PHRASES: &[&[&str]] = &[
    &["sounds", "good"],
    &["sounds", "great"],
    &["sounds", "fine"],
    &["works", "for", "me"],
    &["fine", "by", "me"],
    &["makes", "sense"],
    &["got", "it"],
    &["will", "do"],
    &["no", "problem"],
    &["no", "worries"],
    &["of", "course"],
    &["see", "you"],
    &["see", "ya"],
    &["talk", "soon"],
    &["talk", "to", "you"],
    &["speak", "soon"],
    &["take", "care"],
    &["catch", "you"],
    &["have", "a"],
    &["let", "me", "know"],
    &["let", "us", "know"],
    &["let", "talk"],
    &["feel", "free"],
    &["hope", "this", "helps"],
    &["hope", "that", "helps"],
    &["hope", "you"],
    &["hope", "everyone"],
    &["thanks", "for"],
    &["thank", "you"],
    &["that", "all"],
    &["that", "it"],
    &["that", "is", "all"],
    &["more", "soon"],
    &["me", "too"],
    &["same", "here"],
    &["well", "done"],
    &["good", "job"],
    &["great", "job"],
    &["great", "work"],
    &["good", "work"],
    &["nice", "work"],
    &["i", "agree"],
];

/// Phrases after which the rest of the sentence is still only courtesy ("Let me know if ...").
const NO_INFO_OPENERS: &[&[&str]] = &[
    &["let", "me", "know"],
    &["let", "us", "know"],
    &["feel", "free"],
    &["hope", "this"],
    &["hope", "that"],
    &["hope", "you"],
    &["hope", "everyone"],
    &["thanks", "for"],
    &["thank", "you", "for"],
    &["have", "a", "good"],
    &["have", "a", "great"],
    &["have", "a", "nice"],
];

/// Words that carry no information on their own.
#[rustfmt::skip]
const NO_INFO_WORDS: &[&str] = &[
    "hi", "hello", "hey", "heya", "hiya", "yo", "dear", "greetings", "morning", "afternoon",
    "evening", "night", "good", "great", "nice", "lovely", "awesome", "cool", "perfect", "fine",
    "ok", "okay", "okey", "k", "kk", "sure", "yes", "yeah", "yep", "yup", "ya", "no", "nope", "nah",
    "right", "alright", "agreed", "exactly", "true", "indeed", "totally", "absolutely",
    "definitely", "noted", "thanks", "thank", "thx", "ty", "tysm", "cheers", "bye", "goodbye",
    "later", "soon", "tomorrow", "tonight", "regards", "best", "kind", "warm", "warmest",
    "sincerely", "all", "everyone", "everybody", "team", "folks", "guys", "y'all", "you", "u",
    "again", "so", "very", "much", "a", "lot", "lots", "ton", "tons", "wow", "oh", "ah", "aha",
    "congrats", "congratulations", "interesting", "amazing", "welcome", "np", "and", "the", "for",
    "to", "too", "update", "heads", "up", "day", "weekend", "one", "then", "now", "well", "done",
    "job", "work", "same", "here", "it", "that", "this", "is", "appreciated", "appreciate",
    "sounds", "excellent", "brilliant", "fantastic", "wonderful",
];

/// Words after which a capitalised word is a name being greeted or thanked ("Thanks, Alice!").
#[rustfmt::skip]
const SOCIAL_WORDS: &[&str] = &[
    "hi", "hello", "hey", "heya", "hiya", "dear", "thanks", "thank", "thx", "cheers", "bye",
    "congrats", "congratulations", "regards", "best", "morning", "welcome", "job", "work", "done",
];

/// Whether a sentence says nothing: "Okay.", "Sounds good!", "See you tomorrow.", "Thanks,
/// Alice!", "Let me know if you have questions."
pub(crate) fn is_no_info(sentence: &str) -> bool {
    let originals: Vec<&str> = sentence
        .split(' ')
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .collect();
    // Contractions count as their first word: "you're" -> "you", "that's" -> "that".
    let words: Vec<String> = originals
        .iter()
        .map(|w| {
            let lower = bare_lower(w);
            lower.split('\'').next().unwrap_or("").to_string()
        })
        .collect();
    if NO_INFO_OPENERS
        .iter()
        .any(|opener| starts_with_words(&words, 0, opener))
    {
        return true;
    }
    let mut social = false;
    let mut i = 0;
    while i < words.len() {
        if let Some(phrase) = NO_INFO_PHRASES
            .iter()
            .find(|phrase| starts_with_words(&words, i, phrase))
        {
            i += phrase.len();
            social = true;
            continue;
        }
        let word = words[i].as_str();
        if SOCIAL_WORDS.contains(&word) {
            social = true;
        }
        let greeted_name = social && originals[i].starts_with(char::is_uppercase);
        if !(NO_INFO_WORDS.contains(&word) || is_interjection(word) || greeted_name) {
            return false;
        }
        i += 1;
    }
    true
}

fn starts_with_words(words: &[String], at: usize, phrase: &[&str]) -> bool {
    words.len() >= at + phrase.len() && phrase.iter().zip(&words[at..]).all(|(p, w)| p == w)
}

/// `text` with its first letter capitalised when its first word is plain lower-case letters.
fn capitalize_first(text: &str) -> String {
    let (word, _) = first_word(text);
    let plain = word
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .chars()
        .all(|c| c.is_lowercase() || c == '\'' || c == '\u{2019}');
    let mut chars = text.chars();
    match chars.next() {
        Some(first) if plain && first.is_lowercase() => first.to_uppercase().chain(chars).collect(),
        _ => text.to_string(),
    }
}

/// Speaker labels that stand for the user, whose "I" needs no label.
fn is_self_label(label: &str) -> bool {
    matches!(
        label.to_lowercase().as_str(),
        "me" | "user" | "i" | "myself"
    )
}

// ----- length --------------------------------------------------------------------------------

/// Clause boundaries, best first, each with the fewest words both sides must keep. The text
/// before a match ends a piece; the text after the connective starts the next.
const CLAUSE_CUTS: &[(&[&str], usize)] = &[
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
const NOT_A_CLAUSE: &[&str] = &[
    "e.g.", "eg", "i.e.", "ie", "such", "like", "including", "especially", "for", "etc", "etc.",
    "or", "and", "as",
];

/// Words a word-level cut is best placed before: "... reviewed the design | on Tuesday".
#[rustfmt::skip]
const PHRASE_STARTS: &[&str] = &[
    "in", "on", "at", "for", "with", "from", "to", "by", "after", "before", "since", "until",
    "during", "because", "and", "but", "or", "which", "who", "that", "when", "where", "while",
];

/// `text` cut into pieces of at most `max` characters: at clause boundaries when possible,
/// otherwise at a space (the last two pieces balanced); a word is never cut. Linear: each cut
/// only looks at the next `max` characters.
fn split_long(text: &str, max: usize) -> Vec<String> {
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
fn clause_cut(text: &str, limit: usize) -> Option<(usize, usize)> {
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
fn word_cut(text: &str, limit: usize, max: usize) -> Option<(usize, usize)> {
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
fn split_code(code: &str, max: usize) -> Vec<String> {
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

// ----- subjects ------------------------------------------------------------------------------

/// What a pronoun may refer to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Referent {
    /// A person: "Alice", "My sister", "Alice's manager".
    Person,
    /// One thing: "The API", "The billing service".
    Thing,
    /// Several people or things: "Alice and Bob", "The interns", "Users".
    Plural,
    /// A group: "Our team", "The company" (it or they).
    Group,
    /// An organisation-looking name: "SAP", "Acme Corp" (it).
    Org,
}

/// The subject of a sentence, as it can stand at the start of another.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Subject {
    text: String,
    referent: Referent,
}

/// Resolves a leading pronoun or missing subject against `subject`, then makes this
/// sentence's subject the current one.
fn resolve(clause: &str, subject: &mut Option<Subject>) -> String {
    let words: Vec<&str> = clause.split(' ').filter(|w| !w.is_empty()).collect();
    let resolved = subject.as_ref().and_then(|antecedent| {
        replace_pronoun(&words, antecedent).or_else(|| complete_fragment(&words, antecedent))
    });
    let text = resolved.unwrap_or_else(|| words.join(" "));
    let words: Vec<&str> = text.split(' ').collect();
    *subject =
        noun_phrase(&words, 0).or_else(|| intro_end(&words).and_then(|i| noun_phrase(&words, i)));
    text
}

/// The index of the first word after an introductory phrase ending in a comma ("In May, she
/// ..." -> 2), if the sentence opens with one.
fn intro_end(words: &[&str]) -> Option<usize> {
    #[rustfmt::skip]
    const INTRO: &[&str] = &[
        "in", "on", "at", "after", "before", "since", "during", "last", "next", "this", "yesterday",
        "today", "tomorrow", "recently", "later", "earlier", "then", "meanwhile", "eventually",
        "finally", "initially", "originally", "now", "currently", "luckily", "unfortunately",
        "apparently", "otherwise", "by", "from", "until", "for", "as", "when",
    ];
    let first = bare_lower(words.first()?);
    if !INTRO.contains(&first.as_str()) {
        return None;
    }
    let comma = words.iter().take(6).position(|w| w.ends_with(','))?;
    (comma + 1 < words.len()).then_some(comma + 1)
}

/// Words that end a noun phrase: auxiliaries, adverbs, prepositions and conjunctions.
#[rustfmt::skip]
const NP_STOPS: &[&str] = &[
    "is", "are", "was", "were", "be", "been", "am", "has", "have", "had", "will", "would", "can",
    "could", "should", "shall", "may", "might", "must", "does", "do", "did", "isn't", "aren't",
    "wasn't", "weren't", "hasn't", "haven't", "hadn't", "won't", "wouldn't", "can't", "couldn't",
    "shouldn't", "doesn't", "don't", "didn't", "now", "also", "still", "just", "only", "never",
    "always", "often", "usually", "currently", "recently", "already", "finally", "really", "then",
    "soon", "later", "today", "tomorrow", "yesterday", "mostly", "sometimes", "probably",
    "definitely", "actually", "even", "in", "on", "at", "to", "from", "with", "by", "into", "onto",
    "after", "before", "since", "until", "for", "about", "over", "under", "via", "per", "through",
    "across", "during", "without", "within", "near", "who", "which", "that", "whose", "where",
    "when", "because", "if", "while", "but", "or", "than", "so", "and", "&", "not", "no", "as",
    "like",
];

/// Words ending in "-ly" that are nouns, not adverbs.
#[rustfmt::skip]
const LY_NOUNS: &[&str] = &[
    "family", "supply", "assembly", "reply", "rally", "ally", "italy", "july", "emily", "anomaly",
    "butterfly", "monopoly", "bully", "belly", "holly", "lily", "sally", "molly",
];

/// The words "do"/"are"/"is"... that show a preceding verb-looking word was a noun ("Plans are
/// ready").
#[rustfmt::skip]
const AUXILIARIES: &[&str] = &[
    "is", "are", "was", "were", "will", "would", "can", "could", "should", "must", "has", "have",
    "had", "does", "do", "did", "may", "might",
];

/// Whether a word written mid-sentence is an auxiliary: lower case only, so "May" (the month)
/// or "Will" (the name) are not.
fn is_auxiliary(word: &str) -> bool {
    let word = word.trim_matches(|c: char| !c.is_alphanumeric());
    AUXILIARIES.contains(&word)
}

/// The subject noun phrase starting at word `at`, if the sentence has one there.
fn noun_phrase(words: &[&str], at: usize) -> Option<Subject> {
    let first = *words.get(at)?;
    let lower = bare_lower(first);
    let base = lower.split('\'').next().unwrap_or("");
    if PRONOUNS.contains(&base) || (base == "let" && lower.contains('\'')) {
        return None;
    }
    let mut parts: Vec<String> = Vec::new();
    let determiner = match lower.as_str() {
        "the" | "a" | "an" | "this" | "that" | "these" | "those" => Some("the"),
        "my" | "our" | "your" => Some(base),
        _ => None,
    };
    let mut plural_join = false;
    let mut predicate: Option<String> = None;
    let mut i = at;
    if let Some(determiner) = determiner {
        parts.push(if at == 0 {
            capitalize_first(determiner)
        } else {
            determiner.to_string()
        });
        i += 1;
    } else if !first.starts_with(char::is_uppercase)
        || NOT_A_NAME.contains(&lower.as_str())
        || is_finite_verb(&lower)
    {
        return None;
    }
    while i < words.len() {
        if parts.len() >= 6 {
            return None;
        }
        let raw = words[i];
        let word = raw.trim_end_matches([',', ';', ':']);
        let lower = bare_lower(word);
        let lower = lower.as_str();
        if word.is_empty() {
            return None;
        }
        let names_so_far = parts.iter().all(|p| p.starts_with(char::is_uppercase));
        if (lower == "and" || lower == "&")
            && determiner.is_none()
            && names_so_far
            && words
                .get(i + 1)
                .is_some_and(|w| w.starts_with(char::is_uppercase))
        {
            plural_join = true;
            parts.push(word.to_string());
            i += 1;
            continue;
        }
        let noun_before_aux = words.get(i + 1).is_some_and(|w| is_auxiliary(w));
        let has_noun = parts.len() > usize::from(determiner.is_some());
        let verb = (is_finite_verb(lower) && !noun_before_aux)
            || (BASE_VERBS.contains(&lower) && has_noun && {
                let prev = bare_lower(parts.last().map_or("", String::as_str));
                plural_join || (prev.ends_with('s') && !prev.ends_with("ss"))
            });
        let adverb = lower.len() > 4
            && lower.ends_with("ly")
            && !LY_NOUNS.contains(&lower)
            && !word.starts_with(char::is_uppercase);
        if NP_STOPS.contains(&lower) || verb || adverb {
            predicate = Some(lower.to_string());
            break;
        }
        if word.ends_with(is_terminal) && !is_title(word) {
            return None; // the sentence ends inside the phrase: no predicate
        }
        parts.push(word.to_string());
        i += 1;
        if raw.len() != word.len() {
            break; // "The API, which ..." / "Alice, our CTO, ..."
        }
    }
    if i >= words.len() || parts.len() <= usize::from(determiner.is_some()) {
        return None;
    }
    let number = if plural_join {
        Some(true)
    } else {
        predicate.as_deref().and_then(grammatical_number)
    };
    let mut referent = classify(&parts, determiner.is_some(), number);
    if referent == Referent::Person && parts.len() == 1 {
        referent = retype_by_complement(&words[i..]).unwrap_or(referent);
    }
    let mut text = parts.join(" ");
    if at > 0 {
        text = capitalize_first(&text);
    }
    Some(Subject { text, referent })
}

/// What a bare name is, going by what the predicate says it is: "Stripe is our payment
/// provider" -> an organisation, "Acme is a big team" -> a group. `None` when the predicate
/// does not say, or names a person's role ("our nurse", or all capitals: "our GP", "our CTO").
fn retype_by_complement(predicate: &[&str]) -> Option<Referent> {
    let noun = complement_noun(predicate)?;
    let lower = noun.to_lowercase();
    let role = noun.chars().all(char::is_uppercase) || PERSON_NOUNS.contains(&lower.as_str());
    if GROUP_NOUNS.contains(&lower.as_str()) {
        Some(Referent::Group)
    } else if role {
        None
    } else {
        Some(Referent::Org)
    }
}

/// The head noun of "is/was (a|an|the|our|...) <noun>" at the start of `predicate`: "provider"
/// in "is our payment provider.", `None` for "is great" or "works at SAP".
fn complement_noun<'a>(predicate: &[&'a str]) -> Option<&'a str> {
    const DETERMINERS: &[&str] = &["a", "an", "the", "our", "my", "their", "his", "her", "your"];
    let (copula, rest) = predicate.split_first()?;
    let (determiner, rest) = rest.split_first()?;
    if !matches!(*copula, "is" | "was") || !DETERMINERS.contains(&bare_lower(determiner).as_str()) {
        return None;
    }
    let mut noun = None;
    for word in rest.iter().take(4) {
        let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
        let stop = NP_STOPS.contains(&bare.to_lowercase().as_str());
        if bare.is_empty() || stop || bare.chars().any(|c| !c.is_alphabetic()) {
            break;
        }
        noun = Some(bare);
        if word.ends_with(|c: char| !c.is_alphanumeric()) {
            break;
        }
    }
    noun
}

fn is_title(word: &str) -> bool {
    let lower = word.trim_end_matches('.').to_lowercase();
    TITLES.contains(&lower.as_str()) && word.starts_with(char::is_uppercase)
}

/// Pronouns and first-person words, which never start a usable subject phrase.
#[rustfmt::skip]
const PRONOUNS: &[&str] = &[
    "i", "we", "you", "he", "she", "it", "they", "me", "us", "him", "them", "his", "her", "its",
    "their", "one", "there", "here", "everyone", "someone", "nobody", "who", "what",
];

/// Nouns for people, which take he/she.
#[rustfmt::skip]
const PERSON_NOUNS: &[&str] = &[
    "sister", "brother", "mother", "mom", "mum", "father", "dad", "wife", "husband", "partner",
    "boyfriend", "girlfriend", "son", "daughter", "friend", "colleague", "coworker", "boss",
    "manager", "lead", "head", "ceo", "cto", "cfo", "coo", "vp", "founder", "cofounder",
    "co-founder", "client", "customer", "doctor", "teacher", "landlord", "landlady", "neighbour",
    "neighbor", "intern", "engineer", "designer", "developer", "recruiter", "owner", "contractor",
    "consultant", "grandma", "grandmother", "grandfather", "grandpa", "aunt", "uncle", "cousin",
    "niece", "nephew", "roommate", "flatmate", "therapist", "dentist", "coach", "tutor", "mentor",
    "director", "candidate", "teammate", "baby", "kid", "child", "fiance", "fiancé", "fiancee",
    "fiancée", "assistant", "user", "student", "nurse", "lawyer", "accountant", "hire", "analyst",
    "architect", "researcher", "pm", "stakeholder", "gp", "physician", "surgeon", "vet", "pilot",
    "chef", "writer", "artist", "musician", "photographer", "driver", "officer", "agent", "broker",
    "advisor", "adviser", "secretary", "receptionist", "nanny", "babysitter", "professor",
    "lecturer", "scientist", "programmer", "admin", "administrator", "person", "guy", "man",
    "woman", "girl", "boy", "lady", "member", "volunteer", "patient", "guest",
];

/// Nouns for groups, which take it or they.
#[rustfmt::skip]
const GROUP_NOUNS: &[&str] = &[
    "team", "company", "family", "group", "org", "organisation", "organization", "department",
    "squad", "committee", "board", "band", "startup", "agency", "firm", "club", "staff", "crew",
    "government", "council", "community", "vendor", "supplier", "bank", "school", "university",
];

/// Last words of organisation names.
#[rustfmt::skip]
const ORG_SUFFIXES: &[&str] = &[
    "inc", "inc.", "corp", "corp.", "ltd", "ltd.", "llc", "gmbh", "plc", "co", "co.", "labs",
    "technologies", "systems", "group", "foundation", "bank", "university", "ag", "sa",
];

/// Whether a predicate word shows a plural (`Some(true)`) or singular subject: "are" / "is",
/// "work" / "works".
fn grammatical_number(predicate: &str) -> Option<bool> {
    match predicate {
        "are" | "were" | "have" | "do" | "aren't" | "weren't" | "haven't" | "don't" => Some(true),
        "is" | "was" | "has" | "does" | "isn't" | "wasn't" | "hasn't" | "doesn't" => Some(false),
        _ if BASE_VERBS.contains(&predicate) => Some(true),
        _ if predicate.ends_with('s') && is_finite_verb(predicate) => Some(false),
        _ => None,
    }
}

/// What a subject phrase can be referred to by; `plural` is the number its verb shows.
fn classify(parts: &[String], determiner: bool, plural: Option<bool>) -> Referent {
    if plural == Some(true) && parts.iter().any(|p| p == "and" || p == "&") {
        return Referent::Plural;
    }
    // The head noun: the last word before "of" ("The head of sales" -> "head").
    let head_index = parts
        .iter()
        .position(|p| p.eq_ignore_ascii_case("of"))
        .map_or(parts.len() - 1, |of| of.saturating_sub(1));
    let head = bare_lower(&parts[head_index]);
    let head = head.split('\'').next().unwrap_or("");
    if PERSON_NOUNS.contains(&head) {
        return Referent::Person;
    }
    if GROUP_NOUNS.contains(&head) {
        return Referent::Group;
    }
    let singular = head
        .strip_suffix("ren")
        .or_else(|| head.strip_suffix('s'))
        .unwrap_or("");
    if head == "people" || PERSON_NOUNS.contains(&singular) {
        return Referent::Plural;
    }
    // "My sister Ana": a person noun followed by a name.
    let person_before_name = parts[..head_index]
        .iter()
        .any(|p| PERSON_NOUNS.contains(&bare_lower(p).as_str()))
        && parts[head_index].starts_with(char::is_uppercase);
    if person_before_name {
        return Referent::Person;
    }
    let proper = parts
        .iter()
        .all(|p| p.starts_with(char::is_uppercase) || p == "of" || p == "and" || p == "&");
    if proper && !determiner {
        if parts.iter().any(|p| is_org_like(p)) || is_org_suffix(&parts[parts.len() - 1]) {
            return Referent::Org;
        }
        if parts.len() == 1 && plural == Some(true) {
            return Referent::Plural;
        }
        // "Marketing", "Staging", "Billing": a department or an activity, not a person.
        if parts.len() == 1 && head.len() > 5 && head.ends_with("ing") {
            return Referent::Group;
        }
        return Referent::Person;
    }
    match plural {
        Some(true) => Referent::Plural,
        None if looks_plural(head) => Referent::Plural,
        _ => Referent::Thing,
    }
}

fn is_org_suffix(word: &str) -> bool {
    ORG_SUFFIXES.contains(&word.to_lowercase().as_str())
}

/// "SAP", "GitHub", "3M": all capitals, inner capitals or digits (but not the inner capital of
/// a surname such as "O'Brien" or one starting with Mc or Mac).
fn is_org_like(word: &str) -> bool {
    let letters: Vec<char> = word.chars().filter(|c| c.is_alphabetic()).collect();
    let all_caps = letters.len() >= 2 && letters.iter().all(|c| c.is_uppercase());
    let surname = word.starts_with("Mc") || word.starts_with("Mac") || word.contains('\'');
    let inner_caps = !surname && letters.iter().skip(1).any(|c| c.is_uppercase());
    all_caps || inner_caps || word.chars().any(|c| c.is_ascii_digit())
}

fn looks_plural(word: &str) -> bool {
    word.len() > 3
        && word.ends_with('s')
        && !["ss", "us", "is", "ys"]
            .iter()
            .any(|end| word.ends_with(end))
}

/// The antecedent given by a heading that names an entity ("## Alice", "## Billing service").
fn heading_subject(title: &str) -> Option<Subject> {
    #[rustfmt::skip]
    const GENERIC: &[&str] = &[
        "notes", "note", "summary", "recap", "minutes", "agenda", "meeting", "sync", "standup",
        "stand-up", "retro", "retrospective", "review", "planning", "kickoff", "kick-off", "update",
        "updates", "status", "decisions", "decision", "actions", "action", "items", "todo", "todos",
        "tasks", "next", "steps", "questions", "question", "open", "blockers", "risks", "misc",
        "other", "general", "attendees", "background", "context", "overview", "highlights",
        "takeaways", "digest", "chat", "transcript", "log", "call", "session", "workshop",
        "offsite", "discussion", "topics", "follow-ups", "followups", "follow-up", "outcomes",
        "results", "goals", "intro", "introduction", "conclusion", "appendix", "links", "resources",
        "faq", "tl;dr", "tldr", "me", "my", "our", "we", "i", "weekly", "daily", "monthly",
        "quarterly", "personal", "work", "home", "family", "preferences", "facts", "people",
        "projects", "things", "ideas", "stuff", "about", "info", "details", "profile", "bio",
        "news", "and", "with", "from", "for", "to",
    ];
    let words: Vec<&str> = title.split_whitespace().collect();
    let generic = words.iter().any(|w| {
        GENERIC.contains(&bare_lower(w).as_str()) || w.chars().any(|c| c.is_ascii_digit())
    });
    if words.is_empty() || words.len() > 4 || generic {
        return None;
    }
    let parts: Vec<String> = words.iter().map(|w| (*w).to_string()).collect();
    let determiner = matches!(
        bare_lower(words[0]).as_str(),
        "the" | "a" | "an" | "this" | "that" | "my" | "our" | "your"
    );
    Some(Subject {
        text: capitalize_first(title),
        referent: classify(&parts, determiner, None),
    })
}

// ----- pronouns and fragments ------------------------------------------------------------------

/// The sentence with its leading pronoun (or the pronoun after an introductory phrase)
/// replaced by `antecedent`, if they agree.
fn replace_pronoun(words: &[&str], antecedent: &Subject) -> Option<String> {
    let at = if is_pronoun_start(words.first()?) {
        0
    } else {
        intro_end(words).filter(|&i| is_pronoun_start(words[i]))?
    };
    let raw = words[at];
    let core_len = raw
        .char_indices()
        .take_while(|(_, c)| c.is_alphabetic() || *c == '\'' || *c == '\u{2019}')
        .last()
        .map_or(0, |(i, c)| i + c.len_utf8());
    let (core, trailing) = raw.split_at(core_len);
    let lower = core.to_lowercase().replace('\u{2019}', "'");
    let (pronoun, contraction) = lower.split_once('\'').unwrap_or((lower.as_str(), ""));
    let possessive = matches!(pronoun, "his" | "her" | "its" | "their");
    let agrees = |referent: Referent| match pronoun {
        "he" | "she" | "his" | "her" => referent == Referent::Person,
        "it" | "its" => matches!(referent, Referent::Thing | Referent::Group | Referent::Org),
        "they" | "their" => matches!(referent, Referent::Plural | Referent::Group),
        _ => false,
    };
    // "Sarah's birthday is in May. She turns 30.": the possessor when the phrase disagrees.
    let owner = possessor(antecedent);
    let antecedent = if agrees(antecedent.referent) {
        antecedent
    } else {
        owner.as_ref().filter(|owner| agrees(owner.referent))?
    };
    if pronoun == "it" && is_dummy_it(contraction, &words[at + 1..]) {
        return None;
    }
    let mut name = if at == 0 {
        capitalize_first(&antecedent.text)
    } else {
        lower_determiner(&antecedent.text)
    };
    let singular_group = pronoun == "they" && antecedent.referent == Referent::Group;
    let mut rest: Vec<String> = words[at + 1..].iter().map(|w| (*w).to_string()).collect();
    if possessive {
        let plural = antecedent.referent == Referent::Plural && name.ends_with('s');
        name.push_str(if plural { "'" } else { "'s" });
    } else {
        let next = rest.first().map(|w| bare_lower(w)).unwrap_or_default();
        let participle = PARTICIPLES.contains(&next.as_str());
        let expansion = match contraction {
            "s" if participle => " has",
            "s" => " is",
            "ll" => " will",
            "d" if participle => " had",
            "d" => " would",
            "re" if singular_group => " is",
            "re" => " are",
            "ve" if singular_group => " has",
            "ve" => " have",
            _ => "",
        };
        name.push_str(expansion);
        if singular_group && contraction.is_empty() {
            if let Some(verb) = rest.first_mut() {
                let singular = match verb.as_str() {
                    "are" => Some("is"),
                    "were" => Some("was"),
                    "have" => Some("has"),
                    "aren't" => Some("isn't"),
                    "weren't" => Some("wasn't"),
                    "haven't" => Some("hasn't"),
                    "don't" => Some("doesn't"),
                    _ => None,
                };
                if let Some(singular) = singular {
                    *verb = singular.to_string();
                }
            }
        }
    }
    name.push_str(trailing);
    let mut out: Vec<String> = words[..at].iter().map(|w| (*w).to_string()).collect();
    out.push(name);
    out.extend(rest);
    Some(out.join(" "))
}

/// Words after "'s"/"'d" that make it "has"/"had" rather than "is"/"would".
#[rustfmt::skip]
const PARTICIPLES: &[&str] = &[
    "been", "got", "gotten", "gone", "done", "had", "seen", "taken", "made", "left", "moved",
    "joined", "started", "finished", "decided", "agreed", "lived", "worked", "never", "already",
    "bought", "sold", "built", "written", "become", "grown", "switched", "quit",
];

/// The owner in a possessive subject: "Sarah" in "Sarah's birthday".
fn possessor(subject: &Subject) -> Option<Subject> {
    let (owner, _) = subject
        .text
        .split_once("'s ")
        .or_else(|| subject.text.split_once("\u{2019}s "))?;
    let parts: Vec<String> = owner.split(' ').map(str::to_string).collect();
    let proper = parts.iter().all(|p| p.starts_with(char::is_uppercase));
    proper.then(|| Subject {
        text: owner.to_string(),
        referent: classify(&parts, false, None),
    })
}

/// For the document fact extractor: `sentence` with its first word, a subject pronoun (he,
/// she, it, they, his, her, its, their, or a definitional "This is a/an/the ..."; not "This
/// is why", whose "this" is a whole statement), replaced by the subject
/// phrase of `previous` when the two agree (the rules of [`atomize`]), with the phrase that
/// replaced it (the subject, or its possessor: "Sarah" for "Sarah's birthday ..."). `None`
/// when the sentence does not open with one, `previous` opens with no subject phrase, they
/// disagree, or "it" is the empty "it" of "it seems" / "it is important to".
pub(crate) fn resolve_first_pronoun(previous: &str, sentence: &str) -> Option<(String, String)> {
    let previous: Vec<&str> = previous.split_whitespace().collect();
    let antecedent = noun_phrase(&previous, 0)?;
    let words: Vec<&str> = sentence.split_whitespace().collect();
    let first = *words.first()?;
    if first == "This" {
        let copula = matches!(words.get(1).copied(), Some("is" | "was"));
        let verb = copula && matches!(words.get(2).copied(), Some("a" | "an" | "the"));
        let agrees = matches!(
            antecedent.referent,
            Referent::Thing | Referent::Group | Referent::Org
        );
        if !(verb && agrees) {
            return None;
        }
        let mut out = vec![capitalize_first(&antecedent.text)];
        out.extend(words[1..].iter().map(|w| (*w).to_string()));
        return Some((out.join(" "), antecedent.text));
    }
    if !is_pronoun_start(first) {
        return None;
    }
    let resolved = replace_pronoun(&words, &antecedent)?;
    let used = if resolved.starts_with(&capitalize_first(&antecedent.text)) {
        antecedent.text
    } else {
        possessor(&antecedent)?.text
    };
    Some((resolved, used))
}

fn is_pronoun_start(word: &str) -> bool {
    let lower = bare_lower(word);
    let pronoun = lower.split('\'').next().unwrap_or("");
    matches!(
        pronoun,
        "he" | "she" | "it" | "they" | "his" | "her" | "its" | "their"
    )
}

/// A phrase moved inside a sentence: "The API" -> "the API", names unchanged.
fn lower_determiner(text: &str) -> String {
    let (first, rest) = first_word(text);
    if matches!(first, "The" | "My" | "Our" | "Your" | "A" | "An") {
        let lowered = first.to_lowercase();
        if rest.is_empty() {
            lowered
        } else {
            format!("{lowered} {rest}")
        }
    } else {
        text.to_string()
    }
}

/// Whether "it" is the empty subject of "it seems", "it's important to", "it rained".
fn is_dummy_it(contraction: &str, rest: &[&str]) -> bool {
    #[rustfmt::skip]
    const VERBS: &[&str] = &[
        "seems", "seemed", "appears", "appeared", "looks", "looked", "rained", "rains", "raining",
        "snowed", "snows", "snowing", "happens", "happened", "depends", "depended", "turns",
        "turned", "took", "takes", "feels", "felt", "sounds", "sounded", "means", "meant",
        "matters", "mattered",
    ];
    #[rustfmt::skip]
    const COMPLEMENTS: &[&str] = &[
        "important", "necessary", "possible", "impossible", "likely", "unlikely", "clear",
        "unclear", "true", "false", "time", "hard", "difficult", "easy", "nice", "great", "good",
        "fine", "okay", "ok", "weird", "strange", "funny", "sad", "raining", "sunny", "cold", "hot",
        "warm", "late", "early", "decided", "agreed", "noted", "worth", "crucial", "essential",
        "obvious", "a", "an", "what",
    ];
    let words: Vec<String> = rest.iter().take(3).map(|w| bare_lower(w)).collect();
    let word = |i: usize| words.get(i).map_or("", String::as_str);
    if contraction.is_empty() && VERBS.contains(&word(0)) {
        return true;
    }
    let complement = match (contraction, word(0)) {
        ("s", _) => word(0),
        ("ll", "be") | ("", "is" | "was") => word(1),
        ("", "will") if word(1) == "be" => word(2),
        _ => return false,
    };
    COMPLEMENTS.contains(&complement) || complement.starts_with(|c: char| c.is_ascii_digit())
}

/// The previous subject prepended to a fragment without one: "Works at SAP now." -> "Alice
/// works at SAP now."
fn complete_fragment(words: &[&str], antecedent: &Subject) -> Option<String> {
    #[rustfmt::skip]
    const ADVERBS: &[&str] = &[
        "also", "still", "now", "currently", "recently", "just", "really", "usually", "often",
        "never", "always", "mostly", "only", "even", "then", "later", "finally", "already",
    ];
    let first = bare_lower(words.first()?);
    let verb_at = usize::from(ADVERBS.contains(&first.as_str()));
    let verb = bare_lower(words.get(verb_at)?);
    if !is_finite_verb(&verb) {
        return None;
    }
    // "Plans for Q3 are ready": a later auxiliary means the first word was a noun.
    let later_aux = words.windows(2).skip(verb_at).any(|pair| {
        is_auxiliary(pair[1])
            && !matches!(
                bare_lower(pair[0]).as_str(),
                "and" | "but" | "or" | "that" | "which" | "who"
            )
    });
    // "Alice moved. Went to visit her.": "her" is Alice, so the missing subject is someone else.
    let object_is_antecedent = words.iter().any(|w| {
        let lower = bare_lower(w);
        match antecedent.referent {
            Referent::Person => matches!(lower.as_str(), "her" | "him"),
            Referent::Plural | Referent::Group => lower == "them",
            Referent::Thing | Referent::Org => false,
        }
    });
    if later_aux || object_is_antecedent {
        return None;
    }
    let first_word = words[0];
    let lowered = if first_word.chars().skip(1).all(|c| !c.is_uppercase()) {
        let mut chars = first_word.chars();
        chars.next().map_or(String::new(), |c| {
            c.to_lowercase().chain(chars).collect::<String>()
        })
    } else {
        first_word.to_string()
    };
    let mut out = capitalize_first(&antecedent.text);
    out.push(' ');
    out.push_str(&lowered);
    for word in &words[1..] {
        out.push(' ');
        out.push_str(word);
    }
    Some(out)
}

/// Irregular finite verb forms.
#[rustfmt::skip]
const IRREGULAR_VERBS: &[&str] = &[
    "is", "was", "has", "had", "does", "did", "went", "goes", "left", "ran", "led", "wrote",
    "built", "said", "says", "thought", "took", "made", "got", "became", "came", "drove", "met",
    "saw", "told", "spent", "sold", "bought", "paid", "knew", "spoke", "ate", "drank", "swam",
    "slept", "broke", "felt", "held", "kept", "lost", "won", "began", "grew", "gave", "sent",
    "brought", "taught", "caught", "fell", "flew", "rode", "quit", "hid", "chose", "forgot",
    "understood", "wore", "sang", "shut", "set", "lent", "meant",
];

/// Base forms of common verbs, whose "-s"/"-ed" forms are recognised as finite verbs.
#[rustfmt::skip]
const BASE_VERBS: &[&str] = &[
    "work", "live", "like", "love", "hate", "prefer", "want", "need", "move", "join", "start",
    "run", "use", "own", "lead", "manage", "know", "speak", "play", "enjoy", "study", "teach",
    "report", "drive", "visit", "go", "come", "get", "become", "seem", "return", "relocate",
    "graduate", "found", "build", "write", "say", "think", "believe", "handle", "support", "depend",
    "require", "store", "send", "take", "make", "plan", "hope", "expect", "travel", "stay",
    "commute", "ship", "deploy", "switch", "migrate", "cover", "focus", "rely", "spend", "cook",
    "read", "watch", "listen", "swim", "hike", "ski", "design", "review", "approve", "reject",
    "decide", "agree", "host", "serve", "process", "expose", "accept", "fail", "crash", "break",
    "cost", "include", "contain", "hold", "belong", "look", "sound", "feel", "wish", "miss", "pay",
    "earn", "charge", "sell", "buy", "hire", "quit", "retire", "sign", "meet", "see", "tell", "ask",
    "talk", "call", "reply", "answer", "adore", "dislike", "learn", "train", "practise", "practice",
    "attend", "organise", "organize", "rent", "share", "walk", "bike", "cycle", "marry", "divorce",
    "acquire", "launch", "release", "publish", "fix", "add", "remove", "drop", "replace", "rewrite",
    "refactor", "test", "monitor", "track", "cache", "sync", "scale", "rotate", "expire", "block",
    "allow", "prevent", "cause", "create", "delete", "upgrade", "downgrade", "install", "configure",
    "wrap", "promote", "transfer", "resign", "open", "close", "finish", "complete", "lose", "win",
    "grow", "shrink", "double", "drink", "eat", "sleep", "wake", "stop", "keep", "leave", "arrive",
    "land", "fly", "ride", "mention", "suggest", "recommend", "insist", "refuse", "offer",
    "promise", "try", "apply", "receive", "sponsor", "fund", "invest",
];

/// "shipp" -> "ship": a stem with its doubled final consonant undone.
fn undouble(stem: &str) -> Option<&str> {
    let bytes = stem.as_bytes();
    let doubled = bytes.len() >= 2 && bytes[bytes.len() - 1] == bytes[bytes.len() - 2];
    doubled.then(|| &stem[..stem.len() - 1])
}

/// Whether a lower-case word is a finite verb form: "works", "moved", "studies", "went".
fn is_finite_verb(word: &str) -> bool {
    if IRREGULAR_VERBS.contains(&word) {
        return true;
    }
    let known = |stem: &str| BASE_VERBS.contains(&stem);
    if let Some(stem) = word.strip_suffix("ies") {
        if known(&format!("{stem}y")) {
            return true;
        }
    }
    if let Some(stem) = word.strip_suffix("ied") {
        if known(&format!("{stem}y")) {
            return true;
        }
    }
    if let Some(stem) = word.strip_suffix("es") {
        if known(stem) {
            return true;
        }
    }
    if let Some(stem) = word.strip_suffix('s') {
        if known(stem) {
            return true;
        }
    }
    if let Some(stem) = word.strip_suffix("ed") {
        if known(stem) || undouble(stem).is_some_and(known) {
            return true;
        }
    }
    if let Some(stem) = word.strip_suffix('d') {
        if known(stem) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::{atomize, resolve_first_pronoun, sentence_spans, split_sentences};

    fn sentences(text: &str) -> Vec<String> {
        split_sentences(text)
    }

    // ----- split_sentences ---------------------------------------------------------------

    #[test]
    fn titles_and_times_do_not_end_sentences() {
        assert_eq!(
            sentences(
                "Mr. Smith met Dr. Jones at 3 p.m. They talked. Mrs. Lee and Ms. Park joined later."
            ),
            [
                "Mr. Smith met Dr. Jones at 3 p.m.",
                "They talked.",
                "Mrs. Lee and Ms. Park joined later."
            ]
        );
        assert_eq!(
            sentences("The meeting ends at 5 p.m. on Friday. Bob leaves at 6 p.m. Carol stays."),
            [
                "The meeting ends at 5 p.m. on Friday.",
                "Bob leaves at 6 p.m.",
                "Carol stays."
            ]
        );
    }

    #[test]
    fn latin_abbreviations_never_end_sentences() {
        assert_eq!(
            sentences(
                "We use tools, e.g. Jira, i.e. the cloud one. It costs $3.50 vs. $5 elsewhere."
            ),
            [
                "We use tools, e.g. Jira, i.e. the cloud one.",
                "It costs $3.50 vs. $5 elsewhere."
            ]
        );
        assert_eq!(
            sentences("Costs rose 5% etc. and more etc. Then we left."),
            ["Costs rose 5% etc. and more etc.", "Then we left."]
        );
    }

    #[test]
    fn acronyms_end_a_sentence_only_before_a_sentence_opener() {
        assert_eq!(
            sentences("He moved to the U.S. last year. She moved to the U.S. The move was hard."),
            [
                "He moved to the U.S. last year.",
                "She moved to the U.S.",
                "The move was hard."
            ]
        );
    }

    #[test]
    fn company_abbreviations() {
        assert_eq!(
            sentences("Acme Inc. is based in Ohio. They bought Foo Ltd. Their CEO left."),
            [
                "Acme Inc. is based in Ohio.",
                "They bought Foo Ltd.",
                "Their CEO left."
            ]
        );
    }

    #[test]
    fn decimals_versions_and_domains() {
        assert_eq!(
            sentences("Pi is 3.14. Upgrade to v1.2.3 now. See example.com for details."),
            [
                "Pi is 3.14.",
                "Upgrade to v1.2.3 now.",
                "See example.com for details."
            ]
        );
    }

    #[test]
    fn initials() {
        assert_eq!(
            sentences(
                "J. R. R. Tolkien wrote The Hobbit. C. S. Lewis was his friend. \
                 Plan B. The rest failed."
            ),
            [
                "J. R. R. Tolkien wrote The Hobbit.",
                "C. S. Lewis was his friend.",
                "Plan B.",
                "The rest failed."
            ]
        );
    }

    #[test]
    fn ellipses_end_a_sentence_only_before_a_capital() {
        assert_eq!(
            sentences("I waited... and waited. It failed… Nothing happened… really."),
            [
                "I waited... and waited.",
                "It failed…",
                "Nothing happened… really."
            ]
        );
    }

    #[test]
    fn quotes_and_brackets_after_the_full_stop() {
        assert_eq!(
            sentences(r#"He said "Stop." Then he left. "Why?" she asked. (See the doc.) Next!"#),
            [
                r#"He said "Stop.""#,
                "Then he left.",
                r#""Why?" she asked."#,
                "(See the doc.)",
                "Next!"
            ]
        );
    }

    #[test]
    fn number_abbreviation_and_milliseconds() {
        assert_eq!(
            sentences("Room No. 5 is free. The answer is no. p99 is 80 ms. Dr. Patel agreed."),
            [
                "Room No. 5 is free.",
                "The answer is no.",
                "p99 is 80 ms.",
                "Dr. Patel agreed."
            ]
        );
        assert_eq!(
            sentences("She has a Ph.D. from MIT. Her thesis was on NLP."),
            ["She has a Ph.D. from MIT.", "Her thesis was on NLP."]
        );
    }

    #[test]
    fn line_breaks() {
        let text = "Line one without punctuation\nLine two also without\n\n\
                    A wrapped paragraph that is long enough to be wrapped\n\
                    across two lines. Done.\n\
                    The EU region follows in Q3 and is long enough\n\
                    (v2.3.1 or later).\n\
                    Sent to Alice and\n\
                    Bob, who agreed.";
        assert_eq!(
            sentences(text),
            [
                "Line one without punctuation",
                "Line two also without",
                "A wrapped paragraph that is long enough to be wrapped across two lines.",
                "Done.",
                "The EU region follows in Q3 and is long enough (v2.3.1 or later).",
                "Sent to Alice and Bob, who agreed."
            ]
        );
    }

    #[test]
    fn list_items_are_sentences_of_their_own() {
        let text = "- First item\n- Second item. With two sentences\n* Third\n• Fourth\n\
                    1. Numbered one\n2) Numbered two\n(3) Numbered three\n\
                    - [ ] Open todo\n- [x] Done todo\n  continued in lower case";
        assert_eq!(
            sentences(text),
            [
                "First item",
                "Second item.",
                "With two sentences",
                "Third",
                "Fourth",
                "Numbered one",
                "Numbered two",
                "Numbered three",
                "Open todo",
                "Done todo continued in lower case"
            ]
        );
    }

    #[test]
    fn headings_labels_and_rules_are_dropped() {
        let text = "# Heading\n## Sub heading ##\nText under it.\n---\n**Bold label**\n\
                    Action items:\n**Owner:** Alice owns it.\n#hashtag stays";
        assert_eq!(
            sentences(text),
            ["Text under it.", "Owner: Alice owns it.", "#hashtag stays"]
        );
    }

    #[test]
    fn text_without_final_punctuation_and_empty_input() {
        assert_eq!(
            sentences("no punctuation at all"),
            ["no punctuation at all"]
        );
        assert_eq!(
            sentences("Two. sentences in lower case"),
            ["Two.", "sentences in lower case"]
        );
        assert!(sentences("").is_empty());
        assert!(sentences(" \n\t\n ... \n").is_empty());
    }

    #[test]
    fn code_blocks_and_chat_turns() {
        let text = "```\nfn main() {}\nlet x = 1;\n```\nAfter code.\n\
                    alice: hi there. i moved\nbob: hey\nNote: not a speaker\n[10:42] Priya: on it";
        assert_eq!(
            sentences(text),
            [
                "fn main() {}\nlet x = 1;",
                "After code.",
                "alice: hi there.",
                "i moved",
                "bob: hey",
                "Note: not a speaker",
                "Priya: on it"
            ]
        );
    }

    #[test]
    fn unicode_text() {
        assert_eq!(
            sentences("Zoë runs the Café Ünïcode. Ça marche! «Très bien.» Fin"),
            [
                "Zoë runs the Café Ünïcode.",
                "Ça marche!",
                "«Très bien.»",
                "Fin"
            ]
        );
    }

    // ----- atomize: subjects ---------------------------------------------------------------

    #[test]
    fn pronouns_take_the_previous_subject() {
        assert_eq!(
            atomize(
                "Alice moved to Berlin in May. She works at SAP now. Her manager is Bob.",
                200
            ),
            [
                "Alice moved to Berlin in May.",
                "Alice works at SAP now.",
                "Alice's manager is Bob."
            ]
        );
        assert_eq!(
            atomize(
                "The billing service was rewritten in Go. It now runs on Kubernetes. \
                 Its p99 is 80 ms.",
                200
            ),
            [
                "The billing service was rewritten in Go.",
                "The billing service now runs on Kubernetes.",
                "The billing service's p99 is 80 ms."
            ]
        );
    }

    #[test]
    fn possessors_and_predicates_type_the_antecedent() {
        // The possessor stands in when the possessive phrase does not agree.
        assert_eq!(
            atomize("Sarah's birthday is on 3 May. She turns 30.", 200),
            ["Sarah's birthday is on 3 May.", "Sarah turns 30."]
        );
        // What a bare name is said to be tells a company from a person.
        assert_eq!(
            atomize(
                "Stripe is our payment provider. It charges 2.9%. Dr. Smith is our GP. \
                 He is based in Leeds. SAP acquired Qualtrics. It paid $8B.",
                200
            ),
            [
                "Stripe is our payment provider.",
                "Stripe charges 2.9%.",
                "Dr. Smith is our GP.",
                "Dr. Smith is based in Leeds.",
                "SAP acquired Qualtrics.",
                "SAP paid $8B."
            ]
        );
    }

    #[test]
    fn fragments_get_the_previous_subject() {
        assert_eq!(
            atomize(
                "Carol joined the team in February. Works from Lisbon. Also likes hiking.",
                200
            ),
            [
                "Carol joined the team in February.",
                "Carol works from Lisbon.",
                "Carol likes hiking."
            ]
        );
        // A later auxiliary shows the verb-looking first word is a noun.
        assert_eq!(
            atomize("Carol joined in May. Plans for Q3 are ready.", 200),
            ["Carol joined in May.", "Plans for Q3 are ready."]
        );
    }

    #[test]
    fn noun_phrase_subjects_and_agreement() {
        assert_eq!(
            atomize(
                "My sister lives in Rome. She is a nurse. A new intern joined on Monday. \
                 He is based in Oslo.",
                200
            ),
            [
                "My sister lives in Rome.",
                "My sister is a nurse.",
                "A new intern joined on Monday.",
                "The new intern is based in Oslo."
            ]
        );
        // A group takes "they" with the verb made singular; plurals keep theirs.
        assert_eq!(
            atomize(
                "Our team ships weekly. They are hiring two engineers. The interns start Monday. \
                 Their desks are on floor 3.",
                200
            ),
            [
                "Our team ships weekly.",
                "Our team is hiring two engineers.",
                "The interns start Monday.",
                "The interns' desks are on floor 3."
            ]
        );
        assert_eq!(
            atomize("Alice and Bob moved to Lisbon. They love it.", 200),
            ["Alice and Bob moved to Lisbon.", "Alice and Bob love it."]
        );
    }

    #[test]
    fn pronouns_that_do_not_agree_or_have_no_antecedent_stay() {
        assert_eq!(
            atomize(
                "The API is slow. She fixed it. Alice joined. It rained all week.",
                200
            ),
            [
                "The API is slow.",
                "She fixed it.",
                "Alice joined.",
                "It rained all week."
            ]
        );
        assert_eq!(
            atomize(
                "We rewrote the billing service. It is important to test it.",
                200
            ),
            [
                "We rewrote the billing service.",
                "It is important to test it."
            ]
        );
        // Only the previous sentence's subject counts.
        assert_eq!(
            atomize(
                "Alice moved to Berlin. The city is expensive. She likes it.",
                200
            ),
            [
                "Alice moved to Berlin.",
                "The city is expensive.",
                "She likes it."
            ]
        );
        // "her" is Alice, so whoever went is someone else (most likely the writer).
        assert_eq!(
            atomize("Alice moved to Berlin. Went to visit her in June.", 200),
            ["Alice moved to Berlin.", "Went to visit her in June."]
        );
    }

    #[test]
    fn first_person_statements_stay_as_they_are() {
        assert_eq!(
            atomize(
                "I moved to Berlin. We use Rust. My team ships weekly. Our office is in Mitte.",
                200
            ),
            [
                "I moved to Berlin.",
                "We use Rust.",
                "My team ships weekly.",
                "Our office is in Mitte."
            ]
        );
    }

    #[test]
    fn contractions_and_introductory_phrases() {
        assert_eq!(
            atomize(
                "Alice joined SAP. She's moving to Munich. She's been there twice. \
                 In May, she'll start.",
                200
            ),
            [
                "Alice joined SAP.",
                "Alice is moving to Munich.",
                "Alice has been there twice.",
                "In May, Alice will start."
            ]
        );
    }

    #[test]
    fn headings_give_context() {
        let note = "## Alice\n- Moved to Berlin in May\n- Works at SAP\n\n\
                    ## Stack\n- Rust\n- PostgreSQL 16\n- Redis for caching and rate limits";
        assert_eq!(
            atomize(note, 200),
            [
                "Alice moved to Berlin in May",
                "Alice works at SAP",
                "Stack: Rust",
                "Stack: PostgreSQL 16",
                "Redis for caching and rate limits"
            ]
        );
    }

    // ----- atomize: filler -----------------------------------------------------------------

    #[test]
    fn greetings_fillers_and_sign_offs_are_dropped() {
        let note = "Hi all, quick recap of today's sync:\nHope you're well! So, we shipped v2.\n\
                    Anyway, the API is stable. Well, Bob is on leave. Basically, Carol covers.\n\
                    Oh and the demo is on Friday. Okay so we also fixed the login bug.\n\
                    Ok so basically the beta starts in May.\nThanks!\nCheers,\nAlice";
        assert_eq!(
            atomize(note, 200),
            [
                "We shipped v2.",
                "The API is stable.",
                "Bob is on leave.",
                "Carol covers.",
                "The demo is on Friday.",
                "We also fixed the login bug.",
                "The beta starts in May."
            ]
        );
    }

    #[test]
    fn interjections_are_removed() {
        assert_eq!(
            atomize(
                "Um, staging was down lol. It's, uh, fixed now haha. The deploy went fine 🎉",
                200
            ),
            [
                "Staging was down.",
                "Staging is fixed now.",
                "The deploy went fine"
            ]
        );
    }

    #[test]
    fn questions_and_sentences_without_information_are_dropped() {
        let note = "Who owns the rota? Okay. Sounds good. See you tomorrow. Thanks, Alice! \
                    Let me know if you have questions. Got it, will do. The rota is owned by Dan.";
        assert_eq!(atomize(note, 200), ["The rota is owned by Dan."]);
    }

    #[test]
    fn atoms_are_deduplicated_ignoring_case_whitespace_and_final_punctuation() {
        let note = "The API uses OAuth 2.0.\nthe   API uses OAuth 2.0\nTHE API USES OAUTH 2.0!";
        assert_eq!(atomize(note, 200), ["The API uses OAuth 2.0."]);
    }

    #[test]
    fn numbers_dates_names_and_code_stay_intact() {
        let note =
            "So, `user_id` is a UUIDv7 since v1.2.3. Set MAX_RETRIES=5 on 2025-03-12 at 09:30. \
                    Dr. O'Neill owns `__init__.py`. The CLI prints `lol` (lol). \
                    The budget is $48,500.75 (i.e. 12% more).";
        assert_eq!(
            atomize(note, 200),
            [
                "`user_id` is a UUIDv7 since v1.2.3.",
                "Set MAX_RETRIES=5 on 2025-03-12 at 09:30.",
                "Dr. O'Neill owns `__init__.py`.",
                "The CLI prints `lol`.",
                "The budget is $48,500.75 (i.e. 12% more)."
            ]
        );
    }

    // ----- atomize: length -----------------------------------------------------------------

    #[test]
    fn long_sentences_are_cut_at_clause_boundaries() {
        let note = "We'll go with PostgreSQL 16 for billing; MySQL is off the table. \
                    Alice moved to Berlin in May, and she works at SAP now.";
        assert_eq!(
            atomize(note, 45),
            [
                "We'll go with PostgreSQL 16 for billing.",
                "MySQL is off the table.",
                "Alice moved to Berlin in May.",
                "Alice works at SAP now."
            ]
        );
        // Without a limit (0) or with room to spare nothing is cut.
        assert_eq!(atomize(note, 0).len(), 2);
        assert_eq!(atomize(note, 200).len(), 2);
    }

    #[test]
    fn words_are_never_cut() {
        let note = "Supercalifragilisticexpialidocious is long. \
                    The quick brown fox jumps over the lazy dog near the riverbank today.";
        let atoms = atomize(note, 20);
        assert_eq!(
            atoms,
            [
                "Supercalifragilisticexpialidocious",
                "is long.",
                "The quick brown fox",
                "jumps over the lazy",
                "dog near the",
                "riverbank today."
            ]
        );
        let words =
            |text: &str| -> Vec<String> { text.split_whitespace().map(str::to_string).collect() };
        assert_eq!(
            atoms.iter().flat_map(|a| words(a)).collect::<Vec<_>>(),
            words(note)
        );
    }

    #[test]
    fn limits_count_characters_not_bytes() {
        let note = "Zoë mag Crème brûlée, Käse und Grünkohl; ihr Bruder Jürgen bevorzugt Äpfel.";
        for max in [10, 15, 20, 30, 40, 80] {
            for atom in atomize(note, max) {
                assert!(atom.chars().count() <= max, "{atom:?} is over {max}");
            }
        }
    }

    // ----- atomize: realistic notes ----------------------------------------------------------

    const MEETING_NOTE: &str = "# Platform weekly sync, 12 March 2025

Hi all, quick recap of today's sync:

Attendees: Alice Chen, Bob Martins, Carol Diaz, Dan O'Neill.

## Decisions
- We'll go with PostgreSQL 16 for the new billing service; MySQL is off the table.
- The launch moves from 1 April to 15 April. Marketing was informed on Monday.
- Going forward, every PR needs two approvals, and CI must be green before merge.

## Updates
The billing service was rewritten in Go. It now runs on Kubernetes (3 replicas) and
handles about 1,200 requests/s at p99 < 80 ms. Dr. Patel from Acme Inc. reviewed the
design on Tuesday at 10 a.m. She flagged the retry logic in `charge_customer()` as
risky, e.g. duplicate charges after timeouts. Mrs. Okafor approved the Q2 budget of
$48k, i.e. 12% more than Q1.

Carol joined the team in February. Works from Lisbon and leads the data migration. Her
manager is Bob. So, the U.S. region goes live first... The EU region follows in Q3
(v2.3.1 or later).

Um, staging was down for 2 hours yesterday lol. Root cause: an expired TLS cert. Anyway,
Dan set up cert-manager so it renews automatically now.

Oh and Bob is out next week. Basically, Alice covers on-call until he's back. Bob prefers
async standups on Slack. He can't stand 8 a.m. meetings, haha.

## Action items
1. Alice to update the runbook by Friday.
2. Bob to book the load test with Acme.
3. Dan: rotate the API keys (again).

Who owns the on-call rota? Okay. Sounds good. Also, the billing service was rewritten in Go.

Thanks!
Alice
";

    #[test]
    fn meeting_note() {
        assert!(MEETING_NOTE.chars().count() > 1_500);
        assert_eq!(
            atomize(MEETING_NOTE, 200),
            [
                "Attendees: Alice Chen, Bob Martins, Carol Diaz, Dan O'Neill.",
                "We'll go with PostgreSQL 16 for the new billing service; MySQL is off the table.",
                "The launch moves from 1 April to 15 April.",
                "Marketing was informed on Monday.",
                "Going forward, every PR needs two approvals, and CI must be green before merge.",
                "The billing service was rewritten in Go.",
                "The billing service now runs on Kubernetes (3 replicas) and handles about 1,200 \
                 requests/s at p99 < 80 ms.",
                "Dr. Patel from Acme Inc. reviewed the design on Tuesday at 10 a.m.",
                "Dr. Patel flagged the retry logic in `charge_customer()` as risky, e.g. duplicate \
                 charges after timeouts.",
                "Mrs. Okafor approved the Q2 budget of $48k, i.e. 12% more than Q1.",
                "Carol joined the team in February.",
                "Carol works from Lisbon and leads the data migration.",
                "Carol's manager is Bob.",
                "The U.S. region goes live first...",
                "The EU region follows in Q3 (v2.3.1 or later).",
                "Staging was down for 2 hours yesterday.",
                "Root cause: an expired TLS cert.",
                "Dan set up cert-manager so it renews automatically now.",
                "Bob is out next week.",
                "Alice covers on-call until he's back.",
                "Bob prefers async standups on Slack.",
                "Bob can't stand 8 a.m. meetings.",
                "Alice to update the runbook by Friday.",
                "Bob to book the load test with Acme.",
                "Dan: rotate the API keys (again).",
            ]
        );
    }

    #[test]
    fn meeting_note_under_a_tight_limit() {
        let atoms = atomize(MEETING_NOTE, 80);
        for atom in &atoms {
            assert!(atom.chars().count() <= 80, "{atom:?}");
        }
        let expected_cuts = [
            "The billing service now runs on Kubernetes (3 replicas).",
            "The billing service handles about 1,200 requests/s at p99 < 80 ms.",
            "Going forward, every PR needs two approvals, and CI must be green before merge.",
        ];
        for cut in expected_cuts {
            assert!(
                atoms.iter().any(|a| a == cut),
                "missing {cut:?} in {atoms:#?}"
            );
        }
        for max in [30, 50, 120] {
            assert!(atomize(MEETING_NOTE, max)
                .iter()
                .all(|a| a.chars().count() <= max));
        }
    }

    #[test]
    fn chat_digest() {
        let chat = "Chat digest: Sam (WhatsApp), 3 June

Sam: hey!! so I finally accepted the offer from Stripe lol
Sam: starting on July 1st, remote from Lisbon 🎉
Me: congrats!! 🎉
Sam: thanks haha. My sister Ana is visiting next week. She's a nurse in Porto.
Me: nice, what's her number?
Me: I prefer tea over coffee btw. Also, I'm vegetarian.
Sam: ok noted. See you tomorrow!
[10:42] Priya: the API is flaky again. it times out after 30s. um, can someone check?
";
        assert_eq!(
            atomize(chat, 200),
            [
                "Sam: I finally accepted the offer from Stripe",
                "Sam: starting on July 1st, remote from Lisbon",
                "Sam: My sister Ana is visiting next week.",
                "Sam: My sister Ana is a nurse in Porto.",
                "I prefer tea over coffee.",
                "I'm vegetarian.",
                "Priya: the API is flaky again.",
                "Priya: The API times out after 30s.",
            ]
        );
    }

    #[test]
    fn large_input_is_handled_in_linear_time() {
        // A 200 KB "sentence" of comma-separated words, a 100 KB word and 6,000 short
        // sentences: a quadratic scan would take minutes here.
        let commas = "alpha beta, gamma delta, ".repeat(8_000);
        let atoms = atomize(&commas, 100);
        assert!(atoms.len() > 1 && atoms.iter().all(|a| a.chars().count() <= 100));
        let word = format!("See {}", "x".repeat(100_000));
        let atoms = atomize(&word, 100);
        assert_eq!(atoms.len(), 2);
        assert_eq!((atoms[0].as_str(), atoms[1].len()), ("See", 100_000));
        let sentences = "Alice moved. She works. ".repeat(3_000);
        assert_eq!(atomize(&sentences, 100), ["Alice moved.", "Alice works."]);
    }

    // ----- sentence_spans ----------------------------------------------------------------

    /// The inputs of the split_sentences tests above, plus the two realistic notes.
    fn span_fixtures() -> Vec<&'static str> {
        vec![
            "Mr. Smith met Dr. Jones at 3 p.m. They talked. Mrs. Lee and Ms. Park joined later.",
            "The meeting ends at 5 p.m. on Friday. Bob leaves at 6 p.m. Carol stays.",
            "We use tools, e.g. Jira, i.e. the cloud one. It costs $3.50 vs. $5 elsewhere.",
            "Costs rose 5% etc. and more etc. Then we left.",
            "He moved to the U.S. last year. She moved to the U.S. The move was hard.",
            "Acme Inc. is based in Ohio. They bought Foo Ltd. Their CEO left.",
            "Pi is 3.14. Upgrade to v1.2.3 now. See example.com for details.",
            "J. R. R. Tolkien wrote The Hobbit. C. S. Lewis was his friend. \
             Plan B. The rest failed.",
            "I waited... and waited. It failed… Nothing happened… really.",
            r#"He said "Stop." Then he left. "Why?" she asked. (See the doc.) Next!"#,
            "Room No. 5 is free. The answer is no. p99 is 80 ms. Dr. Patel agreed.",
            "She has a Ph.D. from MIT. Her thesis was on NLP.",
            "Line one without punctuation\nLine two also without\n\n\
             A wrapped paragraph that is long enough to be wrapped\n\
             across two lines. Done.\n\
             The EU region follows in Q3 and is long enough\n\
             (v2.3.1 or later).\n\
             Sent to Alice and\n\
             Bob, who agreed.",
            "- First item\n- Second item. With two sentences\n* Third\n• Fourth\n\
             1. Numbered one\n2) Numbered two\n(3) Numbered three\n\
             - [ ] Open todo\n- [x] Done todo\n  continued in lower case",
            "# Heading\n## Sub heading ##\nText under it.\n---\n**Bold label**\n\
             Action items:\n**Owner:** Alice owns it.\n#hashtag stays",
            "no punctuation at all",
            "Two. sentences in lower case",
            "",
            " \n\t\n ... \n",
            "```\nfn main() {}\nlet x = 1;\n```\nAfter code.\n\
             alice: hi there. i moved\nbob: hey\nNote: not a speaker\n[10:42] Priya: on it",
            "Zoë runs the Café Ünïcode. Ça marche! «Très bien.» Fin",
            MEETING_NOTE,
            "Chat digest: Sam (WhatsApp), 3 June\n\nSam: hey!! so I finally accepted the offer \
             lol\nSam: starting on July 1st 🎉\nMe: I prefer tea  over\r\ncoffee btw.\r\n\
             [10:42] Priya: the API is flaky again. it times out after 30s.",
        ]
    }

    /// What split_sentences normalises: bold markers and runs of whitespace.
    fn normalized(text: &str) -> String {
        text.replace("**", "")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn spans_are_trimmed_ordered_substrings_matching_split_sentences() {
        for text in span_fixtures() {
            let spans = sentence_spans(text);
            let sentences = split_sentences(text);
            assert_eq!(spans.len(), sentences.len(), "{text:?}");
            let mut previous_end = 0;
            for (span, sentence) in spans.iter().zip(&sentences) {
                assert!(
                    span.start >= previous_end && span.start < span.end,
                    "{span:?}"
                );
                previous_end = span.end;
                let slice = text.get(span.clone()).expect("a char-boundary range");
                assert_eq!(slice, slice.trim(), "untrimmed span in {text:?}");
                assert_eq!(normalized(slice), normalized(sentence), "in {text:?}");
            }
        }
    }

    #[test]
    fn spans_point_at_the_source_as_written() {
        let text = "**Owner:** Alice owns it.\n- First  item\n  continued here.\n\
                    ```\n  let x = 1;\n```\n[10:42] Priya: on it. Done";
        let slices: Vec<&str> = sentence_spans(text)
            .into_iter()
            .map(|span| &text[span])
            .collect();
        assert_eq!(
            slices,
            [
                "**Owner:** Alice owns it.",
                "First  item\n  continued here.",
                "let x = 1;",
                "Priya: on it.",
                "Done"
            ]
        );
        // Byte offsets stay right after multi-byte characters.
        let text = "Zoë läuft. Ça marche!";
        let slices: Vec<&str> = sentence_spans(text).into_iter().map(|s| &text[s]).collect();
        assert_eq!(slices, ["Zoë läuft.", "Ça marche!"]);
    }

    #[test]
    fn first_pronoun_resolution_for_documents() {
        assert_eq!(
            resolve_first_pronoun(
                "The Danube is the second-longest river in Europe.",
                "It flows through ten countries."
            ),
            Some((
                "The Danube flows through ten countries.".to_string(),
                "The Danube".to_string()
            ))
        );
        assert_eq!(
            resolve_first_pronoun(
                "Rust is a systems programming language.",
                "This is a language without a garbage collector."
            )
            .map(|(resolved, _)| resolved)
            .as_deref(),
            Some("Rust is a language without a garbage collector.")
        );
        assert_eq!(
            resolve_first_pronoun("Sarah's birthday is on 3 May.", "She turns 30."),
            Some(("Sarah turns 30.".to_string(), "Sarah".to_string()))
        );
        assert_eq!(
            resolve_first_pronoun("Rust is a programming language.", "This is why it is fast."),
            None
        );
        // A person is not "it"; no subject, no resolution; "This" as a determiner stays.
        assert_eq!(
            resolve_first_pronoun(
                "Marie Curie discovered polonium.",
                "It was named after Poland."
            ),
            None
        );
        assert_eq!(resolve_first_pronoun("We met.", "It rained."), None);
        assert_eq!(
            resolve_first_pronoun("The river is long.", "This river is wide."),
            None
        );
    }
}
