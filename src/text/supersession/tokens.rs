//! Tokens and normalisation: lowercasing, contractions, spellings, clock times, number words,
//! light lemmatisation of verbs and plurals.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

#[allow(clippy::wildcard_imports)]
use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    Base,
    Third,
    Past,
    PastSimple,
    Part,
    Ing,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Tok {
    pub(super) w: String,
    pub(super) cap: bool,
}

pub(super) fn tok(w: &str, cap: bool) -> Tok {
    Tok {
        w: w.to_string(),
        cap,
    }
}

/// The verb lists of the lexicon as one set: [`verb_info`] asks it up to eight times a token
/// (each way a suffix may come off), and scanning the lists took half the judge's time.
static KNOWN_VERBS: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    [VERBS, CHANGE_VERBS, TERMINATE_VERBS, ACCUM_VERBS]
        .iter()
        .flat_map(|list| list.iter().copied())
        .collect()
});

/// [`IRREGULAR`] by form (the first entry of a form wins, as a scan of the list would find).
static IRREGULAR_FORMS: LazyLock<HashMap<&'static str, (&'static str, Form)>> =
    LazyLock::new(|| {
        let mut forms = HashMap::with_capacity(IRREGULAR.len());
        for &(form, lemma, kind) in IRREGULAR {
            forms.entry(form).or_insert((lemma, kind));
        }
        forms
    });

pub(super) fn is_verb(w: &str) -> bool {
    KNOWN_VERBS.contains(w)
}

/// lemma and form of a verb token, if it is a known verb form.
pub(super) fn verb_info(w: &str) -> Option<(String, Form)> {
    if let Some(&(l, f)) = IRREGULAR_FORMS.get(w) {
        return Some((l.to_string(), f));
    }
    if is_verb(w) {
        return Some((w.to_string(), Form::Base));
    }
    let try_lemma = |c: &str, f: Form| {
        if is_verb(c) {
            Some((c.to_string(), f))
        } else {
            None
        }
    };
    if let Some(b) = w.strip_suffix("ies") {
        if let Some(r) = try_lemma(&format!("{b}y"), Form::Third) {
            return Some(r);
        }
    }
    if !w.ends_with("ss") {
        if let Some(b) = w.strip_suffix('s') {
            if let Some(r) = try_lemma(b, Form::Third) {
                return Some(r);
            }
        }
        if let Some(b) = w.strip_suffix("es") {
            if let Some(r) = try_lemma(b, Form::Third) {
                return Some(r);
            }
        }
    }
    if let Some(b) = w.strip_suffix("ied") {
        if let Some(r) = try_lemma(&format!("{b}y"), Form::Past) {
            return Some(r);
        }
    }
    for (suffix, form) in [("ed", Form::Past), ("ing", Form::Ing)] {
        if let Some(b) = w.strip_suffix(suffix) {
            if b.len() < 2 {
                continue;
            }
            if let Some(r) = try_lemma(b, form) {
                return Some(r);
            }
            if let Some(r) = try_lemma(&format!("{b}e"), form) {
                return Some(r);
            }
            if let Some(u) = undouble(b) {
                if let Some(r) = try_lemma(u, form) {
                    return Some(r);
                }
            }
        }
    }
    None
}

pub(super) fn noun_stem(w: &str) -> String {
    match w {
        "children" | "kids" => return "kid".to_string(),
        "child" => return "kid".to_string(),
        "people" => return "person".to_string(),
        "men" => return "man".to_string(),
        "women" => return "woman".to_string(),
        _ => {}
    }
    if let Some(b) = w.strip_suffix("ie") {
        if b.len() >= 2 {
            return format!("{b}y");
        }
    }
    if w.len() <= 3
        || !w.ends_with('s')
        || w.ends_with("ss")
        || w.ends_with("us")
        || w.ends_with("is")
        || w.ends_with("'s")
    {
        return w.to_string();
    }
    if let Some(b) = w.strip_suffix("ies") {
        if b.len() >= 2 {
            return format!("{b}y");
        }
    }
    for suffix in ["ches", "shes", "xes", "sses", "zes"] {
        if w.ends_with(suffix) {
            return w[..w.len() - 2].to_string();
        }
    }
    w[..w.len() - 1].to_string()
}

pub(super) fn number_word(w: &str) -> Option<u32> {
    let n = match w {
        "zero" => 0,
        "one" => 1,
        "two" => 2,
        "three" => 3,
        "four" => 4,
        "five" => 5,
        "six" => 6,
        "seven" => 7,
        "eight" => 8,
        "nine" => 9,
        "ten" => 10,
        "eleven" => 11,
        "twelve" => 12,
        "thirteen" => 13,
        "fourteen" => 14,
        "fifteen" => 15,
        "sixteen" => 16,
        "seventeen" => 17,
        "eighteen" => 18,
        "nineteen" => 19,
        "twenty" => 20,
        "thirty" => 30,
        "forty" => 40,
        "fifty" => 50,
        "sixty" => 60,
        "hundred" => 100,
        "dozen" => 12,
        _ => return None,
    };
    Some(n)
}

/// clock times to "hh:mm": "9:30", "10am", "2pm", "2:30pm", "noon".
pub(super) fn norm_time(w: &str) -> Option<String> {
    match w {
        "noon" | "midday" => return Some("12:00".to_string()),
        "midnight" => return Some("00:00".to_string()),
        _ => {}
    }
    let (body, pm) = if let Some(b) = w.strip_suffix("am").or_else(|| w.strip_suffix("a.m")) {
        (b, Some(false))
    } else if let Some(b) = w.strip_suffix("pm").or_else(|| w.strip_suffix("p.m")) {
        (b, Some(true))
    } else {
        (w, None)
    };
    if body.is_empty() {
        return None;
    }
    let (h, m) = match body.split_once(':') {
        Some((h, m)) => (h, m),
        None if pm.is_some() => (body, "00"),
        None => return None,
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(h) || h.len() > 2 || m.len() != 2 || !digits(m) {
        return None;
    }
    let mut h: u32 = h.parse().ok()?;
    let m: u32 = m.parse().ok()?;
    if m >= 60 || h > 24 || (pm.is_some() && h > 12) {
        return None;
    }
    match pm {
        Some(true) if h < 12 => h += 12,
        Some(false) if h == 12 => h = 0,
        _ => {}
    }
    Some(format!("{h:02}:{m:02}"))
}

pub(super) fn is_clock(w: &str) -> bool {
    let b = w.as_bytes();
    b.len() == 5 && b[2] == b':' && b[..2].iter().chain(&b[3..]).all(u8::is_ascii_digit)
}

pub(super) fn is_numberish(w: &str) -> bool {
    w.bytes().next().is_some_and(|b| b.is_ascii_digit())
        || (w.starts_with('$') && w.len() > 1)
        || number_word(w).is_some()
}

pub(super) fn is_weekday(w: &str) -> bool {
    matches!(
        w,
        "monday"
            | "tuesday"
            | "wednesday"
            | "thursday"
            | "friday"
            | "saturday"
            | "sunday"
            | "weekday"
            | "weekend"
    )
}

pub(super) fn is_month(w: &str) -> bool {
    matches!(
        w,
        "january"
            | "february"
            | "march"
            | "april"
            | "june"
            | "july"
            | "august"
            | "september"
            | "october"
            | "november"
            | "december"
    )
}

pub(super) fn is_daypart(w: &str) -> bool {
    matches!(
        w,
        "morning" | "afternoon" | "evening" | "night" | "noon" | "midnight"
    )
}

/// normalised comparison form of a token.
pub(super) fn stem(w: &str) -> String {
    if let Some(t) = norm_time(w) {
        return t;
    }
    if let Some(n) = number_word(w) {
        return n.to_string();
    }
    // "4th" -> "4", "1st" -> "1"
    for suffix in ["st", "nd", "rd", "th"] {
        if let Some(d) = w.strip_suffix(suffix) {
            if !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) {
                return d.to_string();
            }
        }
    }
    if w.bytes().any(|b| b.is_ascii_digit()) || !w.chars().any(char::is_alphabetic) {
        return w.to_string();
    }
    if let Some((l, _)) = verb_info(w) {
        return l;
    }
    noun_stem(w)
}

/// split a contraction-bearing lowercase word into plain words.
pub(super) fn expand(lower: &str) -> Vec<String> {
    let pair = |a: &str, b: &str| vec![a.to_string(), b.to_string()];
    match contraction(lower) {
        Some(Contraction::Whole(words)) => words.iter().map(|w| w.to_string()).collect(),
        Some(Contraction::Ending(b, full)) if full == "not" || !b.is_empty() => pair(b, full),
        Some(Contraction::Is(b)) => pair(b, "is"),
        // the possessive stays a token: "john's dog" keys the dog to john
        Some(Contraction::Possessive(b)) if !b.is_empty() => pair(b, "'s"),
        Some(_) => vec![lower.to_string()],
        None => match lower.strip_suffix("s'") {
            Some(b) => vec![format!("{b}s"), "'s".to_string()],
            None => vec![lower.to_string()],
        },
    }
}

pub(super) fn spelling(w: &str) -> String {
    SPELLING
        .iter()
        .find(|(b, _)| *b == w)
        .map_or_else(|| w.to_string(), |(_, a)| a.to_string())
}

/// tokenise a memory. returns the tokens and whether it reads as a question.
pub(super) fn tokenize(text: &str) -> (Vec<Tok>, bool) {
    let text = straightened(text)
        .replace(['\u{201c}', '\u{201d}'], "\"")
        .replace(['\u{2014}', '\u{2013}'], " , ");
    let trimmed = text.trim();
    let mut out: Vec<Tok> = Vec::new();
    let raws: Vec<&str> = trimmed.split_whitespace().collect();
    for (index, raw) in raws.iter().copied().enumerate() {
        if matches!(raw, "-" | "->" | "=>" | "|") {
            out.push(tok(",", false));
            continue;
        }
        let mut s = raw.trim_start_matches(|c: char| "\"([{*".contains(c));
        let mut comma = false;
        let mut colon = false;
        while let Some(c) = s.chars().last() {
            if ".!?\")]}*".contains(c) {
                s = &s[..s.len() - c.len_utf8()];
            } else if c == ',' || c == ';' {
                comma = true;
                s = &s[..s.len() - 1];
            } else if c == ':' {
                colon = true;
                s = &s[..s.len() - 1];
            } else if c == '\'' && !s.ends_with("s'") {
                s = &s[..s.len() - 1];
            } else {
                break;
            }
        }
        let s = s.trim_start_matches('\'');
        if s.is_empty() {
            if comma || colon {
                out.push(tok(",", false));
            }
            continue;
        }
        let cap = s.chars().next().is_some_and(char::is_uppercase);
        let lower = s.to_lowercase();
        if colon
            && matches!(
                lower.as_str(),
                "note" | "update" | "fyi" | "reminder" | "btw" | "memo" | "correction" | "edit"
            )
        {
            continue;
        }
        // "Anna: thanks, that helps a lot!" is a speaker's line, not an attribute: a label
        // whose colon is followed by a whole sentence is dropped (with anything before it on
        // the same line, such as a timestamp); "Timezone: CET" stays an attribute.
        if colon && speaks(&raws[index + 1..]) {
            out.clear();
            continue;
        }
        for (i, piece) in expand(&lower).into_iter().enumerate() {
            out.push(tok(&spelling(&piece), cap && i == 0));
        }
        if colon {
            // "favorite editor: vim" reads as "favorite editor is vim"
            out.push(tok("is", false));
        } else if comma {
            out.push(tok(",", false));
        }
    }
    // merge "9 am" -> "9am", "any more" -> "anymore"
    let mut merged: Vec<Tok> = Vec::new();
    let mut i = 0;
    while i < out.len() {
        let w = out[i].w.as_str();
        let next = out.get(i + 1).map(|t| t.w.as_str());
        let numeric = !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit() || b == b':');
        if numeric && matches!(next, Some("am" | "pm" | "a.m" | "p.m")) {
            let n = next.unwrap_or_default().replace('.', "");
            merged.push(tok(&format!("{w}{n}"), false));
            i += 2;
            continue;
        }
        if w == "any" && next == Some("more") {
            merged.push(tok("anymore", false));
            i += 2;
            continue;
        }
        merged.push(out[i].clone());
        i += 1;
    }
    while merged.last().is_some_and(|t| t.w == ",") {
        merged.pop();
    }
    let question = trimmed.ends_with('?') || {
        let first = merged.first().map_or("", |t| t.w.as_str());
        let second = merged.get(1).map_or("", |t| t.w.as_str());
        matches!(
            first,
            "where" | "what" | "when" | "who" | "why" | "how" | "which" | "whose"
        ) && merged.len() > 2
            && !matches!(second, "i" | "we")
            || (matches!(
                first,
                "do" | "does"
                    | "did"
                    | "is"
                    | "are"
                    | "am"
                    | "can"
                    | "could"
                    | "should"
                    | "will"
                    | "would"
                    | "have"
                    | "has"
            ) && (PRONOUNS.contains(&second)
                || POSSESSIVE_DETS.iter().any(|(d, _)| *d == second)
                || second == "the"))
    };
    (merged, question)
}
