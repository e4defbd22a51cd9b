//! Subjects: the subject phrase of a sentence, its referent (person, group, thing) and
//! grammatical number, and whether a word is a finite verb.

#[allow(clippy::wildcard_imports)]
use super::*;

/// What a pronoun may refer to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Referent {
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
pub(super) struct Subject {
    pub(super) text: String,
    pub(super) referent: Referent,
}

/// Resolves a leading pronoun or missing subject against `subject`, then makes this
/// sentence's subject the current one.
pub(super) fn resolve(clause: &str, subject: &mut Option<Subject>) -> String {
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
pub(super) fn intro_end(words: &[&str]) -> Option<usize> {
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
pub(super) const NP_STOPS: &[&str] = &[
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
pub(super) const LY_NOUNS: &[&str] = &[
    "family", "supply", "assembly", "reply", "rally", "ally", "italy", "july", "emily", "anomaly",
    "butterfly", "monopoly", "bully", "belly", "holly", "lily", "sally", "molly",
];

/// The words "do"/"are"/"is"... that show a preceding verb-looking word was a noun ("Plans are
/// ready").
#[rustfmt::skip]
pub(super) const AUXILIARIES: &[&str] = &[
    "is", "are", "was", "were", "will", "would", "can", "could", "should", "must", "has", "have",
    "had", "does", "do", "did", "may", "might",
];

/// Whether a word written mid-sentence is an auxiliary: lower case only, so "May" (the month)
/// or "Will" (the name) are not.
pub(super) fn is_auxiliary(word: &str) -> bool {
    let word = word.trim_matches(|c: char| !c.is_alphanumeric());
    AUXILIARIES.contains(&word)
}

/// The subject noun phrase starting at word `at`, if the sentence has one there.
pub(super) fn noun_phrase(words: &[&str], at: usize) -> Option<Subject> {
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
pub(super) fn retype_by_complement(predicate: &[&str]) -> Option<Referent> {
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
pub(super) fn complement_noun<'a>(predicate: &[&'a str]) -> Option<&'a str> {
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

pub(super) fn is_title(word: &str) -> bool {
    let lower = word.trim_end_matches('.').to_lowercase();
    TITLES.contains(&lower.as_str()) && word.starts_with(char::is_uppercase)
}

/// Pronouns and first-person words, which never start a usable subject phrase.
#[rustfmt::skip]
pub(super) const PRONOUNS: &[&str] = &[
    "i", "we", "you", "he", "she", "it", "they", "me", "us", "him", "them", "his", "her", "its",
    "their", "one", "there", "here", "everyone", "someone", "nobody", "who", "what",
];

/// Nouns for people, which take he/she.
#[rustfmt::skip]
pub(super) const PERSON_NOUNS: &[&str] = &[
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
pub(super) const GROUP_NOUNS: &[&str] = &[
    "team", "company", "family", "group", "org", "organisation", "organization", "department",
    "squad", "committee", "board", "band", "startup", "agency", "firm", "club", "staff", "crew",
    "government", "council", "community", "vendor", "supplier", "bank", "school", "university",
];

/// Whether a predicate word shows a plural (`Some(true)`) or singular subject: "are" / "is",
/// "work" / "works".
pub(super) fn grammatical_number(predicate: &str) -> Option<bool> {
    match predicate {
        "are" | "were" | "have" | "do" | "aren't" | "weren't" | "haven't" | "don't" => Some(true),
        "is" | "was" | "has" | "does" | "isn't" | "wasn't" | "hasn't" | "doesn't" => Some(false),
        _ if BASE_VERBS.contains(&predicate) => Some(true),
        _ if predicate.ends_with('s') && is_finite_verb(predicate) => Some(false),
        _ => None,
    }
}

/// What a subject phrase can be referred to by; `plural` is the number its verb shows.
pub(super) fn classify(parts: &[String], determiner: bool, plural: Option<bool>) -> Referent {
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

pub(super) fn is_org_suffix(word: &str) -> bool {
    ORG_SUFFIXES.contains(&word.to_lowercase().as_str())
}

/// "SAP", "GitHub", "3M": all capitals, inner capitals or digits (but not the inner capital of
/// a surname such as "O'Brien" or one starting with Mc or Mac).
pub(super) fn is_org_like(word: &str) -> bool {
    let letters: Vec<char> = word.chars().filter(|c| c.is_alphabetic()).collect();
    let all_caps = letters.len() >= 2 && letters.iter().all(|c| c.is_uppercase());
    let surname = word.starts_with("Mc") || word.starts_with("Mac") || word.contains('\'');
    let inner_caps = !surname && letters.iter().skip(1).any(|c| c.is_uppercase());
    all_caps || inner_caps || word.chars().any(|c| c.is_ascii_digit())
}

pub(super) fn looks_plural(word: &str) -> bool {
    word.len() > 3
        && word.ends_with('s')
        && !["ss", "us", "is", "ys"]
            .iter()
            .any(|end| word.ends_with(end))
}

/// The antecedent given by a heading that names an entity ("## Alice", "## Billing service").
pub(super) fn heading_subject(title: &str) -> Option<Subject> {
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
