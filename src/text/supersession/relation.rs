//! What a fact can state: the relations two facts must share to be compared, the frames they
//! are reported as, and the table from a clause's main verb to the rule that builds its frame.

use std::borrow::Cow;
use std::fmt;

use super::lexicon::ACCUM_VERBS;

/// The relation a fact states about its subject. Two facts are compared only when their
/// relations are the same (or compatible, see `rel_compatible`).
///
/// Relations are the same when they are spelt the same ([`Relation::key`]): a named relation
/// spelt as a verb ("like", "be", "use", "work on") is that verb's own relation, so a clause
/// the table left generic ("i'm with bob") is still compared with a state ("i'm happy"), and
/// "i like hiking on saturdays" is the verb's timed activity.
#[derive(Debug, Clone)]
pub(super) enum Relation {
    /// "call me sam", "my name is sam"
    Name,
    /// residence or location: "i live in paris", "logs are stored in s3"
    Where,
    Employer,
    Title,
    Team,
    /// "i'm working on the billing revamp"
    WorkOn,
    /// a schedule: "standup is at 9:30"
    When,
    /// when something ends: "the trial ends on friday"
    End,
    Age,
    /// a named attribute: "my manager is bob", "the limit is 50 mb"
    Attr,
    /// "the project is paused", "we launched"
    Status,
    /// "the repo is owned by the platform team"
    Owner,
    Birthplace,
    Birthday,
    /// "i'm from lyon"
    Origin,
    /// a tool: "we use postgres", "the api is written in go"
    Use,
    Prefer,
    Like,
    Dislike,
    /// "i'm in berlin this week": a stay, not a residence
    Stay,
    /// a person's state: "i'm vegetarian"
    Be,
    /// "i have two kids": how many of a noun (the noun)
    Count(String),
    /// "i have a dog": a possession of a kind (the kind)
    Have(String),
    /// "i switched my laptop to linux": what a thing of the subject was switched to (the thing)
    Switch(String),
    /// "we deploy on thursdays", "the office closes at 6pm": when the verb's activity happens
    WhenOf(String),
    /// "i'm allergic to peanuts": a state with its preposition ("be allergic to")
    State(String),
    /// a verb with no table frame, or one whose activity piles up: the verb itself (with its
    /// particle)
    Verb(String),
}

impl Relation {
    /// How the relation is spelt in reasons, and what makes two relations the same.
    pub(super) fn key(&self) -> Cow<'_, str> {
        Cow::Borrowed(match self {
            Relation::Name => "name",
            Relation::Where => "where",
            Relation::Employer => "employer",
            Relation::Title => "title",
            Relation::Team => "team",
            Relation::WorkOn => "work on",
            Relation::When => "when",
            Relation::End => "end",
            Relation::Age => "age",
            Relation::Attr => "attr",
            Relation::Status => "status",
            Relation::Owner => "owner",
            Relation::Birthplace => "birthplace",
            Relation::Birthday => "birthday",
            Relation::Origin => "origin",
            Relation::Use => "use",
            Relation::Prefer => "prefer",
            Relation::Like => "like",
            Relation::Dislike => "dislike",
            Relation::Stay => "stay",
            Relation::Be => "be",
            Relation::Count(noun) => return Cow::Owned(format!("count:{noun}")),
            Relation::Have(kind) => return Cow::Owned(format!("have:{kind}")),
            Relation::Switch(thing) => return Cow::Owned(format!("switch:{thing}")),
            Relation::WhenOf(verb) => return Cow::Owned(format!("when:{verb}")),
            Relation::State(state) | Relation::Verb(state) => state,
        })
    }
}

impl PartialEq for Relation {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Relation {}

impl fmt::Display for Relation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key())
    }
}

/// How a relation's frame is named in a verdict's reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Frame {
    Generic,
    Name,
    Residence,
    Location,
    Employer,
    JobTitle,
    Team,
    CurrentWork,
    Schedule,
    Count,
    Possession,
    Switch,
    Tool,
    Preference,
    Likes,
    Dislikes,
    Owner,
    Birthplace,
    Birthday,
    Age,
    Status,
    Activity,
    State,
    Attribute,
    Origin,
    TemporaryStay,
}

impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Frame::Generic => "generic",
            Frame::Name => "name",
            Frame::Residence => "residence",
            Frame::Location => "location",
            Frame::Employer => "employer",
            Frame::JobTitle => "job title",
            Frame::Team => "team",
            Frame::CurrentWork => "current work",
            Frame::Schedule => "schedule",
            Frame::Count => "count",
            Frame::Possession => "possession",
            Frame::Switch => "switch",
            Frame::Tool => "tool",
            Frame::Preference => "preference",
            Frame::Likes => "likes",
            Frame::Dislikes => "dislikes",
            Frame::Owner => "owner",
            Frame::Birthplace => "birthplace",
            Frame::Birthday => "birthday",
            Frame::Age => "age",
            Frame::Status => "status",
            Frame::Activity => "activity",
            Frame::State => "state",
            Frame::Attribute => "attribute",
            Frame::Origin => "origin",
            Frame::TemporaryStay => "temporary stay",
        })
    }
}

/// How many values a relation holds at once, which decides what a changed value needs to
/// count as an update.
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

/// The rule that maps a clause to a frame, chosen by its main verb through [`VERB_RULES`].
/// What each rule reads and sets is in `frames::apply`; when the rule's condition
/// (`frames::applies`) does not hold, the next row naming the verb is tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum VerbRule {
    /// "call me sam" -> name
    CallMe,
    /// "be": the copula's complement decides (`frames::copular`)
    Copular,
    /// "i have two kids" -> count; "i have a dog" -> possession
    Have,
    /// "i live in paris" -> residence (a person) or location
    Reside,
    /// "we moved standup to 10", "i moved to berlin" (`frames::mover`)
    Move,
    /// "we dropped tailscale for wireguard" -> tool, the old one replaced (needs an object and
    /// a "for" chunk)
    DropFor,
    /// "raised the limit to 50 mb" -> attribute, or schedule when the new value is a time
    SetTo,
    /// "we host the docs on vercel" -> location
    Store,
    /// "work at/for" -> employer, "as" -> title, "on the x team" -> team, "on" -> current work
    Work,
    /// "joined the data team" -> team, "joined Acme" -> employer
    Join,
    /// "left Acme" -> employer, negated
    Leave,
    /// "standup starts at 9" -> schedule; "started at Acme" -> employer
    Start,
    /// "the sprint ends on friday" -> end (needs a time)
    End,
    /// "promoted to staff engineer" -> title
    Promote,
    /// "the review is held on mondays" -> schedule (needs a time and a non-person subject)
    Schedule,
    /// "i switched my laptop to linux" -> switch; "we migrated to postgres" -> tool
    Switch,
    /// "we replaced jenkins with github actions" -> tool, the old one replaced
    Replace,
    /// "we use postgres", "the api is written in go" (`frames::use_like`)
    Use,
    /// "i prefer tea over coffee" -> preference, the rejected alternative replaced
    Prefer,
    Like,
    Dislike,
    /// "the repo is owned by the platform team" -> owner (passive only)
    OwnedBy,
    /// "the platform team owns the repo" -> owner (a non-person subject without owner)
    Owns,
    /// "my cat is called miso" -> name (passive with a value)
    Named,
    /// "i go by sam" -> name (a person, with a "by" chunk)
    GoesBy,
    /// "i was born in lyon / in may" -> birthplace or birthday (passive)
    Born,
    /// "i turned 30" -> age (a number object)
    Turns,
    /// "the project is paused", "we launched the beta" -> status; "the office closes at 6pm"
    /// -> the verb's schedule
    Status,
    /// verbs whose activities pile up: the verb's own relation, accumulating
    Activity,
}

/// Main verb lemmas and their rules, in the order they are tried: the first row naming the
/// verb whose rule applies wins; a verb in no row keeps a generic frame.
pub(super) const VERB_RULES: &[(&[&str], VerbRule)] = &[
    (&["call_me"], VerbRule::CallMe),
    (&["be"], VerbRule::Copular),
    (&["have"], VerbRule::Have),
    (
        &["live", "reside", "settle", "stay", "base", "locate"],
        VerbRule::Reside,
    ),
    (
        &[
            "move",
            "relocate",
            "transfer",
            "shift",
            "push",
            "postpone",
            "delay",
            "reschedule",
            "bring",
        ],
        VerbRule::Move,
    ),
    (
        &["drop", "ditch", "swap", "trade", "abandon"],
        VerbRule::DropFor,
    ),
    (
        &[
            "change", "raise", "lower", "increase", "decrease", "reduce", "bump", "set", "update",
            "rename", "cut", "extend", "double", "halve", "adjust", "drop", "grow", "shrink",
            "rise", "climb", "jump", "fall",
        ],
        VerbRule::SetTo,
    ),
    (&["host", "store", "keep", "put"], VerbRule::Store),
    (&["work"], VerbRule::Work),
    (&["join"], VerbRule::Join),
    (&["leave", "quit"], VerbRule::Leave),
    (&["start", "begin", "kick"], VerbRule::Start),
    (&["end", "finish", "wrap"], VerbRule::End),
    (&["promote"], VerbRule::Promote),
    (
        &["schedule", "plan", "happen", "occur", "hold"],
        VerbRule::Schedule,
    ),
    (
        &[
            "switch",
            "migrate",
            "upgrade",
            "downgrade",
            "convert",
            "port",
            "transition",
        ],
        VerbRule::Switch,
    ),
    (&["replace"], VerbRule::Replace),
    (
        &[
            "use",
            "rely",
            "adopt",
            "write",
            "rewrite",
            "build",
            "code",
            "develop",
            "implement",
            "run",
        ],
        VerbRule::Use,
    ),
    (&["prefer", "favor"], VerbRule::Prefer),
    (&["like", "love", "enjoy", "adore"], VerbRule::Like),
    (&["hate", "dislike", "detest"], VerbRule::Dislike),
    (&["own", "maintain", "manage", "lead"], VerbRule::OwnedBy),
    (&["own", "maintain", "lead"], VerbRule::Owns),
    (&["call", "name"], VerbRule::Named),
    (&["go"], VerbRule::GoesBy),
    (&["bear"], VerbRule::Born),
    (&["turn"], VerbRule::Turns),
    (
        &[
            "launch",
            "ship",
            "cancel",
            "pause",
            "resume",
            "deprecate",
            "archive",
            "close",
            "complete",
            "freeze",
            "sunset",
            "shelve",
            "approve",
            "reject",
            "merge",
            "release",
            "reopen",
            "open",
        ],
        VerbRule::Status,
    ),
    (ACCUM_VERBS, VerbRule::Activity),
];

/// The rows of [`VERB_RULES`] naming `lemma`, in order.
pub(super) fn rules_for(lemma: &str) -> impl Iterator<Item = VerbRule> + '_ {
    VERB_RULES
        .iter()
        .filter(move |(verbs, _)| verbs.contains(&lemma))
        .map(|(_, rule)| *rule)
}
