//! Long notes, the 202 path: a note over `long_note_chars` is persisted as a job and answered
//! at once; the jobs supervisor (`memvault-actors`) runs it, with retries, through
//! [`NoteJobs`]: the note is split into atomic memories (sentence segmentation, the subject
//! carried into sentences that lean on the previous one, filler dropped), and each goes
//! through the same save path as a short memory (dedup, supersession, category inference).
//! Jobs left unfinished by a stop are resumed at start-up.
//!
//! A retried job is idempotent: parts saved by an earlier attempt come back as duplicates.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memvault_actors::{Admission, JobHandler};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Draft, MemoryRecord, MemoryService, NoteAccepted, NoteJob, NotePart, SaveStatus};
use crate::error::{Error, Result};
use crate::model::accounts::Need;
use crate::model::{now, Category, JobRecord, Lane, NewMemory, Source};
use crate::services::{admit, Caller, Principal};
use memvault_actors::EndpointClass;

/// Job states, as stored and shown.
pub const QUEUED: &str = "queued";
pub const RUNNING: &str = "running";
pub const COMPLETED: &str = "completed";
pub const FAILED: &str = "failed";

/// The validated note, as persisted with its job.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NoteRequest {
    content: String,
    category: Option<Category>,
    project: String,
    valid_from: Option<DateTime<Utc>>,
    valid_until: Option<DateTime<Utc>>,
    source: Source,
    /// Jobs persisted before threads existed have none.
    #[serde(default)]
    thread: String,
    /// Jobs persisted before speakers existed have none.
    #[serde(default)]
    speaker: String,
}

impl MemoryService {
    /// Persists a long note as a job and hands it to the jobs supervisor.
    pub(super) async fn accept_note(&self, caller: &Caller, draft: Draft) -> Result<NoteAccepted> {
        let request = NoteRequest {
            content: draft.memory.content,
            category: draft.category_given.then_some(draft.memory.category),
            project: draft.memory.project,
            valid_from: draft.memory.valid_from,
            valid_until: draft.memory.valid_until,
            source: draft.memory.source,
            thread: draft.memory.thread,
            speaker: draft.memory.speaker,
        };
        let at = now();
        let job = JobRecord {
            id: Uuid::now_v7(),
            workspace_id: caller.workspace_id,
            user_id: caller.user_id.clone(),
            scope: draft.lane.scope,
            state: QUEUED.to_string(),
            request: serde_json::to_string(&request)
                .map_err(|e| Error::Internal(format!("cannot encode a note: {e}")))?,
            result: None,
            error: None,
            attempts: 0,
            created_at: at,
            updated_at: at,
            finished_at: None,
        };
        self.store.insert_job(&job).await?;
        self.submit_job(job.id, job.workspace_id);
        Ok(NoteAccepted {
            job_id: job.id,
            chars: request.content.chars().count(),
        })
    }

    pub(crate) fn submit_job(&self, id: Uuid, workspace: Uuid) {
        match self.jobs.get() {
            Some(jobs) => {
                // Stored already: the supervisor's recovery resubmits it once it is back.
                if let Err(e) = jobs.submit(id, workspace) {
                    tracing::warn!(job_id = %id, error = %e, "the jobs supervisor is restarting; the job is picked up when it is back");
                }
            }
            None => {
                tracing::error!(job_id = %id, "no jobs supervisor; the job resumes at the next start")
            }
        }
    }

    /// Hands every unfinished job to the supervisor (start-up).
    pub async fn resume_jobs(&self) -> Result<usize> {
        self.resume_jobs_in(None).await
    }

    /// Like [`MemoryService::resume_jobs`], for the jobs of `only` these workspaces (a cluster
    /// node's own), or of all.
    pub async fn resume_jobs_in(&self, only: Option<&[Uuid]>) -> Result<usize> {
        let mut jobs = self.store.unfinished_jobs().await?;
        if let Some(only) = only {
            jobs.retain(|job| only.contains(&job.workspace_id));
        }
        for job in &jobs {
            self.submit_job(job.id, job.workspace_id);
        }
        Ok(jobs.len())
    }

    /// `GET /api/memories/jobs/{jobId}`.
    pub async fn job(
        &self,
        who: &Principal,
        id: &str,
        workspace_id: Option<Uuid>,
    ) -> Result<NoteJob> {
        let caller = &self.gate.enter(who, workspace_id, Need::Read).await?;
        admit(&self.workspaces, caller, EndpointClass::Read, false).await?;
        let not_found = || Error::NotFound("job not found".to_string());
        let id = Uuid::parse_str(id).map_err(|_| not_found())?;
        let job = self
            .store
            .job(id)
            .await?
            .filter(|job| job.workspace_id == caller.workspace_id)
            .ok_or_else(not_found)?;
        let parts = match &job.result {
            Some(result) => serde_json::from_str(result)
                .map_err(|e| Error::Internal(format!("job {id}: unreadable result: {e}")))?,
            None => Vec::new(),
        };
        Ok(NoteJob { job, parts })
    }

    /// One attempt of a job: split the note, save every part, persist the outcome.
    async fn run_job(&self, id: Uuid, attempt: u32) -> Result<()> {
        let Some(mut job) = self.store.job(id).await? else {
            tracing::warn!(job_id = %id, "job vanished");
            return Ok(());
        };
        if job.finished_at.is_some() {
            return Ok(());
        }
        job.state = RUNNING.to_string();
        job.attempts = i64::from(attempt);
        job.updated_at = now();
        self.store.update_job(&job).await?;

        let request: NoteRequest = serde_json::from_str(&job.request)
            .map_err(|e| Error::Internal(format!("job {id}: unreadable request: {e}")))?;
        let lane = Lane {
            workspace_id: job.workspace_id,
            scope: job.scope.clone(),
        };
        let mut parts = Vec::new();
        for content in crate::text::atomize::atomize(&request.content, self.tuning.long_note_chars)
        {
            let permit = match self.workspaces.reserve_memory(job.workspace_id).await? {
                Admission::Allowed { permit, .. } => permit,
                Admission::MemoryLimitReached { limit, .. } => {
                    parts.push(NotePart {
                        status: None,
                        memory: None,
                        error: Some(Error::MemoryLimit { limit }.to_string()),
                        content,
                    });
                    continue;
                }
                Admission::RateLimited { .. } => None,
            };
            let draft = Draft {
                memory: NewMemory {
                    id: Uuid::now_v7(),
                    workspace_id: job.workspace_id,
                    user_id: job.user_id.clone(),
                    content: content.clone(),
                    source: request.source,
                    category: request.category.unwrap_or(super::DEFAULT_CATEGORY),
                    scope: job.scope.clone(),
                    project: request.project.clone(),
                    valid_from: request.valid_from,
                    valid_until: request.valid_until,
                    created_at: now(),
                    origin_id: Some(job.id),
                    thread: request.thread.clone(),
                    speaker: request.speaker.clone(),
                    embedding: None,
                },
                lane: lane.clone(),
                category_given: request.category.is_some(),
                project_given: true,
                supersedes: None,
                infer: true,
                flush: false,
                ahead: Default::default(),
            };
            let saved = self.save_draft(draft).await?;
            if let Some(permit) = permit {
                permit.finish(saved.status == SaveStatus::Created);
            }
            parts.push(NotePart {
                status: Some(saved.status),
                memory: Some(MemoryRecord::from(&saved.memory)),
                error: None,
                content,
            });
        }
        let at = now();
        job.state = COMPLETED.to_string();
        job.result = Some(
            serde_json::to_string(&parts)
                .map_err(|e| Error::Internal(format!("cannot encode a job result: {e}")))?,
        );
        job.error = None;
        job.updated_at = at;
        job.finished_at = Some(at);
        self.store.update_job(&job).await?;
        tracing::info!(job_id = %id, parts = parts.len(), "note split into memories");
        Ok(())
    }

    async fn fail_job(&self, id: Uuid, attempts: u32, error: String) -> Result<()> {
        let Some(mut job) = self.store.job(id).await? else {
            return Ok(());
        };
        let at = now();
        job.state = FAILED.to_string();
        job.attempts = i64::from(attempts);
        job.error = Some(error);
        job.updated_at = at;
        job.finished_at = Some(at);
        self.store.update_job(&job).await?;
        Ok(())
    }
}

/// The jobs supervisor's view of the memories service.
pub struct NoteJobs(pub MemoryService);

#[async_trait]
impl JobHandler for NoteJobs {
    async fn run(&self, id: Uuid, attempt: u32) -> Result<(), String> {
        self.0.run_job(id, attempt).await.map_err(|e| match e {
            // 5xx details stay in the log; the job records a readable cause.
            Error::Storage(_) | Error::Internal(_) => {
                tracing::error!(job_id = %id, error = %e, "job attempt failed");
                "an internal error interrupted the job (see the server log)".to_string()
            }
            other => other.to_string(),
        })
    }

    async fn give_up(&self, id: Uuid, attempts: u32, error: String) {
        if let Err(e) = self.0.fail_job(id, attempts, error).await {
            tracing::error!(job_id = %id, error = %e, "cannot record a failed job");
        }
    }
}

/// Shared slot for the supervisor, set once at start-up (the supervisor needs the service and
/// the service needs the supervisor).
pub type JobsSlot = Arc<std::sync::OnceLock<memvault_actors::JobQueue>>;
