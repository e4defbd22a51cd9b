//! Offline extraction of atomic facts from one chunk of a Context Vault document.
//!
//! [`extract_facts`] reads a chunk's text (as stored, see [`crate::text::chunk`]) and returns
//! up to [`MAX_FACTS`] standalone statements, each with its evidence quote. It is a rule-based
//! fallback for when no LLM extractor is configured: std only, deterministic, linear in the
//! chunk apart from the small final deduplication.
//!
//! What it does:
//! - **Candidates** are the chunk's sentences ([`sentence_spans`]), or, in a line-oriented
//!   chunk (spreadsheet/CSV rows arriving as `Header: value; Header: value`, see
//!   [`crate::text::chunk`]), its lines; a row line is a candidate as a whole.
//! - **Filters.** A sentence is kept when it reads as an informative declarative statement: 4
//!   to 60 words (URLs not counted), a verb, not a question, not a heading-like fragment (no
//!   verb, Title Case without a full stop, or a trailing colon), not chit-chat ("Thanks!"),
//!   not code or markup, at least half letters, and not boilerplate: copyright and "all
//!   rights reserved" lines, "page N (of M)", "click here" / subscribe / cookie / privacy
//!   notices, table-of-contents dot leaders, reference-list entries ("\[12\] Smith, J. ...",
//!   DOI / ISBN / arXiv, "et al. (2019)", "Retrieved ...", "Archived from the original"),
//!   "see accompanying notes". A row is kept when at least two of its fields have a value.
//! - **Quote** is the candidate's exact slice of the chunk, trimmed: always a substring.
//! - **Content** is the quote made standalone, changing as little as possible: whitespace and
//!   line breaks collapsed, `**` bold markers removed, one leading connective dropped
//!   ("However,", "Also,", "In addition,", "Moreover,", ..., then a capital restored), and a
//!   first-word subject pronoun ("It", "They", "He", "She", "Its", "Their", or a definitional
//!   "This is a ...") replaced by the document's topic, only when that is safe: the topic is a
//!   short noun phrase (the last section-path component, else the title; no digits, not a
//!   generic heading such as "Overview" or "Page 3"), the previous sentence of the chunk has
//!   exactly that noun phrase as its subject, and the pronoun agrees with it (the
//!   agreement rules of [`crate::text::atomize::atomize`]: "it" is not a person, "they" is a
//!   plural or a group, the empty "it" of "it is important to" stays). Rows keep their text.
//! - **Category** comes from [`infer_category`] on the content ("by the" read as "by", so a
//!   passive agent such as "mapped by the surveyor" is not taken for a "by the end" deadline
//!   cue); a `fact` or `context`
//!   statement of policy ("must", "shall", "is required to", "is prohibited", "may not") is a
//!   `decision`.
//! - **Confidence** (in [0.05, 0.95], two decimals) is a documented heuristic: 0.6 for a
//!   sentence, +0.1 with a number or date, +0.05 with a named entity (a capitalised word
//!   after the first), +0.1 for a definitional pattern ("is a", "are the", "refers to",
//!   "consists of", "is defined as", "was founded", "is located"); -0.2 for a hedge ("may",
//!   "might", "could", "possibly", "perhaps", "likely", "believe", "expect", "anticipate",
//!   ...), -0.2 for first-person singular chatter ("I", "my", "me"), -0.1 for a pronoun
//!   subject left unresolved, -0.1 over 40 words, -0.05 under 6 words, -0.05 without final
//!   punctuation. A row starts at 0.7, +0.1 with a number, -0.1 over 60 words.
//! - **Selection**: near-identical candidates (same words, or a word-set overlap of 85% or
//!   more) are kept once, the better one; then the best [`MAX_FACTS`] by confidence, ties in
//!   chunk order.
//!
//! What it does not do: no LLM and no model of any kind; no coreference beyond the single
//! case above (other pronouns, "the company", "the former", ellipsis stay as written); no
//! splitting of a compound sentence into several facts, no paraphrase, no negation or
//! tense analysis; nothing is invented: the content only ever loses a connective or swaps a
//! pronoun for the topic phrase the previous sentence uses.

use std::collections::BTreeSet;
use std::ops::Range;

use memvault_pipelines::model::FactDraft;

use super::atomize::{has_verb, is_no_info, is_question, resolve_first_pronoun, sentence_spans};
use super::category::infer_category;
use super::chunk::{is_line_oriented, row_fields};
use super::lexicon::{IRREGULAR_FINITE_VERBS, PROSE_FINITE_VERBS};

/// The most facts taken from one chunk.
pub const MAX_FACTS: usize = 12;

/// Atomic facts of one chunk, best first (see the module documentation). `title` is the
/// document's title and `section_path` the chunk's section path; both only serve to resolve
/// a leading pronoun.
pub fn extract_facts(title: &str, section_path: &str, chunk: &str) -> Vec<FactDraft> {
    let section = section_path.rsplit(" > ").next().unwrap_or("");
    let topics: Vec<String> = [section, title]
        .into_iter()
        .filter_map(topic_phrase)
        .collect();
    let mut found: Vec<Found> = Vec::new();
    let mut previous: Option<String> = None;
    for (position, candidate) in candidates(chunk).into_iter().enumerate() {
        let quote = chunk[candidate.range].trim();
        let text = collapse(quote);
        if candidate.row {
            previous = None;
            if let Some(fact) = row_fact(quote, &text) {
                found.push(Found::new(fact, position));
            }
            continue;
        }
        let statement = strip_connective(&text);
        let resolved = previous
            .as_deref()
            .and_then(|previous| resolve_first_pronoun(previous, &statement))
            .filter(|(_, used)| topics.iter().any(|topic| same_phrase(used, topic)))
            .map(|(resolved, _)| resolved);
        let content = resolved.unwrap_or(statement);
        previous = Some(content.clone());
        if !is_statement(&text) {
            continue;
        }
        let fact = FactDraft {
            category: category(&content).to_string(),
            confidence: sentence_confidence(&content),
            quote: quote.to_string(),
            content,
        };
        found.push(Found::new(fact, position));
    }
    select(found)
}

/// A candidate: a sentence, or a whole row line.
struct Candidate {
    range: Range<usize>,
    row: bool,
}

/// Candidates of a chunk, in order.
fn candidates(chunk: &str) -> Vec<Candidate> {
    let sentences = |text: &str, base: usize| -> Vec<Candidate> {
        sentence_spans(text)
            .into_iter()
            .map(|span| Candidate {
                row: row_fields(&text[span.clone()]).is_some(),
                range: base + span.start..base + span.end,
            })
            .collect()
    };
    if !is_line_oriented(chunk) {
        return sentences(chunk, 0);
    }
    let mut out = Vec::new();
    let mut offset = 0;
    for line in chunk.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        if line.trim().is_empty() {
            continue;
        }
        if row_fields(line.trim()).is_some() {
            let lead = line.len() - line.trim_start().len();
            let range = start + lead..start + lead + line.trim().len();
            out.push(Candidate { range, row: true });
        } else {
            out.extend(sentences(line, start));
        }
    }
    out
}

/// A kept fact with what selection needs.
struct Found {
    fact: FactDraft,
    position: usize,
    words: BTreeSet<String>,
}

impl Found {
    fn new(fact: FactDraft, position: usize) -> Self {
        let words = fact
            .content
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        Found {
            fact,
            position,
            words,
        }
    }

    /// Same words, or a word-set overlap (Jaccard) of at least 85%.
    fn near(&self, other: &Found) -> bool {
        let shared = self.words.intersection(&other.words).count();
        let union = self.words.union(&other.words).count();
        union == 0 || shared * 100 >= union * 85
    }
}

/// Deduplicated, best first, at most [`MAX_FACTS`].
fn select(found: Vec<Found>) -> Vec<FactDraft> {
    let mut kept: Vec<Found> = Vec::new();
    for candidate in found {
        match kept.iter_mut().find(|k| k.near(&candidate)) {
            Some(existing) if candidate.fact.confidence > existing.fact.confidence => {
                *existing = candidate;
            }
            Some(_) => {}
            None => kept.push(candidate),
        }
    }
    kept.sort_by(|a, b| {
        b.fact
            .confidence
            .total_cmp(&a.fact.confidence)
            .then(a.position.cmp(&b.position))
    });
    kept.into_iter()
        .take(MAX_FACTS)
        .map(|found| found.fact)
        .collect()
}

// ----- text ------------------------------------------------------------------------------------

/// Whitespace collapsed to single spaces, `**` bold markers removed.
fn collapse(text: &str) -> String {
    text.replace("**", "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The statement without one leading connective ("However, the ..." -> "The ..."), when at
/// least four words remain.
fn strip_connective(text: &str) -> String {
    #[rustfmt::skip]
    const WITH_COMMA: &[&str] = &[
        "however", "also", "in addition", "additionally", "moreover", "furthermore", "further",
        "therefore", "thus", "hence", "consequently", "as a result", "accordingly", "meanwhile",
        "nevertheless", "nonetheless", "still", "similarly", "likewise", "indeed", "in fact",
        "finally", "lastly", "notably", "importantly", "specifically", "in particular",
        "for example", "for instance", "besides", "instead", "in contrast", "by contrast",
        "on the other hand", "first", "firstly", "second", "secondly", "third", "thirdly",
        "overall", "in summary", "in short", "in general", "generally", "of course", "then",
        "so", "and", "but", "yet", "anyway", "in turn", "as such",
    ];
    const BARE: &[&str] = &["and", "but", "also", "plus"];
    let lower = text.to_lowercase();
    let mut rest = None;
    for connective in WITH_COMMA {
        if let Some(after) = lower.strip_prefix(connective) {
            if after.starts_with(", ") {
                rest = Some(connective.len() + 2);
                break;
            }
        }
    }
    if rest.is_none() {
        for connective in BARE {
            if lower
                .strip_prefix(connective)
                .is_some_and(|after| after.starts_with(' '))
            {
                rest = Some(connective.len() + 1);
                break;
            }
        }
    }
    match rest {
        Some(at) if text[at..].split_whitespace().count() >= 4 => capitalize(&text[at..]),
        _ => text.to_string(),
    }
}

/// The first letter in upper case when the first word is plain lower case ("the bridge" ->
/// "The bridge", but "iPhone" and "eBay" stay).
fn capitalize(text: &str) -> String {
    let first_word = text.split(' ').next().unwrap_or("");
    let plain = first_word
        .chars()
        .filter(|c| c.is_alphabetic())
        .all(char::is_lowercase);
    let mut chars = text.chars();
    match chars.next() {
        Some(first) if plain && first.is_lowercase() => first.to_uppercase().chain(chars).collect(),
        _ => text.to_string(),
    }
}

/// The noun phrase a heading or title names, usable as a subject: "Varnel River", "Rust" (from
/// "Rust (programming language)"). `None` for generic or numbered headings ("Overview", "Page
/// 3", "Item 1. Business"), long ones, and ones with a verb.
fn topic_phrase(heading: &str) -> Option<String> {
    #[rustfmt::skip]
    const GENERIC: &[&str] = &[
        "overview", "introduction", "intro", "summary", "abstract", "background", "contents",
        "content", "notes", "note", "appendix", "references", "bibliography", "conclusion",
        "conclusions", "discussion", "results", "methods", "page", "sheet", "rows", "row",
        "section", "chapter", "part", "item", "table", "figure", "details", "general", "misc",
        "other", "history", "description", "about", "faq", "index", "glossary", "see", "also",
        "external", "links", "further", "reading", "sources", "document", "untitled", "draft",
        "report", "minutes", "agenda", "risk", "risks", "factors", "business", "management",
        "analysis", "statements", "financial", "highlights", "features", "usage", "setup",
        "installation", "examples", "example",
    ];
    let heading = heading.trim();
    let heading = match heading.find(" (") {
        Some(at) if heading.ends_with(')') => &heading[..at],
        _ => heading,
    };
    let heading = heading.trim().trim_end_matches([':', '.', ';']).trim();
    let words: Vec<&str> = heading.split_whitespace().collect();
    let word_ok = |w: &&str| {
        w.chars()
            .all(|c| c.is_alphabetic() || matches!(c, '-' | '\'' | '\u{2019}' | '&' | '.'))
            && !GENERIC.contains(&w.to_lowercase().trim_end_matches('.'))
    };
    let usable = (1..=5).contains(&words.len())
        && words.iter().all(word_ok)
        && words.iter().any(|w| w.chars().any(char::is_alphabetic))
        && !has_verb(heading);
    usable.then(|| heading.to_string())
}

/// Whether two noun phrases are the same, case and a leading "the" ignored ("The Varnel
/// River" and "Varnel River").
fn same_phrase(a: &str, b: &str) -> bool {
    let key = |s: &str| -> String {
        let lower = s.trim().to_lowercase();
        lower.strip_prefix("the ").unwrap_or(&lower).to_string()
    };
    key(a) == key(b)
}

// ----- filters -----------------------------------------------------------------------------------

/// Whether a (collapsed) sentence is an informative declarative statement.
fn is_statement(text: &str) -> bool {
    let words = counted_words(text);
    (4..=60).contains(&words)
        && !is_question(text)
        && !is_no_info(text)
        && !is_heading_like(text)
        && !is_boilerplate(text)
        && !is_code_like(text)
        && mostly_letters(text)
        && (has_verb(text) || has_document_verb(text))
}

/// Words with a letter or digit, URLs not counted.
fn counted_words(text: &str) -> usize {
    text.split(' ')
        .filter(|w| w.chars().any(char::is_alphanumeric) && !is_url(w))
        .count()
}

fn is_url(word: &str) -> bool {
    let word = word.trim_start_matches(['(', '<', '[']).to_lowercase();
    word.starts_with("http://") || word.starts_with("https://") || word.starts_with("www.")
}

/// No final stop and Title Case (most words capitalised), or ending in a colon.
fn is_heading_like(text: &str) -> bool {
    const SMALL: &[&str] = &[
        "of", "and", "the", "in", "for", "to", "a", "an", "on", "at", "by", "with", "or", "vs",
    ];
    if text.ends_with(':') {
        return true;
    }
    let stopped = text
        .trim_end_matches(['"', '\'', ')', ']', '\u{201D}', '\u{2019}'])
        .ends_with(['.', '!', '?', '…']);
    let words: Vec<&str> = text
        .split(' ')
        .filter(|w| w.chars().any(char::is_alphabetic))
        .filter(|w| !SMALL.contains(&w.to_lowercase().as_str()))
        .collect();
    let capitalised = words
        .iter()
        .filter(|w| {
            w.trim_start_matches(|c: char| !c.is_alphanumeric())
                .starts_with(char::is_uppercase)
        })
        .count();
    !stopped && !words.is_empty() && capitalised * 5 >= words.len() * 4
}

/// Copyright notices, page markers, calls to action, TOC leaders and reference entries.
fn is_boilerplate(text: &str) -> bool {
    #[rustfmt::skip]
    const PHRASES: &[&str] = &[
        "copyright", "©", "all rights reserved", "click here", "terms of use",
        "terms and conditions", "privacy policy", "cookie", "unsubscribe", "subscribe to",
        "sign up for our", "follow us on", "share this", "print this page", "back to top",
        "table of contents", "continued on next page", "intentionally left blank",
        "see accompanying notes", "retrieved from", "archived from the original", "doi:",
        "doi.org", "arxiv:", "isbn", "issn", "et al.,", "(accessed",
    ];
    let lower = text.to_lowercase();
    if PHRASES.iter().any(|p| lower.contains(p)) {
        return true;
    }
    if ["....", ". . .", "……", "· · ·", "____"]
        .iter()
        .any(|leader| text.contains(leader))
    {
        return true;
    }
    // "[12] Smith, J. ...", "^ Smith ...", "Retrieved 3 May 2020."
    let reference_mark = text
        .strip_prefix('[')
        .and_then(|rest| rest.split_once(']'))
        .is_some_and(|(inside, _)| {
            !inside.is_empty() && inside.chars().all(|c| c.is_ascii_digit())
        });
    if reference_mark || text.starts_with('^') || lower.starts_with("retrieved ") {
        return true;
    }
    // "et al. (2019)" / "Smith, J. (2019)." style citations.
    let cited_year = lower.contains("et al") && has_parenthesised_year(&lower);
    if cited_year {
        return true;
    }
    // "page 3", "page 3 of 12", "p. 4 of 9"
    let words: Vec<&str> = lower.split(' ').collect();
    words.windows(2).any(|pair| {
        matches!(pair[0], "page" | "p." | "pg.")
            && pair[1]
                .trim_end_matches(|c: char| !c.is_alphanumeric())
                .chars()
                .all(|c| c.is_ascii_digit())
            && !pair[1].is_empty()
    }) && (lower.contains(" of ") || words.len() <= 6)
}

fn has_parenthesised_year(text: &str) -> bool {
    text.match_indices('(').any(|(at, _)| {
        let year: String = text[at + 1..].chars().take(5).collect();
        year.len() == 5
            && year[..4].chars().all(|c| c.is_ascii_digit())
            && matches!(&year[4..], ")" | "," | ";" | "a" | "b")
    })
}

/// Code or markup: braces, comparison and assignment operators, pipes, backslashes.
fn is_code_like(text: &str) -> bool {
    let marks = text
        .chars()
        .filter(|c| matches!(c, '{' | '}' | '=' | '<' | '>' | '|' | '\\'))
        .count();
    marks >= 3 || text.contains("();") || text.contains("=>")
}

/// At least half of the visible characters are letters.
fn mostly_letters(text: &str) -> bool {
    let visible = text.chars().filter(|c| !c.is_whitespace()).count();
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    letters * 2 >= visible
}

/// A finite verb of expository prose that the note-oriented [`has_verb`] does not know:
/// "flows", "operates", "comprises", "increased", "was" forms aside (those it knows).
fn has_document_verb(text: &str) -> bool {
    #[rustfmt::skip]
    const BASE: &[&str] = &[
        "provide", "operate", "generate", "represent", "consist", "remain", "offer", "flow",
        "produce", "reach", "form", "describe", "refer", "occur", "exist", "enable", "increase",
        "decrease", "decline", "rise", "employ", "account", "comprise", "mean", "show",
        "indicate", "involve", "result", "affect", "compete", "face", "contribute", "extend",
        "cross", "border", "connect", "drain", "rank", "measure", "weigh", "range", "vary",
        "exceed", "lease", "manufacture", "distribute", "market", "develop", "maintain",
        "continue", "appear", "follow", "feature", "house", "span", "emerge", "originate",
        "evolve", "govern", "regulate", "apply", "consider", "define", "derive", "determine",
        "ensure", "estimate", "identify", "introduce", "lack", "last", "limit", "mark", "name",
        "note", "obtain", "perform", "permit", "possess", "protect", "raise", "record", "reduce",
        "reflect", "relate", "reside", "retain", "rule", "stand", "suffer", "supply", "surround",
        "total", "treat", "attract", "carry", "lie", "enter", "empty", "join", "divide",
        "separate", "link", "power", "fuel", "drive", "export", "import", "grow", "host",
        "contain", "reach", "sit", "begin", "end", "serve", "earn", "owe", "list", "trade",
        "outline", "state", "specify", "require", "depend", "belong", "mean", "correspond",
        "differ", "resemble", "equal", "average", "peak", "fall", "drop", "gain", "lose",
    ];
    text.split(' ').skip(1).any(|raw| {
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric()).to_string();
        if word.is_empty() || !word.chars().all(|c| c.is_ascii_lowercase()) {
            return false;
        }
        let word = word.as_str();
        if IRREGULAR_FINITE_VERBS.contains(&word) || PROSE_FINITE_VERBS.contains(&word) {
            return true;
        }
        let stems = [
            word.strip_suffix("ies").map(|s| format!("{s}y")),
            word.strip_suffix("es").map(str::to_string),
            word.strip_suffix('s').map(str::to_string),
            word.strip_suffix("ed").map(str::to_string),
            word.strip_suffix('d').map(str::to_string),
            word.strip_suffix("ied").map(|s| format!("{s}y")),
        ];
        if stems
            .iter()
            .flatten()
            .any(|stem| BASE.contains(&stem.as_str()))
        {
            return true;
        }
        // Most longer "-ed" words are past tenses or participles ("founded", "located"); not
        // "-eed" nouns ("speed", "seed").
        word.len() >= 6 && word.ends_with("ed") && !word.ends_with("eed")
    })
}

// ----- rows ------------------------------------------------------------------------------------

/// A row line with at least two filled fields, as a fact.
fn row_fact(quote: &str, text: &str) -> Option<FactDraft> {
    let fields = row_fields(text)?;
    let filled = fields.iter().filter(|(_, value)| !value.is_empty()).count();
    if filled < 2 {
        return None;
    }
    let mut confidence = 0.7;
    if text.chars().any(|c| c.is_ascii_digit()) {
        confidence += 0.1;
    }
    if text.split(' ').count() > 60 {
        confidence -= 0.1;
    }
    Some(FactDraft {
        content: text.to_string(),
        category: category(text).to_string(),
        quote: quote.to_string(),
        confidence: round(confidence),
    })
}

// ----- category and confidence -------------------------------------------------------------------

/// [`infer_category`] (with "by the" read as "by", so that only a real deadline such as "by
/// the end of May" reads as context), and statements of policy as decisions.
fn category(content: &str) -> &'static str {
    #[rustfmt::skip]
    const POLICY: &[&str] = &[
        " must ", " shall ", " is required to ", " are required to ", " is prohibited",
        " are prohibited", " may not ", " is not permitted", " are not permitted",
        " is mandatory", " are mandatory",
    ];
    // category.rs reads "by the"/"until the" + a day word as a deadline ("by the end of
    // May"); the passive agent of a document sentence ("mapped by the surveyor") is not one.
    let inferred = infer_category(&content.replace(" by the ", " by "));
    let lower = format!(" {} ", content.to_lowercase());
    if matches!(inferred, "fact" | "context") && POLICY.iter().any(|cue| lower.contains(cue)) {
        "decision"
    } else {
        inferred
    }
}

/// The heuristic of the module documentation, for a sentence's content.
fn sentence_confidence(content: &str) -> f32 {
    #[rustfmt::skip]
    const HEDGES: &[&str] = &[
        "may", "might", "could", "possibly", "perhaps", "probably", "likely", "unlikely",
        "maybe", "seems", "seem", "appears", "suggests", "suggest", "believe", "believes",
        "expect", "expects", "anticipate", "anticipates", "intend", "intends", "reportedly",
        "allegedly", "supposedly", "potentially", "uncertain", "would",
    ];
    #[rustfmt::skip]
    const DEFINITIONAL: &[&str] = &[
        " is a ", " is an ", " is the ", " are the ", " was a ", " was an ", " was the ",
        " refers to ", " consists of ", " is defined as ", " was founded ", " is located ",
        " are located ", " is known as ", " is one of ", " means ",
    ];
    const FIRST_PERSON: &[&str] = &["i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine"];
    const PRONOUNS: &[&str] = &[
        "it", "they", "this", "these", "those", "he", "she", "its", "their", "his", "her", "such",
    ];
    let words: Vec<String> = content
        .split(' ')
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    let lower = format!(" {} ", content.to_lowercase());
    let mut confidence: f32 = 0.6;
    if content.chars().any(|c| c.is_ascii_digit()) {
        confidence += 0.1;
    }
    let named = content.split(' ').skip(1).any(|w| {
        let w = w.trim_start_matches(|c: char| !c.is_alphanumeric());
        w.starts_with(char::is_uppercase) && w != "I" && !w.starts_with("I'")
    });
    if named {
        confidence += 0.05;
    }
    if DEFINITIONAL.iter().any(|p| lower.contains(p)) {
        confidence += 0.1;
    }
    if has(HEDGES) {
        confidence -= 0.2;
    }
    if has(FIRST_PERSON) {
        confidence -= 0.2;
    }
    if words
        .first()
        .is_some_and(|w| PRONOUNS.contains(&w.as_str()))
    {
        confidence -= 0.1;
    }
    if words.len() > 40 {
        confidence -= 0.1;
    }
    if words.len() < 6 {
        confidence -= 0.05;
    }
    let stopped = content
        .trim_end_matches(['"', '\'', ')', ']', '\u{201D}', '\u{2019}'])
        .ends_with(['.', '!', '…']);
    if !stopped {
        confidence -= 0.05;
    }
    round(confidence)
}

/// Clamped to [0.05, 0.95] and rounded to two decimals (so equal scores compare equal).
fn round(confidence: f32) -> f32 {
    (confidence.clamp(0.05, 0.95) * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIKI: &str = "The Varnel River is a river in northern Europe. It rises in the Korsa \
        Hills at an elevation of 1,240 m and flows for 412 km before reaching the Baltic Sea. \
        The river was first mapped in 1783 by the surveyor Anna Lindqvist.\n\nHowever, its \
        lower course was only charted in 1811. Several hydroelectric dams were built along it \
        between 1950 and 1975. The Varnel may have been navigable as far as Tesk in the \
        Middle Ages.";

    const FILING: &str = "We operate 214 retail stores in 11 states and employ approximately \
        9,800 people. Net revenue increased 8.4% to $1.92 billion in fiscal 2023, compared \
        with $1.77 billion in fiscal 2022. In addition, gross margin improved by 120 basis \
        points due to lower freight costs. We may be unable to renew our store leases on \
        favorable terms. All employees must complete annual compliance training.";

    fn contents(facts: &[FactDraft]) -> Vec<&str> {
        facts.iter().map(|f| f.content.as_str()).collect()
    }

    #[test]
    fn quotes_are_exact_substrings_of_the_chunk() {
        let texts = [
            WIKI,
            FILING,
            "## Setup\n\n- Install   the **memvault** package on every\n  host before May.\n\
             - The installer writes logs to `/var/log/memvault`.\n\n> The daemon restarts \
             itself after a crash.",
            "Region: North; Revenue: 4.2 million; Manager: Dana Reyes\nRegion: South; \
             Revenue: 3.9 million; Manager: Omar Haddad\n",
            "  Zoë Café opened in 2019 in Lyon.\r\nIts owner, Zoë Martin, trained in Paris.  ",
            "Dr. Patel from Acme Inc. reviewed the design on Tuesday at 10 a.m. She approved \
             the budget of $48k, i.e. 12% more than Q1.",
        ];
        for text in texts {
            let facts = extract_facts("Doc", "Section", text);
            assert!(!facts.is_empty(), "no facts from {text:?}");
            for fact in &facts {
                assert!(
                    text.contains(&fact.quote),
                    "{:?} not in {text:?}",
                    fact.quote
                );
                assert_eq!(fact.quote, fact.quote.trim());
                assert!((0.0..=1.0).contains(&fact.confidence));
            }
        }
    }

    #[test]
    fn boilerplate_questions_and_headings_are_rejected() {
        let junk = "Copyright © 2023 Acme Corp. All rights reserved.\n\n\
                    Page 3 of 12\n\n\
                    Click here to subscribe to our weekly newsletter today.\n\n\
                    Introduction to the river basin ........ 4\n\n\
                    [12] Smith, J. and Berg, K. Rivers of northern Europe were surveyed. \
                    Journal of Hydrology, 4(2), 1-20.\n\n\
                    Lindqvist, A., Berg, K. et al. (2019) Sediment transport in the Varnel \
                    delta. Oslo: Northern Press.\n\n\
                    https://example.com/rivers https://example.com/lakes\n\n\
                    12.5 | 13.2 | 14.9 | 15.0 | 16.1 were measured.\n\n\
                    What is the length of the Varnel River?\n\n\
                    Annual Report And Consolidated Financial Statements\n\n\
                    Risk Factors\n\n\
                    Thanks so much!\n\n\
                    Key figures for the year:";
        let facts = extract_facts("Report", "", junk);
        assert!(facts.is_empty(), "{:#?}", contents(&facts));
        // The same junk with one real statement keeps only that.
        let text = format!("{junk}\n\nThe basin covers about 18,500 square kilometres.");
        let facts = extract_facts("Report", "", &text);
        assert_eq!(
            contents(&facts),
            ["The basin covers about 18,500 square kilometres."]
        );
        // Too short or verbless.
        assert!(extract_facts("", "", "Rivers flow.").is_empty());
        assert!(extract_facts("", "", "A long list of northern rivers and lakes.").is_empty());
    }

    #[test]
    fn a_row_line_becomes_a_fact() {
        let rows = "Region: North; Revenue: 4.2 million; Manager: Dana Reyes\n\
                    Region: South; Revenue: ; Manager: \n\
                    Region: East; Revenue: 3.1 million; Manager: Li Wei";
        let facts = extract_facts("Sales 2023", "Sheet1 > Rows 2-4", rows);
        assert_eq!(
            contents(&facts),
            [
                "Region: North; Revenue: 4.2 million; Manager: Dana Reyes",
                "Region: East; Revenue: 3.1 million; Manager: Li Wei"
            ]
        );
        assert!(facts.iter().all(|f| f.category == "fact"));
        assert!(facts.iter().all(|f| (f.confidence - 0.8).abs() < 1e-6));
        // A single row in a prose chunk too.
        let facts = extract_facts("", "", "Name: Alice Chen; Team: Billing; Office: Lisbon");
        assert_eq!(facts.len(), 1);
        assert_eq!(
            facts[0].quote,
            "Name: Alice Chen; Team: Billing; Office: Lisbon"
        );
    }

    #[test]
    fn pronoun_subjects_take_the_topic_only_when_safe() {
        let facts = extract_facts("Varnel River", "Geography", WIKI);
        let rises = facts
            .iter()
            .find(|f| f.quote.starts_with("It rises"))
            .expect("the second sentence");
        assert!(
            rises
                .content
                .starts_with("The Varnel River rises in the Korsa Hills"),
            "{}",
            rises.content
        );
        // The previous sentence's subject must be the topic: "its lower course" follows "The
        // river was first mapped ...", whose subject is "The river", not "Varnel River".
        let lower = facts
            .iter()
            .find(|f| f.quote.starts_with("However"))
            .unwrap();
        assert_eq!(lower.content, "Its lower course was only charted in 1811.");
        // No usable topic (numbered or generic headings): the pronoun stays.
        let facts = extract_facts("Annual Report 2023", "Overview", WIKI);
        let rises = facts
            .iter()
            .find(|f| f.quote.starts_with("It rises"))
            .unwrap();
        assert!(rises.content.starts_with("It rises"));
        // A topic that is not what the previous sentence is about.
        let text = "The Korsa Dam was completed in 1962. It produces 300 MW of electricity.";
        let facts = extract_facts("Varnel River", "", text);
        assert!(facts
            .iter()
            .any(|f| f.content == "It produces 300 MW of electricity."));
        // The section path's last component is the topic; a person is not "it".
        let text = "Anna Lindqvist founded the survey office in 1783. She was born in Uppsala \
                    in 1751.";
        let facts = extract_facts("Explorers", "People > Anna Lindqvist", text);
        assert!(facts
            .iter()
            .any(|f| f.content == "Anna Lindqvist was born in Uppsala in 1751."));
        let text = "Anna Lindqvist founded the survey office in 1783. It was later renamed.";
        let facts = extract_facts("Explorers", "People > Anna Lindqvist", text);
        assert!(facts.iter().any(|f| f.content == "It was later renamed."));
    }

    #[test]
    fn connectives_are_dropped_and_categories_inferred() {
        let facts = extract_facts("Annual report", "Item 7", FILING);
        let by_quote = |start: &str| facts.iter().find(|f| f.quote.starts_with(start)).unwrap();
        let margin = by_quote("In addition");
        assert_eq!(
            margin.content,
            "Gross margin improved by 120 basis points due to lower freight costs."
        );
        assert_eq!(margin.category, "fact");
        assert_eq!(by_quote("All employees").category, "decision");
        // A passive agent is no deadline; a deadline still reads as context.
        let facts = extract_facts(
            "",
            "",
            "The river was first mapped in 1783 by the surveyor Anna Lindqvist. The survey \
             report is due by the end of May.",
        );
        assert_eq!(
            facts
                .iter()
                .map(|f| f.category.as_str())
                .collect::<Vec<_>>(),
            ["fact", "context"]
        );
        let text = "We decided to close the Dayton plant in March 2024. The plant employs \
                    300 people.";
        let facts = extract_facts("", "", text);
        assert_eq!(facts.len(), 2);
        assert_eq!(
            facts
                .iter()
                .map(|f| f.category.as_str())
                .collect::<Vec<_>>(),
            ["decision", "fact"]
        );
    }

    #[test]
    fn confidence_follows_the_heuristic() {
        let facts = extract_facts("", "", FILING);
        let get = |start: &str| {
            facts
                .iter()
                .find(|f| f.quote.starts_with(start))
                .unwrap()
                .confidence
        };
        // Hedged and first-person plural statement: lower than the numeric fact.
        assert!(get("We may be unable") < get("Net revenue increased"));
        assert!((get("Net revenue increased") - 0.7).abs() < 1e-6);
        assert!((get("We may be unable") - 0.4).abs() < 1e-6);
        // Best first.
        assert!(facts
            .windows(2)
            .all(|pair| pair[0].confidence >= pair[1].confidence));
        let definitional = extract_facts("", "", "The Varnel River is a river in Europe.");
        // 0.6 + 0.05 (a name) + 0.1 (definitional).
        assert!((definitional[0].confidence - 0.75).abs() < 1e-6);
        let chatter = extract_facts("", "", "I think the river looks nice.");
        assert!(chatter[0].confidence < 0.5);
    }

    #[test]
    fn at_most_twelve_facts_deduplicated_best_first() {
        let mut text = String::new();
        for i in 0..30 {
            text.push_str(&format!(
                "Station {i} recorded a flow of {} cubic metres. ",
                i * 11
            ));
        }
        text.push_str("The station network is run by the Varnel Water Authority.");
        text.push_str(" The  station network is run by the Varnel Water Authority!");
        let facts = extract_facts("", "", &text);
        assert_eq!(facts.len(), MAX_FACTS);
        assert!(facts
            .windows(2)
            .all(|pair| pair[0].confidence >= pair[1].confidence));
        // Ties keep chunk order.
        assert!(facts[0].quote.starts_with("Station 0 recorded"));
        // One word apart out of nine is near-identical; a different statement is not.
        let fewer = extract_facts(
            "",
            "",
            "The station network is run by the Varnel Water Authority. The station network \
             is run by the Varnel Water Authority! The network is run by the Varnel Water \
             Authority. The station network was expanded in 1998.",
        );
        assert_eq!(
            contents(&fewer),
            [
                "The station network was expanded in 1998.",
                "The station network is run by the Varnel Water Authority."
            ]
        );
        // Of two near-identical statements the better one stays, in its own place.
        let better = extract_facts(
            "",
            "",
            "The plant employs people in Ohio. The old mill was closed in 1990. The plant \
             employs 300 people in Ohio.",
        );
        assert_eq!(
            contents(&better),
            [
                "The plant employs 300 people in Ohio.",
                "The old mill was closed in 1990."
            ]
        );
    }

    #[test]
    fn deterministic_and_empty() {
        assert!(extract_facts("", "", "").is_empty());
        assert!(extract_facts("T", "P", "   \n\n ").is_empty());
        assert_eq!(
            extract_facts("Varnel River", "Geography", WIKI),
            extract_facts("Varnel River", "Geography", WIKI)
        );
    }
}
