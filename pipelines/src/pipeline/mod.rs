//! The supervised ingestion pipeline.
//!
//! One [`IngestSupervisor`](supervisor::IngestSupervisor) runs the documents: each attempt at a
//! document (a *generation*) is a [`DocumentPipeline`](document::DocumentPipeline) actor that
//! walks the phases parse -> OCR -> chunk -> embed -> extract, committing each phase's output
//! through the [`DocumentStore`] and recording progress as it goes. The supervisor watches that
//! progress: a generation that stops recording progress for `stale_after`, or dies (error,
//! panic, kill), is killed and respawned after a capped exponential backoff; a respawn resumes
//! after the last committed phase. Terminal statuses are written by the supervisor only, so a
//! cancel and a completion can never both land.
//!
//! Storage, OCR, chunking, embedding and extraction are traits the server implements; this crate
//! never touches SQL or HTTP.

pub mod document;
pub mod progress;
pub mod queue;
pub mod supervisor;

pub use supervisor::{IngestStats, Ingestion, IngestionUnavailable};

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::model::{ChunkDraft, FactDraft, Parsed, Section, SourceKind};
use crate::parse::{parse_keeping, Keep, ParseLimits};

pub use memvault_actors::jobs::backoff;

/// A processing phase, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Parse,
    Ocr,
    Chunk,
    Embed,
    Extract,
}

impl Phase {
    pub const ALL: [Phase; 5] = [
        Phase::Parse,
        Phase::Ocr,
        Phase::Chunk,
        Phase::Embed,
        Phase::Extract,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Parse => "parse",
            Phase::Ocr => "ocr",
            Phase::Chunk => "chunk",
            Phase::Embed => "embed",
            Phase::Extract => "extract",
        }
    }

    pub fn parse(value: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.as_str() == value)
    }

    /// The phases still to run after `done` (all of them when nothing is done).
    pub fn remaining(done: Option<Phase>) -> impl Iterator<Item = Phase> {
        Phase::ALL.into_iter().filter(move |p| Some(*p) > done)
    }
}

/// A document's status, as the API reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    Processing,
    Retrying,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub const ALL: [Status; 6] = [
        Status::Pending,
        Status::Processing,
        Status::Retrying,
        Status::Completed,
        Status::Failed,
        Status::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Processing => "processing",
            Status::Retrying => "retrying",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub fn parse(value: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.as_str() == value)
    }

    /// No more work will happen unless someone asks for a retry.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// What the pipeline needs to know about a document to (re)start it.
#[derive(Debug, Clone)]
pub struct DocumentTask {
    pub id: Uuid,
    pub title: String,
    /// How to parse the stored bytes.
    pub kind: SourceKind,
    /// The last phase whose output is committed.
    pub done: Option<Phase>,
}

/// One stored chunk, as the embed and extract phases read it back.
#[derive(Debug, Clone)]
pub struct StoredChunk {
    pub id: Uuid,
    pub index: u32,
    pub section_path: String,
    pub content: String,
    pub contextual_content: String,
}

/// A chunk's vectors: the chunk's own, and one per piece when the chunk is read in shorter
/// passages (see [`Chunker::pieces`]); the chunk's own is then the unit mean of its pieces'.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkVectors {
    pub chunk: Uuid,
    pub vector: Vec<f32>,
    pub pieces: Vec<Vec<f32>>,
}

/// A fact with its vector, ready to be stored with its evidence.
#[derive(Debug, Clone)]
pub struct EmbeddedFact {
    pub fact: FactDraft,
    pub vector: Vec<f32>,
}

/// A status change, persisted with a timestamp in the document's history.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusChange {
    pub status: Status,
    /// The phase it happened in (for `retrying` and `failed`: where it broke).
    pub phase: Option<Phase>,
    /// Attempts made so far (the generation number).
    pub attempts: u32,
    /// Why, for `retrying`, `failed` and `cancelled`.
    pub message: Option<String>,
}

/// Recorded progress inside a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub phase: Phase,
    pub processed: u32,
    pub total: u32,
}

/// A storage failure: the attempt is retried.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

/// Where documents, their phase outputs and their statuses live. Every method that commits a
/// phase's output is idempotent: a respawned generation may call it again.
#[async_trait]
pub trait DocumentStore: Send + Sync + 'static {
    async fn load(&self, id: Uuid) -> Result<DocumentTask, StoreError>;
    /// The stored upload (or fetched body), exactly as received.
    async fn raw(&self, id: Uuid) -> Result<Vec<u8>, StoreError>;
    /// Persists the text of `phase` (parse, then OCR) and marks `phase` done.
    async fn save_sections(
        &self,
        id: Uuid,
        phase: Phase,
        sections: &[Section],
    ) -> Result<(), StoreError>;
    async fn sections(&self, id: Uuid) -> Result<Vec<Section>, StoreError>;
    /// Replaces the document's chunks with `chunks` and marks chunking done.
    async fn save_chunks(&self, id: Uuid, chunks: &[ChunkDraft]) -> Result<(), StoreError>;
    /// Chunks that have no vector yet.
    async fn chunks_to_embed(&self, id: Uuid) -> Result<Vec<StoredChunk>, StoreError>;
    /// Stores chunk vectors, pieces' included (and indexes them).
    async fn save_chunk_vectors(
        &self,
        id: Uuid,
        vectors: &[ChunkVectors],
    ) -> Result<(), StoreError>;
    /// Chunks whose facts are not stored yet.
    async fn chunks_to_extract(&self, id: Uuid) -> Result<Vec<StoredChunk>, StoreError>;
    /// Stores one chunk's facts with their evidence (merged with an equal memory of the same
    /// vault lane) and marks the chunk extracted, in one transaction.
    async fn save_facts(
        &self,
        id: Uuid,
        chunk: &StoredChunk,
        facts: &[EmbeddedFact],
    ) -> Result<(), StoreError>;
    /// Marks a phase done that has no output of its own (embed, extract).
    async fn finish_phase(&self, id: Uuid, phase: Phase) -> Result<(), StoreError>;
    /// Persists progress and the heartbeat time.
    async fn record_progress(&self, id: Uuid, progress: Progress) -> Result<(), StoreError>;
    /// Persists a status change and appends it to the document's history. `processing`,
    /// `retrying` and `failed` apply only to a document still in the pipeline (pending,
    /// processing or retrying): returns `false` when the document was cancelled, finished or
    /// deleted meanwhile (nothing changed).
    async fn set_status(&self, id: Uuid, change: StatusChange) -> Result<bool, StoreError>;
}

/// Optical character recognition of one image. Blocking. Used by [`InProcess`] only: the
/// server recognises images in its sandboxed workers.
pub trait Ocr: Send + Sync + 'static {
    fn recognize(&self, image: &[u8]) -> Result<String, String>;
}

/// Where a document's untrusted bytes are decoded: parsing (every format) and OCR. The server
/// implements it with sandboxed worker processes (`src/sandbox/`), so that no upload is ever
/// decoded inside the process that serves every tenant. Both calls are bounded in time by the
/// implementation; a failure says whether retrying can help ([`PhaseError::Permanent`] for a
/// refusal or a limit, [`PhaseError::Transient`] for a crash).
#[async_trait]
pub trait Decoder: Send + Sync + 'static {
    /// The document's bytes -> sections and the images that need OCR. The images' `data` may
    /// be left empty: [`Decoder::ocr`] reads the images from the document again, so that they
    /// never leave the decoder (a scan's pages, decoded, are far larger than its file).
    async fn parse(&self, kind: SourceKind, bytes: &[u8]) -> Result<Parsed, PhaseError>;

    /// Text of the document's images `images` (indices into [`Parsed::images`] as `parse`
    /// gave them), in order: `Err` for an image that could not be read (the others still
    /// count); the call's own `Err` when the recognition itself broke down.
    async fn ocr(
        &self,
        kind: SourceKind,
        bytes: &[u8],
        images: Range<usize>,
    ) -> Result<Vec<Result<String, String>>, PhaseError>;

    /// The kind of a file that neither its name nor its MIME type gave, from its content
    /// ([`crate::parse::sniff`]: a zip container's entries are read).
    async fn sniff(&self, bytes: &[u8]) -> Result<Option<SourceKind>, PhaseError>;
}

/// Decodes in this process: for the pipeline's own tests and for the benchmark that measures
/// what the workers cost. The server never uses it (see [`Decoder`]).
pub struct InProcess {
    pub limits: ParseLimits,
    pub ocr: Arc<dyn Ocr>,
}

impl InProcess {
    async fn parsed(
        &self,
        kind: SourceKind,
        bytes: &[u8],
        keep: Keep,
    ) -> Result<Parsed, PhaseError> {
        let limits = self.limits.clone();
        let bytes = bytes.to_vec();
        tokio::task::spawn_blocking(move || parse_keeping(kind, &bytes, &limits, &keep))
            .await
            .map_err(|e| PhaseError::Transient(format!("a parse thread failed: {e}")))?
            .map_err(|e| PhaseError::Permanent(e.to_string()))
    }
}

#[async_trait]
impl Decoder for InProcess {
    async fn parse(&self, kind: SourceKind, bytes: &[u8]) -> Result<Parsed, PhaseError> {
        self.parsed(kind, bytes, Keep::Only(0..0)).await
    }

    async fn ocr(
        &self,
        kind: SourceKind,
        bytes: &[u8],
        images: Range<usize>,
    ) -> Result<Vec<Result<String, String>>, PhaseError> {
        let parsed = self.parsed(kind, bytes, Keep::Only(images.clone())).await?;
        let Some(chosen) = parsed.images.get(images.clone()) else {
            return Err(PhaseError::Transient(format!(
                "images {images:?} of {} asked for",
                parsed.images.len()
            )));
        };
        let chosen: Vec<Vec<u8>> = chosen.iter().map(|i| i.data.clone()).collect();
        let ocr = self.ocr.clone();
        tokio::task::spawn_blocking(move || chosen.iter().map(|i| ocr.recognize(i)).collect())
            .await
            .map_err(|e| PhaseError::Transient(format!("an ocr thread failed: {e}")))
    }

    async fn sniff(&self, bytes: &[u8]) -> Result<Option<SourceKind>, PhaseError> {
        Ok(crate::parse::sniff(bytes))
    }
}

/// Sections -> chunks.
pub trait Chunker: Send + Sync + 'static {
    /// A whole document: CPU-bound, called on a blocking thread.
    fn chunk(&self, title: &str, sections: &[Section]) -> Vec<ChunkDraft>;

    /// The shorter passages a chunk is embedded as instead of whole, each as the model should
    /// read it (with the chunk's title and section), or none when the chunk is embedded whole.
    /// With pieces, the chunk's own vector is the unit mean of theirs. One chunk of a few
    /// hundred tokens: cheap, called inline by the embed phase. The default embeds every chunk
    /// whole.
    fn pieces(&self, _title: &str, _chunk: &StoredChunk) -> Vec<String> {
        Vec::new()
    }
}

/// Sentence vectors (the server's embedder runs the model off the async workers itself).
#[async_trait]
pub trait Embedder: Send + Sync + 'static {
    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String>;
}

/// Facts of one chunk (offline rules, or an LLM).
#[async_trait]
pub trait Extractor: Send + Sync + 'static {
    async fn extract(&self, title: &str, chunk: &StoredChunk) -> Result<Vec<FactDraft>, String>;
}

/// A failure injected at a named phase (tests and chaos drills).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The phase returns an error (retried).
    Fail(String),
    /// The phase panics (the actor dies).
    Panic,
    /// The phase stops making progress (the supervisor kills it when it goes stale).
    Hang,
}

/// Decides whether to inject a fault when `phase` of generation `attempt` starts.
pub trait Faults: Send + Sync + 'static {
    fn at(&self, document: Uuid, phase: Phase, attempt: u32) -> Option<Fault>;
}

/// How a generation ended, for an [`Observer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Completed,
    /// Failed, and another generation runs after a backoff.
    Retried,
    /// Failed for good.
    Failed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Retried => "retried",
            Outcome::Failed => "failed",
        }
    }
}

/// Why a generation failed (a bounded set: metrics label by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureReason {
    /// A phase returned an error worth retrying (storage, the model, a worker that died).
    Transient,
    /// A phase refused the document (malformed, over a limit): never retried.
    Permanent,
    /// No progress for `stale_after`: the supervisor killed it.
    Stale,
    /// Killed on request (chaos drills).
    Killed,
    /// It panicked or stopped without an outcome.
    Crashed,
    /// Resumed after as many attempts as allowed, each cut short by a stop of the server.
    Interrupted,
}

impl FailureReason {
    pub const ALL: [FailureReason; 6] = [
        FailureReason::Transient,
        FailureReason::Permanent,
        FailureReason::Stale,
        FailureReason::Killed,
        FailureReason::Crashed,
        FailureReason::Interrupted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureReason::Transient => "transient",
            FailureReason::Permanent => "permanent",
            FailureReason::Stale => "stale",
            FailureReason::Killed => "killed",
            FailureReason::Crashed => "crashed",
            FailureReason::Interrupted => "interrupted",
        }
    }
}

/// What the pipeline reports as it goes (the server's metrics).
pub trait Observer: Send + Sync + 'static {
    /// A phase of a generation ran to its end, successfully, in `elapsed`.
    fn phase_done(&self, phase: Phase, elapsed: Duration);
    /// A generation ended (or, for `Interrupted`, was refused at resumption); `phase` is where
    /// it stopped (`None`: it never ran), `reason` why it failed.
    fn generation_ended(
        &self,
        outcome: Outcome,
        phase: Option<Phase>,
        reason: Option<FailureReason>,
    );
}

/// What the pipeline works with.
#[derive(Clone)]
pub struct Engines {
    pub store: Arc<dyn DocumentStore>,
    pub decoder: Arc<dyn Decoder>,
    pub chunker: Arc<dyn Chunker>,
    pub embedder: Arc<dyn Embedder>,
    pub extractor: Arc<dyn Extractor>,
    pub faults: Option<Arc<dyn Faults>>,
    pub observer: Option<Arc<dyn Observer>>,
}

/// Tuning of the pipeline.
#[derive(Debug, Clone)]
pub struct PipelineConfig {
    /// Documents processed at once, all workspaces together.
    pub max_documents: usize,
    /// Documents of one workspace processed at once while another workspace has documents
    /// waiting (see the supervisor's queue): one tenant's uploads cannot hold every slot.
    pub max_documents_per_workspace: usize,
    /// Generations per document before it is `failed`.
    pub max_attempts: u32,
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    /// A generation that records no progress for this long is killed.
    pub stale_after: Duration,
    /// How often the supervisor checks for stale generations.
    pub check_every: Duration,
    /// Progress is persisted at most this often per document (phase changes always are).
    pub persist_every: Duration,
    /// Chunks embedded per batch.
    pub embed_batch: usize,
    /// Chunking work running at once, all documents together. (Parsing and OCR run in the
    /// decoder's workers, at most one per running document; embedding is bounded by the
    /// embedder's own batcher, extraction by `max_documents`.)
    pub max_per_phase: usize,
    /// Images recognised per decoder call (progress is recorded after each call).
    pub ocr_batch: usize,
    /// Bytes of text a document may hand to chunking (parsed and recognised together).
    pub max_text_bytes: usize,
    /// Chunks a document may make.
    pub max_chunks: usize,
    /// Facts kept from one document; extraction stops there (the document still completes).
    pub max_facts: usize,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            max_documents: 3,
            max_documents_per_workspace: 2,
            max_attempts: 4,
            backoff_base: Duration::from_secs(1),
            backoff_cap: Duration::from_secs(60),
            stale_after: Duration::from_secs(120),
            check_every: Duration::from_secs(5),
            persist_every: Duration::from_secs(1),
            embed_batch: 16,
            max_per_phase: 1,
            ocr_batch: 8,
            max_text_bytes: 10 * 1024 * 1024,
            max_chunks: 20_000,
            max_facts: 50_000,
        }
    }
}

/// The bound on in-process blocking work (chunking), shared by every document.
#[derive(Debug, Clone)]
pub struct PhaseSlots {
    pub chunk: Arc<tokio::sync::Semaphore>,
}

impl PhaseSlots {
    pub fn new(per_phase: usize) -> Self {
        PhaseSlots {
            chunk: Arc::new(tokio::sync::Semaphore::new(per_phase.max(1))),
        }
    }
}

/// Why a generation ended without finishing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PhaseError {
    /// Retrying cannot help (a corrupt, encrypted, empty or oversized file): `failed` at once.
    #[error("{0}")]
    Permanent(String),
    /// Retried with backoff.
    #[error("{0}")]
    Transient(String),
}

/// Merges OCR text into the parsed sections at the images' positions (page order kept).
pub fn merge_ocr(parsed: &Parsed, recognized: &[(usize, String, String)]) -> Vec<Section> {
    let mut out = Vec::with_capacity(parsed.sections.len() + recognized.len());
    let mut pending = recognized.iter().peekable();
    for (at, section) in parsed.sections.iter().enumerate() {
        while let Some((position, path, text)) = pending.peek() {
            if *position > at {
                break;
            }
            push_text(&mut out, path, text);
            pending.next();
        }
        out.push(section.clone());
    }
    for (_, path, text) in pending {
        push_text(&mut out, path, text);
    }
    out
}

fn push_text(out: &mut Vec<Section>, path: &str, text: &str) {
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    match out.last_mut() {
        // Two images of one page: one section.
        Some(last) if last.path == path && !path.is_empty() => {
            last.text.push_str("\n\n");
            last.text.push_str(text);
        }
        _ => out.push(Section {
            path: path.to_string(),
            text: text.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remaining_phases_follow_the_last_done() {
        assert_eq!(Phase::remaining(None).count(), 5);
        assert_eq!(
            Phase::remaining(Some(Phase::Chunk)).collect::<Vec<_>>(),
            vec![Phase::Embed, Phase::Extract]
        );
        assert_eq!(Phase::remaining(Some(Phase::Extract)).count(), 0);
    }

    #[test]
    fn names_round_trip() {
        for phase in Phase::ALL {
            assert_eq!(Phase::parse(phase.as_str()), Some(phase));
        }
        for status in Status::ALL {
            assert_eq!(Status::parse(status.as_str()), Some(status));
        }
        assert!(Status::Cancelled.is_terminal() && !Status::Retrying.is_terminal());
    }

    #[test]
    fn ocr_text_lands_at_its_page() {
        let parsed = Parsed {
            sections: vec![
                Section {
                    path: "Page 1".into(),
                    text: "one".into(),
                },
                Section {
                    path: "Page 3".into(),
                    text: "three".into(),
                },
            ],
            images: vec![],
            pages: 3,
        };
        let merged = merge_ocr(
            &parsed,
            &[
                (1, "Page 2".into(), "two a".into()),
                (1, "Page 2".into(), "two b".into()),
                (2, "Page 4".into(), "four".into()),
                (2, "Page 5".into(), "  ".into()),
            ],
        );
        let paths: Vec<_> = merged.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(paths, vec!["Page 1", "Page 2", "Page 3", "Page 4"]);
        assert_eq!(merged[1].text, "two a\n\ntwo b");
    }
}
