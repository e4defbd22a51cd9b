//! BEIR's SciFact, read in place: `corpus.jsonl` (`_id`, `title`, `text`), `queries.jsonl`
//! (`_id`, `text`) and the train judgements `qrels/train.tsv` (`query-id`, `corpus-id`,
//! `score`, tab-separated, one header line). Blank lines are skipped; errors name the file
//! and the line.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use anyhow::{bail, Context};
use serde::Deserialize;

/// The corpus file, in the SciFact directory.
pub const CORPUS_FILE: &str = "corpus.jsonl";
/// The queries file, in the SciFact directory.
pub const QUERIES_FILE: &str = "queries.jsonl";
/// The train judgements, in the SciFact directory.
pub const TRAIN_QRELS_FILE: &str = "qrels/train.tsv";

/// One line of `corpus.jsonl`: an abstract.
#[derive(Deserialize)]
pub struct Document {
    #[serde(rename = "_id")]
    pub id: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub text: String,
}

/// One line of `queries.jsonl`.
#[derive(Deserialize)]
pub struct Query {
    #[serde(rename = "_id")]
    pub id: String,
    pub text: String,
}

/// Graded judgements: query id -> (corpus id -> score), queries in order of first appearance.
pub type Qrels = Vec<(String, BTreeMap<String, f64>)>;

/// The corpus and the queries of SciFact.
pub struct Scifact {
    /// Documents in `corpus.jsonl` (non-blank lines), read or not.
    pub corpus_in_file: usize,
    /// The documents read, in file order: all of them, or the first ones up to a limit.
    pub corpus: Vec<Document>,
    /// Every query, in file order.
    pub queries: Vec<Query>,
}

impl Scifact {
    /// Reads `corpus.jsonl` (its first `limit_docs` documents when given; the lines after them
    /// are counted, not parsed) and `queries.jsonl` from `dir`.
    pub fn load(dir: &Path, limit_docs: Option<usize>) -> anyhow::Result<Scifact> {
        let corpus_path = dir.join(CORPUS_FILE);
        let lines = read_lines(&corpus_path)?;
        let corpus_in_file = lines.len();
        let corpus = lines
            .iter()
            .take(limit_docs.unwrap_or(usize::MAX))
            .map(|(n, line)| {
                serde_json::from_str(line).with_context(|| {
                    format!("{}:{n}: not a corpus document", corpus_path.display())
                })
            })
            .collect::<anyhow::Result<_>>()?;
        let queries_path = dir.join(QUERIES_FILE);
        let queries = read_lines(&queries_path)?
            .iter()
            .map(|(n, line)| {
                serde_json::from_str(line)
                    .with_context(|| format!("{}:{n}: not a query", queries_path.display()))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Scifact {
            corpus_in_file,
            corpus,
            queries,
        })
    }

    /// Query text by query id (of two lines with the same id, the later one).
    pub fn query_texts(&self) -> HashMap<&str, &str> {
        self.queries
            .iter()
            .map(|q| (q.id.as_str(), q.text.as_str()))
            .collect()
    }

    /// The distinct query texts, trimmed, in file order (the first of equal ones), leaving out
    /// blank ones and those over `max_chars` characters.
    pub fn distinct_queries(&self, max_chars: usize) -> Vec<String> {
        let mut seen = HashSet::new();
        self.queries
            .iter()
            .map(|q| q.text.trim())
            .filter(|q| !q.is_empty() && q.chars().count() <= max_chars && seen.insert(*q))
            .map(str::to_string)
            .collect()
    }
}

/// Reads `qrels/train.tsv` in `dir`: the judgements with a positive score.
pub fn train_qrels(dir: &Path) -> anyhow::Result<Qrels> {
    let path = dir.join(TRAIN_QRELS_FILE);
    let mut qrels: Qrels = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (i, (n, line)) in read_lines(&path)?.iter().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if i == 0 && fields.first().is_some_and(|f| *f == "query-id") {
            continue;
        }
        let [query, doc, score] = fields[..] else {
            bail!("{}:{n}: expected 3 fields: `{line}`", path.display());
        };
        let score: f64 = score
            .parse()
            .with_context(|| format!("{}:{n}: bad score `{score}`", path.display()))?;
        if score <= 0.0 {
            continue;
        }
        let at = *index.entry(query.to_string()).or_insert_with(|| {
            qrels.push((query.to_string(), BTreeMap::new()));
            qrels.len() - 1
        });
        qrels[at].1.insert(doc.to_string(), score);
    }
    Ok(qrels)
}

/// Unless `corpus.jsonl` and `queries.jsonl` are both in `dir`: says loudly, on stderr, which
/// file is missing and that `variable` names the directory, and exits with status 2.
pub fn exit_when_missing(dir: &Path, variable: &str) {
    for file in [dir.join(CORPUS_FILE), dir.join(QUERIES_FILE)] {
        if !file.is_file() {
            eprintln!();
            eprintln!("==================================================================");
            eprintln!("ERROR: the SciFact corpus is missing.");
            eprintln!("  looked for: {}", file.display());
            eprintln!("  directory:  {}", dir.display());
            eprintln!("  set {variable} to the directory holding {CORPUS_FILE} and {QUERIES_FILE}");
            eprintln!("==================================================================");
            std::process::exit(2);
        }
    }
}

/// The non-blank lines of the file at `path`, each with its line number (from 1).
fn read_lines(path: &Path) -> anyhow::Result<Vec<(usize, String)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| (i + 1, line.to_string()))
        .collect())
}
