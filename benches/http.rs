//! HTTP benchmark of the memories API (issue 2): save, get and list, driven over real HTTP
//! against memvault started in-process. Run with `cargo bench --bench http`; the measured
//! figures and how to read them are in `docs/BENCHMARKS.md`.
//!
//! Environment:
//! - `BENCH_CONCURRENCY` (16): requests in flight in the concurrent passes.
//! - `BENCH_REQUESTS` (5000): requests per operation in the concurrent passes.
//! - `BENCH_SINGLE_REQUESTS` (1000): requests per operation in the single-client passes.
//! - `BENCH_WARMUP` (200): requests per operation before anything is measured.
//! - `BENCH_SQLITE_SYNC` (`full`, the server default): SQLite `synchronous`, `full` or `normal`.
//! - `BENCH_DB_CONNECTIONS` (the server default, 8): connections in the server's database pool.
//! - `MEMVAULT_BENCH_DATABASE_URL`, else `DATABASE_URL`: a `postgres://` URL runs against a
//!   fresh database created on that server and dropped at the end; otherwise SQLite in a
//!   temporary directory.
//! - `BENCH_LOG` (`warn`): the server's log filter (e.g. `warn,memvault::services=debug` shows
//!   where each save's time goes).
//! - `BENCH_KEEP_DATABASE` (unset): when `1`, the database is kept for inspection (its location
//!   is printed) instead of removed.
//!
//! Every request must answer the expected status (201 for save, 200 for get and list); any
//! other outcome is counted, shown, and makes the benchmark exit non-zero.

#[allow(dead_code)] // each benchmark uses part of it
mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use common::client::{client, expect, expect_json};
use common::cpu::process_cpu_time;
use common::database::{millis, percentile_ms, postgres_url_from_env, with_database, Database};
use common::pass_cpu::{cpu_share, cpu_since};
use common::server;
use memvault::config::{Settings, SqliteSync};
use memvault::startup::Application;
use rand::Rng;
use reqwest::StatusCode;
use uuid::Uuid;

/// Error messages kept per pass, to show what went wrong.
const ERROR_SAMPLES: usize = 5;

struct Config {
    concurrency: usize,
    requests: usize,
    single_requests: usize,
    warmup: usize,
    sqlite_sync: SqliteSync,
    db_connections: u32,
    postgres_url: Option<String>,
    keep_database: bool,
}

impl Config {
    fn from_env() -> anyhow::Result<Self> {
        let sqlite_sync = match std::env::var("BENCH_SQLITE_SYNC")
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
            .as_str()
        {
            "" | "full" => SqliteSync::Full,
            "normal" => SqliteSync::Normal,
            other => bail!("BENCH_SQLITE_SYNC must be `full` or `normal`, not `{other}`"),
        };
        let postgres_url = postgres_url_from_env()?;
        Ok(Config {
            concurrency: env_count("BENCH_CONCURRENCY", 16, 1)?,
            requests: env_count("BENCH_REQUESTS", 5_000, 1)?,
            single_requests: env_count("BENCH_SINGLE_REQUESTS", 1_000, 1)?,
            warmup: env_count("BENCH_WARMUP", 200, 0)?,
            sqlite_sync,
            db_connections: u32::try_from(env_count(
                "BENCH_DB_CONNECTIONS",
                Settings::default().storage.max_connections as usize,
                1,
            )?)?,
            postgres_url,
            keep_database: std::env::var("BENCH_KEEP_DATABASE").is_ok_and(|v| v.trim() == "1"),
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

fn sync_name(sync: SqliteSync) -> &'static str {
    match sync {
        SqliteSync::Full => "full",
        SqliteSync::Normal => "normal",
    }
}

/// One measured operation.
#[derive(Clone)]
enum Op {
    Save,
    /// Reads one of these ids, chosen at random per request.
    Get(Arc<Vec<Uuid>>),
    List,
}

impl Op {
    fn name(&self) -> &'static str {
        match self {
            Op::Save => "save",
            Op::Get(_) => "get",
            Op::List => "list",
        }
    }
}

/// The running server as the clients see it.
struct Target {
    client: reqwest::Client,
    base: String,
    key: String,
    /// Makes contents unique across runs on the same database.
    run: String,
    /// Numbers the saved contents, so that no save is a duplicate.
    saves: AtomicUsize,
}

impl Target {
    /// Sends one request of `op`; the id of what was saved, or why the answer was unexpected.
    async fn send(&self, op: &Op) -> Result<Option<Uuid>, String> {
        match op {
            Op::Save => {
                let n = self.saves.fetch_add(1, Ordering::Relaxed);
                let body = serde_json::json!({
                    "content": format!(
                        "benchmark {} memory {n}: the user prefers green tea in meeting {n}",
                        self.run
                    ),
                    "category": "fact",
                });
                let request = self
                    .client
                    .post(format!("{}/api/memories", self.base))
                    .header("x-api-key", &self.key)
                    .json(&body);
                let saved = expect_json(request, "POST /api/memories", StatusCode::CREATED).await?;
                if saved["status"] != "created" {
                    return Err(format!(
                        "POST /api/memories: expected a new memory: {saved}"
                    ));
                }
                saved["memory"]["id"]
                    .as_str()
                    .and_then(|id| Uuid::parse_str(id).ok())
                    .map(Some)
                    .ok_or_else(|| format!("POST /api/memories: no memory id in {saved}"))
            }
            Op::Get(ids) => {
                let id = ids[random_index(ids.len())];
                let request = self
                    .client
                    .get(format!("{}/api/memories/{id}", self.base))
                    .header("x-api-key", &self.key);
                expect(request, "GET /api/memories/{id}", StatusCode::OK).await?;
                Ok(None)
            }
            Op::List => {
                let request = self
                    .client
                    .get(format!("{}/api/memories?limit=20", self.base))
                    .header("x-api-key", &self.key);
                expect(request, "GET /api/memories?limit=20", StatusCode::OK).await?;
                Ok(None)
            }
        }
    }

    /// How many memories the workspace's list reports (not timed).
    async fn memory_total(&self) -> anyhow::Result<i64> {
        let request = self
            .client
            .get(format!("{}/api/memories?limit=1", self.base))
            .header("x-api-key", &self.key);
        let bytes = expect(request, "GET /api/memories?limit=1", StatusCode::OK)
            .await
            .map_err(anyhow::Error::msg)?;
        let list: serde_json::Value = serde_json::from_slice(&bytes)?;
        list["total"].as_i64().context("no total in the list")
    }
}

fn random_index(len: usize) -> usize {
    rand::rng().random_range(0..len)
}

/// What one pass measured.
struct Pass {
    label: &'static str,
    op: &'static str,
    concurrency: usize,
    requests: usize,
    errors: usize,
    error_samples: Vec<String>,
    wall: Duration,
    /// CPU time this process (server and clients together) spent during the pass, when the
    /// pass was long enough to tell.
    cpu: Option<Duration>,
    /// Latencies of the requests answered as expected, sorted.
    latencies: Vec<Duration>,
    /// Ids of the memories saved.
    ids: Vec<Uuid>,
}

#[derive(Default)]
struct WorkerOutput {
    latencies: Vec<Duration>,
    errors: usize,
    error_samples: Vec<String>,
    ids: Vec<Uuid>,
}

/// Sends `requests` requests of `op`, `concurrency` at a time (closed loop: each client sends
/// its next request when the previous one is answered).
async fn run_pass(
    target: &Arc<Target>,
    label: &'static str,
    op: Op,
    concurrency: usize,
    requests: usize,
) -> anyhow::Result<Pass> {
    let next = Arc::new(AtomicUsize::new(0));
    let cpu_before = process_cpu_time();
    let started = Instant::now();
    let clients: Vec<_> = (0..concurrency.min(requests).max(1))
        .map(|_| {
            let (target, op, next) = (target.clone(), op.clone(), next.clone());
            tokio::spawn(async move {
                let mut out = WorkerOutput::default();
                while next.fetch_add(1, Ordering::Relaxed) < requests {
                    let sent = Instant::now();
                    let outcome = target.send(&op).await;
                    let latency = sent.elapsed();
                    match outcome {
                        Ok(id) => {
                            out.latencies.push(latency);
                            out.ids.extend(id);
                        }
                        Err(error) => {
                            out.errors += 1;
                            if out.error_samples.len() < ERROR_SAMPLES {
                                out.error_samples.push(error);
                            }
                        }
                    }
                }
                out
            })
        })
        .collect();
    let mut pass = Pass {
        label,
        op: op.name(),
        concurrency,
        requests,
        errors: 0,
        error_samples: Vec::new(),
        wall: Duration::ZERO,
        cpu: None,
        latencies: Vec::with_capacity(requests),
        ids: Vec::new(),
    };
    for client in futures::future::join_all(clients).await {
        let out = client.context("a benchmark client panicked")?;
        pass.latencies.extend(out.latencies);
        pass.errors += out.errors;
        pass.ids.extend(out.ids);
        pass.error_samples.extend(out.error_samples);
    }
    pass.wall = started.elapsed();
    pass.cpu = cpu_since(cpu_before, pass.wall);
    pass.latencies.sort_unstable();
    pass.error_samples.truncate(ERROR_SAMPLES);
    for sample in &pass.error_samples {
        eprintln!("[{label} {}] {sample}", pass.op);
    }
    Ok(pass)
}

fn print_table(backend: &str, passes: &[Pass]) {
    println!(
        "| pass | operation | backend | concurrency | requests | errors | req/s | p50 ms | p95 ms | p99 ms | max ms | CPU |"
    );
    println!("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for pass in passes {
        let throughput = pass.requests as f64 / pass.wall.as_secs_f64();
        let cpu = cpu_share(pass.cpu, pass.wall);
        println!(
            "| {} | {} | {backend} | {} | {} | {} | {throughput:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {cpu} |",
            pass.label,
            pass.op,
            pass.concurrency,
            pass.requests,
            pass.errors,
            percentile_ms(&pass.latencies, 50.0),
            percentile_ms(&pass.latencies, 95.0),
            percentile_ms(&pass.latencies, 99.0),
            pass.latencies.last().copied().map_or(f64::NAN, millis),
        );
    }
}

/// Starts the server on `database`, runs every pass, stops the server; the number of requests
/// that did not answer as expected.
async fn bench(config: &Config, database: &Database) -> anyhow::Result<usize> {
    let mut settings = server::bench_settings(Settings::default());
    settings.server.log_level = std::env::var("BENCH_LOG").unwrap_or_else(|_| "warn".to_string());
    settings.storage.sqlite_synchronous = config.sqlite_sync;
    settings.storage.max_connections = config.db_connections;
    database.configure(&mut settings);
    memvault::telemetry::init(settings.server.log_format, &settings.server.log_level);

    let app = Application::build(&settings)
        .await
        .context("cannot start memvault")?;
    let backend = database
        .describe(&format!(
            "SQLite, WAL, synchronous={}",
            sync_name(config.sqlite_sync)
        ))
        .await;
    server::check_backend(&app, config.postgres_url.is_some())?;
    let (_, key) = server::create_workspace(&app, "bench").await?;
    let running = server::Running::serve(app);

    let target = Arc::new(Target {
        client: client(config.concurrency, Duration::from_secs(30))?,
        base: running.base.clone(),
        key,
        run: Uuid::new_v4().simple().to_string(),
        saves: AtomicUsize::new(0),
    });
    let c = config.concurrency;
    eprintln!(
        "memvault HTTP benchmark on {backend}: concurrency {c}, {} requests per operation \
         ({} single-client), warm-up {}",
        config.requests, config.single_requests, config.warmup
    );

    let mut errors = 0;
    if config.warmup > 0 {
        let saved = run_pass(&target, "warm-up", Op::Save, c, config.warmup).await?;
        let ids = Arc::new(saved.ids);
        let got = run_pass(&target, "warm-up", Op::Get(ids), c, config.warmup).await?;
        let listed = run_pass(&target, "warm-up", Op::List, c, config.warmup).await?;
        errors += saved.errors + got.errors + listed.errors;
    }

    let save = run_pass(&target, "concurrent", Op::Save, c, config.requests).await?;
    let ids = Arc::new(save.ids.clone());
    if ids.is_empty() {
        bail!("no memory was saved; see the errors above");
    }
    let get = run_pass(
        &target,
        "concurrent",
        Op::Get(ids.clone()),
        c,
        config.requests,
    )
    .await?;
    let list = run_pass(&target, "concurrent", Op::List, c, config.requests).await?;
    let listed_over = target.memory_total().await?;
    let single = config.single_requests;
    let single_list = run_pass(&target, "single-client", Op::List, 1, single).await?;
    let single_save = run_pass(&target, "single-client", Op::Save, 1, single).await?;
    let single_get = run_pass(&target, "single-client", Op::Get(ids), 1, single).await?;
    let passes = [save, get, list, single_list, single_save, single_get];
    errors += passes.iter().map(|pass| pass.errors).sum::<usize>();

    drop(target);
    running.stop(Duration::from_secs(30)).await?;

    println!();
    println!("### memvault HTTP API: {backend}");
    println!();
    print_table(&backend, &passes);
    println!();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "list pages through a workspace of {listed_over} memories; {} database connections; \
         every client reuses its keep-alive connection; latency is from sending the request to \
         reading the whole body; CPU is the time this process (server and clients, not a \
         PostgreSQL server) used over the wall time, out of {}% on {cores} cores.",
        settings.storage.max_connections,
        100 * cores,
    );
    Ok(errors)
}

fn main() -> anyhow::Result<()> {
    memvault::startup::runtime()?.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    let errors = with_database(
        config.postgres_url.as_deref(),
        config.keep_database,
        async |database| bench(&config, database).await,
    )
    .await?;
    if errors > 0 {
        bail!("{errors} requests did not answer the expected status (first ones shown above)");
    }
    Ok(())
}
