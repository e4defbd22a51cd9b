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

mod clauses;
mod compare;
mod eval;
mod frames;
mod lexicon;
mod markers;
mod relation;
mod tokens;

#[allow(clippy::wildcard_imports)]
use {clauses::*, compare::*, frames::*, lexicon::*, markers::*, relation::*, tokens::*};

pub use eval::{evaluate, parse_pairs_jsonl, Eval, LabelledPair};

use crate::text::lexicon::{undouble, ORG_SUFFIXES};
use crate::text::words::{contraction, straightened, Contraction};

#[cfg(test)]
mod tests;

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
