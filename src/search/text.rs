//! The keyword index: BM25 over memory contents with tantivy, in memory.
//!
//! One index serves every lane. The index numbers each lane it is given (a [`LaneNumber`]) and
//! prefixes each of a document's terms with its lane's number (`1f:harbour`), so a query's
//! terms are its lane's alone, and BM25 reads only its lane's statistics: the documents, how
//! many hold a term, their average length ([`LaneStatistics`]). A lane's ranking then does not
//! depend on what other tenants store: with one set of statistics over all lanes, a tenant
//! could read other tenants' word frequencies off the ratio of its own documents' scores. Each
//! document also carries its lane's number as an untokenised term, by which a lane is deleted
//! and its documents counted. Documents are keyed by a `u64` that the caller chooses (the
//! engine packs its lane number and slot into it).
//!
//! A search is the union of its lane's terms, nested in a boolean query of one clause, so that
//! tantivy scores every document the union holds instead of pruning it by Block-WAND. 300
//! SciFact queries, 50 hits each (a throw-away program, Zen 4, p50): one lane of 100,000
//! documents (SciFact's 45,341 abstract sentences, some with their title, each indexed two or
//! three times) 0.19 ms, the same hits and scores as the terms shared by all lanes with the
//! lane as a zero-scoring filter clause, as the index once did (0.32 ms); the bare union,
//! pruned by Block-WAND, 0.35 ms. A lane of 10,000 beside 90,000 of another lane: 0.04 ms,
//! against 0.11 filtered and 0.07 pruned.
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

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;

use tantivy::collector::TopDocs;
use tantivy::query::{Bm25StatisticsProvider, BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, STRING,
};
use tantivy::tokenizer::{
    Language, LowerCaser, PreTokenizedString, RemoveLongFilter, SimpleTokenizer, Stemmer,
    StopWordFilter, TextAnalyzer, TokenStream,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term};
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

/// A lane as the index knows it: the prefix of its documents' terms.
type LaneNumber = u32;

enum Op {
    Add {
        key: u64,
        lane: LaneNumber,
        text: String,
    },
    Delete {
        key: u64,
    },
    DeleteLane {
        lane: LaneNumber,
    },
    Flush(oneshot::Sender<Result<(), String>>),
}

/// The lanes given to the index, by name, and the next number.
#[derive(Default)]
struct Lanes {
    numbers: HashMap<String, LaneNumber>,
    next: LaneNumber,
}

/// The documents added to a lane and their terms, counted as they are added (deleted ones
/// stay in the count until their lane is deleted: tantivy's own counts keep them until a
/// merge). Their ratio is the lane's average document length.
#[derive(Default, Clone, Copy)]
struct Added {
    docs: u64,
    terms: u64,
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
    lanes: Mutex<Lanes>,
    /// Written by the indexer thread as it applies adds; read by searches.
    added: Arc<Mutex<HashMap<LaneNumber, Added>>>,
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
        let added = Arc::new(Mutex::new(HashMap::new()));
        let indexer = Indexer {
            writer,
            reader: thread_reader,
            fields,
            pending: thread_pending,
            added: added.clone(),
        };
        thread::Builder::new()
            .name("memvault-text-indexer".to_string())
            .spawn(move || indexer.run(queue))
            .map_err(|e| TextIndexError::Commit(e.to_string()))?;
        Ok(TextIndex {
            reader,
            fields,
            ops,
            pending,
            lanes: Mutex::new(Lanes::default()),
            added,
        })
    }

    /// The number of a lane the index was given, if any.
    fn lane_number(&self, lane: &str) -> Option<LaneNumber> {
        let lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        lanes.numbers.get(lane).copied()
    }

    /// Queues a document; searchable after the next [`TextIndex::flush`].
    pub fn add(&self, key: u64, lane: &str, text: &str) -> Result<(), TextIndexError> {
        let lane = {
            let mut lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
            match lanes.numbers.get(lane) {
                Some(number) => *number,
                None => {
                    let number = lanes.next;
                    lanes.next = lanes.next.wrapping_add(1);
                    lanes.numbers.insert(lane.to_string(), number);
                    number
                }
            }
        };
        self.pending.fetch_add(1, Ordering::SeqCst);
        self.ops
            .send(Op::Add {
                key,
                lane,
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

    /// Queues the removal of every document of a lane. A lane of that name added afterwards
    /// starts afresh, under a new number.
    pub fn delete_lane(&self, lane: &str) -> Result<(), TextIndexError> {
        let number = {
            let mut lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
            lanes.numbers.remove(lane)
        };
        let Some(lane) = number else {
            return Ok(());
        };
        self.pending.fetch_add(1, Ordering::SeqCst);
        self.ops
            .send(Op::DeleteLane { lane })
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

    /// The best `limit` documents of `lane` for `query` by BM25 over the lane's own statistics:
    /// `(key, score)`, best first. A query with no indexable word finds nothing.
    pub fn search(
        &self,
        lane: &str,
        query: &str,
        limit: usize,
    ) -> Result<Vec<(u64, f32)>, TextIndexError> {
        let Some(number) = self.lane_number(lane) else {
            return Ok(Vec::new());
        };
        let terms = self.terms(query);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let words: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|t| {
                let query: Box<dyn Query> = Box::new(TermQuery::new(
                    Term::from_field_text(self.fields.text, &lane_term(number, t)),
                    IndexRecordOption::WithFreqs,
                ));
                (Occur::Should, query)
            })
            .collect();
        // Nested: see the module's comment.
        let union: Box<dyn Query> = Box::new(BooleanQuery::new(words));
        let query = BooleanQuery::new(vec![(Occur::Must, union)]);
        let searcher = self.reader.searcher();
        let added = {
            let added = self.added.lock().unwrap_or_else(|e| e.into_inner());
            added.get(&number).copied().unwrap_or_default()
        };
        let statistics = LaneStatistics::of(&searcher, self.fields, number, added)?;
        if statistics.docs == 0 {
            return Ok(Vec::new());
        }
        let top = searcher.search_with_statistics_provider(
            &query,
            &TopDocs::with_limit(limit).order_by_score(),
            &statistics,
        )?;
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

/// A lane's term for a word: the lane's number in hex, a colon, the word.
fn lane_term(lane: LaneNumber, word: &str) -> String {
    format!("{lane:x}:{word}")
}

/// The untokenised term every document of a lane carries.
fn lane_name(lane: LaneNumber) -> String {
    format!("{lane:x}")
}

/// BM25's statistics of one lane: its documents (those holding its name, deleted ones kept
/// until a merge as tantivy keeps them), its documents holding a term (the lane's own terms),
/// and its average length ([`Added`]).
struct LaneStatistics<'a> {
    searcher: &'a Searcher,
    docs: u64,
    terms: u64,
}

impl<'a> LaneStatistics<'a> {
    fn of(
        searcher: &'a Searcher,
        fields: Fields,
        lane: LaneNumber,
        added: Added,
    ) -> Result<Self, TextIndexError> {
        let docs = searcher.doc_freq(&Term::from_field_text(fields.lane, &lane_name(lane)))?;
        let average = if added.docs == 0 {
            1.0
        } else {
            added.terms as f64 / added.docs as f64
        };
        Ok(LaneStatistics {
            searcher,
            docs,
            terms: (average * docs as f64).round() as u64,
        })
    }
}

impl Bm25StatisticsProvider for LaneStatistics<'_> {
    fn total_num_tokens(&self, _field: Field) -> tantivy::Result<u64> {
        Ok(self.terms)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.docs)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        // A lane's term is only in that lane's documents; the bound keeps BM25's idf defined
        // should the two counts ever be read from different commits.
        Ok(self.searcher.doc_freq(term)?.min(self.docs))
    }
}

/// The indexer thread's state: it owns the writer.
struct Indexer {
    writer: IndexWriter,
    reader: IndexReader,
    fields: Fields,
    pending: Arc<AtomicUsize>,
    added: Arc<Mutex<HashMap<LaneNumber, Added>>>,
}

impl Indexer {
    /// A document of `lane`: its key, its lane's name, and its words analysed and prefixed
    /// with the lane's number; the lane's counts grow by it.
    fn document(
        &self,
        analyzer: &mut TextAnalyzer,
        key: u64,
        lane: LaneNumber,
        text: &str,
    ) -> TantivyDocument {
        let mut stream = analyzer.token_stream(text);
        let mut tokens = Vec::new();
        while let Some(token) = stream.next() {
            let mut token = token.clone();
            token.text = lane_term(lane, &token.text);
            tokens.push(token);
        }
        {
            let mut added = self.added.lock().unwrap_or_else(|e| e.into_inner());
            let counts = added.entry(lane).or_default();
            counts.docs += 1;
            counts.terms += tokens.len() as u64;
        }
        let mut document = TantivyDocument::default();
        document.add_u64(self.fields.key, key);
        document.add_text(self.fields.lane, lane_name(lane));
        document.add_pre_tokenized_text(
            self.fields.text,
            PreTokenizedString {
                text: String::new(),
                tokens,
            },
        );
        document
    }

    /// Applies operations as they come and commits when asked to, when [`OPS_PER_COMMIT`]
    /// writes wait, or [`COMMIT_DELAY`] after the oldest uncommitted one. Ends when every
    /// sender is gone.
    fn run(mut self, queue: mpsc::Receiver<Op>) {
        let mut analyzer = analyzer();
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
                        let document = self.document(&mut analyzer, key, lane, &text);
                        if let Err(e) = self.writer.add_document(document) {
                            failure.get_or_insert(e.to_string());
                        }
                    }
                    Op::Delete { key } => {
                        write();
                        self.writer
                            .delete_term(Term::from_field_u64(self.fields.key, key));
                    }
                    Op::DeleteLane { lane } => {
                        write();
                        self.writer
                            .delete_term(Term::from_field_text(self.fields.lane, &lane_name(lane)));
                        let mut added = self.added.lock().unwrap_or_else(|e| e.into_inner());
                        added.remove(&lane);
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
                if let Err(e) = self.writer.commit().and_then(|_| self.reader.reload()) {
                    tracing::error!(error = %e, "keyword index commit failed");
                    failure.get_or_insert(e.to_string());
                }
                self.pending.fetch_sub(uncommitted, Ordering::SeqCst);
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
        if let Err(e) = self.writer.wait_merging_threads() {
            tracing::warn!(error = %e, "keyword index merges did not finish");
        }
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

    /// BM25 reads its lane's statistics alone: what another lane holds, however much of the
    /// same words, changes no score of this one.
    #[tokio::test]
    async fn a_lanes_scores_do_not_depend_on_other_lanes() {
        let index = TextIndex::new().unwrap();
        index.add(1, "a", "the harbour crane was repaired").unwrap();
        index.add(2, "a", "a boat in the harbour").unwrap();
        index.add(3, "a", "river boat trips on sundays").unwrap();
        index.flush().await.unwrap();
        let before = index.search("a", "crane boat", 10).unwrap();
        assert_eq!(before.len(), 3);
        for i in 0..40u64 {
            index
                .add(100 + i, "b", &format!("crane crane number {i} and a boat"))
                .unwrap();
        }
        index.flush().await.unwrap();
        let after = index.search("a", "crane boat", 10).unwrap();
        assert_eq!(before, after);
        assert_eq!(index.search("b", "crane", 100).unwrap().len(), 40);
    }

    /// A deleted lane's documents and counts are gone: the lane added again under that name
    /// scores as it would in an index of its own.
    #[tokio::test]
    async fn a_deleted_lane_starts_afresh() {
        let index = TextIndex::new().unwrap();
        for i in 0..10u64 {
            index
                .add(
                    i,
                    "a",
                    &format!("an old long note {i} on the harbour walls"),
                )
                .unwrap();
        }
        index.flush().await.unwrap();
        index.delete_lane("a").unwrap();
        index.flush().await.unwrap();
        assert!(index.search("a", "harbour", 10).unwrap().is_empty());
        index.add(50, "a", "harbour lights").unwrap();
        index.add(51, "a", "lights out").unwrap();
        index.flush().await.unwrap();
        let fresh = TextIndex::new().unwrap();
        fresh.add(50, "a", "harbour lights").unwrap();
        fresh.add(51, "a", "lights out").unwrap();
        fresh.flush().await.unwrap();
        assert_eq!(
            index.search("a", "harbour lights", 10).unwrap(),
            fresh.search("a", "harbour lights", 10).unwrap()
        );
        index.delete_lane("never-added").unwrap();
        index.flush().await.unwrap();
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
