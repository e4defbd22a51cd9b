//! supersession detection for short memories.
//!
//! when a new memory is saved, the closest current memories in the same scope
//! are found elsewhere (embedding cosine). for each candidate pair (old, new)
//! this module decides whether `new` is an update of `old`: the same fact about
//! the same subject whose value changed ("i live in paris" -> "i moved to
//! berlin"), as opposed to a related, additive, historical or unrelated fact.
//!
//! it is pure std, offline and cheap (microseconds per pair):
//! 1. normalise: lowercase, contractions, a few british spellings, clock times,
//!    number words, light lemmatisation of common verbs and plurals;
//! 2. split into clauses and parse each into subject / verb group / complement,
//!    stripping discourse and change markers ("now", "anymore", "instead of x");
//! 3. map the clause to a relation frame (residence, employer, job title,
//!    schedule, setting, tool, status, owner, ...) with a value slot;
//! 4. compare frames: same subject + same relation + different value => update,
//!    guarded by additive markers, past events, negation, and relation classes
//!    that accumulate (likes, possessions) unless replacement language is used.
//!
//! frames that are not in the table fall back to a chunk alignment rule that
//! only fires for one short differing slot plus an explicit change marker.
//! precision is preferred over recall throughout.

/// The detector's answer for one (old, new) pair.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateJudgement {
    /// true when `new` should replace `old` as its next version.
    pub is_update: bool,
    /// 0..=1, confidence in this verdict (whichever way it goes).
    pub confidence: f32,
    /// short lowercase explanation, e.g. "same subject and relation (residence), new value"
    pub reason: String,
}

/// Judge whether `new` is the next version of `old`: the same fact about the same subject
/// whose value changed ("I live in Paris" -> "I moved to Berlin").
///
/// Rules, in order (the first that decides wins):
///
/// 1. **not an update**: `new` is a question; the two are identical after normalisation
///    (dedup's job); `new` carries an additive marker ("also", "too", "as well", "another",
///    "either", "both") without replacement language.
/// 2. each side is split into clauses and every clause is mapped to a frame
///    `(subject, relation, value)`. Subjects: I / we / my X / our X / the X / X's Y / a
///    name; "Bob is my manager" is read as "my manager is Bob". Relations come from a table:
///    residence and location ("live in", "based in", "moved to", "hosted on", "stored in"),
///    employer ("work at/for", "joined", "left"), job title ("I'm a ... engineer", "work as",
///    "promoted to"), team, manager and other attributes ("my X is V", "X: V"), name ("call
///    me"), age, counts ("I have two kids"), schedules of named events ("standup is at 9:30",
///    "moved to 10:00", "we deploy on Thursdays"), numeric settings ("raised to 50 MB", "is
///    set to"), tools ("use", "runs on", "written in", "switched/migrated to"), preferences,
///    likes, status ("paused", "launched"), owner ("owned by"); other verbs get a generic
///    frame.
/// 3. **update** when a clause pair has the same subject and relation and a different value,
///    subject to the relation's class: single-valued relations (residence, employer, title,
///    settings, schedules, attributes) need nothing more; multi-valued ones (tools,
///    preferences, current activities, generic verbs) need a change marker ("now", "these
///    days", "anymore", "instead", "switched", "moved", ...); accumulating ones (likes,
///    possessions, languages, capabilities) need explicit replacement language ("instead of",
///    "no longer", "anymore", "switched"). A flipped polarity with the same value is an update
///    ("I don't live in Paris anymore"), as are "instead of <old value>", "X took over as Y",
///    and ending verbs on the old object ("sold my condo", "finished Dune").
/// 4. **not an update**: past events ("I visited Rome in May"), history ("used to"), temporary
///    stays ("this week"), a new value that extends the old one ("... and S3"), a different
///    qualifier ("for billing" vs "for caching"), a schedule that only adds an exception ("on
///    Fridays"), negated facts with different values ("I don't eat pork" -> "... shellfish").
///
/// `confidence` is the confidence in the verdict itself (either way): about 0.85-0.9 for
/// table frames with a change marker, 0.6-0.75 for generic frames and for "no marker"
/// refusals. Precision is preferred over recall throughout.
pub fn judge_update(old: &str, new: &str) -> UpdateJudgement {
    let o = analysed(old);
    let n = analysed(new);
    if o.stems.is_empty() || n.stems.is_empty() {
        return verdict(false, 0.5, "empty memory");
    }
    if n.question {
        return verdict(false, 0.95, "new memory is a question, not a statement");
    }
    if o.question {
        return verdict(false, 0.9, "old memory is a question, not a statement");
    }
    if o.stems == n.stems {
        return verdict(
            false,
            0.9,
            "same text after normalisation (duplicate, not an update)",
        );
    }
    if n.markers.additive && !n.markers.replace {
        return verdict(
            false,
            0.85,
            "additive marker in new memory (also/too/another/as well/either)",
        );
    }
    if o.facts.is_empty() || n.facts.is_empty() {
        return fallback_align(&o, &n);
    }
    let mut best: Option<Verdict> = None;
    for of in &o.facts {
        for nf in &n.facts {
            let v = compare(of, nf, &n.markers);
            let better = match &best {
                None => true,
                Some(b) => {
                    if v.update != b.update {
                        v.update
                    } else if v.update {
                        v.conf > b.conf
                    } else {
                        v.stage > b.stage || (v.stage == b.stage && v.conf > b.conf)
                    }
                }
            };
            if better {
                best = Some(v);
            }
        }
    }
    match best {
        Some(v) => UpdateJudgement {
            is_update: v.update,
            confidence: v.conf.clamp(0.0, 1.0),
            reason: v.reason,
        },
        None => verdict(false, 0.5, "no comparable statement"),
    }
}

/// precision, recall and confusion counts of `judge_update` over labelled pairs
/// `(old, new, is_update)`: returns (precision, recall, tp, fp, fn, tn).
pub fn evaluate(pairs: &[(String, String, bool)]) -> (f64, f64, usize, usize, usize, usize) {
    let (mut tp, mut fp, mut fneg, mut tn) = (0usize, 0usize, 0usize, 0usize);
    for (old, new, gold) in pairs {
        match (judge_update(old, new).is_update, *gold) {
            (true, true) => tp += 1,
            (true, false) => fp += 1,
            (false, true) => fneg += 1,
            (false, false) => tn += 1,
        }
    }
    let precision = if tp + fp == 0 {
        1.0
    } else {
        tp as f64 / (tp + fp) as f64
    };
    let recall = if tp + fneg == 0 {
        1.0
    } else {
        tp as f64 / (tp + fneg) as f64
    };
    (precision, recall, tp, fp, fneg, tn)
}

/// parse the labelled set: one flat json object per line with string fields
/// `old`, `new`, optional `split` and bool field `update`. returns
/// `(old, new, update, holdout)`; malformed lines are skipped.
pub fn parse_pairs_jsonl(text: &str) -> Vec<(String, String, bool, bool)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let Some(fields) = parse_flat_json(line) else {
            continue;
        };
        let get_str = |k: &str| {
            fields.iter().find_map(|(key, v)| match v {
                JsonVal::Str(s) if key == k => Some(s.clone()),
                _ => None,
            })
        };
        let update = fields.iter().find_map(|(key, v)| match v {
            JsonVal::Bool(b) if key == "update" => Some(*b),
            _ => None,
        });
        if let (Some(old), Some(new), Some(update)) = (get_str("old"), get_str("new"), update) {
            let holdout = get_str("split").is_some_and(|s| s == "holdout");
            out.push((old, new, update, holdout));
        }
    }
    out
}

// ---------------------------------------------------------------------------
// word lists
// ---------------------------------------------------------------------------

const PRONOUNS: &[&str] = &[
    "i", "me", "we", "us", "you", "he", "she", "they", "it", "user",
];

const DETERMINERS: &[&str] = &[
    "the", "a", "an", "this", "that", "these", "those", "some", "any", "every", "each",
];

const POSSESSIVE_DETS: &[(&str, &str)] = &[
    ("my", "self"),
    ("our", "we"),
    ("your", "you"),
    ("his", "he"),
    ("her", "she"),
    ("their", "they"),
    ("its", "it"),
];

const MODALS: &[&str] = &[
    "will", "would", "can", "could", "should", "must", "might", "shall",
];

/// adverbs skipped inside a verb group ("i now deploy", "is now owned").
const VGROUP_ADVERBS: &[&str] = &[
    "now",
    "just",
    "also",
    "still",
    "really",
    "usually",
    "always",
    "often",
    "currently",
    "recently",
    "finally",
    "already",
    "officially",
    "actually",
    "only",
    "mostly",
    "generally",
    "typically",
    "normally",
    "sometimes",
    "even",
    "probably",
    "definitely",
    "newly",
    "then",
    "nowadays",
    "lately",
    "soon",
    "again",
    "mainly",
    "primarily",
    "basically",
    "honestly",
    "apparently",
    "publicly",
    "totally",
    "rarely",
    "occasionally",
    "regularly",
    "permanently",
    "temporarily",
    "mostly",
];

/// discourse words dropped at the start of a clause.
const LEADING: &[&str] = &[
    "please",
    "fyi",
    "btw",
    "note",
    "update",
    "actually",
    "also",
    "so",
    "ok",
    "okay",
    "oh",
    "well",
    "just",
    "now",
    "currently",
    "nowadays",
    "lately",
    "recently",
    "honestly",
    "basically",
    "anyway",
    "hey",
    "hi",
    "and",
    "but",
    "then",
    "correction",
    "reminder",
    "apparently",
    "officially",
    "finally",
    ",",
];

/// words dropped anywhere in a complement (markers are recorded separately).
const COMP_FILLERS: &[&str] = &[
    "now",
    "anymore",
    "again",
    "too",
    "either",
    "really",
    "just",
    "also",
    "still",
    "currently",
    "publicly",
    "officially",
    "finally",
    "already",
    "usually",
    "always",
    "actually",
    "definitely",
    "probably",
    "mostly",
    "even",
    "newly",
    "then",
    "soon",
    "lately",
    "recently",
    "nowadays",
    "yesterday",
    "today",
    "tonight",
    "tomorrow",
    "earlier",
    "instead",
    "please",
    "permanently",
    "temporarily",
    ",",
];

/// a complement is cut at these words (subordinate clauses, trailing adverbials).
const TRUNCATE: &[&str] = &[
    "starting",
    "effective",
    "after",
    "before",
    "since",
    "because",
    "so",
    "but",
    "though",
    "although",
    "when",
    "while",
    "which",
    "who",
    "whereas",
    "unless",
    "if",
];

const PREPS: &[&str] = &[
    "in", "on", "at", "to", "for", "from", "with", "by", "near", "around", "as", "into", "onto",
    "about", "via", "through", "inside", "under", "over", "during", "without", "across", "behind",
    "outside", "within", "towards", "toward", "between", "against", "until",
];

const TIME_NOUNS: &[&str] = &[
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
    "night",
    "weekend",
    "morning",
    "afternoon",
    "evening",
    "quarter",
    "sprint",
    "season",
    "spring",
    "summer",
    "fall",
    "autumn",
    "winter",
    "time",
    "semester",
    "term",
];

const ROLE_NOUNS: &[&str] = &[
    "engineer",
    "developer",
    "manager",
    "designer",
    "analyst",
    "scientist",
    "researcher",
    "architect",
    "lead",
    "director",
    "ceo",
    "cto",
    "cfo",
    "coo",
    "vp",
    "founder",
    "cofounder",
    "co-founder",
    "consultant",
    "contractor",
    "freelancer",
    "intern",
    "student",
    "teacher",
    "professor",
    "nurse",
    "doctor",
    "lawyer",
    "accountant",
    "writer",
    "editor",
    "marketer",
    "recruiter",
    "administrator",
    "admin",
    "sre",
    "tester",
    "programmer",
    "coder",
    "specialist",
    "coordinator",
    "officer",
    "executive",
    "assistant",
    "associate",
    "chef",
    "pilot",
    "pm",
    "owner",
    "head",
    "principal",
    "technician",
    "strategist",
    "advocate",
    "president",
];

/// status words (stems) for projects, apps, tickets.
const STATUS_WORDS: &[&str] = &[
    "pause",
    "hold",
    "active",
    "inactive",
    "beta",
    "alpha",
    "launch",
    "ship",
    "cancel",
    "deprecate",
    "done",
    "complete",
    "finish",
    "block",
    "blocked",
    "progress",
    "development",
    "archive",
    "freeze",
    "frozen",
    "stall",
    "ongoing",
    "approve",
    "reject",
    "close",
    "merge",
    "resolve",
    "production",
    "ga",
    "resume",
    "shelve",
    "sunset",
    "maintenance",
    "live",
    "prototype",
    "preview",
];

/// verbs whose use signals that a value changed.
const CHANGE_VERBS: &[&str] = &[
    "move",
    "relocate",
    "join",
    "leave",
    "quit",
    "switch",
    "migrate",
    "change",
    "rename",
    "raise",
    "lower",
    "increase",
    "decrease",
    "reduce",
    "bump",
    "push",
    "postpone",
    "delay",
    "reschedule",
    "shift",
    "transfer",
    "promote",
    "replace",
    "upgrade",
    "downgrade",
    "update",
    "rewrite",
    "launch",
    "ship",
    "cancel",
    "pause",
    "resume",
    "deprecate",
    "close",
    "start",
    "begin",
    "become",
    "turn",
    "adopt",
    "drop",
    "stop",
    "retire",
    "marry",
    "divorce",
    "extend",
    "cut",
    "double",
    "halve",
    "set",
    "settle",
    "sell",
    "reopen",
    "archive",
    "sunset",
    "shelve",
    "approve",
    "reject",
    "merge",
    "complete",
    "convert",
    "port",
    "transition",
    "adjust",
    "ditch",
    "swap",
    "trade",
    "grow",
    "shrink",
    "rise",
    "climb",
    "jump",
    "fall",
    "finish",
    "end",
    "give",
    "return",
];

/// verbs that end an old fact about the same object ("sold my condo",
/// "finished dune", "cancelled my gym membership").
const TERMINATE_VERBS: &[&str] = &[
    "sell", "finish", "complete", "quit", "leave", "cancel", "end", "stop", "drop", "close",
    "give", "return", "retire", "abandon",
];

/// relations that pile up rather than replace each other.
const ACCUM_VERBS: &[&str] = &[
    "speak",
    "play",
    "read",
    "eat",
    "drink",
    "learn",
    "know",
    "collect",
    "watch",
    "listen",
    "visit",
    "study",
    "buy",
    "meet",
    "fly",
    "travel",
    "see",
    "try",
    "cook",
    "bake",
    "wear",
    "attend",
    "practice",
    "make",
    "volunteer",
    "write",
    "own",
    "need",
    "want",
    // capabilities and memberships pile up too: "the app now supports spanish"
    "support",
    "include",
    "offer",
    "allow",
    "accept",
    "contain",
    "cover",
    "serve",
    "integrate",
];

/// base forms the lemmatiser recognises.
const VERBS: &[&str] = &[
    "be",
    "have",
    "do",
    "go",
    "live",
    "reside",
    "stay",
    "move",
    "relocate",
    "settle",
    "work",
    "join",
    "leave",
    "quit",
    "use",
    "prefer",
    "favor",
    "like",
    "love",
    "enjoy",
    "adore",
    "hate",
    "dislike",
    "detest",
    "drive",
    "ride",
    "take",
    "run",
    "play",
    "speak",
    "read",
    "write",
    "rewrite",
    "eat",
    "drink",
    "visit",
    "fly",
    "travel",
    "buy",
    "sell",
    "own",
    "meet",
    "call",
    "name",
    "wake",
    "sleep",
    "start",
    "begin",
    "end",
    "finish",
    "deploy",
    "release",
    "ship",
    "launch",
    "migrate",
    "switch",
    "change",
    "rename",
    "raise",
    "lower",
    "increase",
    "decrease",
    "reduce",
    "bump",
    "push",
    "postpone",
    "delay",
    "reschedule",
    "shift",
    "transfer",
    "promote",
    "store",
    "keep",
    "host",
    "support",
    "get",
    "become",
    "make",
    "manage",
    "lead",
    "report",
    "teach",
    "study",
    "learn",
    "attend",
    "cancel",
    "pause",
    "resume",
    "close",
    "merge",
    "build",
    "need",
    "want",
    "plan",
    "schedule",
    "happen",
    "occur",
    "hold",
    "set",
    "update",
    "replace",
    "upgrade",
    "downgrade",
    "adopt",
    "abandon",
    "drop",
    "stop",
    "retire",
    "marry",
    "divorce",
    "bear",
    "weigh",
    "cost",
    "include",
    "know",
    "think",
    "feel",
    "see",
    "look",
    "walk",
    "commute",
    "swim",
    "cook",
    "bake",
    "code",
    "develop",
    "design",
    "test",
    "review",
    "approve",
    "reject",
    "handle",
    "book",
    "order",
    "pay",
    "earn",
    "send",
    "receive",
    "catch",
    "base",
    "employ",
    "hire",
    "fire",
    "sync",
    "rotate",
    "remain",
    "continue",
    "turn",
    "grow",
    "follow",
    "watch",
    "listen",
    "rent",
    "share",
    "locate",
    "maintain",
    "deprecate",
    "archive",
    "freeze",
    "block",
    "complete",
    "extend",
    "cut",
    "double",
    "halve",
    "give",
    "tell",
    "find",
    "lose",
    "hear",
    "bring",
    "spend",
    "choose",
    "wear",
    "win",
    "fall",
    "break",
    "hang",
    "forget",
    "understand",
    "stand",
    "sit",
    "come",
    "say",
    "try",
    "help",
    "ask",
    "put",
    "let",
    "ditch",
    "swap",
    "trade",
    "return",
    "include",
    "offer",
    "accept",
    "contain",
    "cover",
    "serve",
    "integrate",
    "rise",
    "shrink",
    "climb",
    "jump",
    "open",
    "show",
    "believe",
    "pick",
    "check",
    "fix",
    "track",
    "bike",
    "cycle",
    "hike",
    "train",
    "text",
    "volunteer",
    "coach",
    "mentor",
    "lease",
    "skip",
    "avoid",
    "allow",
    "require",
    "expire",
    "renew",
    "subscribe",
    "charge",
    "adjust",
    "convert",
    "port",
    "transition",
    "implement",
    "rely",
    "reopen",
    "sunset",
    "shelve",
    "practice",
    "collect",
    "reply",
    "apply",
    "marry",
    "date",
    "kick",
    "wrap",
    "spend",
];

const IRREGULAR: &[(&str, &str, Form)] = &[
    ("is", "be", Form::Third),
    ("are", "be", Form::Base),
    ("am", "be", Form::Base),
    ("was", "be", Form::PastSimple),
    ("were", "be", Form::PastSimple),
    ("been", "be", Form::Part),
    ("being", "be", Form::Ing),
    ("has", "have", Form::Third),
    ("had", "have", Form::Past),
    ("having", "have", Form::Ing),
    ("does", "do", Form::Third),
    ("did", "do", Form::PastSimple),
    ("done", "do", Form::Part),
    ("goes", "go", Form::Third),
    ("went", "go", Form::PastSimple),
    ("gone", "go", Form::Part),
    ("ran", "run", Form::PastSimple),
    ("took", "take", Form::PastSimple),
    ("taken", "take", Form::Part),
    ("left", "leave", Form::Past),
    ("flew", "fly", Form::PastSimple),
    ("flown", "fly", Form::Part),
    ("flies", "fly", Form::Third),
    ("bought", "buy", Form::Past),
    ("met", "meet", Form::Past),
    ("wrote", "write", Form::PastSimple),
    ("written", "write", Form::Part),
    ("rewrote", "rewrite", Form::PastSimple),
    ("rewritten", "rewrite", Form::Part),
    ("made", "make", Form::Past),
    ("got", "get", Form::Past),
    ("gotten", "get", Form::Part),
    ("woke", "wake", Form::PastSimple),
    ("woken", "wake", Form::Part),
    ("spoke", "speak", Form::PastSimple),
    ("spoken", "speak", Form::Part),
    ("drove", "drive", Form::PastSimple),
    ("driven", "drive", Form::Part),
    ("ate", "eat", Form::PastSimple),
    ("eaten", "eat", Form::Part),
    ("drank", "drink", Form::PastSimple),
    ("drunk", "drink", Form::Part),
    ("began", "begin", Form::PastSimple),
    ("begun", "begin", Form::Part),
    ("became", "become", Form::PastSimple),
    ("sold", "sell", Form::Past),
    ("came", "come", Form::PastSimple),
    ("saw", "see", Form::PastSimple),
    ("seen", "see", Form::Part),
    ("knew", "know", Form::PastSimple),
    ("known", "know", Form::Part),
    ("caught", "catch", Form::Past),
    ("taught", "teach", Form::Past),
    ("thought", "think", Form::Past),
    ("brought", "bring", Form::Past),
    ("held", "hold", Form::Past),
    ("kept", "keep", Form::Past),
    ("led", "lead", Form::Past),
    ("paid", "pay", Form::Past),
    ("said", "say", Form::Past),
    ("sent", "send", Form::Past),
    ("spent", "spend", Form::Past),
    ("built", "build", Form::Past),
    ("felt", "feel", Form::Past),
    ("found", "find", Form::Past),
    ("gave", "give", Form::PastSimple),
    ("given", "give", Form::Part),
    ("grew", "grow", Form::PastSimple),
    ("grown", "grow", Form::Part),
    ("heard", "hear", Form::Past),
    ("lost", "lose", Form::Past),
    ("born", "bear", Form::Part),
    ("chose", "choose", Form::PastSimple),
    ("chosen", "choose", Form::Part),
    ("swam", "swim", Form::PastSimple),
    ("rode", "ride", Form::PastSimple),
    ("ridden", "ride", Form::Part),
    ("sat", "sit", Form::Past),
    ("stood", "stand", Form::Past),
    ("told", "tell", Form::Past),
    ("won", "win", Form::Past),
    ("wore", "wear", Form::PastSimple),
    ("worn", "wear", Form::Part),
    ("slept", "sleep", Form::Past),
    ("understood", "understand", Form::Past),
    ("forgot", "forget", Form::PastSimple),
    ("forgotten", "forget", Form::Part),
    ("hung", "hang", Form::Past),
    ("fell", "fall", Form::PastSimple),
    ("fallen", "fall", Form::Part),
    ("broke", "break", Form::PastSimple),
    ("broken", "break", Form::Part),
    ("froze", "freeze", Form::PastSimple),
    ("frozen", "freeze", Form::Part),
    ("quit", "quit", Form::Base),
    ("set", "set", Form::Base),
    ("put", "put", Form::Base),
    ("cut", "cut", Form::Base),
    ("read", "read", Form::Base),
    ("shut", "shut", Form::Base),
    ("let", "let", Form::Base),
];

/// british -> american spellings (and a few variants) applied per token.
const SPELLING: &[(&str, &str)] = &[
    ("favourite", "favorite"),
    ("favourites", "favorites"),
    ("favour", "favor"),
    ("favours", "favors"),
    ("colour", "color"),
    ("colours", "colors"),
    ("organisation", "organization"),
    ("organise", "organize"),
    ("centre", "center"),
    ("theatre", "theater"),
    ("licence", "license"),
    ("programme", "program"),
    ("travelling", "traveling"),
    ("travelled", "traveled"),
    ("cancelled", "canceled"),
    ("cancelling", "canceling"),
    ("neighbour", "neighbor"),
    ("behaviour", "behavior"),
    ("analyse", "analyze"),
    ("catalogue", "catalog"),
    ("grey", "gray"),
    ("realise", "realize"),
    ("optimise", "optimize"),
    ("honour", "honor"),
    ("flavour", "flavor"),
    ("humour", "humor"),
    ("metre", "meter"),
    ("litre", "liter"),
    ("defence", "defense"),
    ("practise", "practice"),
    ("mum", "mom"),
    ("maths", "math"),
    ("e-mail", "email"),
    ("wi-fi", "wifi"),
    ("co-worker", "coworker"),
];

const ORG_SUFFIXES: &[&str] = &[
    "corp",
    "corporation",
    "inc",
    "ltd",
    "llc",
    "gmbh",
    "co",
    "company",
    "'s",
];

/// pairs of alternatives where a new preference replaces the old one.
const ALT_GROUPS: &[&[&str]] = &[
    &["tab", "space"],
    &["light", "dark"],
    &["vim", "emac", "emacs", "neovim"],
    &["mac", "window", "linux"],
    &["metric", "imperial"],
    &["celsius", "fahrenheit"],
    &["remote", "office", "hybrid"],
    &["morning", "evening", "night", "afternoon"],
    &["email", "slack", "phone", "text"],
];

// ---------------------------------------------------------------------------
// tokens and normalisation
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Base,
    Third,
    Past,
    PastSimple,
    Part,
    Ing,
}

#[derive(Debug, Clone, PartialEq)]
struct Tok {
    w: String,
    cap: bool,
}

fn tok(w: &str, cap: bool) -> Tok {
    Tok {
        w: w.to_string(),
        cap,
    }
}

fn is_verb(w: &str) -> bool {
    VERBS.contains(&w)
}

fn undouble(b: &str) -> Option<String> {
    let c: Vec<char> = b.chars().collect();
    let n = c.len();
    if n >= 3 && c[n - 1] == c[n - 2] && !"aeiou".contains(c[n - 1]) {
        Some(c[..n - 1].iter().collect())
    } else {
        None
    }
}

/// lemma and form of a verb token, if it is a known verb form.
fn verb_info(w: &str) -> Option<(String, Form)> {
    if let Some(&(_, l, f)) = IRREGULAR.iter().find(|(s, _, _)| *s == w) {
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
                if let Some(r) = try_lemma(&u, form) {
                    return Some(r);
                }
            }
        }
    }
    None
}

fn noun_stem(w: &str) -> String {
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

fn number_word(w: &str) -> Option<u32> {
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
fn norm_time(w: &str) -> Option<String> {
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

fn is_clock(w: &str) -> bool {
    let b = w.as_bytes();
    b.len() == 5 && b[2] == b':' && b[..2].iter().chain(&b[3..]).all(u8::is_ascii_digit)
}

fn is_numberish(w: &str) -> bool {
    w.bytes().next().is_some_and(|b| b.is_ascii_digit())
        || (w.starts_with('$') && w.len() > 1)
        || number_word(w).is_some()
}

fn is_weekday(w: &str) -> bool {
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

fn is_month(w: &str) -> bool {
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

fn is_daypart(w: &str) -> bool {
    matches!(
        w,
        "morning" | "afternoon" | "evening" | "night" | "noon" | "midnight"
    )
}

/// normalised comparison form of a token.
fn stem(w: &str) -> String {
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
fn expand(lower: &str) -> Vec<String> {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match lower {
        "can't" | "cannot" => return v(&["can", "not"]),
        "won't" => return v(&["will", "not"]),
        "ain't" => return v(&["is", "not"]),
        "let's" => return v(&["let", "us"]),
        _ => {}
    }
    if let Some(b) = lower.strip_suffix("n't") {
        return vec![b.to_string(), "not".to_string()];
    }
    for (suffix, full) in [
        ("'re", "are"),
        ("'ve", "have"),
        ("'ll", "will"),
        ("'m", "am"),
        ("'d", "would"),
    ] {
        if let Some(b) = lower.strip_suffix(suffix) {
            if !b.is_empty() {
                return vec![b.to_string(), full.to_string()];
            }
        }
    }
    if let Some(b) = lower.strip_suffix("'s") {
        if b.is_empty() {
            return vec![lower.to_string()];
        }
        let is_is = matches!(
            b,
            "it" | "that" | "what" | "there" | "he" | "she" | "who" | "where" | "here" | "how"
        );
        return vec![b.to_string(), if is_is { "is" } else { "'s" }.to_string()];
    }
    if let Some(b) = lower.strip_suffix("s'") {
        return vec![format!("{b}s"), "'s".to_string()];
    }
    vec![lower.to_string()]
}

fn spelling(w: &str) -> String {
    SPELLING
        .iter()
        .find(|(b, _)| *b == w)
        .map_or_else(|| w.to_string(), |(_, a)| a.to_string())
}

/// tokenise a memory. returns the tokens and whether it reads as a question.
fn tokenize(text: &str) -> (Vec<Tok>, bool) {
    let text = text
        .replace(['\u{2019}', '\u{2018}', '`'], "'")
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

// ---------------------------------------------------------------------------
// markers
// ---------------------------------------------------------------------------

#[derive(Debug, Default, Clone, Copy)]
struct Markers {
    /// "now", "anymore", "no longer", "these days", "from now on", "new", ...
    change: bool,
    /// explicit replacement language: "instead", "no longer", "switched", ...
    replace: bool,
    /// "also", "too", "as well", "another", "either", ...
    additive: bool,
}

fn find_markers(toks: &[Tok]) -> Markers {
    let words: Vec<&str> = toks.iter().map(|t| t.w.as_str()).collect();
    let s = format!(" {} ", words.join(" "));
    let has = |p: &&str| s.contains(&format!(" {p} "));
    let change = [
        "now",
        "anymore",
        "nowadays",
        "these days",
        "from now on",
        "no longer",
        "instead",
        "no more",
        "starting",
        "as of",
        "new",
        "lately",
        "going forward",
        "effective",
        "not any more",
    ]
    .iter()
    .any(has);
    let replace = [
        "instead",
        "no longer",
        "anymore",
        "rather than",
        "no more",
        "in place of",
        "replaced",
        "switched",
        "switch",
        "migrated",
        "stopped",
    ]
    .iter()
    .any(has);
    let additive = [
        "also",
        "too",
        "as well",
        "another",
        "either",
        "additionally",
        "in addition",
        "a second",
        "my second",
        "our second",
        "both",
        "besides",
        "on top of",
    ]
    .iter()
    .any(has);
    Markers {
        change,
        replace,
        additive,
    }
}

// ---------------------------------------------------------------------------
// clauses
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Default)]
struct Clause {
    subj: Vec<Tok>,
    /// main lemma, "be" for copulas, "call_me" for "call me x"
    lemma: String,
    particle: String,
    neg: bool,
    past: bool,
    passive: bool,
    used_to: bool,
    /// "this week", "next week", "tomorrow": a temporary or planned state
    transient: bool,
    forced_change: bool,
    comp: Vec<Tok>,
    instead_of: Vec<String>,
}

fn starts_verbish(t: &Tok) -> bool {
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
fn split_clauses(toks: &[Tok]) -> Vec<(Vec<Tok>, bool)> {
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

fn strip_leading(toks: &[Tok]) -> &[Tok] {
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

fn is_be_finite(w: &str) -> bool {
    matches!(w, "is" | "are" | "was" | "were" | "am")
}

fn is_det_like(w: &str) -> bool {
    DETERMINERS.contains(&w) || POSSESSIVE_DETS.iter().any(|(d, _)| *d == w) || w == "'s"
}

fn is_finite_at(toks: &[Tok], j: usize) -> bool {
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
fn find_subject(toks: &[Tok]) -> Option<(Vec<Tok>, usize)> {
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
const SAME_PARTICIPLE: &[&str] = &[
    "cut", "set", "put", "quit", "shut", "let", "read", "become", "come", "run",
];

fn is_participle(w: &str) -> bool {
    SAME_PARTICIPLE.contains(&w) || matches!(verb_info(w), Some((_, Form::Past | Form::Part)))
}

/// the next token after `k` that is not a verb-group adverb.
fn next_content(toks: &[Tok], k: usize) -> Option<&str> {
    toks[k..]
        .iter()
        .map(|t| t.w.as_str())
        .find(|w| !VGROUP_ADVERBS.contains(w))
}

/// remove markers and adverbials from a complement; capture "instead of x".
fn clean_comp(comp: &[Tok]) -> (Vec<Tok>, Vec<String>) {
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

fn parse_clause(toks: &[Tok], inherited: Option<&[Tok]>) -> Option<Clause> {
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

// ---------------------------------------------------------------------------
// subjects, chunks, facts
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Default)]
struct Subj {
    owner: String,
    head: String,
}

impl Subj {
    fn key(&self) -> String {
        join_key(&self.owner, &self.head)
    }
    fn is_person(&self) -> bool {
        self.head.is_empty()
    }
}

fn join_key(owner: &str, head: &str) -> String {
    match (owner.is_empty(), head.is_empty()) {
        (true, _) => head.to_string(),
        (false, true) => owner.to_string(),
        (false, false) => format!("{owner}:{head}"),
    }
}

fn pronoun_owner(w: &str) -> Option<&'static str> {
    Some(match w {
        "i" | "me" | "user" => "self",
        "we" | "us" => "we",
        "you" => "you",
        "he" => "he",
        "she" => "she",
        "they" => "they",
        "it" => "it",
        _ => return None,
    })
}

fn subject_is_person(toks: &[Tok]) -> bool {
    toks.is_empty() || (toks.len() == 1 && pronoun_owner(&toks[0].w).is_some())
}

/// canonical head noun phrase from already-stemmed words.
fn canonical_head(words: &[String]) -> String {
    let kept: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .filter(|w| {
            !matches!(
                *w,
                "new" | "current" | "latest" | "present" | "updated" | "actual"
            )
        })
        .collect();
    let joined = kept.join(" ");
    let canon = match joined.as_str() {
        "email address" | "e-mail" | "mail" | "email id" => "email",
        "phone number" | "mobile number" | "mobile" | "cell" | "cell number" | "cell phone"
        | "cell phone number" | "telephone number" | "phone no" | "number" => "phone",
        "boss" | "line manager" | "direct manager" | "supervisor" => "manager",
        "job title" | "title" | "role" | "position" | "job role" => "title",
        "time zone" | "tz" => "timezone",
        "first name" | "full name" | "given name" | "preferred name" => "name",
        "home address" | "address" | "home" | "house" | "apartment" | "flat" => "home",
        "employer" | "company" | "workplace" => "employer",
        other => other,
    };
    canon.to_string()
}

fn subject_key(toks: &[Tok]) -> Subj {
    let words: Vec<&str> = toks
        .iter()
        .map(|t| t.w.as_str())
        .filter(|w| !VGROUP_ADVERBS.contains(w) && !matches!(*w, "the" | "a" | "an" | "this"))
        .collect();
    if words.is_empty() {
        return Subj {
            owner: "self".to_string(),
            head: String::new(),
        };
    }
    if words.len() == 1 {
        if let Some(o) = pronoun_owner(words[0]) {
            return Subj {
                owner: o.to_string(),
                head: String::new(),
            };
        }
    }
    let (owner, rest): (String, &[&str]) =
        if let Some((_, o)) = POSSESSIVE_DETS.iter().find(|(d, _)| *d == words[0]) {
            (o.to_string(), &words[1..])
        } else if let Some(p) = words.iter().position(|w| *w == "'s") {
            let o = words[..p]
                .iter()
                .map(|w| stem(w))
                .collect::<Vec<_>>()
                .join(" ");
            let o = if o == "user" { "self".to_string() } else { o };
            (o, &words[p + 1..])
        } else {
            (String::new(), &words[..])
        };
    let stems: Vec<String> = rest.iter().map(|w| stem(w)).collect();
    let head = canonical_head(&stems);
    // "our team" / "the team" speak for "we"
    if head == "team" && (owner.is_empty() || owner == "we") {
        return Subj {
            owner: "we".to_string(),
            head: String::new(),
        };
    }
    if head == "user" && owner.is_empty() {
        return Subj {
            owner: "self".to_string(),
            head: String::new(),
        };
    }
    Subj { owner, head }
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Chunk {
    prep: String,
    det: String,
    toks: Vec<String>,
    cap: bool,
}

impl Chunk {
    fn head(&self) -> &str {
        self.toks.last().map_or("", String::as_str)
    }
    fn key(&self) -> String {
        format!("{}:{}", self.prep, self.toks.join(" "))
    }
    fn is_temporal(&self) -> bool {
        if self.toks.is_empty() {
            return false;
        }
        let month_ctx = matches!(
            self.prep.as_str(),
            "in" | "on" | "by" | "until" | "since" | "from" | "to" | "during" | "before" | "after"
        ) || self.toks.iter().any(|t| is_numberish(t));
        let strong = |t: &str| {
            is_clock(t)
                || is_weekday(t)
                || is_month(t)
                || (t == "may" && month_ctx)
                || is_daypart(t)
        };
        let weak = |t: &str| is_numberish(t) || matches!(t, "every" | "other" | "each");
        if self.toks.iter().all(|t| strong(t) || weak(t)) && self.toks.iter().any(|t| strong(t)) {
            return true;
        }
        self.prep == "at"
            && self.toks.len() == 1
            && self.toks[0]
                .parse::<u32>()
                .is_ok_and(|h| (1..=24).contains(&h))
    }
}

/// split a cleaned complement into prepositional chunks of stemmed words.
fn chunk_comp(comp: &[Tok]) -> (Vec<Chunk>, bool) {
    let mut chunks = Vec::new();
    let mut cur = Chunk::default();
    let mut coord = false;
    for t in comp {
        let w = t.w.as_str();
        if matches!(w, "," | "and" | "or" | "&" | "plus") {
            coord = true;
            continue;
        }
        if PREPS.contains(&w) {
            if !cur.prep.is_empty() || !cur.toks.is_empty() || !cur.det.is_empty() {
                chunks.push(std::mem::take(&mut cur));
            }
            cur.prep = w.to_string();
            continue;
        }
        if is_det_like(w) && w != "'s" {
            if cur.toks.is_empty() {
                cur.det = w.to_string();
            }
            continue;
        }
        cur.toks.push(stem(w));
        cur.cap |= t.cap;
    }
    if !cur.prep.is_empty() || !cur.toks.is_empty() {
        chunks.push(cur);
    }
    (chunks, coord)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    /// one value at a time: a new value replaces the old one
    Single,
    /// can hold several values; needs a change marker to count as an update
    NeedsMarker,
    /// piles up (likes, possessions, events); needs replacement language
    Accum,
    /// no table frame: chunk alignment plus a change marker
    Generic,
}

#[derive(Debug, Clone)]
struct Fact {
    subj: String,
    owner: String,
    head: String,
    rel: String,
    frame: &'static str,
    /// main verb lemma (with particle)
    verb: String,
    value: Vec<String>,
    qual: Vec<String>,
    chunks: Vec<Chunk>,
    class: Class,
    neg: bool,
    past_event: bool,
    history: bool,
    change_verb: bool,
    coord: bool,
    instead_of: Vec<String>,
    all_toks: Vec<String>,
}

impl Fact {
    fn set(&mut self, rel: &str, frame: &'static str, value: Vec<String>, class: Class) {
        self.rel = rel.to_string();
        self.frame = frame;
        self.value = value;
        self.class = class;
    }
    fn set_subject(&mut self, owner: &str, head: &str) {
        self.owner = owner.to_string();
        self.head = head.to_string();
        self.subj = join_key(owner, head);
    }
}

fn non_temporal<'a>(chunks: &'a [Chunk], preps: &[&str]) -> Option<&'a Chunk> {
    chunks
        .iter()
        .find(|c| preps.contains(&c.prep.as_str()) && !c.toks.is_empty() && !c.is_temporal())
}

fn any_chunk<'a>(chunks: &'a [Chunk], preps: &[&str]) -> Option<&'a Chunk> {
    chunks
        .iter()
        .find(|c| preps.contains(&c.prep.as_str()) && !c.toks.is_empty())
}

fn object(chunks: &[Chunk]) -> Option<&Chunk> {
    chunks
        .first()
        .filter(|c| c.prep.is_empty() && !c.toks.is_empty() && !c.is_temporal())
}

fn temporal_value(chunks: &[Chunk]) -> Vec<String> {
    chunks
        .iter()
        .filter(|c| c.is_temporal())
        .flat_map(|c| c.toks.iter().cloned())
        .collect()
}

/// qualifier keys: non-temporal chunks other than the value chunk.
fn quals(chunks: &[Chunk], except: &[&Chunk]) -> Vec<String> {
    let mut q: Vec<String> = chunks
        .iter()
        .filter(|c| !c.is_temporal() && !except.contains(c) && !c.toks.is_empty())
        .map(Chunk::key)
        .collect();
    q.sort();
    q
}

fn owner_of_object(obj: &Chunk, s: &Subj) -> String {
    POSSESSIVE_DETS
        .iter()
        .find(|(d, _)| *d == obj.det)
        .map_or_else(
            || {
                if s.is_person() {
                    s.owner.clone()
                } else {
                    String::new()
                }
            },
            |(_, o)| o.to_string(),
        )
}

fn to_fact(c: &Clause) -> Fact {
    let s = subject_key(&c.subj);
    let (mut chunks, coord) = chunk_comp(&c.comp);
    let change_verb = c.forced_change || CHANGE_VERBS.contains(&c.lemma.as_str());
    let mut instead_of = c.instead_of.clone();
    if change_verb {
        chunks.retain(|ch| {
            if ch.prep == "from" && !ch.toks.is_empty() {
                instead_of.extend(ch.toks.iter().cloned());
                false
            } else {
                true
            }
        });
    }
    let all_toks: Vec<String> = chunks.iter().flat_map(|ch| ch.toks.clone()).collect();
    let verb = if c.particle.is_empty() {
        c.lemma.clone()
    } else {
        format!("{} {}", c.lemma, c.particle)
    };
    let mut f = Fact {
        subj: s.key(),
        owner: s.owner.clone(),
        head: s.head.clone(),
        rel: verb.clone(),
        frame: "generic",
        verb: verb.clone(),
        value: all_toks.clone(),
        qual: Vec::new(),
        chunks: chunks.clone(),
        class: Class::Generic,
        neg: c.neg,
        past_event: c.past && !change_verb,
        history: c.used_to,
        change_verb,
        coord,
        instead_of,
        all_toks: all_toks.clone(),
    };
    let person = s.is_person();
    let obj = object(&chunks);
    let temporal = chunks.iter().any(Chunk::is_temporal);
    let lemma = match (c.lemma.as_str(), c.particle.as_str()) {
        ("go", "up") => "raise",
        ("go", "down") => "lower",
        (l, _) => l,
    };
    if lemma != c.lemma {
        f.change_verb = true;
        f.past_event = false;
    }
    match lemma {
        "call_me" => f.set("name", "name", all_toks, Class::Single),
        "be" => copular(&mut f, &s, &chunks),
        "have" => match obj {
            Some(o) if o.det.is_empty() && o.toks.len() >= 2 && is_numberish(&o.toks[0]) => {
                let rel = format!("count:{}", o.head());
                f.set(&rel, "count", vec![o.toks[0].clone()], Class::Single);
            }
            Some(o) => {
                // "a 2019 macbook" -> macbook, "a dog named rex" -> dog
                let head = o
                    .toks
                    .iter()
                    .find(|t| !is_numberish(t) && !matches!(t.as_str(), "new" | "old" | "second"))
                    .unwrap_or(&o.toks[0]);
                let rel = format!("have:{head}");
                f.set(&rel, "possession", all_toks, Class::Accum);
            }
            None => {}
        },
        "live" | "reside" | "settle" | "stay" | "base" | "locate" => {
            if let Some(ch) =
                non_temporal(&chunks, &["in", "near", "at", "on", "outside", "around"])
            {
                let frame = if person { "residence" } else { "location" };
                f.set("where", frame, ch.toks.clone(), Class::Single);
                f.qual = quals(&chunks, &[ch]);
            }
        }
        "move" | "relocate" | "transfer" | "shift" | "push" | "postpone" | "delay"
        | "reschedule" | "bring" => mover(&mut f, &s, &chunks),
        "drop" | "ditch" | "swap" | "trade" | "abandon"
            if obj.is_some() && non_temporal(&chunks, &["for"]).is_some() =>
        {
            // "we dropped tailscale for wireguard"
            if let (Some(o), Some(w)) = (obj, non_temporal(&chunks, &["for"])) {
                f.instead_of.extend(o.toks.iter().cloned());
                f.set("use", "tool", w.toks.clone(), Class::NeedsMarker);
            }
        }
        "change" | "raise" | "lower" | "increase" | "decrease" | "reduce" | "bump" | "set"
        | "update" | "rename" | "cut" | "extend" | "double" | "halve" | "adjust" | "drop"
        | "grow" | "shrink" | "rise" | "climb" | "jump" | "fall" => {
            if let Some(t) = any_chunk(&chunks, &["to"]) {
                if person {
                    if let Some(o) = obj {
                        let owner = owner_of_object(o, &s);
                        f.set_subject(&owner, &canonical_head(&o.toks));
                    }
                }
                if t.is_temporal() {
                    f.set("when", "schedule", temporal_value(&chunks), Class::Single);
                } else {
                    f.set("attr", "attribute", t.toks.clone(), Class::Single);
                }
            }
        }
        "host" | "store" | "keep" | "put" => {
            if let Some(l) = non_temporal(&chunks, &["in", "on", "at", "inside"]) {
                if person {
                    if let Some(o) = obj {
                        let owner = owner_of_object(o, &s);
                        f.set_subject(&owner, &canonical_head(&o.toks));
                    }
                }
                f.set("where", "location", l.toks.clone(), Class::Single);
                f.qual = quals(&chunks, &[l, obj.unwrap_or(l)]);
            }
        }
        "work" => {
            if let Some(ch) = non_temporal(&chunks, &["at", "for"]).filter(|ch| ch.head() != "team")
            {
                f.set("employer", "employer", ch.toks.clone(), Class::Single);
            } else if let Some(ch) = non_temporal(&chunks, &["as"]) {
                f.set("title", "job title", ch.toks.clone(), Class::Single);
            } else if let Some(ch) =
                non_temporal(&chunks, &["on", "in", "with"]).filter(|ch| ch.head() == "team")
            {
                f.set("team", "team", ch.toks.clone(), Class::Single);
            } else if let Some(ch) = non_temporal(&chunks, &["on"]) {
                f.set(
                    "work on",
                    "current work",
                    ch.toks.clone(),
                    Class::NeedsMarker,
                );
                f.qual = quals(&chunks, &[ch]);
            } else if let Some(o) = obj.filter(|o| o.toks == ["there"]) {
                // "i don't work there anymore"
                f.set("employer", "employer", o.toks.clone(), Class::Single);
            }
        }
        "join" => {
            if let Some(o) = obj {
                if o.head() == "team" {
                    f.set("team", "team", o.toks.clone(), Class::Single);
                } else if o.cap {
                    f.set("employer", "employer", o.toks.clone(), Class::Single);
                }
            }
        }
        "leave" | "quit" => {
            if let Some(o) = obj.filter(|o| o.cap) {
                f.set("employer", "employer", o.toks.clone(), Class::Single);
                f.neg = true;
            }
        }
        "start" | "begin" | "kick" => {
            if temporal && (!person || obj.is_none()) {
                f.set("when", "schedule", temporal_value(&chunks), Class::Single);
                f.qual = quals(&chunks, &[]);
            } else if let Some(ch) = non_temporal(&chunks, &["at", "with"]).filter(|ch| ch.cap) {
                f.set("employer", "employer", ch.toks.clone(), Class::Single);
            }
        }
        "end" | "finish" | "wrap" if temporal => {
            f.set("end", "schedule", temporal_value(&chunks), Class::Single);
            f.qual = quals(&chunks, &[]);
        }
        "promote" => {
            if let Some(ch) = non_temporal(&chunks, &["to"]) {
                f.set("title", "job title", ch.toks.clone(), Class::Single);
            }
        }
        "schedule" | "plan" | "happen" | "occur" | "hold" if temporal && !person => {
            f.set("when", "schedule", temporal_value(&chunks), Class::Single);
            f.qual = quals(&chunks, &[]);
        }
        "switch" | "migrate" | "upgrade" | "downgrade" | "convert" | "port" | "transition" => {
            let target = non_temporal(&chunks, &["to", "onto", "into"]);
            match (target, obj) {
                (Some(t), Some(o)) if person => {
                    let rel = format!("switch:{}", o.head());
                    f.set(&rel, "switch", t.toks.clone(), Class::Single);
                }
                (Some(t), _) => {
                    f.set("use", "tool", t.toks.clone(), Class::NeedsMarker);
                    f.qual = quals(&chunks, &[t]);
                }
                _ => {}
            }
        }
        "replace" => {
            if let (Some(o), Some(w)) = (obj, non_temporal(&chunks, &["with", "by"])) {
                f.instead_of.extend(o.toks.iter().cloned());
                f.set("use", "tool", w.toks.clone(), Class::NeedsMarker);
            }
        }
        "use" | "rely" | "adopt" | "write" | "rewrite" | "build" | "code" | "develop"
        | "implement" | "run" => use_like(&mut f, &s, &chunks, lemma, c.passive),
        "prefer" | "favor" => {
            let value_chunk = chunks.iter().find(|c| {
                !c.toks.is_empty() && matches!(c.prep.as_str(), "" | "to") && !c.is_temporal()
            });
            if let Some(v) = value_chunk {
                // "i prefer tea over coffee": the rejected alternative counts
                // as an explicit replacement when it was the old value
                let mut excluded: Vec<&Chunk> = vec![v];
                for ch in &chunks {
                    if matches!(ch.prep.as_str(), "over" | "to") && ch != v {
                        f.instead_of.extend(ch.toks.iter().cloned());
                        excluded.push(ch);
                    }
                }
                f.set("prefer", "preference", v.toks.clone(), Class::NeedsMarker);
                f.qual = quals(&chunks, &excluded);
            }
        }
        "like" | "love" | "enjoy" | "adore" => {
            f.set("like", "likes", all_toks, Class::Accum);
        }
        "hate" | "dislike" | "detest" => {
            f.set("dislike", "dislikes", all_toks, Class::Accum);
        }
        "own" | "maintain" | "manage" | "lead" if c.passive => {
            if let Some(ch) = non_temporal(&chunks, &["by"]) {
                f.set("owner", "owner", ch.toks.clone(), Class::Single);
            }
        }
        "own" | "maintain" | "lead" if !person && s.owner.is_empty() => {
            if let Some(o) = obj.filter(|o| o.det == "the") {
                let value: Vec<String> = s.head.split(' ').map(str::to_string).collect();
                f.set_subject("", &canonical_head(&o.toks));
                f.set("owner", "owner", value, Class::Single);
            }
        }
        "call" | "name" if c.passive && !all_toks.is_empty() => {
            // "my cat is called miso" keeps the cat as subject
            let head = if s.head == "name" {
                String::new()
            } else {
                s.head.clone()
            };
            f.set_subject(&s.owner, &head);
            f.set("name", "name", all_toks, Class::Single);
        }
        "go" if any_chunk(&chunks, &["by"]).is_some() && person => {
            if let Some(ch) = any_chunk(&chunks, &["by"]) {
                f.set("name", "name", ch.toks.clone(), Class::Single);
            }
        }
        "bear" if c.passive => {
            if let Some(ch) = non_temporal(&chunks, &["in", "at"]) {
                f.set("birthplace", "birthplace", ch.toks.clone(), Class::Single);
            } else if temporal {
                f.set(
                    "birthday",
                    "birthday",
                    temporal_value(&chunks),
                    Class::Single,
                );
            }
        }
        "turn" if obj.is_some_and(|o| is_numberish(&o.toks[0])) => {
            if let Some(o) = obj {
                f.set("age", "age", vec![o.toks[0].clone()], Class::Single);
            }
        }
        "launch" | "ship" | "cancel" | "pause" | "resume" | "deprecate" | "archive" | "close"
        | "complete" | "freeze" | "sunset" | "shelve" | "approve" | "reject" | "merge"
        | "release" | "reopen" | "open" => {
            if !person && obj.is_none() && temporal {
                // "the office closes at 6pm": a schedule, not a status change
                let rel = format!("when:{}", c.lemma);
                f.set(&rel, "schedule", temporal_value(&chunks), Class::Single);
                f.qual = quals(&chunks, &[]);
            } else if !person && obj.is_none() {
                f.set("status", "status", vec![c.lemma.clone()], Class::Single);
            } else if let Some(o) = obj.filter(|o| o.det == "the" || !o.det.is_empty()) {
                let owner = owner_of_object(o, &s);
                f.set_subject(&owner, &canonical_head(&o.toks));
                f.set("status", "status", vec![c.lemma.clone()], Class::Single);
            }
        }
        l if ACCUM_VERBS.contains(&l) => {
            f.set(&verb, "activity", all_toks, Class::Accum);
        }
        _ => {}
    }
    // "i'm in berlin this week": a stay, not a residence
    if f.frame == "residence" && lemma == "be" && c.transient {
        f.rel = "stay".to_string();
        f.frame = "temporary stay";
        f.class = Class::Accum;
    }
    // activities with a time slot: "we deploy on thursdays", "i wake up at 6am"
    if matches!(f.class, Class::Generic | Class::Accum)
        && f.rel == verb
        && temporal
        && !matches!(lemma, "have" | "be")
    {
        f.value = temporal_value(&chunks);
        f.qual = quals(&chunks, &[]);
        f.frame = "schedule";
        if s.owner == "we" && s.head.is_empty() {
            f.set_subject("", &verb);
            f.rel = "when".to_string();
            f.class = Class::Single;
        } else {
            f.rel = format!("when:{verb}");
            f.class = Class::NeedsMarker;
        }
    }
    f
}

fn copular(f: &mut Fact, s: &Subj, chunks: &[Chunk]) {
    let Some(first) = chunks.first() else {
        return;
    };
    let all: Vec<String> = f.all_toks.clone();
    let person = s.is_person();
    let first_prep = first.prep.as_str();
    // relation nouns in the subject: "my name is x", "my job title is x"
    let owner_level = |f: &mut Fact, rel: &str, frame: &'static str, value: Vec<String>| {
        let owner = s.owner.clone();
        f.set_subject(&owner, "");
        f.set(rel, frame, value, Class::Single);
    };
    match s.head.as_str() {
        "name" => return owner_level(f, "name", "name", all),
        "age" => return owner_level(f, "age", "age", all),
        "title" => return owner_level(f, "title", "job title", all),
        "employer" => return owner_level(f, "employer", "employer", all),
        "job" if matches!(first_prep, "at" | "for" | "with") => {
            return owner_level(f, "employer", "employer", first.toks.clone())
        }
        "home" if matches!(first_prep, "in" | "at" | "near" | "on") => {
            return owner_level(f, "where", "residence", first.toks.clone())
        }
        "team" => return owner_level(f, "team", "team", all),
        _ => {}
    }
    let status = !person && all.iter().any(|t| STATUS_WORDS.contains(&t.as_str()));
    if first_prep.is_empty() {
        let t = &first.toks;
        if t.len() >= 3 && t[0] == "fan" && t[1] == "of" {
            f.set("like", "likes", t[2..].to_vec(), Class::Accum);
            return;
        }
        let years_old = t.len() >= 2
            && is_numberish(&t[0])
            && t[1..]
                .iter()
                .all(|x| matches!(x.as_str(), "year" | "old" | "yo" | "yr"));
        if years_old || (person && t.len() == 1 && is_numberish(&t[0])) {
            f.set("age", "age", vec![t[0].clone()], Class::Single);
            return;
        }
        if person {
            if ROLE_NOUNS.contains(&first.head()) && !first.det.is_empty() {
                f.set("title", "job title", t.clone(), Class::Single);
            } else if first.head() == "team" {
                f.set("team", "team", t.clone(), Class::Single);
            } else if let Some(next) = chunks.get(1).filter(|c| !c.is_temporal()) {
                // "i'm allergic to peanuts", "i'm responsible for billing"
                let rel = format!("be {} {}", t.join(" "), next.prep);
                f.set(&rel, "state", next.toks.clone(), Class::Accum);
                f.qual = quals(chunks, &[first, next]);
            } else {
                f.set("be", "state", t.clone(), Class::NeedsMarker);
            }
            return;
        }
        if status {
            f.set("status", "status", all, Class::Single);
        } else if first.is_temporal() {
            f.set("when", "schedule", temporal_value(chunks), Class::Single);
            f.qual = quals(chunks, &[]);
        } else {
            f.set("attr", "attribute", t.clone(), Class::Single);
            f.qual = quals(chunks, &[first]);
        }
        return;
    }
    if status {
        f.set("status", "status", all, Class::Single);
    } else if chunks.iter().all(Chunk::is_temporal) {
        f.set("when", "schedule", temporal_value(chunks), Class::Single);
    } else if first.head() == "team" && matches!(first_prep, "on" | "in") {
        f.set("team", "team", first.toks.clone(), Class::Single);
    } else if first_prep == "into" {
        f.set("like", "likes", first.toks.clone(), Class::Accum);
    } else if let Some(ch) = non_temporal(
        chunks,
        &[
            "in", "on", "at", "near", "inside", "around", "under", "within", "outside",
        ],
    ) {
        let frame = if person { "residence" } else { "location" };
        f.set("where", frame, ch.toks.clone(), Class::Single);
        f.qual = quals(chunks, &[ch]);
    } else if first_prep == "from" {
        f.set("origin", "origin", first.toks.clone(), Class::Single);
    }
}

fn mover(f: &mut Fact, s: &Subj, chunks: &[Chunk]) {
    let Some(t) = any_chunk(chunks, &["to", "into", "onto"]) else {
        if chunks.iter().any(Chunk::is_temporal) && !s.is_person() {
            f.set("when", "schedule", temporal_value(chunks), Class::Single);
        }
        return;
    };
    let obj = object(chunks);
    if s.is_person() {
        if let Some(o) = obj {
            // events ("we moved standup to 10") are keyed without an owner
            // unless a possessive says otherwise ("i moved my appointment")
            let possessive = POSSESSIVE_DETS.iter().any(|(d, _)| *d == o.det);
            let owner = if t.is_temporal() && !possessive {
                String::new()
            } else {
                owner_of_object(o, s)
            };
            f.set_subject(&owner, &canonical_head(&o.toks));
        }
    }
    let person_after = f.head.is_empty();
    if t.is_temporal() {
        f.set("when", "schedule", temporal_value(chunks), Class::Single);
    } else if t.head() == "team" && person_after {
        f.set("team", "team", t.toks.clone(), Class::Single);
    } else {
        let frame = if person_after {
            "residence"
        } else {
            "location"
        };
        f.set("where", frame, t.toks.clone(), Class::Single);
    }
}

fn use_like(f: &mut Fact, s: &Subj, chunks: &[Chunk], lemma: &str, passive: bool) {
    let person = s.is_person();
    let obj = object(chunks);
    let loc = non_temporal(chunks, &["in", "with", "on"]);
    if lemma == "run" && person && !passive {
        return; // "i'm running the design team": not a tool relation
    }
    let shift_verbs = matches!(
        lemma,
        "write" | "rewrite" | "build" | "code" | "develop" | "implement" | "run"
    );
    if person {
        if let (Some(o), Some(l), true) = (obj, loc, shift_verbs) {
            let owner = owner_of_object(o, s);
            f.set_subject(&owner, &canonical_head(&o.toks));
            f.set("use", "tool", l.toks.clone(), Class::NeedsMarker);
            f.qual = quals(chunks, &[o, l]);
        } else if let (Some(o), false) = (obj, shift_verbs) {
            f.set("use", "tool", o.toks.clone(), Class::NeedsMarker);
            f.qual = quals(chunks, &[o]);
        } else if lemma == "write" {
            f.set("write", "activity", f.all_toks.clone(), Class::Accum);
        } else if let Some(l) = non_temporal(chunks, &["on", "with"]) {
            f.set("use", "tool", l.toks.clone(), Class::NeedsMarker);
            f.qual = quals(chunks, &[l]);
        }
    } else if let Some(v) = obj.or(loc) {
        f.set("use", "tool", v.toks.clone(), Class::NeedsMarker);
        f.qual = quals(chunks, &[v]);
    }
}

// ---------------------------------------------------------------------------
// analysis and comparison
// ---------------------------------------------------------------------------

struct Analysis {
    question: bool,
    stems: Vec<String>,
    markers: Markers,
    facts: Vec<Fact>,
}

/// Texts analysed last on this thread, newest last.
const RECENT_ANALYSES: usize = 32;

thread_local! {
    static RECENT: std::cell::RefCell<Vec<(String, std::rc::Rc<Analysis>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// [`analyse`], remembered for the last [`RECENT_ANALYSES`] texts of this thread: a save
/// judges its new memory against each of its near neighbours in turn, so without it the new
/// text is analysed again for every pair.
fn analysed(text: &str) -> std::rc::Rc<Analysis> {
    let hit = RECENT.with_borrow(|recent| {
        recent
            .iter()
            .rev()
            .find(|(seen, _)| seen == text)
            .map(|(_, analysis)| std::rc::Rc::clone(analysis))
    });
    if let Some(analysis) = hit {
        return analysis;
    }
    let analysis = std::rc::Rc::new(analyse(text));
    RECENT.with_borrow_mut(|recent| {
        if recent.len() == RECENT_ANALYSES {
            recent.remove(0);
        }
        recent.push((text.to_string(), std::rc::Rc::clone(&analysis)));
    });
    analysis
}

fn analyse(text: &str) -> Analysis {
    let (toks, question) = tokenize(text);
    let markers = find_markers(&toks);
    let stems = toks
        .iter()
        .filter(|t| t.w != ",")
        .map(|t| stem(&t.w))
        .collect();
    let mut facts = Vec::new();
    let mut first_subj: Option<Vec<Tok>> = None;
    for (clause_toks, inherit) in split_clauses(&toks) {
        let inherited = if inherit { first_subj.as_deref() } else { None };
        if let Some(c) = parse_clause(&clause_toks, inherited) {
            if first_subj.is_none() {
                first_subj = Some(c.subj.clone());
            }
            facts.push(to_fact(&c));
        }
    }
    Analysis {
        question,
        stems,
        markers,
        facts,
    }
}

struct Verdict {
    update: bool,
    conf: f32,
    reason: String,
    /// how far the comparison got; the deepest non-update reason is reported
    stage: u8,
}

fn verdict(is_update: bool, confidence: f32, reason: &str) -> UpdateJudgement {
    UpdateJudgement {
        is_update,
        confidence,
        reason: reason.to_string(),
    }
}

fn v(update: bool, conf: f32, stage: u8, reason: impl Into<String>) -> Verdict {
    Verdict {
        update,
        conf,
        reason: reason.into(),
        stage,
    }
}

fn core(value: &[String]) -> Vec<&str> {
    value
        .iter()
        .map(String::as_str)
        .filter(|w| !ORG_SUFFIXES.contains(w))
        .collect()
}

fn value_eq(a: &[String], b: &[String]) -> bool {
    let (ca, cb) = (core(a), core(b));
    if ca == cb {
        return true;
    }
    let pro = |c: &[&str]| matches!(c, ["there"] | ["it"] | ["that"] | ["here"]);
    pro(&ca) || pro(&cb)
}

/// every word of `small` appears in `big`, and `big` has more words.
fn strictly_contains(big: &[String], small: &[String]) -> bool {
    let (cb, cs) = (core(big), core(small));
    !cs.is_empty() && cb.len() > cs.len() && cs.iter().all(|w| cb.contains(w))
}

fn subj_compatible(o: &Fact, n: &Fact) -> bool {
    if o.subj == n.subj {
        return true;
    }
    // "the logs" vs "our logs", "the office" vs "our office"
    !o.head.is_empty()
        && o.head == n.head
        && matches!(
            (o.owner.as_str(), n.owner.as_str()),
            ("", "we") | ("we", "")
        )
}

fn rel_compatible(a: &str, b: &str) -> bool {
    a == b || matches!((a, b), ("when", "start") | ("start", "when"))
}

/// which kinds of time expression a schedule value uses.
fn time_kinds(value: &[String]) -> Vec<&'static str> {
    let mut k = Vec::new();
    for w in value {
        let kind = if is_clock(w) {
            "clock"
        } else if is_weekday(w) {
            "weekday"
        } else if is_month(w) || w == "may" {
            "date"
        } else {
            continue;
        };
        if !k.contains(&kind) {
            k.push(kind);
        }
    }
    k
}

/// same words in the same order except for numbers that changed.
fn only_numbers_differ(a: &[String], b: &[String]) -> bool {
    a.len() == b.len()
        && a != b
        && a.iter()
            .zip(b)
            .all(|(x, y)| x == y || (is_numberish(x) && is_numberish(y)))
}

fn alt_group_match(a: &[String], b: &[String]) -> bool {
    ALT_GROUPS.iter().any(|g| {
        a.iter().any(|w| g.contains(&w.as_str())) && b.iter().any(|w| g.contains(&w.as_str()))
    })
}

fn compare(o: &Fact, n: &Fact, nm: &Markers) -> Verdict {
    let changed = nm.change || nm.replace || n.change_verb;
    if n.past_event {
        return v(
            false,
            0.8,
            1,
            "new memory reads as a past event or history; events accumulate",
        );
    }
    if n.history || o.history {
        return v(
            false,
            0.75,
            1,
            "one side describes history (used to), not a current fact",
        );
    }
    // "my password manager is lastpass" -> "i use 1password instead of
    // lastpass": an explicit mention of the old value may come from the owner
    let owners_ok = subj_compatible(o, n)
        || (n.head.is_empty()
            && !o.head.is_empty()
            && o.rel == "attr"
            && (o.owner == n.owner || (n.owner == "we" && o.owner.is_empty())));
    if !n.instead_of.is_empty() && owners_ok && !n.neg {
        let old_words: Vec<&String> = o.value.iter().chain(o.all_toks.iter()).collect();
        if n.instead_of
            .iter()
            .any(|w| !ORG_SUFFIXES.contains(&w.as_str()) && old_words.contains(&w))
        {
            return v(
                true,
                0.85,
                6,
                "new memory explicitly replaces the old value (instead of / from)",
            );
        }
    }
    // "my therapist is dr. lee" -> "i stopped seeing dr. lee"
    if n.neg && n.change_verb && owners_ok && !o.neg && !subj_compatible(o, n) {
        let n_obj = n.chunks.iter().find(|c| !c.toks.is_empty());
        if n_obj.is_some_and(|c| value_eq(&c.toks, &o.value)) {
            return v(
                true,
                0.75,
                5,
                "new memory says the old value no longer holds",
            );
        }
    }
    if !subj_compatible(o, n) {
        return v(
            false,
            0.85,
            2,
            format!("different subject ({} vs {})", show(&o.subj), show(&n.subj)),
        );
    }
    // "i own a condo in miami" -> "i sold my condo in miami": the object of
    // the ending verb must be the old fact's main object
    if TERMINATE_VERBS.contains(&n.verb.split(' ').next().unwrap_or_default()) && !n.neg {
        let old_main = o
            .chunks
            .iter()
            .find(|c| !c.toks.is_empty() && (c.prep.is_empty() || c.toks == o.value));
        let new_obj = n.chunks.first().filter(|c| c.prep.is_empty());
        if let (Some(om), Some(no)) = (old_main, new_obj) {
            let covered = core(&om.toks)
                .iter()
                .all(|w| n.all_toks.iter().any(|x| x == w));
            if om.head() == no.head() && covered {
                return v(
                    true,
                    0.75,
                    5,
                    format!("new memory ends the old fact ({})", show(&n.verb)),
                );
            }
        }
    }
    if let Some(cat) = n.rel.strip_prefix("switch:") {
        let cat = cat.to_string();
        let mentioned = o.all_toks.contains(&cat)
            || o.head.split(' ').any(|w| w == cat)
            || o.rel.contains(cat.as_str());
        if mentioned && !n.value.iter().all(|w| o.all_toks.contains(w)) {
            return v(
                true,
                0.75,
                5,
                format!("same subject switched {cat} to a new value"),
            );
        }
        return v(false, 0.7, 3, "switch does not concern the old fact");
    }
    let renamed = n.verb == "rename" && matches!(o.rel.as_str(), "name" | "attr");
    // "the standup channel is #x" -> "the standup channel moved to #y"
    let moved_slot = matches!(
        n.verb.split(' ').next().unwrap_or_default(),
        "move" | "relocate" | "transfer" | "migrate"
    ) && matches!(
        (o.rel.as_str(), n.rel.as_str()),
        ("attr", "where") | ("where", "attr")
    );
    // "my dog is 3 years old" vs "my dog is 4 now": a bare number on a
    // non-person subject is parsed as an attribute
    let bare_age = |a: &Fact, b: &Fact| {
        a.rel == "age" && b.rel == "attr" && b.value.len() == 1 && is_numberish(&b.value[0])
    };
    if !rel_compatible(&o.rel, &n.rel)
        && !renamed
        && !moved_slot
        && !bare_age(o, n)
        && !bare_age(n, o)
    {
        return v(
            false,
            0.75,
            3,
            format!(
                "same subject, different relation ({} vs {})",
                show(&o.rel),
                show(&n.rel)
            ),
        );
    }
    if o.class == Class::Generic || n.class == Class::Generic {
        return generic_compare(o, n, changed);
    }
    // "i'm going to rome in may" -> "to oslo in may instead": same time, the
    // one other slot changed, with a change marker
    if o.qual != n.qual
        && o.rel.starts_with("when:")
        && changed
        && value_eq(&o.value, &n.value)
        && o.qual.len() == 1
        && n.qual.len() == 1
        && o.qual[0].split(':').next() == n.qual[0].split(':').next()
        && !o.neg
        && !n.neg
    {
        return v(
            true,
            0.65,
            5,
            format!(
                "same subject and timed activity ({}), one slot changed with a change marker",
                show(&n.verb)
            ),
        );
    }
    // "invoices are due in 30 days" -> "due in 45 days"
    let split_quals = |q: &[String]| -> Vec<String> {
        q.join(" ").split([' ', ':']).map(str::to_string).collect()
    };
    let (oq, nq) = (split_quals(&o.qual), split_quals(&n.qual));
    if o.qual.len() == n.qual.len()
        && value_eq(&o.value, &n.value)
        && o.neg == n.neg
        && only_numbers_differ(&oq, &nq)
        && (o.class.max(n.class) == Class::Single || changed)
    {
        return v(
            true,
            0.75,
            5,
            format!(
                "same subject and relation ({}), the number changed",
                o.frame
            ),
        );
    }
    if o.qual != n.qual && !(n.qual.is_empty() && changed) {
        return v(
            false,
            0.7,
            3,
            format!("same relation ({}) but different qualifier", o.frame),
        );
    }
    if value_eq(&o.value, &n.value) {
        if o.neg != n.neg {
            return v(
                true,
                0.85,
                5,
                format!("same fact ({}) with flipped polarity", n.frame),
            );
        }
        return v(
            false,
            0.9,
            4,
            "same subject, relation and value (duplicate or paraphrase)",
        );
    }
    if o.neg || n.neg {
        return v(
            false,
            0.7,
            4,
            "negated facts with different values do not replace each other",
        );
    }
    if n.coord || strictly_contains(&n.value, &o.value) {
        return v(
            false,
            0.75,
            4,
            "new value extends the old one (additive or refinement)",
        );
    }
    if strictly_contains(&o.value, &n.value) {
        return v(false, 0.7, 4, "new value is a narrower restatement");
    }
    // "the office closes at 6pm" -> "closes at 7pm on fridays": an exception
    let moved = matches!(
        n.verb.as_str(),
        "move" | "push" | "postpone" | "delay" | "reschedule" | "shift" | "change" | "bring"
    );
    if o.frame == "schedule"
        && n.frame == "schedule"
        && !moved
        && !time_kinds(&n.value)
            .iter()
            .all(|k| time_kinds(&o.value).contains(k))
    {
        return v(
            false,
            0.65,
            4,
            "new schedule adds a time qualifier (an exception, not a replacement)",
        );
    }
    let mut class = o.class.max(n.class);
    // "i drink two cups a day" -> "one cup a day now": only a quantity changed
    if class != Class::Single && changed && only_numbers_differ(&o.value, &n.value) {
        class = Class::Single;
    }
    if n.rel == "prefer" && alt_group_match(&o.value, &n.value) {
        class = Class::Single;
    }
    match class {
        Class::Single => {
            let conf = if changed { 0.9 } else { 0.8 };
            v(
                true,
                conf,
                5,
                format!("same subject and relation ({}), new value", n.frame),
            )
        }
        // "i'm a night owl" -> "i'm vegetarian now": person states pile up
        // unless the two values are clearly the same kind of thing
        Class::NeedsMarker
            if n.rel == "be"
                && o.value.last() != n.value.last()
                && !alt_group_match(&o.value, &n.value)
                && !only_numbers_differ(&o.value, &n.value) =>
        {
            v(
                false,
                0.6,
                4,
                "states of a person can hold together; no shared kind between the values",
            )
        }
        Class::NeedsMarker if changed => v(
            true,
            0.75,
            5,
            format!(
                "same subject and relation ({}), new value with a change marker",
                n.frame
            ),
        ),
        Class::NeedsMarker => v(
            false,
            0.6,
            4,
            format!(
                "relation ({}) can hold several values and there is no change marker",
                n.frame
            ),
        ),
        Class::Accum if nm.replace => v(
            true,
            0.7,
            5,
            format!(
                "accumulating relation ({}) with explicit replacement language",
                n.frame
            ),
        ),
        _ => v(
            false,
            0.75,
            4,
            format!(
                "relation ({}) accumulates; no replacement language",
                n.frame
            ),
        ),
    }
}

/// fallback for verbs outside the frame table: align prepositional chunks and
/// allow exactly one short differing slot, only with an explicit change marker.
fn generic_compare(o: &Fact, n: &Fact, changed: bool) -> Verdict {
    let (oc, nc) = (&o.chunks, &n.chunks);
    if nc.len() > oc.len() {
        return v(
            false,
            0.65,
            3,
            "new memory adds detail to a different frame",
        );
    }
    if oc.iter().zip(nc.iter()).any(|(a, b)| a.prep != b.prep) {
        return v(false, 0.7, 3, "different sentence structure");
    }
    let diffs: Vec<usize> = (0..nc.len())
        .filter(|&i| oc[i].toks != nc[i].toks)
        .collect();
    if oc.len() > nc.len() {
        let extra_ok = oc[nc.len()..].iter().all(|c| !c.is_temporal());
        let head_kept = diffs.len() == 1 && oc[diffs[0]].head() == nc[diffs[0]].head();
        if !(extra_ok && head_kept && changed) {
            return v(false, 0.65, 3, "old memory has details the new one lacks");
        }
    }
    if diffs.is_empty() {
        if o.neg != n.neg {
            return v(true, 0.8, 5, "same statement with flipped polarity");
        }
        return v(false, 0.85, 4, "same statement (duplicate or paraphrase)");
    }
    if diffs.len() > 1 {
        return v(false, 0.7, 4, "more than one slot differs");
    }
    let (ov, nv) = (&oc[diffs[0]].toks, &nc[diffs[0]].toks);
    if ov.len() > 4 || nv.len() > 4 {
        return v(false, 0.65, 4, "differing span is too long to be a value");
    }
    if o.neg || n.neg || n.coord || strictly_contains(nv, ov) {
        return v(
            false,
            0.65,
            4,
            "negated or extended value, not a replacement",
        );
    }
    if !changed {
        return v(
            false,
            0.6,
            4,
            format!(
                "same action ({}) with a different slot but no change marker",
                show(&n.rel)
            ),
        );
    }
    v(
        true,
        0.65,
        5,
        format!(
            "same subject and action ({}), one slot changed with a change marker",
            show(&n.rel)
        ),
    )
}

fn show(s: &str) -> String {
    let s = s.replace("self", "user");
    if s.is_empty() {
        "-".to_string()
    } else {
        s
    }
}

/// whole-sentence token alignment, used when a side has no parsable clause.
fn fallback_align(o: &Analysis, n: &Analysis) -> UpdateJudgement {
    let clean = |a: &Analysis| -> Vec<String> {
        a.stems
            .iter()
            .filter(|w| !COMP_FILLERS.contains(&w.as_str()) && !is_det_like(w))
            .cloned()
            .collect()
    };
    let (a, b) = (clean(o), clean(n));
    let prefix = a.iter().zip(b.iter()).take_while(|(x, y)| x == y).count();
    let max_suffix = a.len().min(b.len()) - prefix;
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(max_suffix)
        .take_while(|(x, y)| x == y)
        .count();
    let da = &a[prefix..a.len() - suffix];
    let db = &b[prefix..b.len() - suffix];
    if da.is_empty() && db.is_empty() {
        return verdict(false, 0.85, "same statement (duplicate or paraphrase)");
    }
    let value_like = |w: &String| is_numberish(w) || is_weekday(w) || is_month(w) || is_clock(w);
    let shared = prefix + suffix;
    let ok = prefix > 0
        && !da.is_empty()
        && !db.is_empty()
        && da.len() <= 3
        && db.len() <= 3
        && shared * 10 >= 6 * a.len().max(b.len())
        && db.iter().any(value_like);
    if ok && (n.markers.change || n.markers.replace) {
        verdict(
            true,
            0.6,
            "token alignment: shared frame, one short value changed, with a change marker",
        )
    } else {
        verdict(false, 0.6, "no comparable relation frame")
    }
}

// ---------------------------------------------------------------------------
// tiny json reader (flat objects with string / bool values)
// ---------------------------------------------------------------------------

enum JsonVal {
    Str(String),
    Bool(bool),
    Other,
}

fn parse_flat_json(line: &str) -> Option<Vec<(String, JsonVal)>> {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < chars.len() && chars[*i].is_whitespace() {
            *i += 1;
        }
    };
    let parse_str = |i: &mut usize| -> Option<String> {
        if chars.get(*i) != Some(&'"') {
            return None;
        }
        *i += 1;
        let mut s = String::new();
        while *i < chars.len() {
            let c = chars[*i];
            *i += 1;
            match c {
                '"' => return Some(s),
                '\\' => {
                    let e = *chars.get(*i)?;
                    *i += 1;
                    match e {
                        'n' => s.push('\n'),
                        't' => s.push('\t'),
                        'r' => s.push('\r'),
                        'b' => s.push('\u{8}'),
                        'f' => s.push('\u{c}'),
                        'u' => {
                            let hex: String = chars.get(*i..*i + 4)?.iter().collect();
                            *i += 4;
                            let mut cp = u32::from_str_radix(&hex, 16).ok()?;
                            if (0xd800..0xdc00).contains(&cp)
                                && chars.get(*i) == Some(&'\\')
                                && chars.get(*i + 1) == Some(&'u')
                            {
                                let lo: String = chars.get(*i + 2..*i + 6)?.iter().collect();
                                let lo = u32::from_str_radix(&lo, 16).ok()?;
                                *i += 6;
                                if (0xdc00..0xe000).contains(&lo) {
                                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                                }
                            }
                            s.push(char::from_u32(cp).unwrap_or('\u{fffd}'));
                        }
                        other => s.push(other),
                    }
                }
                _ => s.push(c),
            }
        }
        None
    };
    skip_ws(&mut i);
    if chars.get(i) != Some(&'{') {
        return None;
    }
    i += 1;
    let mut out = Vec::new();
    loop {
        skip_ws(&mut i);
        match chars.get(i) {
            Some('}') => return Some(out),
            Some(',') => {
                i += 1;
                continue;
            }
            Some('"') => {}
            _ => return None,
        }
        let key = parse_str(&mut i)?;
        skip_ws(&mut i);
        if chars.get(i) != Some(&':') {
            return None;
        }
        i += 1;
        skip_ws(&mut i);
        let val = match chars.get(i)? {
            '"' => JsonVal::Str(parse_str(&mut i)?),
            't' if chars.get(i..i + 4)?.iter().collect::<String>() == "true" => {
                i += 4;
                JsonVal::Bool(true)
            }
            'f' if chars.get(i..i + 5)?.iter().collect::<String>() == "false" => {
                i += 5;
                JsonVal::Bool(false)
            }
            _ => {
                while i < chars.len() && !matches!(chars[i], ',' | '}') {
                    i += 1;
                }
                JsonVal::Other
            }
        };
        out.push((key, val));
    }
}

/// Words a `Label: value` memory may have after its colon and still read as an attribute.
const MAX_LABEL_VALUE_WORDS: usize = 4;

/// Whether what follows a `Label:` is a line someone says rather than a value: more than
/// [`MAX_LABEL_VALUE_WORDS`] words, more than one sentence, or words that start with a pronoun
/// ("Tom: I live in Leeds").
fn speaks(rest: &[&str]) -> bool {
    let first = rest
        .first()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
                .to_lowercase()
        })
        .unwrap_or_default();
    if matches!(
        first.as_str(),
        "i" | "i'm"
            | "i've"
            | "i'll"
            | "i'd"
            | "we"
            | "we're"
            | "we've"
            | "we'll"
            | "you"
            | "you're"
            | "he"
            | "she"
            | "they"
            | "they're"
            | "it"
            | "it's"
            | "my"
            | "our"
            | "me"
    ) {
        return true;
    }
    // More than one sentence, or a long one.
    let inner_stop = rest
        .iter()
        .rev()
        .skip(1)
        .any(|raw| raw.ends_with(['.', '!', '?']));
    inner_stop || rest.len() > MAX_LABEL_VALUE_WORDS
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// where the labelled set lives: `$PAIRS`, then the crate root, then the cwd.
    fn pairs_path_candidates() -> Vec<PathBuf> {
        let mut c = Vec::new();
        if let Ok(p) = std::env::var("PAIRS") {
            c.push(PathBuf::from(p));
        }
        if let Some(dir) = option_env!("CARGO_MANIFEST_DIR") {
            c.push(PathBuf::from(dir).join("eval/supersession-pairs.jsonl"));
        }
        if let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") {
            c.push(PathBuf::from(dir).join("eval/supersession-pairs.jsonl"));
        }
        c.push(PathBuf::from("eval/supersession-pairs.jsonl"));
        c
    }

    fn upd(old: &str, new: &str) -> bool {
        judge_update(old, new).is_update
    }

    #[test]
    fn residence_changes_are_updates() {
        assert!(upd("I live in Paris", "I live in Berlin"));
        assert!(upd("I live in Paris", "I moved to Berlin"));
        assert!(upd("I live in Paris", "I just relocated to Berlin"));
        assert!(upd("Lives in Paris", "Moved to Berlin last month"));
    }

    #[test]
    fn residence_non_updates() {
        assert!(!upd("I live in Paris", "I like Paris in spring"));
        assert!(!upd("I live in Paris", "My sister lives in Rome"));
        assert!(!upd("I live in Paris", "I was born in Lyon"));
        assert!(!upd("I live in Berlin", "I live in Berlin, Germany"));
    }

    #[test]
    fn negation_of_old_fact_is_update() {
        assert!(upd("I live in Paris", "I don't live in Paris anymore"));
        assert!(upd("I'm vegetarian", "I'm no longer vegetarian"));
        assert!(upd("I don't drink coffee", "I drink coffee now"));
        assert!(upd("I drink coffee", "I stopped drinking coffee"));
        assert!(upd("I work at Google", "I don't work there anymore"));
    }

    #[test]
    fn negated_additive_is_not_update() {
        assert!(!upd("I don't eat pork", "I don't eat shellfish either"));
        assert!(!upd("I don't eat pork", "I don't eat beef"));
    }

    #[test]
    fn additive_markers_block() {
        assert!(!upd("I speak English", "I also speak French"));
        assert!(!upd("I play guitar", "I play piano as well"));
        assert!(!upd(
            "I have a meeting at 3pm",
            "I have another meeting at 5pm"
        ));
        assert!(!upd(
            "We use Kafka for events",
            "We use Kafka for events and S3 for storage"
        ));
    }

    #[test]
    fn schedules() {
        assert!(upd("deploys are on Tuesday", "deploys are on Thursday"));
        assert!(upd("deploys are on Tuesday", "we now deploy on Thursdays"));
        assert!(upd("standup is at 9:30", "standup moved to 10:00"));
        assert!(upd("standup is at 9:30am", "standup is at 10 am now"));
        assert!(upd("standup is at 9:30", "standup moved from 9:30 to 10"));
        assert!(!upd("standup is at 9:30", "retro is at 15:00"));
        assert!(!upd("standup is at 9:30", "standup is at 9:30am"));
    }

    #[test]
    fn settings_and_numbers() {
        assert!(upd(
            "the API rate limit is 100 requests per minute",
            "the API rate limit is 300 requests per minute"
        ));
        assert!(upd(
            "the API rate limit is 100 requests per second",
            "we raised the API rate limit to 300 requests per second"
        ));
        assert!(upd("I am 34 years old", "I'm 35 now"));
        assert!(!upd(
            "the API rate limit is 100 requests per minute",
            "the API timeout is 30 seconds"
        ));
    }

    #[test]
    fn preferences_and_likes() {
        assert!(upd(
            "my favorite color is blue",
            "my favourite colour is green now"
        ));
        assert!(upd("I prefer tabs", "I prefer spaces now"));
        assert!(upd("I prefer tabs", "I prefer spaces"));
        assert!(!upd("I like coffee", "I like tea"));
        assert!(upd("I like coffee", "I like tea instead of coffee now"));
    }

    #[test]
    fn employer_manager_title() {
        assert!(upd("I work at Google", "I joined Stripe last month"));
        assert!(upd("My manager is Alice", "Bob is my manager now"));
        assert!(upd("I'm a backend developer", "I'm a product manager now"));
        assert!(!upd("I work at Google", "I worked at Amazon before Google"));
        assert!(!upd("My manager is Alice", "Alice's manager is Dana"));
    }

    #[test]
    fn tools_and_stack() {
        assert!(upd("we use Postgres", "we migrated to MySQL"));
        assert!(upd("I use VS Code as my editor", "I switched to Neovim"));
        assert!(!upd(
            "we use Postgres for billing",
            "we use Redis for caching"
        ));
        assert!(!upd("we use Postgres", "we use Redis"));
    }

    #[test]
    fn possessions_and_events_accumulate() {
        assert!(!upd("I have a dog named Rex", "I have a cat named Tom"));
        assert!(!upd("I visited Rome in May", "I visited Lisbon in June"));
        assert!(upd("I have two kids", "I have three kids now"));
    }

    #[test]
    fn questions_duplicates_and_junk_do_not_crash() {
        assert!(!upd("I live in Paris", "Do I still live in Paris?"));
        assert!(!upd("I live in Paris", "I live in Paris"));
        assert!(!upd("I live in Paris", "i live in paris!"));
        for (a, b) in [
            ("", ""),
            ("?", "!"),
            ("and and and", ", , ,"),
            ("x: y", "x: z"),
            ("\u{2019}s", "'s'"),
            ("9 am", "10 pm"),
            ("é ü ß 東京", "東京"),
        ] {
            let j = judge_update(a, b);
            assert!((0.0..=1.0).contains(&j.confidence));
        }
    }

    #[test]
    fn fuzzed_inputs_do_not_panic() {
        let vocab = [
            "i",
            "we",
            "my",
            "the",
            "is",
            "was",
            "not",
            "now",
            "also",
            "and",
            "to",
            "in",
            "at",
            "on",
            "'s",
            "moved",
            "live",
            "lives",
            "used",
            "had",
            "has",
            "been",
            "got",
            "set",
            "9:30",
            "2pm",
            "am",
            "10k",
            "$5",
            "4th",
            "may",
            "friday",
            "Paris",
            "Bob",
            "x:",
            "instead",
            "of",
            "from",
            "-",
            "?",
            ",",
            "東京",
            "é",
            "don't",
            "it's",
            "users'",
            "call",
            "me",
            "took",
            "over",
            "as",
            "stopped",
            "drinking",
            "sold",
            "up",
            "\u{1f600}",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..3000 {
            let mut make = || {
                let n = (next() % 9) as usize;
                (0..n)
                    .map(|_| vocab[(next() % vocab.len() as u64) as usize])
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let (a, b) = (make(), make());
            let j = judge_update(&a, &b);
            assert!((0.0..=1.0).contains(&j.confidence), "{a:?} -> {b:?}");
        }
        assert!(
            parse_pairs_jsonl("{\"old\": \"\\ud800\\u0041\", \"new\": \"x\", \"update\": true}")
                .len()
                == 1
        );
    }

    #[test]
    fn ending_an_old_fact() {
        assert!(upd("I own a condo in Miami", "I sold my condo in Miami"));
        assert!(upd("I'm reading Dune", "I finished Dune"));
        assert!(upd("My therapist is Dr. Lee", "I stopped seeing Dr. Lee"));
        assert!(!upd("I work at Google", "I left my keys at Google"));
        assert!(!upd("I have a bike", "I sold my car"));
        assert!(!upd(
            "My favorite city is Rome",
            "I don't like Rome anymore"
        ));
    }

    #[test]
    fn explicit_replacement_needs_the_same_owner() {
        assert!(upd(
            "The on-call pager is PagerDuty",
            "We replaced PagerDuty with Opsgenie"
        ));
        assert!(upd(
            "Our VPN provider is Tailscale",
            "We dropped Tailscale for WireGuard"
        ));
        assert!(!upd(
            "My sister lives in Rome",
            "I live in Milan instead of Rome"
        ));
        assert!(!upd(
            "My sister lives in Rome",
            "I don't live in Rome anymore"
        ));
    }

    #[test]
    fn role_holders_and_swaps() {
        assert!(upd(
            "The product owner for checkout is Lena",
            "Omar took over as product owner for checkout"
        ));
        assert!(upd(
            "Python is my favorite language",
            "My favorite language is Rust now"
        ));
        assert!(!upd("Bob is my manager", "Bob took over as CTO"));
        assert!(!upd("Alice is my manager", "Alice is my friend"));
    }

    #[test]
    fn third_person_user_memories() {
        assert!(upd(
            "User's favorite programming language is Python",
            "User's favorite programming language is now Rust"
        ));
        assert!(upd("User lives in Toronto", "User moved to Vancouver"));
        assert!(!upd("User has a golden retriever", "User has a tabby cat"));
    }

    #[test]
    fn plural_subjects_and_unknown_verbs() {
        assert!(upd(
            "Billing emails go to finance@acme.com",
            "Billing emails now go to ap@acme.com"
        ));
        assert!(upd(
            "My parents live in Ohio",
            "My parents moved to Florida"
        ));
        assert!(upd(
            "We bill customers monthly",
            "We now bill customers annually"
        ));
        assert!(!upd(
            "We bill customers monthly",
            "We bill customers in euros"
        ));
        assert!(!upd("I bank with Chase", "I bank with Ally too"));
    }

    #[test]
    fn quantities_and_numbers() {
        assert!(upd(
            "Invoices are due in 30 days",
            "Invoices are due in 45 days"
        ));
        assert!(upd("Team size is 6", "Team size grew to 9"));
        assert!(upd("My rent is $1500", "My rent went up to $1700"));
        assert!(upd(
            "The timeout is 10 seconds",
            "The timeout is set to 30 seconds"
        ));
        assert!(upd("I have a 2019 MacBook", "I have a 2023 MacBook now"));
        assert!(upd("My dog is 3 years old", "My dog is 4 now"));
        assert!(!upd("My birthday is May 4", "My birthday is on May 4th"));
        assert!(!upd("I have 2 monitors", "I have 3 keyboards"));
    }

    #[test]
    fn schedule_exceptions_and_temporary_stays() {
        assert!(upd(
            "The office closes at 6pm",
            "The office now closes at 5pm"
        ));
        assert!(!upd(
            "The office closes at 6pm",
            "The office closes at 7pm on Fridays"
        ));
        assert!(!upd("I'm in Berlin this week", "I'm in Munich next week"));
        assert!(upd(
            "I'm going to Rome in May",
            "I'm going to Oslo in May instead"
        ));
    }

    #[test]
    fn capabilities_states_and_purposes_accumulate() {
        assert!(!upd(
            "The app supports English",
            "The app now supports Spanish"
        ));
        assert!(!upd("I'm a night owl", "I've become a vegetarian"));
        assert!(!upd(
            "We switched to Linear",
            "We switched to Notion for docs"
        ));
        assert!(!upd(
            "I use Linear for tasks",
            "I switched to Todoist for groceries"
        ));
        assert!(upd(
            "The team uses Jira for tickets",
            "The team switched to Linear for tickets"
        ));
    }

    #[test]
    fn colon_memories() {
        assert!(upd("Favorite editor: VS Code", "Favorite editor: Neovim"));
        assert!(upd("Timezone: PST", "Timezone: CET"));
    }

    #[test]
    fn speaker_lines_are_not_attributes() {
        for (old, new) in [
            (
                "[3 May 2024] Priya: Thanks, Tom! Your notes on the draft helped a lot.",
                "[3 May 2024] Priya: Sounds good, Tom. See you at the climbing gym on Friday!",
            ),
            (
                "Tom: We went hiking near the lake last weekend and the kids loved it.",
                "Tom: The kids were so tired after the hike that they slept all afternoon.",
            ),
            (
                "Priya: I'm so proud of the mural I painted for the library.",
                "Priya: Thanks! I want to paint another one for the school next spring.",
            ),
            (
                "Tom: Wow, Priya! Great news.",
                "Tom: Thanks, Priya. Lucky you!",
            ),
        ] {
            assert!(!upd(old, new), "{old} -> {new}");
        }
        // A fact stated by a speaker still updates.
        assert!(upd("Tom: I live in Leeds.", "Tom: I live in York now."));
    }

    #[test]
    fn normalisation_helpers() {
        assert_eq!(norm_time("2pm").as_deref(), Some("14:00"));
        assert_eq!(norm_time("9:30").as_deref(), Some("09:30"));
        assert_eq!(norm_time("12am").as_deref(), Some("00:00"));
        assert_eq!(norm_time("spam"), None);
        assert_eq!(stem("lived"), "live");
        assert_eq!(stem("transferred"), "transfer");
        assert_eq!(stem("thursdays"), "thursday");
        assert_eq!(stem("paris"), "paris");
        assert_eq!(stem("two"), "2");
        assert_eq!(expand("don't"), vec!["do", "not"]);
        assert_eq!(expand("alice's"), vec!["alice", "'s"]);
    }

    #[test]
    fn json_lines_parser() {
        let text = "{\"old\": \"a \\\"q\\\" \\u00e9\", \"new\": \"b\", \"update\": true, \"note\": \"x\", \"split\": \"holdout\"}\n\n{\"old\":\"c\",\"new\":\"d\",\"update\":false,\"split\":\"dev\"}\nnot json\n";
        let p = parse_pairs_jsonl(text);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].0, "a \"q\" \u{e9}");
        assert!(p[0].2 && p[0].3);
        assert!(!p[1].2 && !p[1].3);
    }

    #[test]
    fn evaluate_counts() {
        let pairs = vec![
            (
                "I live in Paris".to_string(),
                "I live in Rome".to_string(),
                true,
            ),
            ("I like tea".to_string(), "I like coffee".to_string(), false),
        ];
        let (p, r, tp, fp, fneg, tn) = evaluate(&pairs);
        assert_eq!((tp, fp, fneg, tn), (1, 0, 0, 1));
        assert!((p - 1.0).abs() < 1e-9 && (r - 1.0).abs() < 1e-9);
    }

    #[test]
    fn labelled_set_precision_and_recall() {
        let candidates = pairs_path_candidates();
        let text = candidates
            .iter()
            .find_map(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_else(|| {
                panic!("labelled set not found (tried {candidates:?}); set PAIRS=/path/to/file")
            });
        let rows = parse_pairs_jsonl(&text);
        assert!(rows.len() >= 80, "expected at least 80 pairs");
        let pick = |holdout: Option<bool>| -> Vec<(String, String, bool)> {
            rows.iter()
                .filter(|r| holdout.is_none_or(|h| r.3 == h))
                .map(|r| (r.0.clone(), r.1.clone(), r.2))
                .collect()
        };
        for (name, sel) in [("dev", Some(false)), ("holdout", Some(true)), ("all", None)] {
            let (p, r, tp, fp, fneg, tn) = evaluate(&pick(sel));
            println!(
                "{name:>7}: precision {p:.3} recall {r:.3} (tp {tp} fp {fp} fn {fneg} tn {tn})"
            );
        }
        for (old, new, gold, holdout) in &rows {
            let j = judge_update(old, new);
            if j.is_update != *gold {
                let split = if *holdout { "holdout" } else { "dev" };
                println!(
                    "  miss [{split}] gold={gold} got={} ({:.2}, {}): {old:?} -> {new:?}",
                    j.is_update, j.confidence, j.reason
                );
            }
        }
        let (p, r, ..) = evaluate(&pick(None));
        assert!(p >= 0.95, "precision {p:.3} < 0.95");
        assert!(r >= 0.8, "recall {r:.3} < 0.8");
    }
}
