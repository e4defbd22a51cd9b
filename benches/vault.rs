//! Context Vault benchmark (issue 4): ingestion speed per format, a 100-page text PDF end to
//! end, and SciFact retrieval quality, over real HTTP against memvault started in-process.
//!
//! Run with:
//!
//! ```text
//! cargo bench --bench vault
//! VAULT_PARTS=scifact SCIFACT_LIMIT_DOCS=300 cargo bench --bench vault    # a quick look
//! ```
//!
//! # Data
//!
//! Nothing here is in the repository, and none of it may be copied into it. It is read at run
//! time, relative to the package root (cargo runs benches there):
//!
//! - `../shared/bench/docs/` (`VAULT_DOCS_DIR`): real files of every format (PDF, DOCX, XLSX,
//!   CSV, HTML, TIFF, JPG). When the folder is missing, the formats part says so loudly and is
//!   skipped.
//! - `../shared/bench/scifact/` (`SCIFACT_PATH`): BEIR's SciFact: `corpus.jsonl` (`_id`,
//!   `title`, `text`), `queries.jsonl` (`_id`, `text`) and `qrels/train.tsv` (`query-id`,
//!   `corpus-id`, `score`, tab-separated, one header line). When it is missing, the SciFact
//!   part says so loudly and is skipped.
//!
//! The 100-page PDF is generated here (`memvault_pipelines::fixtures::pdf`: one Helvetica text
//! line per page, a real text layer) from made-up English sentences; no file is written.
//!
//! # What it does
//!
//! memvault starts as in `benches/locomo.rs`: port 0, rate limits off, every plan's memory
//! limit out of reach, log level `warn`, a fresh database (SQLite in a temporary directory, or
//! a fresh PostgreSQL database), one workspace and API key made through `AccountsService`. One
//! small text document is ingested first as a warm-up (not reported). Before each part the
//! bench waits (up to 300 s) until this process is idle, so background index maintenance left
//! by the previous part does not run into the next one.
//!
//! 1. **formats**: every file of the docs folder, one at a time (nothing else is queued), is
//!    uploaded with `POST /api/context-vault/documents/upload` (multipart `file` + `title`), and
//!    `GET /api/context-vault/documents/{id}` is polled every `VAULT_POLL_MS` until the status
//!    is terminal. Per file: format (from the file name), bytes, pages (PDFs only: the page
//!    count of memvault's own PDF parser, read by the bench before the upload), chunks
//!    (`chunkCount`), memories (`extractedCount`), status, wall time from sending the upload to
//!    seeing the terminal status, chunks/s and pages/s over that wall time.
//!
//!    **Phase split.** The document's `history` holds status changes only (`processing`,
//!    `completed`, ...), not phases; so each poll also reads `processingPhase` and
//!    `heartbeatAt`. A generation persists its progress whenever a phase starts (and, within
//!    a phase, at most once a second and at its end), so the `heartbeatAt` seen with a phase's
//!    first poll is that phase's start, on the server's clock, when the poll came before the
//!    next persisted step.
//!    A phase is timed from its start to the next phase's start (the last one to
//!    `completedAt`); `parse` starts at the `processing` history event (the generation's
//!    start); `queue` is `createdAt` to that event. A phase shorter than one poll may not be
//!    seen: its time is then counted in the phase before it, and its cell shows `·`.
//! 2. **pdf100**: the generated PDF (`VAULT_PDF_PAGES` pages of about `VAULT_PDF_WORDS`
//!    words) goes the same way; target: `completed` within 20 s on 2 cores.
//!
//!    **The model alone** (after formats or pdf100): the embedding model the server uses,
//!    called directly on made-up chunk-sized texts in batches of 16 (the pipeline's embed
//!    batch) and on single sentences in batches of 12 (at most 12 facts per chunk, each
//!    embedded): texts/s, and what those rates predict for the PDF's embed and extract phases.
//! 3. **scifact**: a named vault `scifact` is made; every corpus document (the first
//!    `SCIFACT_LIMIT_DOCS` of `corpus.jsonl` when set) is posted as a text document
//!    (`POST /api/context-vault/documents` `{sourceType: "text", title, content: text,
//!    vaultId}`), `BENCH_CONCURRENCY` requests at a time; then every document is polled until
//!    terminal. Ingestion throughput is documents (and chunks) over the time from the first
//!    POST to the last `completedAt`.
//!
//!    Then every query with train judgements whose judged documents were all ingested (when the
//!    corpus is limited, the others are counted and not scored; the first
//!    `SCIFACT_LIMIT_QUERIES` of those when set) is asked of `GET /api/context-vault/search?
//!    q=...&mode=documents&limit=20&vaultId=...&ranking=<r>`, one request at a time, in passes:
//!    `hybrid` (the query is embedded: a fresh query vector), `keyword` and `semantic` (the
//!    query vector is in the server's query cache), then `keyword` again with the query's
//!    letter case changed (BM25 lower-cases, so the ranking must be the same; keyword ranking
//!    embeds no query, so a query-cache miss must not cost it anything either). Two more
//!    passes ask `mode=memories` (hybrid and semantic ranking): the ranked list of a query is
//!    then the source documents of the returned memories' evidence items, in order (the
//!    "chunks" of a row are then evidence items), which measures the extracted facts on their
//!    own.
//!
//!    **Scoring** is per document: the ranked list of a query is the source documents of the
//!    returned chunks in order of first appearance. nDCG@10 (gain = the qrels score, log2
//!    discount, ideal from the judged documents) over its first 10 documents; recall R@k =
//!    judged documents among the documents of the first k chunks / judged documents. The API
//!    returns at most 20 chunks a page (`limit` is 1..20); R@100 reads the next pages with
//!    `offset` 20, 40, 60 and 80 (untimed; the ranking is recomputed per page, so a chunk seen
//!    on an earlier page counts once). 100 chunks may name fewer than 100 documents.
//!
//! # Output
//!
//! Markdown on stdout, one section per part as it finishes, then the machine and the total
//! time; progress and errors on stderr. Any request that does not answer as expected is
//! counted, a few are shown, and the benchmark exits non-zero at the end. A document that
//! fails is a result (reported), not a benchmark error.
//!
//! # Environment
//!
//! - `VAULT_PARTS` (`formats,pdf100,scifact`): the parts to run, comma-separated.
//! - `VAULT_DECODERS` (`workers`): where documents are decoded, comma-separated, one whole run
//!   (fresh database, fresh server) each, in order: `workers` (the server's sandboxed worker
//!   processes, as in production) or `in-process` (the parsers called in the server process, to
//!   measure what the workers cost; no OCR, so for the pdf100 and scifact parts).
//! - `VAULT_DOCS_DIR` (`../shared/bench/docs`), `SCIFACT_PATH` (`../shared/bench/scifact`).
//! - `SCIFACT_LIMIT_DOCS` (all): only the first N corpus documents of the file.
//! - `SCIFACT_LIMIT_QUERIES` (all): only the first N scoreable queries (qrels order).
//! - `BENCH_CONCURRENCY` (4): SciFact documents posted at a time.
//! - `VAULT_PDF_PAGES` (100), `VAULT_PDF_WORDS` (400): the generated PDF.
//! - `VAULT_POLL_MS` (50): poll interval of the formats and pdf100 parts (SciFact: 200 ms).
//! - `SCIFACT_SWEEP` (none): after the SciFact passes, fusion settings to compare on the same
//!   ingested corpus, comma-separated `score:<weight>`, `minmax:<weight>` or `rrf`, each
//!   optionally followed by `:<fact weight>` (`vault_search_fact_weight`, e.g. `score:0.6:0.5`,
//!   `rrf:0:1`); each starts another server on the same database and runs the hybrid pass
//!   (nDCG@10, R@10, R@20, R@100).
//! - `SCIFACT_SAVE` (none; needs `BENCH_KEEP_DATABASE=1`): after ingesting SciFact, write the
//!   kept database's location, the bench key, the vault and the corpus id of every document to
//!   this JSON file. `SCIFACT_REUSE=<that file> VAULT_PARTS=scifact` then runs the retrieval
//!   passes and the sweep on that corpus without ingesting it again (a ranking change costs a
//!   build and minutes, not a 20-minute ingestion); the ingestion table is not printed then.
//!   The server started on the kept database rebuilds its indexes from it; the passes start
//!   once its background HNSW builds are done, so their latencies are steady-state ones (the
//!   sweep's servers do not wait: quality only).
//! - `MEMVAULT_BENCH_DATABASE_URL`, else `DATABASE_URL`: a `postgres://` URL runs against a
//!   fresh database created on that server and dropped at the end; otherwise SQLite in a
//!   temporary directory. `BENCH_KEEP_DATABASE=1` keeps it.
//! - `MEMVAULT_*`: server settings, as for `memvault serve` (e.g.
//!   `MEMVAULT_INGEST_MAX_DOCUMENTS=2`, `MEMVAULT_SEARCH_SEMANTIC_WEIGHT=0.5`); the database,
//!   rate and memory limits are the bench's own.

#[allow(dead_code)] // each benchmark uses part of it
mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use chrono::{DateTime, Utc};
use common::client::{client, expect_json};
use common::database::{percentile_ms, postgres_url_from_env, with_database, Database};
use common::env::{env_count, env_var};
use common::errors::{Errors, ERROR_SAMPLES};
use common::machine::{
    cores, cpu_model, load_now, others_share, steal_share, wait_until_idle, Load,
};
use common::scifact::{self, Scifact};
use common::server::{Running, NO_MEMORY_LIMIT};
use common::{machine, server};
use memvault::config::{Fusion, ServiceUrl, Settings};
use memvault::embedding::Embedder;
use memvault::startup::{load_embedder, Application, Overrides};
use memvault_pipelines::model::SourceKind;
use memvault_pipelines::parse::{parse, ParseLimits};
use memvault_pipelines::pipeline::{Decoder, InProcess, Ocr};
use reqwest::multipart::{Form, Part};
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;

const DEFAULT_DOCS_DIR: &str = "../shared/bench/docs";
const DEFAULT_SCIFACT_DIR: &str = "../shared/bench/scifact";
/// Chunks asked of every SciFact search: the API's maximum.
const SEARCH_LIMIT: usize = 20;
/// nDCG cut-off.
const NDCG_K: usize = 10;
/// Recall cut-offs (in chunks returned).
const RECALL_KS: [usize; 2] = [10, 20];
/// Recall depth reached by paging (`offset`): 5 pages of [`SEARCH_LIMIT`] chunks.
const DEEP_K: usize = 100;
/// A formats / pdf100 document not terminal after this long is reported as timed out.
const DOCUMENT_DEADLINE: Duration = Duration::from_secs(1800);
/// SciFact ingestion gives up when no document became terminal for this long.
const SCIFACT_STALL: Duration = Duration::from_secs(600);
/// Poll interval while waiting for the SciFact documents.
const SCIFACT_POLL: Duration = Duration::from_millis(200);
/// A progress line on stderr this often.
const PROGRESS_EVERY: Duration = Duration::from_secs(15);
/// How long a server started on a kept corpus may take to build its HNSW segments.
const MAINTENANCE_TIMEOUT: Duration = Duration::from_secs(1800);
/// Phases, in pipeline order (`processingPhase`).
const PHASES: [&str; 5] = ["parse", "ocr", "chunk", "embed", "extract"];

// ----- configuration ------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BenchPart {
    Formats,
    Pdf100,
    Scifact,
}

impl BenchPart {
    const ALL: [BenchPart; 3] = [BenchPart::Formats, BenchPart::Pdf100, BenchPart::Scifact];

    fn name(self) -> &'static str {
        match self {
            BenchPart::Formats => "formats",
            BenchPart::Pdf100 => "pdf100",
            BenchPart::Scifact => "scifact",
        }
    }
}

/// A search ranking (`ranking` parameter of the vault search).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ranking {
    Hybrid,
    Keyword,
    Semantic,
}

impl Ranking {
    fn name(self) -> &'static str {
        match self {
            Ranking::Hybrid => "hybrid",
            Ranking::Keyword => "keyword",
            Ranking::Semantic => "semantic",
        }
    }
}

struct Config {
    parts: Vec<BenchPart>,
    docs_dir: PathBuf,
    scifact_dir: PathBuf,
    limit_docs: Option<usize>,
    limit_queries: Option<usize>,
    concurrency: usize,
    pdf_pages: usize,
    pdf_words: usize,
    poll: Duration,
    postgres_url: Option<String>,
    keep_database: bool,
    /// `SCIFACT_SWEEP`: Context Vault fusion settings to compare on the same ingested corpus.
    sweep: Vec<Variant>,
    /// `SCIFACT_SAVE`: where to write the ingested corpus's [`Kept`] file.
    save: Option<PathBuf>,
    /// `SCIFACT_REUSE`: a [`Kept`] file; the SciFact part then runs on that database.
    reuse: Option<PathBuf>,
    /// `VAULT_DECODERS`: where documents are decoded, one whole run each, in order.
    decoders: Vec<Decoding>,
}

/// Where a run decodes documents: the server's worker processes, or (to measure what they
/// cost) this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decoding {
    Workers,
    InProcess,
}

impl Decoding {
    fn name(self) -> &'static str {
        match self {
            Decoding::Workers => "workers",
            Decoding::InProcess => "in-process",
        }
    }

    /// The server's decoder for this run: `None` keeps its worker processes.
    fn decoder(self) -> Option<Arc<dyn Decoder>> {
        match self {
            Decoding::Workers => None,
            Decoding::InProcess => Some(Arc::new(InProcess {
                limits: ParseLimits::default(),
                ocr: Arc::new(NoOcr),
            })),
        }
    }
}

/// The in-process comparison reads text documents only (the PDF and SciFact parts); OCR runs
/// in workers only.
struct NoOcr;

impl Ocr for NoOcr {
    fn recognize(&self, _: &[u8]) -> Result<String, String> {
        Err("ocr runs in workers only; the in-process comparison reads text documents".into())
    }
}

impl Config {
    fn from_env() -> anyhow::Result<Self> {
        let parts = match env_var("VAULT_PARTS") {
            None => BenchPart::ALL.to_vec(),
            Some(raw) => {
                let mut parts = Vec::new();
                for name in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    let part = BenchPart::ALL
                        .into_iter()
                        .find(|p| p.name().eq_ignore_ascii_case(name))
                        .with_context(|| {
                            format!("VAULT_PARTS: `{name}` is not one of formats, pdf100, scifact")
                        })?;
                    if !parts.contains(&part) {
                        parts.push(part);
                    }
                }
                if parts.is_empty() {
                    bail!("VAULT_PARTS names no part: `{raw}`");
                }
                // Always in the documented order.
                BenchPart::ALL
                    .into_iter()
                    .filter(|p| parts.contains(p))
                    .collect()
            }
        };
        let postgres_url = postgres_url_from_env()?;
        let keep_database = env_var("BENCH_KEEP_DATABASE").is_some_and(|v| v == "1");
        let save = env_var("SCIFACT_SAVE").map(PathBuf::from);
        if save.is_some() && !keep_database {
            bail!("SCIFACT_SAVE needs BENCH_KEEP_DATABASE=1: the database it points to must stay");
        }
        let reuse = env_var("SCIFACT_REUSE").map(PathBuf::from);
        if reuse.is_some() && (save.is_some() || parts != [BenchPart::Scifact]) {
            bail!("SCIFACT_REUSE runs the scifact part alone (VAULT_PARTS=scifact), without SCIFACT_SAVE");
        }
        Ok(Config {
            parts,
            docs_dir: PathBuf::from(
                env_var("VAULT_DOCS_DIR").unwrap_or_else(|| DEFAULT_DOCS_DIR.to_string()),
            ),
            scifact_dir: PathBuf::from(
                env_var("SCIFACT_PATH").unwrap_or_else(|| DEFAULT_SCIFACT_DIR.to_string()),
            ),
            limit_docs: env_count("SCIFACT_LIMIT_DOCS", 1)?,
            limit_queries: env_count("SCIFACT_LIMIT_QUERIES", 1)?,
            concurrency: env_count("BENCH_CONCURRENCY", 1)?.unwrap_or(4),
            pdf_pages: env_count("VAULT_PDF_PAGES", 1)?.unwrap_or(100),
            pdf_words: env_count("VAULT_PDF_WORDS", 20)?.unwrap_or(400),
            poll: Duration::from_millis(env_count("VAULT_POLL_MS", 1)?.unwrap_or(50) as u64),
            postgres_url,
            keep_database,
            sweep: match env_var("SCIFACT_SWEEP") {
                Some(raw) => parse_sweep(&raw)?,
                None => Vec::new(),
            },
            save,
            reuse,
            decoders: match env_var("VAULT_DECODERS") {
                None => vec![Decoding::Workers],
                Some(raw) => {
                    let mut decoders = Vec::new();
                    for name in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                        decoders.push(match name {
                            "workers" => Decoding::Workers,
                            "in-process" => Decoding::InProcess,
                            other => {
                                bail!("VAULT_DECODERS: `{other}` is not one of workers, in-process")
                            }
                        });
                    }
                    if decoders.is_empty() {
                        bail!("VAULT_DECODERS names no decoder: `{raw}`");
                    }
                    decoders
                }
            },
        })
    }

    fn runs(&self, part: BenchPart) -> bool {
        self.parts.contains(&part)
    }
}

/// One `SCIFACT_SWEEP` setting.
#[derive(Debug, Clone, Copy)]
struct Variant {
    fusion: Fusion,
    /// `vault_search_semantic_weight`.
    weight: f32,
    /// `vault_search_fact_weight`; `None` keeps the server's.
    fact_weight: Option<f32>,
}

/// `SCIFACT_SWEEP`: comma-separated `fusion[:weight[:fact weight]]` (`score:0.5`,
/// `minmax:0.6:0.5`, `rrf`).
fn parse_sweep(raw: &str) -> anyhow::Result<Vec<Variant>> {
    let mut out = Vec::new();
    for item in raw.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let mut fields = item.split(':');
        let name = fields.next().unwrap_or_default();
        let fusion = match name {
            "score" => Fusion::Score,
            "minmax" => Fusion::MinMax,
            "rrf" => Fusion::Rrf,
            other => bail!("SCIFACT_SWEEP: `{other}` is not one of score, minmax, rrf"),
        };
        let unit = |field: Option<&str>| -> anyhow::Result<Option<f32>> {
            field
                .map(|w| {
                    w.parse()
                        .ok()
                        .filter(|w| (0.0..=1.0).contains(w))
                        .with_context(|| format!("SCIFACT_SWEEP: `{item}`: weights are in 0..1"))
                })
                .transpose()
        };
        let weight = unit(fields.next())?.unwrap_or(0.5);
        let fact_weight = unit(fields.next())?;
        if fields.next().is_some() {
            bail!("SCIFACT_SWEEP: `{item}` has more than three fields");
        }
        out.push(Variant {
            fusion,
            weight,
            fact_weight,
        });
    }
    Ok(out)
}

fn fusion_name(fusion: Fusion) -> &'static str {
    match fusion {
        Fusion::Score => "score",
        Fusion::MinMax => "minmax",
        Fusion::Rrf => "rrf",
    }
}

/// Says loudly that a data folder is missing and that its part is skipped.
fn say_missing(part: &str, path: &Path, variable: &str) {
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| "(unknown)".to_string());
    let line = "!".repeat(78);
    eprintln!("{line}");
    eprintln!("!!! VAULT BENCHMARK: the {part} part is SKIPPED: its data is missing.");
    eprintln!(
        "!!!   looked for: {} (working directory {cwd})",
        path.display()
    );
    eprintln!("!!!   Put the shared benchmark folder beside the repository, or set {variable}.");
    eprintln!("{line}");
    println!();
    println!(
        "**The {part} part was skipped: `{}` is missing** (set `{variable}`).",
        path.display()
    );
    println!();
}

// ----- HTTP ---------------------------------------------------------------------------------

/// The running server as the clients see it.
struct Target {
    client: reqwest::Client,
    base: String,
    key: String,
}

fn uuid_at(value: &Value) -> Option<Uuid> {
    value.as_str().and_then(|id| Uuid::parse_str(id).ok())
}

fn time_at(value: &Value) -> Option<DateTime<Utc>> {
    value
        .as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

fn is_terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

impl Target {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn create_vault(&self, name: &str) -> Result<String, String> {
        const WHAT: &str = "POST /api/context-vault/vaults";
        let request = self
            .client
            .post(self.url("/api/context-vault/vaults"))
            .header("X-API-Key", &self.key)
            .json(&json!({ "name": name }));
        let created = expect_json(request, WHAT, StatusCode::CREATED).await?;
        created["vault"]["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("{WHAT}: no vault id in {created}"))
    }

    /// Uploads a file to the default vault; the document id.
    async fn upload(&self, name: &str, bytes: Vec<u8>) -> Result<Uuid, String> {
        const WHAT: &str = "POST /api/context-vault/documents/upload";
        let form = Form::new()
            .text("title", name.to_string())
            .part("file", Part::bytes(bytes).file_name(name.to_string()));
        let request = self
            .client
            .post(self.url("/api/context-vault/documents/upload"))
            .header("X-API-Key", &self.key)
            .multipart(form);
        let accepted = expect_json(request, WHAT, StatusCode::ACCEPTED).await?;
        uuid_at(&accepted["document"]["id"]).ok_or_else(|| format!("{WHAT}: no id in {accepted}"))
    }

    /// Posts a text document; the document id.
    async fn post_text(
        &self,
        vault: Option<&str>,
        title: &str,
        content: &str,
    ) -> Result<Uuid, String> {
        const WHAT: &str = "POST /api/context-vault/documents";
        let mut body = json!({ "sourceType": "text", "title": title, "content": content });
        if let Some(vault) = vault {
            body["vaultId"] = json!(vault);
        }
        let request = self
            .client
            .post(self.url("/api/context-vault/documents"))
            .header("X-API-Key", &self.key)
            .json(&body);
        let accepted = expect_json(request, WHAT, StatusCode::ACCEPTED).await?;
        uuid_at(&accepted["document"]["id"]).ok_or_else(|| format!("{WHAT}: no id in {accepted}"))
    }

    /// Citations (evidence items) of document `id` among the memories extracted from it:
    /// every one is a fact text the extract phase embedded.
    async fn citations(&self, id: Uuid) -> Result<Citations, String> {
        let request = self
            .client
            .get(self.url(&format!("/api/context-vault/documents/{id}/memories")))
            .header("X-API-Key", &self.key);
        let found = expect_json(
            request,
            "GET /api/context-vault/documents/{id}/memories",
            StatusCode::OK,
        )
        .await?;
        let memories = found["memories"]
            .as_array()
            .ok_or_else(|| format!("no `memories` list in {found}"))?;
        let mut citations = Citations::default();
        for memory in memories {
            let n = memory["evidence"].as_array().map_or(0, |e| {
                e.iter()
                    .filter(|e| uuid_at(&e["sourceId"]) == Some(id))
                    .count()
            });
            citations.total += n;
            if n > citations.most {
                citations.most = n;
                citations.most_cited = memory["content"]
                    .as_str()
                    .unwrap_or_default()
                    .chars()
                    .take(100)
                    .collect();
            }
        }
        Ok(citations)
    }

    /// `GET /api/context-vault/documents/{id}`: `{document, history}`.
    async fn detail(&self, id: Uuid) -> Result<Value, String> {
        let request = self
            .client
            .get(self.url(&format!("/api/context-vault/documents/{id}")))
            .header("X-API-Key", &self.key);
        expect_json(
            request,
            "GET /api/context-vault/documents/{id}",
            StatusCode::OK,
        )
        .await
    }

    /// Polls a document until its status is terminal, noting each phase's first sighting.
    async fn watch(&self, id: Uuid, poll: Duration, sent: Instant) -> Result<Watched, String> {
        let mut seen: Vec<(String, Option<DateTime<Utc>>)> = Vec::new();
        let mut polls = 0usize;
        loop {
            let detail = self.detail(id).await?;
            polls += 1;
            let document = &detail["document"];
            if let Some(phase) = document["processingPhase"].as_str() {
                if document["status"] == "processing" && !seen.iter().any(|(p, _)| p == phase) {
                    seen.push((phase.to_string(), time_at(&document["heartbeatAt"])));
                }
            }
            let status = document["status"].as_str().unwrap_or_default();
            if is_terminal(status) {
                return Ok(Watched {
                    detail,
                    seen,
                    wall: sent.elapsed(),
                    polls,
                });
            }
            if sent.elapsed() > DOCUMENT_DEADLINE {
                return Err(format!(
                    "document {id} not terminal after {} s: {document}",
                    DOCUMENT_DEADLINE.as_secs()
                ));
            }
            tokio::time::sleep(poll).await;
        }
    }

    /// What a search returns, best first, as `(id, source document id)`: each chunk of a
    /// `documents` search; each evidence item of each memory of a `memories` search.
    async fn search(
        &self,
        vault: &str,
        q: &str,
        (ranking, mode): (Ranking, &str),
        offset: usize,
    ) -> Result<Vec<(Uuid, Uuid)>, String> {
        let what = format!(
            "GET /api/context-vault/search (mode={mode}, ranking={}, offset={offset})",
            ranking.name()
        );
        let limit = SEARCH_LIMIT.to_string();
        let offset = offset.to_string();
        let request = self
            .client
            .get(self.url("/api/context-vault/search"))
            .header("X-API-Key", &self.key)
            .query(&[
                ("q", q),
                ("mode", mode),
                ("limit", limit.as_str()),
                ("vaultId", vault),
                ("ranking", ranking.name()),
                ("offset", offset.as_str()),
            ]);
        let found = expect_json(request, &what, StatusCode::OK).await?;
        if mode == "memories" {
            let memories = found["memories"]
                .as_array()
                .ok_or_else(|| format!("{what}: no `memories` list in the answer"))?;
            let mut cited = Vec::new();
            for memory in memories {
                let id = uuid_at(&memory["id"]).ok_or_else(|| format!("{what}: no memory id"))?;
                for evidence in memory["evidence"].as_array().into_iter().flatten() {
                    let source = uuid_at(&evidence["sourceId"])
                        .ok_or_else(|| format!("{what}: evidence without sourceId"))?;
                    cited.push((id, source));
                }
            }
            return Ok(cited);
        }
        let chunks = found["chunks"]
            .as_array()
            .ok_or_else(|| format!("{what}: no `chunks` list in the answer"))?;
        chunks
            .iter()
            .map(|c| {
                uuid_at(&c["id"])
                    .zip(uuid_at(&c["sourceId"]))
                    .ok_or_else(|| format!("{what}: a chunk without id or sourceId"))
            })
            .collect()
    }
}

// ----- one document, end to end -------------------------------------------------------------

/// What polling a document until it was terminal saw.
struct Watched {
    /// The last answer: `{document, history}`.
    detail: Value,
    /// Each phase at its first sighting, with the `heartbeatAt` of that answer.
    seen: Vec<(String, Option<DateTime<Utc>>)>,
    /// From sending the upload to reading the terminal status.
    wall: Duration,
    polls: usize,
}

/// Seconds per phase (server clock), see the module documentation.
#[derive(Debug, Default, Clone)]
struct Split {
    /// `createdAt` to the generation's start.
    queue: Option<f64>,
    /// Per phase of [`PHASES`]: `None` when not seen.
    phases: [Option<f64>; 5],
    /// `createdAt` to `completedAt` (or the terminal history event).
    server_total: Option<f64>,
}

fn seconds(from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
    (to - from).num_microseconds().unwrap_or(0) as f64 / 1e6
}

impl Split {
    fn of(watched: &Watched) -> Split {
        let document = &watched.detail["document"];
        let history = watched.detail["history"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let created = time_at(&document["createdAt"]);
        let started = history
            .iter()
            .find(|e| e["status"] == "processing")
            .and_then(|e| time_at(&e["at"]));
        let ended = time_at(&document["completedAt"]).or_else(|| {
            history
                .iter()
                .rev()
                .find(|e| e["status"].as_str().is_some_and(is_terminal))
                .and_then(|e| time_at(&e["at"]))
        });
        let mut split = Split {
            queue: created.zip(started).map(|(c, s)| seconds(c, s)),
            server_total: created.zip(ended).map(|(c, e)| seconds(c, e)),
            ..Split::default()
        };
        let (Some(started), Some(ended)) = (started, ended) else {
            return split;
        };
        // Boundaries: parse starts with the generation; later phases at their first heartbeat.
        let mut marks: Vec<(usize, DateTime<Utc>)> = vec![(0, started)];
        for (index, phase) in PHASES.iter().enumerate().skip(1) {
            if let Some((_, Some(at))) = watched.seen.iter().find(|(p, _)| p == phase) {
                let last = marks.last().map(|m| m.1).unwrap_or(started);
                marks.push((index, (*at).max(last)));
            }
        }
        for (k, (index, at)) in marks.iter().enumerate() {
            let next = marks.get(k + 1).map(|m| m.1).unwrap_or(ended);
            split.phases[*index] = Some(seconds(*at, next.max(*at)));
        }
        split
    }
}

/// The citations of one document among its memories.
#[derive(Debug, Default, Clone)]
struct Citations {
    /// Evidence items citing the document: every one is a fact text the extract phase
    /// embedded.
    total: usize,
    /// Citations of the most cited memory, and its content (shortened).
    most: usize,
    most_cited: String,
}

/// One document of the formats or pdf100 part.
struct DocRun {
    name: String,
    format: String,
    bytes: usize,
    pages: Option<u32>,
    status: String,
    chunks: i64,
    memories: i64,
    citations: Citations,
    attempts: i64,
    error: Option<String>,
    wall: Duration,
    split: Split,
    polls: usize,
}

impl DocRun {
    fn chunks_per_s(&self) -> f64 {
        self.chunks as f64 / self.wall.as_secs_f64()
    }

    fn pages_per_s(&self) -> Option<f64> {
        self.pages.map(|p| f64::from(p) / self.wall.as_secs_f64())
    }
}

/// Pages of a PDF as memvault's parser counts them (`None` for other formats or on error).
fn pdf_pages(kind: Option<SourceKind>, bytes: &[u8]) -> Option<u32> {
    if kind != Some(SourceKind::Pdf) {
        return None;
    }
    parse(SourceKind::Pdf, bytes, &ParseLimits::default())
        .ok()
        .map(|parsed| parsed.pages)
}

async fn run_document(
    target: &Target,
    name: &str,
    bytes: Vec<u8>,
    poll: Duration,
) -> Result<DocRun, String> {
    let kind = SourceKind::from_file_name(name);
    let format = kind.map_or("?", SourceKind::as_str).to_string();
    let pages = pdf_pages(kind, &bytes);
    let size = bytes.len();
    let sent = Instant::now();
    let id = target.upload(name, bytes).await?;
    let watched = target.watch(id, poll, sent).await?;
    let citations = target.citations(id).await?;
    let document = &watched.detail["document"];
    Ok(DocRun {
        name: name.to_string(),
        format,
        bytes: size,
        pages,
        status: document["status"].as_str().unwrap_or("?").to_string(),
        chunks: document["chunkCount"].as_i64().unwrap_or(0),
        memories: document["extractedCount"].as_i64().unwrap_or(0),
        citations,
        attempts: document["attempts"].as_i64().unwrap_or(0),
        error: document["error"].as_str().map(str::to_string),
        wall: watched.wall,
        split: Split::of(&watched),
        polls: watched.polls,
    })
}

fn opt(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "·".to_string(), |v| format!("{v:.digits$}"))
}

fn print_runs(runs: &[DocRun], poll: Duration) {
    println!(
        "| file | format | KB | pages | chunks | memories | citations | status | wall s | chunks/s \
         | pages/s |"
    );
    println!("|---|---|--:|--:|--:|--:|--:|---|--:|--:|--:|");
    for run in runs {
        println!(
            "| {} | {} | {:.0} | {} | {} | {} | {} | {}{} | {:.2} | {:.1} | {} |",
            run.name,
            run.format,
            run.bytes as f64 / 1024.0,
            run.pages.map_or_else(|| "-".to_string(), |p| p.to_string()),
            run.chunks,
            run.memories,
            run.citations.total,
            run.status,
            if run.attempts > 1 {
                format!(" ({} attempts)", run.attempts)
            } else {
                String::new()
            },
            run.wall.as_secs_f64(),
            run.chunks_per_s(),
            run.pages_per_s()
                .map_or_else(|| "-".to_string(), |v| format!("{v:.1}")),
        );
    }
    println!();
    println!(
        "Phase split (seconds, server clock; `·` = not seen by a {} ms poll, its time is in the \
         phase before):",
        poll.as_millis()
    );
    println!();
    println!("| file | queue | parse | ocr | chunk | embed | extract | server total | polls |");
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|");
    for run in runs {
        let phases: Vec<String> = run.split.phases.iter().map(|p| opt(*p, 2)).collect();
        println!(
            "| {} | {} | {} | {} | {} |",
            run.name,
            opt(run.split.queue, 2),
            phases.join(" | "),
            opt(run.split.server_total, 2),
            run.polls
        );
    }
    println!();
    for run in runs.iter().filter(|r| r.error.is_some()) {
        println!(
            "- {}: {}: {}",
            run.name,
            run.status,
            run.error.as_deref().unwrap_or_default()
        );
    }
    if runs.iter().any(|r| r.error.is_some()) {
        println!();
    }
    let repeated: Vec<&DocRun> = runs
        .iter()
        .filter(|r| r.citations.total as f64 > 1.5 * r.memories as f64)
        .collect();
    for run in &repeated {
        println!(
            "- {}: {} citations for {} memories: the extract phase embedded {:.1} fact texts \
             per memory kept. The most cited memory has {} citations: \"{}\"",
            run.name,
            run.citations.total,
            run.memories,
            run.citations.total as f64 / run.memories.max(1) as f64,
            run.citations.most,
            run.citations.most_cited.replace('|', "\\|")
        );
    }
    if !repeated.is_empty() {
        println!();
    }
}

// ----- part 1: formats ----------------------------------------------------------------------

async fn formats_part(target: &Target, config: &Config, errors: &mut Errors) -> Option<()> {
    if !config.docs_dir.is_dir() {
        say_missing("formats", &config.docs_dir, "VAULT_DOCS_DIR");
        return None;
    }
    let entries = match std::fs::read_dir(&config.docs_dir) {
        Ok(entries) => entries,
        Err(e) => {
            errors.push(format!("{}: {e}", config.docs_dir.display()));
            return None;
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let load_before = load_now();
    let threads_before = thread_cpu();
    let started = Instant::now();
    let mut runs = Vec::new();
    for path in &files {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) => {
                errors.push(format!("{}: cannot read: {e}", path.display()));
                continue;
            }
        };
        eprintln!("formats: {name} ({} bytes)", bytes.len());
        match run_document(target, &name, bytes, config.poll).await {
            Ok(run) => {
                eprintln!(
                    "formats: {name}: {} in {:.2} s, {} chunks",
                    run.status,
                    run.wall.as_secs_f64(),
                    run.chunks
                );
                runs.push(run);
            }
            Err(e) => errors.push(format!("{name}: {e}")),
        }
    }
    let wall = started.elapsed();
    let load_after = load_now();
    let threads_after = thread_cpu();

    println!("## Formats: `{}`", config.docs_dir.display());
    println!();
    println!(
        "One file at a time (nothing else queued), uploaded with `POST \
         /api/context-vault/documents/upload` and polled every {} ms until terminal; wall = \
         upload sent to terminal status seen.",
        config.poll.as_millis()
    );
    println!();
    print_runs(&runs, config.poll);

    let mut formats: BTreeMap<&str, (usize, u32, bool, i64, i64, f64)> = BTreeMap::new();
    for run in &runs {
        let entry = formats
            .entry(run.format.as_str())
            .or_insert((0, 0, true, 0, 0, 0.0));
        entry.0 += 1;
        entry.1 += run.pages.unwrap_or(0);
        entry.2 &= run.pages.is_some();
        entry.3 += run.chunks;
        entry.4 += run.memories;
        entry.5 += run.wall.as_secs_f64();
    }
    println!("Per format (sums over its files; rates = sum / summed wall time):");
    println!();
    println!("| format | files | pages | chunks | memories | wall s | pages/s | chunks/s |");
    println!("|---|--:|--:|--:|--:|--:|--:|--:|");
    for (format, (files, pages, known, chunks, memories, wall)) in &formats {
        println!(
            "| {format} | {files} | {} | {chunks} | {memories} | {wall:.2} | {} | {:.1} |",
            if *known {
                pages.to_string()
            } else {
                "-".to_string()
            },
            if *known {
                format!("{:.1}", f64::from(*pages) / wall)
            } else {
                "-".to_string()
            },
            *chunks as f64 / wall
        );
    }
    println!();
    println!(
        "{} files in {:.1} s; this process used {} of one core, other processes {} of the \
         machine, the hypervisor stole {}.",
        runs.len(),
        wall.as_secs_f64(),
        own_share(load_before, load_after),
        others_share(load_before, load_after),
        steal_share(load_before, load_after)
    );
    println!();
    println!("CPU of this process by thread over the formats part:");
    println!();
    print_thread_cpu(
        &threads_before,
        &threads_after,
        load_before
            .zip(load_after)
            .map(|(a, b)| b.own.saturating_sub(a.own)),
        wall,
    );
    Some(())
}

// ----- part 2: a generated 100-page text PDF ------------------------------------------------

/// A small deterministic generator (xorshift64*): the same prose on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[(self.next() % words.len() as u64) as usize]
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const SUBJECTS: [&str; 24] = [
    "the committee",
    "the river authority",
    "a small team of engineers",
    "the regional hospital",
    "our neighbours",
    "the city council",
    "the old railway company",
    "a group of students",
    "the museum",
    "the cooperative",
    "the research station",
    "the harbour master",
    "the orchestra",
    "the village school",
    "the software vendor",
    "the weather service",
    "the library board",
    "a local farmer",
    "the airline",
    "the bakery on the corner",
    "the shipping firm",
    "the survey crew",
    "the mayor",
    "the translators",
];
const VERBS: [&str; 20] = [
    "reviewed",
    "rebuilt",
    "measured",
    "described",
    "postponed",
    "funded",
    "inspected",
    "published",
    "replaced",
    "expanded",
    "tested",
    "designed",
    "recorded",
    "repaired",
    "questioned",
    "celebrated",
    "documented",
    "organised",
    "compared",
    "restored",
];
const OBJECTS: [&str; 24] = [
    "the northern bridge",
    "a new water filter",
    "the annual budget",
    "three wooden boats",
    "the winter timetable",
    "the drainage canals",
    "a collection of maps",
    "the solar panels",
    "the emergency plan",
    "the grain silos",
    "an unusual manuscript",
    "the coastal path",
    "the heating system",
    "a list of rare birds",
    "the concert hall",
    "the market stalls",
    "the tide tables",
    "the school garden",
    "a fleet of delivery vans",
    "the printing press",
    "the mountain road",
    "the wind turbines",
    "the public archive",
    "the flood barrier",
];
const PLACES: [&str; 16] = [
    "in the eastern district",
    "near the old harbour",
    "along the valley",
    "at the edge of town",
    "behind the station",
    "on the northern coast",
    "in the capital",
    "across the border",
    "beside the lake",
    "in the hill villages",
    "under the viaduct",
    "at the university",
    "in the industrial zone",
    "on the island",
    "near the cathedral",
    "in the suburbs",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const NAMES: [&str; 16] = [
    "Maria Keller",
    "Tomas Novak",
    "Aisha Rahman",
    "Peter Lindqvist",
    "Lucia Ferreira",
    "Daniel Okafor",
    "Hannah Brooks",
    "Kenji Sato",
    "Elena Petrova",
    "Samuel Adeyemi",
    "Clara Dubois",
    "Oliver Grant",
    "Nadia Haddad",
    "Jonas Berg",
    "Rosa Martinez",
    "Victor Chen",
];
const ADJECTIVES: [&str; 16] = [
    "careful",
    "expensive",
    "surprising",
    "slow",
    "remarkable",
    "modest",
    "ambitious",
    "quiet",
    "difficult",
    "cheerful",
    "thorough",
    "unexpected",
    "practical",
    "generous",
    "cautious",
    "lengthy",
];
const REASONS: [&str; 12] = [
    "because the spring floods had damaged the foundations",
    "after several residents complained about the noise",
    "since the old equipment no longer met the safety rules",
    "so that visitors could reach the site in winter",
    "while the main contractor was busy elsewhere",
    "although the funding arrived months later than promised",
    "once the engineers had finished their calculations",
    "because demand had doubled over the previous decade",
    "after a long debate about the cost",
    "when the first reports reached the newspapers",
    "as part of a wider plan for the region",
    "before the tourist season began",
];

/// One sentence of made-up, varied English prose.
fn sentence(rng: &mut Rng) -> String {
    let capital = |s: &str| {
        let mut chars = s.chars();
        chars.next().map_or_else(String::new, |c| {
            c.to_uppercase().collect::<String>() + chars.as_str()
        })
    };
    let year = 1950 + rng.below(75);
    match rng.below(10) {
        0 => format!(
            "{} {} {} {} in {} {year}.",
            capital(rng.pick(&SUBJECTS)),
            rng.pick(&VERBS),
            rng.pick(&OBJECTS),
            rng.pick(&PLACES),
            rng.pick(&MONTHS)
        ),
        1 => format!(
            "In {year}, {} {} {} {}.",
            rng.pick(&SUBJECTS),
            rng.pick(&VERBS),
            rng.pick(&OBJECTS),
            rng.pick(&REASONS)
        ),
        2 => format!(
            "{} said that the work on {} was {} but worth the effort.",
            rng.pick(&NAMES),
            rng.pick(&OBJECTS),
            rng.pick(&ADJECTIVES)
        ),
        3 => format!(
            "The project cost about {} thousand euros and employed {} people {}.",
            10 + rng.below(990),
            3 + rng.below(200),
            rng.pick(&PLACES)
        ),
        4 => format!(
            "Why had {} waited so long to look at {}?",
            rng.pick(&SUBJECTS),
            rng.pick(&OBJECTS)
        ),
        5 => format!(
            "According to {}, {} {} {} {}, and the results were {}.",
            rng.pick(&NAMES),
            rng.pick(&SUBJECTS),
            rng.pick(&VERBS),
            rng.pick(&OBJECTS),
            rng.pick(&REASONS),
            rng.pick(&ADJECTIVES)
        ),
        6 => format!(
            "Few people remember that {} once {} {} {}.",
            rng.pick(&SUBJECTS),
            rng.pick(&VERBS),
            rng.pick(&OBJECTS),
            rng.pick(&PLACES)
        ),
        7 => format!(
            "It was a {} season, and {} spent most of {} on {}.",
            rng.pick(&ADJECTIVES),
            rng.pick(&SUBJECTS),
            rng.pick(&MONTHS),
            rng.pick(&OBJECTS)
        ),
        8 => format!(
            "By {} {year} nearly {} percent of the households {} relied on {}.",
            rng.pick(&MONTHS),
            5 + rng.below(90),
            rng.pick(&PLACES),
            rng.pick(&OBJECTS)
        ),
        _ => format!(
            "{} and {} {} {} together, {}.",
            rng.pick(&NAMES),
            rng.pick(&NAMES),
            rng.pick(&VERBS),
            rng.pick(&OBJECTS),
            rng.pick(&REASONS)
        ),
    }
}

/// `pages` pages of about `words` words each; the words in total.
fn prose_pages(pages: usize, words: usize) -> (Vec<String>, usize) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut total = 0;
    let texts = (0..pages)
        .map(|_| {
            let mut page = String::new();
            let mut count = 0;
            while count < words {
                let s = sentence(&mut rng);
                count += s.split_whitespace().count();
                if !page.is_empty() {
                    page.push(' ');
                }
                page.push_str(&s);
            }
            total += count;
            page
        })
        .collect();
    (texts, total)
}

async fn pdf_part(target: &Target, config: &Config, errors: &mut Errors) -> Option<DocRun> {
    let (pages, words) = prose_pages(config.pdf_pages, config.pdf_words);
    let refs: Vec<&str> = pages.iter().map(String::as_str).collect();
    let bytes = memvault_pipelines::fixtures::pdf(&refs);
    let name = format!("generated-{}-pages.pdf", config.pdf_pages);
    eprintln!(
        "pdf100: {name}: {} pages, {words} words, {} bytes",
        config.pdf_pages,
        bytes.len()
    );
    let load_before = load_now();
    let threads_before = thread_cpu();
    let run = match run_document(target, &name, bytes, config.poll).await {
        Ok(run) => run,
        Err(e) => {
            errors.push(format!("{name}: {e}"));
            return None;
        }
    };
    let load_after = load_now();
    let threads_after = thread_cpu();
    println!("## A {}-page text PDF, end to end", config.pdf_pages);
    println!();
    println!(
        "Generated by the bench (`memvault_pipelines::fixtures::pdf`, one Helvetica text line \
         per page): {} pages, {words} words of made-up English prose (about {} a page), \
         uploaded alone and polled every {} ms.",
        config.pdf_pages,
        words / config.pdf_pages.max(1),
        config.poll.as_millis()
    );
    println!();
    print_runs(std::slice::from_ref(&run), config.poll);
    let verdict = if run.status == "completed" && run.wall <= Duration::from_secs(20) {
        "**met**"
    } else {
        "**not met**"
    };
    println!(
        "Target `completed` <= 20 s on 2 cores: {verdict} ({:.2} s, {} pages/s, {:.1} chunks/s, \
         {:.1} memories/s). This process used {} of one core, other processes {} of the \
         machine.",
        run.wall.as_secs_f64(),
        opt(run.pages_per_s(), 1),
        run.chunks_per_s(),
        run.memories as f64 / run.wall.as_secs_f64(),
        own_share(load_before, load_after),
        others_share(load_before, load_after)
    );
    println!();
    println!("CPU of this process by thread while the PDF was ingested:");
    println!();
    print_thread_cpu(
        &threads_before,
        &threads_after,
        load_before
            .zip(load_after)
            .map(|(a, b)| b.own.saturating_sub(a.own)),
        run.wall,
    );
    Some(run)
}

// ----- the model alone ----------------------------------------------------------------------

/// Texts per second of the model called directly (no HTTP, no batcher), one call after the
/// other, `batch` texts per call; `None` when a call failed.
async fn embed_rate(embedder: &Arc<dyn Embedder>, texts: &[String], batch: usize) -> Option<f64> {
    let started = Instant::now();
    for chunk in texts.chunks(batch.max(1)) {
        match embedder.embed(chunk.to_vec()).await {
            Ok(vectors) if vectors.len() == chunk.len() => {}
            _ => return None,
        }
    }
    Some(texts.len() as f64 / started.elapsed().as_secs_f64())
}

/// What the model alone does on chunk-sized and sentence-sized texts (made-up prose), and
/// what that predicts for the PDF's embed and extract phases.
async fn model_part(embedder: &Arc<dyn Embedder>, pdf: Option<&DocRun>) {
    let (pages, _) = prose_pages(40, 400);
    let words: Vec<&str> = pages.iter().flat_map(|p| p.split_whitespace()).collect();
    // About 190 words: the chunker's 256-wordpiece target for this prose.
    let chunks: Vec<String> = words
        .chunks(190)
        .take(96)
        .map(|w| format!("generated.pdf\nPage 1\n\n{}", w.join(" ")))
        .collect();
    let sentences: Vec<String> = pages
        .iter()
        .flat_map(|p| p.split_inclusive(['.', '?']))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .take(384)
        .collect();
    let load_before = load_now();
    let chunk_rate = embed_rate(embedder, &chunks, 16).await;
    let fact_rate = embed_rate(embedder, &sentences, 12).await;
    let load_after = load_now();
    println!("## The model alone");
    println!();
    println!(
        "all-MiniLM-L6-v2 called directly (no HTTP, no batcher, one call after the other) on \
         made-up prose: {} chunk-sized texts (190 words, about the chunker's 256-wordpiece \
         target) in batches of 16 (the pipeline's embed batch), {} single sentences in batches \
         of 12 (at most 12 facts per chunk).",
        chunks.len(),
        sentences.len()
    );
    println!();
    println!("| texts | per call | texts/s |");
    println!("|---|--:|--:|");
    println!("| chunk-sized | 16 | {} |", opt(chunk_rate, 1));
    println!("| sentences | 12 | {} |", opt(fact_rate, 1));
    println!();
    if let (Some(run), Some(chunk_rate), Some(fact_rate)) = (pdf, chunk_rate, fact_rate) {
        let embed = run.chunks as f64 / chunk_rate;
        // Every citation is a fact text the extract phase embedded (a fact found again in the
        // next chunk's overlap is embedded again, then merged into the same memory).
        let texts = run.citations.total;
        let facts = texts as f64 / fact_rate;
        let phase = |i: usize| opt(run.split.phases[i], 1);
        println!(
            "For the PDF above the model alone needs about {embed:.1} s for its {} chunks \
             (measured embed phase: {} s) and {facts:.1} s for the {texts} fact sentences the \
             extract phase embedded ({} memories; measured extract phase: {} s): {:.1} s in all.",
            run.chunks,
            phase(3),
            run.memories,
            phase(4),
            embed + facts,
        );
        println!();
    }
    println!(
        "This process used {} of one core, other processes {} of the machine, the hypervisor \
         stole {}.",
        own_share(load_before, load_after),
        others_share(load_before, load_after),
        steal_share(load_before, load_after)
    );
    println!();
}

async fn settle(part: &str) {
    match wait_until_idle(Duration::from_secs(300)).await {
        Some(waited) => eprintln!(
            "{part}: the process was idle after {:.0} s",
            waited.as_secs_f64()
        ),
        None => eprintln!("{part}: the process was still busy after 300 s; going on"),
    }
}

// ----- part 3: SciFact ----------------------------------------------------------------------

/// nDCG@k of a ranked document list against graded judgements.
fn ndcg_at(k: usize, ranked: &[&str], judged: &BTreeMap<String, f64>) -> f64 {
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, doc)| judged.get(*doc).copied().unwrap_or(0.0) / (i as f64 + 2.0).log2())
        .sum();
    let mut gains: Vec<f64> = judged.values().copied().collect();
    gains.sort_by(|a, b| b.total_cmp(a));
    let ideal: f64 = gains
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, g)| g / (i as f64 + 2.0).log2())
        .sum();
    if ideal > 0.0 {
        dcg / ideal
    } else {
        0.0
    }
}

/// Documents in order of first appearance.
fn first_appearance<'a>(sources: &[&'a str]) -> Vec<&'a str> {
    let mut seen = HashSet::new();
    sources
        .iter()
        .copied()
        .filter(|doc| seen.insert(*doc))
        .collect()
}

/// Share of the judged documents among the sources of the first `k` chunks.
fn recall_at(k: usize, sources: &[&str], judged: &BTreeMap<String, f64>) -> f64 {
    let found: HashSet<&str> = sources.iter().take(k).copied().collect();
    let hits = judged.keys().filter(|d| found.contains(d.as_str())).count();
    hits as f64 / judged.len() as f64
}

/// The query with its letter case changed (lower-cased, or upper-cased when it is lower-case
/// already): the same words to BM25, which lower-cases, but a new query-cache key.
fn case_variant(query: &str) -> String {
    let lower = query.to_lowercase();
    if lower == query {
        query.to_uppercase()
    } else {
        lower
    }
}

/// One search pass over every scored query.
struct Pass {
    label: &'static str,
    vector: &'static str,
    ndcg: f64,
    recalls: [f64; RECALL_KS.len()],
    /// R@[`DEEP_K`] over the pages of the ranking (not for the case-changed pass).
    recall_deep: f64,
    /// Mean distinct documents among the returned chunks.
    docs_per_list: f64,
    chunks_per_list: f64,
    latencies: Vec<Duration>,
    /// The returned chunk ids, per query (to compare passes).
    lists: Vec<Vec<Uuid>>,
    errors: Errors,
    foreign: usize,
}

struct Scored<'a> {
    query: &'a str,
    judged: &'a BTreeMap<String, f64>,
}

async fn search_pass(
    target: &Target,
    vault: &str,
    scored: &[Scored<'_>],
    corpus_of: &HashMap<Uuid, String>,
    ranking: (Ranking, &str),
    lower: bool,
) -> Pass {
    let mut pass = Pass {
        label: "",
        vector: "",
        ndcg: 0.0,
        recalls: [0.0; RECALL_KS.len()],
        recall_deep: 0.0,
        docs_per_list: 0.0,
        chunks_per_list: 0.0,
        latencies: Vec::with_capacity(scored.len()),
        lists: Vec::with_capacity(scored.len()),
        errors: Errors::default(),
        foreign: 0,
    };
    let mut last_progress = Instant::now();
    for (n, query) in scored.iter().enumerate() {
        let q = if lower {
            case_variant(query.query)
        } else {
            query.query.to_string()
        };
        let sent = Instant::now();
        let result = target.search(vault, &q, ranking, 0).await;
        pass.latencies.push(sent.elapsed());
        let ids = match result {
            Ok(ids) => ids,
            Err(e) => {
                pass.errors.push(e);
                Vec::new()
            }
        };
        // R@100: the next pages (`offset`), not timed; a chunk seen on an earlier page (the
        // ranking is recomputed per page) counts once.
        let mut deep: Vec<(Uuid, Uuid)> = ids.clone();
        if !lower {
            for offset in (SEARCH_LIMIT..DEEP_K).step_by(SEARCH_LIMIT) {
                match target.search(vault, &q, ranking, offset).await {
                    Ok(page) => {
                        for hit in page {
                            if !deep.iter().any(|d| d.0 == hit.0) {
                                deep.push(hit);
                            }
                        }
                    }
                    Err(e) => pass.errors.push(e),
                }
            }
        }
        let deep_sources: Vec<&str> = deep
            .iter()
            .map(|(_, id)| corpus_of.get(id).map_or("", String::as_str))
            .collect();
        pass.recall_deep += recall_at(DEEP_K, &deep_sources, query.judged);
        let sources: Vec<&str> = ids
            .iter()
            .map(|(_, id)| {
                corpus_of.get(id).map(String::as_str).unwrap_or_else(|| {
                    pass.foreign += 1;
                    ""
                })
            })
            .collect();
        let ranked = first_appearance(&sources);
        pass.ndcg += ndcg_at(NDCG_K, &ranked, query.judged);
        for (r, k) in pass.recalls.iter_mut().zip(RECALL_KS) {
            *r += recall_at(k, &sources, query.judged);
        }
        pass.docs_per_list += ranked.len() as f64;
        pass.chunks_per_list += sources.len() as f64;
        pass.lists
            .push(ids.into_iter().map(|(chunk, _)| chunk).collect());
        if last_progress.elapsed() > PROGRESS_EVERY {
            eprintln!(
                "scifact: search {}{}: {}/{}",
                ranking.0.name(),
                if lower { " (case changed)" } else { "" },
                n + 1,
                scored.len()
            );
            last_progress = Instant::now();
        }
    }
    let n = scored.len().max(1) as f64;
    pass.ndcg /= n;
    pass.recall_deep /= n;
    for r in &mut pass.recalls {
        *r /= n;
    }
    pass.docs_per_list /= n;
    pass.chunks_per_list /= n;
    pass.latencies.sort();
    pass
}

/// A SciFact document after ingestion.
struct Ingested {
    status: String,
    chunks: i64,
    memories: i64,
    /// `processing` to terminal, seconds (server clock).
    processing: Option<f64>,
    ended: Option<DateTime<Utc>>,
    error: Option<String>,
}

/// What the SciFact part needs to start more servers on the same database (`SCIFACT_SWEEP`).
struct Restart<'a> {
    settings: &'a Settings,
    embedder: Arc<dyn Embedder>,
    /// The corpus an earlier run kept (`SCIFACT_REUSE`): no ingestion this time.
    kept: Option<&'a Kept>,
}

/// An ingested SciFact corpus kept for later runs: written by `SCIFACT_SAVE` (with
/// `BENCH_KEEP_DATABASE=1`), read by `SCIFACT_REUSE`, so that ranking changes can be compared
/// without ingesting the corpus again. It holds the bench workspace's API key: it is a file
/// for a throwaway benchmark database, not for a real one.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Kept {
    data_dir: PathBuf,
    database_url: Option<String>,
    key: String,
    vault: String,
    /// Corpus id of each posted document, by document id.
    documents: HashMap<Uuid, String>,
}

impl Kept {
    fn write(&self, path: &Path) -> anyhow::Result<()> {
        std::fs::write(path, serde_json::to_vec(self)?)
            .with_context(|| format!("cannot write {}", path.display()))
    }

    fn read(path: &Path) -> anyhow::Result<Kept> {
        let raw = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_slice(&raw)
            .with_context(|| format!("{} is not a kept corpus", path.display()))
    }

    /// Points the server at the kept database.
    fn configure(&self, settings: &mut Settings) {
        settings.storage.data_dir = self.data_dir.clone();
        settings.storage.database_url = self.database_url.clone().map(ServiceUrl::new);
    }
}

async fn scifact_part(
    target: &Arc<Target>,
    config: &Config,
    restart: &Restart<'_>,
    errors: &mut Errors,
) {
    if !config.scifact_dir.join(scifact::CORPUS_FILE).is_file() {
        say_missing("SciFact", &config.scifact_dir, "SCIFACT_PATH");
        return;
    }
    let loaded = Scifact::load(&config.scifact_dir, config.limit_docs)
        .and_then(|data| Ok((data, scifact::train_qrels(&config.scifact_dir)?)));
    let (data, qrels) = match loaded {
        Ok((data, qrels)) => (Arc::new(data), qrels),
        Err(e) => {
            errors.push(format!("SciFact: {e:#}"));
            return;
        }
    };
    // The corpus: ingested now, or the one an earlier run kept (`SCIFACT_REUSE`).
    let (vault, corpus_of) = match restart.kept {
        Some(kept) => {
            eprintln!(
                "scifact: reusing the ingested corpus of {} ({} documents)",
                config
                    .reuse
                    .as_deref()
                    .map_or(String::new(), |p| p.display().to_string()),
                kept.documents.len()
            );
            println!("## SciFact: the corpus ingested by an earlier run (`SCIFACT_REUSE`)");
            println!();
            (kept.vault.clone(), kept.documents.clone())
        }
        None => {
            let vault = match target.create_vault("scifact").await {
                Ok(vault) => vault,
                Err(e) => {
                    errors.push(e);
                    return;
                }
            };
            let Some(corpus_of) = ingest_scifact(target, config, &data, &vault, errors).await
            else {
                return;
            };
            (vault, corpus_of)
        }
    };
    if let Some(path) = &config.save {
        let kept = Kept {
            data_dir: restart.settings.storage.data_dir.clone(),
            database_url: restart
                .settings
                .storage
                .database_url
                .as_ref()
                .map(|url| url.expose().to_string()),
            key: target.key.clone(),
            vault: vault.clone(),
            documents: corpus_of.clone(),
        };
        match kept.write(path) {
            Ok(()) => eprintln!("scifact: wrote {} (SCIFACT_REUSE reads it)", path.display()),
            Err(e) => errors.push(format!("SCIFACT_SAVE: {e:#}")),
        }
    }

    // Queries: those whose judged documents were all in the corpus.
    let ingested_ids: HashSet<&str> = data.corpus.iter().map(|d| d.id.as_str()).collect();
    let mut without_text = 0;
    let mut not_ingested = 0;
    let query_texts = data.query_texts();
    let mut scored = Vec::new();
    for (query, judged) in &qrels {
        let Some(text) = query_texts.get(query.as_str()) else {
            without_text += 1;
            continue;
        };
        if !judged.keys().all(|d| ingested_ids.contains(d.as_str())) {
            not_ingested += 1;
            continue;
        }
        scored.push(Scored {
            query: text,
            judged,
        });
    }
    let scoreable = scored.len();
    if let Some(limit) = config.limit_queries {
        scored.truncate(limit);
    }
    eprintln!(
        "scifact: {} queries to score ({} skipped: judged documents not ingested)",
        scored.len(),
        not_ingested
    );

    let plan: [((Ranking, &str), bool, &'static str, &'static str); 6] = [
        (
            (Ranking::Hybrid, "documents"),
            false,
            "hybrid",
            "embedded (fresh)",
        ),
        (
            (Ranking::Keyword, "documents"),
            false,
            "keyword (BM25 only)",
            "cached",
        ),
        (
            (Ranking::Semantic, "documents"),
            false,
            "semantic (vectors only)",
            "cached",
        ),
        (
            (Ranking::Keyword, "documents"),
            true,
            "keyword, query case changed",
            "none",
        ),
        (
            (Ranking::Hybrid, "memories"),
            false,
            "`memories` mode, hybrid",
            "cached",
        ),
        (
            (Ranking::Semantic, "memories"),
            false,
            "`memories` mode, semantic",
            "cached",
        ),
    ];
    let search_started = Instant::now();
    let mut passes = Vec::new();
    for (ranking, lower, label, vector) in plan {
        let mut pass = search_pass(target, &vault, &scored, &corpus_of, ranking, lower).await;
        pass.label = label;
        pass.vector = vector;
        pass.errors.show(&format!("scifact search {label}"));
        errors.count += pass.errors.count;
        passes.push(pass);
    }
    let search_wall = search_started.elapsed();

    // Report.
    println!("## SciFact: retrieval");
    println!();
    println!(
        "Data: `{}`. Corpus: {} of {} documents ingested{}. Train judgements: {} queries; {} \
         scored{}, {} skipped because a judged document was not ingested, {} without query \
         text.",
        config.scifact_dir.display(),
        data.corpus.len(),
        data.corpus_in_file,
        if config.limit_docs.is_some() {
            " (SCIFACT_LIMIT_DOCS: the first ones of the file)"
        } else {
            ""
        },
        qrels.len(),
        scored.len(),
        if scored.len() < scoreable {
            format!(" (SCIFACT_LIMIT_QUERIES; {scoreable} scoreable)")
        } else {
            String::new()
        },
        not_ingested,
        without_text
    );
    println!();
    println!(
        "### Retrieval (`GET /api/context-vault/search?mode=documents&limit={SEARCH_LIMIT}`, and \
         `mode=memories` where the row says so; one client)"
    );
    println!();
    println!(
        "| ranking | queries | nDCG@10 | R@10 | R@20 | R@100 | documents per list | p50 ms | \
         p95 ms | query vector | errors |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|");
    for pass in &passes {
        println!(
            "| {} | {} | **{:.3}** | {:.3} | {:.3} | {} | {:.1} of {:.1} chunks | {:.1} | {:.1} | {} | {} |",
            pass.label,
            pass.latencies.len(),
            pass.ndcg,
            pass.recalls[0],
            pass.recalls[1],
            if pass.label.contains("case changed") {
                "-".to_string()
            } else {
                format!("{:.3}", pass.recall_deep)
            },
            pass.docs_per_list,
            pass.chunks_per_list,
            percentile_ms(&pass.latencies, 50.0),
            percentile_ms(&pass.latencies, 95.0),
            pass.vector,
            pass.errors.count
        );
    }
    println!();
    let pairs = || passes[1].lists.iter().zip(&passes[3].lists);
    let same = pairs().filter(|(a, b)| a == b).count();
    let same_set = pairs()
        .filter(|(a, b)| {
            a != b && a.iter().collect::<HashSet<_>>() == b.iter().collect::<HashSet<_>>()
        })
        .count();
    println!(
        "R@k = judged documents among the sources of the first k chunks; R@100 reads the \
         ranking's next pages with `offset` (20, 40, 60, 80; not timed); nDCG@10 over the first 10 distinct \
         source documents. Passes ran in the order shown, each over every query; the keyword pass \
         with the query's letter case changed returned the same chunks in the same order as the \
         keyword pass for {same} of {} queries, the same chunks in another order for {same_set}.",
        passes[3].lists.len()
    );
    let foreign: usize = passes.iter().map(|p| p.foreign).sum();
    if foreign > 0 {
        println!(
            "{foreign} returned chunks came from documents this part did not post (counted as \
             misses)."
        );
    }
    println!();
    let verdict = if passes[0].ndcg >= 0.75 {
        "**met**"
    } else {
        "**not met**"
    };
    println!(
        "Target nDCG@10 >= 0.75 (hybrid): {verdict} ({:.3}). Searches took {:.1} s.",
        passes[0].ndcg,
        search_wall.as_secs_f64()
    );
    println!();
    if !config.sweep.is_empty() {
        sweep(target, config, restart, &vault, &scored, &corpus_of, errors).await;
    }
}

/// Posts the whole corpus to `vault`, waits until every document is terminal and prints the
/// ingestion report. Returns the corpus id of each posted document, `None` when nothing could
/// be posted.
async fn ingest_scifact(
    target: &Arc<Target>,
    config: &Config,
    data: &Arc<Scifact>,
    vault: &str,
    errors: &mut Errors,
) -> Option<HashMap<Uuid, String>> {
    // Ingest: post every document, `concurrency` at a time.
    eprintln!(
        "scifact: posting {} documents, {} at a time",
        data.corpus.len(),
        config.concurrency
    );
    let load_before = load_now();
    let threads_before = thread_cpu();
    let first_post = Utc::now();
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let posted: Arc<Mutex<Vec<Option<Uuid>>>> = Arc::new(Mutex::new(vec![None; data.corpus.len()]));
    let post_latencies = Arc::new(Mutex::new(Vec::new()));
    let post_errors = Arc::new(Mutex::new(Errors::default()));
    let mut workers = Vec::new();
    for _ in 0..config.concurrency {
        let (target, data, vault, next, posted, latencies, errs) = (
            target.clone(),
            data.clone(),
            vault.to_string(),
            next.clone(),
            posted.clone(),
            post_latencies.clone(),
            post_errors.clone(),
        );
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(doc) = data.corpus.get(i) else { break };
                // A document without text is posted with its title as its content.
                let content = if doc.text.trim().is_empty() {
                    &doc.title
                } else {
                    &doc.text
                };
                let sent = Instant::now();
                match target
                    .post_text(Some(&vault), doc.title.trim(), content)
                    .await
                {
                    Ok(id) => {
                        latencies.lock().unwrap().push(sent.elapsed());
                        posted.lock().unwrap()[i] = Some(id);
                    }
                    Err(e) => errs.lock().unwrap().push(format!("corpus {}: {e}", doc.id)),
                }
            }
        }));
    }
    for worker in workers {
        if let Err(e) = worker.await {
            errors.push(format!("a posting task failed: {e}"));
        }
    }
    let post_wall = started.elapsed();
    let posted = std::mem::take(&mut *posted.lock().unwrap());
    let mut post_latencies = std::mem::take(&mut *post_latencies.lock().unwrap());
    post_latencies.sort();
    let post_errors = std::mem::take(&mut *post_errors.lock().unwrap());
    post_errors.show("scifact post");
    errors.count += post_errors.count;
    eprintln!(
        "scifact: posted {} in {:.1} s; waiting for ingestion",
        post_latencies.len(),
        post_wall.as_secs_f64()
    );

    // Wait: poll every document, in posting order, until terminal.
    let mut ingested: HashMap<Uuid, Ingested> = HashMap::new();
    let ids: Vec<Uuid> = posted.iter().flatten().copied().collect();
    let mut last_change = Instant::now();
    let mut last_progress = Instant::now();
    let mut gave_up = false;
    for (n, id) in ids.iter().enumerate() {
        loop {
            match target.detail(*id).await {
                Ok(detail) => {
                    let document = &detail["document"];
                    let status = document["status"].as_str().unwrap_or_default();
                    if is_terminal(status) {
                        let history = detail["history"].as_array().cloned().unwrap_or_default();
                        let processing = history
                            .iter()
                            .find(|e| e["status"] == "processing")
                            .and_then(|e| time_at(&e["at"]));
                        let ended = time_at(&document["completedAt"])
                            .or_else(|| history.last().and_then(|e| time_at(&e["at"])));
                        ingested.insert(
                            *id,
                            Ingested {
                                status: status.to_string(),
                                chunks: document["chunkCount"].as_i64().unwrap_or(0),
                                memories: document["extractedCount"].as_i64().unwrap_or(0),
                                processing: processing.zip(ended).map(|(p, e)| seconds(p, e)),
                                ended,
                                error: document["error"].as_str().map(str::to_string),
                            },
                        );
                        last_change = Instant::now();
                        break;
                    }
                }
                Err(e) => errors.push(e),
            }
            if last_change.elapsed() > SCIFACT_STALL {
                gave_up = true;
                break;
            }
            tokio::time::sleep(SCIFACT_POLL).await;
        }
        if gave_up {
            errors.push(format!(
                "SciFact ingestion stalled: no document finished for {} s ({} of {} done)",
                SCIFACT_STALL.as_secs(),
                n,
                ids.len()
            ));
            break;
        }
        if last_progress.elapsed() > PROGRESS_EVERY {
            eprintln!(
                "scifact: {}/{} documents terminal after {:.0} s",
                n + 1,
                ids.len(),
                started.elapsed().as_secs_f64()
            );
            last_progress = Instant::now();
        }
    }
    let load_after = load_now();
    let threads_after = thread_cpu();
    let wait_wall = started.elapsed();
    let last_end = ingested.values().filter_map(|d| d.ended).max();
    let ingest_wall = last_end.map_or(started.elapsed().as_secs_f64(), |end| {
        seconds(first_post, end)
    });
    let completed = ingested
        .values()
        .filter(|d| d.status == "completed")
        .count();
    let failed: Vec<(&Uuid, &Ingested)> = ingested
        .iter()
        .filter(|(_, d)| d.status != "completed")
        .collect();
    let chunks: i64 = ingested.values().map(|d| d.chunks).sum();
    let memories: i64 = ingested.values().map(|d| d.memories).sum();
    let mut processing: Vec<Duration> = ingested
        .values()
        .filter_map(|d| d.processing)
        .map(Duration::from_secs_f64)
        .collect();
    processing.sort();

    let corpus_of: HashMap<Uuid, String> = posted
        .iter()
        .zip(&data.corpus)
        .filter_map(|(id, doc)| id.map(|id| (id, doc.id.clone())))
        .collect();
    println!("## SciFact: ingestion");
    println!();
    println!("### Ingestion (`POST /api/context-vault/documents`, `sourceType: text`)");
    println!();
    println!(
        "| documents | completed | not completed | chunks | memories | clients | posting s | \
         POST p50 ms | POST p95 ms | total s | documents/s | chunks/s | per document p50 s | p95 s |"
    );
    println!("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    println!(
        "| {} | {completed} | {} | {chunks} | {memories} | {} | {:.1} | {:.1} | {:.1} | \
         {ingest_wall:.1} | {:.2} | {:.2} | {:.2} | {:.2} |",
        ids.len(),
        failed.len(),
        config.concurrency,
        post_wall.as_secs_f64(),
        percentile_ms(&post_latencies, 50.0),
        percentile_ms(&post_latencies, 95.0),
        completed as f64 / ingest_wall,
        chunks as f64 / ingest_wall,
        percentile_ms(&processing, 50.0) / 1000.0,
        percentile_ms(&processing, 95.0) / 1000.0,
    );
    println!();
    println!(
        "Total = first POST to the last `completedAt`; per document = its `processing` event to \
         `completedAt` (the server runs `ingest_max_documents` documents at a time; the rest \
         wait in its queue). This process used {} of one core, other processes {} of the \
         machine.",
        own_share(load_before, load_after),
        others_share(load_before, load_after)
    );
    println!();
    println!("CPU of this process by thread while the corpus was ingested:");
    println!();
    print_thread_cpu(
        &threads_before,
        &threads_after,
        load_before
            .zip(load_after)
            .map(|(a, b)| b.own.saturating_sub(a.own)),
        wait_wall,
    );
    for (id, doc) in failed.iter().take(ERROR_SAMPLES) {
        println!(
            "- {} ({id}): {}: {}",
            corpus_of.get(id).map_or("?", String::as_str),
            doc.status,
            doc.error.as_deref().unwrap_or_default()
        );
    }
    if !failed.is_empty() {
        println!();
    }
    (!corpus_of.is_empty()).then_some(corpus_of)
}

/// `SCIFACT_SWEEP`: for each fusion setting, a server started on the same database (its
/// indexes rebuilt from it) answers the hybrid pass; quality only (the latencies are not
/// comparable: the new server's HNSW segments are still being built while it answers).
async fn sweep(
    target: &Target,
    config: &Config,
    restart: &Restart<'_>,
    vault: &str,
    scored: &[Scored<'_>],
    corpus_of: &HashMap<Uuid, String>,
    errors: &mut Errors,
) {
    println!("### Fusion sweep (`SCIFACT_SWEEP`, hybrid ranking, same corpus)");
    println!();
    println!(
        "Each row is a server started on the same database with `vault_search_fusion`, \
         `vault_search_semantic_weight` and `vault_search_fact_weight` set as shown."
    );
    println!();
    println!("| fusion | vector weight | fact weight | nDCG@10 | R@10 | R@20 | R@100 | errors |");
    println!("|---|--:|--:|--:|--:|--:|--:|--:|");
    for setting in &config.sweep {
        let fusion = setting.fusion;
        let weight = setting.weight;
        let fact_weight = setting
            .fact_weight
            .unwrap_or(restart.settings.vault.search_fact_weight);
        let mut settings = restart.settings.clone();
        settings.vault.search_fusion = fusion;
        settings.vault.search_semantic_weight = weight;
        settings.vault.search_fact_weight = fact_weight;
        let running = match start(&settings, restart.embedder.clone()).await {
            Ok(running) => running,
            Err(e) => {
                errors.push(format!("sweep: {e:#}"));
                continue;
            }
        };
        let variant = Target {
            client: target.client.clone(),
            base: running.base.clone(),
            key: target.key.clone(),
        };
        let pass = search_pass(
            &variant,
            vault,
            scored,
            corpus_of,
            (Ranking::Hybrid, "documents"),
            false,
        )
        .await;
        pass.errors.show("scifact sweep");
        errors.count += pass.errors.count;
        println!(
            "| {} | {} | {fact_weight:.2} | **{:.3}** | {:.3} | {:.3} | {:.3} | {} |",
            fusion_name(fusion),
            if fusion == Fusion::Rrf {
                "-".to_string()
            } else {
                format!("{weight:.2}")
            },
            pass.ndcg,
            pass.recalls[0],
            pass.recalls[1],
            pass.recall_deep,
            pass.errors.count
        );
        if let Err(e) = running.stop(STOP_TIMEOUT).await {
            errors.push(format!("sweep: {e:#}"));
        }
    }
    println!();
}

// ----- process and machine ------------------------------------------------------------------

/// This process's CPU time between `a` and `b`, in % of one core.
fn own_share(a: Option<Load>, b: Option<Load>) -> String {
    let (Some(a), Some(b)) = (a, b) else {
        return "n/a".to_string();
    };
    let own = b.own.saturating_sub(a.own).as_secs_f64();
    format!(
        "{:.0}%",
        100.0 * own / b.at.duration_since(a.at).as_secs_f64().max(1e-9)
    )
}

/// CPU time (user + system) of each live thread of this process, by thread id, with the
/// thread's name (`comm`, at most 15 characters), from `/proc/self/task/*/stat`.
fn thread_cpu() -> HashMap<u64, (String, Duration)> {
    let mut threads = HashMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return threads;
    };
    for task in tasks.flatten() {
        let Ok(tid) = task.file_name().to_string_lossy().parse::<u64>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_string();
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let ticks = |i: usize| fields.get(i).and_then(|t| t.parse::<u64>().ok());
        if let (Some(user), Some(system)) = (ticks(11), ticks(12)) {
            threads.insert(tid, (name, Duration::from_millis((user + system) * 10)));
        }
    }
    threads
}

/// CPU by thread between two [`thread_cpu`] readings, summed per thread name, as a Markdown
/// table in % of one core over `wall`; threads that ended in between are the remainder of the
/// process total (`own`).
fn print_thread_cpu(
    before: &HashMap<u64, (String, Duration)>,
    after: &HashMap<u64, (String, Duration)>,
    own: Option<Duration>,
    wall: Duration,
) {
    let mut by_name: BTreeMap<String, Duration> = BTreeMap::new();
    for (tid, (name, cpu)) in after {
        let start = before.get(tid).map_or(Duration::ZERO, |(_, c)| *c);
        *by_name.entry(name.clone()).or_default() += cpu.saturating_sub(start);
    }
    let counted: Duration = by_name.values().sum();
    let mut rows: Vec<(String, Duration)> = by_name
        .into_iter()
        .filter(|(_, cpu)| !cpu.is_zero())
        .collect();
    rows.sort_by_key(|row| std::cmp::Reverse(row.1));
    if let Some(own) = own {
        let gone = own.saturating_sub(counted);
        if !gone.is_zero() {
            rows.push(("(threads that ended)".to_string(), gone));
        }
    }
    let wall = wall.as_secs_f64().max(1e-9);
    println!("| thread (name) | CPU s | % of one core |");
    println!("|---|--:|--:|");
    for (name, cpu) in rows {
        println!(
            "| `{name}` | {:.1} | {:.0}% |",
            cpu.as_secs_f64(),
            100.0 * cpu.as_secs_f64() / wall
        );
    }
    println!();
}

fn memory_total_gib() -> String {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kb: f64 = line["MemTotal:".len()..]
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .ok()?;
            Some(format!("{:.1} GiB", kb / 1024.0 / 1024.0))
        })
        .unwrap_or_else(|| "(unknown)".to_string())
}

// ----- the run ------------------------------------------------------------------------------

/// Checks the arithmetic on made-up values; runs every time, before anything else.
fn self_check() {
    let judged: BTreeMap<String, f64> = [("a".to_string(), 1.0)].into();
    assert_eq!(ndcg_at(10, &["a", "x"], &judged), 1.0);
    assert!((ndcg_at(10, &["x", "a"], &judged) - 1.0 / 3f64.log2()).abs() < 1e-12);
    assert_eq!(ndcg_at(1, &["x", "a"], &judged), 0.0);
    let two: BTreeMap<String, f64> = [("a".to_string(), 1.0), ("b".to_string(), 1.0)].into();
    let ideal = 1.0 + 1.0 / 3f64.log2();
    assert!((ndcg_at(10, &["b", "x", "a"], &two) - (1.0 + 0.5) / ideal).abs() < 1e-12);
    assert_eq!(
        first_appearance(&["a", "b", "a", "c", "b"]),
        ["a", "b", "c"]
    );
    assert_eq!(recall_at(1, &["x", "a", "b"], &two), 0.0);
    assert_eq!(recall_at(2, &["x", "a", "b"], &two), 0.5);
    assert_eq!(recall_at(20, &["x", "a", "b"], &two), 1.0);
    let sorted: Vec<Duration> = (1..=20).map(Duration::from_millis).collect();
    assert_eq!(percentile_ms(&sorted, 50.0), 10.0);
    let (pages, words) = prose_pages(3, 50);
    assert_eq!(pages.len(), 3);
    assert!(words >= 150 && pages.iter().all(|p| p.ends_with(['.', '?'])));
    assert_eq!(
        prose_pages(3, 50).0,
        pages,
        "the prose must be deterministic"
    );
    let t0: DateTime<Utc> = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .unwrap()
        .with_timezone(&Utc);
    let at = |ms: i64| json!((t0 + chrono::Duration::milliseconds(ms)).to_rfc3339());
    let watched = Watched {
        detail: json!({
            "document": { "createdAt": at(0), "completedAt": at(1000) },
            "history": [
                { "status": "processing", "at": at(100) },
                { "status": "completed", "at": at(1000) },
            ],
        }),
        seen: vec![
            (
                "parse".to_string(),
                Some(t0 + chrono::Duration::milliseconds(110)),
            ),
            (
                "chunk".to_string(),
                Some(t0 + chrono::Duration::milliseconds(300)),
            ),
            (
                "embed".to_string(),
                Some(t0 + chrono::Duration::milliseconds(400)),
            ),
        ],
        wall: Duration::from_secs(1),
        polls: 1,
    };
    let split = Split::of(&watched);
    let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-9);
    assert!(close(split.queue, 0.1));
    assert!(close(split.phases[0], 0.2), "{split:?}");
    assert!(split.phases[1].is_none());
    assert!(close(split.phases[2], 0.1));
    assert!(close(split.phases[3], 0.6));
    assert!(split.phases[4].is_none());
    assert!(close(split.server_total, 1.0));
}

/// How long a server may take to stop gracefully.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// Builds memvault with `settings` and the loaded model, and serves it.
async fn start(settings: &Settings, embedder: Arc<dyn Embedder>) -> anyhow::Result<Running> {
    let app = Application::build_with(
        settings,
        Overrides {
            embedder: Some(embedder),
            ..Overrides::default()
        },
    )
    .await
    .context("cannot start memvault")?;
    Ok(Running::serve(app))
}

/// The database of a run: a fresh one, or the one a [`Kept`] file names (`SCIFACT_REUSE`).
#[derive(Clone, Copy)]
enum RunDatabase<'a> {
    Fresh(&'a Database),
    Kept(&'a Kept),
}

async fn bench(
    config: &Config,
    store: RunDatabase<'_>,
    decoding: Decoding,
    started: Instant,
) -> anyhow::Result<usize> {
    // `MEMVAULT_*` settings apply, as for the server.
    let mut settings =
        Settings::load().map_err(|e| anyhow::anyhow!("invalid MEMVAULT_* settings: {e}"))?;
    settings.server.log_level = "warn".to_string();
    let mut settings = server::bench_settings(settings);
    match store {
        RunDatabase::Fresh(database) => database.configure(&mut settings),
        RunDatabase::Kept(kept) => kept.configure(&mut settings),
    }
    memvault::telemetry::init(settings.server.log_format, &settings.server.log_level);

    let embedder = load_embedder(&settings).await.with_context(|| {
        format!(
            "cannot load the embedding model from {} (`make model` installs it)",
            settings.embedding.model_dir.display()
        )
    })?;
    let app = Application::build_with(
        &settings,
        Overrides {
            embedder: Some(embedder.clone()),
            decoder: decoding.decoder(),
            ..Overrides::default()
        },
    )
    .await
    .context("cannot start memvault")?;
    let backend = match store {
        RunDatabase::Fresh(database) => database.describe("SQLite").await,
        RunDatabase::Kept(_) if settings.is_postgres() => "PostgreSQL (kept)".to_string(),
        RunDatabase::Kept(_) => "SQLite (kept)".to_string(),
    };
    server::check_backend(&app, settings.is_postgres())?;
    if let RunDatabase::Kept(_) = store {
        // The indexes were rebuilt from the kept database: searches measured before the
        // background HNSW builds end would scan an exact tail instead.
        let started = Instant::now();
        if !app.wait_for_index_maintenance(MAINTENANCE_TIMEOUT).await {
            bail!("the index maintenance did not finish within {MAINTENANCE_TIMEOUT:?}");
        }
        eprintln!(
            "index maintenance of the kept corpus took {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    let key = match store {
        RunDatabase::Kept(kept) => kept.key.clone(),
        RunDatabase::Fresh(_) => server::create_workspace(&app, "vault-bench").await?.1,
    };
    let running = Running::serve(app);
    let target = Arc::new(Target {
        client: client(config.concurrency.max(4), Duration::from_secs(120))?,
        base: running.base.clone(),
        key,
    });
    let parts: Vec<&str> = config.parts.iter().map(|p| p.name()).collect();
    eprintln!(
        "vault benchmark on {backend}: parts {}, ingest_max_documents {}",
        parts.join(", "),
        settings.vault.ingest_max_documents
    );

    println!();
    println!("# Context Vault benchmark");
    println!();
    println!("| | |");
    println!("|---|---|");
    println!(
        "| commit | `{}` |",
        machine::commit(" (with uncommitted changes)")
    );
    println!("| date (UTC) | {} |", Utc::now().format("%Y-%m-%d %H:%M"));
    println!("| `nproc` | {} |", cores());
    println!("| CPU | {} |", cpu_model());
    println!("| memory | {} |", memory_total_gib());
    println!(
        "| server | in-process, {backend}, rate limits off, memory limits {NO_MEMORY_LIMIT}, log \
         level `warn`, `ingest_max_documents` {}, local all-MiniLM-L6-v2 ({}), offline \
         extraction{} |",
        settings.vault.ingest_max_documents,
        server::model_precision(&settings),
        if settings.llm.url.is_some() {
            " (LLM configured!)"
        } else {
            ""
        }
    );
    println!("| parts | {} |", parts.join(", "));
    println!(
        "| documents decoded | {} |",
        match decoding {
            Decoding::Workers => "in worker processes (`memvault worker`, one per call)",
            Decoding::InProcess => "in the server process (comparison only; no OCR)",
        }
    );
    println!();

    let mut errors = Errors::default();
    // Warm-up: the first embedding and the first document pay one-time costs (a kept corpus
    // is not added to).
    let warm_up = match store {
        RunDatabase::Fresh(_) => Some(
            target
                .post_text(
                    None,
                    "warm-up",
                    "The warm-up document is ingested first. It is not reported.",
                )
                .await,
        ),
        RunDatabase::Kept(_) => None,
    };
    match warm_up {
        Some(Ok(id)) => {
            if let Err(e) = target.watch(id, config.poll, Instant::now()).await {
                errors.push(format!("warm-up: {e}"));
            }
        }
        Some(Err(e)) => errors.push(format!("warm-up: {e}")),
        None => {}
    }

    if config.runs(BenchPart::Formats) {
        settle("formats").await;
        let mut part_errors = Errors::default();
        formats_part(&target, config, &mut part_errors).await;
        part_errors.show("formats");
        errors.count += part_errors.count;
    }
    let mut pdf = None;
    if config.runs(BenchPart::Pdf100) {
        settle("pdf100").await;
        let mut part_errors = Errors::default();
        pdf = pdf_part(&target, config, &mut part_errors).await;
        part_errors.show("pdf100");
        errors.count += part_errors.count;
    }
    if config.runs(BenchPart::Formats) || config.runs(BenchPart::Pdf100) {
        settle("the model alone").await;
        model_part(&embedder, pdf.as_ref()).await;
    }
    if config.runs(BenchPart::Scifact) {
        settle("scifact").await;
        let mut part_errors = Errors::default();
        let restart = Restart {
            settings: &settings,
            embedder: embedder.clone(),
            kept: match store {
                RunDatabase::Kept(kept) => Some(kept),
                RunDatabase::Fresh(_) => None,
            },
        };
        scifact_part(&target, config, &restart, &mut part_errors).await;
        part_errors.show("scifact");
        errors.count += part_errors.count;
    }
    errors.show("vault");

    drop(target);
    running.stop(STOP_TIMEOUT).await?;
    println!(
        "Total wall time {:.1} s on {} cores; server and clients in one process, over HTTP on \
         127.0.0.1.",
        started.elapsed().as_secs_f64(),
        cores()
    );
    Ok(errors.count)
}

fn main() -> anyhow::Result<()> {
    memvault::startup::runtime()?.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let started = Instant::now();
    self_check();
    let config = Config::from_env()?;
    if let Some(path) = &config.reuse {
        // A kept database is never removed.
        let kept = Kept::read(path)?;
        let errors = bench(
            &config,
            RunDatabase::Kept(&kept),
            config.decoders[0],
            started,
        )
        .await?;
        if errors > 0 {
            bail!("{errors} requests did not answer as expected (first ones shown above)");
        }
        return Ok(());
    }
    let mut errors = 0;
    for decoding in config.decoders.clone() {
        eprintln!("run with documents decoded {}", decoding.name());
        errors += with_database(
            config.postgres_url.as_deref(),
            config.keep_database,
            async |database| bench(&config, RunDatabase::Fresh(database), decoding, started).await,
        )
        .await?;
    }
    if errors > 0 {
        bail!("{errors} requests did not answer as expected (first ones shown above)");
    }
    Ok(())
}
