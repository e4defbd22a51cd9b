//! Subjects, chunks and facts: each clause mapped to a relation frame (subject, relation,
//! value) and its class.

#[allow(clippy::wildcard_imports)]
use super::*;

#[derive(Debug, Clone, Default)]
pub(super) struct Subj {
    pub(super) owner: String,
    pub(super) head: String,
}

impl Subj {
    pub(super) fn key(&self) -> String {
        join_key(&self.owner, &self.head)
    }
    pub(super) fn is_person(&self) -> bool {
        self.head.is_empty()
    }
}

pub(super) fn join_key(owner: &str, head: &str) -> String {
    match (owner.is_empty(), head.is_empty()) {
        (true, _) => head.to_string(),
        (false, true) => owner.to_string(),
        (false, false) => format!("{owner}:{head}"),
    }
}

pub(super) fn pronoun_owner(w: &str) -> Option<&'static str> {
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

pub(super) fn subject_is_person(toks: &[Tok]) -> bool {
    toks.is_empty() || (toks.len() == 1 && pronoun_owner(&toks[0].w).is_some())
}

/// canonical head noun phrase from already-stemmed words.
pub(super) fn canonical_head(words: &[String]) -> String {
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

pub(super) fn subject_key(toks: &[Tok]) -> Subj {
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
pub(super) struct Chunk {
    pub(super) prep: String,
    pub(super) det: String,
    pub(super) toks: Vec<String>,
    pub(super) cap: bool,
}

impl Chunk {
    pub(super) fn head(&self) -> &str {
        self.toks.last().map_or("", String::as_str)
    }
    pub(super) fn key(&self) -> String {
        format!("{}:{}", self.prep, self.toks.join(" "))
    }
    pub(super) fn is_temporal(&self) -> bool {
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
pub(super) fn chunk_comp(comp: &[Tok]) -> (Vec<Chunk>, bool) {
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
pub(super) enum Class {
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
pub(super) struct Fact {
    pub(super) subj: String,
    pub(super) owner: String,
    pub(super) head: String,
    pub(super) rel: String,
    pub(super) frame: &'static str,
    /// main verb lemma (with particle)
    pub(super) verb: String,
    pub(super) value: Vec<String>,
    pub(super) qual: Vec<String>,
    pub(super) chunks: Vec<Chunk>,
    pub(super) class: Class,
    pub(super) neg: bool,
    pub(super) past_event: bool,
    pub(super) history: bool,
    pub(super) change_verb: bool,
    pub(super) coord: bool,
    pub(super) instead_of: Vec<String>,
    pub(super) all_toks: Vec<String>,
}

impl Fact {
    pub(super) fn set(&mut self, rel: &str, frame: &'static str, value: Vec<String>, class: Class) {
        self.rel = rel.to_string();
        self.frame = frame;
        self.value = value;
        self.class = class;
    }
    pub(super) fn set_subject(&mut self, owner: &str, head: &str) {
        self.owner = owner.to_string();
        self.head = head.to_string();
        self.subj = join_key(owner, head);
    }
}

pub(super) fn non_temporal<'a>(chunks: &'a [Chunk], preps: &[&str]) -> Option<&'a Chunk> {
    chunks
        .iter()
        .find(|c| preps.contains(&c.prep.as_str()) && !c.toks.is_empty() && !c.is_temporal())
}

pub(super) fn any_chunk<'a>(chunks: &'a [Chunk], preps: &[&str]) -> Option<&'a Chunk> {
    chunks
        .iter()
        .find(|c| preps.contains(&c.prep.as_str()) && !c.toks.is_empty())
}

pub(super) fn object(chunks: &[Chunk]) -> Option<&Chunk> {
    chunks
        .first()
        .filter(|c| c.prep.is_empty() && !c.toks.is_empty() && !c.is_temporal())
}

pub(super) fn temporal_value(chunks: &[Chunk]) -> Vec<String> {
    chunks
        .iter()
        .filter(|c| c.is_temporal())
        .flat_map(|c| c.toks.iter().cloned())
        .collect()
}

/// qualifier keys: non-temporal chunks other than the value chunk.
pub(super) fn quals(chunks: &[Chunk], except: &[&Chunk]) -> Vec<String> {
    let mut q: Vec<String> = chunks
        .iter()
        .filter(|c| !c.is_temporal() && !except.contains(c) && !c.toks.is_empty())
        .map(Chunk::key)
        .collect();
    q.sort();
    q
}

pub(super) fn owner_of_object(obj: &Chunk, s: &Subj) -> String {
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

pub(super) fn to_fact(c: &Clause) -> Fact {
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

pub(super) fn copular(f: &mut Fact, s: &Subj, chunks: &[Chunk]) {
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

pub(super) fn mover(f: &mut Fact, s: &Subj, chunks: &[Chunk]) {
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

pub(super) fn use_like(f: &mut Fact, s: &Subj, chunks: &[Chunk], lemma: &str, passive: bool) {
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
