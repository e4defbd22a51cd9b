//! Clauses: a statement split into clauses, each parsed into subject, verb group and
//! complement.

#[allow(clippy::wildcard_imports)]
use super::*;

#[derive(Debug, Clone, Default)]
pub(super) struct Clause {
    pub(super) subj: Vec<Tok>,
    /// main lemma, "be" for copulas, "call_me" for "call me x"
    pub(super) lemma: String,
    pub(super) particle: String,
    pub(super) neg: bool,
    pub(super) past: bool,
    pub(super) passive: bool,
    pub(super) used_to: bool,
    /// "this week", "next week", "tomorrow": a temporary or planned state
    pub(super) transient: bool,
    pub(super) forced_change: bool,
    pub(super) comp: Vec<Tok>,
    pub(super) instead_of: Vec<String>,
}

pub(super) fn starts_verbish(t: &Tok) -> bool {
    let w = t.w.as_str();
    matches!(
        w,
        "is" | "are" | "was" | "were" | "am" | "have" | "has" | "had" | "do" | "does" | "did"
    ) || MODALS.contains(&w)
        || VGROUP_ADVERBS.contains(&w)
        || matches!(w, "not" | "never" | "no" | "used")
        || verb_info(w).is_some()
}

/// split a sentence into clauses at "and"/"but"/"," when a new verb or a new
/// subject follows. the flag says the clause inherits the first subject.
pub(super) fn split_clauses(toks: &[Tok]) -> Vec<(Vec<Tok>, bool)> {
    let mut out = Vec::new();
    let mut cur: Vec<Tok> = Vec::new();
    let mut inherit = false;
    let mut i = 0;
    while i < toks.len() {
        let w = toks[i].w.as_str();
        if matches!(w, "and" | "but" | "," | ";") && cur.len() >= 2 {
            let mut j = i + 1;
            while j < toks.len()
                && matches!(
                    toks[j].w.as_str(),
                    "and"
                        | "but"
                        | ","
                        | ";"
                        | "then"
                        | "now"
                        | "also"
                        | "just"
                        | "so"
                        | "recently"
                )
            {
                j += 1;
            }
            if j < toks.len() {
                let nw = toks[j].w.as_str();
                let pron = PRONOUNS.contains(&nw)
                    && nw != "it"
                    && toks.get(j + 1).is_some_and(starts_verbish);
                let verb = matches!(
                    verb_info(nw),
                    Some((_, Form::Base | Form::Third | Form::Past | Form::PastSimple))
                ) && !matches!(nw, "is" | "are" | "was" | "were" | "am");
                if pron || verb {
                    out.push((std::mem::take(&mut cur), inherit));
                    inherit = !pron;
                    i += 1;
                    continue;
                }
            }
            if w == "," || w == ";" {
                i += 1;
                continue;
            }
        }
        cur.push(toks[i].clone());
        i += 1;
    }
    if !cur.is_empty() {
        out.push((cur, inherit));
    }
    out
}

pub(super) fn strip_leading(toks: &[Tok]) -> &[Tok] {
    let mut t = toks;
    loop {
        let w0 = t.first().map_or("", |x| x.w.as_str());
        let w1 = t.get(1).map_or("", |x| x.w.as_str());
        let w2 = t.get(2).map_or("", |x| x.w.as_str());
        if (w0 == "these" && w1 == "days")
            || (w0 == "for" && w1 == "now")
            || (w0 == "right" && w1 == "now")
            || (w0 == "as" && w1 == "of" && !w2.is_empty())
            || (w0 == "starting" && !w1.is_empty())
        {
            // "as of <x>", "starting <x>": drop up to the next comma or 3 tokens
            let skip = if w0 == "as" || w0 == "starting" {
                let limit = t.len().min(5);
                t[..limit]
                    .iter()
                    .position(|x| x.w == ",")
                    .map_or(3, |p| p + 1)
            } else {
                2
            };
            t = &t[skip.min(t.len())..];
            continue;
        }
        if w0 == "from" && w1 == "now" && w2 == "on" {
            t = &t[3..];
            continue;
        }
        if w0 == "by" && w1 == "the" && w2 == "way" {
            t = &t[3..];
            continue;
        }
        if !w0.is_empty() && LEADING.contains(&w0) && t.len() > 1 {
            t = &t[1..];
            continue;
        }
        return t;
    }
}

pub(super) fn is_be_finite(w: &str) -> bool {
    matches!(w, "is" | "are" | "was" | "were" | "am")
}

pub(super) fn is_det_like(w: &str) -> bool {
    DETERMINERS.contains(&w) || POSSESSIVE_DETS.iter().any(|(d, _)| *d == w) || w == "'s"
}

pub(super) fn is_finite_at(toks: &[Tok], j: usize) -> bool {
    let w = toks[j].w.as_str();
    if is_be_finite(w)
        || matches!(
            w,
            "has" | "have" | "had" | "does" | "do" | "did" | "got" | "gets"
        )
        || MODALS.contains(&w)
    {
        return true;
    }
    if j > 0 && is_det_like(&toks[j - 1].w) {
        return false;
    }
    match verb_info(w) {
        Some((_, Form::Third)) => !toks
            .get(j + 1)
            .is_some_and(|n| is_be_finite(&n.w) || MODALS.contains(&n.w.as_str())),
        Some((_, Form::Past | Form::PastSimple)) => true,
        // plural subject with a present-tense verb: "billing emails go to x"
        Some((_, Form::Base)) => {
            let prev = toks[..j]
                .iter()
                .rev()
                .map(|t| t.w.as_str())
                .find(|w| !VGROUP_ADVERBS.contains(w))
                .unwrap_or_default();
            prev.len() > 3
                && prev.ends_with('s')
                && !prev.ends_with("ss")
                && !prev.ends_with("us")
                && !prev.ends_with("is")
                && !toks
                    .get(j + 1)
                    .is_some_and(|n| is_be_finite(&n.w) || MODALS.contains(&n.w.as_str()))
        }
        _ => false,
    }
}

/// subject tokens, verb-group start, and whether the subject is implicit.
pub(super) fn find_subject(toks: &[Tok]) -> Option<(Vec<Tok>, usize)> {
    let w0 = toks.first()?.w.as_str();
    let possessive_next = toks.get(1).is_some_and(|t| t.w == "'s");
    if PRONOUNS.contains(&w0) && !possessive_next {
        return Some((toks[..1].to_vec(), 1));
    }
    if w0 == "the" && toks.get(1).is_some_and(|t| t.w == "user") {
        return Some((toks[..2].to_vec(), 2));
    }
    // fragments like "moved to berlin", "lives in paris": implicit first person
    if matches!(
        verb_info(w0),
        Some((_, Form::Third | Form::Past | Form::PastSimple))
    ) && !is_be_finite(w0)
        && !toks[1..].iter().any(|t| is_be_finite(&t.w))
    {
        return Some((Vec::new(), 0));
    }
    for j in 1..toks.len() {
        if is_finite_at(toks, j) {
            let subj = toks[..j]
                .iter()
                .filter(|t| !VGROUP_ADVERBS.contains(&t.w.as_str()))
                .cloned()
                .collect();
            return Some((subj, j));
        }
    }
    None
}

/// participles spelled like the base form ("is set to", "got cut to").
pub(super) const SAME_PARTICIPLE: &[&str] = &[
    "cut", "set", "put", "quit", "shut", "let", "read", "become", "come", "run",
];

pub(super) fn is_participle(w: &str) -> bool {
    SAME_PARTICIPLE.contains(&w) || matches!(verb_info(w), Some((_, Form::Past | Form::Part)))
}

/// the next token after `k` that is not a verb-group adverb.
pub(super) fn next_content(toks: &[Tok], k: usize) -> Option<&str> {
    toks[k..]
        .iter()
        .map(|t| t.w.as_str())
        .find(|w| !VGROUP_ADVERBS.contains(w))
}

/// remove markers and adverbials from a complement; capture "instead of x".
pub(super) fn clean_comp(comp: &[Tok]) -> (Vec<Tok>, Vec<String>) {
    let mut out: Vec<Tok> = Vec::new();
    let mut instead = Vec::new();
    let mut i = 0;
    let at = |k: usize| comp.get(k).map_or("", |t| t.w.as_str());
    while i < comp.len() {
        let w = at(i);
        let (w1, w2) = (at(i + 1), at(i + 2));
        let capture = match (w, w1, w2) {
            ("instead", "of", _) | ("rather", "than", _) => Some(i + 2),
            ("in", "place", "of") => Some(i + 3),
            _ => None,
        };
        if let Some(start) = capture {
            let mut k = start;
            while k < comp.len() && !PREPS.contains(&at(k)) && at(k) != "," && at(k) != "now" {
                if !is_det_like(at(k)) {
                    instead.push(stem(at(k)));
                }
                k += 1;
            }
            i = k;
            continue;
        }
        let skip = match (w, w1, w2) {
            ("as", "well", _)
            | ("these", "days", _)
            | ("for", "now", _)
            | ("right", "now", _)
            | ("for", "good", _)
            | ("at", "present", _)
            | ("no", "longer", _) => 2,
            ("from", "now", "on") | ("at", "the", "moment") => 3,
            ("last" | "next" | "this", t, _)
                if TIME_NOUNS.contains(&t) || is_weekday(&noun_stem(t)) || is_month(t) =>
            {
                2
            }
            ("a", "while", "ago") | ("a", "few", _) if w2 == "ago" || at(i + 3) == "ago" => {
                if w2 == "ago" {
                    3
                } else {
                    4
                }
            }
            _ => 0,
        };
        if skip > 0 {
            i += skip;
            continue;
        }
        if w == "ago" {
            // "two weeks ago": drop the preceding amount and unit
            for _ in 0..2 {
                if out
                    .last()
                    .is_some_and(|t| is_numberish(&t.w) || TIME_NOUNS.contains(&t.w.as_str()))
                {
                    out.pop();
                }
            }
            i += 1;
            continue;
        }
        if TRUNCATE.contains(&w) || (w == "as" && w1 == "of") {
            break;
        }
        if COMP_FILLERS.contains(&w) {
            i += 1;
            continue;
        }
        out.push(comp[i].clone());
        i += 1;
    }
    (out, instead)
}

pub(super) fn parse_clause(toks: &[Tok], inherited: Option<&[Tok]>) -> Option<Clause> {
    let toks = strip_leading(toks);
    if toks.is_empty() {
        return None;
    }
    // "call me x" / "please call me x"
    if toks.len() >= 3 && toks[0].w == "call" && toks[1].w == "me" {
        let (comp, instead_of) = clean_comp(&toks[2..]);
        return Some(Clause {
            subj: vec![tok("i", true)],
            lemma: "call_me".to_string(),
            comp,
            instead_of,
            ..Clause::default()
        });
    }
    let (subj, vstart) = match inherited {
        Some(s) => (s.to_vec(), 0),
        None => find_subject(toks)?,
    };
    let mut c = Clause {
        subj,
        ..Clause::default()
    };
    let mut k = vstart;
    let mut has_be = false;
    let mut be_past = false;
    let mut aux = false;
    let mut got = false;
    let mut main: Option<(String, Form)> = None;
    while k < toks.len() {
        let w = toks[k].w.as_str();
        let next = toks.get(k + 1).map_or("", |t| t.w.as_str());
        if matches!(w, "is" | "are" | "am" | "be" | "been" | "being") {
            has_be = true;
        } else if matches!(w, "was" | "were") {
            has_be = true;
            be_past = true;
        } else if matches!(w, "not" | "never") {
            c.neg = true;
        } else if w == "no" && next == "longer" {
            c.neg = true;
            k += 1;
        } else if matches!(w, "do" | "does" | "did") && main.is_none() && !has_be {
            let nc = next_content(toks, k + 1).unwrap_or("");
            if nc == "not" || verb_info(nc).is_some() {
                aux = true;
                if w == "did" {
                    be_past = true;
                }
            } else {
                main = Some(("do".to_string(), Form::Base));
                k += 1;
                break;
            }
        } else if MODALS.contains(&w) {
            aux = true;
        } else if matches!(w, "has" | "have" | "had") {
            let nc = next_content(toks, k + 1).unwrap_or("");
            if nc == "been" || is_participle(nc) {
                aux = true;
            } else {
                let form = if w == "had" { Form::Past } else { Form::Base };
                main = Some(("have".to_string(), form));
                k += 1;
                break;
            }
        } else if matches!(w, "got" | "get" | "gets" | "getting")
            && is_participle(next_content(toks, k + 1).unwrap_or(""))
        {
            got = true;
        } else if w == "used" && next == "to" {
            c.used_to = true;
            k += 1;
        } else if VGROUP_ADVERBS.contains(&w) {
        } else if let Some((l, mut f)) = verb_info(w) {
            if (has_be || got) && SAME_PARTICIPLE.contains(&w) {
                f = Form::Part;
            }
            // after a copula only participles and progressives continue the
            // verb group; "is master" or "is cooking" (non-person) are predicates
            if has_be && !matches!(f, Form::Past | Form::Part | Form::Ing) {
                break;
            }
            main = Some((l, f));
            k += 1;
            if let Some(p) = toks.get(k).map(|t| t.w.as_str()) {
                if matches!(p, "up" | "off" | "out" | "over" | "down") {
                    c.particle = p.to_string();
                    k += 1;
                }
            }
            break;
        } else if has_be && w.ends_with("ed") && w.len() > 4 {
            main = Some((w[..w.len() - 2].to_string(), Form::Past));
            k += 1;
            break;
        } else if !has_be
            && c.subj.len() == 1
            && subject_is_person(&c.subj)
            && w.len() > 2
            && w.chars().all(|ch| ch.is_ascii_alphabetic())
            && !PREPS.contains(&w)
            && !is_det_like(w)
            && !PRONOUNS.contains(&w)
            && number_word(w).is_none()
        {
            // "i bank with chase", "we bill customers monthly": after a
            // pronoun subject an unknown word is the verb
            let (lemma, form) = if let Some(b) = w.strip_suffix("ed") {
                (b.to_string(), Form::Past)
            } else {
                (w.to_string(), Form::Base)
            };
            main = Some((lemma, form));
            k += 1;
            break;
        } else {
            break;
        }
        k += 1;
    }
    let rest = &toks[k.min(toks.len())..];
    c.transient = rest.windows(2).any(|w| {
        matches!(w[0].w.as_str(), "this" | "next")
            && (TIME_NOUNS.contains(&w[1].w.as_str()) || is_weekday(&noun_stem(&w[1].w)))
    }) || rest
        .iter()
        .any(|t| matches!(t.w.as_str(), "today" | "tonight" | "tomorrow"));
    let (mut comp, instead_of) = clean_comp(rest);
    c.instead_of = instead_of;
    match main {
        Some((lemma, form)) => {
            c.passive = (has_be || got) && matches!(form, Form::Past | Form::Part);
            c.past = c.used_to
                || be_past
                || (!has_be && !aux && matches!(form, Form::Past | Form::PastSimple));
            c.lemma = lemma;
            // "i've become a morning person": a copula that signals a change
            if c.lemma == "become" {
                c.lemma = "be".to_string();
                c.forced_change = true;
                c.past = false;
            }
            // "stopped drinking coffee" -> negated "drink coffee"
            if matches!(c.lemma.as_str(), "stop" | "quit") {
                if let Some((l2, Form::Ing)) = comp.first().and_then(|t| verb_info(&t.w)) {
                    c.lemma = l2;
                    c.neg = true;
                    c.forced_change = true;
                    c.past = false;
                    comp.remove(0);
                }
            }
            // "project atlas is paused": participle used as a predicate
            if c.passive && comp.is_empty() {
                c.forced_change |= CHANGE_VERBS.contains(&c.lemma.as_str());
                comp = vec![toks[k - 1].clone()];
                c.lemma = "be".to_string();
                c.passive = false;
                c.particle.clear();
            }
            // "my hobby is cooking": gerund predicate of a non-person subject
            if has_be && form == Form::Ing && !subject_is_person(&c.subj) {
                comp.insert(0, toks[k - 1].clone());
                c.lemma = "be".to_string();
            }
        }
        None if has_be => {
            c.lemma = "be".to_string();
            c.past = be_past || c.used_to;
        }
        None => return None,
    }
    // "omar took over as product owner" -> "product owner is omar"
    if c.lemma == "take"
        && c.particle == "over"
        && comp.first().is_some_and(|t| t.w == "as")
        && comp.len() > 1
    {
        comp.remove(0);
        std::mem::swap(&mut c.subj, &mut comp);
        c.lemma = "be".to_string();
        c.particle.clear();
        c.forced_change = true;
        c.past = false;
    }
    // "bob is my manager" -> subject "my manager", value "bob"
    if c.lemma == "be"
        && !c.subj.is_empty()
        && c.subj.len() <= 3
        && c.subj
            .iter()
            .all(|t| !PRONOUNS.contains(&t.w.as_str()) && !is_det_like(&t.w) && t.w != "'s")
        && comp.first().is_some_and(|t| {
            t.w == "the" || POSSESSIVE_DETS.iter().any(|(d, _)| *d == t.w.as_str())
        })
        && comp.get(1).is_some_and(|t| !PREPS.contains(&t.w.as_str()))
    {
        std::mem::swap(&mut c.subj, &mut comp);
    }
    c.comp = comp;
    Some(c)
}
