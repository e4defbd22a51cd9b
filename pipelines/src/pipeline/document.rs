//! One generation of one document: walks the phases that are not committed yet, records
//! progress, and leaves its outcome in the shared slot before it stops. It never writes a
//! terminal status: the supervisor does, when it sees the generation end.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use uuid::Uuid;

use super::progress::{persist_due, ProgressCell};
use super::{
    merge_ocr, ChunkVectors, DocumentTask, EmbeddedFact, Engines, Fault, Phase, PhaseError,
    PhaseSlots, PipelineConfig, Progress, StoreError,
};
use crate::model::Parsed;

/// What a generation shares with its supervisor.
#[derive(Debug, Default)]
pub struct Shared {
    pub progress: ProgressCell,
    /// Set just before the generation stops on its own.
    pub outcome: Mutex<Option<Result<(), PhaseError>>>,
}

pub struct DocumentArgs {
    pub id: Uuid,
    /// 1 for the first generation.
    pub attempt: u32,
    pub engines: Engines,
    pub config: Arc<PipelineConfig>,
    /// Shared by every document: bounds the in-process blocking work (chunking).
    pub slots: PhaseSlots,
    pub shared: Arc<Shared>,
}

/// Fact texts embedded in one model call, at least (unless the document has fewer): enough
/// for the model's batch throughput (the local model encodes a call's passes side by side, a
/// pass a core), few enough that a group's facts are saved soon.
const FACT_BATCH: usize = 128;

/// Fact text embedded in one model call, at most, in bytes (a longer fact goes alone): about
/// 4,096 tokens of English at about 4 bytes each, eight of the local model's passes, so that
/// progress is recorded after every call, even for long facts (table rows) on a loaded
/// machine, while 128 sentences of ordinary length still share one call.
const FACT_CALL_BYTES: usize = 16 * 1024;

/// Consecutive slices of texts (given by their byte lengths) for one model call each: at most
/// [`FACT_BATCH`] texts and [`FACT_CALL_BYTES`] bytes, a longer text alone.
fn call_slices(lengths: &[usize]) -> Vec<Range<usize>> {
    let mut slices = Vec::new();
    let mut start = 0;
    while start < lengths.len() {
        let mut end = start + 1;
        let mut bytes = lengths[start];
        while end < lengths.len()
            && end - start < FACT_BATCH
            && bytes + lengths[end] <= FACT_CALL_BYTES
        {
            bytes += lengths[end];
            end += 1;
        }
        slices.push(start..end);
        start = end;
    }
    slices
}

pub struct DocumentPipeline;

pub struct DocumentState {
    args: DocumentArgs,
    last_phase: Option<Phase>,
    last_persist: Option<Instant>,
}

pub enum DocumentMsg {
    /// Run the remaining phases (sent to itself once, at start).
    Run,
}

impl From<StoreError> for PhaseError {
    fn from(error: StoreError) -> Self {
        PhaseError::Transient(format!("storage: {error}"))
    }
}

/// A chunk's own vector when it is read in pieces: the mean of its pieces' vectors, scaled to
/// unit length (as the model's own vectors are). It finds the chunk among the nearest
/// neighbours; the chunk is then scored by its best piece. Empty for no pieces; a zero mean
/// stays zero.
fn piece_mean(pieces: &[Vec<f32>]) -> Vec<f32> {
    let Some(first) = pieces.first() else {
        return Vec::new();
    };
    let mut mean = vec![0.0f32; first.len()];
    for piece in pieces {
        for (total, x) in mean.iter_mut().zip(piece) {
            *total += x;
        }
    }
    let norm = mean.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in &mut mean {
            *x /= norm;
        }
    }
    mean
}

/// The text a document hands to chunking is bounded, whatever its format: a refusal, since
/// the same bytes give the same text on every attempt.
fn check_text(lengths: impl Iterator<Item = usize>, limit: usize) -> Result<(), PhaseError> {
    let bytes: usize = lengths.sum();
    if bytes > limit {
        return Err(PhaseError::Permanent(format!(
            "the document holds {} of text, more than the limit of {} per document",
            megabytes(bytes),
            megabytes(limit)
        )));
    }
    Ok(())
}

/// `12.5 MB`, `10 MB`: sizes in messages.
fn megabytes(bytes: usize) -> String {
    let mb = bytes as f64 / (1024.0 * 1024.0);
    if (mb - mb.round()).abs() < 0.05 {
        format!("{} MB", mb.round() as u64)
    } else {
        format!("{mb:.1} MB")
    }
}

impl DocumentState {
    /// Records progress in the shared cell, and persists it when due.
    async fn record(&mut self, phase: Phase, processed: u32, total: u32) -> Result<(), PhaseError> {
        self.args.shared.progress.record(phase, processed, total);
        // A phase's start and its end are always written; the steps between, when due.
        let changed = self.last_phase != Some(phase) || (total > 0 && processed >= total);
        if persist_due(
            changed,
            self.last_persist.map(|at| at.elapsed()),
            self.args.config.persist_every,
        ) {
            self.args
                .engines
                .store
                .record_progress(
                    self.args.id,
                    Progress {
                        phase,
                        processed,
                        total,
                    },
                )
                .await?;
            self.last_phase = Some(phase);
            self.last_persist = Some(Instant::now());
        }
        Ok(())
    }

    /// Runs `work` on a blocking thread once a shared slot is free. The slot is held by the
    /// thread, so a killed generation's leftover work still counts against the bound.
    async fn blocking<T: Send + 'static>(
        &self,
        slot: &Arc<tokio::sync::Semaphore>,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, PhaseError> {
        let progress = &self.args.shared.progress;
        progress.set_waiting(true);
        let permit = slot.clone().acquire_owned().await;
        progress.set_waiting(false);
        let permit =
            permit.map_err(|_| PhaseError::Transient("the pipeline is shutting down".into()))?;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            work()
        })
        .await
        .map_err(|error| PhaseError::Transient(format!("a worker thread failed: {error}")))
    }

    async fn inject(&self, phase: Phase) -> Result<(), PhaseError> {
        let Some(faults) = &self.args.engines.faults else {
            return Ok(());
        };
        match faults.at(self.args.id, phase, self.args.attempt) {
            None => Ok(()),
            Some(Fault::Fail(message)) => Err(PhaseError::Transient(message)),
            Some(Fault::Panic) => panic!("injected panic in the {} phase", phase.as_str()),
            Some(Fault::Hang) => {
                std::future::pending::<()>().await;
                Ok(())
            }
        }
    }

    async fn run(&mut self) -> Result<(), PhaseError> {
        let store = self.args.engines.store.clone();
        let task = store.load(self.args.id).await?;
        let mut parsed: Option<(Parsed, Vec<u8>)> = None;
        for phase in Phase::remaining(task.done) {
            self.record(phase, 0, 0).await?;
            self.inject(phase).await?;
            let started = Instant::now();
            match phase {
                Phase::Parse => parsed = Some(self.parse(&task).await?),
                Phase::Ocr => self.ocr(&task, parsed.take()).await?,
                Phase::Chunk => self.chunk(&task).await?,
                Phase::Embed => self.embed(&task).await?,
                Phase::Extract => self.extract(&task).await?,
            }
            if let Some(observer) = &self.args.engines.observer {
                observer.phase_done(phase, started.elapsed());
            }
        }
        Ok(())
    }

    /// Runs a decoder call: bounded in time by the decoder itself (its workers have a
    /// deadline), so the wait is not silence. Like a wait for a slot, it does not go stale.
    async fn decoding<T>(&self, call: impl std::future::Future<Output = T>) -> T {
        let progress = &self.args.shared.progress;
        progress.set_waiting(true);
        let out = call.await;
        progress.set_waiting(false);
        out
    }

    async fn parse_bytes(&self, task: &DocumentTask) -> Result<(Parsed, Vec<u8>), PhaseError> {
        let raw = self.args.engines.store.raw(self.args.id).await?;
        let decoder = self.args.engines.decoder.clone();
        let parsed = self.decoding(decoder.parse(task.kind, &raw)).await?;
        check_text(
            parsed.sections.iter().map(|s| s.text.len()),
            self.args.config.max_text_bytes,
        )?;
        Ok((parsed, raw))
    }

    async fn parse(&mut self, task: &DocumentTask) -> Result<(Parsed, Vec<u8>), PhaseError> {
        let (parsed, raw) = self.parse_bytes(task).await?;
        self.args
            .engines
            .store
            .save_sections(self.args.id, Phase::Parse, &parsed.sections)
            .await?;
        self.record(Phase::Parse, 1, 1).await?;
        Ok((parsed, raw))
    }

    async fn ocr(
        &mut self,
        task: &DocumentTask,
        parsed: Option<(Parsed, Vec<u8>)>,
    ) -> Result<(), PhaseError> {
        let store = self.args.engines.store.clone();
        // A respawn after the parse phase parses again for the images' places (parsing is
        // cheap next to OCR, and keeps images out of the database).
        let (parsed, raw) = match parsed {
            Some(parsed) => parsed,
            None => self.parse_bytes(task).await?,
        };
        if parsed.images.is_empty() {
            return Ok(store.finish_phase(self.args.id, Phase::Ocr).await?);
        }
        let total = parsed.images.len();
        let mut recognized = Vec::with_capacity(total);
        let mut failures = Vec::new();
        let batch = self.args.config.ocr_batch.max(1);
        for start in (0..total).step_by(batch) {
            let range = start..(start + batch).min(total);
            self.record(Phase::Ocr, start as u32, total as u32).await?;
            let decoder = self.args.engines.decoder.clone();
            let texts = self
                .decoding(decoder.ocr(task.kind, &raw, range.clone()))
                .await?;
            if texts.len() != range.len() {
                return Err(PhaseError::Transient(format!(
                    "ocr: {} answers for {} images",
                    texts.len(),
                    range.len()
                )));
            }
            for (image, text) in parsed.images[range].iter().zip(texts) {
                match text {
                    Ok(text) => recognized.push((image.position, image.path.clone(), text)),
                    Err(error) => {
                        tracing::warn!(document_id = %self.args.id, path = ?image.path, %error, "ocr failed on an image");
                        failures.push(error);
                    }
                }
            }
        }
        self.record(Phase::Ocr, total as u32, total as u32).await?;
        let sections = merge_ocr(&parsed, &recognized);
        if sections.iter().all(|s| s.text.trim().is_empty()) {
            return Err(PhaseError::Permanent(match failures.first() {
                Some(error) => format!("ocr could not read the document: {error}"),
                None => "no text found in the document, even by ocr".to_string(),
            }));
        }
        check_text(
            sections.iter().map(|s| s.text.len()),
            self.args.config.max_text_bytes,
        )?;
        Ok(store
            .save_sections(self.args.id, Phase::Ocr, &sections)
            .await?)
    }

    async fn chunk(&mut self, task: &DocumentTask) -> Result<(), PhaseError> {
        let store = self.args.engines.store.clone();
        let sections = store.sections(self.args.id).await?;
        let chunker = self.args.engines.chunker.clone();
        let title = task.title.clone();
        let chunks = self
            .blocking(&self.args.slots.chunk, move || {
                chunker.chunk(&title, &sections)
            })
            .await?;
        if chunks.is_empty() {
            return Err(PhaseError::Permanent(
                "no text found in the document".to_string(),
            ));
        }
        let max_chunks = self.args.config.max_chunks.max(1);
        if chunks.len() > max_chunks {
            return Err(PhaseError::Permanent(format!(
                "the document makes {} chunks, more than the limit of {max_chunks} chunks per document",
                chunks.len()
            )));
        }
        store.save_chunks(self.args.id, &chunks).await?;
        let total = chunks.len() as u32;
        self.record(Phase::Chunk, total, total).await
    }

    async fn embed(&mut self, task: &DocumentTask) -> Result<(), PhaseError> {
        let store = self.args.engines.store.clone();
        let chunks = store.chunks_to_embed(self.args.id).await?;
        let total = chunks.len() as u32;
        let mut done = 0u32;
        for batch in chunks.chunks(self.args.config.embed_batch.max(1)) {
            self.record(Phase::Embed, done, total).await?;
            // A chunk longer than the model reads best is embedded piece by piece only, its own
            // vector the mean of its pieces' (see `piece_mean`); a shorter chunk is embedded
            // whole. One model call for all of the batch's texts.
            let pieces: Vec<Vec<String>> = batch
                .iter()
                .map(|c| self.args.engines.chunker.pieces(&task.title, c))
                .collect();
            let mut texts = Vec::new();
            for (chunk, pieces) in batch.iter().zip(&pieces) {
                if pieces.is_empty() {
                    texts.push(chunk.contextual_content.clone());
                } else {
                    texts.extend(pieces.iter().cloned());
                }
            }
            let expected = texts.len();
            let vectors = self
                .args
                .engines
                .embedder
                .embed(texts)
                .await
                .map_err(|e| PhaseError::Transient(format!("embedding: {e}")))?;
            if vectors.len() != expected {
                return Err(PhaseError::Transient(format!(
                    "embedding: {} vectors for {expected} texts",
                    vectors.len(),
                )));
            }
            let mut vectors = vectors.into_iter();
            let mut out = Vec::with_capacity(batch.len());
            for (chunk, pieces) in batch.iter().zip(&pieces) {
                out.push(if pieces.is_empty() {
                    ChunkVectors {
                        chunk: chunk.id,
                        vector: vectors.next().unwrap_or_default(),
                        pieces: Vec::new(),
                    }
                } else {
                    let pieces: Vec<Vec<f32>> = vectors.by_ref().take(pieces.len()).collect();
                    ChunkVectors {
                        chunk: chunk.id,
                        vector: piece_mean(&pieces),
                        pieces,
                    }
                });
            }
            store.save_chunk_vectors(self.args.id, &out).await?;
            done += batch.len() as u32;
        }
        self.record(Phase::Embed, done, total).await?;
        Ok(store.finish_phase(self.args.id, Phase::Embed).await?)
    }

    async fn extract(&mut self, task: &DocumentTask) -> Result<(), PhaseError> {
        let store = self.args.engines.store.clone();
        let chunks = store.chunks_to_extract(self.args.id).await?;
        let total = chunks.len() as u32;
        // Facts are embedded for several chunks at once (the model's throughput grows with the
        // batch), and a fact text met before in this generation (chunk overlap, repeated
        // boilerplate) reuses its vector instead of being embedded again.
        let mut known: HashMap<String, Vec<f32>> = HashMap::new();
        let mut saved = 0u32;
        let mut kept = 0usize;
        let mut capped = false;
        let mut next = 0usize;
        while next < chunks.len() {
            let mut group = Vec::new();
            let mut waiting = 0usize;
            while next < chunks.len() && (group.is_empty() || waiting < FACT_BATCH) {
                let chunk = &chunks[next];
                next += 1;
                // Extraction of each chunk is progress, whatever the counts say.
                self.args.shared.progress.beat();
                let mut facts = self
                    .args
                    .engines
                    .extractor
                    .extract(&task.title, chunk)
                    .await
                    .map_err(|e| PhaseError::Transient(format!("extraction: {e}")))?;
                // Facts per document are bounded: past the limit, the chunks are still
                // searchable, their facts are not kept (counted per generation).
                let room = self.args.config.max_facts.saturating_sub(kept);
                if facts.len() > room {
                    if !capped {
                        capped = true;
                        tracing::warn!(document_id = %self.args.id, limit = self.args.config.max_facts, "facts per document reached their limit; later facts are not kept");
                    }
                    facts.truncate(room);
                }
                kept += facts.len();
                waiting += facts
                    .iter()
                    .filter(|f| !known.contains_key(&f.content))
                    .count();
                group.push((chunk, facts));
            }
            let mut texts: Vec<String> = Vec::new();
            let mut queued: HashSet<&str> = HashSet::new();
            for (_, facts) in &group {
                for fact in facts {
                    if !known.contains_key(&fact.content) && queued.insert(&fact.content) {
                        texts.push(fact.content.clone());
                    }
                }
            }
            let lengths: Vec<usize> = texts.iter().map(String::len).collect();
            for slice in call_slices(&lengths) {
                let part: Vec<String> = texts.drain(..slice.len()).collect();
                let vectors = self
                    .args
                    .engines
                    .embedder
                    .embed(part.clone())
                    .await
                    .map_err(|e| PhaseError::Transient(format!("embedding: {e}")))?;
                if vectors.len() != part.len() {
                    return Err(PhaseError::Transient(format!(
                        "embedding: {} vectors for {} facts",
                        vectors.len(),
                        part.len()
                    )));
                }
                known.extend(part.into_iter().zip(vectors));
                // A model call is progress: a group of long facts on a loaded machine must
                // not look stalled.
                self.args.shared.progress.beat();
            }
            for (chunk, facts) in group {
                self.record(Phase::Extract, saved, total).await?;
                let embedded = facts
                    .into_iter()
                    .map(|fact| match known.get(&fact.content) {
                        Some(vector) => Ok(EmbeddedFact {
                            vector: vector.clone(),
                            fact,
                        }),
                        None => Err(PhaseError::Transient(
                            "embedding: a fact was left without a vector".to_string(),
                        )),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                store.save_facts(self.args.id, chunk, &embedded).await?;
                saved += 1;
            }
        }
        self.record(Phase::Extract, total, total).await?;
        Ok(store.finish_phase(self.args.id, Phase::Extract).await?)
    }
}

impl Actor for DocumentPipeline {
    type Msg = DocumentMsg;
    type State = DocumentState;
    type Arguments = DocumentArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: DocumentArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        args.shared.progress.beat();
        myself.cast(DocumentMsg::Run)?;
        Ok(DocumentState {
            args,
            last_phase: None,
            last_persist: None,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            DocumentMsg::Run => {
                let outcome = state.run().await;
                if let Ok(mut slot) = state.args.shared.outcome.lock() {
                    *slot = Some(outcome);
                }
                myself.stop(None);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fact_calls_are_cut_by_count_and_by_bytes() {
        assert!(call_slices(&[]).is_empty());
        // Sentences of ordinary length: 128 a call.
        assert_eq!(call_slices(&[100; 300]), vec![0..128, 128..256, 256..300]);
        // Long rows: as many as fit in the bytes, and one longer than the budget alone.
        assert_eq!(
            call_slices(&[6_000, 6_000, 6_000, 20_000, 100]),
            vec![0..2, 2..3, 3..4, 4..5]
        );
        // Every text once, in order.
        let lengths: Vec<usize> = (0..500).map(|i| 1 + (i * 7_919) % 9_000).collect();
        let slices = call_slices(&lengths);
        let mut next = 0;
        for slice in &slices {
            assert_eq!(slice.start, next);
            let bytes: usize = lengths[slice.clone()].iter().sum();
            assert!(slice.len() == 1 || bytes <= FACT_CALL_BYTES);
            next = slice.end;
        }
        assert_eq!(next, lengths.len());
    }

    #[test]
    fn a_chunk_read_in_pieces_keeps_their_unit_mean_as_its_own_vector() {
        assert!(piece_mean(&[]).is_empty());
        // One piece: itself, at unit length.
        assert_eq!(piece_mean(&[vec![3.0, 4.0]]), vec![0.6, 0.8]);
        // Two orthogonal unit pieces: the unit vector between them.
        let mean = piece_mean(&[vec![1.0, 0.0], vec![0.0, 1.0]]);
        let half = std::f32::consts::FRAC_1_SQRT_2;
        assert!((mean[0] - half).abs() < 1e-6 && (mean[1] - half).abs() < 1e-6);
        // Opposite pieces cancel: a zero vector, not NaN.
        assert_eq!(
            piece_mean(&[vec![1.0, 0.0], vec![-1.0, 0.0]]),
            vec![0.0, 0.0]
        );
    }
}
