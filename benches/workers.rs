//! Document workers benchmark (issue 27): what a worker process costs per call, and how much
//! memory the server process holds while hostile files are thrown at it.
//!
//! ```text
//! cargo bench --bench workers
//! ```
//!
//! 1. **calls**: `WORKERS_CALLS` (50) parses of a small Markdown document, one at a time with
//!    30 ms between calls, through the server's `Workers` (a `memvault worker` process per
//!    call: start, confine, parse, answer, exit) started for the call (`worker.warm` 0) or
//!    ahead of it (`worker.warm` 2, the default), and through the in-process decoder; per call
//!    p50 and p95.
//! 2. **hostile**: `memvault serve` (the release binary Cargo built) is started as a child
//!    process on SQLite in a temporary directory, with worker fault inputs on; one workspace is
//!    made with `memvault admin create-workspace`. Every hostile file of the test suite
//!    (`memvault_pipelines::fixtures`: forged spreadsheets, zip, image and PDF bombs, a PDF page
//!    tree loop, deep HTML, 25 MB of one line, and workers that crash, hoard memory, spin, sleep
//!    or flood) is uploaded, one at a time, and polled until it is terminal; the server's
//!    resident memory is sampled every 20 ms from `/proc/PID/status` (`VmRSS`), and its peak
//!    (`VmHWM`) read at the end. Target: the server's peak under 500 MB.
//!
//! Output: Markdown on stdout. Files: nothing is kept.

// Only the report's lines about the machine are used here.
#[allow(dead_code)] // each benchmark uses part of it
mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use chrono::Utc;
use common::machine::{commit, cores, cpu_model};
use memvault::sandbox::{WorkerLimits, Workers, WorkersConfig};
use memvault_pipelines::fixtures;
use memvault_pipelines::model::SourceKind;
use memvault_pipelines::parse::ParseLimits;
use memvault_pipelines::pipeline::{Decoder, InProcess, Ocr};
use serde_json::Value;

const MEMVAULT: &str = env!("CARGO_BIN_EXE_memvault");

struct NoOcr;

impl Ocr for NoOcr {
    fn recognize(&self, _: &[u8]) -> Result<String, String> {
        Err("not used".into())
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

/// Milliseconds per call of `calls` parses of `doc` through `decoder`, sorted.
async fn time_calls(decoder: &dyn Decoder, doc: &[u8], calls: usize) -> anyhow::Result<Vec<f64>> {
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        let parsed = decoder
            .parse(SourceKind::Markdown, doc)
            .await
            .map_err(|e| anyhow::anyhow!("parse: {e}"))?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        if parsed.sections.is_empty() {
            bail!("the document parsed to nothing");
        }
    }
    times.sort_by(f64::total_cmp);
    Ok(times)
}

async fn calls_part(calls: usize) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let workers = |warm: usize| {
        Workers::new(WorkersConfig {
            program: MEMVAULT.into(),
            dir: dir.path().to_path_buf(),
            limits: WorkerLimits::default(),
            parse_limits: ParseLimits::default(),
            ocr_language: "eng".into(),
            ocr_data_dir: None,
            confine: true,
            faults: false,
            warm,
        })
    };
    let (cold, warm) = (workers(0)?, workers(2)?);
    let in_process = InProcess {
        limits: ParseLimits::default(),
        ocr: Arc::new(NoOcr),
    };
    let doc = b"# Supply\n\nVendor 7 supplies copper wire to the plant in Turin since 2011.\n";
    // Warm-up: the page cache holds the binary after the first start.
    time_calls(cold.as_ref(), doc, 3).await?;
    time_calls(warm.as_ref(), doc, 3).await?;
    let mut rows = Vec::new();
    for (name, decoder) in [
        (
            "worker started for the call (start, confine, parse, exit)",
            cold.as_ref() as &dyn Decoder,
        ),
        (
            "warm worker (started ahead, `worker.warm` 2; confine, parse, exit)",
            warm.as_ref(),
        ),
        ("in-process", &in_process),
    ] {
        let mut times = Vec::new();
        for _ in 0..calls {
            // A pause between calls, as between documents: the warm pool refills.
            tokio::time::sleep(Duration::from_millis(30)).await;
            times.extend(time_calls(decoder, doc, 1).await?);
        }
        times.sort_by(f64::total_cmp);
        rows.push((name, times));
    }
    println!("## Calls: a small Markdown parse, {calls} calls one at a time");
    println!();
    println!("| decoder | p50 ms | p95 ms |");
    println!("|---|---:|---:|");
    for (name, times) in &rows {
        println!(
            "| {name} | {:.1} | {:.1} |",
            percentile(times, 0.5),
            percentile(times, 0.95)
        );
    }
    println!();
    Ok(())
}

/// `memvault serve` on SQLite in `dir`, with worker faults on.
struct Server {
    child: Child,
    address: String,
}

impl Server {
    fn start(dir: &std::path::Path) -> anyhow::Result<Server> {
        let mut child = memvault(dir)
            .arg("serve")
            .env("MEMVAULT_LISTEN", "127.0.0.1:0")
            .env("MEMVAULT_LOG_FORMAT", "json")
            .env("MEMVAULT_LOG_LEVEL", "info")
            .env("MEMVAULT_RATE_LIMITS", "off")
            .env("MEMVAULT_WORKER__TEST_FAULTS", "true")
            .env("MEMVAULT_WORKER__CPU_SECS", "10")
            .env("MEMVAULT_WORKER__DEADLINE_SECS", "20")
            .env("MEMVAULT_INGEST_MAX_ATTEMPTS", "2")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start memvault serve")?;
        let stderr = child.stderr.take().context("no stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let deadline = Instant::now() + Duration::from_secs(120);
        let address = loop {
            let Some(Ok(line)) = lines.next() else {
                bail!("memvault serve stopped before listening");
            };
            if line.contains("memvault listening") {
                let json: Value = serde_json::from_str(&line)?;
                break json["address"].as_str().context("no address")?.to_string();
            }
            if Instant::now() > deadline {
                bail!("memvault serve did not listen within 120 s");
            }
        };
        // Keep draining the log, or the server blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Ok(Server { child, address })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn memvault(dir: &std::path::Path) -> Command {
    let mut command = Command::new(MEMVAULT);
    command
        .env("MEMVAULT_DATA_DIR", dir)
        .env(
            "DATABASE_URL",
            format!("sqlite://{}", dir.join("memvault.db").display()),
        )
        .env_remove("MEMVAULT_DATABASE_URL");
    command
}

/// `VmRSS` or `VmHWM` of a process, in bytes.
fn memory(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn hostile_files() -> Vec<(&'static str, Vec<u8>)> {
    let fault = |name: &str| format!("MEMVAULT-TEST-FAULT:{name}\n").into_bytes();
    vec![
        ("dimensions.xls", fixtures::xls_forged_dimensions()),
        ("repeated.ods", fixtures::ods_repeated_rows()),
        ("bomb.docx", fixtures::docx_zip_bomb()),
        ("bomb.xlsx", fixtures::xlsx_zip_bomb()),
        ("images.pdf", fixtures::pdf_image_bomb(2000)),
        ("loop.pdf", fixtures::pdf_page_tree_loop()),
        ("bomb.png", fixtures::png_bomb()),
        ("bomb.jpg", fixtures::jpeg_bomb()),
        ("nested.html", fixtures::nested_html(200_000)),
        ("line.txt", fixtures::one_line_text(25_000_000)),
        ("crash.txt", fault("abort")),
        ("hoard.txt", fault("oom")),
        ("spin.txt", fault("spin")),
        ("sleep.txt", fault("sleep")),
        ("flood.txt", fault("flood")),
    ]
}

async fn hostile_part() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let server = Server::start(dir.path())?;
    let pid = server.child.id();
    let output = memvault(dir.path())
        .args(["admin", "create-workspace", "--name", "hostile"])
        .output()?;
    let created: Value = serde_json::from_slice(&output.stdout)
        .with_context(|| String::from_utf8_lossy(&output.stderr).to_string())?;
    let key = created["apiKey"].as_str().context("no key")?.to_string();
    let base = format!("http://{}", server.address);
    let client = reqwest::Client::new();

    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(rss) = memory(pid, "VmRSS:") {
                    peak.fetch_max(rss, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let before = memory(pid, "VmRSS:").unwrap_or(0);
    println!("## Hostile files against `memvault serve` (SQLite)");
    println!();
    println!("| file | bytes | status | seconds | server RSS after (MB) | message |");
    println!("|---|---:|---|---:|---:|---|");
    for (name, bytes) in hostile_files() {
        let size = bytes.len();
        let started = Instant::now();
        let form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(bytes).file_name(name.to_string()),
        );
        let accepted: Value = client
            .post(format!("{base}/api/context-vault/documents/upload"))
            .header("X-API-Key", &key)
            .multipart(form)
            .send()
            .await?
            .json()
            .await?;
        let id = accepted["document"]["id"]
            .as_str()
            .with_context(|| format!("{name}: {accepted}"))?
            .to_string();
        let document = loop {
            let detail: Value = client
                .get(format!("{base}/api/context-vault/documents/{id}"))
                .header("X-API-Key", &key)
                .send()
                .await?
                .json()
                .await?;
            let status = detail["document"]["status"].as_str().unwrap_or_default();
            if ["completed", "failed", "cancelled"].contains(&status) {
                break detail["document"].clone();
            }
            if started.elapsed() > Duration::from_secs(180) {
                bail!("{name} did not finish within 180 s: {detail}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        println!(
            "| {name} | {size} | {} | {:.1} | {:.0} | {} |",
            document["status"].as_str().unwrap_or_default(),
            started.elapsed().as_secs_f64(),
            memory(pid, "VmRSS:").unwrap_or(0) as f64 / 1e6,
            document["error"]
                .as_str()
                .unwrap_or_default()
                .replace('|', "/")
        );
    }
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let hwm = memory(pid, "VmHWM:").unwrap_or(0);
    println!();
    println!(
        "Server RSS: {:.0} MB before the first file, sampled peak {:.0} MB, kernel's peak \
         (`VmHWM`) {:.0} MB (target: under 500 MB).",
        before as f64 / 1e6,
        peak.load(Ordering::Relaxed) as f64 / 1e6,
        hwm as f64 / 1e6
    );
    println!();
    Ok(())
}

fn main() -> anyhow::Result<()> {
    memvault::startup::runtime()?.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let started = Instant::now();
    let calls: usize = std::env::var("WORKERS_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    println!("# Document workers benchmark");
    println!();
    println!("| | |");
    println!("|---|---|");
    println!("| commit | `{}` |", commit(" (with uncommitted changes)"));
    println!("| date (UTC) | {} |", Utc::now().format("%Y-%m-%d %H:%M"));
    println!("| `nproc` | {} |", cores());
    println!("| CPU | {} |", cpu_model());
    println!();
    calls_part(calls).await?;
    hostile_part().await?;
    println!("Total wall time {:.1} s.", started.elapsed().as_secs_f64());
    Ok(())
}
