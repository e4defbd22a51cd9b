//! The CPU figure of a measured pass of requests: the CPU time this process (server and
//! clients) used during the pass, and its share of one core over the pass's wall time.
//!
//! Reads this process's CPU time from the sibling `cpu` module.

use std::time::Duration;

use super::cpu::process_cpu_time;

/// Passes shorter than this show no CPU figure: the kernel counts CPU time in 10 ms ticks.
const MIN_WALL_FOR_CPU: Duration = Duration::from_millis(200);

/// The CPU time this process used since `before` (its [`process_cpu_time`] when a pass that
/// lasted `wall` started), when both readings exist and the pass was long enough to tell.
pub fn cpu_since(before: Option<Duration>, wall: Duration) -> Option<Duration> {
    let (Some(before), Some(after)) = (before, process_cpu_time()) else {
        return None;
    };
    after
        .checked_sub(before)
        .filter(|_| wall >= MIN_WALL_FOR_CPU)
}

/// `cpu` in % of one core over `wall`; `n/a` when there is no figure.
pub fn cpu_share(cpu: Option<Duration>, wall: Duration) -> String {
    cpu.map_or_else(
        || "n/a".to_string(),
        |cpu| format!("{:.0}%", 100.0 * cpu.as_secs_f64() / wall.as_secs_f64()),
    )
}
