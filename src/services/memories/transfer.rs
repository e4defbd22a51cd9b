//! Import and export: memories in and out as JSON lines, so that nobody is locked in.
//!
//! Export writes every live memory of a workspace (every version of every chain, oldest
//! first) as the full memory record. Import reads one memory per line; only `content` is
//! required, and it accepts what export writes: a line whose `supersedesId` names a memory
//! imported earlier in the same file becomes that memory's next version, so chains survive
//! the round trip (ids are new). Every line goes through the save path (exact and near
//! dedup, automatic supersession, category inference); embeddings are computed in batches.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use chrono::{DateTime, Utc};
use memvault_actors::{Admission, SavePermit};
use rayon::prelude::*;
use serde::Deserialize;
use uuid::Uuid;

use super::{
    embed_error, millis, neighbour_filter, same_voice, Draft, MemoryRecord, MemoryService, NewSave,
    Pending, SaveFields, SaveStatus, Settled, SAVE_NEIGHBOURS,
};
use crate::error::{Error, Result};
use crate::model::accounts::Role;
use crate::model::{content_hash, Embedded, Lane, Source};
use crate::search::NearestAhead;
use crate::services::{Caller, RateSlot};
use crate::text::supersession::UpdateJudgement;

/// Lines embedded together.
pub const IMPORT_BATCH: usize = 256;
/// Memories read per page on export.
const EXPORT_PAGE: i64 = 1_000;

/// One imported line. Unknown fields are ignored (an exported record has more).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImportLine {
    id: Option<Uuid>,
    content: Option<String>,
    category: Option<String>,
    scope: Option<String>,
    project: Option<String>,
    valid_from: Option<String>,
    valid_until: Option<String>,
    created_at: Option<DateTime<Utc>>,
    source: Option<Source>,
    supersedes_id: Option<Uuid>,
    infer: Option<bool>,
    thread: Option<String>,
    speaker: Option<String>,
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportReport {
    pub lines: usize,
    pub created: usize,
    pub duplicates: usize,
    pub superseded: usize,
    /// Lines refused: `(line number, reason)`, at most [`MAX_REPORTED_ERRORS`] kept.
    pub errors: Vec<(usize, String)>,
    pub failed: usize,
}

pub const MAX_REPORTED_ERRORS: usize = 100;

impl ImportReport {
    fn count(&mut self, status: SaveStatus) {
        match status {
            SaveStatus::Created => self.created += 1,
            SaveStatus::Duplicate => self.duplicates += 1,
            SaveStatus::Superseded => self.superseded += 1,
        }
    }

    fn refuse(&mut self, line: usize, reason: String) {
        self.failed += 1;
        if self.errors.len() < MAX_REPORTED_ERRORS {
            self.errors.push((line, reason));
        }
    }
}

/// A line whose new memory waits for its commit.
struct Waiting {
    number: usize,
    permit: Option<SavePermit>,
}

/// The lines of a batch being saved, and the import's running state.
struct Lines<'a> {
    pending: Pending,
    waiting: HashMap<Uuid, Waiting>,
    /// Exported id -> the id it was imported as.
    imported: &'a mut HashMap<Uuid, Uuid>,
    report: &'a mut ImportReport,
}

impl Lines<'_> {
    /// Counts the lines whose memories were committed since the last call.
    fn settle(&mut self) {
        for (id, outcome) in self.pending.take_settled() {
            let Some(Waiting { number, permit }) = self.waiting.remove(&id) else {
                continue;
            };
            if let Some(permit) = permit {
                permit.finish(matches!(outcome, Settled::Created));
            }
            match outcome {
                Settled::Created => self.report.count(SaveStatus::Created),
                // A concurrent save stored the same content first (rare): the lines that
                // named this one name that memory.
                Settled::Duplicate(existing) => {
                    self.report.count(SaveStatus::Duplicate);
                    for target in self.imported.values_mut().filter(|t| **t == id) {
                        *target = existing;
                    }
                }
                Settled::Lost => self.report.refuse(
                    number,
                    "a concurrent change to this memory won; retry".to_string(),
                ),
            }
        }
    }
}

/// `(line number, exported id, exported id it supersedes, draft)`.
type Line = (usize, Option<Uuid>, Option<Uuid>, Draft);

/// A line of a batch (its index), its text, and the texts of the memories it may update.
type ToJudge = (usize, String, Vec<(Uuid, String)>);

/// What [`MemoryService::search_ahead`] found: the lines of a batch searched (their indices)
/// and the nearest memories of each.
#[derive(Default)]
struct Searched {
    wanted: Vec<usize>,
    found: Vec<Option<NearestAhead>>,
    took: std::time::Duration,
}

/// A batch of lines parsed and validated.
struct Prepared {
    lines: usize,
    /// `(line number, reason)` of the lines refused while parsing, in order.
    refused: Vec<(usize, String)>,
    drafts: Vec<Line>,
}

impl MemoryService {
    /// Imports JSON lines into a workspace. `progress` is called with the lines done so far.
    ///
    /// A batch's look-ahead searches on every core first; then the next batch is embedded while
    /// the rest of the look-ahead and the current batch's lines run beside it (on one core,
    /// mostly), which leaves a core the model can use. Both finish before `progress` is
    /// called, so nothing of the import runs while it does.
    pub async fn import(
        &self,
        workspace_id: Uuid,
        mut input: impl BufRead,
        mut progress: impl FnMut(usize),
    ) -> Result<ImportReport> {
        self.store
            .workspace(workspace_id)
            .await?
            .ok_or_else(|| Error::NotFound(format!("workspace {workspace_id} not found")))?;
        let caller = Caller {
            workspace_id,
            role: Role::Owner,
            user_id: "import".to_string(),
            rate: RateSlot::default(),
            source: Source::Integration,
        };
        let mut report = ImportReport::default();
        // Exported id -> the id it was imported as.
        let mut imported: HashMap<Uuid, Uuid> = HashMap::new();
        let mut number = 0;
        let Some(first) = read_batch(&mut input, &mut number)? else {
            return Ok(report);
        };
        let mut current = self.prepare_batch(&caller, first);
        let mut vectors = self.embed_batch(&current).await?;
        loop {
            // A line that cannot be read stops the import once the batch before it is saved.
            let next = read_batch(&mut input, &mut number)
                .map(|batch| batch.map(|batch| self.prepare_batch(&caller, batch)));
            let upcoming = async {
                match &next {
                    Ok(Some(batch)) => Some(self.embed_batch(batch).await),
                    _ => None,
                }
            };
            // The look-ahead's searches run on every core before the next batch goes into the
            // model: started beside it, their parallel work queued on rayon's pool behind the
            // model's passes and waited for the whole batch (docs/BENCHMARKS.md). Its reads
            // and verdicts, mostly waits on the database and one thread's work, run beside it.
            let searched = self.search_ahead(&current.drafts, &vectors).await?;
            let beside = next.as_ref().is_ok_and(Option::is_some);
            let (saved, next_vectors) = tokio::join!(
                async {
                    let ahead = self
                        .read_ahead(&mut current.drafts, searched, beside)
                        .await?;
                    self.import_batch(&caller, current, vectors, ahead, &mut imported, &mut report)
                        .await
                },
                upcoming
            );
            saved?;
            progress(report.lines);
            match (next?, next_vectors) {
                (Some(batch), Some(embedded)) => (current, vectors) = (batch, embedded?),
                _ => return Ok(report),
            }
        }
    }

    /// The vectors of a batch's texts, in one call.
    async fn embed_batch(&self, batch: &Prepared) -> Result<Vec<Vec<f32>>> {
        let texts = batch
            .drafts
            .iter()
            .map(|(_, _, _, d)| d.memory.content.clone())
            .collect();
        self.embeddings
            .embed_documents(texts)
            .await
            .map_err(embed_error)
    }

    /// Parses and validates a batch.
    fn prepare_batch(&self, caller: &Caller, lines: Vec<(usize, String)>) -> Prepared {
        let mut refused = Vec::new();
        let mut drafts = Vec::with_capacity(lines.len());
        let count = lines.len();
        for (number, text) in lines {
            let parsed: ImportLine = match serde_json::from_str(&text) {
                Ok(parsed) => parsed,
                Err(e) => {
                    refused.push((number, format!("not a JSON memory: {e}")));
                    continue;
                }
            };
            // `supersedes` names an id of this file; it is resolved when the batch is saved,
            // once the lines before it are.
            let fields = SaveFields {
                content: parsed.content.clone(),
                category: parsed.category.clone(),
                scope: parsed.scope.clone(),
                project: parsed.project.clone(),
                valid_from: parsed.valid_from.clone(),
                valid_until: parsed.valid_until.clone(),
                supersedes: None,
                infer: parsed.infer,
                thread: parsed.thread.clone(),
                speaker: parsed.speaker.clone(),
            };
            let source = parsed.source.unwrap_or(Source::Integration);
            match NewSave::parse(&fields, self.tuning.max_content_chars)
                .map(|save| self.draft(caller, save, source))
            {
                Ok(mut draft) => {
                    if let Some(created_at) = parsed.created_at {
                        draft.memory.created_at = created_at;
                    }
                    draft.flush = false;
                    drafts.push((number, parsed.id, parsed.supersedes_id, draft));
                }
                Err(e) => refused.push((number, e.to_string())),
            }
        }
        Prepared {
            lines: count,
            refused,
            drafts,
        }
    }

    /// Saves an embedded batch line after line, its look-ahead taken (`ahead` is how long it
    /// took, for the log). A `supersedesId` is resolved here, so it may name any line before
    /// it, in this batch or an earlier one.
    async fn import_batch(
        &self,
        caller: &Caller,
        batch: Prepared,
        vectors: Vec<Vec<f32>>,
        ahead: std::time::Duration,
        imported: &mut HashMap<Uuid, Uuid>,
        report: &mut ImportReport,
    ) -> Result<()> {
        report.lines += batch.lines;
        for (number, reason) in batch.refused {
            report.refuse(number, reason);
        }
        let started = std::time::Instant::now();
        let drafts = batch.drafts;
        // New memories are committed together (one log sync for up to `Pending::CAPACITY`);
        // each line's outcome is counted when its memory is committed.
        let mut lines = Lines {
            pending: Pending::default(),
            waiting: HashMap::new(),
            imported,
            report,
        };
        for (line, vector) in drafts.into_iter().zip(vectors) {
            let mut outcome = self.import_line(caller, line, vector, &mut lines).await;
            if outcome.is_ok() && lines.pending.is_full() {
                outcome = self.commit_lines(&mut lines).await;
            }
            if let Err(e) = outcome {
                // The import stops; the lines decided before are kept if they can be (a failed
                // commit takes them out of the indexes again).
                if let Err(commit) = self.commit_lines(&mut lines).await {
                    tracing::warn!(error = %commit, "import stopped before its last lines were stored");
                }
                return Err(e);
            }
        }
        self.commit_lines(&mut lines).await?;
        let saved_at = started.elapsed();
        self.engine.flush().await.map_err(super::search_error)?;
        tracing::debug!(
            lines = batch.lines,
            search_ms = millis(ahead),
            save_ms = millis(saved_at),
            flush_ms = millis(started.elapsed() - saved_at),
            "import batch done"
        );
        Ok(())
    }

    /// The first part of the look-ahead ([`Self::read_ahead`] takes the rest): the nearest
    /// memories of each line of a batch that will look for them (those not naming the memory
    /// they update), on every core, against the lanes as they are before the batch.
    async fn search_ahead(&self, drafts: &[Line], vectors: &[Vec<f32>]) -> Result<Searched> {
        let started = std::time::Instant::now();
        let wanted: Vec<usize> = drafts
            .iter()
            .enumerate()
            .filter(|(_, (_, _, supersedes, draft))| supersedes.is_none() && draft.infer)
            .map(|(index, _)| index)
            .collect();
        let queries: Vec<_> = wanted
            .iter()
            .filter_map(|&index| {
                let draft = &drafts[index].3;
                let vector = vectors.get(index)?.clone();
                Some((draft.lane.clone(), vector, neighbour_filter(&draft.memory)))
            })
            .collect();
        if queries.len() != wanted.len() {
            return Ok(Searched::default());
        }
        let engine = self.engine.clone();
        let found =
            tokio::task::spawn_blocking(move || engine.nearest_ahead(&queries, SAVE_NEIGHBOURS))
                .await
                .map_err(|e| Error::Internal(format!("the neighbour search failed: {e}")))?;
        Ok(Searched {
            wanted,
            found,
            took: started.elapsed(),
        })
    }

    /// What every line of a batch would look up in turn, looked up at once before the lines
    /// are saved: which texts are stored already (one query per lane and project), the nearest
    /// memories [`Self::search_ahead`] found that a rule may read (one query per lane), and
    /// the verdicts of the pairs a line's fact-update check would judge. Each line brings its
    /// nearest up to date when it is saved, and uses what was read only if nothing in its lane
    /// was edited since. `beside_model`: the next batch is being embedded, so the verdicts are
    /// taken on one thread, not queued on rayon's pool behind the model's passes. Returns how
    /// long the whole look-ahead took (for the log).
    async fn read_ahead(
        &self,
        drafts: &mut [Line],
        searched: Searched,
        beside_model: bool,
    ) -> Result<std::time::Duration> {
        let started = std::time::Instant::now();
        let hashes: Vec<String> = drafts
            .iter()
            .map(|(_, _, _, draft)| content_hash(&draft.memory.content_norm()))
            .collect();
        let mut asked: HashMap<(Lane, String), Vec<String>> = HashMap::new();
        for ((_, _, supersedes, draft), hash) in drafts.iter().zip(&hashes) {
            if supersedes.is_none() {
                let key = (draft.lane.clone(), draft.memory.project.clone());
                asked.entry(key).or_default().push(hash.clone());
            }
        }
        let mut stored: HashMap<(Lane, String), HashSet<String>> = HashMap::new();
        for ((lane, project), hashes) in asked {
            let found = self.store.stored_hashes(&lane, &project, &hashes).await?;
            stored.insert((lane, project), found);
        }
        // A text an earlier line of the batch saved (a new version's too, whatever its
        // project) is looked up as before.
        let mut seen = HashSet::new();
        for ((_, _, supersedes, draft), hash) in drafts.iter_mut().zip(hashes) {
            if supersedes.is_some() {
                seen.insert(hash);
                continue;
            }
            let key = (draft.lane.clone(), draft.memory.project.clone());
            let known = stored.get(&key).is_some_and(|found| found.contains(&hash));
            draft.ahead.new_text = !known && seen.insert(hash);
        }
        let stored_at = started.elapsed();

        let Searched {
            wanted,
            found,
            took: nearest_took,
        } = searched;
        // The memories near enough for a rule to read them, read after the search (an edit
        // in between is seen by the line, which then reads them itself).
        let near = self
            .tuning
            .supersede_min_similarity
            .min(self.tuning.dedup_threshold);
        let mut asked: HashMap<Lane, Vec<Uuid>> = HashMap::new();
        for (&index, ahead) in wanted.iter().zip(&found) {
            let Some(ahead) = ahead else { continue };
            let ids = ahead
                .neighbours()
                .iter()
                .filter(|n| n.similarity >= near)
                .map(|n| n.id);
            let lane = drafts[index].3.lane.clone();
            asked.entry(lane).or_default().extend(ids);
        }
        let mut memories = HashMap::new();
        for (lane, mut ids) in asked {
            ids.sort_unstable();
            ids.dedup();
            for memory in self.store.current_memories_by_ids(&lane, &ids).await? {
                memories.insert(memory.id, memory);
            }
        }
        // The pairs a line's fact-update check would judge, judged by an offline judge (an
        // LLM judge is asked at the line, only as far as the check goes).
        let mut pairs: Vec<ToJudge> = Vec::new();
        for (&index, ahead) in wanted.iter().zip(&found) {
            let Some(ahead) = ahead else { continue };
            let memory = &drafts[index].3.memory;
            let olds: Vec<(Uuid, String)> = ahead
                .neighbours()
                .iter()
                .filter(|n| n.similarity >= self.tuning.supersede_min_similarity)
                .filter_map(|n| memories.get(&n.id))
                .filter(|old| {
                    old.project == memory.project && same_voice(&old.speaker, &memory.speaker)
                })
                .map(|old| (old.id, old.content.clone()))
                .collect();
            if !olds.is_empty() {
                pairs.push((index, memory.content.clone(), olds));
            }
        }
        let read_at = started.elapsed();
        let judged = pairs.len();
        let judge = self.judge.clone();
        let verdicts = tokio::task::spawn_blocking(move || {
            let verdicts = |(index, new, olds): ToJudge| {
                let verdicts: HashMap<Uuid, UpdateJudgement> = olds
                    .into_iter()
                    .filter_map(|(id, old)| Some((id, judge.judge_offline(&old, &new)?)))
                    .collect();
                (index, verdicts)
            };
            if beside_model {
                pairs.into_iter().map(verdicts).collect::<Vec<_>>()
            } else {
                pairs.into_par_iter().map(verdicts).collect::<Vec<_>>()
            }
        })
        .await
        .map_err(|e| Error::Internal(format!("judging ahead failed: {e}")))?;
        tracing::debug!(
            lines = drafts.len(),
            nearest_ms = millis(nearest_took),
            stored_ms = millis(stored_at),
            read = memories.len(),
            read_ms = millis(read_at - stored_at),
            judged,
            judge_ms = millis(started.elapsed() - read_at),
            beside_model,
            "import look-ahead done"
        );
        let memories = std::sync::Arc::new(memories);
        for (index, ahead) in wanted.into_iter().zip(found) {
            let looked_up = &mut drafts[index].3.ahead;
            looked_up.nearest = ahead;
            looked_up.memories = memories.clone();
        }
        for (index, verdicts) in verdicts {
            drafts[index].3.ahead.verdicts = verdicts;
        }
        Ok(nearest_took + started.elapsed())
    }

    /// Saves one embedded line; its new memory, if any, joins `lines.pending`. An error is
    /// one that stops the import (a line's own fault is counted in the report).
    async fn import_line(
        &self,
        caller: &Caller,
        (number, old_id, supersedes_id, mut draft): Line,
        vector: Vec<f32>,
        lines: &mut Lines<'_>,
    ) -> Result<()> {
        if supersedes_id.is_some() {
            // The line it names may be pending, or settled as another memory.
            self.commit_lines(lines).await?;
        }
        draft.supersedes = supersedes_id.and_then(|old| lines.imported.get(&old).copied());
        if draft.infer
            && draft.memory.content.chars().count() > self.tuning.long_note_chars
            && draft.supersedes.is_none()
        {
            lines.report.refuse(
                number,
                format!(
                    "content is over {} characters: save long notes through the API",
                    self.tuning.long_note_chars
                ),
            );
            return Ok(());
        }
        draft.memory.embedding = Some(Embedded {
            model: self.embeddings.model().into(),
            vector: vector.into(),
        });
        let permit = if draft.supersedes.is_none() {
            match self.workspaces.reserve_memory(caller.workspace_id).await? {
                Admission::Allowed { permit, .. } => permit,
                Admission::MemoryLimitReached { limit, .. } => {
                    lines
                        .report
                        .refuse(number, Error::MemoryLimit { limit }.to_string());
                    return Ok(());
                }
                Admission::RateLimited { .. } => None,
            }
        } else {
            None
        };
        let outcome = self.save_draft_in(draft, Some(&mut lines.pending)).await;
        lines.settle();
        match outcome {
            Ok(saved) => {
                let id = saved.memory.id;
                if let Some(old_id) = old_id {
                    lines.imported.insert(old_id, id);
                }
                if saved.status == SaveStatus::Created && lines.pending.get(&id).is_some() {
                    lines.waiting.insert(id, Waiting { number, permit });
                } else {
                    if let Some(permit) = permit {
                        permit.finish(saved.status == SaveStatus::Created);
                    }
                    lines.report.count(saved.status);
                }
                Ok(())
            }
            Err(e @ (Error::Storage(_) | Error::Internal(_) | Error::Unavailable(_))) => Err(e),
            Err(e) => {
                lines.report.refuse(number, e.to_string());
                Ok(())
            }
        }
    }

    /// Commits the pending memories and counts their lines.
    async fn commit_lines(&self, lines: &mut Lines<'_>) -> Result<()> {
        let committed = self.commit_pending(Some(&mut lines.pending)).await;
        lines.settle();
        committed
    }

    /// Writes every live memory of a workspace, or of one of its scopes (all versions, oldest
    /// first) as JSON lines; returns how many.
    pub async fn export(
        &self,
        workspace_id: Uuid,
        scope: Option<&str>,
        output: &mut (impl std::io::Write + Send),
    ) -> Result<usize> {
        export(&*self.store, workspace_id, scope, output).await
    }
}

/// The next [`IMPORT_BATCH`] non-blank lines, with their numbers (from 1), or `None` at the
/// end of the input; `number` counts the lines read so far.
fn read_batch(
    input: &mut impl BufRead,
    number: &mut usize,
) -> Result<Option<Vec<(usize, String)>>> {
    let mut batch = Vec::with_capacity(IMPORT_BATCH);
    let mut line = String::new();
    while batch.len() < IMPORT_BATCH {
        line.clear();
        let read = input
            .read_line(&mut line)
            .map_err(|e| Error::BadRequest(format!("cannot read the input: {e}")))?;
        if read == 0 {
            break;
        }
        *number += 1;
        let text = line.strip_suffix('\n').unwrap_or(&line);
        let text = text.strip_suffix('\r').unwrap_or(text);
        if !text.trim().is_empty() {
            batch.push((*number, text.to_string()));
        }
    }
    Ok((!batch.is_empty()).then_some(batch))
}

/// One memory as a line of an export (what `import` reads), appended to `out`.
pub(crate) fn export_line(memory: &crate::model::Memory, out: &mut Vec<u8>) -> Result<()> {
    serde_json::to_writer(&mut *out, &MemoryRecord::from(memory))
        .map_err(|e| Error::Internal(format!("cannot encode a memory: {e}")))?;
    out.push(b'\n');
    Ok(())
}

/// Export needs only the database (the CLI runs it without loading the model).
pub async fn export(
    store: &dyn crate::storage::Store,
    workspace_id: Uuid,
    scope: Option<&str>,
    output: &mut (impl std::io::Write + Send),
) -> Result<usize> {
    store
        .workspace(workspace_id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("workspace {workspace_id} not found")))?;
    let mut after = 0;
    let mut written = 0;
    loop {
        let page = store
            .workspace_memories_page(workspace_id, scope, after, EXPORT_PAGE)
            .await?;
        let Some((last, _)) = page.last() else { break };
        after = *last;
        let mut lines = Vec::new();
        for (_, memory) in &page {
            export_line(memory, &mut lines)?;
            written += 1;
        }
        output
            .write_all(&lines)
            .map_err(|e| Error::Internal(format!("cannot write the export: {e}")))?;
    }
    output
        .flush()
        .map_err(|e| Error::Internal(format!("cannot write the export: {e}")))?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_skip_blank_lines_and_number_every_line_from_one() {
        let mut text = String::from("{\"a\":1}\r\n\n   \n{\"b\":2}\n");
        for n in 0..IMPORT_BATCH {
            text.push_str(&format!("{{\"n\":{n}}}\n"));
        }
        text.push_str("last without a newline");
        let mut input = std::io::Cursor::new(text);
        let mut number = 0;
        let first = read_batch(&mut input, &mut number).unwrap().unwrap();
        assert_eq!(first.len(), IMPORT_BATCH);
        assert_eq!(first[0], (1, "{\"a\":1}".to_string()));
        assert_eq!(first[1], (4, "{\"b\":2}".to_string()));
        assert_eq!(first[2], (5, "{\"n\":0}".to_string()));
        let second = read_batch(&mut input, &mut number).unwrap().unwrap();
        assert_eq!(
            second,
            vec![
                (IMPORT_BATCH + 3, format!("{{\"n\":{}}}", IMPORT_BATCH - 2)),
                (IMPORT_BATCH + 4, format!("{{\"n\":{}}}", IMPORT_BATCH - 1)),
                (IMPORT_BATCH + 5, "last without a newline".to_string()),
            ]
        );
        assert!(read_batch(&mut input, &mut number).unwrap().is_none());
        assert_eq!(number, IMPORT_BATCH + 5);
    }

    #[test]
    fn a_line_that_is_not_utf8_cannot_be_read() {
        let mut input = std::io::Cursor::new(b"{\"a\":1}\n\xff\xfe\n".to_vec());
        let error = read_batch(&mut input, &mut 0).unwrap_err();
        assert!(
            error.to_string().contains("cannot read the input"),
            "{error}"
        );
    }
}
