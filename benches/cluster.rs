//! Cluster benchmark (issue 29): `memvault serve` nodes on loopback against one PostgreSQL
//! database, driven over real HTTP. Run with `cargo bench --bench cluster` and a PostgreSQL
//! server in `MEMVAULT_BENCH_DATABASE_URL` (else `DATABASE_URL`); without one it exits 2. The
//! Markdown report goes to stdout; progress to stderr.
//!
//! Environment:
//! - `BENCH_PASS_SECS` (10): length of each throughput pass.
//! - `BENCH_CONCURRENCY` (16): closed-loop clients in the throughput passes.
//! - `BENCH_WORKSPACES` (12): workspaces the throughput passes spread their clients over.
//! - `BENCH_LATENCY_REQUESTS` (1000): reads and keyword searches per route in the latency pass
//!   (a fifth as many saves).
//! - `BENCH_SIZES` (`10000,100000`): memories in each workspace whose takeover is measured.
//! - `BENCH_KEEP_DATABASE` (unset): when `1`, the database is kept (its name is printed).
//!
//! What happens, in order:
//! 1. A fresh database; the workspaces are made through the library, and each takeover
//!    workspace is seeded with `BENCH_SIZES` memories written through the store with a stored
//!    vector each (no embedding: random unit vectors of the model's width; synthetic sentences
//!    from a generated vocabulary, Zipf-distributed, so the keyword index has a realistic shape).
//! 2. **Throughput** with one, then two, then three nodes (each started as a process of the
//!    release binary, cluster defaults: lease TTL 5 s, heartbeat 1 s). Before each pass the
//!    benchmark waits until every workspace answers through every node and its owner stays the
//!    same for two rounds (the joining node took its share). Each client works in one workspace
//!    and sends each request to a node picked at random, so with n nodes about (n-1)/n of the
//!    requests are forwarded. Two passes: **reads** (a memory by id and a keyword search, in
//!    turn) and **saves** (new content, embedded on the owner).
//! 3. **Latency, direct vs forwarded**, with three nodes: one client, the same workspace, each
//!    request sent in turn to its owner and to another node.
//! 4. **Takeover**, for each size: the first request to the cold workspace (the lease is taken
//!    and its indexes rebuilt from PostgreSQL; **rebuild** is the owner's own measure, from its
//!    log line `workspace loaded`), the owner's RSS before and after; searches on the warm owner;
//!    then the owner is killed with SIGKILL and a client asks the other nodes every 100 ms:
//!    **takeover** runs from the kill to the first answer (the TTL passes, a survivor takes the
//!    lease and rebuilds); searches right after it (HNSW segments are still being built in the
//!    background, so searches scan the unindexed tail exactly); then a node is started again
//!    and the new owner gets SIGTERM: **handover** runs from the signal to the first answer.
//!
//! Every node, PostgreSQL and the clients share this machine's cores: more nodes add no CPU
//! here, so the throughput passes measure what routing costs, not what a cluster of machines
//! would gain. Any unexpected status fails the run.

#[allow(dead_code)] // each benchmark uses part of it
mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use common::client::{client, expect_json};
use common::database::{millis, percentile_ms, postgres_url_from_env, with_database, Database};
use common::env::{env_count, env_var};
use common::machine;
use futures::StreamExt;
use memvault::config::Settings;
use memvault::model::{Category, Embedded, NewMemory, Plan, Source};
use memvault::services::AccountsService;
use memvault::storage::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest::StatusCode;
use uuid::Uuid;

const SECRET: &str = "a-cluster-secret-for-the-benchmark";
/// The log filter of every node: warnings, and the cluster's own events (`workspace loaded`).
const NODE_LOG: &str = "warn,memvault::services::cluster=info";
/// Memories saved in each throughput workspace before the passes (what reads and searches find).
const PRESAVED: usize = 20;
/// Searches measured on a warm owner and right after a takeover.
const SEARCHES: usize = 20;

struct Config {
    pass: Duration,
    concurrency: usize,
    workspaces: usize,
    latency_requests: usize,
    sizes: Vec<usize>,
    keep: bool,
}

impl Config {
    fn from_env() -> anyhow::Result<Config> {
        let sizes = match env_var("BENCH_SIZES") {
            None => vec![10_000, 100_000],
            Some(raw) => raw
                .split(',')
                .map(|s| s.trim().parse::<usize>())
                .collect::<Result<Vec<_>, _>>()
                .ok()
                .filter(|v| !v.is_empty() && v.iter().all(|&n| n > 0))
                .with_context(|| {
                    format!(
                        "BENCH_SIZES must be positive integers separated by commas, not `{raw}`"
                    )
                })?,
        };
        Ok(Config {
            pass: Duration::from_secs(env_count("BENCH_PASS_SECS", 1)?.unwrap_or(10) as u64),
            concurrency: env_count("BENCH_CONCURRENCY", 1)?.unwrap_or(16),
            workspaces: env_count("BENCH_WORKSPACES", 1)?.unwrap_or(12),
            latency_requests: env_count("BENCH_LATENCY_REQUESTS", 5)?.unwrap_or(1_000),
            sizes,
            keep: env_var("BENCH_KEEP_DATABASE").as_deref() == Some("1"),
        })
    }
}

// ----- nodes ---------------------------------------------------------------------------------

/// A `memvault serve` process (killed when dropped).
struct Node {
    child: Child,
    url: String,
    /// Its id, as its answers name it (`X-Memvault-Node`).
    id: String,
    log: PathBuf,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Node {
    async fn start(db_url: &str, dir: &Path, http: &reqwest::Client) -> anyhow::Result<Node> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let url = format!("http://127.0.0.1:{port}");
        let log = dir.join(format!("node-{port}.log"));
        let data = dir.join(format!("node-{port}"));
        let child = Command::new(env!("CARGO_BIN_EXE_memvault"))
            .arg("serve")
            .env_remove("MEMVAULT_DATABASE_URL")
            .env_remove("RUST_LOG")
            .env("DATABASE_URL", db_url)
            .env("MEMVAULT_DATA_DIR", &data)
            .env("MEMVAULT_WORKER__DIR", data.join("workers"))
            .env("MEMVAULT_LISTEN", format!("127.0.0.1:{port}"))
            .env("MEMVAULT_NODE_URL", &url)
            .env("MEMVAULT_CLUSTER_SECRET", SECRET)
            .env("MEMVAULT_LOG_FORMAT", "json")
            .env("MEMVAULT_LOG_LEVEL", NODE_LOG)
            .env("MEMVAULT_RATE_LIMITS", "off")
            .env("MEMVAULT_MEMORY_LIMITS__PRO", "10000000")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()
            .context("cannot start a node")?;
        let mut node = Node {
            child,
            url,
            id: String::new(),
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Ok(r) = http.get(format!("{}/readyz", node.url)).send().await {
                if r.status() == StatusCode::OK {
                    node.id = served_by(&r);
                    return Ok(node);
                }
            }
            if let Some(status) = node.child.try_wait()? {
                bail!(
                    "node {} exited ({status}); log in {}",
                    node.url,
                    node.log.display()
                );
            }
            if Instant::now() > deadline {
                bail!(
                    "node {} not ready in 120 s; log in {}",
                    node.url,
                    node.log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Resident memory of the process, in MiB (from `/proc`).
    fn rss_mib(&self) -> Option<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        let kib: f64 = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        Some(kib / 1024.0)
    }

    /// The `elapsed_ms` of this node's last `workspace loaded` line for `workspace`.
    fn loaded_ms(&self, workspace: Uuid) -> Option<u64> {
        let log = std::fs::read_to_string(&self.log).ok()?;
        let workspace = workspace.to_string();
        log.lines()
            .rev()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            // JSON logs put an event's fields at the top level (`flatten_event`).
            .filter(|line| {
                line["message"] == "workspace loaded" && line["workspace"] == workspace.as_str()
            })
            .find_map(|line| line["elapsed_ms"].as_u64())
    }
}

fn served_by(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("x-memvault-node")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

// ----- workspaces and seeding ----------------------------------------------------------------

struct Workspace {
    id: Uuid,
    key: String,
    /// Memories saved in it (read back by id in the read passes).
    ids: Vec<String>,
}

async fn create_workspace(store: &Arc<dyn Store>, name: &str) -> anyhow::Result<Workspace> {
    let (workspace, key) = AccountsService::new(store.clone(), None, Default::default())
        .create_workspace(name, Some(Plan::Pro))
        .await
        .with_context(|| format!("cannot create the workspace {name}"))?;
    Ok(Workspace {
        id: workspace.id,
        key,
        ids: Vec::new(),
    })
}

/// A generated vocabulary: syllables joined two or three at a time.
fn vocabulary() -> Vec<String> {
    const SYLLABLES: [&str; 24] = [
        "ka", "lo", "mi", "ten", "ra", "so", "vel", "du", "ne", "pri", "gor", "al", "shi", "ben",
        "tu", "mar", "eo", "lin", "qua", "zer", "fa", "ob", "rin", "cy",
    ];
    let mut words = Vec::new();
    for a in SYLLABLES {
        for b in SYLLABLES {
            words.push(format!("{a}{b}"));
            for c in SYLLABLES.iter().step_by(3) {
                words.push(format!("{a}{b}{c}"));
            }
        }
    }
    words
}

/// Sentence `i`: 8 to 20 words drawn by a Zipf-like rank, and the number itself (every
/// sentence is distinct).
fn sentence(words: &[String], rng: &mut StdRng, i: usize) -> String {
    let n = rng.random_range(8..=20);
    let mut out = String::new();
    for _ in 0..n {
        // Rank r with probability about 1/r: exp of a uniform draw over ln(1..len).
        let rank = (rng.random::<f64>() * (words.len() as f64).ln()).exp() as usize - 1;
        out.push_str(&words[rank.min(words.len() - 1)]);
        out.push(' ');
    }
    out.push_str(&format!("number {i}"));
    out
}

fn unit_vector(rng: &mut StdRng, dims: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dims).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let norm = v
        .iter()
        .map(|x| x * x)
        .sum::<f32>()
        .sqrt()
        .max(f32::EPSILON);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// Writes `n` memories with stored vectors into `workspace` through the store (the server's
/// own insert path, which groups concurrent inserts into one transaction).
async fn seed(
    store: &Arc<dyn Store>,
    workspace: Uuid,
    n: usize,
    model: &str,
    dims: usize,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let words = Arc::new(vocabulary());
    let model: Arc<str> = model.into();
    let mut inserts = futures::stream::iter(0..n)
        .map(|i| {
            let (store, words, model) = (store.clone(), words.clone(), model.clone());
            async move {
                let mut rng = StdRng::seed_from_u64(i as u64);
                let memory = NewMemory {
                    id: Uuid::now_v7(),
                    workspace_id: workspace,
                    user_id: String::new(),
                    content: sentence(&words, &mut rng, i),
                    source: Source::Api,
                    category: Category::Fact,
                    scope: String::new(),
                    project: String::new(),
                    valid_from: None,
                    valid_until: None,
                    created_at: chrono::Utc::now(),
                    origin_id: None,
                    thread: String::new(),
                    speaker: String::new(),
                    embedding: Some(Embedded {
                        model,
                        vector: unit_vector(&mut rng, dims).into(),
                    }),
                };
                store.insert_memory(&memory).await
            }
        })
        .buffer_unordered(64);
    let mut done = 0;
    while let Some(inserted) = inserts.next().await {
        inserted.context("cannot seed a memory")?;
        done += 1;
        if done % 20_000 == 0 {
            eprintln!("  seeded {done} of {n}");
        }
    }
    Ok(started.elapsed())
}

// ----- requests ------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Get,
    Keyword,
    Hybrid,
    Save,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Get => "get by id",
            Op::Keyword => "keyword search",
            Op::Hybrid => "hybrid search",
            Op::Save => "save",
        }
    }
}

/// One request of `op` in `ws` through `base`; `n` makes saved content and queries distinct.
fn request(
    http: &reqwest::Client,
    base: &str,
    ws: &Workspace,
    op: Op,
    n: usize,
) -> (reqwest::RequestBuilder, StatusCode) {
    let request = match op {
        Op::Get => http.get(format!(
            "{base}/api/memories/{}",
            ws.ids[n % ws.ids.len().max(1)]
        )),
        Op::Keyword => http
            .get(format!("{base}/api/memories/search"))
            .query(&[("q", "kalo tenra"), ("mode", "keyword"), ("limit", "10")]),
        Op::Hybrid => http.get(format!("{base}/api/memories/search")).query(&[
            ("q", format!("which of the ten rivers did I visit in year {n}")),
            ("limit", "10".to_string()),
        ]),
        Op::Save => http.post(format!("{base}/api/memories")).json(&serde_json::json!({
            "content": format!("benchmark note {n}: the meeting with supplier {} moved to room {}", n * 7 % 1000, n % 97)
        })),
    };
    let expected = if op == Op::Save {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    (request.header("X-API-Key", &ws.key), expected)
}

/// Sends one request; its latency and the node that answered.
async fn timed(
    http: &reqwest::Client,
    base: &str,
    ws: &Workspace,
    op: Op,
    n: usize,
) -> Result<(Duration, String), String> {
    let (request, expected) = request(http, base, ws, op, n);
    let started = Instant::now();
    let response = request
        .send()
        .await
        .map_err(|e| format!("{}: {e}", op.name()))?;
    let status = response.status();
    let node = served_by(&response);
    let body = response.bytes().await.map_err(|e| e.to_string())?;
    let elapsed = started.elapsed();
    if status != expected {
        return Err(format!(
            "{} through {base}: {status}: {}",
            op.name(),
            String::from_utf8_lossy(&body)
                .chars()
                .take(300)
                .collect::<String>()
        ));
    }
    Ok((elapsed, node))
}

struct Latencies(Vec<Duration>);

impl Latencies {
    fn summary(mut self) -> (f64, f64, f64) {
        self.0.sort();
        (
            percentile_ms(&self.0, 50.0),
            percentile_ms(&self.0, 95.0),
            percentile_ms(&self.0, 99.0),
        )
    }
}

// ----- the cluster ---------------------------------------------------------------------------

struct Bench {
    config: Config,
    db_url: String,
    dir: tempfile::TempDir,
    http: reqwest::Client,
    nodes: Vec<Node>,
    workspaces: Vec<Workspace>,
    /// Requests sent so far (distinct content and queries).
    sent: usize,
}

impl Bench {
    async fn add_node(&mut self) -> anyhow::Result<()> {
        let node = Node::start(&self.db_url, self.dir.path(), &self.http).await?;
        eprintln!("  node {} is {}", node.url, node.id);
        self.nodes.push(node);
        Ok(())
    }

    /// Waits until every workspace answers through every node with the same owner for two
    /// rounds in a row.
    async fn settle(&mut self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let mut last: Option<Vec<String>> = None;
        loop {
            let mut owners = Vec::new();
            let mut ok = true;
            for ws in &self.workspaces {
                for node in &self.nodes {
                    self.sent += 1;
                    match timed(&self.http, &node.url, ws, Op::Get, self.sent).await {
                        Ok((_, owner)) => owners.push(owner),
                        Err(_) => ok = false,
                    }
                }
            }
            if ok && last.as_ref() == Some(&owners) {
                return Ok(started.elapsed());
            }
            if started.elapsed() > Duration::from_secs(120) {
                bail!("the workspaces' owners did not settle in 120 s");
            }
            last = ok.then_some(owners);
            tokio::time::sleep(Duration::from_millis(1_500)).await;
        }
    }

    /// Closed-loop clients for `config.pass`, each in one workspace, each request to a node
    /// picked at random: requests per second, p50, p95.
    async fn throughput(&self, op: Op) -> anyhow::Result<(f64, f64, f64)> {
        let deadline = Instant::now() + self.config.pass;
        let bases: Arc<Vec<String>> = Arc::new(self.nodes.iter().map(|n| n.url.clone()).collect());
        let started = Instant::now();
        let clients = (0..self.config.concurrency).map(|c| {
            let (http, bases) = (self.http.clone(), bases.clone());
            let ws = &self.workspaces[c % self.workspaces.len()];
            let first = self.sent + c * 1_000_000;
            async move {
                let mut rng = StdRng::seed_from_u64(c as u64);
                let mut latencies = Vec::new();
                let mut n = first;
                while Instant::now() < deadline {
                    let base = &bases[rng.random_range(0..bases.len())];
                    let op = match op {
                        Op::Get if n % 2 == 1 => Op::Keyword,
                        other => other,
                    };
                    latencies.push(timed(&http, base, ws, op, n).await?.0);
                    n += 1;
                }
                Ok::<_, String>(latencies)
            }
        });
        let mut all = Vec::new();
        for result in futures::future::join_all(clients).await {
            all.extend(result.map_err(anyhow::Error::msg)?);
        }
        let rate = all.len() as f64 / started.elapsed().as_secs_f64();
        let (p50, p95, _) = Latencies(all).summary();
        Ok((rate, p50, p95))
    }

    fn owner_index(&self, id: &str) -> anyhow::Result<usize> {
        self.nodes
            .iter()
            .position(|n| n.id == id)
            .with_context(|| format!("no running node is {id}"))
    }
}

struct ThroughputRow {
    nodes: usize,
    settle: Duration,
    reads: (f64, f64, f64),
    saves: (f64, f64, f64),
}

struct LatencyRow {
    op: Op,
    direct: (f64, f64, f64),
    forwarded: (f64, f64, f64),
}

struct TakeoverRow {
    size: usize,
    seeded: Duration,
    cold_first: f64,
    cold_rebuild: Option<u64>,
    rss: (Option<f64>, Option<f64>),
    warm_keyword: f64,
    warm_hybrid: f64,
    takeover: f64,
    takeover_rebuild: Option<u64>,
    after_hybrid: f64,
    handover: f64,
    handover_rebuild: Option<u64>,
}

/// Asks `ws` for a page of memories through every node but `skip`, in turn, every 100 ms,
/// until one answers 200 from an owner other than `skip` (a stopping node still answers while
/// it hands over): how long that took since `since`, and the owner.
async fn first_answer(
    bench: &Bench,
    ws: &Workspace,
    skip: usize,
    since: Instant,
) -> anyhow::Result<(f64, String)> {
    let others: Vec<&Node> = bench
        .nodes
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != skip)
        .map(|(_, n)| n)
        .collect();
    let gone = bench.nodes.get(skip).map(|n| n.id.clone());
    let mut turn = 0;
    loop {
        let node = others[turn % others.len()];
        turn += 1;
        let response = bench
            .http
            .get(format!("{}/api/memories?limit=1", node.url))
            .header("X-API-Key", &ws.key)
            .send()
            .await;
        if let Ok(response) = response {
            let owner = served_by(&response);
            if response.status() == StatusCode::OK && gone.as_ref() != Some(&owner) {
                return Ok((millis(since.elapsed()), owner));
            }
        }
        if since.elapsed() > Duration::from_secs(300) {
            bail!("the workspace was not served again within 300 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn searches(bench: &mut Bench, base: &str, ws: &Workspace, op: Op) -> anyhow::Result<f64> {
    let mut latencies = Vec::new();
    for _ in 0..SEARCHES {
        bench.sent += 1;
        let (elapsed, _) = timed(&bench.http, base, ws, op, bench.sent)
            .await
            .map_err(anyhow::Error::msg)?;
        latencies.push(elapsed);
    }
    Ok(Latencies(latencies).summary().0)
}

async fn takeover(
    bench: &mut Bench,
    ws: &Workspace,
    size: usize,
    seeded: Duration,
) -> anyhow::Result<TakeoverRow> {
    eprintln!("takeover at {size} memories");
    let rss_before: Vec<Option<f64>> = bench.nodes.iter().map(Node::rss_mib).collect();
    let started = Instant::now();
    let (cold_first, owner) = first_answer(bench, ws, usize::MAX, started).await?;
    let o = bench.owner_index(&owner)?;
    let cold_rebuild = bench.nodes[o].loaded_ms(ws.id);
    let rss = (rss_before[o], bench.nodes[o].rss_mib());
    let base = bench.nodes[o].url.clone();
    let warm_keyword = searches(bench, &base, ws, Op::Keyword).await?;
    let warm_hybrid = searches(bench, &base, ws, Op::Hybrid).await?;

    // kill -9 of the owner.
    let killed = Instant::now();
    bench.nodes[o].child.kill()?;
    bench.nodes[o].child.wait()?;
    let (takeover, owner) = first_answer(bench, ws, o, killed).await?;
    bench.nodes.remove(o);
    let o = bench.owner_index(&owner)?;
    let takeover_rebuild = bench.nodes[o].loaded_ms(ws.id);
    let base = bench.nodes[o].url.clone();
    let after_hybrid = searches(bench, &base, ws, Op::Hybrid).await?;

    // Back to full strength, then SIGTERM of the new owner.
    bench.add_node().await?;
    bench.settle().await?;
    let (_, owner) = first_answer(bench, ws, usize::MAX, Instant::now()).await?;
    let o = bench.owner_index(&owner)?;
    let signalled = Instant::now();
    // SAFETY: kill(2) on a child process this benchmark started and has not reaped.
    if unsafe { libc::kill(bench.nodes[o].pid(), libc::SIGTERM) } != 0 {
        bail!("cannot signal the owner");
    }
    let (handover, owner) = first_answer(bench, ws, o, signalled).await?;
    let stopped = bench.nodes.remove(o);
    let n = bench.owner_index(&owner)?;
    let handover_rebuild = bench.nodes[n].loaded_ms(ws.id);
    drop(stopped);
    bench.add_node().await?;
    bench.settle().await?;
    Ok(TakeoverRow {
        size,
        seeded,
        cold_first,
        cold_rebuild,
        rss,
        warm_keyword,
        warm_hybrid,
        takeover,
        takeover_rebuild,
        after_hybrid,
        handover,
        handover_rebuild,
    })
}

async fn run(config: Config, database: &Database) -> anyhow::Result<()> {
    let Database::Postgres { url, .. } = database else {
        bail!("the cluster benchmark needs PostgreSQL");
    };
    let postgres = database.describe("").await;
    let mut settings = Settings::default();
    database.configure(&mut settings);
    let store = memvault::storage::connect(&settings)
        .await
        .context("cannot open the database")?;
    let embedder = memvault::startup::load_embedder(&settings)
        .await
        .context("cannot load the embedding model")?;
    let (model, dims) = (embedder.model().to_string(), embedder.dimensions());
    drop(embedder);

    let mut workspaces = Vec::new();
    for i in 0..config.workspaces {
        workspaces.push(create_workspace(&store, &format!("load {i}")).await?);
    }
    let mut big = Vec::new();
    for &size in &config.sizes {
        let ws = create_workspace(&store, &format!("takeover {size}")).await?;
        eprintln!("seeding {size} memories");
        let took = seed(&store, ws.id, size, &model, dims).await?;
        eprintln!("  seeded in {:.1} s", took.as_secs_f64());
        big.push((ws, size, took));
    }
    store.close().await;

    let mut bench = Bench {
        config,
        db_url: url.clone(),
        dir: tempfile::tempdir()?,
        http: client(64, Duration::from_secs(600))?,
        nodes: Vec::new(),
        workspaces,
        sent: 0,
    };
    let load_start = machine::load_now();

    // Throughput with 1, 2, 3 nodes.
    let mut throughput = Vec::new();
    for n in 1..=3 {
        eprintln!("throughput with {n} node(s)");
        bench.add_node().await?;
        if n == 1 {
            let base = bench.nodes[0].url.clone();
            for w in 0..bench.workspaces.len() {
                for i in 0..PRESAVED {
                    let (request, _) = request(
                        &bench.http,
                        &base,
                        &bench.workspaces[w],
                        Op::Save,
                        w * 1_000 + i,
                    );
                    let body = expect_json(request, "save", StatusCode::CREATED)
                        .await
                        .map_err(anyhow::Error::msg)?;
                    let id = body["memory"]["id"].as_str().context("memory.id")?;
                    bench.workspaces[w].ids.push(id.to_string());
                }
            }
            bench.sent = 1_000_000;
        }
        let settle = bench.settle().await?;
        let reads = bench.throughput(Op::Get).await?;
        let saves = bench.throughput(Op::Save).await?;
        bench.sent += bench.config.concurrency * 1_000_000;
        throughput.push(ThroughputRow {
            nodes: n,
            settle,
            reads,
            saves,
        });
    }

    // Direct vs forwarded.
    eprintln!("latency, direct vs forwarded");
    let mut latency = Vec::new();
    {
        let ws = &bench.workspaces[0];
        let (_, owner) = timed(&bench.http, &bench.nodes[0].url, ws, Op::Get, 0)
            .await
            .map_err(anyhow::Error::msg)?;
        let o = bench.owner_index(&owner)?;
        let direct = bench.nodes[o].url.clone();
        let other = bench.nodes[(o + 1) % bench.nodes.len()].url.clone();
        for op in [Op::Get, Op::Keyword, Op::Save] {
            let count = if op == Op::Save {
                bench.config.latency_requests / 5
            } else {
                bench.config.latency_requests
            };
            let (mut d, mut f) = (Vec::new(), Vec::new());
            for i in 0..count {
                for (base, into) in [(&direct, &mut d), (&other, &mut f)] {
                    bench.sent += 1;
                    let (elapsed, by) = timed(&bench.http, base, ws, op, bench.sent)
                        .await
                        .map_err(anyhow::Error::msg)?;
                    if by != owner {
                        bail!("request {i} was answered by {by}, not the owner {owner}");
                    }
                    into.push(elapsed);
                }
            }
            latency.push(LatencyRow {
                op,
                direct: Latencies(d).summary(),
                forwarded: Latencies(f).summary(),
            });
        }
    }

    let mut takeovers = Vec::new();
    for (ws, size, seeded) in &big {
        takeovers.push(takeover(&mut bench, ws, *size, *seeded).await?);
    }
    let load_end = machine::load_now();
    drop(bench);

    report(
        &postgres,
        &model,
        &throughput,
        &latency,
        &takeovers,
        machine::others_share(load_start, load_end),
    );
    Ok(())
}

fn opt_ms(v: Option<u64>) -> String {
    v.map_or("n/a".to_string(), |ms| format!("{ms} ms"))
}

fn report(
    postgres: &str,
    model: &str,
    throughput: &[ThroughputRow],
    latency: &[LatencyRow],
    takeovers: &[TakeoverRow],
    others: String,
) {
    println!("## Cluster (issue 29)\n");
    println!(
        "Machine: {}, {} cores, shared by every node, {postgres} and the clients; commit {}; \
         model {model}; share of the CPUs used by other processes than the clients (the nodes, \
         PostgreSQL and anything else) over the run: {others}.\n",
        machine::cpu_model(),
        machine::cores(),
        machine::commit(" (uncommitted changes)")
    );
    println!("### Throughput by number of nodes (requests to a random node)\n");
    println!(
        "| nodes | settled in | reads/s | read p50 | read p95 | saves/s | save p50 | save p95 |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for row in throughput {
        println!(
            "| {} | {:.1} s | {:.0} | {:.1} ms | {:.1} ms | {:.1} | {:.1} ms | {:.1} ms |",
            row.nodes,
            row.settle.as_secs_f64(),
            row.reads.0,
            row.reads.1,
            row.reads.2,
            row.saves.0,
            row.saves.1,
            row.saves.2
        );
    }
    println!("\n### Latency, direct to the owner vs through another node (one client)\n");
    println!("| request | direct p50 / p95 / p99 | forwarded p50 / p95 / p99 | added at p50 |");
    println!("|---|---|---|---|");
    for row in latency {
        println!(
            "| {} | {:.2} / {:.2} / {:.2} ms | {:.2} / {:.2} / {:.2} ms | {:.2} ms |",
            row.op.name(),
            row.direct.0,
            row.direct.1,
            row.direct.2,
            row.forwarded.0,
            row.forwarded.1,
            row.forwarded.2,
            row.forwarded.0 - row.direct.0
        );
    }
    println!("\n### Takeover and rebuild (lease TTL 5 s, heartbeat 1 s: the defaults)\n");
    println!(
        "| memories | seeded in | cold first request (rebuild) | owner RSS before / after | \
         warm keyword / hybrid p50 | kill -9 to first answer (rebuild) | hybrid p50 after | \
         SIGTERM to first answer (rebuild) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for row in takeovers {
        let rss = |v: Option<f64>| v.map_or("n/a".to_string(), |m| format!("{m:.0}"));
        println!(
            "| {} | {:.1} s | {:.0} ms ({}) | {} / {} MiB | {:.1} / {:.1} ms | {:.0} ms ({}) | {:.1} ms | {:.0} ms ({}) |",
            row.size,
            row.seeded.as_secs_f64(),
            row.cold_first,
            opt_ms(row.cold_rebuild),
            rss(row.rss.0),
            rss(row.rss.1),
            row.warm_keyword,
            row.warm_hybrid,
            row.takeover,
            opt_ms(row.takeover_rebuild),
            row.after_hybrid,
            row.handover,
            opt_ms(row.handover_rebuild)
        );
    }
}

fn main() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    let Some(postgres_url) = postgres_url_from_env()? else {
        eprintln!(
            "the cluster benchmark runs on PostgreSQL: set MEMVAULT_BENCH_DATABASE_URL (or \
             DATABASE_URL) to a postgres:// URL"
        );
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let keep = config.keep;
    runtime.block_on(with_database(Some(&postgres_url), keep, async |database| {
        run(config, database).await
    }))
}
