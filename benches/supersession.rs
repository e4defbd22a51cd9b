//! Precision and recall of the offline fact-update detector (`memvault::text::supersession`)
//! on the labelled pairs in `eval/`. Run: `cargo bench --bench supersession`.
//!
//! - `eval/supersession-pairs.jsonl`: written before the detector; its rules were then tuned
//!   while reading every pair (dev and holdout alike), so its figures are optimistic.
//! - `eval/supersession-blind.jsonl`: written after the detector and scored once blind (0.96 /
//!   0.67 and 1.00 / 0.48 on its two halves); some rules were tuned on it afterwards.

use std::path::Path;

use memvault::text::supersession::{evaluate, judge_update, parse_pairs_jsonl, LabelledPair};

fn report(name: &str, path: &Path) {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let pairs = parse_pairs_jsonl(&text);
    let split = |holdout: Option<bool>| -> Vec<&LabelledPair> {
        pairs
            .iter()
            .filter(|p| holdout.is_none_or(|h| p.holdout() == h))
            .collect()
    };
    for (label, subset) in [
        ("all", split(None)),
        ("dev", split(Some(false))),
        ("holdout", split(Some(true))),
    ] {
        if subset.is_empty() {
            continue;
        }
        let e = evaluate(subset.iter().copied());
        println!(
            "| {name} | {label} | {} | {:.3} | {:.3} | {} / {} / {} / {} |",
            subset.len(),
            e.precision,
            e.recall,
            e.true_positives,
            e.false_positives,
            e.false_negatives,
            e.true_negatives
        );
    }
    for pair in &pairs {
        let verdict = judge_update(&pair.old, &pair.new);
        if verdict.is_update != pair.update {
            eprintln!(
                "  miss ({name}): expected update={}: {:?} -> {:?} ({})",
                pair.update, pair.old, pair.new, verdict.reason
            );
        }
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
    println!("| set | split | pairs | precision | recall | tp / fp / fn / tn |");
    println!("|---|---|--:|--:|--:|---|");
    report("supersession-pairs", &root.join("supersession-pairs.jsonl"));
    report("supersession-blind", &root.join("supersession-blind.jsonl"));
    let started = std::time::Instant::now();
    let mut n = 0;
    for _ in 0..20 {
        n += 1;
        judge_update(
            "deploys are on Tuesday afternoons",
            "we now deploy on Thursday mornings",
        );
    }
    println!(
        "\nper pair: {:.1} us (release build)",
        started.elapsed().as_secs_f64() * 1e6 / n as f64
    );
}
