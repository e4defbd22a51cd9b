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

#[derive(Debug, Clone)]
pub(super) struct Fact {
    pub(super) subj: String,
    pub(super) owner: String,
    pub(super) head: String,
    pub(super) rel: Relation,
    pub(super) frame: Frame,
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
    pub(super) fn set(&mut self, rel: Relation, frame: Frame, value: Vec<String>, class: Class) {
        self.rel = rel;
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

/// What the verb rules read of a clause.
pub(super) struct Ctx<'a> {
    pub(super) c: &'a Clause,
    pub(super) s: &'a Subj,
    pub(super) chunks: &'a [Chunk],
    pub(super) obj: Option<&'a Chunk>,
    pub(super) temporal: bool,
    pub(super) person: bool,
    pub(super) all_toks: &'a [String],
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
        rel: Relation::Verb(verb.clone()),
        frame: Frame::Generic,
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
    let x = Ctx {
        c,
        s: &s,
        chunks: &chunks,
        obj: object(&chunks),
        temporal: chunks.iter().any(Chunk::is_temporal),
        person: s.is_person(),
        all_toks: &all_toks,
    };
    let lemma = match (c.lemma.as_str(), c.particle.as_str()) {
        ("go", "up") => "raise",
        ("go", "down") => "lower",
        (l, _) => l,
    };
    if lemma != c.lemma {
        f.change_verb = true;
        f.past_event = false;
    }
    if let Some(rule) = rules_for(lemma).find(|rule| applies(*rule, &x)) {
        apply(rule, &mut f, &x, lemma);
    }
    // "i'm in berlin this week": a stay, not a residence
    if f.frame == Frame::Residence && lemma == "be" && c.transient {
        f.rel = Relation::Stay;
        f.frame = Frame::TemporaryStay;
        f.class = Class::Accum;
    }
    // activities with a time slot: "we deploy on thursdays", "i wake up at 6am"
    if matches!(f.class, Class::Generic | Class::Accum)
        && f.rel == Relation::Verb(verb.clone())
        && x.temporal
        && !matches!(lemma, "have" | "be")
    {
        f.value = temporal_value(&chunks);
        f.qual = quals(&chunks, &[]);
        f.frame = Frame::Schedule;
        if s.owner == "we" && s.head.is_empty() {
            f.set_subject("", &verb);
            f.rel = Relation::When;
            f.class = Class::Single;
        } else {
            f.rel = Relation::WhenOf(verb);
            f.class = Class::NeedsMarker;
        }
    }
    f
}

/// Whether a row of the verb table applies to the clause; when it does not, the next row
/// naming the verb is tried.
pub(super) fn applies(rule: VerbRule, x: &Ctx) -> bool {
    match rule {
        VerbRule::DropFor => x.obj.is_some() && non_temporal(x.chunks, &["for"]).is_some(),
        VerbRule::End => x.temporal,
        VerbRule::Schedule => x.temporal && !x.person,
        VerbRule::OwnedBy | VerbRule::Born => x.c.passive,
        VerbRule::Owns => !x.person && x.s.owner.is_empty(),
        VerbRule::Named => x.c.passive && !x.all_toks.is_empty(),
        VerbRule::GoesBy => any_chunk(x.chunks, &["by"]).is_some() && x.person,
        VerbRule::Turns => x.obj.is_some_and(|o| is_numberish(&o.toks[0])),
        _ => true,
    }
}

/// Builds the frame of a clause whose verb row applies (see [`VerbRule`] for each rule).
#[allow(clippy::too_many_lines)]
pub(super) fn apply(rule: VerbRule, f: &mut Fact, x: &Ctx, lemma: &str) {
    let (s, chunks, obj) = (x.s, x.chunks, x.obj);
    let all_toks = x.all_toks.to_vec();
    match rule {
        VerbRule::CallMe => f.set(Relation::Name, Frame::Name, all_toks, Class::Single),
        VerbRule::Copular => copular(f, s, chunks),
        VerbRule::Have => match obj {
            Some(o) if o.det.is_empty() && o.toks.len() >= 2 && is_numberish(&o.toks[0]) => {
                let rel = Relation::Count(o.head().to_string());
                f.set(rel, Frame::Count, vec![o.toks[0].clone()], Class::Single);
            }
            Some(o) => {
                // "a 2019 macbook" -> macbook, "a dog named rex" -> dog
                let head = o
                    .toks
                    .iter()
                    .find(|t| !is_numberish(t) && !matches!(t.as_str(), "new" | "old" | "second"))
                    .unwrap_or(&o.toks[0]);
                let rel = Relation::Have(head.clone());
                f.set(rel, Frame::Possession, all_toks, Class::Accum);
            }
            None => {}
        },
        VerbRule::Reside => {
            if let Some(ch) = non_temporal(chunks, &["in", "near", "at", "on", "outside", "around"])
            {
                let frame = if x.person {
                    Frame::Residence
                } else {
                    Frame::Location
                };
                f.set(Relation::Where, frame, ch.toks.clone(), Class::Single);
                f.qual = quals(chunks, &[ch]);
            }
        }
        VerbRule::Move => mover(f, s, chunks),
        VerbRule::DropFor => {
            // "we dropped tailscale for wireguard"
            if let (Some(o), Some(w)) = (obj, non_temporal(chunks, &["for"])) {
                f.instead_of.extend(o.toks.iter().cloned());
                f.set(
                    Relation::Use,
                    Frame::Tool,
                    w.toks.clone(),
                    Class::NeedsMarker,
                );
            }
        }
        VerbRule::SetTo => {
            if let Some(t) = any_chunk(chunks, &["to"]) {
                if x.person {
                    if let Some(o) = obj {
                        let owner = owner_of_object(o, s);
                        f.set_subject(&owner, &canonical_head(&o.toks));
                    }
                }
                if t.is_temporal() {
                    let when = temporal_value(chunks);
                    f.set(Relation::When, Frame::Schedule, when, Class::Single);
                } else {
                    f.set(
                        Relation::Attr,
                        Frame::Attribute,
                        t.toks.clone(),
                        Class::Single,
                    );
                }
            }
        }
        VerbRule::Store => {
            if let Some(l) = non_temporal(chunks, &["in", "on", "at", "inside"]) {
                if x.person {
                    if let Some(o) = obj {
                        let owner = owner_of_object(o, s);
                        f.set_subject(&owner, &canonical_head(&o.toks));
                    }
                }
                f.set(
                    Relation::Where,
                    Frame::Location,
                    l.toks.clone(),
                    Class::Single,
                );
                f.qual = quals(chunks, &[l, obj.unwrap_or(l)]);
            }
        }
        VerbRule::Work => {
            if let Some(ch) = non_temporal(chunks, &["at", "for"]).filter(|ch| ch.head() != "team")
            {
                f.set(
                    Relation::Employer,
                    Frame::Employer,
                    ch.toks.clone(),
                    Class::Single,
                );
            } else if let Some(ch) = non_temporal(chunks, &["as"]) {
                f.set(
                    Relation::Title,
                    Frame::JobTitle,
                    ch.toks.clone(),
                    Class::Single,
                );
            } else if let Some(ch) =
                non_temporal(chunks, &["on", "in", "with"]).filter(|ch| ch.head() == "team")
            {
                f.set(Relation::Team, Frame::Team, ch.toks.clone(), Class::Single);
            } else if let Some(ch) = non_temporal(chunks, &["on"]) {
                let value = ch.toks.clone();
                f.set(
                    Relation::WorkOn,
                    Frame::CurrentWork,
                    value,
                    Class::NeedsMarker,
                );
                f.qual = quals(chunks, &[ch]);
            } else if let Some(o) = obj.filter(|o| o.toks == ["there"]) {
                // "i don't work there anymore"
                f.set(
                    Relation::Employer,
                    Frame::Employer,
                    o.toks.clone(),
                    Class::Single,
                );
            }
        }
        VerbRule::Join => {
            if let Some(o) = obj {
                if o.head() == "team" {
                    f.set(Relation::Team, Frame::Team, o.toks.clone(), Class::Single);
                } else if o.cap {
                    f.set(
                        Relation::Employer,
                        Frame::Employer,
                        o.toks.clone(),
                        Class::Single,
                    );
                }
            }
        }
        VerbRule::Leave => {
            if let Some(o) = obj.filter(|o| o.cap) {
                f.set(
                    Relation::Employer,
                    Frame::Employer,
                    o.toks.clone(),
                    Class::Single,
                );
                f.neg = true;
            }
        }
        VerbRule::Start => {
            if x.temporal && (!x.person || obj.is_none()) {
                let when = temporal_value(chunks);
                f.set(Relation::When, Frame::Schedule, when, Class::Single);
                f.qual = quals(chunks, &[]);
            } else if let Some(ch) = non_temporal(chunks, &["at", "with"]).filter(|ch| ch.cap) {
                f.set(
                    Relation::Employer,
                    Frame::Employer,
                    ch.toks.clone(),
                    Class::Single,
                );
            }
        }
        VerbRule::End => {
            let when = temporal_value(chunks);
            f.set(Relation::End, Frame::Schedule, when, Class::Single);
            f.qual = quals(chunks, &[]);
        }
        VerbRule::Promote => {
            if let Some(ch) = non_temporal(chunks, &["to"]) {
                f.set(
                    Relation::Title,
                    Frame::JobTitle,
                    ch.toks.clone(),
                    Class::Single,
                );
            }
        }
        VerbRule::Schedule => {
            let when = temporal_value(chunks);
            f.set(Relation::When, Frame::Schedule, when, Class::Single);
            f.qual = quals(chunks, &[]);
        }
        VerbRule::Switch => {
            let target = non_temporal(chunks, &["to", "onto", "into"]);
            match (target, obj) {
                (Some(t), Some(o)) if x.person => {
                    let rel = Relation::Switch(o.head().to_string());
                    f.set(rel, Frame::Switch, t.toks.clone(), Class::Single);
                }
                (Some(t), _) => {
                    f.set(
                        Relation::Use,
                        Frame::Tool,
                        t.toks.clone(),
                        Class::NeedsMarker,
                    );
                    f.qual = quals(chunks, &[t]);
                }
                _ => {}
            }
        }
        VerbRule::Replace => {
            if let (Some(o), Some(w)) = (obj, non_temporal(chunks, &["with", "by"])) {
                f.instead_of.extend(o.toks.iter().cloned());
                f.set(
                    Relation::Use,
                    Frame::Tool,
                    w.toks.clone(),
                    Class::NeedsMarker,
                );
            }
        }
        VerbRule::Use => use_like(f, s, chunks, lemma, x.c.passive),
        VerbRule::Prefer => {
            let value_chunk = chunks.iter().find(|c| {
                !c.toks.is_empty() && matches!(c.prep.as_str(), "" | "to") && !c.is_temporal()
            });
            if let Some(v) = value_chunk {
                // "i prefer tea over coffee": the rejected alternative counts
                // as an explicit replacement when it was the old value
                let mut excluded: Vec<&Chunk> = vec![v];
                for ch in chunks {
                    if matches!(ch.prep.as_str(), "over" | "to") && ch != v {
                        f.instead_of.extend(ch.toks.iter().cloned());
                        excluded.push(ch);
                    }
                }
                let value = v.toks.clone();
                f.set(
                    Relation::Prefer,
                    Frame::Preference,
                    value,
                    Class::NeedsMarker,
                );
                f.qual = quals(chunks, &excluded);
            }
        }
        VerbRule::Like => f.set(Relation::Like, Frame::Likes, all_toks, Class::Accum),
        VerbRule::Dislike => f.set(Relation::Dislike, Frame::Dislikes, all_toks, Class::Accum),
        VerbRule::OwnedBy => {
            if let Some(ch) = non_temporal(chunks, &["by"]) {
                f.set(
                    Relation::Owner,
                    Frame::Owner,
                    ch.toks.clone(),
                    Class::Single,
                );
            }
        }
        VerbRule::Owns => {
            if let Some(o) = obj.filter(|o| o.det == "the") {
                let value: Vec<String> = s.head.split(' ').map(str::to_string).collect();
                f.set_subject("", &canonical_head(&o.toks));
                f.set(Relation::Owner, Frame::Owner, value, Class::Single);
            }
        }
        VerbRule::Named => {
            // "my cat is called miso" keeps the cat as subject
            let head = if s.head == "name" {
                String::new()
            } else {
                s.head.clone()
            };
            f.set_subject(&s.owner, &head);
            f.set(Relation::Name, Frame::Name, all_toks, Class::Single);
        }
        VerbRule::GoesBy => {
            if let Some(ch) = any_chunk(chunks, &["by"]) {
                f.set(Relation::Name, Frame::Name, ch.toks.clone(), Class::Single);
            }
        }
        VerbRule::Born => {
            if let Some(ch) = non_temporal(chunks, &["in", "at"]) {
                let place = ch.toks.clone();
                f.set(
                    Relation::Birthplace,
                    Frame::Birthplace,
                    place,
                    Class::Single,
                );
            } else if x.temporal {
                let when = temporal_value(chunks);
                f.set(Relation::Birthday, Frame::Birthday, when, Class::Single);
            }
        }
        VerbRule::Turns => {
            if let Some(o) = obj {
                f.set(
                    Relation::Age,
                    Frame::Age,
                    vec![o.toks[0].clone()],
                    Class::Single,
                );
            }
        }
        VerbRule::Status => {
            let status = vec![x.c.lemma.clone()];
            if !x.person && obj.is_none() && x.temporal {
                // "the office closes at 6pm": a schedule, not a status change
                let rel = Relation::WhenOf(x.c.lemma.clone());
                f.set(rel, Frame::Schedule, temporal_value(chunks), Class::Single);
                f.qual = quals(chunks, &[]);
            } else if !x.person && obj.is_none() {
                f.set(Relation::Status, Frame::Status, status, Class::Single);
            } else if let Some(o) = obj.filter(|o| o.det == "the" || !o.det.is_empty()) {
                let owner = owner_of_object(o, s);
                f.set_subject(&owner, &canonical_head(&o.toks));
                f.set(Relation::Status, Frame::Status, status, Class::Single);
            }
        }
        VerbRule::Activity => {
            let rel = Relation::Verb(f.verb.clone());
            f.set(rel, Frame::Activity, all_toks, Class::Accum);
        }
    }
}

pub(super) fn copular(f: &mut Fact, s: &Subj, chunks: &[Chunk]) {
    let Some(first) = chunks.first() else {
        return;
    };
    let all: Vec<String> = f.all_toks.clone();
    let person = s.is_person();
    let first_prep = first.prep.as_str();
    // relation nouns in the subject: "my name is x", "my job title is x"
    let owner_level = |f: &mut Fact, rel: Relation, frame: Frame, value: Vec<String>| {
        let owner = s.owner.clone();
        f.set_subject(&owner, "");
        f.set(rel, frame, value, Class::Single);
    };
    match s.head.as_str() {
        "name" => return owner_level(f, Relation::Name, Frame::Name, all),
        "age" => return owner_level(f, Relation::Age, Frame::Age, all),
        "title" => return owner_level(f, Relation::Title, Frame::JobTitle, all),
        "employer" => return owner_level(f, Relation::Employer, Frame::Employer, all),
        "job" if matches!(first_prep, "at" | "for" | "with") => {
            return owner_level(f, Relation::Employer, Frame::Employer, first.toks.clone())
        }
        "home" if matches!(first_prep, "in" | "at" | "near" | "on") => {
            return owner_level(f, Relation::Where, Frame::Residence, first.toks.clone())
        }
        "team" => return owner_level(f, Relation::Team, Frame::Team, all),
        _ => {}
    }
    let status = !person && all.iter().any(|t| STATUS_WORDS.contains(&t.as_str()));
    if first_prep.is_empty() {
        let t = &first.toks;
        if t.len() >= 3 && t[0] == "fan" && t[1] == "of" {
            f.set(Relation::Like, Frame::Likes, t[2..].to_vec(), Class::Accum);
            return;
        }
        let years_old = t.len() >= 2
            && is_numberish(&t[0])
            && t[1..]
                .iter()
                .all(|x| matches!(x.as_str(), "year" | "old" | "yo" | "yr"));
        if years_old || (person && t.len() == 1 && is_numberish(&t[0])) {
            f.set(Relation::Age, Frame::Age, vec![t[0].clone()], Class::Single);
            return;
        }
        if person {
            if ROLE_NOUNS.contains(&first.head()) && !first.det.is_empty() {
                f.set(Relation::Title, Frame::JobTitle, t.clone(), Class::Single);
            } else if first.head() == "team" {
                f.set(Relation::Team, Frame::Team, t.clone(), Class::Single);
            } else if let Some(next) = chunks.get(1).filter(|c| !c.is_temporal()) {
                // "i'm allergic to peanuts", "i'm responsible for billing"
                let rel = Relation::State(format!("be {} {}", t.join(" "), next.prep));
                f.set(rel, Frame::State, next.toks.clone(), Class::Accum);
                f.qual = quals(chunks, &[first, next]);
            } else {
                f.set(Relation::Be, Frame::State, t.clone(), Class::NeedsMarker);
            }
            return;
        }
        if status {
            f.set(Relation::Status, Frame::Status, all, Class::Single);
        } else if first.is_temporal() {
            f.set(
                Relation::When,
                Frame::Schedule,
                temporal_value(chunks),
                Class::Single,
            );
            f.qual = quals(chunks, &[]);
        } else {
            f.set(Relation::Attr, Frame::Attribute, t.clone(), Class::Single);
            f.qual = quals(chunks, &[first]);
        }
        return;
    }
    if status {
        f.set(Relation::Status, Frame::Status, all, Class::Single);
    } else if chunks.iter().all(Chunk::is_temporal) {
        f.set(
            Relation::When,
            Frame::Schedule,
            temporal_value(chunks),
            Class::Single,
        );
    } else if first.head() == "team" && matches!(first_prep, "on" | "in") {
        f.set(
            Relation::Team,
            Frame::Team,
            first.toks.clone(),
            Class::Single,
        );
    } else if first_prep == "into" {
        f.set(
            Relation::Like,
            Frame::Likes,
            first.toks.clone(),
            Class::Accum,
        );
    } else if let Some(ch) = non_temporal(
        chunks,
        &[
            "in", "on", "at", "near", "inside", "around", "under", "within", "outside",
        ],
    ) {
        let frame = if person {
            Frame::Residence
        } else {
            Frame::Location
        };
        f.set(Relation::Where, frame, ch.toks.clone(), Class::Single);
        f.qual = quals(chunks, &[ch]);
    } else if first_prep == "from" {
        f.set(
            Relation::Origin,
            Frame::Origin,
            first.toks.clone(),
            Class::Single,
        );
    }
}

pub(super) fn mover(f: &mut Fact, s: &Subj, chunks: &[Chunk]) {
    let Some(t) = any_chunk(chunks, &["to", "into", "onto"]) else {
        if chunks.iter().any(Chunk::is_temporal) && !s.is_person() {
            f.set(
                Relation::When,
                Frame::Schedule,
                temporal_value(chunks),
                Class::Single,
            );
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
        f.set(
            Relation::When,
            Frame::Schedule,
            temporal_value(chunks),
            Class::Single,
        );
    } else if t.head() == "team" && person_after {
        f.set(Relation::Team, Frame::Team, t.toks.clone(), Class::Single);
    } else {
        let frame = if person_after {
            Frame::Residence
        } else {
            Frame::Location
        };
        f.set(Relation::Where, frame, t.toks.clone(), Class::Single);
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
            f.set(
                Relation::Use,
                Frame::Tool,
                l.toks.clone(),
                Class::NeedsMarker,
            );
            f.qual = quals(chunks, &[o, l]);
        } else if let (Some(o), false) = (obj, shift_verbs) {
            f.set(
                Relation::Use,
                Frame::Tool,
                o.toks.clone(),
                Class::NeedsMarker,
            );
            f.qual = quals(chunks, &[o]);
        } else if lemma == "write" {
            let rel = Relation::Verb("write".to_string());
            f.set(rel, Frame::Activity, f.all_toks.clone(), Class::Accum);
        } else if let Some(l) = non_temporal(chunks, &["on", "with"]) {
            f.set(
                Relation::Use,
                Frame::Tool,
                l.toks.clone(),
                Class::NeedsMarker,
            );
            f.qual = quals(chunks, &[l]);
        }
    } else if let Some(v) = obj.or(loc) {
        f.set(
            Relation::Use,
            Frame::Tool,
            v.toks.clone(),
            Class::NeedsMarker,
        );
        f.qual = quals(chunks, &[v]);
    }
}
