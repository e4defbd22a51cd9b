//! The keyword index: BM25 over memory contents with tantivy, in memory.
//!
//! One index serves every lane; each document carries its lane as an untokenised term, and a
//! query is always confined to one lane by a zero-scoring filter clause. Documents are keyed by
//! a `u64` that the caller chooses (the engine packs its lane number and slot into it).
//!
//! Writes go through one indexer thread that owns the `IndexWriter`: it applies every operation
//! waiting, and commits (and reloads the reader) only when someone waits for it
//! ([`TextIndex::flush`]), when [`OPS_PER_COMMIT`] writes are uncommitted, or when the oldest
//! has waited [`COMMIT_DELAY`]. A document is searchable when [`TextIndex::flush`] returns.
//! Writers need not wait: the index counts the operations it has not committed yet, and a
//! search first calls [`TextIndex::settle`], which waits for a commit only when some are
//! pending; so whatever was written before a search starts is found by it. Committing after
//! every write, as the indexer once did, made a segment per save or imported line: the
//! commits, the reader reloads and the merges of those segments took CPU from the model
//! (docs/BENCHMARKS.md, issue 34).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, STRING,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
    TokenStream,
};
use tantivy::{doc, Index, IndexReader, IndexWriter, ReloadPolicy, Term};
use tokio::sync::oneshot;

/// The analyzer of memory text: words, lower-cased, English stop words dropped, stemmed.
const ANALYZER: &str = "memvault_en";
/// Memory of the indexer's in-RAM segment writer.
const WRITER_HEAP_BYTES: usize = 50_000_000;
/// Operations applied before a commit, at most.
const OPS_PER_COMMIT: usize = 10_000;
/// Longest time a write stays uncommitted when no search or flush asks for it.
const COMMIT_DELAY: std::time::Duration = std::time::Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum TextIndexError {
    #[error("keyword index: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    #[error("keyword index: the indexer has stopped")]
    Stopped,
    #[error("keyword index: commit failed: {0}")]
    Commit(String),
}

enum Op {
    Add {
        key: u64,
        lane: String,
        text: String,
    },
    Delete {
        key: u64,
    },
    DeleteLane {
        lane: String,
    },
    Flush(oneshot::Sender<Result<(), String>>),
}

#[derive(Clone, Copy)]
struct Fields {
    key: Field,
    lane: Field,
    text: Field,
}

pub struct TextIndex {
    reader: IndexReader,
    fields: Fields,
    ops: mpsc::Sender<Op>,
    /// Adds and deletes sent but not committed yet.
    pending: Arc<AtomicUsize>,
}

impl TextIndex {
    /// An empty index with its indexer thread.
    pub fn new() -> Result<Self, TextIndexError> {
        let mut schema = Schema::builder();
        let key = schema.add_u64_field("key", NumericOptions::default().set_fast().set_indexed());
        let lane = schema.add_text_field("lane", STRING);
        let text = schema.add_text_field(
            "text",
            TextOptions::default().set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer(ANALYZER)
                    .set_index_option(IndexRecordOption::WithFreqs),
            ),
        );
        let index = Index::create_in_ram(schema.build());
        index.tokenizers().register(ANALYZER, analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let writer: IndexWriter = index.writer_with_num_threads(1, WRITER_HEAP_BYTES)?;
        let fields = Fields { key, lane, text };
        let (ops, queue) = mpsc::channel();
        let thread_reader = reader.clone();
        let pending = Arc::new(AtomicUsize::new(0));
        let thread_pending = pending.clone();
        thread::Builder::new()
            .name("memvault-text-indexer".to_string())
            .spawn(move || run_indexer(writer, thread_reader, fields, queue, thread_pending))
            .map_err(|e| TextIndexError::Commit(e.to_string()))?;
        Ok(TextIndex {
            reader,
            fields,
            ops,
            pending,
        })
    }

    /// Queues a document; searchable after the next [`TextIndex::flush`].
    pub fn add(&self, key: u64, lane: &str, text: &str) -> Result<(), TextIndexError> {
        self.pending.fetch_add(1, Ordering::SeqCst);
        self.ops
            .send(Op::Add {
                key,
                lane: lane.to_string(),
                text: text.to_string(),
            })
            .map_err(|_| TextIndexError::Stopped)
    }

    /// Queues the removal of a document.
    pub fn delete(&self, key: u64) -> Result<(), TextIndexError> {
        self.pending.fetch_add(1, Ordering::SeqCst);
        self.ops
            .send(Op::Delete { key })
            .map_err(|_| TextIndexError::Stopped)
    }

    /// Queues the removal of every document of a lane.
    pub fn delete_lane(&self, lane: &str) -> Result<(), TextIndexError> {
        self.pending.fetch_add(1, Ordering::SeqCst);
        self.ops
            .send(Op::DeleteLane {
                lane: lane.to_string(),
            })
            .map_err(|_| TextIndexError::Stopped)
    }

    /// Waits until everything queued before this call is committed and visible to searches.
    pub async fn flush(&self) -> Result<(), TextIndexError> {
        let (done, outcome) = oneshot::channel();
        self.ops
            .send(Op::Flush(done))
            .map_err(|_| TextIndexError::Stopped)?;
        outcome
            .await
            .map_err(|_| TextIndexError::Stopped)?
            .map_err(TextIndexError::Commit)
    }

    /// Waits for a commit if anything written before this call is not committed yet.
    pub async fn settle(&self) -> Result<(), TextIndexError> {
        if self.pending.load(Ordering::SeqCst) > 0 {
            self.flush().await
        } else {
            Ok(())
        }
    }

    /// The analysed terms of a query, in order, without repeats.
    pub fn terms(&self, query: &str) -> Vec<String> {
        let mut analyzer = analyzer();
        let mut stream = analyzer.token_stream(query);
        let mut terms: Vec<String> = Vec::new();
        while let Some(token) = stream.next() {
            if !terms.contains(&token.text) {
                terms.push(token.text.clone());
            }
        }
        terms
    }

    /// The best `limit` documents of `lane` for `query` by BM25: `(key, score)`, best first.
    /// A query with no indexable word finds nothing.
    pub fn search(
        &self,
        lane: &str,
        query: &str,
        limit: usize,
    ) -> Result<Vec<(u64, f32)>, TextIndexError> {
        let terms = self.terms(query);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let words: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|t| {
                let query: Box<dyn Query> = Box::new(TermQuery::new(
                    Term::from_field_text(self.fields.text, t),
                    IndexRecordOption::WithFreqs,
                ));
                (Occur::Should, query)
            })
            .collect();
        let in_lane: Box<dyn Query> = Box::new(ConstScoreQuery::new(
            Box::new(TermQuery::new(
                Term::from_field_text(self.fields.lane, lane),
                IndexRecordOption::Basic,
            )),
            0.0,
        ));
        let query = BooleanQuery::new(vec![
            (Occur::Must, Box::new(BooleanQuery::new(words))),
            (Occur::Must, in_lane),
        ]);
        let searcher = self.reader.searcher();
        let top = searcher.search(&query, &TopDocs::with_limit(limit).order_by_score())?;
        let mut hits = Vec::with_capacity(top.len());
        let mut columns = std::collections::HashMap::new();
        for (score, address) in top {
            let column = match columns.entry(address.segment_ord) {
                std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
                std::collections::hash_map::Entry::Vacant(entry) => entry.insert(
                    searcher
                        .segment_reader(address.segment_ord)
                        .fast_fields()
                        .u64("key")?,
                ),
            };
            if let Some(key) = column.first(address.doc_id) {
                hits.push((key, score));
            }
        }
        Ok(hits)
    }

    /// Documents in the index (committed).
    pub fn len(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Function words: they match nearly every memory and only add noise to BM25 (questions are
/// full of them: "what did I say about ...").
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "again", "all", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "being", "both", "but", "by", "can", "could", "did", "do", "does", "doing",
    "for", "from", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his",
    "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "my", "myself",
    "of", "on", "or", "our", "ours", "she", "should", "so", "some", "such", "than", "that", "the",
    "their", "theirs", "them", "then", "there", "these", "they", "this", "those", "to", "too",
    "us", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom",
    "why", "will", "with", "would", "you", "your", "yours",
];

fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(StopWordFilter::remove(
            STOP_WORDS.iter().map(|w| (*w).to_string()),
        ))
        .filter(Stemmer::new(Language::English))
        .build()
}

/// The indexer thread: applies operations as they come and commits when asked to, when
/// [`OPS_PER_COMMIT`] writes wait, or [`COMMIT_DELAY`] after the oldest uncommitted one. Ends
/// when every sender is gone.
fn run_indexer(
    mut writer: IndexWriter,
    reader: IndexReader,
    fields: Fields,
    queue: mpsc::Receiver<Op>,
    pending: Arc<AtomicUsize>,
) {
    // Writes applied and not committed, since when, and the first failure among them.
    let mut uncommitted = 0;
    let mut since: Option<std::time::Instant> = None;
    let mut failure: Option<String> = None;
    loop {
        let first = match since {
            None => match queue.recv() {
                Ok(op) => Some(op),
                Err(_) => break,
            },
            Some(at) => match queue.recv_timeout(COMMIT_DELAY.saturating_sub(at.elapsed())) {
                Ok(op) => Some(op),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            },
        };
        let mut waiting = Vec::new();
        let mut next = first;
        let mut applied = 0;
        while let Some(op) = next.take() {
            let mut write = || {
                uncommitted += 1;
                since.get_or_insert_with(std::time::Instant::now);
            };
            match op {
                Op::Add { key, lane, text } => {
                    write();
                    if let Err(e) = writer.add_document(doc!(
                        fields.key => key,
                        fields.lane => lane,
                        fields.text => text,
                    )) {
                        failure.get_or_insert(e.to_string());
                    }
                }
                Op::Delete { key } => {
                    write();
                    writer.delete_term(Term::from_field_u64(fields.key, key));
                }
                Op::DeleteLane { lane } => {
                    write();
                    writer.delete_term(Term::from_field_text(fields.lane, &lane));
                }
                Op::Flush(done) => waiting.push(done),
            }
            applied += 1;
            if applied < OPS_PER_COMMIT {
                next = queue.try_recv().ok();
            }
        }
        let due = !waiting.is_empty()
            || uncommitted >= OPS_PER_COMMIT
            || since.is_some_and(|at| at.elapsed() >= COMMIT_DELAY);
        if !due {
            continue;
        }
        if uncommitted > 0 {
            if let Err(e) = writer.commit().and_then(|_| reader.reload()) {
                tracing::error!(error = %e, "keyword index commit failed");
                failure.get_or_insert(e.to_string());
            }
            pending.fetch_sub(uncommitted, Ordering::SeqCst);
            uncommitted = 0;
            since = None;
        }
        let outcome = failure.take();
        for done in waiting {
            let _ = done.send(match &outcome {
                Some(e) => Err(e.clone()),
                None => Ok(()),
            });
        }
    }
    if let Err(e) = writer.wait_merging_threads() {
        tracing::warn!(error = %e, "keyword index merges did not finish");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn finds_by_stemmed_words_inside_one_lane_only() {
        let index = TextIndex::new().unwrap();
        index.add(1, "a", "I moved to Berlin last year").unwrap();
        index.add(2, "a", "Deploys happen on Thursdays").unwrap();
        index.add(3, "b", "Moving to Berlin soon").unwrap();
        index.flush().await.unwrap();
        let hits = index.search("a", "move berlin", 10).unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![1]);
        let hits = index.search("b", "berlin", 10).unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![3]);
        assert!(index.search("a", "the of and", 10).unwrap().is_empty());
        assert!(index.search("c", "berlin", 10).unwrap().is_empty());
    }

    #[tokio::test]
    async fn rare_terms_outrank_common_ones_and_deletes_disappear() {
        let index = TextIndex::new().unwrap();
        for i in 0..20u64 {
            index
                .add(i, "l", &format!("meeting notes number {i}"))
                .unwrap();
        }
        index.add(100, "l", "ticket ZX-4471 meeting").unwrap();
        index.flush().await.unwrap();
        let hits = index.search("l", "meeting zx-4471", 5).unwrap();
        assert_eq!(hits[0].0, 100);
        assert!(hits[0].1 > hits[1].1);
        index.delete(100).unwrap();
        index.flush().await.unwrap();
        let hits = index.search("l", "zx-4471", 5).unwrap();
        assert!(hits.is_empty());
        assert_eq!(index.len(), 20);
    }

    #[tokio::test]
    async fn a_search_after_a_write_finds_it_without_an_explicit_flush() {
        let index = TextIndex::new().unwrap();
        for i in 0..50u64 {
            index
                .add(i, "l", &format!("note {i} about the harbour"))
                .unwrap();
            index.settle().await.unwrap();
            let hits = index.search("l", "harbour", 100).unwrap();
            assert_eq!(hits.len() as u64, i + 1);
        }
        index.delete(7).unwrap();
        index.settle().await.unwrap();
        assert_eq!(index.search("l", "harbour", 100).unwrap().len(), 49);
    }

    /// Writes that no search asks for are committed all the same, once the delay has passed.
    #[tokio::test]
    async fn unasked_writes_are_committed_after_the_delay() {
        let index = TextIndex::new().unwrap();
        for i in 0..5u64 {
            index.add(i, "l", "a note about the harbour").unwrap();
        }
        let started = std::time::Instant::now();
        while index.len() < 5 {
            assert!(
                started.elapsed() < 30 * COMMIT_DELAY,
                "the writes were never committed"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(index.pending.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn query_terms_are_analysed() {
        let index = TextIndex::new().unwrap();
        assert_eq!(
            index.terms("What city do I live in? Cities!"),
            vec!["citi", "live"]
        );
    }
}
