//! Segmentation: a note read line by line into blocks (paragraphs, list items, chat turns,
//! headings, code) and each block into sentences; title and label lines told apart.

#[allow(clippy::wildcard_imports)]
use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A heading or a label line: context, not a statement.
    Heading,
    /// A sentence of prose, a list item or a chat turn.
    Sentence,
    /// A fenced code block, verbatim.
    Code,
}

#[derive(Debug)]
pub(super) struct Segment {
    pub(super) kind: Kind,
    pub(super) text: String,
    /// Where the segment is in the parsed text (bytes, surrounding whitespace excluded).
    pub(super) span: Range<usize>,
    /// The label of the chat turn this sentence belongs to ("Alice" in "Alice: hi").
    pub(super) speaker: Option<String>,
    pub(super) first_in_turn: bool,
    /// Whether this sentence comes from a list item.
    pub(super) item: bool,
}

impl Segment {
    pub(super) fn heading(text: String, span: Range<usize>) -> Self {
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
pub(super) struct Block {
    pub(super) text: String,
    /// Where each added line starts: (byte offset in `text`, byte offset in the source). A
    /// line is copied verbatim, so any byte of it maps back by its distance from that start.
    pub(super) origins: Vec<(usize, usize)>,
    pub(super) speaker: Option<String>,
    /// Where the speaker label starts in the source.
    pub(super) speaker_at: usize,
    pub(super) item: bool,
    pub(super) last_line_chars: usize,
}

impl Block {
    /// Appends `line`, which starts at byte `at` of the source.
    pub(super) fn add_line(&mut self, line: &str, at: usize) {
        if !self.text.is_empty() {
            self.text.push(' ');
        }
        self.origins.push((self.text.len(), at));
        self.text.push_str(line);
        self.last_line_chars = line.chars().count();
    }

    /// The source offset of byte `at` of `text` (which must lie within an added line).
    pub(super) fn source_offset(&self, at: usize) -> usize {
        let line = self.origins.partition_point(|&(start, _)| start <= at);
        let (start, source) = self.origins[line.saturating_sub(1)];
        source + (at - start)
    }

    /// Ends the block, appending its sentences to `out`.
    pub(super) fn flush(&mut self, out: &mut Vec<Segment>, source: &str) {
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
    pub(super) fn is_continued_by(&self, line: &str) -> bool {
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
pub(super) const CONNECTORS: &[&str] = &[
    "and", "or", "but", "the", "a", "an", "to", "of", "with", "for", "in", "on", "at", "by", "from",
    "that", "which", "who", "as", "is", "are", "was", "were", "will", "our", "my", "your",
];

/// Segments of a text, in order: sentences (with their chat speaker), headings and code blocks.
pub(super) fn parse(text: &str) -> Vec<Segment> {
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
pub(super) fn is_title_line(line: &str) -> bool {
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
pub(super) fn push_code(out: &mut Vec<Segment>, lines: &[&str], source: &str) {
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
pub(super) fn strip_quote_marker(mut line: &str) -> &str {
    while let Some(rest) = line.strip_prefix('>') {
        line = rest.trim_start();
    }
    line
}

/// A horizontal rule or setext underline: "---", "***", "___", "===", "* * *".
pub(super) fn is_rule(line: &str) -> bool {
    let mut marks = line.chars().filter(|c| !c.is_whitespace());
    let Some(first) = marks.next() else {
        return false;
    };
    let rest: Vec<char> = marks.collect();
    matches!(first, '-' | '*' | '_' | '=') && rest.len() >= 2 && rest.iter().all(|&c| c == first)
}

/// The title of a markdown ATX heading ("## Decisions" -> "Decisions").
pub(super) fn atx_heading(line: &str) -> Option<&str> {
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
pub(super) fn list_item(line: &str) -> Option<&str> {
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
pub(super) fn numbered_item(line: &str) -> Option<&str> {
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
pub(super) fn label_heading(line: &str) -> Option<String> {
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
pub(super) fn label_text(text: &str) -> String {
    text.replace("**", "")
        .trim()
        .trim_end_matches(':')
        .trim()
        .to_string()
}

/// The speaker and what they said, for a chat line "Alice: ..." or "[10:32] Alice: ...".
pub(super) fn speaker_turn(line: &str) -> Option<(&str, &str)> {
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
pub(super) fn is_speaker_label(label: &str) -> bool {
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
pub(super) const GENERIC_LABELS: &[&str] = &[
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
pub(super) const NOT_A_NAME: &[&str] = &[
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
