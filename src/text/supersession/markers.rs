//! Discourse markers of a new statement: change ("now", "anymore"), replacement ("instead
//! of"), addition ("also"), history ("used to").

#[allow(clippy::wildcard_imports)]
use super::*;

#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Markers {
    /// "now", "anymore", "no longer", "these days", "from now on", "new", ...
    pub(super) change: bool,
    /// explicit replacement language: "instead", "no longer", "switched", ...
    pub(super) replace: bool,
    /// "also", "too", "as well", "another", "either", ...
    pub(super) additive: bool,
}

pub(super) fn find_markers(toks: &[Tok]) -> Markers {
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
