//! Category inference for short memories saved without one.
//!
//! Pure and std-only: the text is cut into lower-case words once (contractions expanded), and a
//! fixed set of word-sequence cues is tried at each word, so the cost is linear in the text.

use super::words::{contraction, straighten, Contraction};

/// One of `"preference"`, `"fact"`, `"decision"`, `"context"` for a short memory.
///
/// The text is read as lower-case words: case does not matter, cues only match whole words
/// ("prefers" is a cue, "preference" is not; "currently" is, "concurrently" is not), curly
/// apostrophes are straightened and contractions are expanded ("we'll" -> "we will", "can't" ->
/// "can not", "I'd" -> "I would", "it's" -> "it is", while "Alice's" stays "alice").
///
/// Rules, in order of precedence (the first that matches wins):
///
/// 1. **decision**: "decided", "agreed", "chose"/"chosen", "opted", "approved", "rejected",
///    "vetoed", "finalized", "signed off", "settled on", "going forward", "moving forward",
///    "from now on", "from today on", "the/our plan is", "we will"/"we'll"/"we shall", "we'll go
///    with", "let's go with", "we went with", "we're going with", "the decision is to", "made the
///    decision", "final decision", or a leading "Decision:" label. A cue negated just before it
///    ("we have not decided", "nothing was agreed", "not yet approved") is not a decision but an
///    open question, which reads as context. "We'll be in Berlin next week" (a whereabouts) and
///    "we'll see"/"we'll need"/"we'll probably" are not decisions either.
/// 2. **preference**: likes and dislikes ("likes", "loves", "enjoys", "hates", "dislikes", "can't
///    stand", "not a fan of", "is into", "interested in"), wants ("want", "wants", "would like"),
///    favourites ("favourite", "favorite", "fave"), "prefer"/"prefers"/"preferred", "would rather",
///    "rather than", habits ("always use", "usually drink", "never use"), "my preference is", and
///    style choices about how the user wants things done: an instruction such as "Please answer
///    in French", "Keep replies short", "Be concise", "Don't use emojis", "Avoid jargon", "Always
///    cite sources", "Call me Sam", or "answers should ...". "like" as a comparison is not a cue
///    ("looks like", "something like", "it's like", "like 20 people", a leading "Like").
/// 3. **context**: a time-bound situation: "currently", "right now", "at the moment", "at
///    present", "for now", "for the time being", "these days", "temporarily", "today", "tonight",
///    "tomorrow", "yesterday", "recently", "soon", "upcoming", "ongoing", "pending", "deadline",
///    "this/next/last/coming week, month, sprint, quarter, year, weekend, Monday...", "working on",
///    "in progress", "in review", "on hold", "on leave", "on vacation", "out of office", "until
///    Friday", "due on/by ...", "waiting for", "planning to", "about to", "is down/broken/
///    blocked/failing/offline", first-person progressive ("I'm learning Rust", "we're hiring";
///    not "we're using"), and the negated decisions of rule 1.
/// 4. **fact**: everything else: stable facts such as names, places, relationships, numbers.
///
/// Because preference outranks context, explicit time-bound wording about a liking still reads
/// as a preference ("This week I prefer async standups"); because decision outranks preference,
/// "From now on, answer in French" reads as a decision.
pub fn infer_category(text: &str) -> &'static str {
    let words = words(text);
    let mut negated_decision = false;
    let mut decision = false;
    for i in 0..words.len() {
        if let Some(len) = decision_at(&words, i) {
            if is_negated(&words, i) || is_negated(&words, i + len - 1) {
                negated_decision = true;
            } else {
                decision = true;
                break;
            }
        }
    }
    if decision {
        return "decision";
    }
    if (0..words.len()).any(|i| preference_at(&words, i)) || is_style_instruction(&words) {
        return "preference";
    }
    if negated_decision || (0..words.len()).any(|i| context_at(&words, i)) {
        return "context";
    }
    "fact"
}

// ----- words -------------------------------------------------------------------------------

/// Lower-case words of `text`, contractions expanded; hyphens and other punctuation separate.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        let c = straighten(c);
        if c.is_alphanumeric() || (c == '\'' && !word.is_empty()) {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            push_expanded(&mut out, &word);
            word.clear();
        }
    }
    if !word.is_empty() {
        push_expanded(&mut out, &word);
    }
    out
}

/// Pushes `word` with its contraction expanded ("we'll" -> "we", "will").
fn push_expanded(out: &mut Vec<String>, word: &str) {
    let word = word.trim_end_matches('\'');
    // "it's" is "it is"; "Alice's" is a possessive and keeps only the name.
    let (stem, tail): (&str, &str) = match contraction(word) {
        Some(Contraction::Whole(whole)) => {
            out.extend(whole.iter().map(|w| (*w).to_string()));
            return;
        }
        Some(Contraction::Ending(stem, ending)) => (stem, ending),
        Some(Contraction::Is(stem)) => (stem, "is"),
        Some(Contraction::Possessive(stem)) => (stem, ""),
        None => (word, ""),
    };
    let stem = stem.trim_matches('\'');
    if !stem.is_empty() {
        out.push(stem.to_string());
    }
    if !tail.is_empty() {
        out.push(tail.to_string());
    }
}

/// Whether the words from `i` on start with `pattern`, one set of alternatives per word.
fn seq_at(words: &[String], i: usize, pattern: &[&[&str]]) -> bool {
    i + pattern.len() <= words.len()
        && pattern
            .iter()
            .zip(&words[i..])
            .all(|(alternatives, word)| alternatives.contains(&word.as_str()))
}

fn word_at(words: &[String], i: usize) -> &str {
    words.get(i).map_or("", String::as_str)
}

fn is_any(words: &[String], i: usize, set: &[&str]) -> bool {
    set.contains(&word_at(words, i))
}

// ----- decision ----------------------------------------------------------------------------

#[rustfmt::skip]
const DECISION_WORDS: &[&str] = &[
    "decided", "agreed", "chose", "chosen", "opted", "approved", "rejected", "vetoed", "finalized",
    "finalised", "greenlit", "greenlighted",
];

const DECISION_PHRASES: &[&[&[&str]]] = &[
    &[&["signed"], &["off"]],
    &[&["settled"], &["on", "upon"]],
    &[&["going", "moving"], &["forward"]],
    &[&["from"], &["now", "today", "here"], &["on"]],
    &[&["the", "our"], &["plan"], &["is", "was"]],
    &[&["let"], &["us"], &["go"], &["with"]],
    &[&["we", "i"], &["went"], &["with"]],
    &[&["we"], &["are"], &["going"], &["with"]],
    &[&["decision"], &["is", "was"], &["to", "that"]],
    &[&["made"], &["the", "a"], &["decision"]],
    &[&["final"], &["decision"]],
];

/// Words after "we will" that make it a forecast or a whereabouts rather than a decision.
#[rustfmt::skip]
const NOT_A_COMMITMENT: &[&str] = &[
    "see", "need", "probably", "likely", "maybe", "possibly", "know", "hear", "talk", "meet",
    "catch",
];

/// Words after "we will be" that describe a whereabouts ("we'll be in Berlin").
#[rustfmt::skip]
const WHEREABOUTS: &[&str] = &[
    "in", "at", "on", "away", "out", "back", "off", "offline", "there", "home", "late", "busy",
    "around", "travelling", "traveling", "visiting",
];

/// The number of words of the decision cue starting at `i`, if any.
fn decision_at(words: &[String], i: usize) -> Option<usize> {
    let word = word_at(words, i);
    if DECISION_WORDS.contains(&word) || (i == 0 && matches!(word, "decision" | "decisions")) {
        return Some(1);
    }
    if let Some(pattern) = DECISION_PHRASES.iter().find(|p| seq_at(words, i, p)) {
        return Some(pattern.len());
    }
    if word == "we" && is_any(words, i + 1, &["will", "shall"]) {
        let next = word_at(words, i + 2);
        let whereabouts = next == "be" && is_any(words, i + 3, WHEREABOUTS);
        if !whereabouts && !NOT_A_COMMITMENT.contains(&next) {
            return Some(2);
        }
    }
    None
}

/// Whether the cue at `i` is negated or still pending: one of the three words before it is "not",
/// "never", "nothing" or "yet" ("have not decided", "not yet agreed"), or it follows "to be"
/// ("still to be decided", "needs to be approved").
fn is_negated(words: &[String], i: usize) -> bool {
    let pending = i >= 2 && words[i - 2] == "to" && words[i - 1] == "be";
    pending
        || words[i.saturating_sub(3)..i]
            .iter()
            .any(|w| matches!(w.as_str(), "not" | "never" | "nothing" | "yet"))
}

// ----- preference --------------------------------------------------------------------------

#[rustfmt::skip]
const PREFERENCE_WORDS: &[&str] = &[
    "likes", "liked", "love", "loves", "loved", "enjoy", "enjoys", "enjoyed", "hate", "hates",
    "hated", "dislike", "dislikes", "disliked", "detest", "detests", "loathe", "loathes", "adore",
    "adores", "prefer", "prefers", "preferred", "preferring", "favourite", "favourites", "favorite",
    "favorites", "fave", "want", "wants", "wanted", "loving", "enjoying", "hating",
];

const PREFERENCE_PHRASES: &[&[&[&str]]] = &[
    &[&["would", "had"], &["rather"]],
    &[&["rather"], &["than"]],
    &[&["can", "could"], &["not"], &["stand"]],
    &[&["fan"], &["of"]],
    &[&["interested"], &["in"]],
    &[&["passionate"], &["about"]],
    &[&["obsessed"], &["with"]],
    &[&["keen"], &["on"]],
    &[&["am", "is", "are", "really"], &["into"]],
    &[
        &[
            "always",
            "usually",
            "generally",
            "normally",
            "typically",
            "only",
            "never",
        ],
        &[
            "use", "uses", "drink", "drinks", "eat", "eats", "order", "orders", "pick", "picks",
            "choose", "chooses", "take", "takes", "wear", "wears", "go", "goes", "read", "reads",
            "listen", "listens", "write", "writes",
        ],
    ],
    &[
        &["my", "his", "her", "their", "our", "your"],
        &["preference", "preferences"],
        &["is", "are", "was", "would"],
    ],
    &[
        &[
            "replies",
            "reply",
            "answers",
            "answer",
            "responses",
            "response",
            "summaries",
            "explanations",
            "messages",
            "emails",
            "comments",
            "output",
        ],
        &["should", "must"],
    ],
    &[&["call", "address"], &["me"]],
    &[&["refer"], &["to"], &["me"]],
];

/// Words before "like" that make it a comparison ("looks like", "something like").
#[rustfmt::skip]
const LIKE_AS_COMPARISON: &[&str] = &[
    "look", "looks", "looked", "looking", "seem", "seems", "seemed", "sound", "sounds", "sounded",
    "feel", "feels", "felt", "something", "anything", "nothing", "everything", "things", "stuff",
    "tools", "just", "exactly", "more", "less", "much", "is", "was", "are", "were", "be", "been",
    "being",
];

fn preference_at(words: &[String], i: usize) -> bool {
    let word = word_at(words, i);
    if PREFERENCE_WORDS.contains(&word) {
        return true;
    }
    if word == "like" {
        // A verb "like", not a comparison: not first, not after "looks", not before a number.
        let comparison = i == 0
            || is_any(words, i - 1, LIKE_AS_COMPARISON)
            || word_at(words, i + 1).starts_with(|c: char| c.is_ascii_digit());
        return !comparison;
    }
    PREFERENCE_PHRASES.iter().any(|p| seq_at(words, i, p))
}

/// Verbs that open an instruction about how the user wants things done.
#[rustfmt::skip]
const STYLE_VERBS: &[&str] = &[
    "answer", "reply", "respond", "write", "speak", "talk", "explain", "summarize", "summarise",
    "use", "avoid", "always", "never", "stop",
];

/// Adjectives that make "keep ..." and "be ..." style instructions.
#[rustfmt::skip]
const STYLE_ADJECTIVES: &[&str] = &[
    "short", "brief", "concise", "succinct", "simple", "formal", "informal", "casual", "friendly",
    "professional", "polite", "terse", "direct", "blunt", "honest", "specific", "detailed",
    "thorough", "minimal", "plain", "clean", "focused",
];

/// After a leading "please", verbs of a request rather than of a style ("please note ...").
#[rustfmt::skip]
const REQUEST_VERBS: &[&str] = &[
    "note", "remember", "see", "check", "review", "find", "read", "let", "ignore", "send",
    "forward", "share", "confirm", "contact", "join", "be",
];

/// Whether the text is an instruction about style ("Please answer in French", "Keep it short").
fn is_style_instruction(words: &[String]) -> bool {
    let mut i = 0;
    let please = word_at(words, 0) == "please";
    if please {
        i = 1;
    }
    let verb = word_at(words, i);
    let style = STYLE_VERBS.contains(&verb)
        || (verb == "do" && word_at(words, i + 1) == "not")
        || (verb == "keep" && (i + 1..i + 5).any(|j| is_any(words, j, STYLE_ADJECTIVES)))
        || (verb == "be" && is_any(words, i + 1, STYLE_ADJECTIVES));
    style || (please && !verb.is_empty() && !REQUEST_VERBS.contains(&verb))
}

// ----- context -----------------------------------------------------------------------------

#[rustfmt::skip]
const CONTEXT_WORDS: &[&str] = &[
    "currently", "today", "tonight", "tomorrow", "yesterday", "temporarily", "temporary",
    "upcoming", "ongoing", "pending", "nowadays", "recently", "lately", "soon", "asap", "meanwhile",
    "deadline", "overdue", "outage", "undecided", "tbd", "wip",
];

#[rustfmt::skip]
const PERIODS: &[&str] = &[
    "week", "weekend", "month", "sprint", "quarter", "year", "morning", "afternoon", "evening",
    "night", "semester", "term", "season", "spring", "summer", "autumn", "fall", "winter", "monday",
    "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
];

#[rustfmt::skip]
const DAYS: &[&str] = &[
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "tomorrow",
    "today", "tonight", "next", "this", "the", "eod", "eow", "end", "further", "then",
];

const CONTEXT_PHRASES: &[&[&[&str]]] = &[
    &[&["right"], &["now"]],
    &[&["at"], &["the"], &["moment"]],
    &[&["at"], &["present"]],
    &[&["as"], &["of"], &["now", "today", "yet", "writing"]],
    &[&["for"], &["now"]],
    &[&["for"], &["the"], &["time"], &["being"]],
    &[&["these"], &["days"]],
    &[&["in"], &["the"], &["meantime"]],
    &[&["in", "under"], &["progress", "review"]],
    &[&["working"], &["on"]],
    &[&["this", "next", "last", "coming"], PERIODS],
    &[&["later"], &["today", "this", "tonight"]],
    &[
        &["is", "are", "was", "were", "am"],
        &[
            "down",
            "broken",
            "blocked",
            "failing",
            "offline",
            "unavailable",
            "paused",
            "degraded",
            "flaky",
        ],
    ],
    &[
        &["on"],
        &[
            "hold",
            "leave",
            "vacation",
            "holiday",
            "sabbatical",
            "call",
            "monday",
            "tuesday",
            "wednesday",
            "thursday",
            "friday",
            "saturday",
            "sunday",
        ],
    ],
    &[&["out"], &["of"], &["office"]],
    &[&["out"], &["sick"]],
    &[&["until", "till", "by"], DAYS],
    &[&["due"], &["on", "by", "in"]],
    &[&["due"], DAYS],
    &[&["waiting"], &["for", "on"]],
    &[&["blocked"], &["on", "by"]],
    &[&["planning", "about"], &["to"]],
    &[&["need", "needs"], &["to"], &["decide"]],
    &[&["to"], &["be"], &["decided", "confirmed", "determined"]],
];

/// "-ing" words that are not a verb in progress after "I am" / "we are".
#[rustfmt::skip]
const NOT_IN_PROGRESS: &[&str] = &[
    "using", "being", "thing", "nothing", "something", "anything", "everything", "morning",
    "evening", "king", "ring", "spring", "string", "sing", "wing", "bring", "sting", "swing",
    "interesting", "boring", "amazing", "annoying", "willing", "outgoing", "outstanding", "loving",
    "caring",
];

fn context_at(words: &[String], i: usize) -> bool {
    let word = word_at(words, i);
    if CONTEXT_WORDS.contains(&word) || CONTEXT_PHRASES.iter().any(|p| seq_at(words, i, p)) {
        return true;
    }
    // First-person progressive: "I'm learning Rust", "we're hiring".
    let progressive =
        seq_at(words, i, &[&["i"], &["am"]]) || seq_at(words, i, &[&["we"], &["are"]]);
    if progressive {
        let mut j = i + 2;
        if is_any(words, j, &["currently", "still", "now", "also", "actively"]) {
            j += 1;
        }
        let verb = word_at(words, j);
        return verb.len() > 4 && verb.ends_with("ing") && !NOT_IN_PROGRESS.contains(&verb);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::infer_category;

    fn check(cases: &[(&str, &str)]) {
        let wrong: Vec<String> = cases
            .iter()
            .filter(|(text, want)| infer_category(text) != *want)
            .map(|(text, want)| format!("{text:?}: want {want}, got {}", infer_category(text)))
            .collect();
        assert!(wrong.is_empty(), "misread:\n{}", wrong.join("\n"));
    }

    #[test]
    fn words_expand_contractions_and_keep_word_boundaries() {
        assert_eq!(
            super::words("We’ll go; can't STOP it's Alice's re-run"),
            ["we", "will", "go", "can", "not", "stop", "it", "is", "alice", "re", "run"]
        );
    }

    #[test]
    fn preferences() {
        check(&[
            ("I prefer dark mode", "preference"),
            ("Alice likes green tea", "preference"),
            ("I don't like early meetings", "preference"),
            ("I can't stand cilantro", "preference"),
            ("I cannot stand open-plan offices", "preference"),
            ("Her favourite colour is green", "preference"),
            ("My favorite editor is Helix", "preference"),
            ("I'd rather use Vim than VS Code", "preference"),
            ("Use tabs rather than spaces", "preference"),
            ("I always use British spelling", "preference"),
            ("Please answer in French", "preference"),
            ("Keep replies short", "preference"),
            ("keep it brief and friendly", "preference"),
            ("Be concise", "preference"),
            ("Don't use emojis", "preference"),
            ("Answers should include code samples", "preference"),
            ("Call me Sam", "preference"),
            ("I'm not a fan of tabs", "preference"),
            ("Bob hates long meetings", "preference"),
            ("The user wants weekly summaries", "preference"),
            ("I would like invoices in EUR", "preference"),
            ("I LOVE HIKING", "preference"),
            ("She is really into bouldering", "preference"),
        ]);
    }

    #[test]
    fn time_bound_wording_about_a_liking_is_still_a_preference() {
        check(&[
            ("This week I prefer async standups", "preference"),
            ("Right now I'd rather not take calls", "preference"),
            ("I want to visit Japan next year", "preference"),
            ("Currently loving the new keyboard", "preference"),
        ]);
    }

    #[test]
    fn decisions() {
        check(&[
            ("We decided to use Rust for the CLI", "decision"),
            ("We'll go with Postgres", "decision"),
            ("We’ll go with Postgres", "decision"),
            ("We will not support IE11", "decision"),
            ("We won't ship on Fridays", "decision"),
            ("Everyone agreed to freeze the API", "decision"),
            ("Chose Rust for the CLI", "decision"),
            ("Going forward, all PRs need two reviewers", "decision"),
            ("From now on, deploys happen on Tuesdays", "decision"),
            ("We settled on a weekly release cadence", "decision"),
            ("The plan is to launch in May", "decision"),
            ("The budget was approved by finance", "decision"),
            ("The proposal was rejected", "decision"),
            ("Decision: Postgres over MySQL", "decision"),
            ("WE DECIDED TO USE RUST", "decision"),
            ("Let's go with the blue logo", "decision"),
            ("Not everyone agreed, but we chose Go", "decision"),
        ]);
    }

    #[test]
    fn decision_outranks_preference_and_context() {
        check(&[
            ("From now on, answer in French", "decision"),
            ("We decided this week that I prefer mornings", "decision"),
            ("We agreed to keep replies short going forward", "decision"),
            ("Today we decided to pause the launch", "decision"),
        ]);
    }

    #[test]
    fn contexts() {
        check(&[
            ("I'm currently working on the billing migration", "context"),
            ("The user preference service is down", "context"),
            ("Staging is down right now", "context"),
            ("I'm on vacation until Friday", "context"),
            ("This sprint we focus on search", "context"),
            ("The release is in progress", "context"),
            ("Alice's birthday is today", "context"),
            ("Tomorrow's demo is cancelled", "context"),
            ("Upcoming: the Q3 offsite in Porto", "context"),
            ("The report is due on Friday", "context"),
            ("I'm learning Rust", "context"),
            ("We are temporarily on SQLite", "context"),
            ("The deadline is 12 June", "context"),
            ("We'll be in Berlin next week", "context"),
            ("At the moment the API returns 502s", "context"),
        ]);
    }

    #[test]
    fn open_questions_read_as_context_not_decision() {
        check(&[
            ("We haven't decided on the database yet", "context"),
            ("We have not yet agreed on pricing", "context"),
            ("Nothing was decided", "context"),
            ("The database choice is still to be decided", "context"),
        ]);
    }

    #[test]
    fn facts() {
        check(&[
            ("Alice is allergic to peanuts", "fact"),
            ("My sister lives in Rome", "fact"),
            ("Our office is in Lisbon", "fact"),
            ("Bob is the CTO", "fact"),
            ("The API rate limit is 100 requests per minute", "fact"),
            ("Sarah was born in 1990", "fact"),
            ("User preferences are stored in Redis", "fact"),
            ("It looks like the API is stable", "fact"),
            ("Something like 20 people signed up", "fact"),
            ("Concurrently running jobs are capped at 4", "fact"),
            ("Likely cause: a stale cache", "fact"),
            ("We're using Postgres 16", "fact"),
            ("The history table has 3 million rows", "fact"),
            ("Please note the office moves in May", "fact"),
            ("Like most teams, we use GitHub", "fact"),
            ("", "fact"),
        ]);
    }
}
