//! Unit tests of the ingestion supervisor, with a store and engines in memory: phases walked,
//! retried, failed, killed when stale, cancelled.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::*;
use crate::model::{ChunkDraft, FactDraft, Section, SourceKind};
use crate::pipeline::{
    ChunkVectors, Chunker, DocumentStore, DocumentTask, EmbeddedFact, Embedder, Extractor, Fault,
    Faults, InProcess, Ocr, Progress, StoreError, StoredChunk,
};

/// One document in memory, with every status change recorded.
#[derive(Default)]
struct Memory {
    bytes: Vec<u8>,
    kind: Option<SourceKind>,
    done: Option<Phase>,
    sections: Vec<Section>,
    chunks: Vec<(StoredChunk, bool, bool)>,
    /// Each embedded chunk's vectors: its own, then its pieces'.
    vectors: HashMap<Uuid, (Vec<f32>, Vec<Vec<f32>>)>,
    facts: Vec<String>,
    statuses: Vec<(Status, u32, Option<String>)>,
}

#[derive(Default)]
struct FakeStore(Mutex<HashMap<Uuid, Memory>>);

impl FakeStore {
    fn add(&self, bytes: &[u8], kind: SourceKind) -> Uuid {
        let id = Uuid::new_v4();
        self.0.lock().unwrap().insert(
            id,
            Memory {
                bytes: bytes.to_vec(),
                kind: Some(kind),
                ..Memory::default()
            },
        );
        id
    }

    fn with<T>(&self, id: Uuid, f: impl FnOnce(&mut Memory) -> T) -> Result<T, StoreError> {
        let mut all = self.0.lock().unwrap();
        let doc = all.get_mut(&id).ok_or(StoreError("gone".into()))?;
        Ok(f(doc))
    }

    fn statuses(&self, id: Uuid) -> Vec<Status> {
        self.with(id, |d| d.statuses.iter().map(|s| s.0).collect())
            .unwrap()
    }
}

#[async_trait]
impl DocumentStore for FakeStore {
    async fn load(&self, id: Uuid) -> Result<DocumentTask, StoreError> {
        self.with(id, |d| DocumentTask {
            id,
            title: "T".into(),
            kind: d.kind.unwrap_or(SourceKind::Text),
            done: d.done,
        })
    }
    async fn raw(&self, id: Uuid) -> Result<Vec<u8>, StoreError> {
        self.with(id, |d| d.bytes.clone())
    }
    async fn save_sections(
        &self,
        id: Uuid,
        phase: Phase,
        sections: &[Section],
    ) -> Result<(), StoreError> {
        self.with(id, |d| {
            d.sections = sections.to_vec();
            d.done = Some(phase);
        })
    }
    async fn sections(&self, id: Uuid) -> Result<Vec<Section>, StoreError> {
        self.with(id, |d| d.sections.clone())
    }
    async fn save_chunks(&self, id: Uuid, chunks: &[ChunkDraft]) -> Result<(), StoreError> {
        self.with(id, |d| {
            d.chunks = chunks
                .iter()
                .map(|c| {
                    let stored = StoredChunk {
                        id: Uuid::new_v4(),
                        index: c.index,
                        section_path: c.section_path.clone(),
                        content: c.content.clone(),
                        contextual_content: c.contextual_content.clone(),
                    };
                    (stored, false, false)
                })
                .collect();
            d.done = Some(Phase::Chunk);
        })
    }
    async fn chunks_to_embed(&self, id: Uuid) -> Result<Vec<StoredChunk>, StoreError> {
        self.with(id, |d| {
            d.chunks
                .iter()
                .filter(|c| !c.1)
                .map(|c| c.0.clone())
                .collect()
        })
    }
    async fn save_chunk_vectors(
        &self,
        id: Uuid,
        vectors: &[ChunkVectors],
    ) -> Result<(), StoreError> {
        self.with(id, |d| {
            for v in vectors {
                if let Some(c) = d.chunks.iter_mut().find(|c| c.0.id == v.chunk) {
                    c.1 = true;
                    d.vectors
                        .insert(v.chunk, (v.vector.clone(), v.pieces.clone()));
                }
            }
        })
    }
    async fn chunks_to_extract(&self, id: Uuid) -> Result<Vec<StoredChunk>, StoreError> {
        self.with(id, |d| {
            d.chunks
                .iter()
                .filter(|c| !c.2)
                .map(|c| c.0.clone())
                .collect()
        })
    }
    async fn save_facts(
        &self,
        id: Uuid,
        chunk: &StoredChunk,
        facts: &[EmbeddedFact],
    ) -> Result<(), StoreError> {
        self.with(id, |d| {
            for f in facts {
                if !d.facts.contains(&f.fact.content) {
                    d.facts.push(f.fact.content.clone());
                }
            }
            if let Some(c) = d.chunks.iter_mut().find(|c| c.0.id == chunk.id) {
                c.2 = true;
            }
        })
    }
    async fn finish_phase(&self, id: Uuid, phase: Phase) -> Result<(), StoreError> {
        self.with(id, |d| d.done = Some(phase))
    }
    async fn record_progress(&self, id: Uuid, _: Progress) -> Result<(), StoreError> {
        self.with(id, |_| ())
    }
    async fn set_status(&self, id: Uuid, change: StatusChange) -> Result<bool, StoreError> {
        self.with(id, |d| {
            // As the database does: a document out of the pipeline stays out.
            let in_pipeline = d.statuses.last().is_none_or(|s| !s.0.is_terminal());
            let guarded = matches!(
                change.status,
                Status::Processing | Status::Retrying | Status::Failed
            );
            if guarded && !in_pipeline {
                return false;
            }
            d.statuses
                .push((change.status, change.attempts, change.message));
            true
        })
    }
}

struct NoOcr;
impl Ocr for NoOcr {
    fn recognize(&self, _: &[u8]) -> Result<String, String> {
        Err("no ocr here".into())
    }
}

/// One chunk per section.
struct Sections;
impl Chunker for Sections {
    fn chunk(&self, title: &str, sections: &[Section]) -> Vec<ChunkDraft> {
        sections
            .iter()
            .enumerate()
            .map(|(i, s)| ChunkDraft {
                index: i as u32,
                section_path: s.path.clone(),
                content: s.text.clone(),
                contextual_content: format!("{title}\n\n{}", s.text),
            })
            .collect()
    }

    /// A chunk of several sentences is also read sentence by sentence.
    fn pieces(&self, title: &str, chunk: &StoredChunk) -> Vec<String> {
        let sentences: Vec<&str> = chunk
            .content
            .split_inclusive(". ")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if sentences.len() < 2 {
            return Vec::new();
        }
        sentences
            .iter()
            .map(|s| format!("{title}\n\n{s}"))
            .collect()
    }
}

struct Zeros;
#[async_trait]
impl Embedder for Zeros {
    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        Ok(texts.iter().map(|_| vec![0.0; 4]).collect())
    }
}

/// A text's vector is its length in bytes, then zeros: which vector went where is visible.
struct Lengths;
#[async_trait]
impl Embedder for Lengths {
    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        Ok(texts
            .iter()
            .map(|t| vec![t.len() as f32, 1.0, 0.0, 0.0])
            .collect())
    }
}

/// Takes a millisecond per 400 bytes of text in each call, as a model's time grows with
/// its input.
struct Slow;
#[async_trait]
impl Embedder for Slow {
    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        let bytes: usize = texts.iter().map(String::len).sum();
        tokio::time::sleep(Duration::from_millis(bytes as u64 / 400)).await;
        Ok(texts.iter().map(|_| vec![0.0; 4]).collect())
    }
}

/// Every chunk is one fact.
struct Whole;
#[async_trait]
impl Extractor for Whole {
    async fn extract(&self, _: &str, chunk: &StoredChunk) -> Result<Vec<FactDraft>, String> {
        Ok(vec![FactDraft {
            content: chunk.content.clone(),
            category: "fact".into(),
            quote: chunk.content.clone(),
            confidence: 0.5,
        }])
    }
}

/// `fault` the first `times` times `phase` starts.
struct Script {
    phase: Phase,
    fault: Fault,
    times: usize,
    fired: Mutex<usize>,
}

impl Faults for Script {
    fn at(&self, _: Uuid, phase: Phase, _: u32) -> Option<Fault> {
        let mut fired = self.fired.lock().unwrap();
        (phase == self.phase && *fired < self.times).then(|| {
            *fired += 1;
            self.fault.clone()
        })
    }
}

async fn start(store: Arc<FakeStore>, faults: Option<Script>, max_attempts: u32) -> Ingestion {
    start_with(store, faults, max_attempts, Arc::new(Zeros)).await
}

async fn start_with(
    store: Arc<FakeStore>,
    faults: Option<Script>,
    max_attempts: u32,
    embedder: Arc<dyn Embedder>,
) -> Ingestion {
    let engines = Engines {
        store,
        decoder: Arc::new(InProcess {
            limits: crate::parse::ParseLimits::default(),
            ocr: Arc::new(NoOcr),
        }),
        chunker: Arc::new(Sections),
        embedder,
        extractor: Arc::new(Whole),
        faults: faults.map(|f| Arc::new(f) as Arc<dyn Faults>),
        observer: None,
    };
    let config = PipelineConfig {
        max_attempts,
        backoff_base: Duration::from_millis(5),
        backoff_cap: Duration::from_millis(20),
        stale_after: Duration::from_millis(100),
        check_every: Duration::from_millis(20),
        ..PipelineConfig::default()
    };
    Ingestion::start(engines, config, Duration::from_secs(5))
        .await
        .unwrap()
        .0
}

async fn until_terminal(store: &FakeStore, id: Uuid) -> Status {
    for _ in 0..500 {
        if let Some(last) = store.statuses(id).last() {
            if last.is_terminal() {
                // Nothing may follow a terminal status.
                tokio::time::sleep(Duration::from_millis(50)).await;
                return *store.statuses(id).last().unwrap();
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no terminal status: {:?}", store.statuses(id));
}

const TEXT: &[u8] = b"# One\n\nAlpha is first.\n\n# Two\n\nBeta is second.\n";

/// A document cancelled, finished or deleted after it was queued (e.g. while the
/// supervisor was being restarted and its recovery resubmitted it) is not started.
#[tokio::test]
async fn a_document_that_left_the_pipeline_is_not_started() {
    let store = Arc::new(FakeStore::default());
    let id = store.add(b"Acme was founded in 1999.", SourceKind::Text);
    store
        .with(id, |d| {
            d.statuses
                .push((Status::Cancelled, 1, Some("cancelled on request".into())))
        })
        .unwrap();
    let ingestion = start(store.clone(), None, 3).await;
    ingestion.submit(id, Uuid::new_v4(), 1).unwrap();
    // Answered after the submission was handled (one mailbox, in order).
    let stats = ingestion.stats().await.unwrap();
    assert_eq!((stats.running, stats.queued, stats.completed), (0, 0, 0));
    assert_eq!(store.statuses(id), vec![Status::Cancelled]);
}

#[tokio::test]
async fn a_document_walks_every_phase_to_completed() {
    let store = Arc::new(FakeStore::default());
    let ingestion = start(store.clone(), None, 3).await;
    let id = store.add(TEXT, SourceKind::Markdown);
    ingestion.submit(id, Uuid::nil(), 1).unwrap();
    assert_eq!(until_terminal(&store, id).await, Status::Completed);
    assert_eq!(
        store.statuses(id),
        vec![Status::Processing, Status::Completed]
    );
    store
        .with(id, |d| {
            assert_eq!(d.done, Some(Phase::Extract));
            assert_eq!(d.chunks.len(), 2);
            assert!(d.chunks.iter().all(|c| c.1 && c.2));
            assert_eq!(d.facts.len(), 2);
        })
        .unwrap();
    let stats = ingestion.stats().await.unwrap();
    assert_eq!((stats.completed, stats.running), (1, 0));
    ingestion.stop();
}

#[tokio::test]
async fn a_long_chunk_is_embedded_piece_by_piece_and_keeps_their_mean() {
    let store = Arc::new(FakeStore::default());
    let ingestion = start_with(store.clone(), None, 3, Arc::new(Lengths)).await;
    let text = b"# One\n\nAlpha is first. Gamma is third.\n\n# Two\n\nBeta is second.\n";
    let id = store.add(text, SourceKind::Markdown);
    ingestion.submit(id, Uuid::nil(), 1).unwrap();
    assert_eq!(until_terminal(&store, id).await, Status::Completed);
    store
        .with(id, |d| {
            // The fake store names every document "T"; `Lengths` embeds a text as
            // [its length, 1, 0, 0].
            let length = |s: &str| format!("T\n\n{s}").len() as f32;
            let of = |content: &str| {
                let chunk = d.chunks.iter().find(|c| c.0.content == content).unwrap();
                d.vectors[&chunk.0.id].clone()
            };
            let (own, pieces) = of("Alpha is first. Gamma is third.");
            let firsts: Vec<f32> = pieces.iter().map(|p| p[0]).collect();
            assert_eq!(
                firsts,
                vec![length("Alpha is first."), length("Gamma is third.")]
            );
            // Both pieces are 18 bytes long: their unit mean is [18, 1, 0, 0] / |.|. The
            // whole chunk, embedded, would be [34, 1, 0, 0] / |.|.
            let norm = (18.0f32 * 18.0 + 1.0).sqrt();
            let expected = [18.0 / norm, 1.0 / norm, 0.0, 0.0];
            assert!(
                own.iter().zip(expected).all(|(a, b)| (a - b).abs() < 1e-6),
                "{own:?}"
            );
            let (own, pieces) = of("Beta is second.");
            assert_eq!(own, vec![length("Beta is second."), 1.0, 0.0, 0.0]);
            assert!(pieces.is_empty());
        })
        .unwrap();
    ingestion.stop();
}

#[tokio::test]
async fn a_transient_failure_is_retried_from_the_committed_phase() {
    let store = Arc::new(FakeStore::default());
    let faults = Script {
        phase: Phase::Embed,
        fault: Fault::Fail("embedder down".into()),
        times: 1,
        fired: Mutex::new(0),
    };
    let ingestion = start(store.clone(), Some(faults), 3).await;
    let id = store.add(TEXT, SourceKind::Markdown);
    ingestion.submit(id, Uuid::nil(), 1).unwrap();
    assert_eq!(until_terminal(&store, id).await, Status::Completed);
    let statuses = store.with(id, |d| d.statuses.clone()).unwrap();
    assert_eq!(statuses[1].0, Status::Retrying);
    assert_eq!(statuses[1].2.as_deref(), Some("embedder down"));
    assert_eq!(statuses.last().unwrap().1, 2, "completed by generation 2");
    store
        .with(id, |d| assert_eq!((d.chunks.len(), d.facts.len()), (2, 2)))
        .unwrap();
    ingestion.stop();
}

/// 100 facts of 1 KB: in one model call they would take 250 ms, past the 100 ms staleness
/// limit; cut into calls with a heartbeat after each, none is silent for that long.
#[tokio::test]
async fn long_facts_are_embedded_in_calls_short_enough_to_keep_a_heartbeat() {
    let store = Arc::new(FakeStore::default());
    let ingestion = start_with(store.clone(), None, 1, Arc::new(Slow)).await;
    let paragraph = "Rows of a long table keep the model busy. ".repeat(24);
    let text: String = (0..100)
        .map(|i| format!("# Part {i}\n\n{i} {paragraph}\n\n"))
        .collect();
    let id = store.add(text.as_bytes(), SourceKind::Markdown);
    ingestion.submit(id, Uuid::nil(), 1).unwrap();
    assert_eq!(until_terminal(&store, id).await, Status::Completed);
    store
        .with(id, |d| {
            assert_eq!((d.chunks.len(), d.facts.len()), (100, 100))
        })
        .unwrap();
    ingestion.stop();
}

#[tokio::test]
async fn a_document_resumed_past_its_attempts_fails_without_running() {
    let store = Arc::new(FakeStore::default());
    let ingestion = start(store.clone(), None, 3).await;
    let id = store.add(TEXT, SourceKind::Markdown);
    // Three attempts were started and none ended (the server died under each): the
    // fourth is not run.
    ingestion.submit(id, Uuid::nil(), 4).unwrap();
    assert_eq!(until_terminal(&store, id).await, Status::Failed);
    let statuses = store.with(id, |d| d.statuses.clone()).unwrap();
    assert_eq!(statuses.len(), 1, "{statuses:?}");
    assert_eq!(statuses[0].1, 3);
    assert!(statuses[0]
        .2
        .as_deref()
        .unwrap()
        .contains("interrupted 3 times"));
    store
        .with(id, |d| assert!(d.chunks.is_empty(), "nothing ran"))
        .unwrap();
    ingestion.stop();
}

#[tokio::test]
async fn a_corrupt_file_fails_at_once_without_retries() {
    let store = Arc::new(FakeStore::default());
    let ingestion = start(store.clone(), None, 3).await;
    let id = store.add(b"%PDF-1.4 this is not a pdf", SourceKind::Pdf);
    ingestion.submit(id, Uuid::nil(), 1).unwrap();
    assert_eq!(until_terminal(&store, id).await, Status::Failed);
    let statuses = store.with(id, |d| d.statuses.clone()).unwrap();
    assert_eq!(statuses.len(), 2, "{statuses:?}");
    assert!(statuses[1].2.as_deref().unwrap().contains("pdf"));
    ingestion.stop();
}

#[tokio::test]
async fn a_stale_generation_is_killed_and_the_last_attempt_fails() {
    let store = Arc::new(FakeStore::default());
    let faults = Script {
        phase: Phase::Extract,
        fault: Fault::Hang,
        times: 10,
        fired: Mutex::new(0),
    };
    let ingestion = start(store.clone(), Some(faults), 2).await;
    let id = store.add(TEXT, SourceKind::Markdown);
    ingestion.submit(id, Uuid::nil(), 1).unwrap();
    assert_eq!(until_terminal(&store, id).await, Status::Failed);
    let statuses = store.with(id, |d| d.statuses.clone()).unwrap();
    let kinds: Vec<Status> = statuses.iter().map(|s| s.0).collect();
    assert_eq!(
        kinds,
        vec![
            Status::Processing,
            Status::Retrying,
            Status::Processing,
            Status::Failed
        ]
    );
    assert!(statuses[3].2.as_deref().unwrap().contains("no progress"));
    assert_eq!(statuses[3].1, 2);
    ingestion.stop();
}

#[tokio::test]
async fn cancel_kills_the_generation_and_nothing_follows() {
    let store = Arc::new(FakeStore::default());
    let faults = Script {
        phase: Phase::Chunk,
        fault: Fault::Hang,
        times: 10,
        fired: Mutex::new(0),
    };
    let ingestion = start(store.clone(), Some(faults), 3).await;
    let id = store.add(TEXT, SourceKind::Markdown);
    ingestion.submit(id, Uuid::nil(), 1).unwrap();
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert!(ingestion.cancel(id).await.unwrap());
    assert_eq!(until_terminal(&store, id).await, Status::Cancelled);
    assert!(
        !ingestion.cancel(id).await.unwrap(),
        "nothing left to cancel"
    );
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(
        store.statuses(id),
        vec![Status::Processing, Status::Cancelled]
    );
    ingestion.stop();
}
