//! The machine a benchmark runs on: the load other processes put on it, this process going
//! idle, and what the report says about the machine and the code (CPU model, commit).
//!
//! Reads this process's CPU time from the sibling `cpu` module.

use std::time::{Duration, Instant};

use super::cpu::process_cpu_time;

/// CPU time of the whole machine and of this process at one moment.
#[derive(Clone, Copy)]
pub struct Load {
    /// When it was read.
    pub at: Instant,
    /// Busy time of all CPUs (everything but idle and iowait), from `/proc/stat`.
    pub machine_busy: Duration,
    /// CPU time of this process ([`process_cpu_time`]).
    pub own: Duration,
    /// Steal time of all CPUs (`/proc/stat`): time the hypervisor gave this machine's virtual
    /// CPUs to others while they had work.
    pub steal: Duration,
}

/// The [`Load`] now; `None` when it cannot be read (not Linux).
pub fn load_now() -> Option<Load> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks: Vec<u64> = stat
        .lines()
        .next()?
        .strip_prefix("cpu ")?
        .split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...: guest time is counted in user.
    let busy: u64 = ticks.iter().take(8).sum::<u64>() - ticks.get(3)? - ticks.get(4)?;
    Some(Load {
        at: Instant::now(),
        machine_busy: Duration::from_millis(busy * 10),
        own: process_cpu_time()?,
        steal: Duration::from_millis(ticks.get(7)? * 10),
    })
}

/// The cores this process may use (1 when that cannot be told).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Share of all the machine's cores that other processes used between `a` and `b`.
pub fn others_share(a: Option<Load>, b: Option<Load>) -> String {
    let (Some(a), Some(b)) = (a, b) else {
        return "n/a".to_string();
    };
    let busy = b.machine_busy.saturating_sub(a.machine_busy);
    let own = b.own.saturating_sub(a.own);
    let wall = b.at.duration_since(a.at).as_secs_f64() * cores() as f64;
    format!(
        "{:.0}%",
        100.0 * busy.saturating_sub(own).as_secs_f64() / wall.max(1e-9)
    )
}

/// Share of all the machine's cores that the hypervisor stole between `a` and `b`: a high
/// figure means a slow machine, not a slow program.
pub fn steal_share(a: Option<Load>, b: Option<Load>) -> String {
    let (Some(a), Some(b)) = (a, b) else {
        return "n/a".to_string();
    };
    let steal = b.steal.saturating_sub(a.steal);
    let wall = b.at.duration_since(a.at).as_secs_f64() * cores() as f64;
    format!("{:.1}%", 100.0 * steal.as_secs_f64() / wall.max(1e-9))
}

/// Waits until this process uses less than 10% of one core over a second (background index
/// maintenance done); how long that took, `None` when `timeout` passed first (or CPU time
/// cannot be read).
pub async fn wait_until_idle(timeout: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut before = process_cpu_time()?;
    while started.elapsed() < timeout {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = process_cpu_time()?;
        if now.saturating_sub(before) < Duration::from_millis(100) {
            return Some(started.elapsed());
        }
        before = now;
    }
    None
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let output = std::process::Command::new(program)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// The CPU's model name, from `/proc/cpuinfo`.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, name)| name.trim().to_string())
        })
        .unwrap_or_else(|| "(unknown)".to_string())
}

/// The short hash of `HEAD` (`(unknown)` when git cannot tell), followed by `uncommitted` when
/// tracked files have uncommitted changes.
pub fn commit(uncommitted: &str) -> String {
    let hash = command_output("git", &["rev-parse", "--short", "HEAD"])
        .unwrap_or_else(|| "(unknown)".to_string());
    match command_output("git", &["status", "--porcelain", "--untracked-files=no"]) {
        Some(changes) if !changes.is_empty() => format!("{hash}{uncommitted}"),
        _ => hash,
    }
}
