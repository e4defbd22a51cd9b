//! The detector scored on labelled pairs: the reader of `eval/*.jsonl` (one JSON object a
//! line) and precision, recall and confusion counts.

use serde::Deserialize;

use super::judge_update;

/// One labelled pair: `{"old": ..., "new": ..., "update": true, "split": "holdout"}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LabelledPair {
    pub old: String,
    pub new: String,
    /// Whether `new` is the next version of `old`.
    pub update: bool,
    /// `holdout` for the pairs kept out of tuning; absent or anything else is dev.
    #[serde(default)]
    pub split: Option<String>,
}

impl LabelledPair {
    pub fn holdout(&self) -> bool {
        self.split.as_deref() == Some("holdout")
    }
}

/// How [`judge_update`] did on a set of labelled pairs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Eval {
    /// Of the pairs judged updates, the share that are (1 when none was judged one).
    pub precision: f64,
    /// Of the updates, the share judged so (1 when there is none).
    pub recall: f64,
    pub true_positives: usize,
    pub false_positives: usize,
    pub false_negatives: usize,
    pub true_negatives: usize,
}

impl std::fmt::Display for Eval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "precision {:.3} recall {:.3} (tp {} fp {} fn {} tn {})",
            self.precision,
            self.recall,
            self.true_positives,
            self.false_positives,
            self.false_negatives,
            self.true_negatives
        )
    }
}

/// [`judge_update`] over `pairs`, counted against their labels.
pub fn evaluate<'a>(pairs: impl IntoIterator<Item = &'a LabelledPair>) -> Eval {
    let (mut tp, mut fp, mut fneg, mut tn) = (0usize, 0usize, 0usize, 0usize);
    for pair in pairs {
        match (judge_update(&pair.old, &pair.new).is_update, pair.update) {
            (true, true) => tp += 1,
            (true, false) => fp += 1,
            (false, true) => fneg += 1,
            (false, false) => tn += 1,
        }
    }
    let share = |part: usize, whole: usize| {
        if whole == 0 {
            1.0
        } else {
            part as f64 / whole as f64
        }
    };
    Eval {
        precision: share(tp, tp + fp),
        recall: share(tp, tp + fneg),
        true_positives: tp,
        false_positives: fp,
        false_negatives: fneg,
        true_negatives: tn,
    }
}

/// The labelled pairs of a JSON-lines text; blank and malformed lines are skipped.
pub fn parse_pairs_jsonl(text: &str) -> Vec<LabelledPair> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}
