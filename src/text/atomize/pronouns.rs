//! Pronouns and fragments: a leading pronoun replaced by the previous sentence's subject when
//! they agree, and a subject-less fragment given it.

#[allow(clippy::wildcard_imports)]
use super::*;

/// The sentence with its leading pronoun (or the pronoun after an introductory phrase)
/// replaced by `antecedent`, if they agree.
pub(super) fn replace_pronoun(words: &[&str], antecedent: &Subject) -> Option<String> {
    let at = if is_pronoun_start(words.first()?) {
        0
    } else {
        intro_end(words).filter(|&i| is_pronoun_start(words[i]))?
    };
    let raw = words[at];
    let core_len = raw
        .char_indices()
        .take_while(|(_, c)| c.is_alphabetic() || is_apostrophe(*c))
        .last()
        .map_or(0, |(i, c)| i + c.len_utf8());
    let (core, trailing) = raw.split_at(core_len);
    let lower = apostrophes_straightened(&core.to_lowercase()).into_owned();
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
pub(super) const PARTICIPLES: &[&str] = &[
    "been", "got", "gotten", "gone", "done", "had", "seen", "taken", "made", "left", "moved",
    "joined", "started", "finished", "decided", "agreed", "lived", "worked", "never", "already",
    "bought", "sold", "built", "written", "become", "grown", "switched", "quit",
];

/// The owner in a possessive subject: "Sarah" in "Sarah's birthday".
pub(super) fn possessor(subject: &Subject) -> Option<Subject> {
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

pub(super) fn is_pronoun_start(word: &str) -> bool {
    let lower = bare_lower(word);
    let pronoun = lower.split('\'').next().unwrap_or("");
    matches!(
        pronoun,
        "he" | "she" | "it" | "they" | "his" | "her" | "its" | "their"
    )
}

/// A phrase moved inside a sentence: "The API" -> "the API", names unchanged.
pub(super) fn lower_determiner(text: &str) -> String {
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
pub(super) fn is_dummy_it(contraction: &str, rest: &[&str]) -> bool {
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
pub(super) fn complete_fragment(words: &[&str], antecedent: &Subject) -> Option<String> {
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

/// Base forms of common verbs, whose "-s"/"-ed" forms are recognised as finite verbs.
#[rustfmt::skip]
pub(super) const BASE_VERBS: &[&str] = &[
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

/// Whether a lower-case word is a finite verb form: "works", "moved", "studies", "went".
pub(super) fn is_finite_verb(word: &str) -> bool {
    if IRREGULAR_FINITE_VERBS.contains(&word) {
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
