//! Analysis and comparison: the frames of an old and a new statement compared into a verdict,
//! and `Label: value` lines told from lines someone says.

#[allow(clippy::wildcard_imports)]
use super::*;

pub(super) struct Analysis {
    pub(super) question: bool,
    pub(super) stems: Vec<String>,
    pub(super) markers: Markers,
    pub(super) facts: Vec<Fact>,
}

/// Texts analysed last on this thread, newest last.
pub(super) const RECENT_ANALYSES: usize = 32;

thread_local! {
    static RECENT: std::cell::RefCell<Vec<(String, std::rc::Rc<Analysis>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// [`analyse`], remembered for the last [`RECENT_ANALYSES`] texts of this thread: a save
/// judges its new memory against each of its near neighbours in turn, so without it the new
/// text is analysed again for every pair.
pub(super) fn analysed(text: &str) -> std::rc::Rc<Analysis> {
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

pub(super) fn analyse(text: &str) -> Analysis {
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

pub(super) struct Verdict {
    pub(super) update: bool,
    pub(super) conf: f32,
    pub(super) reason: String,
    /// how far the comparison got; the deepest non-update reason is reported
    pub(super) stage: u8,
}

pub(super) fn verdict(is_update: bool, confidence: f32, reason: &str) -> UpdateJudgement {
    UpdateJudgement {
        is_update,
        confidence,
        reason: reason.to_string(),
    }
}

pub(super) fn v(update: bool, conf: f32, stage: u8, reason: impl Into<String>) -> Verdict {
    Verdict {
        update,
        conf,
        reason: reason.into(),
        stage,
    }
}

pub(super) fn core(value: &[String]) -> Vec<&str> {
    value
        .iter()
        .map(String::as_str)
        .filter(|w| !ORG_SUFFIXES.contains(w))
        .collect()
}

pub(super) fn value_eq(a: &[String], b: &[String]) -> bool {
    let (ca, cb) = (core(a), core(b));
    if ca == cb {
        return true;
    }
    let pro = |c: &[&str]| matches!(c, ["there"] | ["it"] | ["that"] | ["here"]);
    pro(&ca) || pro(&cb)
}

/// every word of `small` appears in `big`, and `big` has more words.
pub(super) fn strictly_contains(big: &[String], small: &[String]) -> bool {
    let (cb, cs) = (core(big), core(small));
    !cs.is_empty() && cb.len() > cs.len() && cs.iter().all(|w| cb.contains(w))
}

pub(super) fn subj_compatible(o: &Fact, n: &Fact) -> bool {
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

pub(super) fn rel_compatible(a: &Relation, b: &Relation) -> bool {
    a == b
        || match (a, b) {
            (Relation::When, Relation::Verb(v)) | (Relation::Verb(v), Relation::When) => {
                v == "start"
            }
            _ => false,
        }
}

/// which kinds of time expression a schedule value uses.
pub(super) fn time_kinds(value: &[String]) -> Vec<&'static str> {
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
pub(super) fn only_numbers_differ(a: &[String], b: &[String]) -> bool {
    a.len() == b.len()
        && a != b
        && a.iter()
            .zip(b)
            .all(|(x, y)| x == y || (is_numberish(x) && is_numberish(y)))
}

pub(super) fn alt_group_match(a: &[String], b: &[String]) -> bool {
    ALT_GROUPS.iter().any(|g| {
        a.iter().any(|w| g.contains(&w.as_str())) && b.iter().any(|w| g.contains(&w.as_str()))
    })
}

/// One (old, new) pair of facts under comparison, with what several checks read.
pub(super) struct Pair<'a> {
    pub(super) o: &'a Fact,
    pub(super) n: &'a Fact,
    pub(super) nm: &'a Markers,
    /// the new memory carries a change marker, replacement language or a change verb
    pub(super) changed: bool,
    /// the subjects match, or "i use 1password instead of lastpass" may speak for the owner
    /// of "my password manager is lastpass"
    pub(super) owners_ok: bool,
}

/// A check on a pair: a verdict when it decides, `None` to pass the pair on.
type Check = fn(&Pair) -> Option<Verdict>;

/// The checks in the order they are tried; the first that decides wins, and the last,
/// [`by_class`], always decides.
const CHECKS: &[Check] = &[
    past_or_history,
    explicit_replacement,
    no_longer_holds,
    different_subject,
    ends_old_fact,
    switched,
    different_relation,
    generic_frames,
    timed_slot_changed,
    number_changed,
    different_qualifier,
    same_value,
    negated,
    extended_or_narrowed,
    schedule_exception,
    by_class,
];

pub(super) fn compare(o: &Fact, n: &Fact, nm: &Markers) -> Verdict {
    let owners_ok = subj_compatible(o, n)
        || (n.head.is_empty()
            && !o.head.is_empty()
            && o.rel == Relation::Attr
            && (o.owner == n.owner || (n.owner == "we" && o.owner.is_empty())));
    let pair = Pair {
        o,
        n,
        nm,
        changed: nm.change || nm.replace || n.change_verb,
        owners_ok,
    };
    CHECKS
        .iter()
        .find_map(|check| check(&pair))
        .expect("by_class always decides")
}

fn past_or_history(p: &Pair) -> Option<Verdict> {
    if p.n.past_event {
        return Some(v(
            false,
            0.8,
            1,
            "new memory reads as a past event or history; events accumulate",
        ));
    }
    (p.n.history || p.o.history).then(|| {
        v(
            false,
            0.75,
            1,
            "one side describes history (used to), not a current fact",
        )
    })
}

/// "my password manager is lastpass" -> "i use 1password instead of lastpass": an explicit
/// mention of the old value may come from the owner.
fn explicit_replacement(p: &Pair) -> Option<Verdict> {
    let (o, n) = (p.o, p.n);
    if n.instead_of.is_empty() || !p.owners_ok || n.neg {
        return None;
    }
    let old_words: Vec<&String> = o.value.iter().chain(o.all_toks.iter()).collect();
    n.instead_of
        .iter()
        .any(|w| !ORG_SUFFIXES.contains(&w.as_str()) && old_words.contains(&w))
        .then(|| {
            v(
                true,
                0.85,
                6,
                "new memory explicitly replaces the old value (instead of / from)",
            )
        })
}

/// "my therapist is dr. lee" -> "i stopped seeing dr. lee"
fn no_longer_holds(p: &Pair) -> Option<Verdict> {
    let (o, n) = (p.o, p.n);
    if !(n.neg && n.change_verb && p.owners_ok && !o.neg && !subj_compatible(o, n)) {
        return None;
    }
    let n_obj = n.chunks.iter().find(|c| !c.toks.is_empty());
    n_obj.filter(|c| value_eq(&c.toks, &o.value)).map(|_| {
        v(
            true,
            0.75,
            5,
            "new memory says the old value no longer holds",
        )
    })
}

fn different_subject(p: &Pair) -> Option<Verdict> {
    let (o, n) = (p.o, p.n);
    (!subj_compatible(o, n)).then(|| {
        v(
            false,
            0.85,
            2,
            format!("different subject ({} vs {})", show(&o.subj), show(&n.subj)),
        )
    })
}

/// "i own a condo in miami" -> "i sold my condo in miami": the object of the ending verb must
/// be the old fact's main object.
fn ends_old_fact(p: &Pair) -> Option<Verdict> {
    let (o, n) = (p.o, p.n);
    if !TERMINATE_VERBS.contains(&n.verb.split(' ').next().unwrap_or_default()) || n.neg {
        return None;
    }
    let old_main = o
        .chunks
        .iter()
        .find(|c| !c.toks.is_empty() && (c.prep.is_empty() || c.toks == o.value))?;
    let new_obj = n.chunks.first().filter(|c| c.prep.is_empty())?;
    let covered = core(&old_main.toks)
        .iter()
        .all(|w| n.all_toks.iter().any(|x| x == w));
    (old_main.head() == new_obj.head() && covered).then(|| {
        v(
            true,
            0.75,
            5,
            format!("new memory ends the old fact ({})", show(&n.verb)),
        )
    })
}

/// "i switched my laptop to linux": decides when the new fact is a switch.
fn switched(p: &Pair) -> Option<Verdict> {
    let (o, n) = (p.o, p.n);
    let Relation::Switch(cat) = &n.rel else {
        return None;
    };
    let mentioned = o.all_toks.contains(cat)
        || o.head.split(' ').any(|w| w == cat)
        || o.rel.key().contains(cat.as_str());
    Some(
        if mentioned && !n.value.iter().all(|w| o.all_toks.contains(w)) {
            v(
                true,
                0.75,
                5,
                format!("same subject switched {cat} to a new value"),
            )
        } else {
            v(false, 0.7, 3, "switch does not concern the old fact")
        },
    )
}

fn different_relation(p: &Pair) -> Option<Verdict> {
    let (o, n) = (p.o, p.n);
    let renamed = n.verb == "rename" && matches!(o.rel, Relation::Name | Relation::Attr);
    // "the standup channel is #x" -> "the standup channel moved to #y"
    let moved_slot = matches!(
        n.verb.split(' ').next().unwrap_or_default(),
        "move" | "relocate" | "transfer" | "migrate"
    ) && matches!(
        (&o.rel, &n.rel),
        (Relation::Attr, Relation::Where) | (Relation::Where, Relation::Attr)
    );
    // "my dog is 3 years old" vs "my dog is 4 now": a bare number on a non-person subject is
    // parsed as an attribute
    let bare_age = |a: &Fact, b: &Fact| {
        a.rel == Relation::Age
            && b.rel == Relation::Attr
            && b.value.len() == 1
            && is_numberish(&b.value[0])
    };
    let related =
        rel_compatible(&o.rel, &n.rel) || renamed || moved_slot || bare_age(o, n) || bare_age(n, o);
    (!related).then(|| {
        v(
            false,
            0.75,
            3,
            format!(
                "same subject, different relation ({} vs {})",
                show(&o.rel.key()),
                show(&n.rel.key())
            ),
        )
    })
}

fn generic_frames(p: &Pair) -> Option<Verdict> {
    (p.o.class == Class::Generic || p.n.class == Class::Generic)
        .then(|| generic_compare(p.o, p.n, p.changed))
}

/// "i'm going to rome in may" -> "to oslo in may instead": same time, the one other slot
/// changed, with a change marker.
fn timed_slot_changed(p: &Pair) -> Option<Verdict> {
    let (o, n) = (p.o, p.n);
    let decides = o.qual != n.qual
        && matches!(o.rel, Relation::WhenOf(_))
        && p.changed
        && value_eq(&o.value, &n.value)
        && o.qual.len() == 1
        && n.qual.len() == 1
        && o.qual[0].split(':').next() == n.qual[0].split(':').next()
        && !o.neg
        && !n.neg;
    decides.then(|| {
        v(
            true,
            0.65,
            5,
            format!(
                "same subject and timed activity ({}), one slot changed with a change marker",
                show(&n.verb)
            ),
        )
    })
}

/// "invoices are due in 30 days" -> "due in 45 days"
fn number_changed(p: &Pair) -> Option<Verdict> {
    let (o, n) = (p.o, p.n);
    let split_quals = |q: &[String]| -> Vec<String> {
        q.join(" ").split([' ', ':']).map(str::to_string).collect()
    };
    let (oq, nq) = (split_quals(&o.qual), split_quals(&n.qual));
    let decides = o.qual.len() == n.qual.len()
        && value_eq(&o.value, &n.value)
        && o.neg == n.neg
        && only_numbers_differ(&oq, &nq)
        && (o.class.max(n.class) == Class::Single || p.changed);
    decides.then(|| {
        v(
            true,
            0.75,
            5,
            format!(
                "same subject and relation ({}), the number changed",
                o.frame
            ),
        )
    })
}

fn different_qualifier(p: &Pair) -> Option<Verdict> {
    let (o, n) = (p.o, p.n);
    (o.qual != n.qual && !(n.qual.is_empty() && p.changed)).then(|| {
        v(
            false,
            0.7,
            3,
            format!("same relation ({}) but different qualifier", o.frame),
        )
    })
}

fn same_value(p: &Pair) -> Option<Verdict> {
    let (o, n) = (p.o, p.n);
    if !value_eq(&o.value, &n.value) {
        return None;
    }
    Some(if o.neg != n.neg {
        v(
            true,
            0.85,
            5,
            format!("same fact ({}) with flipped polarity", n.frame),
        )
    } else {
        v(
            false,
            0.9,
            4,
            "same subject, relation and value (duplicate or paraphrase)",
        )
    })
}

fn negated(p: &Pair) -> Option<Verdict> {
    (p.o.neg || p.n.neg).then(|| {
        v(
            false,
            0.7,
            4,
            "negated facts with different values do not replace each other",
        )
    })
}

fn extended_or_narrowed(p: &Pair) -> Option<Verdict> {
    let (o, n) = (p.o, p.n);
    if n.coord || strictly_contains(&n.value, &o.value) {
        return Some(v(
            false,
            0.75,
            4,
            "new value extends the old one (additive or refinement)",
        ));
    }
    strictly_contains(&o.value, &n.value)
        .then(|| v(false, 0.7, 4, "new value is a narrower restatement"))
}

/// "the office closes at 6pm" -> "closes at 7pm on fridays": an exception.
fn schedule_exception(p: &Pair) -> Option<Verdict> {
    let (o, n) = (p.o, p.n);
    let moved = matches!(
        n.verb.as_str(),
        "move" | "push" | "postpone" | "delay" | "reschedule" | "shift" | "change" | "bring"
    );
    let decides = o.frame == Frame::Schedule
        && n.frame == Frame::Schedule
        && !moved
        && !time_kinds(&n.value)
            .iter()
            .all(|k| time_kinds(&o.value).contains(k));
    decides.then(|| {
        v(
            false,
            0.65,
            4,
            "new schedule adds a time qualifier (an exception, not a replacement)",
        )
    })
}

/// The last check: same subject and relation, a different value; the relation's class decides
/// what else an update needs.
#[allow(clippy::unnecessary_wraps)]
fn by_class(p: &Pair) -> Option<Verdict> {
    let (o, n, changed) = (p.o, p.n, p.changed);
    let mut class = o.class.max(n.class);
    // "i drink two cups a day" -> "one cup a day now": only a quantity changed
    if class != Class::Single && changed && only_numbers_differ(&o.value, &n.value) {
        class = Class::Single;
    }
    if n.rel == Relation::Prefer && alt_group_match(&o.value, &n.value) {
        class = Class::Single;
    }
    Some(match class {
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
            if n.rel == Relation::Be
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
        Class::Accum if p.nm.replace => v(
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
    })
}

/// fallback for verbs outside the frame table: align prepositional chunks and
/// allow exactly one short differing slot, only with an explicit change marker.
pub(super) fn generic_compare(o: &Fact, n: &Fact, changed: bool) -> Verdict {
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
                show(&n.rel.key())
            ),
        );
    }
    v(
        true,
        0.65,
        5,
        format!(
            "same subject and action ({}), one slot changed with a change marker",
            show(&n.rel.key())
        ),
    )
}

pub(super) fn show(s: &str) -> String {
    let s = s.replace("self", "user");
    if s.is_empty() {
        "-".to_string()
    } else {
        s
    }
}

/// whole-sentence token alignment, used when a side has no parsable clause.
pub(super) fn fallback_align(o: &Analysis, n: &Analysis) -> UpdateJudgement {
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

/// Words a `Label: value` memory may have after its colon and still read as an attribute.
pub(super) const MAX_LABEL_VALUE_WORDS: usize = 4;

/// Whether what follows a `Label:` is a line someone says rather than a value: more than
/// [`MAX_LABEL_VALUE_WORDS`] words, more than one sentence, or words that start with a pronoun
/// ("Tom: I live in Leeds").
pub(super) fn speaks(rest: &[&str]) -> bool {
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
