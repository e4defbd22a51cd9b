//! Splitting long notes into atomic memories: short standalone statements, one per fact.
//!
//! Std-only and linear: a note is read once line by line into blocks (paragraphs, list items,
//! chat turns), each block is scanned once for sentence boundaries, and each sentence goes
//! through a fixed series of word-level passes (filler removal, pronoun resolution, length
//! limit). The word lists are small constant tables, each in the module that uses it.
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

use super::lexicon::{undouble, IRREGULAR_FINITE_VERBS, ORG_SUFFIXES};
use super::words::{apostrophes_straightened, is_apostrophe};

mod boundaries;
mod cleaning;
mod length;
mod pronouns;
mod segmentation;
mod subjects;

#[allow(clippy::wildcard_imports)]
use {boundaries::*, cleaning::*, length::*, pronouns::*, segmentation::*, subjects::*};

pub(crate) use cleaning::{is_no_info, is_question};
pub(crate) use pronouns::resolve_first_pronoun;
pub(crate) use segmentation::has_verb;

#[cfg(test)]
mod tests;

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
