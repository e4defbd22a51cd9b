//! Latency at scale: one workspace holding `BENCH_MEMORIES` (100,000) memories of real text,
//! driven over real HTTP against memvault started in-process.
//!
//! Run with `cargo bench --bench scale` (a release build). Seeding is bound by the embedding
//! model: about 50 saves/s on 2 idle cores, so 100,000 memories take over half an hour. While developing, use a small size:
//! `BENCH_MEMORIES=3000 BENCH_QUERIES=50 cargo bench --bench scale`. The Markdown report goes
//! to stdout; progress and server warnings go to stderr.
//!
//! Environment:
//! - `BENCH_MEMORIES` (100000): saves sent to seed the workspace.
//! - `BENCH_CONCURRENCY` (16): clients in flight while seeding and in the concurrent search
//!   passes.
//! - `BENCH_QUERIES` (300): queries per search pass (at most 542: every measured pass needs
//!   queries never asked before, and SciFact has 1,105 distinct ones).
//! - `SCIFACT_DIR` (`../shared/bench/scifact`, relative to the package root): the SciFact corpus
//!   (`corpus.jsonl` with `_id`, `title`, `text`; `queries.jsonl` with `_id`, `text`). Read in
//!   place, never copied; when it is missing the benchmark says where it looked and exits 2.
//! - `MEMVAULT_BENCH_DATABASE_URL`, else `DATABASE_URL`: a `postgres://` URL runs against a
//!   fresh database created on that server and dropped at the end; otherwise SQLite (WAL,
//!   `synchronous=full`, the server default) in a temporary directory.
//! - `MEMVAULT_LOG_LEVEL` (`warn`): the servers' log filter (as the server reads it), e.g.
//!   `warn,memvault::services::memories=debug` for each save's, search's and import batch's
//!   time by part, on stderr.
//! - `BENCH_KEEP_DATABASE` (unset): when `1`, the database is kept (its location is printed).
//! - `BENCH_SEED` (`http`): how the workspace is seeded. `http`: saves over HTTP as described
//!   below. `import`: the texts go through the import path of `memvault admin import`
//!   (`MemoryService::import`, in-process: batches of 256 lines embedded together, then each
//!   line through the save path's dedup and supersession checks), which measures how long a
//!   bulk import of `BENCH_MEMORIES` memories takes; the seeding table then has no per-save
//!   latencies, and the restarted server is measured as with `http`.
//!
//! Corpus: every abstract of SciFact is split on `". "` into sentences; the distinct ones of
//! 30 to 300 characters are the first memories. When they are fewer than needed, the rest are
//! `"<title>: <sentence>"`: first each sentence with the title of its own abstract, then with
//! the title of the next abstract, and so on. Every text is distinct. The texts are then
//! shuffled (seeded, the same order every run), so every stage of the seeding holds the same
//! mix of sentences alone and longer titled ones; the model alone is measured on the first
//! 1,024 of that order.
//!
//! What happens, in order, and what each figure means:
//! 1. The embedding model is loaded once (**model load**) and shared by both servers below, so
//!    the process holds one model, as a real server does.
//! 2. **Seeding**: a first server (rate limits off, every plan's memory limit at 10,000,000,
//!    log level `warn`) on an empty database receives `BENCH_MEMORIES` saves
//!    (`POST /api/memories {"content": ...}`, the real save path: embedding, near-duplicate
//!    and supersession checks) from `BENCH_CONCURRENCY` closed-loop clients; progress on stderr
//!    every 5,000, and a table of throughput, latency and RSS by stage of 5,000 in the report.
//!    Answers are counted by status (`created`, `duplicate`, `superseded`).
//!    **Save at scale (concurrent)** is p50/p95/p99 of the last 2,000 saves sent (the workspace
//!    then holds nearly all its memories), with the clients still queueing for the model.
//! 3. The first server is stopped; the benchmark then waits until the process is idle (index
//!    maintenance the first server had started finishes on its blocking thread).
//! 4. **Start-up**: a second server is built on the same database (`Application::build_with`
//!    with the loaded model: database open, migrations, the search indexes rebuilt from every
//!    stored memory and vector). **Index maintenance** is then the wait until the background
//!    HNSW segment builds the rebuild scheduled are done
//!    (`Application::wait_for_index_maintenance`); searches before that would scan a larger
//!    exact tail. A cold start of the binary costs model load + start-up.
//! 5. **Search** (`GET /api/memories/search?q=...&limit=10`) with SciFact queries, after 20
//!    warm-up queries not reused: single client (sequential, so p50 is the latency of one
//!    request) in `keyword` mode (BM25, no embedding), `hybrid` mode with a **fresh** query
//!    (first time it is asked: the query is embedded; each beside the model embedding the same
//!    query directly, the two in turns), `hybrid` with the same queries again
//!    (**cached** query vector) and `semantic` cached (vectors only); then
//!    `BENCH_CONCURRENCY` clients in `hybrid` mode, with fresh queries and with cached ones,
//!    for throughput. Every search must answer 200 with `{"results": [...], "total": n}`, `n`
//!    the number of results.
//! 6. **Save at scale (single client)**: 300 more saves, one at a time, on the second server;
//!    then 1,000 more from `BENCH_CONCURRENCY` clients at once (new texts), whose throughput
//!    is set against the model's own, probed on 256 texts in one call right before and after.
//! 7. **The model alone**, called directly (no HTTP, no cache), last: the texts of step 6 one
//!    at a time (what embedding adds to a save), and the first 1,024 seeded texts one at a
//!    time, in calls of `min(BENCH_CONCURRENCY, 32)` (the texts the concurrent clients hold at
//!    once; the save batcher encodes them in smaller passes) and in the import's batches of
//!    256.
//! 8. **The write path against the model**: ratios measured in this run, which hold on any
//!    machine where absolute times do not: the model's gain from batching (import batches
//!    against one text at a time), each import (or seeding) stage's throughput against the
//!    model's in the import's batches, the last stage against the first, the concurrent
//!    saves against the model (at the end and probed around them), and a fresh hybrid search's
//!    p50 minus the model's one-query p50, measured in turns with the searches (step 5): the
//!    query embedded alone a few minutes later ran at another speed than inside the searches.
//!    With `BENCH_SEED=import` the model is also probed on the first 256 texts in one call
//!    before the import and at each of its progress reports (the import waits; the stages'
//!    times leave the probes out), and each stage is compared with the probes around it: the
//!    machine's speed drifts within a run (the model alone at the end ran 101 and 142 texts/s
//!    in two runs of the same commit an hour apart).
//! 9. **RSS**: `VmRSS` (resident now) and `VmHWM` (peak so far) of this process, which holds
//!    the server, the model and the HTTP clients, read from `/proc/self/status` after seeding,
//!    after the restart and maintenance, after the searches and after the single-client saves
//!    (before step 7, whose own allocations are not the server's; the queries embedded beside
//!    the searches and the probe before the concurrent saves allocate as the server's own
//!    passes do). Memory the first server freed may stay mapped by the allocator, so the
//!    figures after the restart are an upper bound of what a freshly started server would
//!    hold.
//! 10. **Other load**: the CPU time other processes used during each phase, as a share of all
//!     cores (`/proc/stat` busy time minus this process's), and the steal time the hypervisor
//!     took (`/proc/stat`): the machine may be shared, and the figures are only comparable
//!     when both are low.
//!
//! Latency runs from sending a request to reading its whole body. `CPU` is the CPU time of
//! this process (server and clients; not a PostgreSQL server) over the wall time of a pass.
//! The targets (search p50 <= 10 ms and p95 <= 25 ms with a fresh embedding, save p50 <= 15 ms,
//! RSS <= 500 MB) are reported as met or not; missing one does not fail the run. Any unexpected
//! answer does: it is counted by kind, the first ones are shown (on stderr and in the report),
//! the measurement goes on, and the benchmark exits non-zero at the end. Seeding stops early
//! only when more than 100 saves, and more than 1 in 20, failed.

#[allow(dead_code)] // each benchmark uses part of it
mod common;

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use common::client::{client, expect, expect_json, BODY_SHOWN};
use common::cpu::process_cpu_time;
use common::database::{millis, percentile_ms, postgres_url_from_env, with_database, Database};
use common::machine::{
    cores, cpu_model, load_now, others_share, steal_share, wait_until_idle, Load,
};
use common::scifact::{self, Scifact};
use common::server::Running;
use common::{machine, pass_cpu, server};
use memvault::config::Settings;
use memvault::embedding::{Embedder, BATCH_SIZE};
use memvault::services::memories::IMPORT_BATCH;
use memvault::startup::{load_embedder, Application, Overrides};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use reqwest::StatusCode;
use uuid::Uuid;

/// Error messages kept per pass, to show what went wrong.
const ERROR_SAMPLES: usize = 5;
/// Seeding stops sending once this many answers were unexpected and they are more than 1 in
/// [`MAX_SEED_ERROR_RATIO`] of the saves answered: the server is failing, not racing.
const MAX_SEED_ERRORS: usize = 100;
const MAX_SEED_ERROR_RATIO: usize = 20;
/// Seeding progress is shown every this many saves.
const PROGRESS_EVERY: usize = 5_000;
/// The last saves of the seeding whose latency is the save latency at scale.
const TAIL_SAVES: usize = 2_000;
/// Single-client saves at the end.
const SINGLE_SAVES: usize = 300;
/// Saves sent by `BENCH_CONCURRENCY` clients at once after the restart (new texts).
const CONCURRENT_SAVES: usize = 1_000;
/// Queries asked before any measured search, never reused.
const WARMUP_QUERIES: usize = 20;
/// Memory texts the model embeds alone in batches, to measure its throughput.
const MODEL_BATCHED_TEXTS: usize = 1024;
/// Seed of the corpus's shuffled order.
const CORPUS_SEED: u64 = 34;
/// `limit` of every search.
const SEARCH_LIMIT: usize = 10;
/// Longest query asked, in characters: the longest the search accepts.
const MAX_QUERY_CHARS: usize = 1_000;
/// Sentence lengths kept, in characters.
const SENTENCE_CHARS: std::ops::RangeInclusive<usize> = 30..=300;
/// Longest wait for the index maintenance after the restart.
const MAINTENANCE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Longest wait for the process to go idle after the first server stopped.
const IDLE_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// The targets of the issue.
const TARGET_SEARCH_P50_MS: f64 = 10.0;
const TARGET_SEARCH_P95_MS: f64 = 25.0;
const TARGET_SAVE_P50_MS: f64 = 15.0;
const TARGET_RSS_MB: f64 = 500.0;
/// The write path's targets (issue 34), ratios measured in one run.
const TARGET_BATCH_GAIN: f64 = 1.5;
const TARGET_IMPORT_SHARE: f64 = 0.8;
const TARGET_IMPORT_FLAT: f64 = 0.85;
const TARGET_CONCURRENT_SAVE_SHARE: f64 = 0.7;
const TARGET_QUERY_OVERHEAD_MS: f64 = 3.0;

struct Config {
    /// The commit when the run started (a run lasts an hour; HEAD may move meanwhile).
    commit: String,
    memories: usize,
    concurrency: usize,
    queries: usize,
    scifact_dir: PathBuf,
    postgres_url: Option<String>,
    keep_database: bool,
    /// `BENCH_SEED=import`: seed through the import path instead of HTTP saves.
    import: bool,
}

impl Config {
    fn from_env() -> anyhow::Result<Self> {
        let postgres_url = postgres_url_from_env()?;
        let scifact_dir = match std::env::var("SCIFACT_DIR") {
            Ok(dir) if !dir.trim().is_empty() => PathBuf::from(dir),
            _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/scifact"),
        };
        Ok(Config {
            commit: machine::commit(" plus uncommitted changes"),
            memories: env_count("BENCH_MEMORIES", 100_000, 1)?,
            concurrency: env_count("BENCH_CONCURRENCY", 16, 1)?,
            queries: env_count("BENCH_QUERIES", 300, 1)?,
            scifact_dir,
            postgres_url,
            keep_database: std::env::var("BENCH_KEEP_DATABASE").is_ok_and(|v| v.trim() == "1"),
            import: match std::env::var("BENCH_SEED").as_deref().map(str::trim) {
                Err(_) | Ok("") | Ok("http") => false,
                Ok("import") => true,
                Ok(other) => bail!("BENCH_SEED must be http or import, not `{other}`"),
            },
        })
    }
}

fn env_count(name: &str, default: usize, min: usize) -> anyhow::Result<usize> {
    match std::env::var(name) {
        Ok(raw) => match raw.trim().parse::<usize>() {
            Ok(n) if n >= min => Ok(n),
            _ => bail!("{name} must be an integer of at least {min}, not `{raw}`"),
        },
        Err(_) => Ok(default),
    }
}

// ----------------------------------------------------------------------------------------
// Corpus

/// What the benchmark saves and asks, from SciFact.
struct Corpus {
    documents: usize,
    /// Distinct texts in a seeded shuffled order (shared with the clients, never copied: the
    /// process's RSS includes them).
    texts: Arc<Vec<String>>,
    /// Whether each of `texts` is a sentence alone (not titled).
    plain: Vec<bool>,
    /// Distinct query texts, in file order.
    queries: Vec<String>,
}

/// Reads SciFact, or says loudly where it looked and exits 2.
fn load_corpus(dir: &Path, wanted: usize) -> anyhow::Result<Corpus> {
    scifact::exit_when_missing(dir, "SCIFACT_DIR");
    let data = Scifact::load(dir, None)?;
    let (texts, plain) = memory_texts(&data.corpus, wanted);
    Ok(Corpus {
        documents: data.corpus.len(),
        texts: Arc::new(texts),
        plain,
        queries: data.distinct_queries(MAX_QUERY_CHARS),
    })
}

/// Up to `wanted` distinct memory texts in a seeded shuffled order, and whether each is a
/// sentence alone: every stage of the seeding gets the same mix of short and titled texts, so
/// the stages' throughputs compare the program at different sizes, not different texts.
fn memory_texts(documents: &[scifact::Document], wanted: usize) -> (Vec<String>, Vec<bool>) {
    let sentences: Vec<Vec<&str>> = documents
        .iter()
        .map(|d| {
            d.text
                .split(". ")
                .map(str::trim)
                .filter(|s| SENTENCE_CHARS.contains(&s.chars().count()))
                .collect()
        })
        .collect();
    let mut seen = HashSet::new();
    let mut texts = Vec::with_capacity(wanted);
    for sentence in sentences.iter().flatten() {
        if texts.len() == wanted {
            break;
        }
        if seen.insert(sentence.to_string()) {
            texts.push(sentence.to_string());
        }
    }
    let plain = texts.len();
    // Round r pairs the sentences of document i with the title of document i + r.
    'rounds: for round in 0..documents.len() {
        for (i, own) in sentences.iter().enumerate() {
            let title = documents[(i + round) % documents.len()]
                .title
                .trim()
                .trim_end_matches('.');
            for sentence in own {
                if texts.len() == wanted {
                    break 'rounds;
                }
                let text = format!("{title}: {sentence}");
                if seen.insert(text.clone()) {
                    texts.push(text);
                }
            }
        }
    }
    let mut tagged: Vec<(String, bool)> = texts
        .into_iter()
        .enumerate()
        .map(|(i, text)| (text, i < plain))
        .collect();
    tagged.shuffle(&mut StdRng::seed_from_u64(CORPUS_SEED));
    tagged.into_iter().unzip()
}

// ----------------------------------------------------------------------------------------
// Database (as in benches/http.rs)

// ----------------------------------------------------------------------------------------
// HTTP

/// The running server as the clients see it.
struct Target {
    client: reqwest::Client,
    base: String,
    key: String,
}

/// How a save was answered.
#[derive(Clone, Copy)]
enum SaveStatus {
    Created,
    Duplicate,
    Superseded,
}

impl Target {
    async fn save(&self, content: &str) -> Result<SaveStatus, String> {
        let request = self
            .client
            .post(format!("{}/api/memories", self.base))
            .header("x-api-key", &self.key)
            .json(&serde_json::json!({ "content": content }));
        let saved = expect_json(request, "POST /api/memories", StatusCode::CREATED).await?;
        if !saved["memory"]["id"].is_string() {
            return Err(format!("POST /api/memories: no memory id in {saved}"));
        }
        match saved["status"].as_str() {
            Some("created") => Ok(SaveStatus::Created),
            Some("duplicate") => Ok(SaveStatus::Duplicate),
            Some("superseded") => Ok(SaveStatus::Superseded),
            _ => Err(format!("POST /api/memories: unexpected status in {saved}")),
        }
    }

    /// One search; the number of results.
    async fn search(&self, query: &str, mode: &str) -> Result<usize, String> {
        let mut url = url::Url::parse(&format!("{}/api/memories/search", self.base))
            .map_err(|e| format!("bad base URL: {e}"))?;
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("limit", &SEARCH_LIMIT.to_string())
            .append_pair("mode", mode);
        let what = format!("GET /api/memories/search (mode={mode})");
        let request = self.client.get(url).header("x-api-key", &self.key);
        let body = expect_json(request, &what, StatusCode::OK).await?;
        let (Some(results), Some(total)) = (body["results"].as_array(), body["total"].as_u64())
        else {
            return Err(format!(
                "{what}: expected {{\"results\": [...], \"total\": n}}, got {}",
                shorten(&body.to_string())
            ));
        };
        if total as usize != results.len() || results.len() > SEARCH_LIMIT {
            return Err(format!(
                "{what}: total {total} with {} results (limit {SEARCH_LIMIT})",
                results.len()
            ));
        }
        Ok(results.len())
    }

    /// How many current memories the workspace's list reports (not timed).
    async fn memory_total(&self) -> anyhow::Result<u64> {
        let request = self
            .client
            .get(format!("{}/api/memories?limit=1", self.base))
            .header("x-api-key", &self.key);
        let bytes = expect(request, "GET /api/memories?limit=1", StatusCode::OK)
            .await
            .map_err(anyhow::Error::msg)?;
        let list: serde_json::Value = serde_json::from_slice(&bytes)?;
        list["total"].as_u64().context("no total in the list")
    }
}

/// The kind of an error message of [`expect`]: the status answered, else the request that
/// failed.
fn error_kind(error: &str) -> String {
    match error.split_once(", got ") {
        Some((what, rest)) => {
            let status = rest.split(':').next().unwrap_or(rest);
            format!("{what}: {status}")
        }
        None => shorten(
            error
                .split(": ")
                .take(2)
                .collect::<Vec<_>>()
                .join(": ")
                .as_str(),
        ),
    }
}

fn shorten(text: &str) -> String {
    text.chars().take(BODY_SHOWN).collect()
}

// ----------------------------------------------------------------------------------------
// Passes

/// What one pass measured.
#[derive(Default)]
struct Pass {
    requests: usize,
    errors: usize,
    error_samples: Vec<String>,
    /// Unexpected answers by kind (status, or how the request failed).
    error_kinds: BTreeMap<String, usize>,
    wall: Duration,
    /// CPU time of this process during the pass, when the pass was long enough to tell.
    cpu: Option<Duration>,
    /// Latencies of the requests answered as expected, sorted.
    latencies: Vec<Duration>,
    /// Results returned in all (searches).
    results: usize,
    /// Searches that returned nothing.
    empty: usize,
}

impl Pass {
    fn finish(&mut self, started: Instant, cpu_before: Option<Duration>, label: &str) {
        self.wall = started.elapsed();
        self.cpu = pass_cpu::cpu_since(cpu_before, self.wall);
        self.latencies.sort_unstable();
        self.error_samples.truncate(ERROR_SAMPLES);
        for sample in &self.error_samples {
            eprintln!("[{label}] {sample}");
        }
    }

    fn merge(&mut self, other: Pass) {
        self.latencies.extend(other.latencies);
        self.errors += other.errors;
        self.error_samples.extend(other.error_samples);
        for (kind, count) in other.error_kinds {
            *self.error_kinds.entry(kind).or_default() += count;
        }
        self.results += other.results;
        self.empty += other.empty;
    }

    fn error(&mut self, error: String) {
        self.errors += 1;
        *self.error_kinds.entry(error_kind(&error)).or_default() += 1;
        if self.error_samples.len() < ERROR_SAMPLES {
            self.error_samples.push(error);
        }
    }

    fn throughput(&self) -> f64 {
        self.requests as f64 / self.wall.as_secs_f64()
    }

    fn cpu_share(&self) -> String {
        pass_cpu::cpu_share(self.cpu, self.wall)
    }

    fn p(&self, p: f64) -> f64 {
        percentile_ms(&self.latencies, p)
    }

    fn max(&self) -> f64 {
        self.latencies.last().copied().map_or(f64::NAN, millis)
    }
}

/// `queries` asked in `mode`, `concurrency` at a time (closed loop).
async fn run_searches(
    target: &Arc<Target>,
    label: &str,
    queries: &[String],
    mode: &'static str,
    concurrency: usize,
) -> anyhow::Result<Pass> {
    let queries = Arc::new(queries.to_vec());
    let next = Arc::new(AtomicUsize::new(0));
    let cpu_before = process_cpu_time();
    let started = Instant::now();
    let clients: Vec<_> = (0..concurrency.min(queries.len()).max(1))
        .map(|_| {
            let (target, queries, next) = (target.clone(), queries.clone(), next.clone());
            tokio::spawn(async move {
                let mut out = Pass::default();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(query) = queries.get(i) else { break };
                    let sent = Instant::now();
                    match target.search(query, mode).await {
                        Ok(found) => {
                            out.latencies.push(sent.elapsed());
                            out.results += found;
                            out.empty += usize::from(found == 0);
                        }
                        Err(error) => out.error(error),
                    }
                }
                out
            })
        })
        .collect();
    let mut pass = Pass {
        requests: queries.len(),
        ..Pass::default()
    };
    for client in futures::future::join_all(clients).await {
        pass.merge(client.context("a benchmark client panicked")?);
    }
    pass.finish(started, cpu_before, label);
    Ok(pass)
}

/// Fresh hybrid searches, one at a time, each beside the model embedding the same query
/// directly (no HTTP, no cache; the server's query cache is not touched), the two in turns
/// (the model first for every other query): the search pass and the model's. The machine's
/// speed drifts within a run, so the model measured minutes later is no measure of what a
/// search adds to it. Each pass's wall time is the sum of its own latencies.
async fn run_fresh_beside_model(
    target: &Arc<Target>,
    embedder: &Arc<dyn Embedder>,
    queries: &[String],
) -> anyhow::Result<(Pass, Pass)> {
    let mut searches = Pass {
        requests: queries.len(),
        ..Pass::default()
    };
    let mut alone = Pass {
        requests: queries.len(),
        ..Pass::default()
    };
    for (i, query) in queries.iter().enumerate() {
        for step in 0..2 {
            let sent = Instant::now();
            if (i + step) % 2 == 0 {
                match target.search(query, "hybrid").await {
                    Ok(found) => {
                        searches.latencies.push(sent.elapsed());
                        searches.results += found;
                        searches.empty += usize::from(found == 0);
                    }
                    Err(error) => searches.error(error),
                }
            } else {
                match embedder.embed(vec![query.clone()]).await {
                    Ok(vectors) if vectors.len() == 1 => {
                        alone.latencies.push(sent.elapsed());
                        alone.results += 1;
                    }
                    Ok(vectors) => alone.error(format!("{} vectors for 1 text", vectors.len())),
                    Err(error) => alone.error(format!("embedding failed: {error}")),
                }
            }
        }
    }
    for (pass, label) in [(&mut searches, "single"), (&mut alone, "one query")] {
        let wall = pass.latencies.iter().sum();
        pass.finish(Instant::now(), None, label);
        pass.wall = wall;
    }
    Ok((searches, alone))
}

/// A save pass: latencies by the order the saves were sent, and the answers by status.
struct Seeding {
    pass: Pass,
    /// Latency of save `i` (in the order sent), `None` when it failed.
    by_order: Vec<Option<Duration>>,
    /// Stopped sending because too many answers were unexpected.
    stopped_early: bool,
    /// The progress reports, in order.
    milestones: Vec<Milestone>,
    /// The import only: the model's throughput (texts/s) on the first [`IMPORT_BATCH`] texts in
    /// one call, measured before the first line and at each progress report while the import
    /// waits (the stages' times leave the probes out).
    model_probes: Vec<f64>,
    created: usize,
    duplicate: usize,
    superseded: usize,
}

impl Seeding {
    /// Sorted latencies of the saves sent in `range` (in the order sent).
    fn sent(&self, range: std::ops::Range<usize>) -> Vec<Duration> {
        let range = range.start.min(self.by_order.len())..range.end.min(self.by_order.len());
        let mut sent: Vec<Duration> = self.by_order[range].iter().flatten().copied().collect();
        sent.sort_unstable();
        sent
    }

    /// Sorted latencies of the last `n` saves sent.
    fn tail(&self, n: usize) -> Vec<Duration> {
        let from = self.by_order.len().saturating_sub(n);
        let mut tail: Vec<Duration> = self.by_order[from..].iter().flatten().copied().collect();
        tail.sort_unstable();
        tail
    }

    /// Saves per second between one progress report and the next, one per report.
    fn stage_rates(&self) -> Vec<f64> {
        let mut before = (0, Duration::ZERO);
        self.milestones
            .iter()
            .map(|milestone| {
                let rate = (milestone.done - before.0) as f64
                    / milestone
                        .elapsed
                        .saturating_sub(before.1)
                        .as_secs_f64()
                        .max(1e-9);
                before = (milestone.done, milestone.elapsed);
                rate
            })
            .collect()
    }

    /// A row of the save latency table: what was saved, by how many clients, and how.
    fn latency_row(&self, w: &mut String, what: &str, clients: &str) {
        let pass = &self.pass;
        let _ = writeln!(
            w,
            "| {what} | {clients} | {:.0} | {:.1} | {:.1} | {:.1} | {:.1} | {} / {} / {} |",
            pass.throughput(),
            pass.p(50.0),
            pass.p(95.0),
            pass.p(99.0),
            pass.max(),
            self.created,
            self.duplicate,
            self.superseded
        );
    }
}

#[derive(Default)]
struct SaveCounters {
    done: AtomicUsize,
    created: AtomicUsize,
    duplicate: AtomicUsize,
    superseded: AtomicUsize,
    errors: AtomicUsize,
    /// Every progress report: saves answered, time since the start, resident memory.
    milestones: std::sync::Mutex<Vec<Milestone>>,
}

/// Where the seeding stood at one progress report.
#[derive(Clone, Copy)]
struct Milestone {
    done: usize,
    elapsed: Duration,
    memory: Option<MemoryStatus>,
}

/// The model's throughput on `texts` in one call, blocking this thread (the import's, or the
/// bench's around the concurrent saves, which waits meanwhile; the embedding itself runs on the
/// blocking pool).
fn probe_model(embedder: &Arc<dyn Embedder>, texts: &[String]) -> (f64, Duration) {
    let started = Instant::now();
    let embedded = futures::executor::block_on(embedder.embed(texts.to_vec()));
    let took = started.elapsed();
    match embedded {
        Ok(vectors) if vectors.len() == texts.len() => {
            (texts.len() as f64 / took.as_secs_f64().max(1e-9), took)
        }
        _ => (f64::NAN, took),
    }
}

/// A throughput against the mean of the model's probes right before and after it.
fn share_of_probes(rate: f64, before: f64, after: f64) -> f64 {
    rate / ((before + after) / 2.0).max(1e-9)
}

/// `BENCH_SEED=import`: `texts` as JSON lines through the import path of
/// `memvault admin import`, timed from the first line read to the report, less the model
/// probes taken at each progress report.
async fn import_seed(
    app: &Application,
    embedder: &Arc<dyn Embedder>,
    workspace_id: Uuid,
    texts: &[String],
) -> anyhow::Result<Seeding> {
    let mut lines = Vec::new();
    for text in texts {
        serde_json::to_writer(&mut lines, &serde_json::json!({ "content": text }))?;
        lines.push(b'\n');
    }
    let total = texts.len();
    let probe = &texts[..total.min(IMPORT_BATCH)];
    let mut model_probes = vec![probe_model(embedder, probe).0];
    let cpu_before = process_cpu_time();
    let started = Instant::now();
    let mut paused = Duration::ZERO;
    let mut paused_cpu = Duration::ZERO;
    let mut milestones = Vec::new();
    let mut next = PROGRESS_EVERY;
    let report = app
        .memories()
        .import(workspace_id, std::io::Cursor::new(lines), |done| {
            if done >= next || done == total {
                let milestone = Milestone {
                    done,
                    elapsed: started.elapsed().saturating_sub(paused),
                    memory: memory_status(),
                };
                let cpu = process_cpu_time();
                let (rate, took) = probe_model(embedder, probe);
                paused += took;
                if let (Some(before), Some(after)) = (cpu, process_cpu_time()) {
                    paused_cpu += after.saturating_sub(before);
                }
                eprintln!(
                    "import: {done}/{total} lines in {} ({:.0} lines/s); the model alone then: \
                     {rate:.0} texts/s",
                    seconds(milestone.elapsed),
                    done as f64 / milestone.elapsed.as_secs_f64().max(1e-9)
                );
                model_probes.push(rate);
                milestones.push(milestone);
                next = done - done % PROGRESS_EVERY + PROGRESS_EVERY;
            }
        })
        .await
        .context("the import failed")?;
    let mut pass = Pass {
        requests: report.lines,
        ..Pass::default()
    };
    for (line, reason) in &report.errors {
        pass.error(format!("line {line}: {reason}"));
    }
    pass.errors = report.failed;
    pass.finish(started, cpu_before, "import");
    pass.wall = pass.wall.saturating_sub(paused);
    pass.cpu = pass.cpu.map(|cpu| cpu.saturating_sub(paused_cpu));
    Ok(Seeding {
        pass,
        by_order: Vec::new(),
        stopped_early: false,
        milestones,
        model_probes,
        created: report.created,
        duplicate: report.duplicates,
        superseded: report.superseded,
    })
}

/// Saves `texts[range]`, `concurrency` at a time (closed loop); progress on stderr when `progress`.
async fn run_saves(
    target: &Arc<Target>,
    label: &str,
    texts: &Arc<Vec<String>>,
    range: std::ops::Range<usize>,
    concurrency: usize,
    progress: bool,
) -> anyhow::Result<Seeding> {
    let total = range.len();
    let first = range.start;
    let next = Arc::new(AtomicUsize::new(0));
    let counters = Arc::new(SaveCounters::default());
    let cpu_before = process_cpu_time();
    let started = Instant::now();
    let clients: Vec<_> = (0..concurrency.min(total).max(1))
        .map(|_| {
            let (target, texts, next, counters) = (
                target.clone(),
                texts.clone(),
                next.clone(),
                counters.clone(),
            );
            tokio::spawn(async move {
                let mut out = Pass::default();
                let mut timed = Vec::new();
                loop {
                    let errors = counters.errors.load(Ordering::Relaxed);
                    let done = counters.done.load(Ordering::Relaxed);
                    if errors >= MAX_SEED_ERRORS && errors * MAX_SEED_ERROR_RATIO > done {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    let sent = Instant::now();
                    let outcome = target.save(&texts[first + i]).await;
                    let latency = sent.elapsed();
                    match outcome {
                        Ok(status) => {
                            timed.push((i, latency));
                            out.latencies.push(latency);
                            let counter = match status {
                                SaveStatus::Created => &counters.created,
                                SaveStatus::Duplicate => &counters.duplicate,
                                SaveStatus::Superseded => &counters.superseded,
                            };
                            counter.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(error) => {
                            counters.errors.fetch_add(1, Ordering::Relaxed);
                            out.error(error);
                        }
                    }
                    let done = counters.done.fetch_add(1, Ordering::Relaxed) + 1;
                    if progress && (done % PROGRESS_EVERY == 0 || done == total) {
                        show_progress(&counters, done, total, started.elapsed());
                    }
                }
                (out, timed)
            })
        })
        .collect();
    let mut pass = Pass {
        requests: total,
        ..Pass::default()
    };
    let mut by_order = vec![None; total];
    for client in futures::future::join_all(clients).await {
        let (out, timed) = client.context("a benchmark client panicked")?;
        pass.merge(out);
        for (i, latency) in timed {
            by_order[i] = Some(latency);
        }
    }
    pass.finish(started, cpu_before, label);
    let sent = counters.done.load(Ordering::Relaxed);
    let stopped_early = sent < total;
    if stopped_early {
        eprintln!(
            "[{label}] stopped after {} unexpected answers: {} saves not sent",
            pass.errors,
            total - sent
        );
    }
    Ok(Seeding {
        pass,
        stopped_early,
        model_probes: Vec::new(),
        milestones: {
            let mut milestones = counters
                .milestones
                .lock()
                .map(|m| m.clone())
                .unwrap_or_default();
            milestones.sort_by_key(|m| m.done);
            milestones
        },
        by_order,
        created: counters.created.load(Ordering::Relaxed),
        duplicate: counters.duplicate.load(Ordering::Relaxed),
        superseded: counters.superseded.load(Ordering::Relaxed),
    })
}

fn show_progress(counters: &SaveCounters, done: usize, total: usize, elapsed: Duration) {
    let rate = done as f64 / elapsed.as_secs_f64().max(1e-9);
    let eta = (total - done) as f64 / rate.max(1e-9);
    let memory = memory_status();
    if let Ok(mut milestones) = counters.milestones.lock() {
        milestones.push(Milestone {
            done,
            elapsed,
            memory,
        });
    }
    let rss = memory.map_or_else(|| "n/a".to_string(), |m| format!("{:.0} MB", m.rss));
    eprintln!(
        "seeding: {done}/{total} saves in {:.0} s ({rate:.0}/s, about {:.0} s left); created {}, \
         duplicate {}, superseded {}, errors {}; RSS {rss}",
        elapsed.as_secs_f64(),
        eta,
        counters.created.load(Ordering::Relaxed),
        counters.duplicate.load(Ordering::Relaxed),
        counters.superseded.load(Ordering::Relaxed),
        counters.errors.load(Ordering::Relaxed),
    );
}

/// `texts` embedded by calling the model directly (no HTTP, no cache), `batch` texts per call,
/// one call after the other; one latency per call.
async fn embed_alone(
    embedder: &Arc<dyn Embedder>,
    label: &str,
    texts: &[String],
    batch: usize,
) -> anyhow::Result<Pass> {
    let cpu_before = process_cpu_time();
    let started = Instant::now();
    let mut pass = Pass::default();
    for chunk in texts.chunks(batch.max(1)) {
        pass.requests += 1;
        let sent = Instant::now();
        match embedder.embed(chunk.to_vec()).await {
            Ok(vectors) if vectors.len() == chunk.len() => {
                pass.latencies.push(sent.elapsed());
                pass.results += chunk.len();
            }
            Ok(vectors) => pass.error(format!(
                "{} vectors for {} texts",
                vectors.len(),
                chunk.len()
            )),
            Err(error) => pass.error(format!("embedding failed: {error}")),
        }
    }
    pass.finish(started, cpu_before, label);
    Ok(pass)
}

/// What the model alone does, to tell what bounds search and save.
struct ModelAlone {
    /// One query per call (the measured queries, in turns with their fresh searches).
    query: Pass,
    /// One memory text per call (the texts of the single-client saves).
    memory: Pass,
    /// The first seeded memory texts, one per call.
    seeded_single: Pass,
    /// The same texts in calls of `batch` (the texts the concurrent clients hold at once).
    batched: Pass,
    batch: usize,
    /// The same texts in the import's batches ([`IMPORT_BATCH`]).
    import_batched: Pass,
}

impl ModelAlone {
    fn rate(pass: &Pass) -> f64 {
        pass.results as f64 / pass.wall.as_secs_f64().max(1e-9)
    }
}

// ----------------------------------------------------------------------------------------
// Process and machine

/// Resident memory of this process, in MB (10^6 bytes).
#[derive(Clone, Copy)]
struct MemoryStatus {
    /// `VmRSS`: resident now.
    rss: f64,
    /// `VmHWM`: the peak resident so far.
    hwm: f64,
}

fn memory_status() -> Option<MemoryStatus> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<f64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kb: f64 = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kb * 1024.0 / 1e6)
    };
    Some(MemoryStatus {
        rss: field("VmRSS:")?,
        hwm: field("VmHWM:")?,
    })
}

fn seconds(d: Duration) -> String {
    if d < Duration::from_secs(10) {
        format!("{:.2} s", d.as_secs_f64())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

fn mb(m: Option<MemoryStatus>, hwm: bool) -> String {
    m.map_or_else(
        || "n/a".to_string(),
        |m| format!("{:.0}", if hwm { m.hwm } else { m.rss }),
    )
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "**not met**"
    }
}

// ----------------------------------------------------------------------------------------
// The benchmark

/// A search pass: label, mode, query vector (none, fresh, cached), clients, what it measured.
type SearchRow = (&'static str, &'static str, &'static str, usize, Pass);

/// Everything measured, for the report.
struct Measured {
    backend: String,
    model_load: Duration,
    first_build: Duration,
    seeding: Seeding,
    total_after_seeding: u64,
    rss_seeded: Option<MemoryStatus>,
    idle_after_stop: Option<Duration>,
    restart_build: Duration,
    maintenance: Duration,
    total_after_restart: u64,
    rss_restarted: Option<MemoryStatus>,
    searches: Vec<SearchRow>,
    model: ModelAlone,
    /// Machine load at the start, after seeding, after the restart, at the end.
    loads: [Option<Load>; 4],
    single_saves: Seeding,
    /// `BENCH_CONCURRENCY` clients saving at once, after the single-client saves.
    concurrent_saves: Seeding,
    /// After the searches.
    rss_searched: Option<MemoryStatus>,
    /// After the single-client saves (before the model is called alone).
    rss_end: Option<MemoryStatus>,
    db_connections: u32,
    /// How the model multiplied.
    precision: &'static str,
}

fn settings_for(database: &Database) -> Settings {
    let mut settings = server::bench_settings(Settings::default());
    settings.server.log_level =
        std::env::var("MEMVAULT_LOG_LEVEL").unwrap_or_else(|_| "warn".to_string());
    database.configure(&mut settings);
    settings
}

async fn bench(config: &Config, corpus: &Corpus, database: &Database) -> anyhow::Result<Measured> {
    let settings = settings_for(database);
    memvault::telemetry::init(settings.server.log_format, &settings.server.log_level);
    let backend = database
        .describe("SQLite, WAL, synchronous=full (server default)")
        .await;
    let n = config.memories;
    eprintln!(
        "memvault scale benchmark on {backend}: {n} memories, concurrency {}, {} queries per pass",
        config.concurrency, config.queries
    );

    // 1. The model, shared by both servers.
    let started = Instant::now();
    let embedder = load_embedder(&settings)
        .await
        .context("cannot load the embedding model")?;
    let model_load = started.elapsed();
    let with_model = || Overrides {
        embedder: Some(embedder.clone()),
        ..Overrides::default()
    };

    // 2. Seeding through the first server.
    let started = Instant::now();
    let app = Application::build_with(&settings, with_model())
        .await
        .context("cannot start memvault")?;
    let first_build = started.elapsed();
    server::check_backend(&app, config.postgres_url.is_some())?;
    let (workspace, key) = server::create_workspace(&app, "scale bench").await?;
    let http = client(config.concurrency, Duration::from_secs(120))?;
    let load_start = load_now();
    let imported = if config.import {
        Some(import_seed(&app, &embedder, workspace.id, &corpus.texts[..n]).await)
    } else {
        None
    };
    let running = Running::serve(app);
    let target = Arc::new(Target {
        client: http.clone(),
        base: running.base.clone(),
        key: key.clone(),
    });
    let seeding = match imported {
        Some(seeding) => seeding,
        None => {
            run_saves(
                &target,
                "seeding",
                &corpus.texts,
                0..n,
                config.concurrency,
                true,
            )
            .await
        }
    };
    let total_after_seeding = match &seeding {
        Ok(_) => target.memory_total().await,
        Err(_) => Ok(0),
    };
    let rss_seeded = memory_status();
    let load_seeded = load_now();
    drop(target);
    running.stop(Duration::from_secs(60)).await?;
    let seeding = seeding?;
    let total_after_seeding = total_after_seeding?;
    if seeding.stopped_early {
        bail!(
            "seeding stopped: {} saves did not answer as expected (first ones shown above)",
            seeding.pass.errors
        );
    }

    // 3. Let the first server's background index work end.
    eprintln!("first server stopped; waiting for the process to go idle");
    let idle_after_stop = wait_until_idle(IDLE_TIMEOUT).await;

    // 4. Restart on the same database: start-up (index rebuild), then index maintenance.
    eprintln!("starting the second server on {total_after_seeding} memories");
    let started = Instant::now();
    let app = Application::build_with(&settings, with_model())
        .await
        .context("cannot restart memvault")?;
    let restart_build = started.elapsed();
    eprintln!(
        "second server built in {}; waiting for index maintenance",
        seconds(restart_build)
    );
    let started = Instant::now();
    if !app.wait_for_index_maintenance(MAINTENANCE_TIMEOUT).await {
        bail!(
            "the index maintenance did not finish within {} after the restart",
            seconds(MAINTENANCE_TIMEOUT)
        );
    }
    let maintenance = started.elapsed();
    let rss_restarted = memory_status();
    let load_restarted = load_now();
    let running = Running::serve(app);
    let target = Arc::new(Target {
        client: http,
        base: running.base.clone(),
        key,
    });
    let outcome = measure_restarted(&target, &embedder, config, corpus).await;
    let total_after_restart = target.memory_total().await;
    drop(target);
    let load_end = load_now();
    running.stop(Duration::from_secs(60)).await?;
    let total_after_restart = total_after_restart?;
    let Restarted {
        searches,
        rss_searched,
        single_saves,
        concurrent_saves,
        rss_end,
        model,
    } = outcome?;

    Ok(Measured {
        backend,
        model_load,
        first_build,
        seeding,
        total_after_seeding,
        rss_seeded,
        idle_after_stop,
        restart_build,
        maintenance,
        total_after_restart,
        rss_restarted,
        searches,
        model,
        loads: [load_start, load_seeded, load_restarted, load_end],
        single_saves,
        concurrent_saves,
        rss_searched,
        rss_end,
        db_connections: settings.storage.max_connections,
        precision: server::model_precision(&settings),
    })
}

/// What was measured on the restarted server.
struct Restarted {
    searches: Vec<SearchRow>,
    rss_searched: Option<MemoryStatus>,
    single_saves: Seeding,
    concurrent_saves: Seeding,
    rss_end: Option<MemoryStatus>,
    model: ModelAlone,
}

/// Searches, single-client saves and the model alone, on the restarted server.
async fn measure_restarted(
    target: &Arc<Target>,
    embedder: &Arc<dyn Embedder>,
    config: &Config,
    corpus: &Corpus,
) -> anyhow::Result<Restarted> {
    let (n, q, c) = (config.memories, config.queries, config.concurrency);
    let measured = &corpus.queries[..q];
    let fresh_concurrent = &corpus.queries[q..2 * q];
    let warmup = &corpus.queries[corpus.queries.len() - WARMUP_QUERIES..];

    eprintln!("searching");
    let mut warm = run_searches(target, "warm-up", warmup, "hybrid", 1).await?;
    warm.merge(run_searches(target, "warm-up", warmup, "keyword", 1).await?);
    if warm.errors > 0 {
        bail!("{} warm-up searches failed (shown above)", warm.errors);
    }
    let mut rows: Vec<SearchRow> = Vec::new();
    // Order matters: keyword embeds nothing, so the hybrid pass after it still embeds every
    // query for the first time; the passes after that find the vectors cached.
    let mut query_alone = None;
    for (label, mode, vector, clients, queries) in [
        ("single", "keyword", "none", 1, measured),
        ("single", "hybrid", "fresh", 1, measured),
        ("single", "hybrid", "cached", 1, measured),
        ("single", "semantic", "cached", 1, measured),
        ("concurrent", "hybrid", "fresh", c, fresh_concurrent),
        ("concurrent", "hybrid", "cached", c, measured),
    ] {
        let pass = if vector == "fresh" && clients == 1 {
            let (searches, alone) = run_fresh_beside_model(target, embedder, queries).await?;
            query_alone = Some(alone);
            searches
        } else {
            run_searches(target, label, queries, mode, clients).await?
        };
        rows.push((label, mode, vector, clients, pass));
    }

    let rss_searched = memory_status();

    eprintln!("{SINGLE_SAVES} single-client saves");
    let single_saves = run_saves(
        target,
        "single-client saves",
        &corpus.texts,
        n..n + SINGLE_SAVES,
        1,
        false,
    )
    .await?;
    // The model probed right before and after, as around the import's stages.
    let probe = &corpus.texts[..n.min(IMPORT_BATCH)];
    let probe_before = probe_model(embedder, probe).0;
    eprintln!("{CONCURRENT_SAVES} saves from {c} clients");
    let first = n + SINGLE_SAVES;
    let mut concurrent_saves = run_saves(
        target,
        "concurrent saves",
        &corpus.texts,
        first..first + CONCURRENT_SAVES,
        c,
        false,
    )
    .await?;
    let rss_end = memory_status();
    concurrent_saves.model_probes = vec![probe_before, probe_model(embedder, probe).0];

    // Last: calling the model directly allocates in this process too.
    eprintln!("the model alone");
    let batch = c.min(BATCH_SIZE);
    let seeded = &corpus.texts[..n.min(MODEL_BATCHED_TEXTS)];
    let model = ModelAlone {
        query: query_alone.context("the fresh single-client searches did not run")?,
        memory: embed_alone(
            embedder,
            "one memory text",
            &corpus.texts[n..n + SINGLE_SAVES],
            1,
        )
        .await?,
        seeded_single: embed_alone(embedder, "seeded texts one at a time", seeded, 1).await?,
        batched: embed_alone(embedder, "memory texts in batches", seeded, batch).await?,
        batch,
        import_batched: embed_alone(
            embedder,
            "memory texts in the import's batches",
            seeded,
            IMPORT_BATCH,
        )
        .await?,
    };

    Ok(Restarted {
        searches: rows,
        rss_searched,
        single_saves,
        concurrent_saves,
        rss_end,
        model,
    })
}

fn report(config: &Config, corpus: &Corpus, m: &Measured) -> String {
    let mut out = String::new();
    let w = &mut out;
    let n = config.memories;
    let cores = cores();
    // Not the `nproc` command: it honours `OMP_THREAD_LIMIT`, which the OCR set-up lowers to 1
    // in this process (and so in its children).
    let nproc = cores.to_string();
    let seed = &m.seeding;
    let tail = seed.tail(TAIL_SAVES);
    let tail_n = tail.len();
    let single = &m.single_saves;
    let search = |mode: &str, vector: &str, clients: usize| {
        m.searches
            .iter()
            .find(|r| r.1 == mode && r.2 == vector && r.3 == clients)
            .map(|r| &r.4)
    };

    let _ = writeln!(w, "## memvault at scale: {n} memories in one workspace");
    let _ = writeln!(w);
    let _ = writeln!(w, "| | |");
    let _ = writeln!(w, "|---|---|");
    let _ = writeln!(
        w,
        "| commit | `{}` (at the start of the run) |",
        config.commit
    );
    let _ = writeln!(
        w,
        "| date (UTC) | {} |",
        chrono::Utc::now().format("%Y-%m-%d %H:%M")
    );
    let _ = writeln!(w, "| `nproc` | {nproc} |");
    let _ = writeln!(w, "| CPU | {} |", cpu_model());
    let _ = writeln!(w, "| database | {} |", m.backend);
    let _ = writeln!(
        w,
        "| server | in-process, rate limits off, memory limits 10,000,000, log level `warn`, \
         {} database connections, local all-MiniLM-L6-v2 ({}; loaded once, shared by both \
         servers) |",
        m.db_connections, m.precision
    );
    let _ = writeln!(
        w,
        "| configuration | BENCH_MEMORIES={n}, BENCH_CONCURRENCY={}, BENCH_QUERIES={}, \
         search limit {SEARCH_LIMIT} |",
        config.concurrency, config.queries
    );
    let plain_seeded = corpus.plain[..n.min(corpus.plain.len())]
        .iter()
        .filter(|&&plain| plain)
        .count();
    let _ = writeln!(
        w,
        "| corpus | SciFact (`{}`): {} abstracts; {plain_seeded} sentences alone + {} \
         \"title: sentence\" texts seeded, all distinct; {} distinct queries |",
        config.scifact_dir.display(),
        corpus.documents,
        n - plain_seeded,
        corpus.queries.len()
    );
    let _ = writeln!(w);

    if config.import {
        let _ = writeln!(
            w,
            "### Seeding: the import path (`memvault admin import`, `MemoryService::import` in-process)"
        );
    } else {
        let _ = writeln!(w, "### Seeding: `POST /api/memories`");
    }
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "| saves | clients | wall | saves/s | created | duplicate | superseded | errors | CPU |"
    );
    let _ = writeln!(w, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    let _ = writeln!(
        w,
        "| {} | {} | {} | {:.0} | {} | {} | {} | {} | {} |",
        seed.pass.requests,
        if config.import {
            "import, batches of 256".to_string()
        } else {
            config.concurrency.to_string()
        },
        seconds(seed.pass.wall),
        seed.pass.throughput(),
        seed.created,
        seed.duplicate,
        seed.superseded,
        seed.pass.errors,
        seed.pass.cpu_share()
    );
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "Current memories in the workspace after seeding (`GET /api/memories` total): {}; after \
         the restart and the single-client saves: {}.",
        m.total_after_seeding, m.total_after_restart
    );
    let _ = writeln!(w);

    if seed.milestones.len() > 1 {
        let _ = writeln!(
            w,
            "Seeding by stage: throughput while the stage's saves were answered, latency of the \
             saves sent in it, resident memory at its end."
        );
        let _ = writeln!(w);
        let _ = writeln!(
            w,
            "| saves | elapsed | saves/s | p50 ms | p95 ms | VmRSS MB |"
        );
        let _ = writeln!(w, "|---|--:|--:|--:|--:|--:|");
        let mut from = 0;
        for (milestone, rate) in seed.milestones.iter().zip(seed.stage_rates()) {
            let latencies = seed.sent(from..milestone.done);
            let latency = |p: f64| {
                if latencies.is_empty() {
                    "-".to_string()
                } else {
                    format!("{:.1}", percentile_ms(&latencies, p))
                }
            };
            let _ = writeln!(
                w,
                "| {}..{} | {} | {rate:.0} | {} | {} | {} |",
                from,
                milestone.done,
                seconds(milestone.elapsed),
                latency(50.0),
                latency(95.0),
                mb(milestone.memory, false)
            );
            from = milestone.done;
        }
        let _ = writeln!(w);
    }

    let _ = writeln!(w, "### Save latency at scale");
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "| saves | clients | req/s | p50 ms | p95 ms | p99 ms | max ms | created / duplicate / superseded |"
    );
    let _ = writeln!(w, "|---|--:|--:|--:|--:|--:|--:|---|");
    if !config.import {
        seed.latency_row(
            w,
            &format!("all {} seeding saves", seed.pass.requests),
            &config.concurrency.to_string(),
        );
        let _ = writeln!(
            w,
            "| last {tail_n} seeding saves | {} | | {:.1} | {:.1} | {:.1} | {:.1} | |",
            config.concurrency,
            percentile_ms(&tail, 50.0),
            percentile_ms(&tail, 95.0),
            percentile_ms(&tail, 99.0),
            tail.last().copied().map_or(f64::NAN, millis),
        );
    }
    single.latency_row(
        w,
        &format!("{} more saves after the restart", single.pass.requests),
        "1",
    );
    let concurrent = &m.concurrent_saves;
    concurrent.latency_row(
        w,
        &format!("{} more saves after those", concurrent.pass.requests),
        &config.concurrency.to_string(),
    );
    let _ = writeln!(w);

    let _ = writeln!(w, "### Start-up");
    let _ = writeln!(w);
    let _ = writeln!(w, "| step | time |");
    let _ = writeln!(w, "|---|--:|");
    let _ = writeln!(
        w,
        "| embedding model load (once) | {} |",
        seconds(m.model_load)
    );
    let _ = writeln!(
        w,
        "| first server build, empty database | {} |",
        seconds(m.first_build)
    );
    let _ = writeln!(
        w,
        "| process idle after the first server stopped | {} |",
        m.idle_after_stop
            .map_or_else(|| "did not go idle".to_string(), seconds)
    );
    let _ = writeln!(
        w,
        "| **second server build on {} memories** (database, migrations, index rebuild) | **{}** |",
        m.total_after_seeding,
        seconds(m.restart_build)
    );
    let _ = writeln!(
        w,
        "| index maintenance after the rebuild (HNSW segment builds) | {} |",
        seconds(m.maintenance)
    );
    let _ = writeln!(
        w,
        "| cold start estimate: model load + build (serving) | {} |",
        seconds(m.model_load + m.restart_build)
    );
    let _ = writeln!(
        w,
        "| ... + maintenance (steady-state search) | {} |",
        seconds(m.model_load + m.restart_build + m.maintenance)
    );
    let _ = writeln!(w);

    let _ = writeln!(
        w,
        "### Search: `GET /api/memories/search?q=...&limit={SEARCH_LIMIT}` on {} memories",
        m.total_after_seeding
    );
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "| clients | mode | query vector | requests | errors | req/s | p50 ms | p95 ms | p99 ms | max ms | results/search | empty | CPU |"
    );
    let _ = writeln!(w, "|--:|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for (_, mode, vector, clients, pass) in &m.searches {
        let answered = pass.latencies.len().max(1);
        let _ = writeln!(
            w,
            "| {clients} | {mode} | {vector} | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} | {} | {} |",
            pass.requests,
            pass.errors,
            pass.throughput(),
            pass.p(50.0),
            pass.p(95.0),
            pass.p(99.0),
            pass.max(),
            pass.results as f64 / answered as f64,
            pass.empty,
            pass.cpu_share()
        );
    }
    let _ = writeln!(w);
    let model = &m.model;
    let _ = writeln!(
        w,
        "### The model alone (called directly: no HTTP, no cache, one call after the other)"
    );
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "| texts | per call | calls | p50 ms | p95 ms | p99 ms | max ms | texts/s |"
    );
    let _ = writeln!(w, "|---|--:|--:|--:|--:|--:|--:|--:|");
    for (what, per_call, pass) in [
        (
            "the measured queries (in turns with their fresh searches)",
            1,
            &model.query,
        ),
        (
            "memory texts (those of the single-client saves)",
            1,
            &model.memory,
        ),
        ("memory texts (the first seeded)", 1, &model.seeded_single),
        (
            "memory texts (the first seeded)",
            model.batch,
            &model.batched,
        ),
        (
            "memory texts (the first seeded)",
            IMPORT_BATCH,
            &model.import_batched,
        ),
    ] {
        let _ = writeln!(
            w,
            "| {what} | {per_call} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} |",
            pass.requests,
            pass.p(50.0),
            pass.p(95.0),
            pass.p(99.0),
            pass.max(),
            pass.results as f64 / pass.wall.as_secs_f64()
        );
    }
    let _ = writeln!(w);

    let keyword = search("keyword", "none", 1);
    let fresh = search("hybrid", "fresh", 1);
    let cached = search("hybrid", "cached", 1);
    let semantic = search("semantic", "cached", 1);
    if let (Some(keyword), Some(fresh), Some(cached), Some(semantic)) =
        (keyword, fresh, cached, semantic)
    {
        let _ = writeln!(w, "### What bounds search (single client, p50)");
        let _ = writeln!(w);
        let _ = writeln!(w, "| part | ms | how |");
        let _ = writeln!(w, "|---|--:|---|");
        let _ = writeln!(
            w,
            "| HTTP + BM25 + database re-read | {:.2} | keyword p50 |",
            keyword.p(50.0)
        );
        let _ = writeln!(
            w,
            "| vector ranking + fusion | {:.2} | hybrid cached - keyword |",
            cached.p(50.0) - keyword.p(50.0)
        );
        let _ = writeln!(
            w,
            "| vector ranking minus BM25 | {:.2} | semantic (vectors only) cached - keyword |",
            semantic.p(50.0) - keyword.p(50.0)
        );
        let _ = writeln!(
            w,
            "| query embedding | {:.2} | hybrid fresh - hybrid cached (the model alone: {:.2}) |",
            fresh.p(50.0) - cached.p(50.0),
            model.query.p(50.0)
        );
        let _ = writeln!(
            w,
            "| total, hybrid with a fresh query | {:.2} | |",
            fresh.p(50.0)
        );
        let _ = writeln!(w);
    }

    let _ = writeln!(w, "### What bounds save");
    let _ = writeln!(w);
    let _ = writeln!(w, "| part | value | how |");
    let _ = writeln!(w, "|---|--:|---|");
    let _ = writeln!(
        w,
        "| single-client save p50 | {:.2} ms | 1 client, after the restart |",
        single.pass.p(50.0)
    );
    let _ = writeln!(
        w,
        "| embedding one memory text p50 | {:.2} ms | the model alone, same texts |",
        model.memory.p(50.0)
    );
    let _ = writeln!(
        w,
        "| the rest (HTTP, checks, database, indexes) | {:.2} ms | difference |",
        single.pass.p(50.0) - model.memory.p(50.0)
    );
    let _ = writeln!(
        w,
        "| seeding throughput | {:.0} saves/s | {} |",
        seed.pass.throughput(),
        if config.import {
            "the import path, batches of 256".to_string()
        } else {
            format!("{} clients", config.concurrency)
        }
    );
    let _ = writeln!(
        w,
        "| the model's throughput in batches of {} | {:.0} texts/s | the model alone, one call after the other |",
        model.batch,
        model.batched.results as f64 / model.batched.wall.as_secs_f64()
    );
    let _ = writeln!(w);

    write_path_ratios(w, config, m);

    let _ = writeln!(w, "### Other load on the machine");
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "CPU time other processes used, as a share of all {cores} cores (`/proc/stat` busy time \
         minus this process's CPU time), and the steal time (the hypervisor running someone \
         else while this machine's virtual CPUs had work): the figures above are only \
         comparable when both are low."
    );
    let _ = writeln!(w);
    let _ = writeln!(w, "| phase | other processes | steal |");
    let _ = writeln!(w, "|---|--:|--:|");
    let [start, seeded, restarted, end] = m.loads;
    for (phase, a, b) in [
        ("seeding", start, seeded),
        ("stop, idle wait, restart, maintenance", seeded, restarted),
        (
            "searches, the model alone, single-client saves",
            restarted,
            end,
        ),
    ] {
        let _ = writeln!(
            w,
            "| {phase} | {} | {} |",
            others_share(a, b),
            steal_share(a, b)
        );
    }
    let _ = writeln!(
        w,
        "| **the whole run** | {} | {} |",
        others_share(start, end),
        steal_share(start, end)
    );
    let _ = writeln!(w);

    let _ = writeln!(w, "### Resident memory (MB = 10^6 bytes)");
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "This process holds the server, the model and the HTTP clients, and the benchmark's \
         own {:.1} MB of texts to save; it is read before the model is called alone. After the restart the allocator may still hold memory \
         the first server freed, so those figures are an upper bound of what a freshly started \
         server holds.",
        corpus.texts.iter().map(String::len).sum::<usize>() as f64 / 1e6
    );
    let _ = writeln!(w);
    let _ = writeln!(w, "| when | VmRSS | VmHWM (peak so far) |");
    let _ = writeln!(w, "|---|--:|--:|");
    for (when, status) in [
        ("after seeding (first server running)", m.rss_seeded),
        (
            "after the restart, rebuild and maintenance",
            m.rss_restarted,
        ),
        ("after the searches", m.rss_searched),
        ("after the single-client saves (the end)", m.rss_end),
    ] {
        let _ = writeln!(
            w,
            "| {when} | {} | {} |",
            mb(status, false),
            mb(status, true)
        );
    }
    let _ = writeln!(w);

    let mut failed: Vec<(String, &Pass)> = vec![
        ("seeding".to_string(), &seed.pass),
        ("single-client saves".to_string(), &single.pass),
        ("concurrent saves".to_string(), &m.concurrent_saves.pass),
        (
            "the model alone: seeded texts one at a time".to_string(),
            &model.seeded_single,
        ),
        (
            "the model alone: the import's batches".to_string(),
            &model.import_batched,
        ),
        ("the model alone: queries".to_string(), &model.query),
        ("the model alone: memory texts".to_string(), &model.memory),
        ("the model alone: batches".to_string(), &model.batched),
    ];
    for (_, mode, vector, clients, pass) in &m.searches {
        failed.push((
            format!("search, {clients} client(s), {mode}, {vector}"),
            pass,
        ));
    }
    failed.retain(|(_, pass)| pass.errors > 0);
    if !failed.is_empty() {
        let _ = writeln!(w, "### Unexpected answers");
        let _ = writeln!(w);
        let _ = writeln!(w, "| pass | answer | count |");
        let _ = writeln!(w, "|---|---|--:|");
        for (pass_name, pass) in &failed {
            for (kind, count) in &pass.error_kinds {
                let _ = writeln!(w, "| {pass_name} | {kind} | {count} |");
            }
        }
        let _ = writeln!(w);
        let _ = writeln!(w, "First ones:");
        let _ = writeln!(w);
        for (pass_name, pass) in &failed {
            for sample in &pass.error_samples {
                let _ = writeln!(w, "- {pass_name}: `{sample}`");
            }
        }
        let _ = writeln!(w);
    }

    let _ = writeln!(w, "### Targets (2 cores)");
    let _ = writeln!(w);
    let _ = writeln!(w, "| target | measured | verdict |");
    let _ = writeln!(w, "|---|--:|---|");
    if let Some(fresh) = fresh {
        let (p50, p95) = (fresh.p(50.0), fresh.p(95.0));
        let _ = writeln!(
            w,
            "| search p50 <= {TARGET_SEARCH_P50_MS} ms (hybrid, fresh embedding, 1 client) | {p50:.2} ms | {} |",
            verdict(p50 <= TARGET_SEARCH_P50_MS)
        );
        let _ = writeln!(
            w,
            "| search p95 <= {TARGET_SEARCH_P95_MS} ms (hybrid, fresh embedding, 1 client) | {p95:.2} ms | {} |",
            verdict(p95 <= TARGET_SEARCH_P95_MS)
        );
    }
    let single_p50 = single.pass.p(50.0);
    let _ = writeln!(
        w,
        "| save p50 <= {TARGET_SAVE_P50_MS} ms (1 client, after {n} memories) | {single_p50:.1} ms | {} |",
        verdict(single_p50 <= TARGET_SAVE_P50_MS)
    );
    if !config.import {
        let tail_p50 = percentile_ms(&tail, 50.0);
        let _ = writeln!(
            w,
            "| save p50 <= {TARGET_SAVE_P50_MS} ms (last {tail_n} seeding saves, {} clients) | {tail_p50:.1} ms | {} |",
            config.concurrency,
            verdict(tail_p50 <= TARGET_SAVE_P50_MS)
        );
    }
    for (what, status, hwm) in [
        (
            "RSS after the restart and maintenance",
            m.rss_restarted,
            false,
        ),
        ("RSS at the end", m.rss_end, false),
        ("peak RSS of the whole run (VmHWM)", m.rss_end, true),
    ] {
        let value = status.map(|s| if hwm { s.hwm } else { s.rss });
        let _ = writeln!(
            w,
            "| {what} <= {TARGET_RSS_MB} MB | {} MB | {} |",
            mb(status, hwm),
            value.map_or("n/a", |v| verdict(v <= TARGET_RSS_MB))
        );
    }
    out
}

/// The write path's figures as ratios of the model's own throughput in the same run (issue 34):
/// absolute times move from run to run on shared machines, ratios hold.
fn write_path_ratios(w: &mut String, config: &Config, m: &Measured) {
    let model = &m.model;
    let single = ModelAlone::rate(&model.seeded_single);
    let imported = ModelAlone::rate(&model.import_batched);
    let micro = ModelAlone::rate(&model.batched);
    let _ = writeln!(
        w,
        "### The write path against the model (ratios in this run)"
    );
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "The model's own throughput on the first {} seeded texts: {single:.0} texts/s one at a \
         time, {micro:.0} in calls of {} (the texts as many saving clients hold at once), \
         {imported:.0} in the import's batches of {IMPORT_BATCH}.",
        model.seeded_single.results, model.batch
    );
    let _ = writeln!(w);
    let _ = writeln!(w, "| figure | measured | target | verdict |");
    let _ = writeln!(w, "|---|--:|--:|---|");
    let gain = imported / single.max(1e-9);
    let _ = writeln!(
        w,
        "| batching pays: the import's batches / one at a time (texts/s) | {gain:.2} | >= {TARGET_BATCH_GAIN} | {} |",
        verdict(gain >= TARGET_BATCH_GAIN)
    );
    let stages = m.seeding.stage_rates();
    let what = if config.import { "import" } else { "seeding" };
    if let (Some(first), Some(last)) = (stages.first(), stages.last()) {
        for (i, rate) in stages.iter().enumerate() {
            let _ = writeln!(
                w,
                "| {what} stage {} / the model in the import's batches | {:.2} ({rate:.0} lines/s) | | |",
                i + 1,
                rate / imported.max(1e-9)
            );
        }
        let share = last / imported.max(1e-9);
        let _ = writeln!(
            w,
            "| {what}, last stage / the model in the import's batches | {share:.2} | >= {TARGET_IMPORT_SHARE} | {} |",
            verdict(share >= TARGET_IMPORT_SHARE)
        );
        let flat = last / first.max(1e-9);
        let _ = writeln!(
            w,
            "| {what}, last stage / first stage | {flat:.2} | >= {TARGET_IMPORT_FLAT} | {} |",
            verdict(flat >= TARGET_IMPORT_FLAT)
        );
    }
    // The same against the model probed right before and after each stage: the machine's
    // speed drifts within a run, and this compares the two at the same time.
    let probes = &m.seeding.model_probes;
    if probes.len() == stages.len() + 1 && !stages.is_empty() {
        let shares: Vec<f64> = stages
            .iter()
            .enumerate()
            .map(|(i, rate)| share_of_probes(*rate, probes[i], probes[i + 1]))
            .collect();
        let _ = writeln!(
            w,
            "| {what} stages / the model probed before and after each (texts/s: {}) | {} | | |",
            probes
                .iter()
                .map(|p| format!("{p:.0}"))
                .collect::<Vec<_>>()
                .join(", "),
            shares
                .iter()
                .map(|s| format!("{s:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let last = shares[shares.len() - 1];
        let _ = writeln!(
            w,
            "| {what}, last stage / the model probed around it | {last:.2} | >= {TARGET_IMPORT_SHARE} | {} |",
            verdict(last >= TARGET_IMPORT_SHARE)
        );
        let flat = last / shares[0].max(1e-9);
        let _ = writeln!(
            w,
            "| {what}, the same share, last stage / first | {flat:.2} | >= {TARGET_IMPORT_FLAT} | {} |",
            verdict(flat >= TARGET_IMPORT_FLAT)
        );
    }
    let concurrent = m.concurrent_saves.pass.throughput() / imported.max(1e-9);
    let _ = writeln!(
        w,
        "| {} clients saving ({:.0} saves/s) / the model in the import's batches | {concurrent:.2} | >= {TARGET_CONCURRENT_SAVE_SHARE} | {} |",
        config.concurrency,
        m.concurrent_saves.pass.throughput(),
        verdict(concurrent >= TARGET_CONCURRENT_SAVE_SHARE)
    );
    if let [before, after] = m.concurrent_saves.model_probes[..] {
        let around = share_of_probes(m.concurrent_saves.pass.throughput(), before, after);
        let _ = writeln!(
            w,
            "| {} clients saving / the model probed before and after them (texts/s: {before:.0}, {after:.0}) | {around:.2} | >= {TARGET_CONCURRENT_SAVE_SHARE} | {} |",
            config.concurrency,
            verdict(around >= TARGET_CONCURRENT_SAVE_SHARE)
        );
    }
    let fresh = m
        .searches
        .iter()
        .find(|r| r.1 == "hybrid" && r.2 == "fresh" && r.3 == 1)
        .map(|r| r.4.p(50.0));
    if let Some(fresh) = fresh {
        let overhead = fresh - model.query.p(50.0);
        let _ = writeln!(
            w,
            "| hybrid search p50, fresh query ({fresh:.2} ms) - the model's one-query p50 ({:.2} ms) | {overhead:.2} ms | <= {TARGET_QUERY_OVERHEAD_MS} ms | {} |",
            model.query.p(50.0),
            verdict(overhead <= TARGET_QUERY_OVERHEAD_MS)
        );
    }
    let [start, _, _, end] = m.loads;
    let _ = writeln!(
        w,
        "| steal time over the run (share of all cores) | {} | | |",
        steal_share(start, end)
    );
    let _ = writeln!(w);
}

fn main() -> anyhow::Result<()> {
    memvault::startup::runtime()?.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    let after_seeding = SINGLE_SAVES + CONCURRENT_SAVES;
    let corpus = load_corpus(&config.scifact_dir, config.memories + after_seeding)?;
    if corpus.texts.len() < config.memories + after_seeding {
        bail!(
            "SciFact yields only {} distinct texts; BENCH_MEMORIES must be at most {}",
            corpus.texts.len(),
            corpus.texts.len().saturating_sub(after_seeding)
        );
    }
    let most_queries = corpus.queries.len().saturating_sub(WARMUP_QUERIES) / 2;
    if config.queries > most_queries {
        bail!(
            "BENCH_QUERIES must be at most {most_queries}: every measured pass needs queries never \
             asked before, and SciFact has {} distinct ones",
            corpus.queries.len()
        );
    }
    let measured = with_database(
        config.postgres_url.as_deref(),
        config.keep_database,
        async |database| bench(&config, &corpus, database).await,
    )
    .await?;
    println!("{}", report(&config, &corpus, &measured));
    let errors = measured
        .searches
        .iter()
        .map(|row| row.4.errors)
        .sum::<usize>()
        + measured.seeding.pass.errors
        + measured.single_saves.pass.errors
        + measured.concurrent_saves.pass.errors
        + measured.model.query.errors
        + measured.model.memory.errors
        + measured.model.seeded_single.errors
        + measured.model.batched.errors
        + measured.model.import_batched.errors;
    if errors > 0 {
        bail!("{errors} requests did not answer as expected (first ones shown above)");
    }
    Ok(())
}
