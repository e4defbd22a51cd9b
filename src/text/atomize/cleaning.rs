//! Cleaning: interjections, greetings, fillers and meta labels stripped; questions and
//! sentences without information dropped.

#[allow(clippy::wildcard_imports)]
use super::*;

/// The sentence without fillers, or `None` for a question or a sentence without information.
pub(super) fn clean_sentence(sentence: &str) -> Option<String> {
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
pub(super) fn is_interjection(word: &str) -> bool {
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

pub(super) fn is_emoji(c: char) -> bool {
    matches!(
        c as u32,
        0x1F000..=0x1FAFF | 0x2600..=0x27BF | 0x2B00..=0x2BFF | 0xFE0F | 0x200D | 0x20E3
    )
}

/// Whether a whitespace-free token is only an interjection, an emoticon or emoji.
pub(super) fn is_interjection_token(token: &str) -> bool {
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
pub(super) fn remove_interjections(sentence: &str) -> String {
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
pub(super) fn strip_leading_fillers(sentence: &str) -> &str {
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
pub(super) fn first_word(text: &str) -> (&str, &str) {
    text.split_once(' ').unwrap_or((text, ""))
}

/// Lower case, without surrounding punctuation (apostrophes inside kept, curly ones straightened).
pub(super) fn bare_lower(word: &str) -> String {
    apostrophes_straightened(word.trim_matches(|c: char| !c.is_alphanumeric())).to_lowercase()
}

/// Text after a leading meta label or intro: "FYI:", "Update:", "Quick recap of the sync:".
pub(super) fn strip_meta_label(text: &str) -> Option<&str> {
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
pub(super) fn is_meta_intro(text: &str) -> bool {
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
pub(super) fn strip_greeting(text: &str) -> Option<&str> {
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
pub(super) fn strip_discourse_filler(text: &str) -> Option<&str> {
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
pub(super) const NO_INFO_PHRASES: &[&[&str]] = &[
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
pub(super) const NO_INFO_OPENERS: &[&[&str]] = &[
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
pub(super) const NO_INFO_WORDS: &[&str] = &[
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
pub(super) const SOCIAL_WORDS: &[&str] = &[
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

pub(super) fn starts_with_words(words: &[String], at: usize, phrase: &[&str]) -> bool {
    words.len() >= at + phrase.len() && phrase.iter().zip(&words[at..]).all(|(p, w)| p == w)
}

/// `text` with its first letter capitalised when its first word is plain lower-case letters.
pub(super) fn capitalize_first(text: &str) -> String {
    let (word, _) = first_word(text);
    let plain = word
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .chars()
        .all(|c| c.is_lowercase() || is_apostrophe(c));
    let mut chars = text.chars();
    match chars.next() {
        Some(first) if plain && first.is_lowercase() => first.to_uppercase().chain(chars).collect(),
        _ => text.to_string(),
    }
}

/// Speaker labels that stand for the user, whose "I" needs no label.
pub(super) fn is_self_label(label: &str) -> bool {
    matches!(
        label.to_lowercase().as_str(),
        "me" | "user" | "i" | "myself"
    )
}
